"""The findings of bbq, each as the paper states it (catalog/findings.py).

Ma, Jiang, Wang, Li, "Towards RTT Fairness of Congestion-Based Congestion
Control" (arXiv 1706.09115). In every id flow 0 (group 0) is the 10 ms flow
(the N 10 ms flows in fig6/fig16, the shorter-RTT flow of the pair in
fig17) and flow 1 (group 1) the longer-RTT flow, which joins later.

The paper measures shares "in the steady state", start-up left out. The
shares here are therefore not the flows table's lifetime ``share`` (which
counts the 10 ms flow's solo seconds: 2 of 20 s in the quick forms) but the
ones the module's figures draw (``bbq.steady_shares``): each flow's mean
``samples.goodput_mbps`` over the steady window W, from ``SETTLE`` after the
late flow's join to the end (15-120 s in the full forms, 5-20 s in the
quick ones), over the sum of every flow's. A point's value is the mean over
its repetitions. The paper plots one value per point and gives no spread,
so a band's width is a stated tolerance, said in ``why``.

The kernel has BBRv1 but neither BBQ nor fig12's drain-to-one-BDP variant
(both are reconstructions from the paper's Sec. V; its code is not public):
a finding on them says "none" or names the BBRv1 side it can show."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..lazy import lazy
from .base import when_json
from .bbq import (
    B_FULL,
    DRAIN_KEYS,
    FULL_S,
    JOIN_FULL,
    JOIN_QUICK,
    N_FULL,
    PAIR_RTTS_FULL,
    QUICK_S,
    RATES_FULL,
    RED,
    SETTLE_FULL,
    SETTLE_QUICK,
)
from .findings import Band, Compare, Each, Finding, Point, Quantity, Runs, Threshold, add
from .quantities import FRACTION, NONNEG, flow_metric, summary

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..results import Results
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = [
    "cheater_share_min",
    "cwnd_bound_fraction",
    "goodput",
    "pacing_gain_fraction",
    "peak_goodput",
    "queue_quantile",
    "ramp_time",
    "sample_mean_in",
    "share",
    "steady",
]

#: A time window of a run, (after, before] in seconds; NaN ends when the run lacks what defines it.
Window = Callable[["Results"], tuple[float, float]]

# ------------------------------------------------------------------------------------ windows


def _full(r: Results) -> bool:
    """The full form (120 s runs) or the quick one (shorter)."""
    return float(r.summary["duration_s"].iloc[0]) >= FULL_S


def steady(r: Results) -> tuple[float, float]:
    """W: from SETTLE after the late flow's join to the end (as ``bbq.steady_shares``)."""
    join, settle = (JOIN_FULL, SETTLE_FULL) if _full(r) else (JOIN_QUICK, SETTLE_QUICK)
    return join + settle, math.inf


def solo(r: Results) -> tuple[float, float]:
    """The 10 ms flow alone: after its first second (start-up), until the other joins."""
    return 1.0, JOIN_FULL if _full(r) else JOIN_QUICK


#: fig13: the 10 ms flow leaves at 110 s (15 s in the quick form), as bbq.build_fig13 sets its stop.
FIG13_STOP_FULL, FIG13_STOP_QUICK = FULL_S - 10.0, QUICK_S - 5.0
#: fig13's steady window opens after the paper's ProbeRTT alignment at 31 s.
FIG13_FROM_FULL = 35.0


def fig13_departure(r: Results) -> float:
    """When the 10 ms flow (flow 0) left: its last delivery (``flows.end_s``).
    Its stop ends the application's writes; what it had written is still
    sent, for a second or two more. NaN if it ran to the end."""
    end = r.flows.loc[r.flows["flow"] == 0, "end_s"]
    duration = float(r.summary["duration_s"].iloc[0])
    return float(end.iloc[0]) if len(end) and float(end.iloc[0]) < duration - 1e-6 else math.nan


def fig13_window(r: Results) -> tuple[float, float]:
    """Wb: both flows in steady state, before the 10 ms flow leaves."""
    if _full(r):
        return FIG13_FROM_FULL, FIG13_STOP_FULL
    return JOIN_QUICK + SETTLE_QUICK, FIG13_STOP_QUICK


def _probe_rtt(r: Results) -> tuple[float, float]:
    """The 50 ms flow's (flow 1) first PROBE_RTT: when it entered, and its next transition (out)."""
    t = r.transitions
    t1 = t[t["flow"] == 1].sort_values("time_s")
    enter = t1[t1["to"] == "PROBE_RTT"]
    if enter.empty:
        return math.nan, math.nan
    t_in = float(enter["time_s"].iloc[0])
    later = t1[t1["time_s"] > t_in]
    return t_in, float(later["time_s"].iloc[0]) if len(later) else math.nan


def during_probe_rtt(r: Results) -> tuple[float, float]:
    """The 50 ms flow's first PROBE_RTT, and 0.1 s after it."""
    t_in, t_out = _probe_rtt(r)
    return t_in, t_out + 0.1


def after_probe_rtt(r: Results) -> tuple[float, float]:
    """'After': 1 s to 7 s after the 50 ms flow left its first PROBE_RTT."""
    _, t_out = _probe_rtt(r)
    return t_out + 1.0, t_out + 7.0


def _phase(k: int) -> Window:
    """fig7's phase k (1..5) of five equal phases, its first 40% left out (the
    cheater's 10 s min_rtt filter expiring: 20 s of the full form's 50 s)."""

    def window(r: Results) -> tuple[float, float]:
        length = float(r.summary["duration_s"].iloc[0]) / 5.0
        return (k - 1 + 0.4) * length, k * length

    return window


def _fig7_before_cheating(r: Results) -> tuple[float, float]:
    """fig7's first phase (both at 5 ms), its first fifth left out (start-up)."""
    length = float(r.summary["duration_s"].iloc[0]) / 5.0
    return 0.2 * length, length


def _in(frame: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    a, b = window
    if math.isnan(a) or math.isnan(b):
        return frame.iloc[0:0]
    return frame[(frame["time_s"] > a) & (frame["time_s"] <= b)]


# ---------------------------------------------------------------------------------- quantities


def _goodputs(r: Results, window: Window) -> pd.Series:
    """Each flow's mean sample goodput over the window (0 for a flow without samples in it)."""
    s = _in(r.samples, window(r))
    means = s.groupby("flow")["goodput_mbps"].mean()
    flows = r.flows["flow"].astype(int).tolist()
    return means.reindex(flows, fill_value=0.0).astype(float)


def _selected(r: Results, flow: int | None, group: int | None) -> list[int]:
    f = r.flows
    if flow is not None:
        f = f[f["flow"] == flow]
    elif group is not None:
        f = f[f["group"] == group]
    return f["flow"].astype(int).tolist()


def _who(flow: int | None, group: int | None) -> str:
    if flow is not None:
        return f"flow {flow}"
    return f"group {group}" if group is not None else "all flows"


def _share_of(r: Results, window: Window, flow: int | None, group: int | None, per_flow: bool) -> float:
    g = _goodputs(r, window)
    total = float(g.sum())
    sel = _selected(r, flow, group)
    if not total > 0 or not sel:
        return math.nan
    v = float(g.loc[sel].sum()) / total
    return v / len(sel) if per_flow else v


def share(
    window: Window = steady,
    *,
    flow: int | None = None,
    group: int | None = None,
    per_flow: bool = False,
    where: str = "W",
) -> Quantity:
    """A flow's (or a group's summed) share of every flow's mean goodput over
    the window; ``per_flow``: a group's share over its number of flows."""
    text = f"{'per-flow ' if per_flow else ''}{_who(flow, group)}'s share over {where}"
    return Quantity(text, per_run=lambda r: _share_of(r, window, flow, group, per_flow), domain=FRACTION)


def goodput(
    window: Window = steady, *, flow: int | None = None, group: int | None = None, where: str = "W"
) -> Quantity:
    """Mean sample goodput over the window, summed over the selected flows."""

    def value(r: Results) -> float:
        g = _goodputs(r, window)
        if g.empty:
            return math.nan
        return float(g.loc[_selected(r, flow, group)].sum())

    return Quantity(
        f"{_who(flow, group)}'s mean goodput over {where}", per_run=value, domain=NONNEG, unit="Mbit/s"
    )


def sample_mean_in(column: str, flow: int, window: Window, where: str, unit: str = "") -> Quantity:
    """The mean of a ``samples`` column of one flow over the window."""

    def value(r: Results) -> float:
        s = _in(r.samples, window(r))
        s = s[s["flow"] == flow]
        return float(s[column].mean()) if len(s) else math.nan

    return Quantity(f"flow {flow}'s mean {column} over {where}", per_run=value, domain=NONNEG, unit=unit)


def peak_goodput(flow: int, window: Window, where: str, samples: int = 5) -> Quantity:
    """The largest rolling mean (over ``samples`` consecutive samples) of a
    flow's goodput within the window."""

    def value(r: Results) -> float:
        s = _in(r.samples, window(r))
        s = s[s["flow"] == flow].sort_values("time_s")
        if len(s) < samples:
            return math.nan
        return float(s["goodput_mbps"].rolling(samples).mean().max())

    return Quantity(
        f"flow {flow}'s peak {samples}-sample mean goodput over {where}",
        per_run=value,
        domain=NONNEG,
        unit="Mbit/s",
    )


def queue_quantile(q: float, window: Window, where: str, column: str = "sojourn_mean_ms") -> Quantity:
    """A quantile of the bottleneck's per-interval ``queue`` column over the window."""

    def value(r: Results) -> float:
        qu = r.queue
        if "link" in qu.columns:
            qu = qu[qu["link"] == "bottleneck"]
        v = _in(qu, window(r))[column].dropna()
        return float(np.quantile(v.to_numpy(dtype=float), q)) if len(v) else math.nan

    return Quantity(
        f"p{q * 100:g} of the queue's {column} over {where}", per_run=value, domain=NONNEG, unit="ms"
    )


def cwnd_bound_fraction(flow: int, window: Window, where: str, factor: float = 0.95) -> Quantity:
    """The fraction of a flow's samples in the window with inflight at least
    ``factor`` x cwnd (window-limited)."""

    def value(r: Results) -> float:
        s = _in(r.samples, window(r))
        s = s[(s["flow"] == flow) & s["cwnd_pkts"].notna() & s["inflight_pkts"].notna()]
        if s.empty:
            return math.nan
        return float((s["inflight_pkts"] >= factor * s["cwnd_pkts"]).mean())

    return Quantity(
        f"fraction of flow {flow}'s samples over {where} with inflight >= {factor:g} cwnd",
        per_run=value,
        domain=FRACTION,
    )


def pacing_gain_fraction(flow: int, gain: float, window: Window, where: str) -> Quantity:
    """The fraction of a flow's samples in the window at pacing gain ``gain``."""

    def value(r: Results) -> float:
        s = _in(r.samples, window(r))
        if "bbr_pacing_gain" not in s.columns:
            return math.nan
        g = s.loc[s["flow"] == flow, "bbr_pacing_gain"].dropna().to_numpy(dtype=float)
        return float(np.mean(np.abs(g - gain) < 0.01)) if len(g) else math.nan

    return Quantity(
        f"fraction of flow {flow}'s samples over {where} at pacing gain {gain:g}",
        per_run=value,
        domain=FRACTION,
    )


def ramp_time(flow: int, level: float, start: Callable[[Results], float], where: str) -> Quantity:
    """Seconds from ``start`` until the flow's sample goodput first reaches
    ``level`` (the rest of the run if it never does)."""

    def value(r: Results) -> float:
        t0 = start(r)
        if math.isnan(t0):
            return math.nan
        s = r.samples
        s = s[(s["flow"] == flow) & (s["time_s"] > t0)].sort_values("time_s")
        hit = s[s["goodput_mbps"] >= level]
        if len(hit):
            return float(hit["time_s"].iloc[0]) - t0
        return float(r.summary["duration_s"].iloc[0]) - t0

    return Quantity(
        f"time after {where} until flow {flow}'s goodput first reaches {level:g} Mbit/s",
        per_run=value,
        domain=NONNEG,
        unit="s",
    )


def cheater_share_min(phases: Sequence[tuple[int, int]]) -> Quantity:
    """fig7: the smallest, over the phases (k, cheater), of the cheater's share of
    both flows' mean goodput in phase k (its first 40% left out)."""

    def value(r: Results) -> float:
        v = [_share_of(r, _phase(k), flow, None, False) for k, flow in phases]
        return min(v) if v and not any(math.isnan(x) for x in v) else math.nan

    ks = ", ".join(str(k) for k, _ in phases)
    return Quantity(f"the cheater's smallest share over phases {ks}", per_run=value, domain=FRACTION)


def _mean_over(runs: Runs, q: Quantity) -> float:
    v = [x for x in q.values(runs) if math.isfinite(x)]
    return float(np.mean(v)) if v else math.nan


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def _at_also(runs: Runs, **more: object) -> Runs:
    """The runs at this point narrowed further (another swept key's value)."""
    return Runs(runs.exp, {**runs.at, **more})


def long_to_short_per_flow() -> Quantity:
    """fig6: the 50 ms flow's share over one 10 ms flow's (group 0's share / N),
    each share the mean over the point's repetitions."""

    def of(runs: Runs) -> float:
        long = _mean_over(runs, share(group=1))
        short = _mean_over(runs, share(group=0, per_flow=True))
        return _ratio(long, short)

    return Quantity("group 1's share / (group 0's share / N) over W", pooled=of, domain=NONNEG)


def kept_share(far: str, near: str) -> Quantity:
    """fig15: flow 0's share against B = ``far`` over its share against B =
    ``near`` (each the mean over repetitions), at this point's algorithm."""

    def of(runs: Runs) -> float:
        hi = _mean_over(_at_also(runs, **{"flows.1.rtt": far}), share(flow=0))
        lo = _mean_over(_at_also(runs, **{"flows.1.rtt": near}), share(flow=0))
        return _ratio(hi, lo)

    return Quantity(f"flow 0's share over W at B={far} / at B={near}", pooled=of, domain=NONNEG)


def bbq_gain_per_flow() -> Quantity:
    """fig16: each 10 ms flow's share under BBQ over its share under BBR at this
    point's N (each the mean over repetitions)."""

    def of(runs: Runs) -> float:
        q = share(group=0, per_flow=True)
        return _ratio(
            _mean_over(_at_also(runs, **{"flows.0.cc": "bbq"}), q),
            _mean_over(_at_also(runs, **{"flows.0.cc": "bbr1"}), q),
        )

    return Quantity("per-flow share of group 0 over W, BBQ / BBR", pooled=of, domain=NONNEG)


# ------------------------------------------------------------------------------------ points

BBR: Point = {"flows.0.cc": "bbr1"}
BBQ: Point = {"flows.0.cc": "bbq"}


def _rate(v: float) -> Point:
    return {"bottleneck.rate": f"{v:g}Mbps"}


def _b(v: float) -> Point:
    return {"flows.1.rtt": f"{v:g}ms"}


def _n(v: int) -> Point:
    return {"flows.0.count": v}


def _red(i: int) -> Point:
    return {"bottleneck.red": when_json(RED[i])}


def _pair(a: float, b: float) -> Point:
    return {"flows.0.rtt": f"{a:g}ms", "flows.1.rtt": f"{b:g}ms"}


PAIRS = [(a, b) for i, a in enumerate(PAIR_RTTS_FULL) for b in PAIR_RTTS_FULL[i + 1 :]]
DRAIN: Point = dict.fromkeys(DRAIN_KEYS, True)
PLAIN: Point = dict.fromkeys(DRAIN_KEYS, False)

FIG1_SHARE = "6.3 of 93.6 Mbit/s (87.3 + 6.3) in steady state: a share of 0.067, one run"
S0 = share(flow=0)

# ---------------------------------------------------------------------------------------- fig1

add(
    Finding(
        "bbq/fig1",
        "bbq, Sec. I, Fig. 1 (analysed in Sec. IV-A)",
        "once the 50 ms flow has joined, the 10 ms flow is held to a small slice of the link",
        FIG1_SHARE,
        Band(S0, {}, 0.02, 0.15),
        kernel="all (both flows BBRv1)",
        why="about +-0.05 around 0.067 (one run, no spread): the top allows for the spells after "
        "each of the 50 ms flow's ProbeRTTs when the 10 ms flow takes the link back (Sec. IV-A); "
        "the bottom rejects complete starvation, which the paper does not report",
    ),
    Finding(
        "bbq/fig1",
        "bbq, Sec. I, Fig. 1",
        "in steady state the 50 ms flow carries most of the link",
        "87.3 Mbit/s averaged with start-up left out, one run",
        Band(goodput(flow=1), {}, 80.0, 95.0),
        kernel="all",
        why="+-7 Mbit/s around 87.3 for the 10 ms flow's spells after each ProbeRTT; 95 Mbit/s is "
        "about the payload ceiling of a 100 Mbit/s link (1448 of 1514 bytes a frame)",
    ),
    Finding(
        "bbq/fig1",
        "bbq, Sec. I, Fig. 1",
        "alone, before the 50 ms flow joins, the 10 ms flow fills the link",
        "delivers at full bandwidth while alone",
        Threshold(goodput(solo, flow=0, where="1 s to the join"), {}, ">=", 90.0),
        kernel="all",
        why="the natural limit, the link's 100 Mbit/s (about 95.6 of payload); its first second "
        "(start-up) is left out",
    ),
)

# -------------------------------------------------------------------------------- fig3 / fig14

add(
    Finding(
        "bbq/fig3",
        "bbq, Sec. III-B ('Bottleneck bandwidth'), Fig. 3; Sec. I",
        "at every bottleneck rate from 10 Mbit/s to 1 Gbit/s the 10 ms flow stays well under half",
        "far below its fair share at every rate (no number; Fig. 14's ratios put it at about "
        "0.35 or less at 10 Mbit/s and near 0.08 at 400 Mbit/s)",
        Each(lambda p: Threshold(S0, p, "<", 0.4), tuple(_rate(v) for v in RATES_FULL)),
        kernel="all",
        why="0.4 from Fig. 14: at 10 Mbit/s BBQ gives 1.552x BBR's share, so BBR's is at most "
        "about 0.35 even if BBQ's reached 0.55 there; 0.4 leaves room above that bound",
    ),
    Finding(
        "bbq/fig3",
        "bbq, Sec. III-B ('Bottleneck bandwidth'), Fig. 3; footnote 1",
        "the bias is milder on a slow bottleneck: the 10 ms flow gets more at 10 Mbit/s than at 400",
        "alleviated on low-bandwidth bottlenecks; footnote 1 names 10 Mbit/s as the mild case "
        "(a direction; Fig. 14 puts BBR near 0.08 at 400 Mbit/s)",
        Compare(S0, _rate(10), ">", S0, _rate(400), margin=0.05),
        kernel="all",
        why="the paper gives the direction only; the size of the gap depends on BBQ's share at "
        "10 Mbit/s, which it does not state (Fig. 14: BBR = BBQ / 1.552 there), so the margin "
        "0.05 only keeps a tie from counting",
    ),
    Finding(
        "bbq/fig3",
        "bbq, Sec. III-B, Fig. 3 (the 100 Mbit/s point is Fig. 1's setting)",
        "at 100 Mbit/s the 10 ms flow's share is as small as in Fig. 1",
        FIG1_SHARE,
        Band(S0, _rate(100), 0.02, 0.15),
        kernel="all",
        why="the same experiment as Fig. 1 (0.067, one run, no spread); the same width as there",
    ),
)

add(
    Finding(
        "bbq/fig14",
        "bbq, Sec. VI-B ('Bottleneck bandwidth'), Fig. 14",
        "at every rate BBQ gives the 10 ms flow clearly more than BBR, at least about 1.5 times",
        "BBQ/BBR share of the 10 ms flow from 1.552 (10 Mbit/s, the smallest gain) to 6.14 (400 Mbit/s)",
        Each(
            lambda p: Compare(S0, {**p, **BBQ}, ">=", S0, {**p, **BBR}, margin=1.4, ratio=True),
            tuple(_rate(v) for v in RATES_FULL),
        ),
        kernel="BBR side only: BBQ is not in the kernel",
        why="1.4 leaves a little room under the paper's smallest gain, 1.552, for 5-repeat means",
    ),
    Finding(
        "bbq/fig14",
        "bbq, Sec. VI-B ('Bottleneck bandwidth'), Fig. 14; Sec. I",
        "the largest gain, several-fold, is at 400 Mbit/s",
        "6.14x at 400 Mbit/s (6.1x in the abstract)",
        Compare(S0, {**_rate(400), **BBQ}, ">=", S0, {**_rate(400), **BBR}, margin=3.0, ratio=True),
        kernel="BBR side only",
        why="half the paper's 6.14: BBR's share there is near 0.08, so 0.03 more or less "
        "moves the ratio by 2",
    ),
    Finding(
        "bbq/fig14",
        "bbq, Sec. VI-B ('Bottleneck bandwidth'), Fig. 14",
        "at 100 Mbit/s and above the two BBQ flows share the link about equally",
        "near-optimal fairness at >= 100 Mbit/s, the two flows sharing equally (0.547 in Fig. 13 at 100)",
        Each(lambda p: Band(S0, {**p, **BBQ}, 0.4, 0.6), tuple(_rate(v) for v in RATES_FULL if v >= 100)),
        kernel="none: BBQ only",
        why="+-0.1 around an equal share (no number to read, no spread); nothing is claimed for BBQ "
        "below 100 Mbit/s except the comparison with BBR",
    ),
)

# ---------------------------------------------------------------------------------------- fig4

_RETRANS = (
    "Table I: retransmitted packets of the 50 / 10 ms flow: "
    "RED1 10178 / 2871, RED2 20583 / 6014, RED3 17193 / 5301"
)

add(
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B ('Deployment of AQM'), Fig. 4; Sec. I",
        "with each of the three RED settings the 10 ms flow still gets less than half",
        "the short-RTT flow stays unfavoured whatever the AQM (a direction; bars not readable)",
        Each(lambda p: Threshold(S0, p, "<", 0.5), tuple(_red(i) for i in range(3))),
        kernel="all (RED is the emulated bottleneck's)",
        why="the fair share, the natural limit: the paper gives no number",
    ),
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B ('Deployment of AQM'), Fig. 4, Table I",
        "a higher drop probability (RED2) or a lower max threshold (RED3) gives the 10 ms flow "
        "somewhat more than RED1",
        "helps the short flow regain slightly more share (a direction)",
        Each(lambda p: Compare(S0, p, ">", S0, _red(0)), (_red(1), _red(2))),
        kernel="all",
        why="'slightly': no size given, so the margin is 0",
    ),
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B, Table I",
        "RED2 and RED3 roughly double the 50 ms flow's retransmissions against RED1",
        _RETRANS + " (ratios 2.02 and 1.69)",
        Each(
            lambda p: Compare(
                flow_metric("segs_retrans", 1), p, ">=", flow_metric("segs_retrans", 1), _red(0), 1.3, True
            ),
            (_red(1), _red(2)),
        ),
        kernel="all",
        why="1.3 stays clear of 1 and allows the smallest ratio, 1.69, to fall by about a quarter elsewhere",
    ),
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B, Table I",
        "RED2 and RED3 roughly double the 10 ms flow's retransmissions against RED1",
        _RETRANS + " (ratios 2.09 and 1.85)",
        Each(
            lambda p: Compare(
                flow_metric("segs_retrans", 0), p, ">=", flow_metric("segs_retrans", 0), _red(0), 1.3, True
            ),
            (_red(1), _red(2)),
        ),
        kernel="all",
        why="as for the 50 ms flow: 1.3 against the paper's 1.85-2.09",
    ),
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B, Table I",
        "in every RED setting the 50 ms flow retransmits several times as much as the 10 ms flow",
        _RETRANS + " (ratios 3.5, 3.4, 3.2)",
        Each(
            lambda p: Compare(
                flow_metric("segs_retrans", 1), p, ">=", flow_metric("segs_retrans", 0), p, 2.0, True
            ),
            tuple(_red(i) for i in range(3)),
        ),
        kernel="all",
        why="2 against the paper's 3.2-3.5; part of the gap is that the 50 ms flow sends 5-10x the bytes",
    ),
    Finding(
        "bbq/fig4",
        "bbq, Sec. III-B, Table I",
        "with RED1 the 50 ms flow retransmits on the order of ten thousand packets in a run",
        "10178 packets (RED1, one 120 s run)",
        Band(flow_metric("segs_retrans", 1), _red(0), 5000.0, 20000.0),
        kernel="all",
        why="a factor of 2 either way: the paper gives one value, and not the packet size nor RED's "
        "burst, avpkt or limit (tc defaults here), which move the drop count; full form only "
        "(the quick form's 20 s run retransmits proportionally less)",
    ),
)

# -------------------------------------------------------------------------------- fig5 / fig15

add(
    Finding(
        "bbq/fig5",
        "bbq, Sec. III-B ('Disparity of RTT'), Fig. 5",
        "with equal RTTs (10 and 10 ms) the two flows share fairly",
        "fairness is not a concern at equal RTTs (citing Cardwell et al.)",
        Band(S0, _b(10), 0.4, 0.6),
        kernel="all",
        why="+-0.1 around an equal share: no number to read, no spread",
    ),
    Finding(
        "bbq/fig5",
        "bbq, Sec. III-B ('Disparity of RTT'), Fig. 5; Sec. I",
        "against a 15 ms flow the 10 ms flow is already held to about a quarter",
        "the 15 ms flow gets 3x the 10 ms flow's throughput; the 10 ms flow < 25% of the link",
        Threshold(S0, _b(15), "<", 0.3),
        kernel="all",
        why="the paper's < 25% (3x gives 0.25) with 0.05 of slack for the mean over repeats and "
        "the choice of window: a stated bound, not a measured spread",
    ),
    Finding(
        "bbq/fig5",
        "bbq, Sec. I, Sec. III-B, Fig. 5",
        "against any flow of 30 ms or more the 10 ms flow falls below about a tenth of the link",
        "squeezed to < 10% of the bandwidth when the other RTT is >= 30 ms",
        Each(lambda p: Threshold(S0, p, "<", 0.12), tuple(_b(v) for v in B_FULL if v >= 30)),
        kernel="all",
        why="the paper's < 10% with 0.02 of slack, as at 15 ms",
    ),
    Finding(
        "bbq/fig5",
        "bbq, Sec. III-B ('Disparity of RTT'; 'Summary of findings'), Fig. 5",
        "the longer B's RTT, the less the 10 ms flow gets: less against 100 ms than against 15 ms",
        "the disparity grows with the RTT difference: about 0.25 at 15 ms, under 0.10 at >= 30 ms",
        Compare(S0, _b(15), ">", S0, _b(100), margin=0.1),
        kernel="all",
        why="the margin is the gap between the two bounds the paper states (0.25 and 0.10, rounded down)",
    ),
)

add(
    Finding(
        "bbq/fig15",
        "bbq, Sec. VI-B ('Disparity of RTT'), Fig. 15",
        "against a 100 ms flow, BBQ's 10 ms flow keeps a bit over a third of the link",
        "37.1% of the bottleneck against a 100 ms flow",
        Band(S0, {**_b(100), **BBQ}, 0.3, 0.45),
        kernel="none: BBQ only",
        why="about +-0.07 around 0.371 (no spread given); below 0.5, as the paper describes a "
        "partial recovery",
    ),
    Finding(
        "bbq/fig15",
        "bbq, Sec. VI-B ('Disparity of RTT'), Fig. 15",
        "against a 100 ms flow, BBQ gives the 10 ms flow several times BBR's share",
        "4.62x BBR's share (so BBR near 0.08); the largest gain over the range (4.6x)",
        Compare(S0, {**_b(100), **BBQ}, ">=", S0, {**_b(100), **BBR}, margin=3.0, ratio=True),
        kernel="BBR side only",
        why="the denominator is small (about 0.08), so the tolerance under 4.62 is wide",
    ),
    Finding(
        "bbq/fig15",
        "bbq, Sec. VI-B, Fig. 15; Sec. VI ('consistently outperforms')",
        "BBQ gives the 10 ms flow more than BBR at every unequal RTT",
        "BBQ better in every case, up to 4.6x",
        Each(
            lambda p: Compare(S0, {**p, **BBQ}, ">", S0, {**p, **BBR}, margin=0.05),
            tuple(_b(v) for v in B_FULL if v > 10),
        ),
        kernel="BBR side only",
        why="0.05 keeps ties from counting; B = 10 ms is left out, both near 0.5 there",
    ),
    Finding(
        "bbq/fig15",
        "bbq, Sec. VI-B ('Disparity of RTT'), Fig. 15",
        "as B's RTT grows BBQ keeps most of the 10 ms flow's share, BBR does not",
        "BBQ 'constrains the trend': 0.371 at 100 ms (about 0.74 of an equal 0.5); "
        "BBR about 0.08 (0.16 of it)",
        Compare(kept_share("100ms", "10ms"), BBQ, ">", kept_share("100ms", "10ms"), BBR, margin=0.3),
        kernel="BBR side only",
        why="the ratios are derived from the paper's 0.371 and 4.62x with the equal-RTT share taken "
        "as 0.5 (0.74 vs 0.16); 0.3 is about half their gap",
    ),
)

# -------------------------------------------------------------------------------- fig6 / fig16

G1 = share(group=1)
G0_EACH = share(group=0, per_flow=True)


def _g1_falls(p: Point) -> Compare:
    return Compare(G1, _n(p["from"]), ">", G1, _n(p["to"]), margin=p["margin"])


add(
    Finding(
        "bbq/fig6",
        "bbq, Sec. III-B ('Number of competing flows'), Fig. 6 (N = 1 is Fig. 1's setting)",
        "against one 10 ms flow the 50 ms flow takes nearly the whole link",
        "87.3 / 93.6 = 0.93 in Fig. 1",
        Band(G1, _n(1), 0.85, 0.98),
        kernel="all",
        why="Fig. 1's 0.93 with the same width as there (one run, no spread)",
    ),
    Finding(
        "bbq/fig6",
        "bbq, Sec. I (third observation), Sec. III-B, Fig. 6",
        "against twenty 10 ms flows the single 50 ms flow still holds about half the link",
        "50% of the bandwidth against twenty 10 ms flows (its fair share would be 1/21)",
        Band(G1, _n(20), 0.4, 0.6),
        kernel="all",
        why="+-0.1 around the stated 50%: no spread, the figure cannot be read",
    ),
    Finding(
        "bbq/fig6",
        "bbq, Sec. III-B ('Number of competing flows'), Fig. 6",
        "the 50 ms flow's advantage shrinks quickly as 10 ms flows are added",
        "diminishes quickly with N: about 0.93 at N = 1 (Fig. 1), 0.5 at N = 20",
        Each(
            _g1_falls,
            (
                {"from": 1, "to": 20, "margin": 0.3},
                {"from": 1, "to": 5, "margin": 0.0},
                {"from": 5, "to": 20, "margin": 0.0},
            ),
        ),
        kernel="all",
        why="0.3 from the two values the paper states (0.93 and 0.5); N = 5 lies between them, no margin",
    ),
    Finding(
        "bbq/fig6",
        "bbq, Sec. III-B ('Number of competing flows'), Fig. 6",
        "at every N the 50 ms flow gets many times what each 10 ms flow gets",
        "much more than it deserves even when outnumbered: about 14x one 10 ms flow at N = 1 "
        "(0.93 / 0.067), about 20x at N = 20 (0.5 / 0.025)",
        Each(lambda p: Threshold(long_to_short_per_flow(), p, ">=", 5.0), tuple(_n(v) for v in N_FULL)),
        kernel="all",
        why="5: a conservative floor under the ratios at the two ends the paper states (14 and 20)",
    ),
)

add(
    Finding(
        "bbq/fig16",
        "bbq, Sec. VI-B ('Number of competing flows'), Fig. 16",
        "for every N each 10 ms flow gets more under BBQ than under BBR",
        "each 10 ms flow improves its share with BBQ in all cases (no size given)",
        Each(
            lambda p: Compare(G0_EACH, {**p, **BBQ}, ">", G0_EACH, {**p, **BBR}), tuple(_n(v) for v in N_FULL)
        ),
        kernel="BBR side only",
        why="a direction 'in all cases': margin 0",
    ),
    Finding(
        "bbq/fig16",
        "bbq, Sec. VI-B ('Number of competing flows'), Fig. 16",
        "BBQ's gain for the 10 ms flows is smaller with twenty of them than with one",
        "the benefit becomes less salient as N grows (the long flow's edge erodes, the queue grows)",
        Compare(bbq_gain_per_flow(), _n(1), ">", bbq_gain_per_flow(), _n(20)),
        kernel="BBR side only",
        why="a direction only: margin 0 on the ratio BBQ / BBR of the per-flow shares",
    ),
    Finding(
        "bbq/fig16",
        "bbq, Sec. VI-A, Fig. 13; Sec. VI-B, Figs. 14 and 16 (N = 1 is their 100 Mbit/s setting)",
        "with one 10 ms flow BBQ lets the two flows share about evenly",
        "0.547 for the 10 ms flow in Fig. 13 (51.4 / 93.9); equal sharing at 100 Mbit/s in Fig. 14",
        Band(share(group=0), {**_n(1), **BBQ}, 0.4, 0.65),
        kernel="none: BBQ only",
        why="+-0.1 around an equal share, the top raised to 0.65 for Fig. 13's short flow being ahead",
    ),
)

# ---------------------------------------------------------------------------------------- fig7

add(
    Finding(
        "bbq/fig7",
        "bbq, Sec. III-C ('Latency-cheating'), Fig. 7",
        "after each cheat the flow with the inflated RTT (twice the other's) takes most of the bandwidth",
        "each cheater steals bandwidth from the other, so the two keep inflating: a race to the "
        "bottom (no number in the text)",
        Threshold(cheater_share_min([(2, 0), (3, 1), (4, 0), (5, 1)]), {}, ">=", 0.65),
        kernel="all, where the Linux backend emulates rtt_schedule",
        why="each phase has an RTT ratio of 2; Fig. 5 gives the longer flow about 0.75 at a ratio of "
        "1.5 and over 0.9 at 3 or more; 0.65 leaves room for a window that may still hold part of "
        "the change. A phase is its fifth of the run (the paper's axis suggests 100 s phases, the "
        "catalog runs 50 s), its first 40% (20 s: the cheater's 10 s min_rtt filter expiring) left out",
    ),
    Finding(
        "bbq/fig7",
        "bbq, Sec. III-C, Fig. 7; Sec. III-B (equal RTTs)",
        "before anyone cheats (both at 5 ms) the two flows share about evenly",
        "equal RTTs share fairly (Sec. III-B, Fig. 5 at 10 / 10 ms)",
        Band(share(_fig7_before_cheating, flow=0, where="phase 1 (after its first fifth)"), {}, 0.35, 0.65),
        kernel="all",
        why="+-0.15: one run over one phase (40 s of the full form), wider than the +-0.1 of a 5-repeat mean",
    ),
)

# ------------------------------------------------------------------------------------- fig8-11

AFTER = "1-7 s after the 50 ms flow's first ProbeRTT"

add(
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 8 (the Fig. 1 run, 12-22 s)",
        "while the 50 ms flow is in ProbeRTT the 10 ms flow takes nearly the whole link",
        "the 10 ms flow finds a higher MaxBw and reclaims all the available bandwidth",
        Threshold(
            peak_goodput(0, during_probe_rtt, "the 50 ms flow's first ProbeRTT (+0.1 s)"), {}, ">=", 80.0
        ),
        kernel="all (the Linux backend infers PROBE_RTT from tcp_info's gains, at its sampling resolution)",
        why="the link's payload rate is about 95 Mbit/s; 80 allows for the episode's 200 ms and a "
        "50 ms (5-sample) mean",
    ),
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 8; Fig. 1",
        "once the 50 ms flow is back in ProbeBW it takes the link back and the 10 ms flow is left far behind",
        "the 10 ms flow's goodput falls off a cliff, the 50 ms flow's drops only a little; "
        "87.3 / 6.3 = 14 in Fig. 1's steady state",
        Compare(
            sample_mean_in("goodput_mbps", 1, after_probe_rtt, AFTER, "Mbit/s"),
            {},
            ">=",
            sample_mean_in("goodput_mbps", 0, after_probe_rtt, AFTER, "Mbit/s"),
            {},
            margin=3.0,
            ratio=True,
        ),
        kernel="all",
        why="3, well under Fig. 1's 14: the 6 s right after ProbeRTT still hold the 10 ms flow's fall",
    ),
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 9; Sec. IV-B (Phase 2, Factor 2)",
        "after ProbeRTT a standing queue forms, longer than the 10 ms flow's RTT and shorter than "
        "the 50 ms flow's",
        "RTTs climb until inflight is cwnd-bounded; the short flow is cwnd-bounded iff the queueing "
        "delay exceeds its MinRTT, the long flow never is; Fig. 13 measures 23.4 ms on average with BBR",
        Band(queue_quantile(0.5, after_probe_rtt, AFTER), {}, 10.0, 50.0),
        kernel="all",
        why="the bounds are Sec. IV-B's conditions: above 10 ms for the 10 ms flow to be cwnd-bounded, "
        "below 50 ms for the 50 ms flow never to be",
    ),
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 10",
        "under the standing queue most of the backlog belongs to the 50 ms flow",
        "the 10 ms flow fills the queue during the rival's ProbeRTT, then recedes and never comes "
        "back; with a persistent queue throughput follows backlog (no number)",
        Compare(
            sample_mean_in("queue_backlog_bytes", 1, after_probe_rtt, AFTER, "bytes"),
            {},
            ">=",
            sample_mean_in("queue_backlog_bytes", 0, after_probe_rtt, AFTER, "bytes"),
            {},
            margin=3.0,
            ratio=True,
        ),
        kernel="all",
        why="the same 3 as for goodput, since the paper ties the two (throughput follows backlog)",
    ),
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 11; Sec. IV-B (Factor 2)",
        "the 10 ms flow is window-limited most of the time",
        "the 10 ms flow's inflight is cwnd-bounded (inflight = cwnd)",
        Threshold(cwnd_bound_fraction(0, after_probe_rtt, AFTER), {}, ">=", 0.5),
        kernel="all",
        why="'most of the time': over half its samples; 0.95 cwnd allows for a sample taken between an "
        "ACK and the next send",
    ),
    Finding(
        "bbq/fig8-11",
        "bbq, Sec. IV-A, Fig. 11; Sec. IV-B (Factor 2)",
        "the 50 ms flow is window-limited far less often than the 10 ms flow",
        "the 50 ms flow reaches its cwnd only in small spikes, when it probes",
        Compare(
            cwnd_bound_fraction(0, after_probe_rtt, AFTER),
            {},
            ">=",
            cwnd_bound_fraction(1, after_probe_rtt, AFTER),
            {},
            0.3,
        ),
        kernel="all",
        why="the paper gives no fraction; 0.3 separates 'bounded' from 'in spikes'",
    ),
)

# ---------------------------------------------------------------------------------------- fig12

add(
    Finding(
        "bbq/fig12",
        "bbq, Sec. V-A ('Too Late to Drain after Probing'), Fig. 12",
        "draining to exactly one BDP after probing leaves the 10 ms flow an even smaller share "
        "than plain BBRv1",
        "applied to Fig. 1's experiment, the short flow ends up with an even lower share than with "
        "BBR (a direction; BBR's was 0.067)",
        Compare(S0, DRAIN, "<", S0, PLAIN),
        kernel="the plain-BBRv1 side only: the kernel has no drain-to-target variant "
        "(and the Linux backend refuses cc_params)",
        why="'even lower': no size given, margin 0; 5-repeat means of the full form (120 s, the Fig. 1 run)",
    ),
    Finding(
        "bbq/fig12",
        "bbq, Sec. V-A, Fig. 12",
        "with the variant the 10 ms flow spends most of its time in the 0.75 drain phase",
        "it spends the majority of its time in the drain periods (Fig. 12: 12-13 s)",
        Threshold(pacing_gain_fraction(0, 0.75, steady, "W"), DRAIN, ">", 0.5),
        kernel="none: the variant only",
        why="'majority': 0.5 is its natural limit; plain BBRv1 spends at most 1/8 of a gain cycle at "
        "0.75. Over the steady window W, not only the 1 s Fig. 12 shows",
    ),
    Finding(
        "bbq/fig12",
        "bbq, Sec. V-A, Fig. 12",
        "with the variant the queueing delay stays above a third of the 10 ms flow's MinRTT, so it "
        "cannot drain to one BDP",
        "at gain 0.75 a flow reaches one BDP only if the queueing delay is below MinRTT / 3; the "
        "queue keeps growing while the long flow probes",
        Threshold(queue_quantile(0.1, steady, "W"), DRAIN, ">", 10.0 / 3.0),
        kernel="none: the variant only",
        why="the limit is the paper's own condition, 3.33 ms for the 10 ms flow; 'persistently' as "
        "the 10th percentile over W (the 50 ms flow's ProbeRTTs are about 2% of it)",
    ),
)

# ---------------------------------------------------------------------------------------- fig13

WB = "35-110 s (after the ProbeRTTs align, before the 10 ms flow leaves)"
S0_WB = share(fig13_window, flow=0, where=WB)
BOTH_WB = goodput(fig13_window, where=WB)

add(
    Finding(
        "bbq/fig13",
        "bbq, Sec. VI-A, Fig. 13",
        "in steady state BBQ splits the link about evenly, the 10 ms flow a little ahead",
        "51.4 Mbit/s for the 10 ms flow, 42.5 for the 50 ms flow (0.547), one run",
        Band(S0_WB, BBQ, 0.45, 0.65),
        kernel="none: BBQ only",
        why="+-0.1 around 0.547: one run, no spread",
    ),
    Finding(
        "bbq/fig13",
        "bbq, Sec. VI-A, Fig. 13; Sec. I, Fig. 1",
        "BBQ gives the 10 ms flow far more than BBR in the same setting",
        "0.547 with BBQ (Fig. 13) against 0.067 with BBR (Fig. 1)",
        Compare(S0_WB, BBQ, ">", S0_WB, BBR, margin=0.3),
        kernel="BBR side only",
        why="0.3 under the paper's gap of 0.48 (one run each)",
    ),
    Finding(
        "bbq/fig13",
        "bbq, Sec. VI-A, Fig. 13; Sec. I",
        "BBQ's fairness costs no throughput",
        "full delivery bandwidth kept: 51.4 + 42.5 = 93.9 Mbit/s against 93.6 with BBR",
        Compare(BOTH_WB, BBQ, ">=", BOTH_WB, BBR, margin=-3.0),
        kernel="BBR side only",
        why="a tolerance of 3 Mbit/s (3% of the link) for one run each",
    ),
    Finding(
        "bbq/fig13",
        "bbq, Sec. VI-A, Fig. 13; abstract, Sec. I, Sec. VI",
        "BBQ cuts the average queueing delay by about two thirds against BBR",
        "8.3 ms with BBQ against 23.4 ms with BBR over the run: a 65% cut (64.5% in Sec. I and VI)",
        Compare(summary("qdelay_mean_ms"), BBQ, "<=", summary("qdelay_mean_ms"), BBR, margin=0.5, ratio=True),
        kernel="BBR side only",
        why="the paper's ratio is 0.35; 0.5 allows for one run each",
    ),
    Finding(
        "bbq/fig13",
        "bbq, Sec. VI-A, Fig. 13",
        "when the 10 ms flow leaves, the 50 ms flow fills the link within a couple of seconds",
        "BBQ reduces to BBR and the 50 ms flow takes the freed bandwidth in 1.7 s",
        Threshold(ramp_time(1, 90.0, fig13_departure, "the 10 ms flow left"), BBQ, "<=", 2.5),
        kernel="none: BBQ only (the same measure on the BBR run is a reference, not a claim)",
        why="0.8 s over the paper's 1.7 s for the 100 ms samples and 'saturate', which it does not "
        "define; 90 Mbit/s is about 95% of the payload rate. Timed from the 10 ms flow's last "
        "delivery (flows.end_s): its stop at 110 s ends its writes, and what it had written still "
        "goes out for a second or more; the rest of the run if the 50 ms flow never gets there",
    ),
)

# ---------------------------------------------------------------------------------------- fig17

add(
    Finding(
        "bbq/fig17",
        "bbq, Sec. VI-C ('A One-Size-Fits-All Cap'), Fig. 17",
        "for every pair of RTTs BBQ (alpha = 3 ms) gives the shorter-RTT flow clearly more than BBR",
        "at least 1.8412x BBR's share (200-300 ms), up to 4.4x (20-50 ms)",
        Each(
            lambda p: Compare(S0, {**p, **BBQ}, ">=", S0, {**p, **BBR}, margin=1.5, ratio=True),
            tuple(_pair(a, b) for a, b in PAIRS),
        ),
        kernel="BBR side only",
        why="1.5 under the paper's smallest 1.84, for 5-repeat means",
    ),
    Finding(
        "bbq/fig17",
        "bbq, Sec. VI-C, Fig. 17",
        "the largest gain, several-fold, is at the 20-50 ms pair",
        "4.4x at 20-50 ms",
        Compare(S0, {**_pair(20, 50), **BBQ}, ">=", S0, {**_pair(20, 50), **BBR}, margin=3.0, ratio=True),
        kernel="BBR side only",
        why="the denominator is small, so the tolerance under 4.4 is wide",
    ),
    Finding(
        "bbq/fig17",
        "bbq, Sec. III-B ('Summary of findings'), Sec. VI-C, Fig. 17",
        "with BBR the shorter-RTT flow gets less than half for every pair",
        "the longer RTT always has the upper hand; from the 1.84x minimum BBR's share at 200-300 ms "
        "is at most about 0.3 (0.55 / 1.84)",
        Each(lambda p: Threshold(S0, {**p, **BBR}, "<", 0.5), tuple(_pair(a, b) for a, b in PAIRS)),
        kernel="all for this BBR half",
        why="the fair share, a loose ceiling against the paper's implied 0.3 or less",
    ),
)
