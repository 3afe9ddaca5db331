"""A generated workload through the simulator, and its slowdowns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ccarena
from ccarena import workloads as wl
from ccarena.analysis import AloneModel, slowdown, srpt_fct


def test_collapsed_workload_runs_and_slowdown_is_at_least_one(tmp_path):
    flows = pd.DataFrame(
        {
            "start_ns": [0, 50_000_000, 100_000_000, 400_000_000],
            "size_bytes": [30_000, 200_000, 5_000, 60_000],
        }
    )
    w = wl.Workload(flows=flows, duration_ns=500_000_000)
    doc = wl.workload_scenario(
        w, cc="cubic", rate="10Mbps", rtt="20ms", buffer="1BDP", senders=0, drain_s=2.5, name="wl-e2e"
    )
    r = ccarena.run(doc, out=tmp_path / "run")
    f = r.flows.sort_values("flow")
    assert f.size_bytes.tolist() == flows.size_bytes.tolist()
    assert f.start_s.tolist() == [0.0, 0.05, 0.1, 0.4]
    assert f.fct_s.notna().all()
    s = slowdown(f, 10e6)
    # nothing beats line rate plus the propagation delays, less the token bucket's one free packet
    assert (slowdown(f, 10e6, alone=AloneModel(burst_bytes=1514)) >= 1.0 - 1e-9).all()
    ideal = srpt_fct(f, 10e6)
    assert f.fct_s.mean() >= ideal.mean()
    assert np.isfinite(s).all() and s.max() < 20


def test_alone_model_with_slow_start_and_burst_matches_a_lone_simulated_flow(tmp_path):
    """The simulator's FCT of one CUBIC flow alone (10 Mbit/s, 20 ms, token bucket of one packet)
    is what AloneModel(slow_start=True, burst_bytes=1514) says, within 1%; the default model
    (fluid link, no slow start) is below it by at most one packet time."""
    from ccarena.analysis import AloneModel, ideal_fct

    ss = AloneModel(slow_start=True, burst_bytes=1514)
    for segs in (1, 10, 11, 20, 100):
        size = segs * 1448
        doc = {
            "name": "alone",
            "duration": "3s",
            "bottleneck": {"rate": "10Mbps", "buffer": "1BDP"},
            "path": {"rtt": "20ms"},
            "flows": [{"cc": "cubic", "size": f"{size}B", "start": "100ms"}],
        }
        fct = ccarena.run(doc, out=tmp_path / f"r{segs}").flows.fct_s.iloc[0]
        assert fct == pytest.approx(float(ideal_fct(size, 10e6, 0.020, ss)), rel=0.01), segs
        assert fct >= float(ideal_fct(size, 10e6, 0.020)) - 1514 * 8 / 10e6 - 1e-9
