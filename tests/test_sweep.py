"""Sweep expansion (grid, zip, repeats), seed derivation, hashes, the
experiment directory and its index, caching."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import ccarena
from ccarena.experiment import EXPERIMENT_FILE, INDEX_FILE, Experiment
from ccarena.scenario import ScenarioError
from ccarena.sweep import column_name, derive_seed, expand, narrow, parse_sweep

BASE = {
    "name": "sw",
    "duration": "1s",
    "seed": 7,
    "bottleneck": {"rate": "10Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms"}, {"cc": "cubic", "rtt": "40ms"}],
}


def _doc(sweep):
    d = copy.deepcopy(BASE)
    d["sweep"] = sweep
    return d


def test_grid_order_first_key_slowest_repeats_innermost():
    scn = ccarena.load(_doc({"bottleneck.buffer": ["0.5BDP", "2BDP"], "flows.0.cc": ["reno", "cubic"]}))
    pts = expand(scn)
    assert [(p.values["bottleneck.buffer"], p.values["flows.0.cc"]) for p in pts] == [
        ("0.5BDP", "reno"),
        ("0.5BDP", "cubic"),
        ("2BDP", "reno"),
        ("2BDP", "cubic"),
    ]
    assert [p.index for p in pts] == [0, 1, 2, 3]
    assert pts[1].scenario.normalized["flows"][0]["cc"] == "cubic"
    assert pts[2].scenario.normalized["bottleneck"]["buffer"] == "2BDP"
    assert all(p.repeat == 0 and p.seed == 7 for p in pts)
    assert len({p.hash for p in pts}) == 4


def test_zip_forms_are_equivalent():
    listed = parse_sweep(
        {
            "flows.0.rtt": ["10ms", "30ms"],
            "flows.1.rtt": ["40ms", "60ms"],
            "zip": [["flows.0.rtt", "flows.1.rtt"]],
        }
    )
    table = parse_sweep({"zip": {"flows.0.rtt": ["10ms", "30ms"], "flows.1.rtt": ["40ms", "60ms"]}})
    tables = parse_sweep({"zip": [{"flows.0.rtt": ["10ms", "30ms"], "flows.1.rtt": ["40ms", "60ms"]}]})
    assert listed == table == tables
    assert listed.size == 2
    (axis,) = listed.axes
    assert axis.keys == ("flows.0.rtt", "flows.1.rtt")
    assert axis.values == (("10ms", "40ms"), ("30ms", "60ms"))


def test_zip_crossed_with_grid_and_repeats():
    scn = ccarena.load(
        _doc(
            {
                "flows.0.cc": ["reno", "cubic"],
                "zip": {"flows.0.rtt": ["10ms", "30ms"], "flows.1.rtt": ["40ms", "60ms"]},
                "repeats": 3,
            }
        )
    )
    pts = expand(scn)
    assert len(pts) == 2 * 2 * 3
    assert [p.repeat for p in pts[:3]] == [0, 1, 2]
    pairs = {(p.values["flows.0.rtt"], p.values["flows.1.rtt"]) for p in pts}
    assert pairs == {("10ms", "40ms"), ("30ms", "60ms")}
    for p in pts:
        f = p.scenario.normalized["flows"]
        assert (f[0]["rtt_ns"], f[1]["rtt_ns"]) in {(10_000_000, 40_000_000), (30_000_000, 60_000_000)}
    # repeat r of every point has the same seed (common random numbers)
    seeds = {(p.repeat, p.seed) for p in pts}
    assert len(seeds) == 3
    assert len({p.hash for p in pts}) == len(pts)


def test_narrow_keeps_some_points_with_the_same_runs():
    """A narrowed sweep's points are points of the whole sweep, with the
    same seeds and hashes (the same runs), whatever the zip form."""
    sweep = {
        "flows.0.cc": ["reno", "cubic"],
        "zip": {"flows.0.rtt": ["10ms", "30ms", "50ms"], "flows.1.rtt": ["40ms", "60ms", "80ms"]},
        "bottleneck.buffer": ["0.5BDP", "2BDP"],
        "repeats": 3,
    }
    whole = {p.hash: p for p in expand(ccarena.load(_doc(sweep)))}
    cut = narrow(sweep, {"flows.0.cc": ["cubic"], "flows.1.rtt": ["80ms", "40ms"]}, repeats=2)
    assert cut["flows.0.cc"] == ["cubic"] and cut["bottleneck.buffer"] == ["0.5BDP", "2BDP"]
    assert cut["zip"] == [{"flows.0.rtt": ["10ms", "50ms"], "flows.1.rtt": ["40ms", "80ms"]}]
    pts = expand(ccarena.load(_doc(cut)))
    assert len(pts) == 1 * 2 * 2 * 2
    for p in pts:
        assert p.hash in whole and whole[p.hash].seed == p.seed and whole[p.hash].repeat == p.repeat
        assert p.values["flows.0.cc"] == "cubic" and p.repeat < 2
    # Nothing asked for: the same sweep.
    assert narrow(sweep, {}) == {**{k: v for k, v in sweep.items() if k != "zip"}, "zip": [sweep["zip"]]}


@pytest.mark.parametrize(
    "at, field",
    [
        ({"path.rtt": ["10ms"]}, "sweep.path.rtt"),
        ({"flows.0.cc": ["bbr9"]}, "sweep.flows.0.cc"),
        ({"flows.0.rtt": ["10ms"], "flows.1.rtt": ["60ms"]}, "sweep.flows.0.rtt"),
    ],
)
def test_narrow_names_the_key_and_its_values(at, field):
    sweep = {
        "flows.0.cc": ["reno", "cubic"],
        "zip": {"flows.0.rtt": ["10ms", "30ms"], "flows.1.rtt": ["40ms", "60ms"]},
    }
    with pytest.raises(ScenarioError) as e:
        narrow(sweep, at, source="s.toml")
    assert field in str(e.value) and str(e.value).startswith("s.toml")


def test_nested_keys_and_brackets_mean_the_same():
    a = parse_sweep({"bottleneck": {"buffer": ["1BDP", "2BDP"]}})
    b = parse_sweep({"bottleneck.buffer": ["1BDP", "2BDP"]})
    assert a == b
    assert parse_sweep({"flows[1].cc": ["reno"]}).keys == ["flows.1.cc"]
    assert column_name("flows[0].rtt") == "flows.0.rtt"


def test_a_swept_table_is_recorded_as_given_under_a_swept_field_inside_it():
    """``bottleneck`` swept as whole tables and ``bottleneck.buffer`` crossed
    with it: each point keeps its table as swept (no buffer from the last
    point leaking into every recorded value) and runs its own buffer."""
    tables = [{"rate": "10Mbps", "qdisc": "taildrop"}, {"rate": "10Mbps", "qdisc": "codel"}]
    scn = ccarena.Scenario.from_dict(_doc({"bottleneck": tables, "bottleneck.buffer": ["1BDP", "4BDP"]}))
    points = expand(scn)
    assert [p.values["bottleneck"] for p in points] == [tables[0], tables[0], tables[1], tables[1]]
    assert [p.values["bottleneck.buffer"] for p in points] == ["1BDP", "4BDP"] * 2
    assert tables == [{"rate": "10Mbps", "qdisc": "taildrop"}, {"rate": "10Mbps", "qdisc": "codel"}]


def test_seed_derivation_is_documented_formula():
    import hashlib

    assert derive_seed(7, 0) == 7
    want = int.from_bytes(hashlib.sha256(b"ccarena-repeat:7:1").digest()[:8], "big") >> 1
    assert derive_seed(7, 1) == want
    assert derive_seed(7, 2) != derive_seed(7, 1) != derive_seed(8, 1)
    assert all(0 <= derive_seed(s, r) < 2**63 for s in (0, 1, 2**62) for r in range(5))


def test_one_point_sweep_is_the_plain_run():
    scn = ccarena.load(BASE)
    (p,) = expand(scn)
    assert p.hash == scn.hash and p.seed == 7


def test_sweep_and_expect_do_not_change_the_hash():
    plain = ccarena.load(BASE)
    d = _doc({"flows.0.cc": ["reno"]})
    d["expect"] = [{"metric": "jain", "op": ">=", "value": 0.5}]
    assert ccarena.load(d).hash == plain.hash


@pytest.mark.parametrize(
    ("sweep", "field"),
    [
        ({"bottleneck.buffer": "1BDP"}, "sweep.bottleneck.buffer"),
        ({"bottleneck.buffer": []}, "sweep.bottleneck.buffer"),
        ({"repeats": 0}, "sweep.repeats"),
        ({"a.b": [1], "c.d": [1, 2], "zip": [["a.b", "c.d"]]}, "sweep.zip"),
        ({"zip": [["x.y"]]}, "sweep.zip"),
        ({"zip": "nope"}, "sweep.zip"),
    ],
)
def test_bad_sweeps_name_the_field(sweep, field):
    with pytest.raises(ScenarioError) as ei:
        parse_sweep(sweep, "s.toml")
    assert ei.value.path == field


def test_bad_point_names_the_sweep_value():
    scn = ccarena.load(_doc({"flows.0.cc": ["reno", "warp-drive"]}))
    with pytest.raises(ScenarioError) as ei:
        expand(scn)
    assert ei.value.path == "flows[0].cc"
    assert "sweep flows.0.cc=warp-drive" in str(ei.value)


def test_sweep_writes_index_and_caches(tmp_path: Path):
    doc = _doc({"bottleneck.buffer": ["0.5BDP", "2BDP"], "repeats": 2})
    e = ccarena.sweep(doc, out=tmp_path / "e", jobs=1)
    assert (tmp_path / "e" / EXPERIMENT_FILE).is_file()
    runs = pq.read_table(tmp_path / "e" / INDEX_FILE).to_pandas()
    assert list(runs.columns[:5]) == ["bottleneck.buffer", "repeat", "seed", "hash", "run"]
    assert {"utilization", "jain", "retrans_rate"} <= set(runs.columns)
    assert list(runs["bottleneck.buffer"]) == ["0.5BDP", "0.5BDP", "2BDP", "2BDP"]
    assert list(runs["repeat"]) == [0, 1, 0, 1]
    assert runs["hash"].is_unique
    assert e.ran == 4 and e.cached == 0
    # the stacked frames carry the swept columns
    assert set(e.flows["bottleneck.buffer"]) == {"0.5BDP", "2BDP"}
    assert len(e.flows) == 4 * 2
    assert {"bottleneck.buffer", "repeat", "time_s", "goodput_mbps"} <= set(e.samples.columns)
    assert len(e.queue) > 0
    # again: everything cached, same index
    again = ccarena.sweep(doc, out=tmp_path / "e", jobs=1)
    assert again.ran == 0 and again.cached == 4
    pd.testing.assert_frame_equal(again.runs, runs)
    loaded = Experiment.load(tmp_path / "e")
    pd.testing.assert_frame_equal(loaded.runs, runs)
    # a run directory is what `ccarena run` writes for that point
    r = loaded.results(2)
    assert r.scenario["bottleneck"]["buffer"] == "2BDP"


def test_a_swept_flow_list_is_held_once_per_point_in_the_stacked_frames(tmp_path: Path):
    """A whole ``flows`` list swept as one value (as bbrv3-insights/fig14
    sweeps 5,000-flow workloads) rides on every stacked row as a reference
    to its point's text, not a copy per row (the copies took 260 GB)."""
    many = [{"cc": "reno", "rtt": "20ms", "size": "20KB", "start": f"{i}ms"} for i in range(40)]
    lists = [many, [dict(f, cc="cubic") for f in many]]
    doc = _doc({"zip": {"description": ["reno", "cubic"], "flows": lists}})
    e = ccarena.sweep(doc, out=tmp_path / "e", jobs=1)
    f = Experiment.load(tmp_path / "e").flows
    assert len(f) == 2 * 40
    assert isinstance(f["flows"].dtype, pd.CategoricalDtype)
    # the same values as the index, point by point
    for run, sub in f.groupby("run", observed=True):
        (text,) = set(sub["flows"])
        assert text == e.runs.loc[e.runs["run"] == run, "flows"].item()
        assert set(sub["cc"]) == {sub["description"].iloc[0]}
    # one copy of each point's text, not one per row
    text_bytes = int(e.runs["flows"].str.len().sum())
    assert f["flows"].memory_usage(deep=True) < 2 * text_bytes + 8 * len(f) + 10_000
    # the other swept columns keep their own types
    assert f["repeat"].dtype == "int64" and list(f.columns[:2]) == ["description", "flows"]


def test_pool_gives_the_same_bits(tmp_path: Path):
    doc = _doc({"flows.0.cc": ["reno", "cubic"], "repeats": 2})
    a = ccarena.sweep(doc, out=tmp_path / "a", jobs=1)
    b = ccarena.sweep(doc, out=tmp_path / "b", jobs=2)
    pd.testing.assert_frame_equal(a.runs, b.runs)
    for run in a.runs["run"]:
        for f in sorted((tmp_path / "a" / run).iterdir()):
            assert f.read_bytes() == (tmp_path / "b" / run / f.name).read_bytes(), f
