"""Hostile scenario input (issue 10): a bounded, deterministic slice of
``scripts/fuzz_cli.py``, and the inputs that once found bugs
(``tests/fuzz_corpus/``, see its README).

Every case must give exit status 0, or 2 with exactly one stderr line that
names the file and a field (after the scenario's warnings, if any, one
line each), nothing on stdout and nothing written; never a traceback, a
hang or a runaway allocation. ``derandomize=True``: the same
cases on every run, so this cannot flake. The full run:
``python3 scripts/fuzz_cli.py --cases 10000``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]


def _load_harness():
    spec = importlib.util.spec_from_file_location("fuzz_cli", REPO / "scripts" / "fuzz_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_cli"] = module
    spec.loader.exec_module(module)
    return module


fuzz = _load_harness()


@functools.cache
def _seeds():
    return fuzz.seeds()


CASES = st.deferred(lambda: fuzz.cases(_seeds()))
SLICE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def _explain(case, outcomes) -> str:
    lines = [f"origin {case.origin}, file {case.filename!r}, --set {list(case.sets)}"]
    for o in outcomes:
        if o.failures:
            lines.append(f"{o.command}: {', '.join(o.failures)}; exit {o.status}")
            lines.append(o.crash or o.stderr)
    lines.append(case.data[:2000].decode("utf-8", "replace"))
    return "\n".join(lines)


def test_every_seed_is_valid(workdir):
    """The mutants start from valid scenarios (this also checks that the
    catalog's findings pass the expectation checks as [[expect]])."""
    with fuzz.spying() as seen:
        for s in _seeds():
            case = fuzz.Case(fuzz.dumps(s.doc).encode(), origin=s.name)
            (o,) = fuzz.check_case(case, workdir, seen)
            assert o.status == 0 and not o.failures, _explain(case, [o])


@pytest.mark.parametrize("entry", fuzz.corpus(), ids=lambda e: e.name)
def test_corpus(entry, workdir):
    with fuzz.spying() as seen:
        outcomes = fuzz.replay(entry, workdir, seen)
    assert not any(o.failures for o in outcomes), _explain(entry.case, outcomes)


def test_corpus_has_a_readme_line_per_input():
    readme = (fuzz.CORPUS / "README.md").read_text(encoding="utf-8")
    entries = fuzz.corpus()
    assert entries
    for e in entries:
        assert f"`{e.name}.toml`" in readme, e.name


@settings(SLICE, max_examples=600)
@given(case=CASES)
def test_validate_fuzzed(case, workdir):
    with fuzz.spying() as seen:
        outcomes = fuzz.check_case(case, workdir, seen)
    assert not any(o.failures for o in outcomes), _explain(case, outcomes)


@settings(SLICE, max_examples=40)
@given(case=CASES)
def test_run_and_sweep_fuzzed_write_nothing_when_rejected(case, workdir):
    """``run`` and ``sweep --out DIR`` of the rejected cases (and of the
    cheap accepted ones): a rejection leaves DIR uncreated."""
    with fuzz.spying() as seen:
        outcomes = fuzz.check_case(case, workdir, seen, also_run=True)
    assert not any(o.failures for o in outcomes), _explain(case, outcomes)


BASE = 'duration = "100ms"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n'


@pytest.mark.parametrize(
    ("text", "sets", "field"),
    [
        ("name = \n" + BASE, [], "invalid TOML"),
        (BASE.replace('"10ms"', '"ten-parsecs"'), [], "flows[0].rtt"),
        (BASE, ["flows.7.rtt=1ms"], "flows[7].rtt"),
        (BASE + '[[expect]]\nmetric = "warp"\nvalue = 1\n', [], "expect[0].metric"),
        (BASE + '[sweep]\n"flows.0.rtt" = []\n', [], "sweep.flows.0.rtt"),
    ],
)
def test_real_process_exits_2_with_one_line(workdir, text, sets, field):
    case = fuzz.Case(text.encode(), tuple(sets))
    o = fuzz.subprocess_check(case, workdir)
    assert o.status == 2 and not o.failures, (o.status, o.failures, o.stderr)
    line = o.stderr.strip()
    assert f"s.toml: {field}" in line and "\n" not in line, line


def test_real_process_file_name_not_utf8_under_strict_stdout(workdir):
    """A valid unnamed scenario in a file whose name is not UTF-8, with
    stdout strict UTF-8 (a UTF-8 locale other than C)."""
    o = fuzz.subprocess_check(fuzz.Case(BASE.encode(), filename="\udcff.toml"), workdir)
    assert o.status == 0 and not o.failures, (o.failures, o.stderr)
    assert "\\udcff.toml: valid" in o.stdout


def test_real_process_sweep_rejected_writes_nothing(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(BASE + '[sweep]\n"bottleneck.rate" = ["10Mbps", "-5Mbps"]\n')
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "ccarena", "sweep", str(p), "--out", str(out), "--jobs", "1", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"{p}: bottleneck.rate")
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_a_run_killed_while_drawing_its_figure_leaves_no_temporary_once_the_next_is_made(workdir):
    """SIGKILL while the run draws its figure (its tables written to its
    temporary directory, the manifest not yet), then another run into the
    same folder: the killed run left no directory, and its ``.a.tmp-*`` is
    gone (``store.clean_stale_tmp``)."""
    for _ in range(3):  # a run that ends before the poll catches it is tried again
        failures = fuzz.kill_trial(workdir)
        if failures != ["missed"]:
            break
    assert failures == []
