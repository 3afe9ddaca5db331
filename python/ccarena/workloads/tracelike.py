"""A synthetic workload like the WIDE/MAWI trace of paper B, for when no
capture is at hand.

Published facts about that trace (experiments.md, paper B, "Trace
workloads"), all of the Collapsed flows:

1. only 10% of flows are larger than 18.2 kB;
2. 90% of bytes belong to flows larger than 6.4 MB;
3. 50% of bytes belong to flows larger than 280.7 MB;
4. about 1.25 Gbit/s on average;
5. about 170 flows active at once at 10 ms granularity.

Model (``TraceLikeModel``):

- flow sizes: a two-part mixture with disjoint supports; with probability
  0.9 a lognormal body truncated to [1 B, 18.2 kB], with probability 0.1 a
  bounded Pareto tail on [18.2 kB, H] with index alpha. Fact 1 holds by
  construction; alpha and H are solved for facts 2 and 3. The body's
  parameters are not constrained by the facts: median 1 kB, sigma 1.5 are
  assumed (the body carries 0.6% of the bytes, so they move the mean size,
  and the arrival rate, by less than 1%).
- arrivals: a Poisson process of rate lambda = load / mean size (fact 4 in
  expectation; any other load can be asked for).
- activity: the trace's flows were limited elsewhere, so they do not send
  at once; each flow is taken to send at one common per-flow rate r, so it
  is active for size / r. A flow lasting D touches 1 + D / bin bins of
  10 ms on average, so the mean number of flows active in a bin is
  lambda * bin + load / r (Little's law); r is solved for fact 5. The
  activity (``duration_ns``) is descriptive: the scenarios made from the
  workload send each flow as fast as TCP can (paper B's Collapsed and
  Synthetic modes).

``python -m ccarena.workloads.fit_synthetic`` solves the parameters and
prints the constants stored in ``TRACE_LIKE`` (tracelike.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .model import Workload

__all__ = ["FACTS", "TRACE_LIKE", "TraceLikeModel", "measure_facts", "trace_like"]

#: The published facts (paper B) the model is fitted to: thresholds in bytes.
FACTS = {
    "flows_above_18.2kB": 0.10,
    "bytes_in_flows_above_6.4MB": 0.90,
    "bytes_in_flows_above_280.7MB": 0.50,
    "mean_rate_bps": 1.25e9,
    "active_flows_10ms": 170.0,
}
FACT_SIZES = {"small": 18_200, "medium": 6_400_000, "large": 280_700_000}


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class TraceLikeModel:
    """Flow sizes (bytes), arrivals and per-flow activity of a trace-like workload."""

    body_weight: float  # P(size <= split_bytes)
    split_bytes: float  # where the body ends and the tail begins
    body_mu: float  # lognormal body: log of the median (bytes), before truncation
    body_sigma: float
    body_min: float  # the body is truncated to [body_min, split_bytes]
    tail_alpha: float  # bounded Pareto tail on [split_bytes, tail_max_bytes]
    tail_max_bytes: float
    flow_rate_bps: float  # the rate at which a flow sends (its activity = size / rate)
    rate_bps: float = 1.25e9  # default offered load

    # ---------------------------------------------------------------- analytic
    def _body_z(self, x: float) -> float:
        return (math.log(x) - self.body_mu) / self.body_sigma

    def _body_mass(self) -> float:
        return _phi(self._body_z(self.split_bytes)) - _phi(self._body_z(self.body_min))

    def _body_partial_mean(self, lo: float, hi: float) -> float:
        """E[S; lo < S <= hi] of the (untruncated) lognormal."""
        s = self.body_sigma
        m = math.exp(self.body_mu + s * s / 2)
        return m * (_phi(self._body_z(hi) - s) - _phi(self._body_z(lo) - s))

    def _tail_partial_mean(self, x: float) -> float:
        """E[S; S > x] of the bounded Pareto, for split <= x <= max."""
        a, lo, hi = self.tail_alpha, self.split_bytes, self.tail_max_bytes
        c = a * lo**a / (1.0 - (lo / hi) ** a)
        if abs(a - 1.0) < 1e-12:
            return c * math.log(hi / x)
        return c * (hi ** (1 - a) - x ** (1 - a)) / (1 - a)

    def bytes_above(self, x: float) -> float:
        """E[S; S > x] of the mixture (bytes per flow in flows larger than x)."""
        w = self.body_weight
        lo, hi = self.split_bytes, self.tail_max_bytes
        tail = (1 - w) * self._tail_partial_mean(min(max(x, lo), hi))
        if x >= lo:
            return tail
        return tail + w * self._body_partial_mean(max(x, self.body_min), lo) / self._body_mass()

    @property
    def mean_size(self) -> float:
        return self.bytes_above(0.0)

    def bytes_share_above(self, x: float) -> float:
        """Share of all bytes in flows larger than ``x`` bytes."""
        return self.bytes_above(x) / self.mean_size

    def ccdf(self, x: float) -> float:
        """P(size > x)."""
        w, lo, hi, a = self.body_weight, self.split_bytes, self.tail_max_bytes, self.tail_alpha
        if x >= hi:
            return 0.0
        if x >= lo:
            return (1 - w) * ((lo / x) ** a - (lo / hi) ** a) / (1 - (lo / hi) ** a)
        if x < self.body_min:
            return 1.0
        body_cdf = (_phi(self._body_z(x)) - _phi(self._body_z(self.body_min))) / self._body_mass()
        return (1 - w) + w * (1 - body_cdf)

    def arrival_rate(self, rate_bps: float | None = None) -> float:
        """Flows per second for an offered load of ``rate_bps``."""
        return (rate_bps or self.rate_bps) / 8.0 / self.mean_size

    def active_flows(self, rate_bps: float | None = None, bin_s: float = 0.01) -> float:
        """Mean number of flows active in a bin of ``bin_s``: lambda * bin + load / r."""
        r = rate_bps or self.rate_bps
        return self.arrival_rate(r) * bin_s + r / self.flow_rate_bps

    # ---------------------------------------------------------------- sampling
    def sample_sizes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` flow sizes, integer bytes (>= 1), drawn with ``rng``."""
        is_tail = rng.random(n) >= self.body_weight
        out = np.empty(n, dtype=np.float64)
        k = int(is_tail.sum())
        # tail: inverse CDF of the bounded Pareto
        lo, hi, a = self.split_bytes, self.tail_max_bytes, self.tail_alpha
        u = rng.random(k)
        out[is_tail] = lo * (1.0 - u * (1.0 - (lo / hi) ** a)) ** (-1.0 / a)
        # body: the lognormal, redrawn where it falls outside [body_min, split]
        idx = np.flatnonzero(~is_tail)
        vals = np.empty(len(idx))
        todo = np.arange(len(idx))
        while len(todo):
            v = rng.lognormal(self.body_mu, self.body_sigma, len(todo))
            ok = (v >= self.body_min) & (v <= lo)
            vals[todo[ok]] = v[ok]
            todo = todo[~ok]
        out[idx] = vals
        # whole bytes; a tail draw is > split, so it never rounds back into the body
        z = np.ceil(out).astype(np.int64)
        z[~is_tail] = np.minimum(z[~is_tail], int(lo))
        return np.maximum(z, 1)


# Fitted by `python -m ccarena.workloads.fit_synthetic`: body weight and split from fact 1, tail alpha and
# upper bound by nested bisection on the closed-form byte shares of facts 2 and 3, the per-flow rate from
# fact 5 by Little's law; the body's median (1 kB) and sigma (1.5) are assumed (see the module doc).
# Mean size 290.0 kB, so 538.8 flows/s at 1.25 Gbit/s.
TRACE_LIKE = TraceLikeModel(
    body_weight=0.9,
    split_bytes=18_200.0,
    body_mu=math.log(1000.0),
    body_sigma=1.5,
    body_min=1.0,
    tail_alpha=0.5786661452837676,
    tail_max_bytes=1447376324.2851534,  # 1.45 GB
    flow_rate_bps=7593633.22364528,  # 7.6 Mbit/s
)


def trace_like(
    duration_s: float = 900.0,
    rate_bps: float | None = None,
    seed: int | np.random.Generator = 0,
    *,
    model: TraceLikeModel = TRACE_LIKE,
) -> Workload:
    """A trace-like workload: Poisson arrivals over ``duration_s`` at the rate
    that offers ``rate_bps`` on average (default the trace's 1.25 Gbit/s),
    sizes from ``model``. Columns ``start_ns``, ``size_bytes`` and
    ``duration_ns`` (the flow's activity, size / ``model.flow_rate_bps``).
    Vectorised: a 15-minute workload at 3 Gbit/s (about 1.1 M flows)
    takes about a second."""
    rng = np.random.default_rng(seed)
    rate = float(rate_bps or model.rate_bps)
    dur_ns = round(duration_s * 1e9)
    n = int(rng.poisson(model.arrival_rate(rate) * duration_s))
    # given their number, the arrival times of a Poisson process are uniform
    starts = np.sort(rng.integers(0, dur_ns, size=n, dtype=np.int64))
    sizes = model.sample_sizes(n, rng)
    active = np.round(sizes * (8e9 / model.flow_rate_bps)).astype(np.int64)
    flows = pd.DataFrame({"start_ns": starts, "size_bytes": sizes, "duration_ns": active})
    meta = {"model": "TRACE_LIKE" if model is TRACE_LIKE else repr(model), "rate_bps": rate}
    if isinstance(seed, int):
        meta["seed"] = seed
    return Workload(flows=flows, duration_ns=dur_ns, mode="trace-like", meta=meta)


def measure_facts(
    workload: Workload,
    *,
    start_s: float = 0.0,
    end_s: float | None = None,
    bin_s: float = 0.01,
) -> dict[str, float]:
    """The five facts measured on a workload, for the flows that start in
    [start, end) (default: the whole workload). Activity needs a
    ``duration_ns`` column: a flow is active from its start for that long and
    counts in every ``bin_s`` bin its activity touches (flows that started
    before ``start_s`` count too); without the column it is NaN."""
    t0 = round(start_s * 1e9)
    t1 = workload.duration_ns if end_s is None else round(end_s * 1e9)
    fl = workload.flows
    s = fl.start_ns.to_numpy(np.int64)
    inside = (s >= t0) & (s < t1)
    z = fl.size_bytes.to_numpy(np.int64)[inside].astype(np.float64)
    total = z.sum()
    out = {
        "flows_above_18.2kB": float((z > FACT_SIZES["small"]).mean()) if len(z) else math.nan,
        "bytes_in_flows_above_6.4MB": float(z[z > FACT_SIZES["medium"]].sum() / total),
        "bytes_in_flows_above_280.7MB": float(z[z > FACT_SIZES["large"]].sum() / total),
        "mean_rate_bps": float(total * 8e9 / (t1 - t0)),
        "active_flows_10ms": math.nan,
    }
    if "duration_ns" in fl.columns:
        b = round(bin_s * 1e9)
        d = fl.duration_ns.to_numpy(np.int64)
        e = s + d
        seen = (s < t1) & (e >= t0)
        first = (np.maximum(s[seen], t0) - t0) // b
        last = (np.minimum(e[seen], t1 - 1) - t0) // b
        nbins = (t1 - t0) / b
        out["active_flows_10ms"] = float((last - first + 1).sum() / nbins)
    out["flows"] = int(inside.sum())
    return out
