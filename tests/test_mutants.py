"""The conformance guard catches a broken model (issue 40): the shipped
matrix's mixed-RTT and mixed-algorithm groups, judged sim-only against the
recorded kernel runs with the hosts those runs measured (their mean table,
so the guard is deterministic: fixed rows, fixed seeds), must agree at least
as well as FLOOR per group; and each deliberately wrong model (a mutant,
``ccarena.mutant`` in the core, set through ``_core._set_mutant``, no part
of any scenario) must fall below a floor by at least MARGIN in some group:
CUBIC's beta 0.5, Reno's additive increase doubled, BBRv1's ProbeBW gains
flattened to 1.0, no delayed ACKs, no SACK.

The groups were chosen for what the mutants change (loss-based flows of
different RTTs sharing a tail-drop queue; BBRv1 against CUBIC), not by the
model's score; the floors are the model's agreement here (2026-11-29: 0.81
and 0.88 of the flows) less 0.05. Measured on the whole matrix with three
seeds, the model agrees on 75.7% of the flows, the mutants on 47.8%
(beta), 52.1% (Reno), 63.6% (BBR gains), 64.9% (delayed ACKs) and 3.3%
(SACK)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccarena import _core
from ccarena.conformance import load_kernel_reference, load_matrix, run_conformance

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "conformance" / "kernel-2026-11.parquet"
GROUPS = ("mixed-rtt", "mixed-cc")
FLOOR = {"mixed-rtt": 0.76, "mixed-cc": 0.83}
MARGIN = 0.10


@pytest.fixture(scope="module")
def reference():
    return load_kernel_reference(REFERENCE)


def _agreement(tmp: Path, reference, mutant: str) -> dict[str, float]:
    m = load_matrix(ROOT / "conformance" / "matrix.toml").with_counts(sim_seeds=3)
    m.sim_hosts = "kernel"
    _core._set_mutant(mutant)
    try:
        # jobs=1: in this process, where the mutant is set
        c = run_conformance(m, tmp, groups=GROUPS, linux=False, reference=reference, figure=False, jobs=1)
    finally:
        _core._set_mutant("none")
    assert c.summary is not None
    s = c.summary.set_index("group")
    return {g: float(s.loc[g, "agree_fraction"]) for g in GROUPS}


def test_the_model_passes_the_guard(tmp_path, reference):
    got = _agreement(tmp_path, reference, "none")
    assert all(got[g] >= FLOOR[g] for g in GROUPS), got


@pytest.mark.parametrize("mutant", _core._mutants())
def test_a_broken_model_fails_the_guard(tmp_path, reference, mutant):
    got = _agreement(tmp_path, reference, mutant)
    below = {g: round(FLOOR[g] - got[g], 3) for g in GROUPS}
    assert max(below.values()) >= MARGIN, (mutant, got)
