"""Statistics on result frames: Jain's index, means with confidence
intervals (Student's t, without scipy), a permutation test of two means,
empirical CDFs, queueing delay in units of RTTmin. (analysis.py has FCT
slowdown and the SRPT ideal.)"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from . import _core
from .lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = [
    "bh_adjust",
    "ecdf",
    "jain",
    "mean_ci",
    "permutation_p",
    "qdelay_rttmin",
    "t_cdf",
    "t_quantile",
    "turnaround_median",
]

#: Where the median sits in a hosts' turnaround table (``[hosts] latency``:
#: values at the core's ``host_percentiles``).
_TURNAROUND_MEDIAN = _core.host_percentiles().index(50.0)


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index (RFC 5166), 1/n..1: (sum x)^2 / (n sum x^2) over
    the finite values; NaN when none is finite or all are zero. The core's
    definition (``_core.jain``), the one the simulator's summary uses."""
    return _core.jain([float(v) for v in values])


def turnaround_median(table: Iterable[float] | None) -> float:
    """The median of a hosts' turnaround table (values at the core's
    ``host_percentiles``, in whatever unit it holds); NaN for none."""
    values = list(table) if table is not None else []
    return float(values[_TURNAROUND_MEDIAN]) if values else math.nan


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on ``t_cdf``; |error| < 1e-10).
    ``t_quantile(0.975, 9)`` = 2.262, the factor of a 95% interval of 10 samples."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if df <= 0:
        raise ValueError("df must be positive")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


def mean_ci(
    values: Iterable[float], level: float = 0.95, bounds: tuple[float, float] | None = None
) -> tuple[float, float, float, int]:
    """(mean, low, high, n): the ``level`` confidence interval of the mean,
    mean ± t_{(1+level)/2, n-1} · s / sqrt(n). With one value the interval
    is the value itself.

    ``bounds`` = (lo, hi): the range the metric cannot leave (0..1 for a
    share, a utilization, Jain's index or a retransmission rate). The
    interval is then Student's t interval clipped to it: the mean of values
    in a range lies in that range, so the part of the interval outside it
    holds no possible mean. It is clipped rather than computed on a
    transformed scale (logit) because that scale is undefined at the bounds
    themselves, which runs reach (a lone flow's Jain index of exactly 1, a
    CCA's share of 0); where the t interval lies inside the range it is
    unchanged."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n == 1:
        return m, m, m, 1
    half = t_quantile(0.5 + level / 2.0, n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    low, high = m - half, m + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return m, low, high, n


#: Above this many ways to split the pooled values, ``permutation_p`` draws
#: this many splits instead of enumerating them.
PERMUTATIONS = 20000


def permutation_p(a: Iterable[float], b: Iterable[float]) -> float:
    """Two-sided permutation test of equal means: the fraction of the ways to
    split the pooled finite values into groups of len(a) and len(b) whose
    difference of means is at least as large as the observed one (the
    observed split included). Exact when there are at most
    ``PERMUTATIONS`` splits (5 seeds against 3 kernel runs: 56, smallest p
    1/56), otherwise ``PERMUTATIONS`` random splits from a fixed seed, so
    the same values give the same p, with the observed split counted
    among them (smallest p 1/20001). NaN when a side has no value."""
    x = np.asarray([v for v in a if v is not None and math.isfinite(v)], dtype=float)
    y = np.asarray([v for v in b if v is not None and math.isfinite(v)], dtype=float)
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return float("nan")
    pooled = np.concatenate([x, y])
    total = float(pooled.sum())
    # Splits differ in their mean difference only through the first group's
    # sum: d = s/n - (total - s)/m.
    observed = abs(x.sum() / n - (total - x.sum()) / m)
    eps = 1e-9 * max(1.0, float(np.abs(pooled).max()))
    exact = math.comb(n + m, n) <= PERMUTATIONS
    if exact:
        sums = np.array([pooled[list(c)].sum() for c in itertools.combinations(range(n + m), n)])
    else:
        rng = np.random.default_rng(0)
        idx = np.argsort(rng.random((PERMUTATIONS, n + m)), axis=1)[:, :n]
        sums = pooled[idx].sum(axis=1)
    far = int(np.sum(np.abs(sums / n - (total - sums) / m) >= observed - eps))
    # Drawn splits: the observed one counts among them, so p > 0.
    return far / len(sums) if exact else (far + 1) / (PERMUTATIONS + 1)


def bh_adjust(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p values (q): the smallest false
    discovery rate at which each test would count as a discovery
    (Benjamini and Hochberg, JRSS B 1995; valid under the positive
    dependence of metrics of one flow). NaN stays NaN and is not counted."""
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m == 0:
        return q
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    # The adjusted value of the k-th smallest: the least scaled p from k on.
    q[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return q


def ecdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite values and their cumulative fractions (i/n)."""
    x = np.sort(np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float))
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


def qdelay_rttmin(queue: pd.DataFrame, rate_mbps: float, rtt_min_ms: float) -> pd.Series:
    """Queueing delay in units of RTTmin from queue samples, as the BBRv3 paper
    computes it: queued bytes / bottleneck rate / RTTmin."""
    delay_ms = queue["backlog_bytes"] * 8.0 / (rate_mbps * 1e6) * 1e3
    return delay_ms / rtt_min_ms
