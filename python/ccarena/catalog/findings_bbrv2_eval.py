"""The findings of bbrv2_eval, each as the paper states it (catalog/findings.py).

Kfoury et al., "An Emulation-based Evaluation of TCP BBRv2 Alpha for Wired
Broadband". The paper plots the mean of ten runs per point (Sec. 5), so a
quantity here is one value per run, averaged over the repetitions, unless it
says it pools them (the FCT CDFs of Figs. 17-20). Jain's index is a fraction
(the paper's 89.8% is 0.898). Groups are the build()'s ``[[flows]]``
entries: fig11 and fig21 put the BBR flows first (group 0) and CUBIC second;
fig13 and fig17-20 put CUBIC first; in fig14-15 flow 0 has 10 ms and flow 1
50 ms. The kernel here runs reno, cubic and bbr (v1): where a claim needs
BBRv2, ``kernel`` says what part of it a kernel run can still show (an
``Each`` judges only the points that have runs).

Claims across two ids (fig18's BBRv1 against fig17's BBRv2; fig19 against
fig17; fig20 against fig19) cannot be checked on one id's runs: they are
checked against the number the paper gives for the other figure instead,
and say so."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from .base import bdp, mbps, ms, when_json
from .bbrv2_eval import AQMS, BUF_4, BUF_11
from .findings import Band, Compare, Each, Finding, Point, Quantity, Runs, Threshold, add
from .quantities import FRACTION, NONNEG, flow_metric, group_share, summary

if TYPE_CHECKING:
    import numpy as np

    from ..results import Results
else:
    np = lazy("numpy")

PAPER = "bbrv2-eval"

# Sweep keys, as the run labels write them.
CC, BUF, LOSS = "flows.0.cc", "bottleneck.buffer", "path.loss"
N0, N1 = "flows.0.count", "flows.1.count"
RATE, RTT_KEY, QDISC, TABLE, PACING = (
    "bottleneck.rate",
    "path.rtt",
    "bottleneck.qdisc",
    "bottleneck",
    "flows.0.pacing",
)

# The full forms' axes (bbrv2_eval.py).
BUF_9 = bdp([1, 10, 20, 50, 100])
LOSS_10 = [f"{v:g}%" for v in (0, 0.001, 0.01, 0.1, 1, 2, 5, 10)]
RATES_13 = mbps([20, 50, 100, 250, 500, 1000])
RTTS_13 = ms([10, 20, 50, 100, 200])
BUF_14 = bdp([0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 20, 50, 100])
BUF_16 = bdp([0.1, 0.2, 0.5, 1, 2, 5, 10])
BUF_17 = bdp([0.1, 0.5, 1, 10, 100])
BUF_21 = bdp([0.1, 0.5, 1, 2, 5, 10, 100])
BUF_22 = bdp([0.1, 0.5, 1, 2, 5, 10, 20])
PAIRS_21 = [(1, 1), (1, 10), (10, 10), (50, 50)]

#: fig17-20's flows send 100 MB each in the full form (20 MB in the quick
#: one): completion times are scaled to 100 MB to read against the paper's.
REF_SIZE = 100e6


def aqm(name: str) -> str:
    """fig21's swept bottleneck table ``name`` as the run labels write it."""
    return when_json({"rate": "1Gbps", "bdp_rtt": "20ms", "burst": "500KB", **AQMS[name]})


PACED = when_json({"mode": "fq", "max_rate": "8.5Mbps"})
UNPACED = when_json({"mode": "internal"})


def grid(axes: Mapping[str, Sequence[Any]], **fixed: Any) -> tuple[Point, ...]:
    """Every combination of ``axes``' values, each point with the ``fixed``
    keys too (passed as ``**{CC: "bbr1"}``: the keys have dots)."""
    keys = list(axes)
    return tuple(
        {**fixed, **dict(zip(keys, combo, strict=True))}
        for combo in itertools.product(*(axes[k] for k in keys))
    )


# --------------------------------------------------------------------------- quantities


def _with_unit(q: Quantity, unit: str, text: str | None = None) -> Quantity:
    return replace(q, unit=unit, text=text or q.text)


JAIN = summary("jain")
UTIL = summary("utilization")
RETX = summary("retrans_rate")
RTT = _with_unit(summary("mean_rtt_ms"), "ms")


def _aggregate(r: Results) -> float:
    s = r.summary
    return float(s["utilization"].iloc[0]) * float(s["rate_mbps"].iloc[0])


#: What the paper calls the aggregate throughput: every flow's payload over
#: the run, as a rate (the summary's utilization times the link's rate).
AGG = Quantity("aggregate goodput (utilization x rate)", per_run=_aggregate, domain=NONNEG, unit="Mbit/s")


def _mean_rate(r: Results) -> float:
    g = r.flows["goodput_mbps"]
    return float(g.mean()) if len(g) else math.nan


#: The mean of the per-flow throughputs whose CDF Figs. 4 and 6 draw.
MEAN_RATE = Quantity("mean per-flow goodput", per_run=_mean_rate, domain=NONNEG, unit="Mbit/s")

#: fig10's one flow.
FLOW_RATE = _with_unit(flow_metric("goodput_mbps", 0), "Mbit/s", "the flow's goodput")


def _mean_flow_retrans(r: Results) -> float:
    f = r.flows
    return float(f["retrans_rate"].mean()) if len(f) else math.nan


#: Fig. 15's quantity: the mean of the two flows' retransmission rates (not
#: the pooled summary rate, which weights the flow that sends more).
MEAN_FLOW_RETX = Quantity(
    "mean of the flows' retransmission rates", per_run=_mean_flow_retrans, domain=FRACTION
)


def _fcts(r: Results, group: int | None, scale: bool = True) -> np.ndarray:
    """Completion times of ``group``'s flows (all flows: None); a flow not
    done by the end counts the run's length, a lower bound of its FCT. With
    ``scale``, each is scaled to a 100 MB flow (the quick forms send less)."""
    f = r.flows
    if group is not None:
        f = f[f["group"] == group]
    fct = f["fct_s"].to_numpy(dtype=float)
    if not len(fct):
        return fct
    s = r.summary
    end = float(s["duration_s"].iloc[0]) if "duration_s" in s else math.nan
    fct = np.where(np.isnan(fct), end, fct)
    if scale:
        fct = fct * (REF_SIZE / f["size_bytes"].to_numpy(dtype=float))
    return fct


def fct_mean(group: int) -> Quantity:
    """The mean FCT of a group's flows (scaled to 100 MB each), one value per run."""

    def value(r: Results) -> float:
        v = _fcts(r, group)
        return float(v.mean()) if len(v) else math.nan

    return Quantity(f"group {group}'s mean FCT (per 100 MB)", per_run=value, domain=NONNEG, unit="s")


def _fct_gap(r: Results) -> float:
    a, b = _fcts(r, 0), _fcts(r, 1)
    return float(a.mean() - b.mean()) if len(a) and len(b) else math.nan


#: fig17-20: CUBIC's (group 0) mean FCT minus the BBR flows' (group 1).
FCT_GAP = Quantity(
    "mean FCT of group 0 (CUBIC) - group 1 (BBR), per 100 MB",
    per_run=_fct_gap,
    domain=(-math.inf, math.inf),
    unit="s",
)


def _pooled_fcts(runs: Runs, group: int) -> np.ndarray:
    parts = [_fcts(r, group) for r in runs.results()]
    return np.concatenate(parts) if parts else np.array([])


def fct_within(group: int, lo: float, hi: float) -> Quantity:
    """The fraction of a group's flows, pooled over the repetitions as the
    paper's CDF pools them, whose FCT (per 100 MB) lies in [lo, hi] s."""

    def of_runs(runs: Runs) -> float:
        v = _pooled_fcts(runs, group)
        return float(((v >= lo) & (v <= hi)).mean()) if len(v) else math.nan

    return Quantity(
        f"fraction of group {group}'s FCTs (per 100 MB, pooled) in [{lo:g}, {hi:g}] s",
        pooled=of_runs,
        domain=FRACTION,
    )


def fct_spread(group: int) -> Quantity:
    """p90 - p10 of a group's FCTs (per 100 MB) pooled over the repetitions."""

    def of_runs(runs: Runs) -> float:
        v = _pooled_fcts(runs, group)
        return float(np.quantile(v, 0.9) - np.quantile(v, 0.1)) if len(v) else math.nan

    return Quantity(
        f"p90 - p10 of group {group}'s FCTs (per 100 MB, pooled)", pooled=of_runs, domain=NONNEG, unit="s"
    )


def _fct_norm(r: Results) -> float:
    v = _fcts(r, None, scale=False)
    f, s = r.flows, r.summary
    ideal = float(f["size_bytes"].sum()) * 8 / (float(s["rate_mbps"].iloc[0]) * 1e6)
    return float(v.mean()) / ideal if len(v) and ideal > 0 else math.nan


#: fig16: the flows' mean FCT over the ideal time of the whole transfer (all
#: flows' bytes at the link's rate): the paper's ~90 s for 100 MB a flow is
#: 1.125 of the 80 s ideal; the ratio holds for the catalog's 10 GB too.
FCT_NORM = Quantity("mean FCT / ideal time of all the bytes", per_run=_fct_norm, domain=NONNEG)


def _ideal_excess(r: Results) -> float:
    f = r.flows
    total = float(f["goodput_mbps"].sum())
    if total <= 0 or not len(f):
        return math.nan
    mine = f["group"] == 0
    return float(f.loc[mine, "goodput_mbps"].sum()) / total - float(mine.sum()) / len(f)


def _cubic_shortfall(r: Results) -> float:
    """fig12: CUBIC's (group 1) ideal share n/(m+n) minus its measured share."""
    f = r.flows
    total = float(f["goodput_mbps"].sum())
    if total <= 0 or not len(f):
        return math.nan
    mine = f["group"] == 1
    return float(mine.sum()) / len(f) - float(f.loc[mine, "goodput_mbps"].sum()) / total


CUBIC_SHORTFALL = Quantity(
    "CUBIC's ideal share n/(m+n) - its share", per_run=_cubic_shortfall, domain=(-1.0, 1.0)
)


def _points(runs: Runs) -> list[list[int]]:
    """The rows of ``runs`` grouped by their point (every swept key)."""
    exp = runs.exp
    out: dict[tuple[str, ...], list[int]] = {}
    for i in runs.rows:
        out.setdefault(tuple(str(exp.runs[k].iloc[i]) for k in exp.keys), []).append(i)
    return list(out.values())


def _mean_of(per_run: Callable[[Results], float], exp: Any, rows: Sequence[int]) -> float:
    v = [per_run(exp.results(i)) for i in rows]
    v = [x for x in v if math.isfinite(x)]
    return sum(v) / len(v) if v else math.nan


def over_points(q: Quantity, how: str) -> Quantity:
    """The max, min or range (max - min) over the points a partial ``at``
    selects of ``q``'s mean over repetitions at each."""
    assert q.per_run is not None
    per_run = q.per_run

    def of_runs(runs: Runs) -> float:
        means = [m for m in (_mean_of(per_run, runs.exp, rows) for rows in _points(runs)) if math.isfinite(m)]
        if not means:
            return math.nan
        return {"max": max(means), "min": min(means), "range": max(means) - min(means)}[how]

    lo, hi = q.domain
    domain = (0.0, hi - lo) if how == "range" else q.domain
    return Quantity(f"{how} over the points of {q.text}", pooled=of_runs, domain=domain, unit=q.unit)


def between(q: Quantity, key: str, a: str, b: str, ratio: bool = False) -> Quantity:
    """``q``'s mean (over repetitions) where ``key`` is ``a``, minus (or over)
    its mean where ``key`` is ``b``, among the runs at a point without ``key``."""
    assert q.per_run is not None
    per_run = q.per_run

    def of_runs(runs: Runs) -> float:
        exp = runs.exp
        ra = [i for i in runs.rows if str(exp.runs[key].iloc[i]) == a]
        rb = [i for i in runs.rows if str(exp.runs[key].iloc[i]) == b]
        ma, mb = _mean_of(per_run, exp, ra), _mean_of(per_run, exp, rb)
        if ratio:
            return ma / mb if mb > 0 else math.nan
        return ma - mb

    lo, hi = q.domain
    if ratio:
        domain = (0.0, math.inf)
        text = f"{q.text} at {key}={a} / at {key}={b}"
    else:
        domain = (lo - hi, hi - lo)
        text = f"{q.text} at {key}={a} - at {key}={b}"
    return Quantity(text, pooled=of_runs, domain=domain, unit="" if ratio else q.unit)


def _above_ideal_fraction(runs: Runs) -> float:
    means = [_mean_of(_ideal_excess, runs.exp, rows) for rows in _points(runs)]
    means = [m for m in means if math.isfinite(m)]
    return sum(m > 0 for m in means) / len(means) if means else math.nan


#: fig12: the fraction of the (m, n) points where BBRv2's share (mean over
#: repetitions) exceeds its ideal m/(m+n).
ABOVE_IDEAL = Quantity(
    "fraction of (m, n) points where BBRv2's share > m/(m+n)", pooled=_above_ideal_fraction, domain=FRACTION
)


def _f(id: str, cite: str, claim: str, paper: str, check: Any, kernel: str, why: str = "") -> Finding:
    return Finding(f"{PAPER}/{id}", f"{PAPER}, {cite}", claim, paper, check, kernel, why)


def _each(make: Callable[[Point], Any], over: Sequence[Point]) -> Each:
    return Each(make, tuple(over))


def vs(
    q: Quantity, key: str, a: Any, op: str, b: Any, margin: float = 0.0, ratio: bool = False
) -> Callable[[Point], Compare]:
    """For ``Each``: at a point, ``q`` with ``key`` = ``a`` (None: the
    point's own) against ``q`` with ``key`` = ``b``."""

    def make(p: Point) -> Compare:
        at_a = dict(p) if a is None else {**p, key: a}
        return Compare(q, at_a, op, q, {**p, key: b}, margin=margin, ratio=ratio)

    return make


# --------------------------------------------------------------------------- fig4-7: 100 flows

_SMALL = bdp([0.01, 0.1])
_LARGE = bdp([10, 100])
_ALL_4 = bdp(BUF_4)
_C51 = "Sec. 5.1, Fig. {}"


def _jain_below_small(cc: str) -> Callable[[Point], Compare]:
    """fig4: ``cc``'s Jain at the point's buffer below its Jain at 0.1 BDP:
    at all at 1 BDP, by 0.15 at 10 BDP."""

    def make(p: Point) -> Compare:
        one = p[BUF] == "1BDP"
        return Compare(
            JAIN,
            {CC: cc, BUF: p[BUF]},
            "<" if one else "<=",
            JAIN,
            {CC: cc, BUF: "0.1BDP"},
            0.0 if one else -0.15,
        )

    return make


_FQ_NOTE = (
    "The catalog paces CUBIC through fq as the paper's Sec. 4 says; the published scripts removed the "
    "hosts' qdisc, so the paper's CUBIC may have been unpaced."
)

add(
    _f(
        "fig4",
        _C51.format("4(a)-(b)"),
        "with 0.01 and 0.1 BDP buffers the BBRv2 flows get a higher mean rate than the CUBIC flows",
        "CUBIC lowest; BBRv2 above it, close to BBRv1",
        _each(
            vs(MEAN_RATE, CC, "bbr2", ">", "cubic"),
            grid({BUF: _SMALL}),
        ),
        "cubic side only",
        "No size given: a > b at each buffer. " + _FQ_NOTE,
    ),
    _f(
        "fig4",
        _C51.format("4(a)-(b)"),
        "with 0.01 and 0.1 BDP buffers the BBRv1 flows get a higher mean rate than the CUBIC flows",
        "CUBIC lowest, its AIMD cycles driven by frequent drops",
        _each(
            vs(MEAN_RATE, CC, "bbr1", ">", "cubic"),
            grid({BUF: _SMALL}),
        ),
        "all",
        "No size given: a > b at each buffer. " + _FQ_NOTE,
    ),
    _f(
        "fig4",
        _C51.format("4(d)"),
        "at 10 BDP CUBIC's 100 flows have a Jain index of about 0.898",
        "89.8%",
        Band(JAIN, {CC: "cubic", BUF: "10BDP"}, 0.85, 0.95),
        "all",
        "The paper's number, no spread given over its 10 runs; +-0.05 near the top of the scale. It may "
        "have computed the index over the 1000 pooled samples of the CDF rather than per run (ambiguous).",
    ),
    _f(
        "fig4",
        _C51.format("4(d)"),
        "at 10 BDP BBRv2's 100 flows have a Jain index of about 0.643",
        "64.3%",
        Band(JAIN, {CC: "bbr2", BUF: "10BDP"}, 0.55, 0.75),
        "none: BBRv2 only",
        "The paper's number; +-0.1 because a per-run index over 100 flows depends on which few flows win. "
        "Per run or pooled over the CDF's 1000 samples: not said.",
    ),
    _f(
        "fig4",
        _C51.format("4(d)"),
        "at 10 BDP BBRv1's 100 flows have a Jain index of about 0.243",
        "24.3%",
        Band(JAIN, {CC: "bbr1", BUF: "10BDP"}, 0.15, 0.35),
        "all",
        "The paper's number; +-0.1 as for BBRv2 (a few flows take most of the link). Per run or pooled: "
        "not said.",
    ),
    _f(
        "fig4",
        _C51.format("4(d)"),
        "at 10 BDP fairness ranks CUBIC above BBRv2 above BBRv1",
        "0.898 > 0.643 > 0.243 (gaps 0.25 and 0.40)",
        _each(
            lambda p: Compare(
                JAIN, p, ">=", JAIN, {**p, CC: {"cubic": "bbr2", "bbr2": "bbr1"}[p[CC]]}, margin=0.1
            ),
            grid({CC: ["cubic", "bbr2"]}, **{BUF: "10BDP"}),
        ),
        "none: BBRv2 in both steps (the kernel can show CUBIC above BBRv1)",
        "Each step at least 0.1, well under the paper's gaps.",
    ),
    _f(
        "fig4",
        _C51.format("4(a)-(b)"),
        "with small buffers the BBR flows share evenly (high Jain index)",
        "'high'; no number",
        _each(lambda p: Threshold(JAIN, p, ">=", 0.9), grid({CC: ["bbr1", "bbr2"], BUF: _SMALL})),
        "bbr1 side only",
        "The paper says only 'high'; 0.9 is the catalog's reading of fair, well above its 0.643 at 10 BDP.",
    ),
    *[
        _f(
            "fig4",
            _C51.format("4(c)-(d)"),
            f"for {name}, buffers of 1 BDP and 10 BDP cost fairness against 0.1 BDP",
            f"'high' at small buffers, spread widening at 1 BDP, {j10} at 10 BDP",
            _each(
                _jain_below_small(cc),
                grid({BUF: bdp([1, 10])}),
            ),
            kernel,
            "1 BDP below 0.1 BDP (no size given); 10 BDP at least 0.15 below ('high' against the paper's "
            f"{j10}).",
        )
        for cc, name, j10, kernel in (
            ("bbr2", "BBRv2", "0.643", "none: BBRv2 only"),
            ("bbr1", "BBRv1", "0.243", "all"),
        )
    ],
    _f(
        "fig4",
        _C51.format("4(c)-(d)"),
        "CUBIC's fairness falls from 1 BDP to 10 BDP",
        "Jain decreases to 0.898 at 10 BDP",
        Compare(JAIN, {CC: "cubic", BUF: "10BDP"}, "<", JAIN, {CC: "cubic", BUF: "1BDP"}),
        "all",
        "No size given for the fall.",
    ),
    _f(
        "fig4",
        _C51.format("4(c)-(d)"),
        "CUBIC's throughput rises slightly from 1 BDP to 10 BDP",
        "'slightly increase'; no number",
        Compare(MEAN_RATE, {CC: "cubic", BUF: "10BDP"}, ">", MEAN_RATE, {CC: "cubic", BUF: "1BDP"}),
        "all",
    ),
    _f(
        "fig5",
        _C51.format("5(a)-(b)"),
        "with 0.01 and 0.1 BDP buffers CUBIC uses less of the link than BBRv2",
        "CUBIC lowest utilization; no number in the text",
        _each(vs(UTIL, CC, "cubic", "<", "bbr2"), grid({BUF: _SMALL})),
        "cubic side only",
        "No size given (Fig. 5's axis values are not in the text). " + _FQ_NOTE,
    ),
    _f(
        "fig5",
        _C51.format("5(a)-(b)"),
        "with 0.01 and 0.1 BDP buffers CUBIC uses less of the link than BBRv1",
        "CUBIC lowest utilization; no number in the text",
        _each(vs(UTIL, CC, "cubic", "<", "bbr1"), grid({BUF: _SMALL})),
        "all",
        "No size given. " + _FQ_NOTE,
    ),
    _f(
        "fig5",
        _C51.format("5"),
        "BBRv1 and BBRv2 keep the link nearly full at every buffer",
        "'high' at small buffers, 'remains high' at 10 and 100 BDP",
        _each(lambda p: Threshold(UTIL, p, ">=", 0.9), grid({CC: ["bbr1", "bbr2"], BUF: _ALL_4})),
        "bbr1 side only",
        "The paper says 'high'; 0.9 is the catalog's reading of a full link (payload at most 0.956).",
    ),
    _f(
        "fig5",
        _C51.format("5(b), 5(d)"),
        "CUBIC's utilization is higher at 10 BDP than at 0.1 BDP",
        "rises with the buffer ('slightly' from 1 to 10 BDP)",
        Compare(UTIL, {CC: "cubic", BUF: "10BDP"}, ">", UTIL, {CC: "cubic", BUF: "0.1BDP"}),
        "all",
    ),
)

_CUBIC_LOSS = (
    "Sec. 5.9 gives about 600 Mbit/s for 100 unpaced CUBIC flows in the same setup (1 Gbit/s, 20 ms, 1% "
    "loss), whatever the buffer, and calls the BBRs' 'much higher'"
)

add(
    *[
        _f(
            "fig6",
            "Sec. 5.1, Figs. 6-7; Sec. 5.9, Fig. 22(a)",
            f"with 1% loss the {name} flows together move far more than the CUBIC flows at every buffer",
            "BBRs 'much higher' than CUBIC; CUBIC about 600 Mbit/s (Sec. 5.9)",
            _each(
                vs(AGG, CC, cc, ">=", "cubic", margin=150.0),
                grid({BUF: _ALL_4}),
            ),
            kernel,
            "At least 150 Mbit/s more: " + _CUBIC_LOSS + ". " + _FQ_NOTE,
        )
        for cc, name, kernel in (("bbr2", "BBRv2", "cubic side only"), ("bbr1", "BBRv1", "all"))
    ],
    _f(
        "fig6",
        _C51.format("6(d)-(e)"),
        "with 1% loss, 10 and 100 BDP buffers bring the BBRs' fairness down to low levels",
        "'decreases to low levels'; no number with loss",
        _each(
            lambda p: Compare(JAIN, p, "<=", JAIN, {**p, BUF: "0.1BDP"}, margin=-0.15),
            grid({CC: ["bbr1", "bbr2"], BUF: _LARGE}),
        ),
        "bbr1 side only",
        "At least 0.15 below the same CCA at 0.1 BDP (without loss the paper's gap was 'high' vs 0.643).",
    ),
    *[
        _f(
            "fig7",
            "Sec. 5.1, Fig. 7; Sec. 5.9, Fig. 22(a)",
            f"with 1% loss {name} uses far more of the link than CUBIC at every buffer",
            "'much higher'; CUBIC about 0.6 of the link (Sec. 5.9)",
            _each(
                vs(UTIL, CC, cc, ">=", "cubic", margin=0.15),
                grid({BUF: _ALL_4}),
            ),
            kernel,
            "At least 0.15 of the link more: " + _CUBIC_LOSS + ".",
        )
        for cc, name, kernel in (("bbr2", "BBRv2", "cubic side only"), ("bbr1", "BBRv1", "all"))
    ],
    _f(
        "fig7",
        "Sec. 5.9, Fig. 22(a)",
        "100 CUBIC flows with 1% loss use about 0.6 of the link, whatever the buffer",
        "about 600 Mbit/s of 1 Gbit/s, independent of the buffer (Sec. 5.9's unpaced arm)",
        _each(lambda p: Band(UTIL, p, 0.5, 0.7), grid({BUF: _ALL_4}, **{CC: "cubic"})),
        "all",
        "Sec. 5.9's number for the identical setup; +-0.1 for 'approximately' and the figure. " + _FQ_NOTE,
    ),
    _f(
        "fig7",
        "Sec. 5.1, Fig. 7; Sec. 5.7",
        "with 1% loss BBRv1 and BBRv2 keep the link nearly full at every buffer",
        "'much higher' than CUBIC; BBRv2 unaffected by loss below 1-2% (Sec. 5.7)",
        _each(lambda p: Threshold(UTIL, p, ">=", 0.9), grid({CC: ["bbr1", "bbr2"], BUF: _ALL_4})),
        "bbr1 side only",
        "0.9 is the catalog's reading of a full link; the paper gives no number.",
    ),
)

# --------------------------------------------------------------------------- fig8: retransmissions vs N

_N8 = [1, *range(10, 101, 10)]
_C52 = "Sec. 5.2, Fig. 8"

add(
    _f(
        "fig8",
        _C52,
        "BBRv1 retransmits several times more than BBRv2 at every number of flows",
        "2.5% vs < 0.1% with 1 flow; 18% vs 2.5% with 10",
        _each(
            vs(RETX, CC, "bbr1", ">=", "bbr2", margin=3.0, ratio=True),
            grid({N0: _N8}),
        ),
        "none: needs BBRv2 (the kernel gives BBRv1's side)",
        "At least 3x, under the paper's 7x (N = 10) and 25x (N = 1).",
    ),
    _f(
        "fig8",
        _C52,
        "one BBRv1 flow retransmits about 2.5%",
        "around 2.5%",
        Band(RETX, {CC: "bbr1", N0: 1}, 0.015, 0.04),
        "all",
        "The paper's number; about +-40% for 'around', read off a figure of 10-run means.",
    ),
    _f(
        "fig8",
        _C52,
        "ten BBRv1 flows retransmit about 18%",
        "approximately 18%",
        Band(RETX, {CC: "bbr1", N0: 10}, 0.12, 0.25),
        "all",
        "The paper's number; about +-35% for 'approximately'.",
    ),
    _f(
        "fig8",
        _C52,
        "BBRv1's retransmission rate keeps rising beyond 10 flows",
        "'continues to increase'; no number",
        Compare(RETX, {CC: "bbr1", N0: 100}, ">", RETX, {CC: "bbr1", N0: 10}),
        "all",
    ),
    _f(
        "fig8",
        _C52,
        "with one flow CUBIC and BBRv2 both retransmit under 0.1%",
        "below 0.1%",
        _each(lambda p: Threshold(RETX, p, "<", 0.001), grid({CC: ["cubic", "bbr2"]}, **{N0: 1})),
        "cubic side only",
    ),
    _f(
        "fig8",
        _C52,
        "ten BBRv2 flows retransmit about 2.5%",
        "approximately 2.5%",
        Band(RETX, {CC: "bbr2", N0: 10}, 0.015, 0.04),
        "none: BBRv2 only",
        "The paper's number; about +-40-60% for 'approximately'. ccarena's BBRv2 at paper scale "
        "(docs/findings.md: 0.19-1.20%) is below it.",
    ),
    _f(
        "fig8",
        _C52,
        "ten CUBIC flows retransmit about 0.5%",
        "remains low at 0.5%",
        Band(RETX, {CC: "cubic", N0: 10}, 0.002, 0.01),
        "all",
        "The paper's number; a factor of 2 either way for a value this small on the figure's scale.",
    ),
    _f(
        "fig8",
        _C52,
        "from 10 flows up CUBIC retransmits less than BBRv2",
        "CUBIC's rate lower than BBRv2's (and its throughput too)",
        _each(vs(RETX, CC, "cubic", "<", "bbr2"), grid({N0: _N8[1:]})),
        "none: needs BBRv2",
        "No size given beyond the N = 10 numbers (0.5% vs 2.5%).",
    ),
)

# --------------------------------------------------------------------------- fig9: RTT in large buffers

_C53 = "Sec. 5.3, Fig. {}"
_N9 = [2, 10, 25, 50]
_RWND_9 = (
    "The catalog's 25 MB receive window caps what 2 CUBIC flows can queue (about 0.4 s of RTT); the "
    "paper's 1 and 2 s need about 125 MB a flow (its scripts' buffers were far larger), so the 50 and "
    "100 BDP bands cannot hold as the catalog sets it."
)
_CUBIC_RTT = {"10BDP": (200.0, 400.0), "50BDP": (800.0, 1300.0), "100BDP": (1600.0, 2500.0)}

add(
    _f(
        "fig9",
        _C53.format("9"),
        "BBRv1 and BBRv2 keep the RTT near 60 ms at every large buffer and every number of flows",
        "about 60 ms with 2 flows; 50-75 ms with 10-50 flows",
        _each(lambda p: Band(RTT, p, 45.0, 80.0), grid({CC: ["bbr1", "bbr2"], N0: _N9, BUF: BUF_9[1:]})),
        "bbr1 side only",
        "The paper's range (50-75 ms, 60 ms at N = 2) widened by 5 ms for reading Fig. 9.",
    ),
    _f(
        "fig9",
        _C53.format("9(a)"),
        "the BBRs' RTT does not grow with the buffer from 10 to 100 BDP",
        "approximately constant at 60 ms while the buffer grows tenfold",
        _each(
            lambda p: Band(between(RTT, BUF, "100BDP", "10BDP"), p, -15.0, 15.0),
            grid({CC: ["bbr1", "bbr2"], N0: _N9}),
        ),
        "bbr1 side only",
        "RTT at 100 BDP minus RTT at 10 BDP (means over repetitions) within +-15 ms, half the 50-75 ms "
        "range the paper gives.",
    ),
    _f(
        "fig9",
        _C53.format("9(a)"),
        "with 2 flows CUBIC's RTT is many times the BBRs' at 10 BDP and beyond",
        "CUBIC about 300, 1000, 2000 ms at 10, 50, 100 BDP; the BBRs about 60 ms",
        _each(
            lambda p: Compare(
                RTT,
                {**p, CC: "cubic"},
                ">=",
                RTT,
                p,
                margin=3.0 if p[BUF] == "10BDP" else 10.0,
                ratio=True,
            ),
            grid({CC: ["bbr1", "bbr2"], BUF: list(_CUBIC_RTT)}, **{N0: 2}),
        ),
        "cubic vs bbr1 only",
        "At least 3x at 10 BDP (paper 5x) and 10x at 50 and 100 BDP (paper 17x and 33x). " + _RWND_9,
    ),
    _f(
        "fig9",
        _C53.format("9(a)"),
        "with 2 flows CUBIC's RTT is about 300, 1000 and 2000 ms at 10, 50 and 100 BDP",
        "approximately 300, 1000, 2000 ms",
        _each(
            lambda p: Band(RTT, p, *_CUBIC_RTT[p[BUF]]), grid({BUF: list(_CUBIC_RTT)}, **{CC: "cubic", N0: 2})
        ),
        "all",
        "The paper's numbers, about +-30% for 'approximately' and for the BDP the buffers are sized with "
        "(20 or 30 ms). " + _RWND_9,
    ),
    _f(
        "fig9",
        _C53.format("9(b)-(d)"),
        "CUBIC's RTT in a large buffer falls as the number of flows grows",
        "decreases with N, most with large buffers; no number",
        Compare(RTT, {CC: "cubic", BUF: "100BDP", N0: 50}, "<", RTT, {CC: "cubic", BUF: "100BDP", N0: 2}),
        "all",
        "Under the 25 MB receive window the 2-flow value is capped, so this can hold or fail for that "
        "reason.",
    ),
    _f(
        "fig9",
        _C53.format("9(a)"),
        "at 1 BDP with 2 flows BBRv2 adds only a little delay to the 30 ms",
        "'a slight increase above the propagation delay'",
        Threshold(RTT, {CC: "bbr2", N0: 2, BUF: "1BDP"}, "<", 45.0),
        "none: BBRv2 only",
        "45 ms is 1.5 times the propagation delay, below the BBRs' 60 ms in large buffers.",
    ),
)

# --------------------------------------------------------------------------- fig10: one flow, loss

_C54 = "Sec. 5.4, Fig. {}"
_LOW_LOSS = LOSS_10[:4]  # 0% .. 0.1%

add(
    _f(
        "fig10",
        _C54.format("10(a)"),
        "below 1% loss both BBRs carry about 900 Mbit/s with a 0.1 BDP buffer",
        "steady at approximately 900 Mbit/s",
        _each(
            lambda p: Band(FLOW_RATE, p, 830.0, 960.0),
            grid({CC: ["bbr1", "bbr2"], LOSS: _LOW_LOSS}, **{BUF: "0.1BDP"}),
        ),
        "bbr1 side only",
        "The paper's 900 Mbit/s, -70 for 'approximately'; the top is the payload ceiling of 1 Gbit/s "
        "(1448/1514 = 956).",
    ),
    _f(
        "fig10",
        _C54.format("10(a)"),
        "at 1% loss and 0.1 BDP BBRv2 falls to about 600 Mbit/s",
        "600 Mbit/s",
        Band(FLOW_RATE, {CC: "bbr2", LOSS: "1%", BUF: "0.1BDP"}, 500.0, 700.0),
        "none: BBRv2 only",
        "The paper's number, +-100 Mbit/s for reading the figure.",
    ),
    _f(
        "fig10",
        _C54.format("10(a)"),
        "at 1% loss and 0.1 BDP BBRv1 stays near 900 Mbit/s",
        "remains at 900 Mbit/s",
        Band(FLOW_RATE, {CC: "bbr1", LOSS: "1%", BUF: "0.1BDP"}, 830.0, 960.0),
        "all",
        "As below 1% loss: 900 Mbit/s, -70, up to the payload ceiling.",
    ),
    _f(
        "fig10",
        _C54.format("10(a)"),
        "at 1% loss and 0.1 BDP BBRv1 carries far more than BBRv2",
        "900 vs 600 Mbit/s",
        Compare(
            FLOW_RATE,
            {CC: "bbr1", LOSS: "1%", BUF: "0.1BDP"},
            ">=",
            FLOW_RATE,
            {CC: "bbr2", LOSS: "1%", BUF: "0.1BDP"},
            margin=150.0,
        ),
        "none: needs BBRv2",
        "At least 150 Mbit/s, half the paper's gap.",
    ),
    _f(
        "fig10",
        _C54.format("10(a)"),
        "at 10% loss and 0.1 BDP BBRv2 collapses",
        "'collapses'",
        Threshold(FLOW_RATE, {CC: "bbr2", LOSS: "10%", BUF: "0.1BDP"}, "<", 100.0),
        "none: BBRv2 only",
        "Under a tenth of the link reads 'collapses'.",
    ),
    _f(
        "fig10",
        _C54.format("10(a)"),
        "at 10% loss and 0.1 BDP BBRv1 still carries about 600 Mbit/s",
        "decreases to 600 Mbit/s",
        Band(FLOW_RATE, {CC: "bbr1", LOSS: "10%", BUF: "0.1BDP"}, 500.0, 700.0),
        "all",
        "The paper's number, +-100 Mbit/s for reading the figure.",
    ),
    _f(
        "fig10",
        _C54.format("10(c)"),
        "with 1 BDP and 1% loss BBRv2 carries about 800 Mbit/s",
        "decreases to 800 Mbit/s",
        Band(FLOW_RATE, {CC: "bbr2", LOSS: "1%", BUF: "1BDP"}, 700.0, 900.0),
        "none: BBRv2 only",
        "The paper's number, +-100 Mbit/s for reading the figure. The catalog's 25 MB receive window is "
        "2 BDP at 100 ms and may bind here.",
    ),
    _f(
        "fig10",
        _C54.format("10(c)"),
        "with 1 BDP BBRv1 carries more than BBRv2 at every loss above 0.1%",
        "BBRv1 better once loss exceeds 0.1%; no number",
        _each(
            vs(FLOW_RATE, CC, "bbr1", ">", "bbr2"),
            grid({LOSS: LOSS_10[4:]}, **{BUF: "1BDP"}),
        ),
        "none: needs BBRv2",
    ),
    _f(
        "fig10",
        _C54.format("10(a), 10(c)"),
        "once there is loss, both BBRs carry far more than CUBIC (both buffers)",
        "BBRs 'significantly outperform' CUBIC",
        _each(
            lambda p: Compare(FLOW_RATE, p, ">=", FLOW_RATE, {**p, CC: "cubic"}, margin=2.0, ratio=True),
            [
                *grid({LOSS: ["0.1%", "1%", "2%", "5%"], BUF: bdp([0.1, 1])}, **{CC: "bbr1"}),
                *grid({LOSS: ["0.1%", "1%"], BUF: bdp([0.1, 1])}, **{CC: "bbr2"}),
            ],
        ),
        "cubic vs bbr1 only",
        "At least twice CUBIC's rate (a loss-based flow at 100 ms gets a few Mbit/s at 1%, the Mathis "
        "model the paper cites). BBRv2 only up to 1%: the paper has it collapse above that.",
    ),
    _f(
        "fig10",
        _C54.format("10(b)"),
        "at 0.1 BDP BBRv1 retransmits more than BBRv2",
        "BBRv1 higher, especially with small buffers; no number",
        _each(
            vs(RETX, CC, "bbr1", ">", "bbr2"),
            grid({LOSS: ["0.01%", "0.1%", "1%"]}, **{BUF: "0.1BDP"}),
        ),
        "none: needs BBRv2",
    ),
    _f(
        "fig10",
        _C54.format("10(d)"),
        "at 1 BDP BBRv1 and BBRv2 retransmit about equally",
        "'similar retransmission rates'",
        _each(
            lambda p: Band(between(RETX, CC, "bbr1", "bbr2", ratio=True), p, 0.5, 2.0),
            grid({LOSS: ["0.01%", "0.1%", "1%"]}, **{BUF: "1BDP"}),
        ),
        "none: needs BBRv2",
        "The ratio BBRv1/BBRv2 within a factor of 2 reads 'similar' on a figure without numbers.",
    ),
)

# --------------------------------------------------------------------------- fig11: BBR vs CUBIC

_C55 = "Sec. 5.5, Fig. {}"
_ONE = {N0: 1, N1: 1}
_FIFTY = {N0: 50, N1: 50}
_BELOW1 = bdp([0.1, 0.5])
_ALL_11 = bdp(BUF_11)
_SHARE0, _SHARE1 = group_share(0), group_share(1)
_RWND_11 = (
    "Needs CUBIC to fill a 250 MB buffer; the catalog's 25 MB receive window lets one CUBIC flow queue "
    "about 9 BDP, so 100 BDP behaves like 10 BDP as the catalog sets it."
)

add(
    _f(
        "fig11",
        _C55.format("11(a)"),
        "one BBRv1 flow against one CUBIC flow, no loss, below 1 BDP: BBRv1 takes about 90%",
        "approximately 90% of the bandwidth",
        _each(
            lambda p: Band(_SHARE0, p, 0.8, 0.97), grid({BUF: _BELOW1}, **{CC: "bbr1", LOSS: "0%", **_ONE})
        ),
        "all",
        "The paper's number, +-0.1, capped below 1 since CUBIC keeps a sliver.",
    ),
    _f(
        "fig11",
        _C55.format("11(a)"),
        "one against one, no loss, small buffers: BBRv2 coexists with CUBIC better than BBRv1",
        "BBRv2 'better coexistence', in particular with small buffers",
        _each(
            vs(JAIN, CC, "bbr2", ">=", "bbr1", margin=0.1),
            grid({BUF: _BELOW1}, **{LOSS: "0%", **_ONE}),
        ),
        "none: needs BBRv2 (the kernel gives BBRv1's side)",
        "At least 0.1 of Jain: BBRv1's 90/10 split alone gives 0.61.",
    ),
    _f(
        "fig11",
        _C55.format("11(b)"),
        "one BBRv2 against one CUBIC with 0.01% loss stay fair at every buffer",
        "fairness index always above 80%",
        _each(
            lambda p: Threshold(JAIN, p, ">", 0.8),
            grid({BUF: _ALL_11}, **{CC: "bbr2", LOSS: "0.01%", **_ONE}),
        ),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig11",
        _C55.format("11(b)"),
        "one BBRv2 against one CUBIC with 0.01% loss, below 1 BDP: BBRv2 gets more than CUBIC",
        "BBRv2 higher throughput, yet comparable",
        _each(
            lambda p: Threshold(_SHARE0, p, ">", 0.5),
            grid({BUF: _BELOW1}, **{CC: "bbr2", LOSS: "0.01%", **_ONE}),
        ),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig11",
        _C55.format("11(b)"),
        "one BBRv1 against one CUBIC with 0.01% loss, below 1 BDP: Jain under 0.6",
        "BBRv1 takes most; fairness below 60%",
        _each(
            lambda p: Threshold(JAIN, p, "<", 0.6),
            grid({BUF: _BELOW1}, **{CC: "bbr1", LOSS: "0.01%", **_ONE}),
        ),
        "all",
    ),
    _f(
        "fig11",
        _C55.format("11(b)"),
        "one BBRv1 against one CUBIC with 0.01% loss: Jain nears 1 at 100 BDP",
        "approximately 100% only at 100 BDP",
        Threshold(JAIN, {CC: "bbr1", LOSS: "0.01%", BUF: "100BDP", **_ONE}, ">=", 0.9),
        "all",
        "0.9 reads 'approximately 100%' with room for run noise. " + _RWND_11,
    ),
    _f(
        "fig11",
        _C55.format("11(c)-(d)"),
        "50 BBRv2 against 50 CUBIC flows, with and without loss: BBRv2 gets more at every buffer",
        "BBRv2 better throughput independently of the buffer",
        _each(
            lambda p: Threshold(_SHARE0, p, ">", 0.5),
            grid({LOSS: ["0%", "1%"], BUF: _ALL_11}, **{CC: "bbr2", **_FIFTY}),
        ),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig11",
        _C55.format("11(c)-(d)"),
        "50 BBRv2 against 50 CUBIC flows, with and without loss: Jain above 0.8 at every buffer",
        "fairness index always above 80%",
        _each(
            lambda p: Threshold(JAIN, p, ">", 0.8),
            grid({LOSS: ["0%", "1%"], BUF: _ALL_11}, **{CC: "bbr2", **_FIFTY}),
        ),
        "none: BBRv2 in every run",
        "Jain over the 100 flows, which also counts unequal BBRv2 flows among themselves. ccarena at "
        "paper scale gives 0.64-0.88 at 2 BDP (docs/findings.md), a disagreement.",
    ),
    _f(
        "fig11",
        _C55.format("11(c)-(d)"),
        "50 BBRv1 against 50 CUBIC flows, below 1 BDP: BBRv1 takes most of the link",
        "BBRv1 consumes most, in particular below 1 BDP",
        _each(
            lambda p: Threshold(_SHARE0, p, ">", 0.5),
            grid({LOSS: ["0%", "1%"], BUF: _BELOW1}, **{CC: "bbr1", **_FIFTY}),
        ),
        "all",
    ),
    _f(
        "fig11",
        _C55.format("11(c)"),
        "50 BBRv1 against 50 CUBIC flows without loss: above 4 BDP they even out and Jain rises",
        "throughputs similar above 4 BDP and the fairness index increases; no number",
        Compare(
            JAIN,
            {CC: "bbr1", LOSS: "0%", BUF: "10BDP", **_FIFTY},
            ">",
            JAIN,
            {CC: "bbr1", LOSS: "0%", BUF: "0.5BDP", **_FIFTY},
        ),
        "all",
    ),
    _f(
        "fig11",
        _C55.format("11(a)"),
        "one BBRv2 against one CUBIC, no loss, 100 BDP: Jain falls to about 0.6",
        "approximately 60%",
        Band(JAIN, {CC: "bbr2", LOSS: "0%", BUF: "100BDP", **_ONE}, 0.5, 0.7),
        "none: BBRv2 (the sentence follows the BBRv2 ones; whether it covers BBRv1 too is not said)",
        "The paper's number, +-0.1. " + _RWND_11,
    ),
    _f(
        "fig11",
        _C55.format("11(a)"),
        "one BBRv2 against one CUBIC, no loss, 100 BDP: CUBIC takes the larger part",
        "CUBIC consumes more above 1 BDP",
        Threshold(_SHARE1, {CC: "bbr2", LOSS: "0%", BUF: "100BDP", **_ONE}, ">", 0.5),
        "none: BBRv2 in every run",
        _RWND_11,
    ),
)

# --------------------------------------------------------------------------- fig12: m BBRv2 vs n CUBIC

add(
    _f(
        "fig12",
        _C55.format("12"),
        "BBRv2's flows generally take more than their ideal share m/(m+n) against CUBIC",
        "'generally' above the ideal share",
        Threshold(ABOVE_IDEAL, {}, ">", 0.5),
        "none: BBRv2 in every run",
        "'Generally' read as at most points: BBRv2's share (mean over repetitions) above m/(m+n) at more "
        "than half of the (m, n) points swept.",
    ),
    _f(
        "fig12",
        _C55.format("12"),
        "with 10 BBRv2 and 2 CUBIC flows, CUBIC gets exactly its ideal share 2/12",
        "exactly the fair share",
        Band(_SHARE1, {N0: 10, N1: 2}, 0.137, 0.197),
        "none: BBRv2 in every run",
        "Ideal 0.167; +-0.03 for reading a share line off Fig. 12.",
    ),
    _f(
        "fig12",
        _C55.format("12"),
        "CUBIC's shortfall from its ideal share shrinks as the BBRv2 flows grow in number",
        "CUBIC's share approaches the ideal as BBRv2 flows increase; no number",
        Compare(CUBIC_SHORTFALL, {N0: 10}, "<", CUBIC_SHORTFALL, {N0: 1}),
        "none: BBRv2 in every run",
        "The shortfall n/(m+n) - share averaged over every n, at m = 10 against m = 1.",
    ),
)

# --------------------------------------------------------------------------- fig13: heatmaps

_CELLS = grid({RATE: RATES_13, RTT_KEY: RTTS_13})
_SMALLEST = {RATE: "20Mbps", RTT_KEY: "10ms"}
_LARGEST = {RATE: "1000Mbps", RTT_KEY: "200ms"}
_RWND_13 = (
    "The catalog's 25 MB receive window is the BDP of 1 Gbit/s x 200 ms, so in the large-BDP cells both "
    "flows are window-limited near 1 BDP."
)
_BUCKET_13 = (
    "The catalog keeps a 500 kB token bucket at every rate (the paper's script scaled it with the rate): "
    "at 20 Mbit/s that is more than the buffer."
)

add(
    _f(
        "fig13",
        _C55.format("13(a)"),
        "with 0.1 BDP and no loss BBRv2 gets more than CUBIC in every cell, the smallest BDPs included",
        "BBRv2 allocated more even with small BDP values",
        _each(lambda p: Threshold(_SHARE1, p, ">", 0.5), [{**c, BUF: "0.1BDP", LOSS: "0%"} for c in _CELLS]),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig13",
        _C55.format("13(a)"),
        "with 0.1 BDP and no loss, fairness is worse in the largest-BDP cell than in the smallest",
        "fairness decreases as bandwidth and delay grow; no numbers in the text",
        Compare(
            JAIN, {**_LARGEST, BUF: "0.1BDP", LOSS: "0%"}, "<", JAIN, {**_SMALLEST, BUF: "0.1BDP", LOSS: "0%"}
        ),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig13",
        _C55.format("13(a)"),
        "with 0.1 BDP and no loss, CUBIC's share collapses in the largest-BDP cell",
        "CUBIC's bandwidth collapses as BBRv2's surges",
        Threshold(_SHARE0, {**_LARGEST, BUF: "0.1BDP", LOSS: "0%"}, "<", 0.2),
        "none: BBRv2 in every run",
        "Under a fifth of the link reads 'collapses'. " + _RWND_13,
    ),
    _f(
        "fig13",
        _C55.format("13(a)"),
        "at 20 Mbit/s and 20 ms a 0.1 BDP buffer leaves the link under-used",
        "the buffer holds about one packet: low utilization",
        Compare(
            UTIL,
            {RATE: "20Mbps", RTT_KEY: "20ms", BUF: "0.1BDP", LOSS: "0%"},
            "<",
            UTIL,
            {RATE: "20Mbps", RTT_KEY: "20ms", BUF: "1BDP", LOSS: "0%"},
        ),
        "none: BBRv2 in every run",
        "Against the same cell at 1 BDP; the paper says 'low' without a number. " + _BUCKET_13,
    ),
    _f(
        "fig13",
        _C55.format("13(b)-(c)"),
        "over the heatmap, 1 BDP gives better fairness than 0.1 BDP and than 10 BDP",
        "better fairness at 1 BDP; lower at 10 BDP; no numbers in the text",
        _each(
            lambda p: Compare(JAIN, p, "<", JAIN, {BUF: "1BDP", LOSS: "0%"}),
            grid({BUF: bdp([0.1, 10])}, **{LOSS: "0%"}),
        ),
        "none: BBRv2 in every run",
        "Jain averaged over every rate x delay cell and repetition at each buffer.",
    ),
    _f(
        "fig13",
        _C55.format("13(b)"),
        "at 1 BDP without loss BBRv2 and CUBIC coexist well over the heatmap",
        "'good coexistence' at 1 BDP (Sec. 5.5 summary); no numbers in the text",
        Threshold(JAIN, {BUF: "1BDP", LOSS: "0%"}, ">=", 0.8),
        "none: BBRv2 in every run",
        "Jain averaged over every rate x delay cell and repetition; 0.8 is the bar the paper itself calls "
        "fair for BBRv2 and CUBIC in Fig. 11. Not every cell: the paper says 1 BDP is better, not that "
        "each cell is fair.",
    ),
    _f(
        "fig13",
        _C55.format("13(c)"),
        "with 10 BDP and no loss, CUBIC takes most of the link in the smallest-BDP cell",
        "CUBIC fills the buffer and uses most of the bandwidth when the BDP is small",
        Threshold(_SHARE0, {**_SMALLEST, BUF: "10BDP", LOSS: "0%"}, ">", 0.5),
        "none: BBRv2 in every run",
        _BUCKET_13,
    ),
    _f(
        "fig13",
        _C55.format("13(c)"),
        "with 10 BDP and no loss, BBRv2 takes most of the link in the largest-BDP cell",
        "CUBIC deteriorates and BBRv2 uses the available bandwidth when the BDP is large",
        Threshold(_SHARE0, {**_LARGEST, BUF: "10BDP", LOSS: "0%"}, "<", 0.5),
        "none: BBRv2 in every run",
        _RWND_13,
    ),
    _f(
        "fig13",
        _C55.format("13(d)-(f)"),
        "with 0.01% loss BBRv2's advantage at large BDP is at least as large as without loss",
        "a larger allocation for BBRv2 'more evident' as the BDP grows; no number",
        _each(
            vs(_SHARE1, LOSS, "0.01%", ">=", "0%", margin=-0.02),
            grid({BUF: bdp([0.1, 1, 10])}, **{RATE: "1000Mbps", RTT_KEY: "200ms"})
            + grid({BUF: bdp([0.1, 1, 10])}, **{RATE: "500Mbps", RTT_KEY: "100ms"}),
        ),
        "none: BBRv2 in every run",
        "BBRv2's share with loss at least its share without, less 0.02, in the two largest-BDP cells at "
        "each buffer.",
    ),
)

# --------------------------------------------------------------------------- fig14-15: RTT unfairness

_C56 = "Sec. 5.6, Fig. {}"
_SHARE_50MS = flow_metric("share", 1)
_TD, _FQC = "taildrop", "fq_codel"
_FROM3 = bdp([3, 5, 10, 20, 50, 100])
_BELOW1_14 = bdp([0.1, 0.2, 0.5])
_RWND_14 = "The catalog's 25 MB receive window caps the 50 ms flow near 7.5 BDP, so 20-100 BDP behave alike."

add(
    _f(
        "fig14",
        _C56.format("14(a)"),
        "two BBRv1 flows under tail drop, from 3 BDP up: the 50 ms flow takes about 85%",
        "approximately 85% of the bandwidth",
        _each(lambda p: Band(_SHARE_50MS, p, 0.77, 0.93), grid({BUF: _FROM3}, **{CC: "bbr1", QDISC: _TD})),
        "all",
        "The paper's number, +-0.08 for 'approximately'. " + _RWND_14,
    ),
    _f(
        "fig14",
        _C56.format("14(a)"),
        "two BBRv1 flows under tail drop, from 3 BDP up: Jain about 0.6",
        "remains at approximately 60%",
        _each(lambda p: Band(JAIN, p, 0.55, 0.75), grid({BUF: _FROM3}, **{CC: "bbr1", QDISC: _TD})),
        "all",
        "The paper's 0.6; an 85/15 split gives 0.67, so the band reaches 0.75 to hold both of the paper's "
        "numbers.",
    ),
    _f(
        "fig14",
        _C56.format("14(a)"),
        "two BBRv1 flows under tail drop below 1 BDP split evenly",
        "similar bandwidth; fairness approximately 100%",
        _each(lambda p: Threshold(JAIN, p, ">=", 0.95), grid({BUF: _BELOW1_14}, **{CC: "bbr1", QDISC: _TD})),
        "all",
    ),
    _f(
        "fig14",
        _C56.format("14(b)"),
        "two BBRv2 flows under tail drop keep Jain above 0.85 at every buffer",
        "always above 85%",
        _each(lambda p: Threshold(JAIN, p, ">", 0.85), grid({BUF: BUF_14}, **{CC: "bbr2", QDISC: _TD})),
        "none: BBRv2 only",
    ),
    _f(
        "fig14",
        _C56.format("14(a)-(b)"),
        "under tail drop in large buffers BBRv2 is much fairer to the two RTTs than BBRv1",
        "above 85% vs about 60%",
        _each(
            vs(JAIN, CC, "bbr2", ">=", "bbr1", margin=0.2),
            grid({BUF: _FROM3}, **{QDISC: _TD}),
        ),
        "none: needs BBRv2 (the kernel gives BBRv1's side)",
        "At least 0.2, under the paper's 0.25.",
    ),
    _f(
        "fig14",
        _C56.format("14(c)-(d)"),
        "with FQ-CoDel both CCAs share evenly between the two RTTs at every buffer",
        "fairness index 100% for both",
        _each(
            lambda p: Threshold(JAIN, p, ">=", 0.97),
            grid({CC: ["bbr1", "bbr2"], BUF: BUF_14}, **{QDISC: _FQC}),
        ),
        "bbr1 side only",
        "0.97 leaves room for run noise under the paper's 100%.",
    ),
    _f(
        "fig15",
        _C56.format("15(a)"),
        "under tail drop below 1 BDP BBRv1 retransmits much more than BBRv2",
        "BBRv1 high, BBRv2 low; no numbers",
        _each(
            vs(MEAN_FLOW_RETX, CC, "bbr1", ">=", "bbr2", margin=2.0, ratio=True),
            grid({BUF: _BELOW1_14}, **{QDISC: _TD}),
        ),
        "none: needs BBRv2 (the kernel gives BBRv1's side)",
        "At least 2x reads 'high' against 'low'; the paper's quantity is the mean of the two flows' rates.",
    ),
    _f(
        "fig15",
        _C56.format("15(b)"),
        "FQ-CoDel lowers BBRv1's retransmission rate at small buffers",
        "FQ-CoDel helps to reduce BBRv1's retransmissions; no number",
        _each(
            lambda p: Compare(MEAN_FLOW_RETX, {**p, QDISC: _FQC}, "<", MEAN_FLOW_RETX, {**p, QDISC: _TD}),
            grid({BUF: _BELOW1_14}, **{CC: "bbr1"}),
        ),
        "all",
    ),
    _f(
        "fig15",
        _C56.format("15(a)"),
        "BBRv1's high retransmission rate under tail drop is a small-buffer effect",
        "high when the buffer is below 1 BDP; no number",
        Compare(
            MEAN_FLOW_RETX,
            {CC: "bbr1", QDISC: _TD, BUF: "0.1BDP"},
            ">",
            MEAN_FLOW_RETX,
            {CC: "bbr1", QDISC: _TD, BUF: "2BDP"},
        ),
        "all",
    ),
    _f(
        "fig15",
        _C56.format("15"),
        "BBRv2's retransmission rate stays low at every buffer under both queue disciplines",
        "low, independently of the AQM and the buffer; no number",
        Compare(
            over_points(MEAN_FLOW_RETX, "max"),
            {CC: "bbr2"},
            "<",
            MEAN_FLOW_RETX,
            {CC: "bbr1", QDISC: _TD, BUF: "0.1BDP"},
            margin=0.5,
            ratio=True,
        ),
        "none: BBRv2 only",
        "'Low' read against the same runs' BBRv1: BBRv2's highest point under half of BBRv1's rate under "
        "tail drop at 0.1 BDP.",
    ),
)

# --------------------------------------------------------------------------- fig16: FCT of 100 flows

_C57 = "Sec. 5.7, Fig. {}"
_FROM02 = BUF_16[1:]
_SIZE_16 = (
    "The paper's ~90 s for 100 flows at 1 Gbit/s fits 100 MB a flow (an 80 s ideal), not the 10 GB a "
    "flow its text says and the catalog sends; normalized by the ideal time the check reads either. "
    "1.0-1.25 around the paper's 1.125 (headers alone put it near 1.05)."
)
_LOSS_16 = (
    "The catalog uses the caption's 0.01% loss; the text says 1%, which fits 'increases substantially' "
    "better, so at 0.01% the CUBIC gap may be small."
)

add(
    _f(
        "fig16",
        _C57.format("16(a)"),
        "from 0.2 BDP up, without loss, all three CCAs' flows finish near the ideal time of the transfer",
        "approximately 90 s for each CCA",
        _each(
            lambda p: Band(FCT_NORM, p, 1.0, 1.25),
            grid({CC: ["cubic", "bbr1", "bbr2"], BUF: _FROM02}, **{LOSS: "0%"}),
        ),
        "cubic and bbr1",
        _SIZE_16,
    ),
    _f(
        "fig16",
        _C57.format("16(a)"),
        "at 0.1 BDP without loss CUBIC's flows take considerably longer than the BBRs'",
        "CUBIC's FCT 'increases considerably'; no number",
        _each(
            lambda p: Compare(FCT_NORM, {**p, CC: "cubic"}, ">=", FCT_NORM, p, margin=1.1, ratio=True),
            grid({CC: ["bbr1", "bbr2"]}, **{BUF: "0.1BDP", LOSS: "0%"}),
        ),
        "cubic vs bbr1 only",
        "At least 10% longer reads 'considerably'.",
    ),
    _f(
        "fig16",
        _C57.format("16(b)"),
        "with random loss the BBRs' flows still finish near the ideal time, every buffer",
        "still approximately 90 s",
        _each(
            lambda p: Band(FCT_NORM, p, 1.0, 1.25),
            grid({CC: ["bbr1", "bbr2"], BUF: BUF_16}, **{LOSS: "0.01%"}),
        ),
        "bbr1 side only",
        _SIZE_16 + " " + _LOSS_16,
    ),
    _f(
        "fig16",
        _C57.format("16(b)"),
        "with random loss CUBIC's flows take much longer than the BBRs', every buffer",
        "CUBIC's FCT 'increases substantially'; no number",
        _each(
            lambda p: Compare(FCT_NORM, {**p, CC: "cubic"}, ">=", FCT_NORM, p, margin=1.2, ratio=True),
            grid({CC: ["bbr1", "bbr2"], BUF: BUF_16}, **{LOSS: "0.01%"}),
        ),
        "cubic vs bbr1 only",
        "At least 20% longer reads 'substantially'. " + _LOSS_16,
    ),
)

# --------------------------------------------------------------------------- fig17-20: 50 CUBIC + 50 BBR

_CENSOR = (
    "FCTs per 100 MB (the quick form's 20 MB flows scaled); a flow not done by the end counts the run's "
    "length."
)
_CDF = "The paper draws a CDF of the flows of all its runs; the fraction is over those pooled."
_BUFS_17 = grid({BUF: BUF_17})
_GAP_NOTE = "Group 0 is CUBIC, group 1 the BBR flows."

add(
    _f(
        "fig17",
        _C57.format("17(a)"),
        "at 0.1 BDP BBRv2's flows finish well before CUBIC's",
        "BBRv2 50-60 s, CUBIC 80-90 s",
        Threshold(FCT_GAP, {BUF: "0.1BDP"}, ">=", 15.0),
        "none: BBRv2 in every run",
        "CUBIC's mean FCT at least 15 s above BBRv2's, half the paper's gap of about 30 s. " + _CENSOR,
    ),
    _f(
        "fig17",
        _C57.format("17(a)"),
        "at 0.1 BDP BBRv2's flows finish in about 50-60 s",
        "approximately between 50 and 60 s",
        Threshold(fct_within(1, 45.0, 65.0), {BUF: "0.1BDP"}, ">=", 0.8),
        "none: BBRv2 in every run",
        "At least 80% of the flows (p10 to p90) within the paper's range widened by 5 s for reading the "
        "CDF. " + _CDF + " " + _CENSOR,
    ),
    _f(
        "fig17",
        _C57.format("17(a)"),
        "at 0.1 BDP CUBIC's flows finish in about 80-90 s",
        "approximately between 80 and 90 s",
        Threshold(fct_within(0, 75.0, 95.0), {BUF: "0.1BDP"}, ">=", 0.8),
        "none: BBRv2 in every run",
        "At least 80% of the flows within the paper's range widened by 5 s. " + _CDF + " " + _CENSOR,
    ),
    _f(
        "fig17",
        _C57.format("17(b)-(c)"),
        "at 0.5 and 1 BDP BBRv2's flows still finish before CUBIC's",
        "the gap is 'slightly reduced'",
        _each(lambda p: Threshold(FCT_GAP, p, ">", 0.0), grid({BUF: bdp([0.5, 1])})),
        "none: BBRv2 in every run",
        _GAP_NOTE + " " + _CENSOR,
    ),
    _f(
        "fig17",
        _C57.format("17(b)-(c)"),
        "at 0.5 and 1 BDP the gap between CUBIC's and BBRv2's FCTs is smaller than at 0.1 BDP",
        "the gap is 'slightly reduced'; no number",
        _each(lambda p: Compare(FCT_GAP, p, "<", FCT_GAP, {BUF: "0.1BDP"}), grid({BUF: bdp([0.5, 1])})),
        "none: BBRv2 in every run",
        _GAP_NOTE + " " + _CENSOR,
    ),
    *[
        _f(
            "fig17",
            _C57.format("17(d)-(e)"),
            f"at 10 and 100 BDP {name}'s FCTs spread out",
            f"{name} between {rng} s at 10-100 BDP, against about 10 s wide at 0.1 BDP",
            _each(
                vs(fct_spread(g), BUF, None, ">=", "0.1BDP", margin=2.0, ratio=True),
                grid({BUF: _LARGE}),
            ),
            "none: BBRv2 in every run",
            "p90 - p10 at least twice its width at 0.1 BDP (the paper: about 50-60 s wide against about "
            "10). " + _CDF + " " + _CENSOR,
        )
        for g, name, rng in ((1, "BBRv2", "20 and 70"), (0, "CUBIC", "18 and 80"))
    ],
    _f(
        "fig18",
        _C57.format("18"),
        "BBRv1's flows finish before CUBIC's at every buffer",
        "BBRv1 a smaller FCT than CUBIC, independently of the buffer; no number",
        _each(lambda p: Threshold(FCT_GAP, p, ">", 0.0), _BUFS_17),
        "all",
        _GAP_NOTE + " " + _CENSOR,
    ),
    _f(
        "fig18",
        _C57.format("17(a), 18"),
        "at 0.1 BDP BBRv1's flows finish sooner than BBRv2's do against CUBIC (Fig. 17)",
        "BBRv1's FCT smaller than BBRv2's; BBRv2 took 50-60 s at 0.1 BDP",
        Threshold(fct_mean(1), {BUF: "0.1BDP"}, "<", 55.0),
        "all",
        "The paper compares two figures; one id's runs hold only this one, so BBRv1's mean FCT is read "
        "against the middle of the 50-60 s the paper gives for BBRv2 in Fig. 17(a). " + _CENSOR,
    ),
    _f(
        "fig19",
        _C57.format("19"),
        "with 1% loss CUBIC's flows take about 100-135 s at every buffer",
        "approximately between 100 and 135 s",
        _each(lambda p: Threshold(fct_within(0, 90.0, 145.0), p, ">=", 0.8), _BUFS_17),
        "none: BBRv2 in every run",
        "At least 80% of the flows within the paper's range widened by 10 s for reading the CDF. "
        + _CDF
        + " "
        + _CENSOR,
    ),
    _f(
        "fig19",
        _C57.format("19"),
        "with 1% loss BBRv2's flows finish far sooner than CUBIC's at every buffer",
        "CUBIC 100-135 s; BBRv2 as without loss (20-70 s in Fig. 17)",
        _each(lambda p: Threshold(FCT_GAP, p, ">=", 30.0), _BUFS_17),
        "none: BBRv2 in every run",
        "CUBIC's mean FCT at least 30 s above BBRv2's. " + _GAP_NOTE + " " + _CENSOR,
    ),
    _f(
        "fig19",
        _C57.format("17(a), 19"),
        "with 1% loss BBRv2's flows finish about as fast as without loss",
        "similar to Fig. 17, where BBRv2 took 50-60 s at 0.1 BDP",
        Band(fct_mean(1), {BUF: "0.1BDP"}, 44.0, 66.0),
        "none: BBRv2 in every run",
        "The paper compares two figures; here BBRv2's mean FCT at 0.1 BDP is read against its Fig. 17(a) "
        "value, 55 s +-20% (with loss CUBIC may leave BBRv2 more room). " + _CENSOR,
    ),
    _f(
        "fig20",
        _C57.format("20"),
        "with 1% loss BBRv1's flows finish before CUBIC's at every buffer",
        "BBRv1 a shorter FCT than CUBIC, independently of the buffer; no number",
        _each(lambda p: Threshold(FCT_GAP, p, ">", 0.0), _BUFS_17),
        "all",
        _GAP_NOTE + " " + _CENSOR,
    ),
    _f(
        "fig20",
        _C57.format("19, 20"),
        "with 1% loss BBRv1's flows finish sooner than BBRv2's do (Fig. 19)",
        "BBRv2's FCT larger than BBRv1's; BBRv2 with loss as in Fig. 17 (50-60 s at 0.1 BDP)",
        Threshold(fct_mean(1), {BUF: "0.1BDP"}, "<", 55.0),
        "all",
        "The paper compares two figures; here BBRv1's mean FCT at 0.1 BDP is read against the 50-60 s the "
        "paper gives for BBRv2 without loss, which it says Fig. 19 matches. " + _CENSOR,
    ),
)

# --------------------------------------------------------------------------- fig21: AQMs

_C58 = "Sec. 5.8, Fig. {}"
_TDT = aqm("taildrop")
_AQMS = [aqm(a) for a in ("cake", "fq_codel", "fq_codel+ecn")]
_RWND_21 = (
    "Needs CUBIC to fill a 100 BDP (250 MB) buffer; the catalog's 25 MB receive window lets one CUBIC "
    "flow queue about 9 BDP."
)

add(
    _f(
        "fig21",
        _C58.format("21(a)"),
        "1 BBRv2 against 1 CUBIC under tail drop at 0.1 BDP: Jain about 0.8",
        "approximately 80% (CUBIC cannot use its share)",
        Band(JAIN, {TABLE: _TDT, BUF: "0.1BDP", **_ONE}, 0.72, 0.88),
        "none: BBRv2 in every run",
        "The paper's number, +-0.08 for 'approximately'.",
    ),
    _f(
        "fig21",
        _C58.format("21(a)"),
        "1 BBRv2 against 1 CUBIC under tail drop from 0.5 to 10 BDP: Jain close to 0.9",
        "close to 90%",
        _each(
            lambda p: Band(JAIN, p, 0.83, 0.97), grid({BUF: bdp([0.5, 1, 2, 5, 10])}, **{TABLE: _TDT, **_ONE})
        ),
        "none: BBRv2 in every run",
        "The paper's number, +-0.07 for 'close to'.",
    ),
    _f(
        "fig21",
        _C58.format("21(a)"),
        "1 BBRv2 against 1 CUBIC under tail drop at 100 BDP: Jain about 0.6",
        "approximately 60% (CUBIC fills the buffer and takes most)",
        Band(JAIN, {TABLE: _TDT, BUF: "100BDP", **_ONE}, 0.5, 0.7),
        "none: BBRv2 in every run",
        "The paper's number, +-0.1. " + _RWND_21,
    ),
    _f(
        "fig21",
        _C58.format("21(a), 21(c)"),
        "under tail drop 100 BDP is far less fair than 10 BDP, for 1v1 and 10v10",
        "about 0.6 at 100 BDP vs about 0.9 at 10 BDP (1v1); 10v10 'similar'",
        _each(
            vs(JAIN, BUF, "100BDP", "<=", "10BDP", margin=-0.15),
            [{TABLE: _TDT, N0: m, N1: n} for m, n in ((1, 1), (10, 10))],
        ),
        "none: BBRv2 in every run",
        "At least 0.15 lower, half the paper's 1v1 gap. " + _RWND_21,
    ),
    _f(
        "fig21",
        _C58.format("21(a)"),
        "CAKE and FQ-CoDel, with and without ECN, bring 1v1 fairness close to 1 at every buffer",
        "approach 100%",
        _each(lambda p: Threshold(JAIN, p, ">=", 0.95), grid({TABLE: _AQMS, BUF: BUF_21}, **_ONE)),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig21",
        _C58.format("21"),
        "every AQM is at least as fair as tail drop at every buffer and flow mix",
        "AQMs give better fairness, independently of the buffer and the number of flows",
        _each(
            lambda p: Compare(JAIN, p, ">=", JAIN, {**p, TABLE: _TDT}, margin=-0.02),
            [{TABLE: t, BUF: b, N0: m, N1: n} for t in _AQMS for b in BUF_21 for m, n in PAIRS_21],
        ),
        "none: BBRv2 in every run",
        "Within 0.02 below tail drop counts as a tie (tail drop is fair itself at some points, e.g. 1 BDP).",
    ),
    _f(
        "fig21",
        _C58.format("21(b)"),
        "1 BBRv2 against 10 CUBIC under tail drop stays above 0.8 at every buffer",
        "remains above 80%",
        _each(lambda p: Threshold(JAIN, p, ">", 0.8), grid({BUF: BUF_21}, **{TABLE: _TDT, N0: 1, N1: 10})),
        "none: BBRv2 in every run",
    ),
    _f(
        "fig21",
        _C58.format("21(d)"),
        "50 BBRv2 against 50 CUBIC under tail drop: Jain about 0.8 at every buffer but 1 BDP",
        "approximately 80% for any buffer other than 1 BDP",
        _each(
            lambda p: Band(JAIN, p, 0.72, 0.88),
            grid({BUF: [b for b in BUF_21 if b != "1BDP"]}, **{TABLE: _TDT, **_FIFTY}),
        ),
        "none: BBRv2 in every run",
        "The paper's number, +-0.08 for 'approximately'.",
    ),
)

# --------------------------------------------------------------------------- fig22: CUBIC with fixed pacing

_C59 = "Sec. 5.9, Fig. {}"
_UNPACED_NOTE = (
    "The unpaced arm is CUBIC without fq (pacing 'internal'), as the paper's 'without TCP pacing' and "
    "its scripts have it."
)

add(
    _f(
        "fig22",
        _C59.format("22(a)"),
        "paced at 8.5 Mbit/s without loss, the 100 CUBIC flows carry a steady 850 Mbit/s",
        "constant at 850 Mbit/s",
        _each(lambda p: Band(AGG, p, 800.0, 870.0), grid({BUF: BUF_22}, **{PACING: PACED, LOSS: "0%"})),
        "all",
        "fq's maxrate counts frames, so 100 x 8.5 Mbit/s carry about 813 Mbit/s of payload; the band "
        "holds that reading and the paper's 850.",
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "without fixed pacing and without loss the aggregate is higher than paced",
        "slightly higher, peaking at 900 Mbit/s",
        _each(
            lambda p: Compare(AGG, {**p, PACING: UNPACED}, ">", AGG, {**p, PACING: PACED}),
            grid({BUF: BUF_22}, **{LOSS: "0%"}),
        ),
        "all",
        "No size at each buffer. " + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "without fixed pacing and without loss the aggregate peaks at about 900 Mbit/s",
        "peaking at 900 Mbit/s",
        Band(over_points(AGG, "max"), {PACING: UNPACED, LOSS: "0%"}, 850.0, 960.0),
        "all",
        "The highest of the buffers' means; the paper's 900 -50, up to the payload ceiling (956). "
        + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "with 1% loss fixed pacing raises the aggregate at every buffer",
        "about 700 vs about 600 Mbit/s",
        _each(
            lambda p: Compare(AGG, {**p, PACING: PACED}, ">=", AGG, {**p, PACING: UNPACED}, margin=50.0),
            grid({BUF: BUF_22}, **{LOSS: "1%"}),
        ),
        "all",
        "At least 50 Mbit/s, half the paper's gap. " + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "with 1% loss the paced flows carry about 700 Mbit/s, whatever the buffer",
        "700 Mbit/s",
        _each(lambda p: Band(AGG, p, 630.0, 770.0), grid({BUF: BUF_22}, **{PACING: PACED, LOSS: "1%"})),
        "all",
        "The paper's number, +-70 Mbit/s (10%).",
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "with 1% loss the unpaced flows carry about 600 Mbit/s, whatever the buffer",
        "approximately 600 Mbit/s",
        _each(lambda p: Band(AGG, p, 530.0, 670.0), grid({BUF: BUF_22}, **{PACING: UNPACED, LOSS: "1%"})),
        "all",
        "The paper's number, +-70 Mbit/s for 'approximately'. " + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(a)"),
        "the buffer does not change the aggregate (each arm and loss)",
        "the buffer size does not affect the aggregate throughput",
        _each(
            lambda p: Threshold(over_points(AGG, "range"), p, "<=", 60.0),
            grid({PACING: [PACED, UNPACED], LOSS: ["0%", "1%"]}),
        ),
        "all",
        "The buffers' means within 60 Mbit/s of each other (a tenth of the aggregate), for each arm.",
    ),
    _f(
        "fig22",
        _C59.format("22(b)"),
        "with fixed pacing the 100 flows share almost perfectly, with and without loss",
        "close to 100%",
        _each(
            lambda p: Threshold(JAIN, p, ">=", 0.97),
            grid({LOSS: ["0%", "1%"], BUF: BUF_22}, **{PACING: PACED}),
        ),
        "all",
    ),
    _f(
        "fig22",
        _C59.format("22(b)"),
        "without fixed pacing, below 5 BDP fairness is about the same with and without loss",
        "similar in both cases below 5 BDP",
        _each(
            lambda p: Band(between(JAIN, LOSS, "0%", "1%"), p, -0.05, 0.05),
            grid({BUF: bdp([0.1, 0.5, 1, 2])}, **{PACING: UNPACED}),
        ),
        "all",
        "Jain without loss minus Jain with loss within +-0.05 reads 'similar'. " + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(b)"),
        "without fixed pacing and without loss, fairness falls once the buffer reaches 5 BDP",
        "decreases rapidly from 5 BDP; no number",
        _each(
            lambda p: Compare(JAIN, p, "<=", JAIN, {**p, BUF: "1BDP"}, margin=-0.1),
            grid({BUF: bdp([10, 20])}, **{PACING: UNPACED, LOSS: "0%"}),
        ),
        "all",
        "At least 0.1 below 1 BDP reads 'rapidly'. Checked without loss only: with 1% loss the buffer "
        "never fills (Fig. 22(c)), and whether the fall covers that case too is not clear from the text. "
        + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(c)"),
        "the RTT stays at about the 20 ms propagation delay with fixed pacing, and without it under loss",
        "almost constant and equal to the propagation delay",
        _each(
            lambda p: Band(RTT, p, 20.0, 26.0),
            [
                *grid({LOSS: ["0%", "1%"], BUF: BUF_22}, **{PACING: PACED}),
                *grid({BUF: BUF_22}, **{PACING: UNPACED, LOSS: "1%"}),
            ],
        ),
        "all",
        "The propagation delay plus 6 ms for a small standing queue. " + _UNPACED_NOTE,
    ),
    _f(
        "fig22",
        _C59.format("22(c)"),
        "without fixed pacing and without loss, large buffers fill (bufferbloat)",
        "the bufferbloat problem is observed",
        _each(
            lambda p: Threshold(RTT, p, ">", 40.0),
            grid({BUF: bdp([5, 10, 20])}, **{PACING: UNPACED, LOSS: "0%"}),
        ),
        "all",
        "Twice the propagation delay (a queue above one RTTmin); a full 5 BDP buffer alone adds 100 ms. "
        + _UNPACED_NOTE,
    ),
)
