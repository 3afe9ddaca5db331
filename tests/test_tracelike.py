"""The synthetic trace-like workload against paper B's published facts."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from ccarena import workloads as wl
from ccarena.workloads.fit_synthetic import analytic_facts, fit
from ccarena.workloads.tracelike import FACT_SIZES

M = wl.TRACE_LIKE


def test_stored_constants_are_the_fit():
    """TRACE_LIKE is what fit_synthetic computes (re-run it after changing the model)."""
    m = fit()
    for k, v in m.__dict__.items():
        assert math.isclose(v, M.__dict__[k], rel_tol=1e-9), k


def test_analytic_facts_match_exactly():
    got = analytic_facts(M)
    for k, v in wl.FACTS.items():
        assert got[k] == pytest.approx(v, rel=1e-6), k


def test_sampled_sizes_match_facts():
    """4 M sizes (seeded). Tolerances: about 3 standard errors of the estimate."""
    z = M.sample_sizes(4_000_000, np.random.default_rng(11))
    assert z.dtype == np.int64 and z.min() >= 1 and z.max() <= M.tail_max_bytes + 1
    assert (z > FACT_SIZES["small"]).mean() == pytest.approx(0.10, abs=0.0005)
    total = z.sum(dtype=np.float64)
    assert z[z > FACT_SIZES["medium"]].sum() / total == pytest.approx(0.90, abs=0.01)
    assert z[z > FACT_SIZES["large"]].sum() / total == pytest.approx(0.50, abs=0.04)
    assert z.mean() == pytest.approx(M.mean_size, rel=0.04)
    # the tail is a bounded Pareto: P(size > x) at a few points
    for x in (1e5, 1e6, 1e7, 1e8):
        assert (z > x).mean() == pytest.approx(M.ccdf(x), rel=0.03)


def test_sampled_workload_matches_facts():
    """One hour at the trace's load (seeded), measured on its second half so that
    the longest activities (H / r = 25 min) have started: each fact within the
    stated tolerance (about two standard deviations across seeds)."""
    w = wl.trace_like(3600, seed=1)
    assert w.mode == "trace-like" and w.duration_ns == 3600 * 10**9
    f = wl.measure_facts(w, start_s=1800)
    assert f["flows_above_18.2kB"] == pytest.approx(0.10, abs=0.002)
    assert f["bytes_in_flows_above_6.4MB"] == pytest.approx(0.90, abs=0.02)
    assert f["bytes_in_flows_above_280.7MB"] == pytest.approx(0.50, abs=0.05)
    assert f["mean_rate_bps"] == pytest.approx(1.25e9, rel=0.10)
    assert f["active_flows_10ms"] == pytest.approx(170, rel=0.10)
    assert f["flows"] == pytest.approx(M.arrival_rate() * 1800, rel=0.01)


def test_seeded_and_scaled():
    a, b = wl.trace_like(10, seed=5), wl.trace_like(10, seed=5)
    assert a.flows.equals(b.flows)
    assert not a.flows.equals(wl.trace_like(10, seed=6).flows)
    fast = wl.trace_like(10, rate_bps=3e9, seed=5)
    assert len(fast) == pytest.approx(len(a) * 3e9 / 1.25e9, rel=0.05)
    assert a.flows.start_ns.is_monotonic_increasing
    assert (a.flows.duration_ns == np.round(a.flows.size_bytes * 8e9 / M.flow_rate_bps)).all()


def test_fifteen_minutes_at_3gbps_is_quick_and_compact(tmp_path):
    t = time.perf_counter()
    w = wl.trace_like(900, rate_bps=3e9, seed=1)
    elapsed = time.perf_counter() - t
    expected = M.arrival_rate(3e9) * 900
    assert len(w) == pytest.approx(expected, rel=0.01)  # about 1.16 M flows
    assert elapsed < 20  # about 0.5 s on the project's machines
    assert w.flows.memory_usage(index=False).sum() == 24 * len(w)  # three int64 columns
    p = w.save(tmp_path / "w")
    assert (p / "flows.parquet").stat().st_size < 24 * len(w)
    assert wl.Workload.load(p).flows.equals(w.flows)
