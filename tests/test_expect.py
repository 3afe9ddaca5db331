"""Expectations: parsing, scopes, pass/fail and the exit status of run and sweep."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from ccarena import cli
from ccarena.expect import check_all, group_table, parse_expectations
from ccarena.scenario import ScenarioError

SUMMARY = pd.DataFrame({"jain": [0.8], "utilization": [0.95]})
FLOWS = pd.DataFrame(
    {
        "flow": [0, 1, 2],
        "group": [0, 1, 1],
        "cc": ["cubic", "bbr1", "bbr1"],
        "goodput_mbps": [10.0, 20.0, 30.0],
        "segs_sent": [100, 100, 300],
        "segs_retrans": [1, 2, 3],
        "retrans_rate": [0.01, 0.02, 0.01],
        "rtt_ms": [10.0, 20.0, 40.0],
    }
)


def _check(**e):
    (o,) = check_all(parse_expectations([e]), [("run", {}, SUMMARY, FLOWS)])
    return o


def test_run_scope():
    assert _check(metric="jain", op=">=", value=0.8).passed
    assert not _check(metric="jain", op=">", value=0.8).passed
    assert _check(metric="utilization", op="<", value=1).passed


def test_flow_scope_every_flow_or_one():
    assert _check(metric="goodput_mbps", op=">=", value=10, scope="flow").passed
    assert not _check(metric="goodput_mbps", op=">=", value=15, scope="flow").passed
    assert _check(metric="goodput_mbps", op=">=", value=15, flow=1).passed
    o = _check(metric="share", op="==", value=0.5, flow=2, tolerance=1e-9)
    assert o.passed


def test_group_scope_sums_goodput_and_means_the_rest():
    g = group_table(FLOWS)
    row = g[g["group"] == 1].iloc[0]
    assert row["goodput_mbps"] == 50.0 and row["count"] == 2
    assert row["rtt_ms"] == 30.0
    assert row["retrans_rate"] == pytest.approx(5 / 400)
    assert row["share"] == pytest.approx(50 / 60)
    assert _check(metric="share", op=">", value=0.8, group=1).passed
    assert not _check(metric="goodput_mbps", op=">", value=20, scope="group").passed


def test_unknown_metric_fails_naming_columns():
    o = _check(metric="warp", op=">", value=1)
    assert not o.passed
    assert "jain" in o.checks[0][1].detail


def test_when_selects_points():
    exps = parse_expectations([{"metric": "jain", "op": ">", "value": 0.9, "when": {"flows[0].cc": "bbr1"}}])
    runs = [("a", {"flows.0.cc": "cubic"}, SUMMARY, FLOWS), ("b", {"flows.0.cc": "bbr1"}, SUMMARY, FLOWS)]
    (o,) = check_all(exps, runs)
    assert [label for label, _ in o.checks] == ["b"]


@pytest.mark.parametrize(
    ("e", "field"),
    [
        ({"op": ">", "value": 1}, "expect[0].metric"),
        ({"metric": "jain", "op": "=>", "value": 1}, "expect[0].op"),
        ({"metric": "jain", "value": "high"}, "expect[0].value"),
        ({"metric": "jain", "value": 1, "scope": "world"}, "expect[0].scope"),
        ({"metric": "jain", "value": 1, "flow": 0, "scope": "run"}, "expect[0].flow"),
        ({"metric": "jain", "value": 1, "colour": "red"}, "expect[0].colour"),
    ],
)
def test_bad_expectations_name_the_field(e, field):
    with pytest.raises(ScenarioError) as ei:
        parse_expectations([e], "s.toml")
    assert ei.value.path == field


def test_run_and_sweep_exit_1_when_an_expectation_fails(tmp_path, write_scenario, tiny, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = copy.deepcopy(tiny)
    good["expect"] = [{"metric": "utilization", "op": ">", "value": 0.1}]
    assert cli.main(["run", str(write_scenario(good, "good.toml")), "--no-figure"]) == 0
    assert "PASS" in capsys.readouterr().out
    bad = copy.deepcopy(tiny)
    bad["expect"] = [
        {"metric": "utilization", "op": ">", "value": 0.1},
        {"metric": "goodput_mbps", "op": ">", "value": 1000, "scope": "flow"},
    ]
    assert cli.main(["run", str(write_scenario(bad, "bad.toml")), "--no-figure"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1 of 2 expectation(s) failed" in out
    bad["sweep"] = {"bottleneck.buffer": ["0.5BDP", "2BDP"]}
    code = cli.main(
        ["sweep", str(write_scenario(bad, "sweep.toml")), "--out", "e", "--jobs", "1", "--no-progress"]
    )
    assert code == 1
    assert "0/2" in capsys.readouterr().out
    # a bad expectation is bad input: exit 2 before anything runs
    bad["expect"] = [{"metric": "jain", "op": "=>", "value": 1}]
    assert cli.main(["sweep", str(write_scenario(bad, "worse.toml")), "--out", "f"]) == 2
    assert not (tmp_path / "f").exists()
