"""What runs will cost before they run: the time per packet against the
flows sending at once, longest-first scheduling over workers (its makespan),
`reproduce --estimate` (nothing run, nothing written), and sweeps that
submit their runs longest first with the same results as in point order."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena import cli, executors
from ccarena.catalog import REGISTRY, lookup
from ccarena.catalog.estimate import estimate_entries, estimate_entry
from ccarena.cost import (
    EXPAND_PER_FLOW_S,
    FLOW_OVERHEAD_S,
    NS_PER_PACKET,
    RUN_OVERHEAD_S,
    active_flows,
    estimate,
    makespan,
    ns_per_packet,
)
from ccarena.scenario import Scenario
from ccarena.sweep import expand


def test_time_per_packet_follows_the_measured_points():
    for flows, ns in NS_PER_PACKET:
        assert ns_per_packet(flows) == pytest.approx(ns)
    # clamped at both ends
    (lo, t_lo), (hi, t_hi) = NS_PER_PACKET[0], NS_PER_PACKET[-1]
    assert ns_per_packet(lo / 10) == ns_per_packet(lo) == t_lo
    assert ns_per_packet(hi * 100) == ns_per_packet(hi) == t_hi
    # linear in log10(flows): the geometric middle of two points is the
    # arithmetic middle of their times, a third of the way a third
    for (a, ta), (b, tb) in itertools.pairwise(NS_PER_PACKET):
        assert ns_per_packet(math.sqrt(a * b)) == pytest.approx((ta + tb) / 2)
        assert ns_per_packet(a * (b / a) ** (1 / 3)) == pytest.approx(ta + (tb - ta) / 3)


def test_makespan_is_longest_first_list_scheduling():
    runs = [2, 5, 3, 2, 4, 3, 2]
    assert makespan(runs, 1) == 21
    assert makespan(runs, 2) == 11  # 5+3+2 | 4+3+2+2
    assert makespan(runs, 3) == 8  # 5+2 | 4+2+2 | 3+3
    assert makespan(runs, 100) == 5  # every run on its own worker
    assert makespan([], 4) == 0
    # LPT, not the optimum: 3+3 | 2+2+2 would end at 6; longest first gives 3+2+2 | 3+2
    assert makespan([2, 3, 2, 3, 2], 2) == 7


def _tiny(**extra) -> dict:
    doc = {
        "name": "est",
        "duration": "30s",
        "bottleneck": {"rate": "10Mbps"},
        "flows": [{"cc": "reno", "rtt": "20ms"}],
    }
    doc.update(extra)
    return doc


def test_active_flows_counts_flows_that_can_send_at_once():
    def active(flows):
        return active_flows(Scenario.from_dict(_tiny(flows=flows)).normalized)

    assert active([{"cc": "reno", "rtt": "20ms", "count": 7}]) == 7
    # a repeat chain is one flow at a time, beside the bulk flow
    chain = {"cc": "reno", "rtt": "20ms", "size": "1MB", "repeat": {"gap": "100ms", "count": 50}}
    assert active([{"cc": "reno", "rtt": "20ms"}, chain]) == 2
    # 1 MB at 10 Mbit/s is done within a second: sized flows 10 s apart never overlap
    apart = [{"cc": "reno", "rtt": "20ms", "size": "1MB", "start": f"{s}s"} for s in (0, 10, 20)]
    assert active(apart) == 1
    together = [{"cc": "reno", "rtt": "20ms", "size": "1MB", "start": f"{s}s"} for s in (0, 0.1, 0.2)]
    assert active(together) == 3
    # a bulk flow that stops leaves before one that starts later
    assert (
        active([{"cc": "reno", "rtt": "20ms", "stop": "5s"}, {"cc": "reno", "rtt": "20ms", "start": "6s"}])
        == 1
    )


def test_a_runs_time_is_its_packets_at_the_flows_rate_plus_start_up():
    c = estimate(Scenario.from_dict(_tiny(flows=[{"cc": "reno", "rtt": "20ms", "count": 1000}])))
    assert c.active_flows == 1000
    ns = ns_per_packet(1000)
    assert ns == dict(NS_PER_PACKET)[1_000]
    assert c.wall_s == pytest.approx(c.bottleneck_packets * ns * 1e-9)
    assert c.flows == 1000
    assert c.run_s == pytest.approx(c.wall_s + RUN_OVERHEAD_S + 1000 * FLOW_OVERHEAD_S)
    assert f"{ns:,.0f} ns a packet for 1,000 flows at once" in c.describe()


@pytest.mark.parametrize("quick", [False, True])
def test_an_ids_estimate_is_the_sum_over_its_points(quick):
    entry = REGISTRY["bbq/fig3"]
    cost = estimate_entry(entry, quick)
    points = expand(Scenario.from_dict(entry.build(quick), source=entry.id), yes=True)
    costs = [estimate(p.scenario) for p in points]
    assert cost.runs == len(points) == len({p.hash for p in points})
    assert cost.packets == pytest.approx(sum(c.bottleneck_packets for c in costs))
    # building the points, serial, then the runs on the workers
    build = sum(len(p.scenario.normalized["flows"]) for p in points) * EXPAND_PER_FLOW_S
    assert cost.serial_s == pytest.approx(build)
    assert cost.hours(1) * 3600 == pytest.approx(build + sum(c.run_s for c in costs))
    assert cost.hours(2) * 3600 == pytest.approx(build + makespan([c.run_s for c in costs], 2))
    assert cost.flows == max(len(p.scenario.normalized["flows"]) for p in points)
    assert not cost.shared_with and not cost.over_limits


def test_ids_of_one_sweep_share_their_runs_in_the_total():
    fig4, fig5 = estimate_entries([REGISTRY["bbrv2-eval/fig4"], REGISTRY["bbrv2-eval/fig5"]], quick=True)
    assert fig4.runs == fig5.runs == len(fig4.new_seconds) > 0
    assert fig5.shared_with == "bbrv2-eval/fig4" and fig5.new_seconds == []
    # paper scale, fig16 is above the cost limits (reproduce needs --yes)
    assert estimate_entry(REGISTRY["bbrv2-eval/fig16"], False).over_limits


def test_reproduce_estimate_writes_nothing_and_exits_0(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["reproduce", "bbq", "--estimate", "--jobs", "3", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert not any(tmp_path.iterdir())
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if " id " in line)
    assert "runs" in header and "1 job" in header and "3 jobs" in header  # the table, not its records form
    for e in lookup("bbq"):
        assert any(line.split()[1:2] == [e.id] for line in lines), e.id
    assert any("total" in line for line in lines)
    # every id of every paper; one id in its quick form
    assert lookup("all") == list(REGISTRY.values())
    assert cli.main(["reproduce", "mixed-workload/fig9", "--estimate", "--quick"]) == 0
    assert "mixed-workload/fig9" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())


RATES = {
    "name": "order",
    "duration": "1s",
    "seed": 3,
    "bottleneck": {"rate": "10Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms"}],
    "sweep": {"bottleneck.rate": ["5Mbps", "20Mbps", "10Mbps"], "repeats": 2},
}


def test_sweep_submits_longest_first_with_the_results_of_point_order(tmp_path: Path, monkeypatch):
    submitted: list[list[int]] = []
    real = executors.run_local

    def recording(jobs, workers, on_done):
        submitted.append([j.index for j in jobs])
        return real(jobs, workers, on_done)

    monkeypatch.setattr(executors, "run_local", recording)
    longest = ccarena.sweep(copy.deepcopy(RATES), out=tmp_path / "a", jobs=2)
    # points: 5 Mbit/s (0, 1), 20 (2, 3), 10 (4, 5); the faster link carries more packets
    assert submitted == [[2, 3, 4, 5, 0, 1]]

    def in_point_order(jobs, workers, on_done):
        return real(sorted(jobs, key=lambda j: j.index), workers, on_done)

    monkeypatch.setattr(executors, "run_local", in_point_order)
    plain = ccarena.sweep(copy.deepcopy(RATES), out=tmp_path / "b", jobs=1)
    pd.testing.assert_frame_equal(longest.runs, plain.runs)
    assert list(longest.runs["bottleneck.rate"]) == ["5Mbps"] * 2 + ["20Mbps"] * 2 + ["10Mbps"] * 2
    for run in longest.runs["run"]:
        for f in sorted((tmp_path / "a" / run).iterdir()):
            assert f.read_bytes() == (tmp_path / "b" / run / f.name).read_bytes(), f
