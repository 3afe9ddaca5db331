"""The findings of mixed-workload (Habtegebreil et al., "Impact of TCP BBR
on CUBIC Traffic: A Mixed Workload Evaluation", ITC 30, 2018), each as the
paper states it (catalog/findings.py).

The paper's text has its prose, Table I and its captions, but no plotted
data: every number below is the paper's own (a rate, a buffer, a count of
retransmissions, "about 240 packets") or derived from it, never read off a
figure. Where the paper gives a word and no number, the margin comes from
one fixed vocabulary (not from this simulator's results):

- a direction ("longer", "lower", "better"): a factor of 1.1 (0.9), or 0.03
  of utilization, so that the noise between two means of 10 runs cannot pass
  it alone;
- "noticeable": 1.1 (0.9), or 0.05 of utilization;
- "significant", "substantial", "much": 1.5 (0.67), or 0.1 of utilization;
- "very" in a comparison: a factor of 2 (0.5); "a very small share" of a
  capacity: at most a quarter of it (half the fair share);
- "comparable", "close": within a factor of 1.5 either way, [0.67, 1.5];
- "consistent", "does not vary": max / min over the points at most 1.25;
- "in most cases", "the general trend" over the 8 rates of Figs. 2-4: at 5
  of the 8 rates at least (a majority); a claim tied to one rate is checked
  there only.

The runs (mixed_workload.py): flow 0 is the large flow (group 0), group 1
the succession of small or medium flows, each starting 0.1 s after the one
before it completed; in fig9, group 0 is a second succession, of 1 MB CUBIC
flows. The quantities:

- the medium (small) flows' completion time: the mean ``fct_s`` of the
  group-1 flows that started while flow 0 ran (``expect.flows_beside``, the
  figures' own selection), per run; flows not done by the end are left out;
- the large flow's throughput: flow 0's ``goodput_mbps`` (its bytes over its
  life, or over the run when it did not finish);
- utilization: while flow 0 sends, the mean over the sample intervals of all
  flows' summed goodput over the bottleneck's rate (as the figures draw it:
  ``mixed_workload.utilization_while_large``), not the run's
  ``summary.utilization``, which also counts the time after the large flow.

A claim over several points (a trend over the buffers, "at most rates", the
buffer where something is smallest) is one quantity computed from the means
over repeats at those points (``across``, ``share_of``); it is not checked
(n/a) when the points it needs are not in the run, as in most quick forms.
The kernel here has CUBIC and BBRv1, all the paper uses: every finding can
be shown on it."""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..expect import flows_beside
from ..lazy import lazy
from ..sweep import matches
from .findings import (
    Band,
    Compare,
    Each,
    Finding,
    Measured,
    Point,
    Quantity,
    Runs,
    Threshold,
    add,
)
from .quantities import FRACTION, NONNEG

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..results import Results
else:
    np = lazy("numpy")
    pd = lazy("pandas")

KERNEL = "all (cubic and bbr1)"

RATES = [5, 10, 20, 30, 40, 50, 60, 70]
BUFFERS = [0.5, 1, 2, 4, 8]
GAPS = [round(0.1 * i, 1) for i in range(10)]

# The vocabulary's margins (module docstring).
DIRECTION = 1.1
MUCH = 1.5
VERY = 2.0
CLOSE = (0.67, 1.5)
CONSISTENT = 1.25
U_DIRECTION = 0.03
U_NOTICEABLE = 0.05
U_MUCH = 0.1
MOST = 5 / 8


def _cc(large: str, small: str) -> dict[str, str]:
    return {"flows.0.cc": large, "flows.1.cc": small}


BBR_BBR = _cc("bbr1", "bbr1")
BBR_CUBIC = _cc("bbr1", "cubic")
CUBIC_BBR = _cc("cubic", "bbr1")
CUBIC_CUBIC = _cc("cubic", "cubic")
LARGE_BBR = {"flows.0.cc": "bbr1"}
LARGE_CUBIC = {"flows.0.cc": "cubic"}
SMALL_BBR = {"flows.1.cc": "bbr1"}
SMALL_CUBIC = {"flows.1.cc": "cubic"}


def rate(r: float) -> dict[str, str]:
    return {"bottleneck.rate": f"{r:g}Mbps"}


def buf(b: float) -> dict[str, str]:
    return {"bottleneck.buffer": f"{b:g}BDP"}


def size(s: str) -> dict[str, str]:
    return {"flows.1.size": s}


def gap(g: float) -> dict[str, str]:
    return {"flows.1.repeat.gap": f"{g:g}s"}


def at(*parts: Point) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        out.update(p)
    return out


# --------------------------------------------------------------------------- per-run quantities


def _large(r: Results) -> pd.Series | None:
    f = r.flows
    rows = f[f["flow"] == 0]
    return None if rows.empty else rows.iloc[0]


def _beside(r: Results, group: int = 1) -> pd.DataFrame:
    """The flows of ``group`` that started while flow 0 ran, by start."""
    f = flows_beside(r.flows, 0)
    return f[(f["group"] == group) & (f["flow"] != 0)].sort_values("start_s")


def _large_window(r: Results, after_s: float | None = None) -> pd.DataFrame:
    """Flow 0's samples from ``after_s`` (default: its start) to its end."""
    large = _large(r)
    s = r.samples
    if large is None:
        return s.iloc[0:0]
    lo = float(large["start_s"]) if after_s is None else after_s
    s = s[s["flow"] == 0]
    return s[(s["time_s"] > lo) & (s["time_s"] <= float(large["end_s"]))]


def _mean_or_nan(v: pd.Series) -> float:
    v = v.dropna()
    return float(v.mean()) if len(v) else math.nan


def _fct_beside(r: Results) -> float:
    return _mean_or_nan(_beside(r)["fct_s"])


def _utilization_while_large(r: Results) -> float:
    large = _large(r)
    if large is None:
        return math.nan
    s = r.samples
    s = s[(s["time_s"] > float(large["start_s"])) & (s["time_s"] <= float(large["end_s"]))]
    if s.empty:
        return math.nan
    per = s.groupby("time_s")["goodput_mbps"].sum()
    return float(per.mean()) / float(r.summary["rate_mbps"].iloc[0])


def _large_goodput(r: Results) -> float:
    large = _large(r)
    return math.nan if large is None else float(large["goodput_mbps"])


FCT = Quantity(
    "the successive flows' mean FCT beside the large flow", per_run=_fct_beside, domain=NONNEG, unit="s"
)
LT = Quantity("the large flow's goodput", per_run=_large_goodput, domain=NONNEG, unit="Mbit/s")
U = Quantity("utilization while the large flow sends", per_run=_utilization_while_large, domain=NONNEG)


def _fct_group0(r: Results) -> float:
    f = r.flows
    return _mean_or_nan(f[f["group"] == 0]["fct_s"])


def _cv_group0(runs: Runs) -> float:
    v = pd.concat([r.flows[r.flows["group"] == 0]["fct_s"] for r in runs.results()]).dropna()
    if len(v) < 2 or float(v.mean()) <= 0:
        return math.nan
    return float(v.std(ddof=0) / v.mean())


#: fig9: the CUBIC succession (group 0; no large flow there).
FCT0 = Quantity("the CUBIC flows' (group 0) mean FCT", per_run=_fct_group0, domain=NONNEG, unit="s")
CV0 = Quantity(
    "coefficient of variation of the CUBIC flows' (group 0) FCTs, pooled over repeats",
    pooled=_cv_group0,
    domain=NONNEG,
)


def _large_cwnd_median(r: Results) -> float:
    w = _large_window(r, after_s=0.5)["cwnd_pkts"].dropna()
    return float(w.median()) if len(w) else math.nan


#: fig5: from the first medium flow's start (0.5 s) to the large flow's end.
CWND_LARGE = Quantity(
    "median cwnd of the large flow while the medium flows run",
    per_run=_large_cwnd_median,
    domain=NONNEG,
    unit="pkts",
)


def _beside_cwnd(runs: Runs) -> float:
    parts = []
    for r in runs.results():
        large = _large(r)
        if large is None:
            continue
        s = r.samples
        s = s[s["flow"].isin(_beside(r)["flow"]) & (s["time_s"] <= float(large["end_s"]))]
        parts.append(s["cwnd_pkts"].dropna())
    v = pd.concat(parts) if parts else pd.Series(dtype=float)
    return float(v.median()) if len(v) else math.nan


#: fig11: the box plots' median, every sample of the medium flows pooled.
W = Quantity(
    "median cwnd of the medium flows beside the large flow, pooled over repeats",
    pooled=_beside_cwnd,
    domain=NONNEG,
    unit="pkts",
)

#: Below this fraction of the link, a BBRv1 flow's pacing rate means a
#: decayed max-bandwidth filter: with its full estimate it paces at about
#: 0.96 x the rate x its gain, 0.72 x the rate in the cycle's 0.75 phase,
#: and PROBE_RTT does not lower the pacing rate.
BACKED_OFF = 0.6


def _paced_low(r: Results) -> float:
    s = _large_window(r, after_s=2.0)
    p = s["pacing_rate_mbps"].dropna()
    if p.empty:
        return math.nan
    return float((p < BACKED_OFF * float(r.summary["rate_mbps"].iloc[0])).mean())


def _pacing_mean(r: Results) -> float:
    return _mean_or_nan(_large_window(r, after_s=2.0)["pacing_rate_mbps"])


#: figs. 12 and 15: from 2 s (after STARTUP and DRAIN) to the large flow's end.
PACED_LOW = Quantity(
    f"fraction of the large flow's samples pacing below {BACKED_OFF:g} x the link, from 2 s",
    per_run=_paced_low,
    domain=FRACTION,
)
PACING = Quantity(
    "the large flow's mean pacing rate from 2 s", per_run=_pacing_mean, domain=NONNEG, unit="Mbit/s"
)


def _first_fct(r: Results) -> float:
    b = _beside(r)
    return float(b["fct_s"].iloc[0]) if len(b) else math.nan


def _rest_fct(r: Results) -> float:
    v = _beside(r)["fct_s"].iloc[1:].dropna()
    return float(v.median()) if len(v) else math.nan


FIRST_FCT = Quantity("FCT of the first medium flow", per_run=_first_fct, domain=NONNEG, unit="s")
REST_FCT = Quantity(
    "median FCT of the later medium flows beside the large flow", per_run=_rest_fct, domain=NONNEG, unit="s"
)


def _pooled_beside(runs: Runs, column: str) -> pd.Series:
    parts = [_beside(r)[column] for r in runs.results()]
    return (pd.concat(parts) if parts else pd.Series(dtype=float)).dropna()


def fct_quantile(q: float) -> Quantity:
    """A quantile of the small flows' FCTs beside the large flow, pooled
    over the repeats (the ECDF's sample)."""

    def of(runs: Runs) -> float:
        v = _pooled_beside(runs, "fct_s")
        return float(v.quantile(q)) if len(v) else math.nan

    return Quantity(
        f"p{q * 100:g} FCT of the small flows beside the large flow, pooled",
        pooled=of,
        domain=NONNEG,
        unit="s",
    )


def _retrans_11_15(runs: Runs) -> float:
    v = _pooled_beside(runs, "segs_retrans")
    return float(((v >= 11) & (v <= 15)).mean()) if len(v) else math.nan


def _no_retrans_after_two(runs: Runs) -> float:
    parts = [_beside(r)["segs_retrans"].iloc[2:] for r in runs.results()]
    v = (pd.concat(parts) if parts else pd.Series(dtype=float)).dropna()
    return float((v == 0).mean()) if len(v) else math.nan


def _fct_over_window(runs: Runs) -> float:
    fct = _pooled_beside(runs, "fct_s")
    srtt = [float(x["srtt_mean_ms"]) for r in runs.results() if (x := _large(r)) is not None]
    srtt = [s for s in srtt if math.isfinite(s) and s > 0]
    if not len(fct) or not srtt:
        return math.nan
    return float(fct.median()) / (10 * float(np.mean(srtt)) / 1e3)


RETRANS_11_15 = Quantity(
    "fraction of the small flows beside the large flow with 11-15 retransmissions, pooled",
    pooled=_retrans_11_15,
    domain=FRACTION,
)
NO_RETRANS = Quantity(
    "fraction of the small flows beside the large flow, after each run's first two, "
    "without a retransmission, pooled",
    pooled=_no_retrans_after_two,
    domain=FRACTION,
)
FCT_PER_WINDOW = Quantity(
    "median small-flow FCT over 10 of the large flow's mean srtt (BBR's max-bandwidth window)",
    pooled=_fct_over_window,
    domain=NONNEG,
)


# --------------------------------------------------------------------------- across points


class _Missing(Exception):
    """No run (or no finite value) at a point a quantity needs."""


class _Memo:
    """What one experiment's findings read many times: each run's swept
    values (read once: ``Runs`` reads them cell by cell, 0.1 s a point in a
    sweep of 1,600 runs) and each (quantity, point)'s mean over repeats."""

    def __init__(self, exp: Any):
        keys = list(exp.keys)
        self.values = exp.runs[keys].to_dict("records") if keys else [{} for _ in range(len(exp.runs))]
        self.means: dict[tuple[Quantity, tuple[tuple[str, str], ...]], float] = {}


class _RunsAt(Runs):
    """``Runs`` at a point, matched on the values the memo holds."""

    def __init__(self, exp: Any, at: Point, memo: _Memo):
        self.exp = exp
        self.at = dict(at)
        self.rows = [i for i, values in enumerate(memo.values) if matches(at, values)]


_MEMOS: weakref.WeakKeyDictionary[Any, _Memo] = weakref.WeakKeyDictionary()

#: m(q, point): the mean over repeats of ``q`` at ``point``; raises _Missing.
Mean = Callable[[Quantity, Point], float]


def _memo(exp: Any) -> _Memo:
    try:
        memo = _MEMOS.get(exp)
        if memo is None:
            memo = _MEMOS[exp] = _Memo(exp)
        return memo
    except TypeError:  # an experiment that cannot be weakly referenced
        return _Memo(exp)


def _mean_at(exp: Any, q: Quantity, point: Point) -> float:
    memo = _memo(exp)
    key = (q, tuple(sorted((k, str(v)) for k, v in point.items())))
    if key not in memo.means:
        memo.means[key] = Measured.of(q.values(_RunsAt(exp, point, memo))).mean
    v = memo.means[key]
    if not math.isfinite(v):
        raise _Missing(point)
    return v


def across(
    text: str, fn: Callable[[Mean, Point], float], domain: tuple[float, float], unit: str = ""
) -> Quantity:
    """A number computed from the means over repeats at several points:
    ``fn(m, at)``, ``at`` the check's point, ``m(q, point)`` a mean. NaN
    (not checked) when a point it needs has no run."""

    def pooled(runs: Runs) -> float:
        try:
            return float(fn(lambda q, p: _mean_at(runs.exp, q, p), runs.at))
        except _Missing:
            return math.nan

    return Quantity(text, pooled=pooled, domain=domain, unit=unit)


def share_of(text: str, over: Sequence[Point], holds: Callable[[Mean, Point], bool]) -> Quantity:
    """The fraction of the points ``over`` (each merged into the check's
    point) at which ``holds(m, point)``, among those that have the runs it
    needs: "at most rates"."""

    def pooled(runs: Runs) -> float:
        def m(q: Quantity, p: Point) -> float:
            return _mean_at(runs.exp, q, p)

        judged = []
        for p in over:
            try:
                judged.append(bool(holds(m, {**runs.at, **p})))
            except _Missing:
                continue
        return sum(judged) / len(judged) if judged else math.nan

    return Quantity(text, pooled=pooled, domain=FRACTION, unit="of the rates")


def collect(keys: Sequence[float], fn: Callable[[float], float]) -> dict[float, float]:
    """``fn(k)`` for each of ``keys`` whose points have runs."""
    out = {}
    for k in keys:
        try:
            out[k] = fn(k)
        except _Missing:
            continue
    return out


def ratio(a: float, b: float) -> float:
    """a / b of two means, b positive (else the ratio is not judged)."""
    if not (a >= 0 and b > 0):
        raise _Missing((a, b))
    return a / b


def spread(m: Mean, q: Quantity, points: Sequence[Point]) -> float:
    """max / min of ``q``'s means over the points present (two at least)."""
    v = []
    for p in points:
        try:
            v.append(m(q, p))
        except _Missing:
            continue
    if len(v) < 2 or min(v) <= 0:
        raise _Missing(points)
    return max(v) / min(v)


def extreme(values: dict[float, float], need: float, largest: bool = False) -> float:
    """The key of the smallest (``largest``: the largest) value, provided
    the key the paper names (``need``) is among them, and another."""
    if need not in values or len(values) < 2:
        raise _Missing(need)
    pick = max if largest else min
    return pick(values, key=lambda k: values[k])


RATE_POINTS = [rate(r) for r in RATES]
RATES_TO_40 = [rate(r) for r in RATES if r <= 40]


def _majority(claim: str) -> str:
    return (
        f"{claim}; the paper states it as its general trend over the rates (Sec. IV, 'in most "
        "cases', 'the general trend'), so it must hold at 5 of the 8 rates at least"
    )


# --------------------------------------------------------------------------- fig2


def _fct_grows_with_buffer(m: Mean, p: Point) -> bool:
    return m(FCT, at(p, CUBIC_CUBIC, buf(8))) >= MUCH * m(FCT, at(p, CUBIC_CUBIC, buf(1)))


def _bbr_bbr_consistent(q: Quantity, limit: float) -> Callable[[Mean, Point], bool]:
    return lambda m, p: spread(m, q, [at(p, BBR_BBR, buf(b)) for b in BUFFERS]) <= limit


def _between_baselines(m: Mean, p: Point) -> bool:
    mixed = m(FCT, at(p, CUBIC_BBR, buf(8)))
    return (
        mixed >= DIRECTION * m(FCT, at(p, BBR_BBR, buf(8)))
        and mixed <= m(FCT, at(p, CUBIC_CUBIC, buf(8))) / DIRECTION
    )


def _longer_smaller_buffer(m: Mean, p: Point) -> bool:
    steps = list(collect([2, 1, 0.5], lambda b: m(FCT, at(p, BBR_CUBIC, buf(b)))).values())
    if len(steps) < 2:
        raise _Missing(p)
    return all(smaller >= DIRECTION * larger for larger, smaller in itertools.pairwise(steps))


def _slowed_up_to_1bdp(m: Mean, p: Point) -> bool:
    ratios = collect(
        [0.5, 1], lambda b: ratio(m(FCT, at(p, BBR_CUBIC, buf(b))), m(FCT, at(p, CUBIC_CUBIC, buf(b))))
    )
    if not ratios:
        raise _Missing(p)
    return all(x >= MUCH for x in ratios.values())


def _small_bbr_like_large_cubic(m: Mean, p: Point) -> bool:
    bbr = np.mean([m(FCT, at(p, BBR_CUBIC, buf(b))) for b in (0.5, 1)])
    cubic = np.mean([m(FCT, at(p, CUBIC_CUBIC, buf(b))) for b in (4, 8)])
    return bool(CLOSE[0] <= ratio(float(bbr), float(cubic)) <= CLOSE[1])


def _closest_buffer(m: Mean, p: Point) -> float:
    """The buffer (BDP) where the medium CUBIC flows' FCT beside a large BBR
    flow is closest to theirs beside a large CUBIC flow: the mean over the
    rates of |ln(BBR-cubic / CUBIC-cubic)|, smallest."""

    def distance(b: float) -> float:
        def log_ratio(r: float) -> float:
            x = ratio(m(FCT, at(BBR_CUBIC, buf(b), rate(r))), m(FCT, at(CUBIC_CUBIC, buf(b), rate(r))))
            return abs(math.log(x)) if x > 0 else math.inf

        logs = collect(RATES, log_ratio)
        if not logs:
            raise _Missing(b)
        return float(np.mean(list(logs.values())))

    return extreme(collect(BUFFERS, distance), need=2)


add(
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2",
        "all-CUBIC: the medium flows take much longer in a large buffer than in a 1 BDP one "
        "(the large CUBIC flow's queue stretches every RTT)",
        "longer the larger the buffer (no number in the text)",
        Threshold(
            share_of(
                "fraction of the rates where CUBIC-cubic medium FCT at 8 BDP >= 1.5 x at 1 BDP",
                RATE_POINTS,
                _fct_grows_with_buffer,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority(
            "1.5 is the vocabulary's 'much'; 1 BDP is the reference, since at 0.5 BDP the large "
            "CUBIC flow under-uses the link (Sec. VI-A) and shortens FCT for another reason"
        ),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2; Sec. IX",
        "all-BBR: the medium flows' completion time is about the same at every buffer",
        "consistent with respect to buffer size",
        Threshold(
            share_of(
                "fraction of the rates where BBR-bbr medium FCT's max / min over the buffers <= 1.25",
                RATE_POINTS,
                _bbr_bbr_consistent(FCT, CONSISTENT),
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("1.25 is the vocabulary's 'consistent'"),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2",
        "in a large buffer, medium BBR flows beside a large CUBIC flow are slowed (against "
        "all-BBR), but less than medium CUBIC flows are (all-CUBIC)",
        "longer than BBR-bbr, not as pronounced as CUBIC-cubic",
        Threshold(
            share_of(
                "fraction of the rates where CUBIC-bbr medium FCT at 8 BDP >= 1.1 x BBR-bbr's "
                "and <= CUBIC-cubic's / 1.1",
                RATE_POINTS,
                _between_baselines,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("directions only, so the vocabulary's 1.1 each way; 8 BDP is the largest buffer"),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2",
        "with a large BBR flow, the medium CUBIC flows take longer the smaller the buffer (2, 1, 0.5 BDP)",
        "the general trend for BBR-cubic (no number)",
        Threshold(
            share_of(
                "fraction of the rates where BBR-cubic medium FCT grows >= 1.1 x with each step "
                "down from 2 to 1 to 0.5 BDP",
                RATE_POINTS,
                _longer_smaller_buffer,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority(
            "a direction, 1.1 a step; above 2 BDP the trend is not claimed (the bigger buffers "
            "reverse it, Sec. VI-B); the steps present in the run (the quick form: 2 to 0.5 BDP)"
        ),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. VII, Fig. 2",
        "up to a 1 BDP buffer, a large BBR flow slows the medium CUBIC flows significantly more "
        "than a large CUBIC flow does",
        "a significant increase in completion time at buffers up to 1 BDP",
        Threshold(
            share_of(
                "fraction of the rates where BBR-cubic medium FCT >= 1.5 x CUBIC-cubic's at 0.5 and 1 BDP",
                RATE_POINTS,
                _slowed_up_to_1bdp,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("1.5 is the vocabulary's 'significant'"),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2",
        "the medium CUBIC flows' completion time beside a large BBR flow at 0.5-1 BDP is "
        "comparable to theirs beside a large CUBIC flow at 4-8 BDP",
        "comparable",
        Threshold(
            share_of(
                "fraction of the rates where mean BBR-cubic medium FCT at 0.5 and 1 BDP over mean "
                "CUBIC-cubic's at 4 and 8 BDP is in [0.67, 1.5]",
                RATE_POINTS,
                _small_bbr_like_large_cubic,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("[0.67, 1.5] is the vocabulary's 'comparable'"),
    ),
    Finding(
        "mixed-workload/fig2",
        "mixed-workload, Sec. IV, Fig. 2",
        "of the buffers tested, 2 BDP makes the 1 MB CUBIC flows' completion time beside a large "
        "BBR flow closest to theirs beside a large CUBIC flow",
        "2 BDP (as the 2 BDP advice for large BBR vs large CUBIC flows)",
        Band(
            across(
                "the buffer (BDP) where |ln(BBR-cubic / CUBIC-cubic medium FCT)|, averaged over the "
                "rates, is smallest",
                _closest_buffer,
                (min(BUFFERS), max(BUFFERS)),
                "BDP",
            ),
            {},
            2,
            2,
            why="the paper names the buffer; the log ratio counts longer and shorter alike, averaged "
            "over the rates (8 means of 10 runs each), so no tolerance; among the buffers the run has",
        ),
        KERNEL,
    ),
)


# --------------------------------------------------------------------------- fig3


def _lt_ratio_cubic_large(b: float, limit: float) -> Callable[[Mean, Point], bool]:
    return lambda m, p: m(LT, at(p, CUBIC_BBR, buf(b))) <= limit * m(LT, at(p, CUBIC_CUBIC, buf(b)))


def _cubic_shallow_loss(m: Mean, p: Point) -> bool:
    return m(LT, at(p, CUBIC_CUBIC, buf(0.5))) <= m(LT, at(p, CUBIC_CUBIC, buf(2))) / DIRECTION


def _bbr_gains_shallow(m: Mean, p: Point) -> bool:
    return m(LT, at(p, BBR_CUBIC, buf(0.5))) >= DIRECTION * m(LT, at(p, CUBIC_CUBIC, buf(0.5)))


add(
    Finding(
        "mixed-workload/fig3",
        "mixed-workload, Sec. IV, Fig. 3; Sec. V-A",
        "at 0.5 BDP, medium BBR flows leave the large CUBIC flow far less throughput than medium "
        "CUBIC flows do",
        "much more significant reduction; 'a very small share' of the capacity",
        Each(
            lambda p: Compare(LT, at(p, CUBIC_BBR), "<=", LT, at(p, CUBIC_CUBIC), 1 / VERY, ratio=True),
            tuple(at(buf(0.5), r) for r in RATES_TO_40),
        ),
        KERNEL,
        "a factor of 2, the vocabulary's 'very'; at 5-40 Mbit/s, the rates up to the 1 MB flows' "
        "utilization dip, over which Sec. V-B explains it (it says nothing of 1 MB above 40)",
    ),
    Finding(
        "mixed-workload/fig3",
        "mixed-workload, Sec. V-A, Fig. 3",
        "at 1 BDP too, medium BBR flows cut the large CUBIC flow's throughput substantially",
        "a substantial reduction at buffers up to 1 BDP",
        Threshold(
            share_of(
                "fraction of the rates 5-40 Mbit/s where CUBIC-bbr large-flow goodput at 1 BDP "
                "<= 0.67 x CUBIC-cubic's",
                RATES_TO_40,
                _lt_ratio_cubic_large(1, 1 / MUCH),
            ),
            {},
            ">=",
            3 / 5,
        ),
        KERNEL,
        "0.67 is the vocabulary's 'substantial'; Sec. IV is more careful at 1 BDP ('for some "
        "bandwidths'), so 3 of the 5 rates up to 40 Mbit/s",
    ),
    Finding(
        "mixed-workload/fig3",
        "mixed-workload, Sec. IV, Fig. 3; Sec. VII",
        "medium CUBIC flows cost a large CUBIC flow noticeable throughput at 0.5 BDP, against a 2 BDP buffer",
        "noticeable reduction at 0.5 BDP in most cases; no problem from 1 BDP up",
        Threshold(
            share_of(
                "fraction of the rates where CUBIC-cubic large-flow goodput at 0.5 BDP <= 0.9 x at 2 BDP",
                RATE_POINTS,
                _cubic_shallow_loss,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("0.9 is the vocabulary's 'noticeable'; at 2 BDP Sec. VII finds no throughput problem"),
    ),
    Finding(
        "mixed-workload/fig3",
        "mixed-workload, Sec. IV, Fig. 3",
        "a large BBR flow beside medium BBR flows gets about the same throughput at every buffer",
        "consistent with respect to buffer size",
        Threshold(
            share_of(
                "fraction of the rates where BBR-bbr large-flow goodput's max / min over the buffers <= 1.25",
                RATE_POINTS,
                _bbr_bbr_consistent(LT, CONSISTENT),
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("1.25 is the vocabulary's 'consistent'"),
    ),
    Finding(
        "mixed-workload/fig3",
        "mixed-workload, Sec. IV, Fig. 3",
        "in a small buffer a large BBR flow gains throughput at the medium CUBIC flows' expense, "
        "more than a large CUBIC flow gets there",
        "improved throughput in small buffers (no number)",
        Threshold(
            share_of(
                "fraction of the rates where BBR-cubic large-flow goodput at 0.5 BDP >= 1.1 x CUBIC-cubic's",
                RATE_POINTS,
                _bbr_gains_shallow,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority(
            "a direction, 1.1; 'improved' read against the large CUBIC flow in the same buffer "
            "(against BBR in larger buffers it would contradict BBR-bbr's consistency)"
        ),
    ),
)


# --------------------------------------------------------------------------- fig4


def _cubic_shallow_util(m: Mean, p: Point) -> bool:
    return m(U, at(p, CUBIC_CUBIC, buf(0.5))) <= m(U, at(p, CUBIC_CUBIC, buf(2))) - U_DIRECTION


def _bbr_lowers_util_1bdp(m: Mean, p: Point) -> bool:
    return m(U, at(p, CUBIC_BBR, buf(1))) <= m(U, at(p, CUBIC_CUBIC, buf(1))) - U_NOTICEABLE


add(
    Finding(
        "mixed-workload/fig4",
        "mixed-workload, Sec. IV, Fig. 4",
        "all-CUBIC: a 0.5 BDP buffer leaves the link less used than a 2 BDP one (the medium flows "
        "do not make up for what the large flow loses)",
        "a reduction in utilization at 0.5 BDP, with the large flow's noticeable loss",
        Threshold(
            share_of(
                "fraction of the rates where CUBIC-cubic utilization at 0.5 BDP <= at 2 BDP - 0.03",
                RATE_POINTS,
                _cubic_shallow_util,
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority(
            "'a reduction', a direction: the vocabulary's 0.03 of utilization (the throughput loss "
            "behind it is 'noticeable', the utilization's is given no size)"
        ),
    ),
    Finding(
        "mixed-workload/fig4",
        "mixed-workload, Sec. VII, Fig. 4",
        "all-CUBIC with a buffer of 1 BDP or more keeps the link well used",
        "no real utilization problem from 1 BDP up",
        Each(
            lambda p: Threshold(U, at(CUBIC_CUBIC, p), ">=", 0.9),
            tuple(at(buf(b), rate(r)) for b in BUFFERS if b >= 1 for r in RATES),
        ),
        KERNEL,
        "0.9 is 'fills the link' below the payload's ceiling of about 0.965 (1448 of 1500 bytes); "
        "one CUBIC flow needs about 0.43 BDP of buffer to stay busy through its 0.7 back-off",
    ),
    Finding(
        "mixed-workload/fig4",
        "mixed-workload, Sec. V-B, V-C, Fig. 4",
        "at 40 Mbit/s and 0.5 BDP, 1 MB BBR flows beside a large CUBIC flow leave the link clearly "
        "less used than 1 MB CUBIC flows",
        "the lowest utilization for 1 MB flows ('very low') is at 40 Mbit/s, 0.5 BDP",
        Compare(
            U,
            at(CUBIC_BBR, buf(0.5), rate(40)),
            "<=",
            U,
            at(CUBIC_CUBIC, buf(0.5), rate(40)),
            -U_MUCH,
        ),
        KERNEL,
        "0.1 is the vocabulary's 'significant' in utilization",
    ),
    Finding(
        "mixed-workload/fig4",
        "mixed-workload, Sec. IV, Fig. 4",
        "at 1 BDP, medium BBR flows beside a large CUBIC flow noticeably lower utilization at some rates",
        "noticeable reductions for some bandwidths, buffers up to 1 BDP",
        Threshold(
            share_of(
                "fraction of the rates where CUBIC-bbr utilization at 1 BDP <= CUBIC-cubic's - 0.05",
                RATE_POINTS,
                _bbr_lowers_util_1bdp,
            ),
            {},
            ">",
            0,
        ),
        KERNEL,
        "'some' rates: one at least; 0.05 is the vocabulary's 'noticeable' in utilization",
    ),
    Finding(
        "mixed-workload/fig4",
        "mixed-workload, Sec. IX, Fig. 4",
        "all-BBR traffic keeps the link about equally used at every buffer",
        "exceptional consistency over rates and buffers",
        Threshold(
            share_of(
                "fraction of the rates where BBR-bbr utilization's max / min over the buffers <= 1.1",
                RATE_POINTS,
                _bbr_bbr_consistent(U, 1.1),
            ),
            {},
            ">=",
            MOST,
        ),
        KERNEL,
        _majority("utilization near its ceiling leaves less room than FCT, so 1.1 rather than 1.25"),
    ),
)


# --------------------------------------------------------------------------- fig5

#: BDP + buffer at 40 Mbit/s, 45 ms and 0.5 BDP: 1.5 x 155 = 233 segments of
#: 1448 bytes; the paper says about 240 packets.
CAPACITY_40 = 240

add(
    Finding(
        "mixed-workload/fig5",
        "mixed-workload, Sec. V-A, Fig. 5a",
        "successive 1 MB BBR flows hold the large CUBIC flow's window to a very small share of the "
        "path's capacity (BDP + buffer)",
        "a very small share of about 240 packets",
        Threshold(CWND_LARGE, SMALL_BBR, "<=", CAPACITY_40 / 4),
        KERNEL,
        "'a very small share': a quarter of the 240 packets at most (half the fair share)",
    ),
    Finding(
        "mixed-workload/fig5",
        "mixed-workload, Sec. V-A, Fig. 5",
        "the large CUBIC flow's window is much smaller beside medium BBR flows than beside medium "
        "CUBIC flows",
        "Fig. 5a against Fig. 5b; a substantial throughput reduction",
        Compare(CWND_LARGE, SMALL_BBR, "<=", CWND_LARGE, SMALL_CUBIC, 1 / MUCH, ratio=True),
        KERNEL,
        "0.67 is the vocabulary's 'substantial'; one run a point, as the paper shows, its median "
        "over hundreds of samples",
    ),
)


# --------------------------------------------------------------------------- fig6

SIZES = ["500KB", "1MB", "2MB"]


def _lt_bbr_over_cubic(m: Mean, p: Point) -> float:
    return ratio(m(LT, at(p, SMALL_BBR)), m(LT, at(p, SMALL_CUBIC)))


LT_RATIO = across(
    "large-flow goodput beside medium BBR flows / beside medium CUBIC flows", _lt_bbr_over_cubic, NONNEG
)


def _hurt_up_to(m: Mean, p: Point) -> float:
    """The highest rate (Mbit/s) where medium BBR flows of this size leave
    the large CUBIC flow at most half its goodput beside medium CUBIC flows;
    0 where they never do."""
    ratios = collect(RATES, lambda r: _lt_bbr_over_cubic(m, at(p, rate(r))))
    if len(ratios) < 2:
        raise _Missing(p)
    hurt = [r for r, x in ratios.items() if x <= 1 / VERY]
    return float(max(hurt, default=0))


HURT_UP_TO = across(
    "the highest rate where medium BBR flows leave the large CUBIC flow <= 0.5 x its goodput "
    "beside CUBIC ones",
    _hurt_up_to,
    (0, max(RATES)),
    "Mbit/s",
)

add(
    Finding(
        "mixed-workload/fig6",
        "mixed-workload, Sec. V-B, Fig. 6",
        "at low rates, medium BBR flows of every size leave the large CUBIC flow very little, "
        "against medium CUBIC flows of the same size",
        "a very small capacity left for the large flow at low rates",
        Each(
            lambda p: Compare(LT, at(p, SMALL_BBR), "<=", LT, at(p, SMALL_CUBIC), 1 / VERY, ratio=True),
            tuple(at(size(s), rate(r)) for s in SIZES for r in (5, 10)),
        ),
        KERNEL,
        "a factor of 2, the vocabulary's 'very'; 5 and 10 Mbit/s are below every size's dip",
    ),
    Finding(
        "mixed-workload/fig6",
        "mixed-workload, Sec. V-B, Fig. 6",
        "the larger the medium BBR flows, the higher the rates up to which they hurt the large CUBIC flow",
        "the effect reaches higher and higher rates as the size grows",
        Each(
            lambda p: Compare(
                HURT_UP_TO, p, ">", HURT_UP_TO, size(SIZES[SIZES.index(p["flows.1.size"]) - 1])
            ),
            (size("1MB"), size("2MB")),
        ),
        KERNEL,
        "'hurt' is the first finding's factor of 2 against medium CUBIC flows; strictly higher with "
        "each size, as the paper's 'higher and higher' (the dips at 20, 40 and 60 Mbit/s agree)",
    ),
    Finding(
        "mixed-workload/fig6",
        "mixed-workload, Sec. V-B, Fig. 6",
        "at high rates, 500 KB BBR flows barely hurt the large CUBIC flow: they finish in the "
        "capacity it leaves unused",
        "their impact is reduced at higher bandwidths (no number)",
        Each(
            lambda p: Band(LT_RATIO, p, *CLOSE, why="the vocabulary's 'comparable'"),
            tuple(at(size("500KB"), rate(r)) for r in (50, 60, 70)),
        ),
        KERNEL,
        "derived from the explanation, not read off the figure: the large flow's goodput "
        "comparable with either medium CCA, from 50 Mbit/s (well above 500 KB's dip at 20)",
    ),
)


# --------------------------------------------------------------------------- fig7

DIPS = {"500KB": 20, "1MB": 40, "2MB": 60}


def _dip(m: Mean, p: Point) -> float:
    """The rate (Mbit/s) of the lowest utilization with medium BBR flows of
    this size; needs the rate the paper names and its neighbours."""
    need = DIPS[str(p["flows.1.size"])]
    u = collect(RATES, lambda r: m(U, at(p, SMALL_BBR, rate(r))))
    if not all(r in u for r in RATES if abs(r - need) <= 10):
        raise _Missing(p)
    return extreme(u, need)


DIP = across(
    "the rate of the lowest utilization with medium BBR flows", _dip, (min(RATES), max(RATES)), "Mbit/s"
)

add(
    Finding(
        "mixed-workload/fig7",
        "mixed-workload, Sec. V-B, Fig. 7",
        "with medium BBR flows the utilization dips at one rate that depends on their size",
        "20 Mbit/s for 500 KB, 40 for 1 MB, 60 for 2 MB",
        Each(
            lambda p: Band(
                DIP,
                p,
                DIPS[p["flows.1.size"]] - 10,
                DIPS[p["flows.1.size"]] + 10,
                why="one step of the 10 Mbit/s grid either way (a dip's flat bottom, means of 10 runs)",
            ),
            tuple(size(s) for s in SIZES),
        ),
        KERNEL,
        "the paper's three rates; not checked where the run lacks the rate and its neighbours",
    ),
    Finding(
        "mixed-workload/fig7",
        "mixed-workload, Sec. V-B, Fig. 7",
        "the utilization dip moves to higher rates as the medium BBR flows get larger",
        "20, 40, 60 Mbit/s for 500 KB, 1 MB, 2 MB",
        Each(
            lambda p: Compare(DIP, p, ">", DIP, size(SIZES[SIZES.index(p["flows.1.size"]) - 1])),
            (size("1MB"), size("2MB")),
        ),
        KERNEL,
        "the order is the paper's explanation (a larger flow stays longer in steady state), so it "
        "must hold exactly",
    ),
    Finding(
        "mixed-workload/fig7",
        "mixed-workload, Sec. V-B, Fig. 7",
        "at its dip, medium BBR traffic uses the link much less than medium CUBIC traffic of the same size",
        "very low utilization at the dip",
        Each(
            lambda p: Compare(U, at(p, SMALL_BBR), "<=", U, at(p, SMALL_CUBIC), -U_MUCH),
            tuple(at(size(s), rate(r)) for s, r in DIPS.items()),
        ),
        KERNEL,
        "0.1 is the vocabulary's 'significant' in utilization",
    ),
    Finding(
        "mixed-workload/fig7",
        "mixed-workload, Sec. V-B, Fig. 7",
        "at low rates, medium BBR flows of every size keep the link busy (they reach steady state "
        "quickly and send near the link's rate)",
        "high utilization at low bandwidths",
        Each(
            lambda p: Threshold(U, at(p, SMALL_BBR), ">=", 0.9),
            tuple(at(size(s), rate(5)) for s in SIZES),
        ),
        KERNEL,
        "0.9 is 'fills the link' below the payload's ceiling of about 0.965; 5 Mbit/s is below every dip",
    ),
)


# --------------------------------------------------------------------------- fig8


def _util_gap(m: Mean, g: float) -> float:
    return m(U, at(gap(g), SMALL_CUBIC)) - m(U, at(gap(g), SMALL_BBR))


def _widest_gap(m: Mean, p: Point) -> float:
    return extreme(collect(GAPS, lambda g: _util_gap(m, g)), need=0.9, largest=True)


def _long_over_short(m: Mean, p: Point) -> float:
    short = collect([g for g in GAPS if g <= 0.5], lambda g: _util_gap(m, g))
    if not short:
        raise _Missing(p)
    return _util_gap(m, 0.9) - max(short.values())


add(
    Finding(
        "mixed-workload/fig8",
        "mixed-workload, Sec. V-C, Fig. 8",
        "the utilization difference between medium CUBIC and medium BBR flows is largest at the "
        "longest interflow gap",
        "the biggest difference at the longest gap (0.9 s)",
        Band(
            across(
                "the gap (s) where utilization with CUBIC minus with BBR medium flows is largest",
                _widest_gap,
                (0, max(GAPS)),
                "s",
            ),
            {},
            0.8,
            0.9,
            why="the longest gap or its neighbour on the 0.1 s grid (two means of 10 runs within noise)",
        ),
        KERNEL,
    ),
    Finding(
        "mixed-workload/fig8",
        "mixed-workload, Sec. V-C, Fig. 8",
        "the difference at the longest gap exceeds every short gap's (up to 0.5 s) by more than noise",
        "the biggest difference at the longest gap",
        Threshold(
            across(
                "utilization difference (CUBIC - BBR medium flows) at 0.9 s minus its largest at "
                "gaps <= 0.5 s",
                _long_over_short,
                (-1, 1),
            ),
            {},
            ">=",
            U_DIRECTION,
        ),
        KERNEL,
        "0.03 is the vocabulary's direction margin in utilization",
    ),
    Finding(
        "mixed-workload/fig8",
        "mixed-workload, Sec. V-C, Fig. 8",
        "longer gaps between BBR medium flows do not let the large CUBIC flow recover much",
        "its cwnd grows little more in a long gap than in a short one",
        Band(
            across(
                "large-flow goodput beside BBR medium flows at a 0.9 s gap / at 0.1 s",
                lambda m, p: ratio(m(LT, at(SMALL_BBR, gap(0.9))), m(LT, at(SMALL_BBR, gap(0.1)))),
                NONNEG,
            ),
            {},
            0.9,
            MUCH,
            why="'not much greater' caps it at the vocabulary's 'much' (1.5); fewer BBR arrivals "
            "cannot plausibly hurt it more, the 0.9 below allows for noise",
        ),
        KERNEL,
        "the goodput stands for the cwnd the paper looks at",
    ),
    Finding(
        "mixed-workload/fig8",
        "mixed-workload, Sec. V-C, Fig. 8",
        "at the default 0.1 s gap, medium BBR flows leave the link much less used than medium CUBIC flows",
        "the bottleneck of the lowest utilization for 1 MB flows",
        Compare(U, at(SMALL_BBR, gap(0.1)), "<=", U, at(SMALL_CUBIC, gap(0.1)), -U_MUCH),
        KERNEL,
        "0.1 is the vocabulary's 'significant' in utilization",
    ),
)


# --------------------------------------------------------------------------- fig9

add(
    Finding(
        "mixed-workload/fig9",
        "mixed-workload, Sec. V-D, Fig. 9",
        "against other 1 MB CUBIC flows, the CUBIC flows' completion time does not change with the buffer",
        "does not vary with buffer size",
        Threshold(
            across(
                "the CUBIC flows' mean FCT against CUBIC flows: max / min over the buffers",
                lambda m, p: spread(m, FCT0, [at(SMALL_CUBIC, buf(b)) for b in BUFFERS]),
                (1, math.inf),
            ),
            {},
            "<=",
            CONSISTENT,
        ),
        KERNEL,
        "1.25 is the vocabulary's 'consistent'",
    ),
    Finding(
        "mixed-workload/fig9",
        "mixed-workload, Sec. V-D, Fig. 9",
        "against other 1 MB CUBIC flows, the completion times vary little at each buffer",
        "very limited variability",
        Each(lambda p: Threshold(CV0, at(SMALL_CUBIC, p), "<=", 0.25), tuple(buf(b) for b in BUFFERS)),
        KERNEL,
        "one loss recovery (1-2 RTTs) on a transfer of about 1 s is about 10%; 0.25 leaves room for "
        "an occasional timeout",
    ),
    Finding(
        "mixed-workload/fig9",
        "mixed-workload, Sec. V-D, Fig. 9",
        "against 1 MB BBR flows in the smallest buffer, the CUBIC flows' mean completion time is "
        "very high against CUBIC vs CUBIC",
        "a very high average completion time in small buffers",
        Compare(FCT0, at(SMALL_BBR, buf(0.5)), ">=", FCT0, at(SMALL_CUBIC, buf(0.5)), VERY, ratio=True),
        KERNEL,
        "a factor of 2, the vocabulary's 'very'",
    ),
    Finding(
        "mixed-workload/fig9",
        "mixed-workload, Sec. V-D, Fig. 9",
        "the same, in the direction at least, at a 1 BDP buffer",
        "'small buffers', plural, without sizes",
        Compare(FCT0, at(SMALL_BBR, buf(1)), ">=", FCT0, at(SMALL_CUBIC, buf(1)), DIRECTION, ratio=True),
        KERNEL,
        "1 BDP taken as the second small buffer, with the direction's 1.1 only",
    ),
    Finding(
        "mixed-workload/fig9",
        "mixed-workload, Sec. V-D, Fig. 9",
        "against BBR flows in the smallest buffer, the CUBIC flows' completion times spread far more "
        "than against CUBIC flows (by which flow arrives first)",
        "big variations, against very limited ones",
        Compare(CV0, at(SMALL_BBR, buf(0.5)), ">=", CV0, at(SMALL_CUBIC, buf(0.5)), VERY, ratio=True),
        KERNEL,
        "a factor of 2, the vocabulary's 'very'",
    ),
)


# --------------------------------------------------------------------------- fig10 to fig15


def _bbr_over_cubic(q: Quantity) -> Callable[[Mean, Point], float]:
    return lambda m, p: ratio(m(q, at(p, LARGE_BBR)), m(q, at(p, LARGE_CUBIC)))


FCT_RATIO = across(
    "the successive flows' FCT beside a large BBR flow / beside a large CUBIC flow",
    _bbr_over_cubic(FCT),
    NONNEG,
)
W_RATIO = across(
    "the medium flows' median cwnd beside a large BBR flow / beside a large CUBIC flow",
    _bbr_over_cubic(W),
    NONNEG,
)


def _fct_ratios(m: Mean) -> dict[float, float]:
    return collect(BUFFERS, lambda b: _bbr_over_cubic(FCT)(m, buf(b)))


def _shallowest_slowdown(m: Mean, p: Point) -> float:
    r = _fct_ratios(m)
    rest = [x for b, x in r.items() if b != 0.5]
    if 0.5 not in r or not rest:
        raise _Missing(p)
    return r[0.5] / max(rest)


def _fastest_buffer(m: Mean, p: Point) -> float:
    return extreme(_fct_ratios(m), need=8)


#: The sized CUBIC flows finish no later beside a large BBR flow than beside
#: a large CUBIC one, at 4 and 8 BDP (figs. 10 and 13 read it for 1 MB and
#: 100 KB flows).
SOONER_BESIDE_BBR_IN_BIG_BUFFERS = Each(
    lambda p: Compare(FCT, at(p, LARGE_BBR), "<=", FCT, at(p, LARGE_CUBIC), 1 / DIRECTION, ratio=True),
    (buf(4), buf(8)),
)

add(
    Finding(
        "mixed-workload/fig10",
        "mixed-workload, Sec. VI-A, Fig. 10",
        "a large BBR flow (against a large CUBIC flow) slows the 1 MB CUBIC flows most at 0.5 BDP",
        "the biggest increase in completion time at 0.5 BDP",
        Threshold(
            across(
                "FCT beside BBR / beside CUBIC at 0.5 BDP over its largest at the other buffers",
                _shallowest_slowdown,
                NONNEG,
            ),
            {},
            ">=",
            DIRECTION,
        ),
        KERNEL,
        "1.1, the direction margin, keeps a tie within noise from passing",
    ),
    Finding(
        "mixed-workload/fig10",
        "mixed-workload, Sec. VI-A, Fig. 10",
        "at 1 BDP, a large BBR flow makes the 1 MB CUBIC flows take significantly longer than a "
        "large CUBIC flow does",
        "significantly greater mean completion time at 1 BDP",
        Compare(FCT, at(LARGE_BBR, buf(1)), ">=", FCT, at(LARGE_CUBIC, buf(1)), MUCH, ratio=True),
        KERNEL,
        "1.5 is the vocabulary's 'significant'",
    ),
    Finding(
        "mixed-workload/fig10",
        "mixed-workload, Sec. IV, Sec. VI-A, Sec. VI-B, Fig. 10",
        "at 2 BDP, the 1 MB CUBIC flows' completion time beside a large BBR flow is comparable to "
        "theirs beside a large CUBIC flow",
        "2 BDP gives the most comparable times for 1 MB flows",
        Band(FCT_RATIO, buf(2), *CLOSE, why="the vocabulary's 'comparable'"),
        KERNEL,
        "unlike the 100 KB flows (fig13), the 1 MB flows are not slowed at 2 BDP",
    ),
    Finding(
        "mixed-workload/fig10",
        "mixed-workload, Sec. VI-B, Fig. 10",
        "in the big buffers, the 1 MB CUBIC flows finish sooner beside a large BBR flow than beside "
        "a large CUBIC flow (BBR builds no large queue)",
        "better completion times at bigger buffers",
        SOONER_BESIDE_BBR_IN_BIG_BUFFERS,
        KERNEL,
        "a direction, 0.9",
    ),
    Finding(
        "mixed-workload/fig11",
        "mixed-workload, Sec. VI-A, Fig. 11a",
        "at 1 BDP, a large BBR flow holds the 1 MB CUBIC flows' windows very low against a large CUBIC flow",
        "very low cwnd values at 1 BDP",
        Compare(W, at(LARGE_BBR, buf(1)), "<=", W, at(LARGE_CUBIC, buf(1)), 1 / VERY, ratio=True),
        KERNEL,
        "a factor of 2, the vocabulary's 'very'; the box plots' medians",
    ),
    Finding(
        "mixed-workload/fig11",
        "mixed-workload, Sec. VI-A, Fig. 11b",
        "at 2 BDP, the 1 MB CUBIC flows' windows beside a large BBR flow come close to theirs beside "
        "a large CUBIC flow",
        "much closer to the value beside large CUBIC flows",
        Band(W_RATIO, buf(2), *CLOSE, why="the vocabulary's 'close'"),
        KERNEL,
    ),
    Finding(
        "mixed-workload/fig12",
        "mixed-workload, Sec. VI-A, Fig. 12",
        "at 2 BDP the large BBR flow paces much lower for long stretches than at 1 BDP",
        "significantly lower pacing rate for long durations at 2 BDP",
        Compare(PACED_LOW, at(LARGE_BBR, buf(2)), ">=", PACED_LOW, at(LARGE_BBR, buf(1)), 0.15),
        KERNEL,
        "backed off: below 0.6 of the link, which BBRv1 reaches only when its max-bandwidth filter "
        "has decayed; 0.15 of its life (about 2 s of a 14-17 s transfer) is the least that reads as "
        "'long'",
    ),
    Finding(
        "mixed-workload/fig12",
        "mixed-workload, Sec. VI-A, Fig. 12",
        "at 1 BDP the large BBR flow keeps its pacing rate up beside the 1 MB CUBIC flows",
        "the high rate at 1 BDP, against 2 BDP",
        Threshold(PACED_LOW, at(LARGE_BBR, buf(1)), "<=", 0.1),
        KERNEL,
        "0.1 of its life allows for the short dip a loss recovery causes",
    ),
    Finding(
        "mixed-workload/fig12",
        "mixed-workload, Sec. VI-A, Fig. 12",
        "at 2 BDP the first 1 MB CUBIC flow is slowed most; the later ones use BBR's lower rate",
        "the first flow is typically impacted the most",
        Compare(
            FIRST_FCT, at(LARGE_BBR, buf(2)), ">=", REST_FCT, at(LARGE_BBR, buf(2)), DIRECTION, ratio=True
        ),
        KERNEL,
        "'typically', so means over the repeats, with the direction's 1.1",
    ),
    Finding(
        "mixed-workload/fig13",
        "mixed-workload, Sec. VI-B, Sec. VII, Sec. IX, Fig. 13",
        "at 2 BDP, 100 KB CUBIC flows take longer beside a large BBR flow than beside a large CUBIC "
        "flow (2 BDP is not enough for small flows)",
        "longer completion times at 2 BDP",
        Compare(FCT, at(LARGE_BBR, buf(2)), ">=", FCT, at(LARGE_CUBIC, buf(2)), DIRECTION, ratio=True),
        KERNEL,
        "a direction, 1.1; the 11-15 retransmissions a flow (fig14) mean a loss recovery of about an "
        "RTT on a transfer of a few RTTs, well above it",
    ),
    Finding(
        "mixed-workload/fig13",
        "mixed-workload, Sec. VI-B, Fig. 13",
        "at 1 BDP, a large BBR flow slows the 100 KB CUBIC flows significantly, as it does the 1 MB ones",
        "guided by the same interactions as the medium flows at 1 BDP",
        Compare(FCT, at(LARGE_BBR, buf(1)), ">=", FCT, at(LARGE_CUBIC, buf(1)), MUCH, ratio=True),
        KERNEL,
        "the medium flows' 'significantly greater' at 1 BDP (fig10): 1.5",
    ),
    Finding(
        "mixed-workload/fig13",
        "mixed-workload, Sec. VI-B, Fig. 13",
        "in the bigger buffers, 100 KB CUBIC flows finish sooner beside a large BBR flow",
        "better completion times at bigger buffers",
        SOONER_BESIDE_BBR_IN_BIG_BUFFERS,
        KERNEL,
        "a direction, 0.9",
    ),
    Finding(
        "mixed-workload/fig13",
        "mixed-workload, Sec. VI-B, Fig. 13",
        "the 100 KB flows gain most from a large BBR flow at the largest buffer",
        "the biggest improvement at 8 BDP",
        Band(
            across(
                "the buffer (BDP) where FCT beside BBR / beside CUBIC is smallest",
                _fastest_buffer,
                (min(BUFFERS), max(BUFFERS)),
                "BDP",
            ),
            {},
            8,
            8,
            why="the paper names the buffer; not checked without 8 BDP in the run",
        ),
        KERNEL,
    ),
    Finding(
        "mixed-workload/fig14",
        "mixed-workload, Sec. VI-B, Fig. 14b",
        "at 2 BDP, the 100 KB flows' median completion time is longer beside a large BBR flow than "
        "beside a large CUBIC flow",
        "the ECDF beside BBR lies to the right",
        Compare(
            fct_quantile(0.5),
            at(LARGE_BBR, buf(2)),
            ">=",
            fct_quantile(0.5),
            at(LARGE_CUBIC, buf(2)),
            DIRECTION,
            ratio=True,
        ),
        KERNEL,
        "a direction, 1.1, on the pooled flows (the ECDF's sample)",
    ),
    Finding(
        "mixed-workload/fig14",
        "mixed-workload, Sec. VI-B, Fig. 14b",
        "at 2 BDP, the upper quartile of the 100 KB flows' completion times is longer beside a large "
        "BBR flow too (a shift, not one tail)",
        "the ECDF beside BBR lies to the right",
        Compare(
            fct_quantile(0.75),
            at(LARGE_BBR, buf(2)),
            ">=",
            fct_quantile(0.75),
            at(LARGE_CUBIC, buf(2)),
            DIRECTION,
            ratio=True,
        ),
        KERNEL,
        "a direction, 1.1",
    ),
    Finding(
        "mixed-workload/fig14",
        "mixed-workload, Sec. VI-B, Fig. 14",
        "most 100 KB CUBIC flows beside a large BBR flow at 2 BDP retransmit 11 to 15 packets",
        "most between 11 and 15 retransmissions",
        Threshold(RETRANS_11_15, at(LARGE_BBR, buf(2)), ">", 0.5),
        KERNEL,
        "'most': more than half, in the paper's own range",
    ),
    Finding(
        "mixed-workload/fig14",
        "mixed-workload, Sec. VI-B, Fig. 14",
        "beside a large CUBIC flow at 2 BDP, no 100 KB flow retransmits but the first two",
        "none retransmits, except the first two flows",
        Threshold(NO_RETRANS, at(LARGE_CUBIC, buf(2)), ">=", 0.9),
        KERNEL,
        "'none', with 0.1 for a rare loss over 10 repeats of dozens of flows each",
    ),
    Finding(
        "mixed-workload/fig14",
        "mixed-workload, Sec. VI-B, Fig. 14b",
        "at 2 BDP, the 100 KB flows beside a large BBR flow complete within about BBR's 10-round "
        "max-bandwidth window, so it does not notice them",
        "completion times much closer to the 10-RTT filter window",
        Band(
            FCT_PER_WINDOW,
            at(LARGE_BBR, buf(2)),
            *CLOSE,
            why="'much closer to' the window read as about equal, the vocabulary's 'close'; a round "
            "as BBR counts it lasts the large flow's RTT with its queue, so its mean srtt",
        ),
        KERNEL,
    ),
    Finding(
        "mixed-workload/fig15",
        "mixed-workload, Sec. VI-B, Fig. 15",
        "at 2 BDP the large BBR flow keeps its pacing rate up beside the 100 KB CUBIC flows",
        "the sending rate remains high",
        Threshold(PACED_LOW, at(LARGE_BBR, buf(2)), "<=", 0.1),
        KERNEL,
        "fig12's measure and limit (below 0.6 of the link, 3 Mbit/s here, for at most 0.1 of its life)",
    ),
    Finding(
        "mixed-workload/fig15",
        "mixed-workload, Sec. VI-A, Sec. VI-B, Figs. 12 and 15",
        "unlike beside 1 MB flows, going from 1 to 2 BDP does not lower the large BBR flow's pacing rate",
        "high at 2 BDP, where with 1 MB flows it dropped",
        Compare(
            PACING, at(LARGE_BBR, buf(2)), ">=", PACING, at(LARGE_BBR, buf(1)), 1 / DIRECTION, ratio=True
        ),
        KERNEL,
        "the direction's 0.9 the other way: a noticeably lower rate at 2 BDP fails it",
    ),
)
