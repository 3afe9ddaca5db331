"""bbq's findings (catalog/findings_bbq.py) on small synthetic tables: each
check says "yes" on a table its claim allows and "no" on one it excludes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ccarena.catalog import findings as fd
from ccarena.catalog import findings_bbq as fb
from ccarena.catalog.base import when_json
from ccarena.catalog.bbq import RED
from ccarena.results import Results


class FakeExperiment:
    """An experiment of runs made from frames: ``points`` is a list of
    (swept values, frames of one run)."""

    def __init__(self, keys, points):
        self.keys = list(keys)
        rows, self._res = [], []
        for i, (values, frames) in enumerate(points):
            rows.append({**values, "repeat": 0, "run": f"r{i}"})
            self._res.append(Results(frames, {"scenario": {}}))
        self.runs = pd.DataFrame(rows)

    def results(self, i):
        return self._res[i]


def run(
    gp,
    *,
    duration=120.0,
    starts=(0.0, 5.0),
    groups=None,
    dt=0.5,
    cols=None,
    queue_ms=lambda t: 20.0,
    transitions=(),
    retrans=None,
    end_s=None,
    qdelay_mean_ms=20.0,
):
    """One run's frames: ``gp(flow, t)`` the flows' sample goodput, ``cols(flow, t)``
    more sample columns; a flow has samples from its start to its end."""
    n = len(starts)
    groups = list(groups or range(n))
    ends = list(end_s or [duration] * n)
    times = np.arange(dt, duration + 1e-9, dt)
    rows = []
    for f in range(n):
        for t in times:
            if starts[f] < t <= ends[f]:
                rows.append(
                    {
                        "time_s": t,
                        "flow": f,
                        "group": groups[f],
                        "goodput_mbps": gp(f, t),
                        **(cols(f, t) if cols else {}),
                    }
                )
    samples = pd.DataFrame(rows)
    flows = pd.DataFrame(
        {
            "flow": range(n),
            "group": groups,
            "start_s": list(starts),
            "end_s": ends,
            "goodput_mbps": [samples.loc[samples["flow"] == f, "goodput_mbps"].mean() for f in range(n)],
            "segs_sent": [100_000] * n,
            "segs_retrans": list(retrans or [100] * n),
            "rtt_ms": [10.0] * n,
        }
    )
    summary = pd.DataFrame(
        {"duration_s": [duration], "rate_mbps": [100.0], "qdelay_mean_ms": [qdelay_mean_ms]}
    )
    queue = pd.DataFrame(
        {
            "time_s": times,
            "link": "bottleneck",
            "sojourn_mean_ms": [queue_ms(t) for t in times],
            "backlog_bytes": 0,
        }
    )
    trans = pd.DataFrame(list(transitions), columns=["time_s", "flow", "from", "to"])
    return {"summary": summary, "flows": flows, "samples": samples, "queue": queue, "transitions": trans}


def split(short, long, solo=95.0, join=5.0):
    """The 10 ms flow alone at ``solo`` until the join, then ``short`` against ``long``."""
    return lambda f, t: (solo if t <= join else short) if f == 0 else long


def finding(id, text):
    (f,) = [f for f in fd.of_id(id) if text in f.claim]
    return f


def verdict(f, exp):
    return f.check.judge(exp)[0]


def single(frames):
    return FakeExperiment([], [({}, frames)])


def test_every_bbq_finding_cites_the_paper_and_can_fail():
    ids = [i for i in fd.FINDINGS if i.startswith("bbq/")]
    assert len(ids) == 13
    for i in ids:
        for f in fd.of_id(i):
            assert f.cite.startswith("bbq, ") and f.claim and f.paper and f.kernel, f
            assert f.check.can_fail(), f
            if isinstance(f.check, fd.Band):
                assert f.check.why or f.why, f


def test_fig1_shares_are_steady_state_the_solo_seconds_left_out():
    small = finding("bbq/fig1", "small slice")
    # 6.3 vs 87.3 after the join: 0.067, though the lifetime share counts 5 s alone at 95 Mbit/s.
    assert verdict(small, single(run(split(6.3, 87.3)))) is True
    # Only the solo seconds make the 10 ms flow big: its steady share is 0.01, starved.
    assert verdict(small, single(run(split(0.9, 90.0, solo=95.0)))) is False
    assert verdict(small, single(run(split(40.0, 55.0)))) is False
    long = finding("bbq/fig1", "carries most")
    assert verdict(long, single(run(split(6.3, 87.3)))) is True
    assert verdict(long, single(run(split(40.0, 55.0)))) is False
    alone = finding("bbq/fig1", "fills the link")
    assert verdict(alone, single(run(split(6.3, 87.3, solo=95.0)))) is True
    assert verdict(alone, single(run(split(6.3, 87.3, solo=60.0)))) is False


def _rates(shares_by_rate, cc=None):
    """A run per rate (and algorithm): the 10 ms flow's steady share as given."""
    points = []
    for key, s in shares_by_rate.items():
        rate, algo = key if cc else (key, None)
        values = {"bottleneck.rate": rate, **({"flows.0.cc": algo} if algo else {})}
        points.append((values, run(split(90.0 * s, 90.0 * (1 - s)))))
    return FakeExperiment(["bottleneck.rate", *(["flows.0.cc"] if cc else [])], points)


def test_fig3_each_rate_and_the_milder_bias_at_10_mbps():
    under = finding("bbq/fig3", "well under half")
    assert verdict(under, _rates({"10Mbps": 0.3, "400Mbps": 0.08})) is True
    assert verdict(under, _rates({"10Mbps": 0.45, "400Mbps": 0.08})) is False
    milder = finding("bbq/fig3", "milder")
    assert verdict(milder, _rates({"10Mbps": 0.3, "400Mbps": 0.08})) is True
    assert verdict(milder, _rates({"10Mbps": 0.1, "400Mbps": 0.08})) is False


def test_fig14_bbq_against_bbr_as_a_ratio_at_each_rate():
    gain = finding("bbq/fig14", "at least about 1.5 times")
    good = {
        ("10Mbps", "bbr1"): 0.25,
        ("10Mbps", "bbq"): 0.39,
        ("400Mbps", "bbr1"): 0.08,
        ("400Mbps", "bbq"): 0.5,
    }
    assert verdict(gain, _rates(good, cc=True)) is True
    bad = {**good, ("10Mbps", "bbq"): 0.3}  # 1.2x
    assert verdict(gain, _rates(bad, cc=True)) is False
    even = finding("bbq/fig14", "about equally")
    assert verdict(even, _rates(good, cc=True)) is True
    assert verdict(even, _rates({**good, ("400Mbps", "bbq"): 0.3}, cc=True)) is False


def _rtts(shares):
    """fig15: a run per (cc, B) with the 10 ms flow's steady share."""
    points = [
        ({"flows.1.rtt": b, "flows.0.cc": cc}, run(split(90.0 * s, 90.0 * (1 - s))))
        for (cc, b), s in shares.items()
    ]
    return FakeExperiment(["flows.1.rtt", "flows.0.cc"], points)


def test_fig15_bbq_keeps_the_share_bbr_loses():
    kept = finding("bbq/fig15", "keeps most")
    paper = {("bbq", "10ms"): 0.5, ("bbq", "100ms"): 0.371, ("bbr1", "10ms"): 0.5, ("bbr1", "100ms"): 0.08}
    assert verdict(kept, _rtts(paper)) is True
    both_fall = {**paper, ("bbq", "100ms"): 0.1}
    assert verdict(kept, _rtts(both_fall)) is False
    third = finding("bbq/fig15", "a bit over a third")
    assert verdict(third, _rtts(paper)) is True
    assert verdict(third, _rtts(both_fall)) is False


def _long_gets(s, n):
    """Flow ``n`` (the 50 ms flow) gets ``s`` of 90 Mbit/s, the ``n`` others the rest evenly."""
    return lambda f, t: 90.0 * s if f == n else 90.0 * (1 - s) / n


def _counts(long_share, ns, cc=None):
    """fig6/fig16: N 10 ms flows (group 0) and one 50 ms flow (group 1) that gets ``long_share[n]``."""
    points = []
    for key, s in long_share.items():
        n, algo = key if cc else (key, None)
        starts = [0.0] * n + [5.0]
        gp = _long_gets(s, n)
        values = {"flows.0.count": n, **({"flows.0.cc": algo} if algo else {})}
        points.append((values, run(gp, starts=starts, groups=[0] * n + [1])))
    return FakeExperiment(["flows.0.count", *(["flows.0.cc"] if cc else [])], points)


def test_fig6_the_long_flow_many_times_each_short_one():
    many = finding("bbq/fig6", "many times")
    assert verdict(many, _counts({1: 0.93, 2: 0.8}, None)) is True  # 13x and 8x one short flow
    assert verdict(many, _counts({1: 0.93, 2: 0.5}, None)) is False  # 2x at N = 2
    shrinks = finding("bbq/fig6", "shrinks")
    assert verdict(shrinks, _counts({1: 0.93, 5: 0.7, 20: 0.5}, None)) is True
    assert verdict(shrinks, _counts({1: 0.93, 5: 0.7, 20: 0.8}, None)) is False


def test_fig16_bbqs_gain_smaller_with_more_flows():
    less = finding("bbq/fig16", "smaller with twenty")
    shares = {(1, "bbr1"): 0.93, (1, "bbq"): 0.45, (20, "bbr1"): 0.5, (20, "bbq"): 0.45}
    assert verdict(less, _counts(shares, None, cc=True)) is True  # gain 7.9x at N=1, 1.1x at N=20
    flipped = {(1, "bbr1"): 0.6, (1, "bbq"): 0.5, (20, "bbr1"): 0.5, (20, "bbq"): 0.1}
    assert verdict(less, _counts(flipped, None, cc=True)) is False


def test_fig4_retransmissions_per_red_setting():
    double = finding("bbq/fig4", "50 ms flow's retransmissions")
    reds = ["bottleneck.red"]

    def exp(r2, r3):
        return FakeExperiment(
            reds,
            [
                ({"bottleneck.red": when_json(RED[i])}, run(split(6.0, 88.0), retrans=[r // 4, r]))
                for i, r in enumerate([10_000, r2, r3])
            ],
        )

    assert verdict(double, exp(20_000, 17_000)) is True
    assert verdict(double, exp(20_000, 11_000)) is False
    several = finding("bbq/fig4", "several times as much")
    assert verdict(several, exp(20_000, 17_000)) is True


PROBE = [
    (5.5, 1, "STARTUP", "PROBE_BW"),
    (15.0, 1, "PROBE_BW", "PROBE_RTT"),
    (15.2, 1, "PROBE_RTT", "PROBE_BW"),
]


def _zoom(bounded0, bounded1, queue=30.0, transitions=PROBE):
    def cols(f, t):
        limited = bounded0 if f == 0 else bounded1
        return {
            "cwnd_pkts": 100.0,
            "inflight_pkts": 100.0 if limited else 50.0,
            "queue_backlog_bytes": 1000 + 9000 * f,
        }

    gp = lambda f, t: (90.0 if 15.0 < t <= 15.3 else 8.0) if f == 0 else 85.0  # noqa: E731
    return single(
        run(gp, duration=30.0, dt=0.01, cols=cols, queue_ms=lambda t: queue, transitions=transitions)
    )


def test_fig8_11_windows_follow_the_long_flows_probe_rtt():
    limited = finding("bbq/fig8-11", "window-limited most")
    rarer = finding("bbq/fig8-11", "far less often")
    queue = finding("bbq/fig8-11", "a standing queue forms")
    peak = finding("bbq/fig8-11", "takes nearly the whole link")
    back = finding("bbq/fig8-11", "left far behind")
    backlog = finding("bbq/fig8-11", "backlog belongs")
    paper = _zoom(True, False)
    for f in (limited, rarer, queue, peak, back, backlog):
        assert verdict(f, paper) is True, f.claim
    swapped = _zoom(False, True, queue=5.0)
    for f in (limited, rarer, queue):
        assert verdict(f, swapped) is False, f.claim
    # No ProbeRTT of the 50 ms flow: its windows do not exist, nothing is checked.
    assert verdict(limited, _zoom(True, False, transitions=PROBE[:1])) is None


def test_fig12_drain_phase_queue_and_the_comparison_with_plain_bbr():
    keys = list(fb.DRAIN_KEYS)

    def one(drain, frac, share, queue=8.0):
        """Pacing gain 0.75 in the first ``frac`` of every second, 1 otherwise."""

        def gain(f, t):
            return {"bbr_pacing_gain": 0.75 if round(t % 1.0, 6) < frac else 1.0}

        frames = run(split(90 * share, 90 * (1 - share)), cols=gain, dt=0.1, queue_ms=lambda t: queue)
        return dict.fromkeys(keys, drain), frames

    trapped = finding("bbq/fig12", "0.75 drain phase")
    lower = finding("bbq/fig12", "even smaller share")
    third = finding("bbq/fig12", "a third")
    paper = FakeExperiment(keys, [one(True, 0.7, 0.04), one(False, 0.1, 0.067)])
    for f in (trapped, lower, third):
        assert verdict(f, paper) is True, f.claim
    bbr_like = FakeExperiment(keys, [one(True, 0.1, 0.1, queue=2.0), one(False, 0.1, 0.067)])
    for f in (trapped, lower, third):
        assert verdict(f, bbr_like) is False, f.claim


def test_fig13_ramp_after_the_short_flow_leaves():
    ramp = finding("bbq/fig13", "within a couple of seconds")

    def exp(reach_at):
        gp = lambda f, t: 45.0 if f == 0 else (92.0 if t >= reach_at else 45.0)  # noqa: E731
        return FakeExperiment(["flows.0.cc"], [({"flows.0.cc": "bbq"}, run(gp, end_s=[110.5, 120.0]))])

    assert verdict(ramp, exp(112.0)) is True  # 1.5 s after its last delivery
    assert verdict(ramp, exp(115.0)) is False
    assert verdict(ramp, exp(999.0)) is False  # never: the rest of the run, 9.5 s


def test_fig13_queueing_delay_cut_as_a_ratio():
    cut = finding("bbq/fig13", "two thirds")

    def exp(bbq_ms):
        return FakeExperiment(
            ["flows.0.cc"],
            [
                ({"flows.0.cc": "bbq"}, run(split(50.0, 43.0), qdelay_mean_ms=bbq_ms)),
                ({"flows.0.cc": "bbr1"}, run(split(6.3, 87.3), qdelay_mean_ms=23.4)),
            ],
        )

    assert verdict(cut, exp(8.3)) is True
    assert verdict(cut, exp(18.0)) is False


def test_fig7_every_cheater_must_win_its_phase():
    win = finding("bbq/fig7", "after each cheat")

    def exp(weak_phase=None):
        def gp(f, t):
            k = int(t // 50) + 1
            cheater = {2: 0, 3: 1, 4: 0, 5: 1}.get(k)
            if cheater is None:
                return 47.0
            s = 0.5 if k == weak_phase else 0.8
            return 95.0 * (s if f == cheater else 1 - s)

        return single(run(gp, duration=250.0, starts=(0.0, 0.0)))

    assert verdict(win, exp()) is True
    assert verdict(win, exp(weak_phase=4)) is False
    even = finding("bbq/fig7", "before anyone cheats")
    assert verdict(even, exp()) is True
