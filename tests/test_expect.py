"""Expectations: parsing, scopes, pass/fail and the exit status of run and sweep."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from ccarena import cli
from ccarena.expect import check_all, flows_beside, group_table, parse_expectations
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


def test_beside_keeps_the_flows_that_started_while_that_flow_ran():
    # A large flow 0 (0-10 s) and a succession of short flows (group 1): two
    # beside it (FCT 4 s each), two after it (FCT 1 s each).
    flows = pd.DataFrame(
        {
            "flow": [0, 1, 2, 3, 4],
            "group": [0, 1, 1, 1, 1],
            "start_s": [0.0, 0.5, 4.6, 10.0, 11.1],
            "fct_s": [10.0, 4.0, 4.0, 1.0, 1.0],
            "goodput_mbps": [8.0, 2.0, 2.0, 8.0, 8.0],
        }
    )

    def check(**e):
        (o,) = check_all(parse_expectations([e]), [("run", {}, SUMMARY, flows)])
        return o

    assert not check(metric="fct_s", op=">", value=3.0, group=1).passed  # mean 2.5 over all four
    o = check(metric="fct_s", op=">", value=3.0, group=1, beside=0)
    assert o.passed and o.checks[0][1].actual == 4.0
    assert "beside flow 0" in o.expectation.describe()
    # shares are of the kept flows: flow 0 has 8 of 12
    assert check(metric="share", op="==", value=8 / 12, flow=0, beside=0, tolerance=1e-12).passed
    # a bulk flow (no FCT) runs to the end: every flow is beside it
    bulk = flows.assign(fct_s=[float("nan"), 4.0, 4.0, 1.0, 1.0])
    (o,) = check_all(
        parse_expectations([{"metric": "count", "op": "==", "value": 4, "group": 1, "beside": 0}]),
        [("run", {}, SUMMARY, bulk)],
    )
    assert o.passed
    assert not check(metric="fct_s", op=">", value=0, group=1, beside=7).passed  # no flow 7
    # Several runs at once (`by`): each run against its own flow 0; a run
    # whose flow 0 ran to the end keeps all its flows.
    two = pd.concat([flows.assign(run="a"), bulk.assign(run="b")])
    kept = flows_beside(two, 0, by="run")
    assert sorted(kept[kept["run"] == "a"]["flow"]) == [0, 1, 2]
    assert sorted(kept[kept["run"] == "b"]["flow"]) == [0, 1, 2, 3, 4]


def test_unknown_metric_fails_naming_columns():
    o = _check(metric="warp", op=">", value=1)
    assert not o.passed
    assert "jain" in o.checks[0][1].detail
    o = _check(metric="cc", op=">", value=1, scope="flow")  # a text column: no ValueError
    assert not o.passed and "goodput_mbps" in o.checks[0][1].detail


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
        ({"metric": "jain", "value": 1, "beside": 0}, "expect[0].beside"),
        ({"metric": "fct_s", "value": 1, "group": 1, "beside": -1}, "expect[0].beside"),
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


# --------------------------------------------------------------------------- refused before a run (issue 10)


def _scenario(tiny, expect, sweep=None):
    from ccarena import Scenario

    doc = copy.deepcopy(tiny)
    doc["flows"] = [{"cc": "reno", "rtt": "20ms", "count": 2}, {"cc": "cubic", "rtt": "40ms"}]
    doc["expect"] = [expect]
    if sweep is not None:
        doc["sweep"] = sweep
    return Scenario.from_dict(doc, source="s.toml")


def _refusal(scn):
    from ccarena.expect import check_expectations

    with pytest.raises(ScenarioError) as ei:
        check_expectations(parse_expectations(scn.expect, scn.source), scn)
    return ei.value


@pytest.mark.parametrize(
    ("expect", "field", "words"),
    [
        ({"metric": "warp", "value": 1}, "expect[0].metric", ["'warp'", "jain", "utilization"]),
        ({"metric": "share", "value": 1}, "expect[0].metric", ["for scope 'run'", "jain"]),
        ({"metric": "cc", "value": 1, "scope": "flow"}, "expect[0].metric", ["goodput_mbps", "share"]),
        ({"metric": "label", "value": 1, "scope": "group"}, "expect[0].metric", ["count", "share"]),
        ({"metric": "share", "value": 1, "flow": 3}, "expect[0].flow", ["no flow 3", "3 flow(s)", "0 to 2"]),
        ({"metric": "share", "value": 1, "group": 2}, "expect[0].group", ["no group 2", "2 group(s)"]),
        ({"metric": "share", "value": 1, "flow": 0, "beside": 5}, "expect[0].beside", ["no flow 5"]),
        ({"metric": "jain", "value": 1, "when": {"flows.0.cc": "x"}}, "expect[0].when", ["no [sweep]"]),
    ],
)
def test_expectation_no_run_can_satisfy_is_refused_naming_the_field(tiny, expect, field, words):
    e = _refusal(_scenario(tiny, expect))
    assert e.path == field
    for w in words:
        assert w in e.message, e.message


def test_when_key_must_be_swept(tiny):
    sweep = {"bottleneck.buffer": ["1BDP", "2BDP"]}
    e = _refusal(_scenario(tiny, {"metric": "jain", "value": 1, "when": {"flows[0].cc": "x"}}, sweep))
    assert e.path == "expect[0].when"
    assert "'flows.0.cc' is not swept" in e.message and "bottleneck.buffer" in e.message
    from ccarena.expect import check_expectations

    ok = _scenario(tiny, {"metric": "jain", "value": 1, "when": {"bottleneck.buffer": "1BDP"}}, sweep)
    check_expectations(parse_expectations(ok.expect, ok.source), ok)


def test_flow_of_a_larger_sweep_point_is_allowed(tiny):
    from ccarena.expect import check_expectations

    sweep = {"flows.0.count": [2, 6]}  # 3 flows at the base, 7 at the second point
    scn = _scenario(tiny, {"metric": "share", "value": 1, "flow": 6}, sweep)
    check_expectations(parse_expectations(scn.expect, scn.source), scn)
    e = _refusal(_scenario(tiny, {"metric": "share", "value": 1, "flow": 7}, sweep))
    assert e.path == "expect[0].flow" and "the largest point of its sweep has 7 flow(s)" in e.message


def test_metrics_are_the_numeric_columns_a_run_gives(tiny, tmp_path):
    """``metrics`` reads the core's schema; a real run has exactly those
    numeric columns in each scope (so no second list can drift)."""
    import ccarena
    from ccarena.expect import _with_share, metrics

    doc = copy.deepcopy(tiny)
    doc["duration"] = "200ms"
    r = ccarena.run(ccarena.Scenario.from_dict(doc), tmp_path / "run")

    def numeric(frame):
        return {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}

    assert set(metrics("run")) == numeric(r.summary)
    assert set(metrics("flow")) == numeric(_with_share(r.flows))
    assert set(metrics("group")) == numeric(group_table(r.flows))
    assert "cc" not in metrics("flow") and "count" in metrics("group") and "share" in metrics("flow")


@pytest.mark.parametrize("command", ["validate", "run", "sweep"])
@pytest.mark.parametrize(
    ("expect", "field"),
    [
        ({"metric": "goodput", "value": 1, "scope": "flow"}, "expect[0].metric"),
        ({"metric": "cc", "value": 1, "scope": "flow"}, "expect[0].metric"),  # crashed after the run
        ({"metric": "share", "value": 0.5, "flow": 1}, "expect[0].flow"),
        ({"metric": "share", "value": 0.5, "group": 1}, "expect[0].group"),
        ({"metric": "jain", "value": 1, "when": {"seed": 1}}, "expect[0].when"),
    ],
)
def test_cli_refuses_before_any_run(
    tmp_path, write_scenario, tiny, capsys, monkeypatch, command, expect, field
):
    monkeypatch.chdir(tmp_path)
    doc = copy.deepcopy(tiny)
    doc["expect"] = [expect]
    doc["sweep"] = {"bottleneck.buffer": ["1BDP", "2BDP"]}
    p = write_scenario(doc)
    extra = {"validate": [], "run": ["--out", "out", "--no-figure"], "sweep": ["--out", "out", "--jobs", "1"]}
    assert cli.main([command, str(p), *extra[command]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{p}: {field}: "), err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.toml"]
