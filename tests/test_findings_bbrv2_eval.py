"""bbrv2-eval's findings (ccarena.catalog.findings_bbrv2_eval): every point
they read is a point of the id's full-form sweep, and a few of each kind say
"no" on a table the paper's claim excludes and "yes" on one it allows."""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest

from ccarena.catalog import REGISTRY
from ccarena.catalog import findings as fd
from ccarena.catalog import findings_bbrv2_eval as fb
from ccarena.results import Results
from ccarena.sections import parse_sweep

CC, BUF, LOSS, N0, N1 = fb.CC, fb.BUF, fb.LOSS, fb.N0, fb.N1


class FakeExperiment:
    """An experiment of runs made from frames (as tests/test_findings.py's):
    ``points`` is a list of (swept values, flows frame, summary frame)."""

    def __init__(self, keys, points):
        self.keys = list(keys)
        rows, self._res = [], []
        for i, (values, flows, summary) in enumerate(points):
            rows.append({**values, "repeat": 0, "run": f"r{i}"})
            frames = {
                "summary": summary,
                "flows": flows,
                "samples": pd.DataFrame({"time_s": [], "flow": [], "group": []}),
                "queue": pd.DataFrame({"time_s": [], "backlog_bytes": []}),
                "transitions": pd.DataFrame({"time_s": [], "flow": [], "from": [], "to": []}),
            }
            self._res.append(Results(frames, {"scenario": {}}))
        self.runs = pd.DataFrame(rows)

    def results(self, i):
        return self._res[i]


def _flows(goodputs, groups=None, fct=None, size=100e6, retrans=None):
    n = len(goodputs)
    return pd.DataFrame(
        {
            "flow": range(n),
            "group": groups if groups is not None else [0] * n,
            "goodput_mbps": goodputs,
            "segs_sent": [1000] * n,
            "segs_retrans": [10] * n,
            "retrans_rate": retrans if retrans is not None else [0.01] * n,
            "fct_s": fct if fct is not None else [float("nan")] * n,
            "size_bytes": [size] * n,
            "rtt_ms": [20.0] * n,
        }
    )


def _summary(jain=0.9, util=0.9, rate=1000.0, rtt=20.0, retrans=0.01, duration=300.0):
    return pd.DataFrame(
        {
            "jain": [jain],
            "utilization": [util],
            "rate_mbps": [rate],
            "mean_rtt_ms": [rtt],
            "retrans_rate": [retrans],
            "duration_s": [duration],
        }
    )


def _run(values, flows=None, **summary):
    return (values, flows if flows is not None else _flows([10.0, 10.0]), _summary(**summary))


def _mine():
    return [f for i, fs in fd.FINDINGS.items() if i.startswith("bbrv2-eval/") for f in fs]


def _find(id_, words):
    hits = [f for f in fd.of_id(f"bbrv2-eval/{id_}") if words in f.claim]
    assert len(hits) == 1, (id_, words, [f.claim for f in fd.of_id(f"bbrv2-eval/{id_}")])
    return hits[0]


def _holds(f, exp):
    return f.check.judge(exp)[0]


# --------------------------------------------------------------------------- the points exist


def _points_of(check):
    if isinstance(check, fd.Each):
        for c in check.checks():
            yield from _points_of(c)
    elif isinstance(check, fd.Compare):
        yield check.at_a
        yield check.at_b
    else:
        yield check.at


def _cell(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":")) if isinstance(v, dict | list) else str(v)


def test_every_id_of_the_paper_has_findings_that_can_fail():
    ids = {i for i in REGISTRY if i.startswith("bbrv2-eval/")}
    have = {f.id for f in _mine()}
    assert ids == have, sorted(ids ^ have)
    for f in _mine():
        assert f.cite.startswith("bbrv2-eval, Sec. 5.") and "Fig." in f.cite, f.cite
        assert f.claim and f.paper and f.kernel, f
        assert f.check.can_fail(), f"{f.id}: {f.claim}"
        if isinstance(f.check, fd.Band) or (
            isinstance(f.check, fd.Each) and isinstance(f.check.checks()[0], fd.Band)
        ):
            assert f.why, f"{f.id}: a band says where its width comes from: {f.claim}"


def test_every_point_a_finding_reads_is_in_its_ids_full_form():
    for f in _mine():
        spec = parse_sweep(REGISTRY[f.id].build(False)["sweep"])
        combos = [
            {
                k: _cell(v)
                for axis, vals in zip(spec.axes, combo, strict=True)
                for k, v in zip(axis.keys, vals, strict=True)
            }
            for combo in itertools.product(*(a.values for a in spec.axes))
        ]
        for at in _points_of(f.check):
            assert set(at) <= set(spec.keys), (f.id, f.claim, at)
            assert any(all(c[k] == str(v) for k, v in at.items()) for c in combos), (f.id, f.claim, at)


def test_fig22s_unpaced_arm_leaves_cubic_unpaced():
    sweep = REGISTRY["bbrv2-eval/fig22"].build(False)["sweep"]
    assert {"mode": "internal"} in sweep["flows.0.pacing"]
    assert {"mode": "fq"} not in sweep["flows.0.pacing"]


# --------------------------------------------------------------------------- bands


def test_a_band_on_the_papers_number_fig4_cubic_jain():
    f = _find("fig4", "CUBIC's 100 flows have a Jain index of about 0.898")
    assert _holds(f, FakeExperiment([CC, BUF], [_run({CC: "cubic", BUF: "10BDP"}, jain=0.9)])) is True
    assert _holds(f, FakeExperiment([CC, BUF], [_run({CC: "cubic", BUF: "10BDP"}, jain=0.7)])) is False
    # another CCA's runs are not this point's
    assert _holds(f, FakeExperiment([CC, BUF], [_run({CC: "bbr1", BUF: "10BDP"}, jain=0.9)])) is None


def test_a_band_at_every_point_fig7_cubic_near_600():
    f = _find("fig7", "use about 0.6 of the link")
    ok = [_run({CC: "cubic", BUF: b}, util=0.6) for b in fb.bdp(fb.BUF_4)]
    assert _holds(f, FakeExperiment([CC, BUF], ok)) is True
    bad = [*ok[:-1], _run({CC: "cubic", BUF: "100BDP"}, util=0.85)]
    holds, measured = f.check.judge(FakeExperiment([CC, BUF], bad))
    assert holds is False and "100BDP" in measured


def test_a_band_on_a_difference_between_buffers_fig9():
    f = _find("fig9", "does not grow with the buffer")
    pts = lambda r100: [  # noqa: E731
        _run({N0: 2, CC: "bbr1", BUF: "10BDP"}, rtt=60.0),
        _run({N0: 2, CC: "bbr1", BUF: "100BDP"}, rtt=r100),
    ]
    assert _holds(f, FakeExperiment([N0, CC, BUF], pts(65.0))) is True
    assert _holds(f, FakeExperiment([N0, CC, BUF], pts(300.0))) is False


# --------------------------------------------------------------------------- comparisons


def test_a_comparison_at_every_buffer_fig6_bbr1_over_cubic():
    f = _find("fig6", "BBRv1 flows together move far more")

    def exp(cubic_util):
        return FakeExperiment(
            [CC, BUF],
            [
                _run({CC: cc, BUF: b}, util=0.95 if cc == "bbr1" else cubic_util)
                for cc in ("bbr1", "cubic")
                for b in fb.bdp(fb.BUF_4)
            ],
        )

    assert _holds(f, exp(0.6)) is True  # 950 vs 600 Mbit/s
    assert _holds(f, exp(0.9)) is False  # 950 vs 900: not 150 more


def test_a_ratio_comparison_fig8_bbr1_retransmits_three_times_bbr2():
    f = _find("fig8", "several times more than BBRv2")

    def exp(bbr2):
        return FakeExperiment(
            [CC, N0], [_run({CC: "bbr1", N0: 10}, retrans=0.18), _run({CC: "bbr2", N0: 10}, retrans=bbr2)]
        )

    assert _holds(f, exp(0.025)) is True
    assert _holds(f, exp(0.1)) is False


def test_a_comparison_of_fct_gaps_fig17_and_fig18():
    gap = _find("fig17", "gap between CUBIC's and BBRv2's FCTs is smaller")
    first = _find("fig18", "finish before CUBIC's at every buffer")

    def exp(cubic_at_1bdp):
        pts = []
        for b, cubic in (("0.1BDP", 85.0), ("0.5BDP", 80.0), ("1BDP", cubic_at_1bdp)):
            pts.append(_run({BUF: b}, _flows([8.0] * 4, groups=[0, 0, 1, 1], fct=[cubic, cubic, 55.0, 55.0])))
        return FakeExperiment([BUF], pts)

    assert _holds(gap, exp(70.0)) is True  # 15 s at 1 BDP < 30 s at 0.1 BDP
    assert _holds(gap, exp(95.0)) is False
    assert _holds(first, exp(70.0)) is True
    assert _holds(first, exp(50.0)) is False  # CUBIC first at 1 BDP


def test_fcts_are_scaled_to_100_mb_and_unfinished_flows_count_the_run():
    within = _find("fig17", "BBRv2's flows finish in about 50-60 s")
    # 20 MB flows (the quick form) done in 11 s: 55 s per 100 MB
    quick = _flows([8.0] * 4, groups=[0, 0, 1, 1], fct=[17.0, 17.0, 11.0, 11.0], size=20e6)
    assert _holds(within, FakeExperiment([BUF], [({BUF: "0.1BDP"}, quick, _summary(duration=60.0))])) is True
    # a BBRv2 flow never done in a 600 s run is not left out: 1 of 2 inside
    late = _flows([8.0] * 4, groups=[0, 0, 1, 1], fct=[85.0, 85.0, 55.0, float("nan")])
    assert _holds(within, FakeExperiment([BUF], [({BUF: "0.1BDP"}, late, _summary(duration=600.0))])) is False


def test_normalized_fct_fig16():
    f = _find("fig16", "all three CCAs' flows finish near the ideal time")
    # 100 flows of 100 MB at 1 Gbit/s: an 80 s ideal; 90 s is 1.125 of it
    keys = [CC, BUF, LOSS]
    pts = lambda fct: [  # noqa: E731
        _run({CC: "cubic", BUF: "1BDP", LOSS: "0%"}, _flows([8.0] * 100, fct=[fct] * 100))
    ]
    assert _holds(f, FakeExperiment(keys, pts(90.0))) is True
    assert _holds(f, FakeExperiment(keys, pts(120.0))) is False


def test_the_max_over_points_against_another_point_fig15():
    f = _find("fig15", "BBRv2's retransmission rate stays low")
    keys = [CC, fb.QDISC, BUF]

    def exp(bbr2_worst):
        return FakeExperiment(
            keys,
            [
                _run(
                    {CC: "bbr1", fb.QDISC: "taildrop", BUF: "0.1BDP"},
                    _flows([5.0, 5.0], retrans=[0.04, 0.06]),
                ),
                _run(
                    {CC: "bbr2", fb.QDISC: "taildrop", BUF: "0.1BDP"}, _flows([5.0, 5.0], retrans=[0.001] * 2)
                ),
                _run(
                    {CC: "bbr2", fb.QDISC: "fq_codel", BUF: "2BDP"},
                    _flows([5.0, 5.0], retrans=[bbr2_worst] * 2),
                ),
            ],
        )

    assert _holds(f, exp(0.01)) is True  # 0.01 < half of 0.05
    assert _holds(f, exp(0.03)) is False


def test_aqm_points_are_read_by_their_json_tables_fig21():
    f = _find("fig21", "every AQM is at least as fair as tail drop")
    keys = [N0, N1, fb.TABLE, BUF]

    def exp(cake):
        pts = [
            _run({N0: 1, N1: 1, fb.TABLE: fb.aqm("taildrop"), BUF: "100BDP"}, jain=0.6),
            _run({N0: 1, N1: 1, fb.TABLE: fb.aqm("cake"), BUF: "100BDP"}, jain=cake),
        ]
        return FakeExperiment(keys, pts)

    assert _holds(f, exp(0.99)) is True
    assert _holds(f, exp(0.5)) is False


# --------------------------------------------------------------------------- thresholds


def test_a_threshold_at_every_point_fig14_fq_codel():
    f = _find("fig14", "with FQ-CoDel both CCAs share evenly")
    keys = [CC, fb.QDISC, BUF]
    ok = [_run({CC: "bbr1", fb.QDISC: "fq_codel", BUF: b}, jain=0.99) for b in fb.BUF_14]
    assert _holds(f, FakeExperiment(keys, ok)) is True
    bad = [*ok, _run({CC: "bbr1", fb.QDISC: "fq_codel", BUF: "0.1BDP"}, jain=0.7)]  # a second repeat
    assert _holds(f, FakeExperiment(keys, bad)) is False  # mean of 0.99 and 0.7 at 0.1 BDP


def test_a_fraction_of_points_above_the_ideal_share_fig12():
    f = _find("fig12", "generally take more than their ideal share")
    keys = [N0, N1]

    def run(m, n, bbr2_each):
        goodputs = [bbr2_each] * m + [10.0] * n
        return _run({N0: m, N1: n}, _flows(goodputs, groups=[0] * m + [1] * n))

    assert _holds(f, FakeExperiment(keys, [run(1, 1, 15.0), run(2, 1, 12.0), run(1, 2, 8.0)])) is True
    assert _holds(f, FakeExperiment(keys, [run(1, 1, 15.0), run(2, 1, 9.0), run(1, 2, 8.0)])) is False


def test_the_range_over_buffers_fig22():
    f = _find("fig22", "the buffer does not change the aggregate")
    keys = [fb.PACING, LOSS, BUF]
    flat = [
        _run({fb.PACING: fb.PACED, LOSS: "1%", BUF: b}, util=0.70 + 0.01 * i)
        for i, b in enumerate(fb.BUF_22[:3])
    ]
    assert _holds(f, FakeExperiment(keys, flat)) is True
    steep = [*flat, _run({fb.PACING: fb.PACED, LOSS: "1%", BUF: "20BDP"}, util=0.9)]
    assert _holds(f, FakeExperiment(keys, steep)) is False


@pytest.mark.parametrize("words", ["with 1% loss fixed pacing raises the aggregate"])
def test_the_unpaced_label_is_what_the_sweep_writes(words):
    f = _find("fig22", words)
    labels = {_cell(v) for v in REGISTRY["bbrv2-eval/fig22"].build(False)["sweep"]["flows.0.pacing"]}
    assert fb.UNPACED in labels and fb.PACED in labels
    keys = [fb.PACING, LOSS, BUF]
    pts = [
        _run({fb.PACING: fb.PACED, LOSS: "1%", BUF: "1BDP"}, util=0.7),
        _run({fb.PACING: fb.UNPACED, LOSS: "1%", BUF: "1BDP"}, util=0.6),
    ]
    assert _holds(f, FakeExperiment(keys, pts)) is True
    pts[1] = _run({fb.PACING: fb.UNPACED, LOSS: "1%", BUF: "1BDP"}, util=0.68)
    assert _holds(f, FakeExperiment(keys, pts)) is False


def test_every_finding_reads_a_quick_forms_runs_without_error():
    """On runs at every point of each id's quick form (the same synthetic
    tables everywhere), each finding gives yes, no, or n/a for the points
    the quick form lacks, and a measured text."""
    generic = _flows([300.0, 200.0], groups=[0, 1], fct=[40.0, 30.0], size=20e6, retrans=[0.02, 0.01])
    judged = 0
    for id_ in sorted({f.id for f in _mine()}):
        spec = parse_sweep(REGISTRY[id_].build(True)["sweep"])
        points = [
            {
                k: _cell(v)
                for axis, vals in zip(spec.axes, combo, strict=True)
                for k, v in zip(axis.keys, vals, strict=True)
            }
            for combo in itertools.product(*(a.values for a in spec.axes))
        ]
        exp = FakeExperiment(spec.keys, [(p, generic, _summary(duration=60.0)) for p in points])
        for v in fd.evaluate(id_, exp):
            assert v.holds in (True, False, None), v
            assert isinstance(v.measured, str) and v.measured, v
            judged += v.holds is not None
    assert judged > 30


def test_a_ratio_over_zero_is_not_judged_rather_than_an_error():
    f = _find("fig8", "several times more than BBRv2")
    exp = FakeExperiment(
        [CC, N0], [_run({CC: "bbr1", N0: 1}, retrans=0.02), _run({CC: "bbr2", N0: 1}, retrans=0.0)]
    )
    assert f.check.judge(exp)[0] is None
