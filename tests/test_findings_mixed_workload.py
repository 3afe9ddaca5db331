"""mixed-workload's findings (catalog/findings_mixed_workload.py) on small
synthetic tables: each kind says "no" on a table its claim excludes and
"yes" on one it allows, its quantities read the runs as the figures do, and
every point a finding needs is in its id's full sweep."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from ccarena.catalog import REGISTRY
from ccarena.catalog import findings as fd
from ccarena.catalog import findings_mixed_workload as mw
from ccarena.results import Results

IDS = sorted(i for i in REGISTRY if i.startswith("mixed-workload/"))


class FakeExperiment:
    """An experiment of runs made from frames: ``points`` is a list of
    (swept values, Results); a point given twice is two repeats."""

    def __init__(self, keys, points):
        self.keys = list(keys)
        rows, self._res = [], []
        seen: dict[tuple, int] = {}
        for i, (values, res) in enumerate(points):
            key = tuple(sorted(values.items()))
            rows.append({**values, "repeat": seen.get(key, 0), "run": f"r{i}"})
            seen[key] = seen.get(key, 0) + 1
            self._res.append(res)
        self.runs = pd.DataFrame(rows)

    def results(self, i):
        return self._res[i]


def run(
    fcts=(1.0, 1.0, 1.0),
    *,
    large_end=20.0,
    large_goodput=10.0,
    rate=20.0,
    retrans=None,
    starts=None,
    srtt=90.0,
    util=0.9,
    cwnd_large=100.0,
    cwnd_small=20.0,
    pacing=None,
    group0_fcts=(),
):
    """One run: flow 0 the large flow (0 s to ``large_end``), then group-1
    flows with FCTs ``fcts`` (started 1 s apart from 0.5 s, or at
    ``starts``), then more group-0 flows with FCTs ``group0_fcts`` (fig9's
    second succession). Samples every 0.1 s to 30 s: all flows' goodput sums
    to ``util`` x ``rate`` while flow 0 runs; flow 0 paces at ``pacing(t)``."""
    n = len(fcts)
    starts = list(starts) if starts is not None else [0.5 + i for i in range(n)]
    retrans = list(retrans) if retrans is not None else [0] * n
    m = len(group0_fcts)
    flows = pd.DataFrame(
        {
            "flow": list(range(1 + n + m)),
            "group": [0] + [1] * n + [0] * m,
            "start_s": [0.0, *starts, *[0.5 + i for i in range(m)]],
            "end_s": [large_end, *[s + f for s, f in zip(starts, fcts, strict=True)], *[30.0] * m],
            "fct_s": [large_end, *fcts, *group0_fcts],
            "goodput_mbps": [large_goodput] + [1.0] * (n + m),
            "segs_retrans": [0, *retrans, *[0] * m],
            "segs_sent": [1000] * (1 + n + m),
            "srtt_mean_ms": [srtt] * (1 + n + m),
            "rtt_ms": [45.0] * (1 + n + m),
        }
    )
    times = [round(0.1 * k, 1) for k in range(1, 301)]
    pace = pacing or (lambda t: rate)
    rows = []
    for t in times:
        if t <= large_end:
            rows.append((t, 0, 0, util * rate / 2, cwnd_large, pace(t)))
            rows.append((t, 1, 1, util * rate / 2, cwnd_small, float("nan")))
    samples = pd.DataFrame(
        rows, columns=["time_s", "flow", "group", "goodput_mbps", "cwnd_pkts", "pacing_rate_mbps"]
    )
    summary = pd.DataFrame({"rate_mbps": [rate], "utilization": [util]})
    frames = {
        "summary": summary,
        "flows": flows,
        "samples": samples,
        "queue": pd.DataFrame({"time_s": [], "backlog_bytes": []}),
        "transitions": pd.DataFrame({"time_s": [], "flow": [], "from": [], "to": []}),
    }
    return Results(frames, {"scenario": {}})


def holds(finding_id, claim_start, exp):
    (f,) = [f for f in fd.of_id(finding_id) if f.claim.startswith(claim_start)]
    return f.check.judge(exp)[0]


def _grid(doc):
    """The full sweep's points (swept key -> value as the run labels write it)."""
    axes = []
    for k, v in (doc.get("sweep") or {}).items():
        if k == "repeats":
            continue
        if k == "zip":
            for group in v if isinstance(v, list) else [v]:
                keys = list(group)
                axes.append(
                    [dict(zip(keys, vals, strict=True)) for vals in zip(*group.values(), strict=True)]
                )
        else:
            axes.append([{k: x} for x in v])
    return [{k: str(x) for part in combo for k, x in part.items()} for combo in itertools.product(*axes)]


# --------------------------------------------------------------------------- every point exists


@pytest.mark.parametrize("id", IDS)
def test_every_finding_is_judged_on_its_ids_full_sweep(id):
    """Runs at every point of the full form's sweep: no finding of the id
    is left unjudged, so every point it reads is one the sweep has."""
    e = REGISTRY[id]
    points = _grid(e.build(False))
    keys = list(points[0])
    exp = FakeExperiment(keys, [(p, run(group0_fcts=(1.0, 1.2))) for p in points])
    verdicts = fd.evaluate(id, exp)
    assert verdicts
    unjudged = [v.finding.claim for v in verdicts if v.holds is None]
    assert not unjudged, unjudged


@pytest.mark.parametrize("id", ["mixed-workload/fig2", "mixed-workload/fig10", "mixed-workload/fig7"])
def test_the_quick_forms_judge_what_they_have(id):
    """A quick form lacks points (1, 4, 8 BDP; most rates): those findings
    read n/a, the rest are judged, nothing raises."""
    e = REGISTRY[id]
    points = _grid(e.build(True))
    exp = FakeExperiment(list(points[0]), [(p, run()) for p in points])
    verdicts = fd.evaluate(id, exp)
    assert any(v.holds is not None for v in verdicts) or id.endswith("fig7")
    assert any(v.holds is None for v in verdicts)


# --------------------------------------------------------------------------- the quantities


def test_fct_beside_counts_only_the_flows_started_while_the_large_flow_ran():
    r = run(fcts=(1.0, 3.0, 100.0), starts=(0.5, 5.0, 25.0), large_end=20.0)
    assert mw._fct_beside(r) == pytest.approx(2.0)  # the flow from 25 s ran alone


def test_utilization_is_measured_while_the_large_flow_sends():
    r = run(util=0.6, rate=40.0, large_end=10.0)
    assert mw._utilization_while_large(r) == pytest.approx(0.6)


def test_pacing_below_the_limit_counts_from_2_s_to_the_large_flows_end():
    r = run(rate=20.0, large_end=12.0, pacing=lambda t: 8.0 if 4.0 < t <= 9.0 else 19.0)
    assert mw._paced_low(r) == pytest.approx(0.5)  # 5 s of 10


# --------------------------------------------------------------------------- each kind says yes and no

F2 = {k: "" for k in ("flows.0.cc", "flows.1.cc", "bottleneck.rate", "bottleneck.buffer")}


def _fig2(fct):
    """fig2's points, the medium flows' FCT at each given by ``fct(combo, rate, buffer)``."""
    pts = []
    for (large, small), r, b in itertools.product(
        [("bbr1", "bbr1"), ("bbr1", "cubic"), ("cubic", "bbr1"), ("cubic", "cubic")], mw.RATES, mw.BUFFERS
    ):
        values = {**mw._cc(large, small), **mw.rate(r), **mw.buf(b)}
        pts.append((values, run(fcts=(fct((large, small), r, b),) * 3)))
    return FakeExperiment(list(F2), pts)


def test_a_trend_at_most_rates_needs_five_of_the_eight():
    def grows_at(n):
        return lambda combo, r, b: (
            2.0 if (combo == ("cubic", "cubic") and b == 8 and r in mw.RATES[:n]) else 1.0
        )

    claim = "all-CUBIC: the medium flows take much longer"
    assert holds("mixed-workload/fig2", claim, _fig2(grows_at(5))) is True
    assert holds("mixed-workload/fig2", claim, _fig2(grows_at(4))) is False


def test_the_buffer_where_bbr_and_cubic_are_closest_must_be_2_bdp():
    def far_but(closest):
        return lambda combo, r, b: 1.0 if combo[0] == "cubic" or b == closest else 3.0

    claim = "of the buffers tested, 2 BDP"
    assert holds("mixed-workload/fig2", claim, _fig2(far_but(2))) is True
    assert holds("mixed-workload/fig2", claim, _fig2(far_but(4))) is False


def _vs_large(values):
    """fig10/13's points: FCT of the successive flows by (large cc, buffer)."""
    pts = []
    for (cc, b), v in values.items():
        kw = v if isinstance(v, dict) else {"fcts": (v,) * 3}
        pts.append(({"flows.0.cc": cc, **mw.buf(b)}, run(**kw)))
    return FakeExperiment(["flows.0.cc", "bottleneck.buffer"], pts)


def test_a_comparison_between_points_needs_the_papers_size():
    claim = "at 1 BDP, a large BBR flow makes"
    assert holds("mixed-workload/fig10", claim, _vs_large({("bbr1", 1): 1.6, ("cubic", 1): 1.0})) is True
    assert holds("mixed-workload/fig10", claim, _vs_large({("bbr1", 1): 1.2, ("cubic", 1): 1.0})) is False
    # No run at one of the points: not checked.
    assert holds("mixed-workload/fig10", claim, _vs_large({("bbr1", 2): 1.6, ("cubic", 2): 1.0})) is None


def test_a_band_on_a_ratio_between_points():
    claim = "at 2 BDP, the 1 MB CUBIC flows' completion time"
    assert holds("mixed-workload/fig10", claim, _vs_large({("bbr1", 2): 1.2, ("cubic", 2): 1.0})) is True
    assert holds("mixed-workload/fig10", claim, _vs_large({("bbr1", 2): 2.0, ("cubic", 2): 1.0})) is False


def test_each_bigger_buffer_must_favour_the_large_bbr_flow():
    claim = "in the big buffers, the 1 MB CUBIC flows finish sooner"
    both = {("bbr1", 4): 0.8, ("cubic", 4): 1.0, ("bbr1", 8): 0.5, ("cubic", 8): 1.0}
    assert holds("mixed-workload/fig10", claim, _vs_large(both)) is True
    assert holds("mixed-workload/fig10", claim, _vs_large({**both, ("bbr1", 4): 0.95})) is False


def test_the_largest_gain_must_be_at_8_bdp():
    claim = "the 100 KB flows gain most"
    ratios = {0.5: 2.0, 1: 1.5, 2: 1.2, 4: 0.8, 8: 0.5}
    values = {**{("bbr1", b): x for b, x in ratios.items()}, **{("cubic", b): 1.0 for b in ratios}}
    assert holds("mixed-workload/fig13", claim, _vs_large(values)) is True
    assert holds("mixed-workload/fig13", claim, _vs_large({**values, ("bbr1", 4): 0.3})) is False
    del values[("bbr1", 8)]
    assert holds("mixed-workload/fig13", claim, _vs_large(values)) is None


def test_most_small_flows_retransmit_11_to_15_packets():
    claim = "most 100 KB CUBIC flows beside a large BBR flow"
    many = {"fcts": (0.5,) * 4, "retrans": (12, 14, 11, 3)}
    few = {"fcts": (0.5,) * 4, "retrans": (12, 3, 2, 20)}
    assert holds("mixed-workload/fig14", claim, _vs_large({("bbr1", 2): many})) is True
    assert holds("mixed-workload/fig14", claim, _vs_large({("bbr1", 2): few})) is False


def test_none_but_the_first_two_small_flows_retransmit_beside_cubic():
    claim = "beside a large CUBIC flow at 2 BDP, no 100 KB flow"
    first_two = {"fcts": (0.5,) * 5, "retrans": (4, 2, 0, 0, 0)}
    later = {"fcts": (0.5,) * 5, "retrans": (0, 0, 0, 1, 0)}
    assert holds("mixed-workload/fig14", claim, _vs_large({("cubic", 2): first_two})) is True
    assert holds("mixed-workload/fig14", claim, _vs_large({("cubic", 2): later})) is False


def test_the_pacing_rate_drops_for_long_at_2_bdp_not_at_1():
    claim = "at 2 BDP the large BBR flow paces much lower"
    steady = {"pacing": lambda t: 19.0}
    dips = {"pacing": lambda t: 5.0 if 5.0 < t <= 10.0 else 19.0}  # 5 s of 18
    assert holds("mixed-workload/fig12", claim, _vs_large({("bbr1", 2): dips, ("bbr1", 1): steady})) is True
    assert (
        holds("mixed-workload/fig12", claim, _vs_large({("bbr1", 2): steady, ("bbr1", 1): steady})) is False
    )


def test_the_large_cubic_flows_window_beside_bbr_flows():
    def exp(cwnd):
        return FakeExperiment(
            ["flows.1.cc"],
            [
                ({"flows.1.cc": "bbr1"}, run(cwnd_large=cwnd)),
                ({"flows.1.cc": "cubic"}, run(cwnd_large=180.0)),
            ],
        )

    assert holds("mixed-workload/fig5", "successive 1 MB BBR flows hold", exp(40.0)) is True
    assert holds("mixed-workload/fig5", "successive 1 MB BBR flows hold", exp(100.0)) is False


def _fig7(util):
    pts = []
    for s, cc, r in itertools.product(mw.SIZES, ("bbr1", "cubic"), mw.RATES):
        pts.append(({"flows.1.size": s, "flows.1.cc": cc, **mw.rate(r)}, run(util=util(s, cc, r))))
    return FakeExperiment(["flows.1.size", "flows.1.cc", "bottleneck.rate"], pts)


def test_the_utilization_dips_at_the_papers_rates():
    def dip_at(dips):
        return lambda s, cc, r: 0.5 if cc == "bbr1" and r == dips[s] else 0.9

    claim = "with medium BBR flows the utilization dips"
    assert holds("mixed-workload/fig7", claim, _fig7(dip_at(mw.DIPS))) is True
    assert holds("mixed-workload/fig7", claim, _fig7(dip_at({**mw.DIPS, "2MB": 30}))) is False
    order = "the utilization dip moves to higher rates"
    assert holds("mixed-workload/fig7", order, _fig7(dip_at({"500KB": 20, "1MB": 30, "2MB": 50}))) is True
    assert holds("mixed-workload/fig7", order, _fig7(dip_at({"500KB": 20, "1MB": 50, "2MB": 40}))) is False


def test_every_finding_of_the_paper_can_fail():
    for id in IDS:
        for f in fd.of_id(id):
            assert f.cite.startswith("mixed-workload, "), f
            assert f.check.can_fail(), f"{id}: {f.claim}"
