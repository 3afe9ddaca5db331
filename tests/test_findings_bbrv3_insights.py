"""bbrv3-insights' findings (ccarena.catalog.findings_bbrv3_insights) on
small made-up tables: each kind of check, and each kind of quantity the
module computes (queue-sample percentiles and fractions, UP-phase peaks,
CRUISE samples, a share of the last 30 s, a ratio or a difference between
two points, trace workloads), says "no" on a table the paper's claim
excludes and "yes" on one it allows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ccarena.analysis import ideal_fct
from ccarena.catalog import findings as fd
from ccarena.catalog import findings_bbrv3_insights as b3
from ccarena.results import Results

RATE = 100.0  # Mbit/s
RTT = 10.0  # ms
#: Bytes of one RTTmin of queue at RATE and RTT.
ONE = RATE * 1e6 * RTT / 1e3 / 8


class FakeExperiment:
    """An experiment of runs made from frames: ``points`` is a list of
    (swept values, {table: frame}); missing tables are empty."""

    def __init__(self, keys, points, name="run"):
        self.keys = list(keys)
        rows, self._res = [], []
        for i, (values, tables) in enumerate(points):
            rows.append({**values, "repeat": 0, "run": f"r{i}"})
            frames = {
                "summary": tables.get("summary", _summary()),
                "flows": tables.get("flows", _flows(2)),
                "samples": tables.get("samples", pd.DataFrame({"time_s": [], "flow": [], "group": []})),
                "queue": tables.get("queue", _queue([0.0])),
                "transitions": tables.get(
                    "transitions", pd.DataFrame({"time_s": [], "flow": [], "from": [], "to": []})
                ),
            }
            self._res.append(Results(frames, {"scenario": {"name": name}}))
        self.runs = pd.DataFrame(rows)

    def results(self, i):
        return self._res[i]


def _summary(rate=RATE, duration=60.0):
    return pd.DataFrame(
        {"rate_mbps": [rate], "duration_s": [duration], "drops": [0], "bottleneck_pkts": [100_000]}
    )


def _flows(n, rtt=RTT):
    return pd.DataFrame({"flow": range(n), "group": [0] * n, "rtt_ms": [rtt] * n, "start_s": [0.0] * n})


def _queue(qd_rttmin, dt=0.1, one=ONE):
    """Queue samples every ``dt`` whose QD is ``qd_rttmin`` (in RTTmin)."""
    qd = np.asarray(qd_rttmin, dtype=float)
    return pd.DataFrame({"time_s": dt * (np.arange(len(qd)) + 1), "backlog_bytes": qd * one})


def _find(id_, start):
    found = [f for f in fd.of_id(f"bbrv3-insights/{id_}") if f.claim.startswith(start)]
    assert len(found) == 1, (id_, start)
    return found[0]


def _holds(finding, exp):
    return finding.check.judge(exp)[0]


def test_fig4_up_peaks_a_band_and_their_recurrence():
    """A peak of 0.95 RTTmin after every UP phase is the paper's; 0.25 (BBRv1's) is not."""
    one = 100e6 * 0.05 / 8  # 50 ms at 100 Mbit/s
    times = np.arange(1, 601) / 10
    ups = [6.0, 9.0, 12.0, 15.0, 18.0]

    def run(peak):
        qd = np.zeros(len(times))
        for t in ups:
            qd[(times > t) & (times <= t + 0.3)] = peak
        tr = pd.DataFrame(
            {"time_s": ups, "flow": [0] * 5, "from": ["PROBE_BW:REFILL"] * 5, "to": ["PROBE_BW:UP"] * 5}
        )
        tables = {"queue": _queue(qd, one=one), "flows": _flows(1, rtt=50.0), "transitions": tr}
        return FakeExperiment([], [({}, tables)])

    band = _find("fig4", "each UP phase")
    recur = _find("fig4", "the peaks recur")
    empty = _find("fig4", "the UP-phase queue")
    assert isinstance(band.check, fd.Band)
    assert _holds(band, run(0.95)) is True and _holds(recur, run(0.95)) is True
    assert _holds(band, run(0.25)) is False and _holds(recur, run(0.25)) is False
    assert _holds(empty, run(0.95)) is True
    # A queue that never empties is not a transient.
    standing = FakeExperiment([], [({}, {"queue": _queue(np.full(600, 0.5)), "flows": _flows(1)})])
    assert _holds(empty, standing) is False


def _cc_point(cc, qd, rate="100Mbps"):
    return ({"flows.0.cc": cc, "bottleneck.rate": rate}, {"queue": _queue(qd), "flows": _flows(1)})


def test_fig5_compare_threshold_and_a_difference_band():
    n = 600
    v3 = np.zeros(n)
    v3[::10] = 0.9  # 10% of the samples at a 0.9 RTTmin peak
    v1 = np.zeros(n)
    v1[::10] = 0.25
    paper = FakeExperiment(["flows.0.cc", "bottleneck.rate"], [_cc_point("bbr3", v3), _cc_point("bbr1", v1)])
    same = FakeExperiment(["flows.0.cc", "bottleneck.rate"], [_cc_point("bbr3", v1), _cc_point("bbr1", v1)])
    higher = _find("fig5", "a lone BBRv3 flow's")
    low = _find("fig5", "a lone BBRv1 flow")
    alike = _find("fig5", "for most of the time")
    assert isinstance(higher.check, fd.Each) and isinstance(higher.check.checks()[0], fd.Compare)
    assert _holds(higher, paper) is True and _holds(higher, same) is False
    assert _holds(low, paper) is True
    assert _holds(low, FakeExperiment(["flows.0.cc", "bottleneck.rate"], [_cc_point("bbr1", v3)])) is False
    assert _holds(alike, paper) is True
    far = FakeExperiment(
        ["flows.0.cc", "bottleneck.rate"], [_cc_point("bbr3", np.full(n, 0.5)), _cc_point("bbr1", v1)]
    )
    assert _holds(alike, far) is False


def test_fig6_cruise_samples_against_the_payload_capacity():
    times = np.arange(1, 601) / 10
    cap = RATE * b3.PAYLOAD

    def run(over, qd):
        s = pd.DataFrame(
            {
                "time_s": times,
                "flow": 0,
                "group": 0,
                "bbr_phase": "CRUISE",
                "bbr_max_bw_mbps": np.where(times % 10 < 5, cap * over, cap),
            }
        )
        q = np.where(times % 10 < 5, qd, 0.0)
        return FakeExperiment(
            ["bottleneck.rate"],
            [({"bottleneck.rate": "100Mbps"}, {"samples": s, "queue": _queue(q), "flows": _flows(1)})],
        )

    spans = _find("fig6", "with jitter, BBRv3's bandwidth")
    builds = _find("fig6", "the queue builds during CRUISE")
    assert _holds(spans, run(1.05, 0.3)) is True and _holds(builds, run(1.05, 0.3)) is True
    # a right estimate: no span above the rate, no queue it explains
    assert _holds(spans, run(1.0, 0.0)) is False and _holds(builds, run(1.0, 0.0)) is False
    # over-estimated, but the queue does not follow it
    assert _holds(builds, run(1.05, 0.0)) is False
    # the 1 Gbit/s point is not in this experiment: not checked
    assert _holds(_find("fig6", "at 1 Gbit/s and 10 ms the queue"), run(1.05, 0.3)) is None


def test_fig8_each_point_must_hold():
    keys = ["bottleneck.rate", "path.rtt", "bottleneck.buffer"]

    def point(buffer, qd):
        return (
            {"bottleneck.rate": "100Mbps", "path.rtt": "10ms", "bottleneck.buffer": buffer},
            {"queue": _queue(np.full(600, qd))},
        )

    median = _find("fig8", "with 2 or 8 BDP")
    assert _holds(median, FakeExperiment(keys, [point("2BDP", 1.2), point("8BDP", 1.3)])) is True
    assert _holds(median, FakeExperiment(keys, [point("2BDP", 1.2), point("8BDP", 0.8)])) is False
    # loss: a band with a lower edge, so "regularly" can fail
    loss = _find("fig8", "in 0.8 and 1 BDP the two flows")

    def lossy(drops):
        s = _summary()
        s["drops"] = drops
        return FakeExperiment(
            keys,
            [
                (
                    {"bottleneck.rate": "100Mbps", "path.rtt": "10ms", "bottleneck.buffer": "1BDP"},
                    {"summary": s},
                )
            ],
        )

    assert _holds(loss, lossy(300)) is True  # 0.3%
    assert _holds(loss, lossy(1)) is False and _holds(loss, lossy(2000)) is False


def test_fig9_a_ratio_between_two_points_and_the_modified_runs():
    keys = ["flows.0.count", "bottleneck.rate", "path.rtt", *b3.STOCK]

    def point(n, qd, extra=True, offload=True):
        values = {
            **b3.AT9,
            "flows.0.count": n,
            "flows.0.cc_params.extra_acked": extra,
            "flows.0.cc_params.offload_budget": offload,
        }
        return (values, {"queue": _queue(np.full(600, qd)), "flows": _flows(n)})

    doubles = _find("fig9", "at 100 Mbit/s and 10 ms, going from 16")
    assert _holds(doubles, FakeExperiment(keys, [point(16, 2.5), point(32, 4.5)])) is True
    assert _holds(doubles, FakeExperiment(keys, [point(16, 4.5), point(32, 4.5)])) is False
    # the modified runs are told apart from the stock one at the same point
    order = _find("fig9", "disabling extra_acked")
    exp = FakeExperiment(keys, [point(32, 4.5), point(32, 3.7, offload=False), point(32, 2.7, extra=False)])
    assert _holds(order, exp) is True and _holds(_find("fig9", "the unmodified 32-flow"), exp) is True
    swapped = FakeExperiment(
        keys, [point(32, 4.5), point(32, 2.7, offload=False), point(32, 3.7, extra=False)]
    )
    assert _holds(order, swapped) is False


def _share_point(jitter, buffer, share, rate="100Mbps", model="slotted"):
    t = np.arange(1, 601) / 10
    s = pd.DataFrame(
        {
            "time_s": np.r_[t, t],
            "flow": np.r_[np.zeros(600, int), np.ones(600, int)],
            "group": np.r_[np.zeros(600, int), np.ones(600, int)],
            "delivered_bytes": np.r_[t * 1e6 * share, t * 1e6 * (1 - share)],
        }
    )
    values = {
        "flows.0.ack_jitter.model": model,
        "flows.0.ack_jitter.max": jitter,
        "bottleneck.rate": rate,
        "bottleneck.buffer": buffer,
    }
    return values, {"samples": s}


TABLE1_KEYS = ["flows.0.ack_jitter.model", "flows.0.ack_jitter.max", "bottleneck.rate", "bottleneck.buffer"]


def test_table1_last_30_s_share_thresholds_compares_and_the_papers_cells():
    jitter_loses = _find("table1", "at 0.8 and 1 BDP the flow without")
    more_jitter = _find("table1", "at 0.8 and 1 BDP more jitter")
    alike = _find("table1", "0.8 and 1 BDP give about")
    cells = _find("table1", "each cell is near")
    paper = FakeExperiment(
        TABLE1_KEYS,
        [
            _share_point("10ms", "1BDP", 0.44),
            _share_point("40ms", "1BDP", 0.28),
            _share_point("10ms", "0.8BDP", 0.43),
        ],
    )
    assert _holds(jitter_loses, paper) is True and _holds(more_jitter, paper) is True
    assert _holds(alike, paper) is True and _holds(cells, paper) is True
    fair = FakeExperiment(
        TABLE1_KEYS,
        [
            _share_point("10ms", "1BDP", 0.5),
            _share_point("40ms", "1BDP", 0.5),
            _share_point("10ms", "0.8BDP", 0.25),
        ],
    )
    assert _holds(jitter_loses, fair) is False and _holds(more_jitter, fair) is False
    assert _holds(alike, fair) is False and _holds(cells, fair) is False
    # the share is of the last 30 s only: a first half all the jitter flow's does not count
    s = _share_point("10ms", "1BDP", 0.3)[1]["samples"]
    s.loc[(s["flow"] == 0), "delivered_bytes"] += np.minimum(s.loc[s["flow"] == 0, "time_s"], 30.0) * 1e8
    one = FakeExperiment(TABLE1_KEYS, [(_share_point("10ms", "1BDP", 0.3)[0], {"samples": s})])
    assert b3._last30_share(one.results(0)) == pytest.approx(0.3)


def test_fig13_byte_quantiles_read_the_figures_workload(monkeypatch):
    q50 = _find("fig13", "half of the bytes")
    rate = _find("fig13", "the trace offers")
    sizes = np.r_[np.full(1000, 1e4), np.full(10, 3e8)]  # 3 GB of 3.01 GB in 300 MB flows
    monkeypatch.setattr(b3, "_figure_workload_sizes", lambda: sizes)
    exp = FakeExperiment([], [({}, {"flows": _flows(1)})], name="bbrv3-insights-fig13")
    assert _holds(q50, exp) is True
    assert _holds(rate, exp) is False  # 3 GB in 900 s is 0.03 Gbit/s
    monkeypatch.setattr(b3, "_figure_workload_sizes", lambda: np.full(1000, 1e4))
    assert _holds(q50, exp) is False
    # a run with a capture: its sizes are not in the tables, not checked
    capture = FakeExperiment([], [({}, {"flows": _flows(1)})], name="bbrv3-insights-fig13-mawi")
    assert _holds(q50, capture) is None


def _trace_point(config, cc, rtt, slow, qd=None):
    n = 50
    size = np.full(n, 20_000.0)
    ideal = ideal_fct(size, 3e9, RTT / 1e3)
    flows = pd.DataFrame(
        {
            "flow": range(n),
            "group": 0,
            "rtt_ms": RTT,
            "size_bytes": size,
            "fct_s": ideal * slow,
            "start_s": np.arange(n) * 0.01,
            "end_s": np.arange(n) * 0.01 + ideal * slow,
            "drops_overflow": 0,
        }
    )
    tables = {"flows": flows, "summary": _summary(rate=3000.0, duration=15.0)}
    if qd is not None:
        tables["queue"] = _queue(qd, one=3e9 * RTT / 1e3 / 8)
    return {"description": f"{config} / {cc}", "path.rtt": rtt, "flows": "[]"}, tables


def test_fig14_15_bbr_against_cubic_on_the_trace():
    keys = ["description", "path.rtt", "flows"]
    lower = _find("fig14", "BBRv3's mean slowdown is lower")
    slightly = _find("fig14", "...but only slightly")
    exp = FakeExperiment(
        keys,
        [_trace_point("Collapsed", "bbr3", "10ms", 1.8), _trace_point("Collapsed", "cubic", "10ms", 2.0)],
    )
    assert _holds(lower, exp) is True and _holds(slightly, exp) is True
    worse = FakeExperiment(
        keys,
        [_trace_point("Collapsed", "bbr3", "10ms", 2.2), _trace_point("Collapsed", "cubic", "10ms", 2.0)],
    )
    assert _holds(lower, worse) is False
    much = FakeExperiment(
        keys,
        [_trace_point("Collapsed", "bbr3", "10ms", 1.0), _trace_point("Collapsed", "cubic", "10ms", 2.0)],
    )
    assert _holds(slightly, much) is False
    # fig15: the queue under congestion (QD >= 0.05), in the arrival window only
    shorter = _find("fig15", "under congestion")
    empty = _find("fig15", "most of the time")
    bbr = np.r_[np.zeros(70), np.full(30, 1.2), np.full(50, 8.0)]  # the last 5 s are the drain: left out
    cubic = np.r_[np.zeros(70), np.full(30, 3.0), np.zeros(50)]
    exp = FakeExperiment(
        keys,
        [
            _trace_point("Collapsed", "bbr3", "10ms", 1.8, bbr),
            _trace_point("Collapsed", "cubic", "10ms", 2.0, cubic),
        ],
    )
    assert _holds(shorter, exp) is True and _holds(empty, exp) is True
    swapped = FakeExperiment(
        keys,
        [
            _trace_point("Collapsed", "bbr3", "10ms", 1.8, cubic),
            _trace_point("Collapsed", "cubic", "10ms", 2.0, bbr),
        ],
    )
    assert _holds(shorter, swapped) is False
    busy = FakeExperiment(keys, [_trace_point("Collapsed", "bbr3", "10ms", 1.8, np.full(150, 1.2))])
    assert _holds(empty, busy) is False


def test_every_finding_of_the_paper_can_fail_and_cites_it():
    from ccarena.catalog import REGISTRY

    ids = [i for i in REGISTRY if i.startswith("bbrv3-insights/")]
    assert ids and all(fd.of_id(i) for i in ids)
    for i in ids:
        for f in fd.of_id(i):
            assert f.cite.startswith("bbrv3-insights, ") and f.check.can_fail(), f
