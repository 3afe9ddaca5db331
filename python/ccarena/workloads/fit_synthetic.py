"""Fit the trace-like workload model to the published facts of paper B.

    python -m ccarena.workloads.fit_synthetic [--check SECONDS]

prints the fitted ``TraceLikeModel`` (to paste into ``tracelike.py``), the
facts it gives analytically and, with ``--check``, the facts measured on a
sampled workload of that many seconds.

Method (numpy and the standard library only):

- fact 1 fixes the mixture: P(size <= 18.2 kB) = 0.9 is the body's weight,
  the tail starts at 18.2 kB;
- the body (lognormal, median 1 kB, sigma 1.5, truncated to [1 B, 18.2 kB])
  is assumed: the facts do not constrain it;
- facts 2 and 3 fix the tail's index alpha and upper bound H: for each
  alpha, H is found by bisection on log H so that 50% of the bytes are in
  flows > 280.7 MB (that share grows with H); then alpha by bisection so
  that 90% are in flows > 6.4 MB (that share, with H so adjusted, falls as
  alpha grows). Both shares are closed forms (the lognormal's and the
  bounded Pareto's partial expectations);
- fact 4 gives the arrival rate, lambda = 1.25 Gbit/s / 8 / mean size;
- fact 5 gives the per-flow rate r: mean flows active per 10 ms bin =
  lambda * 10 ms + load / r = 170.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from .tracelike import FACT_SIZES, FACTS, TRACE_LIKE, TraceLikeModel, measure_facts, trace_like

__all__ = ["fit", "main"]


def _bisect(f, lo: float, hi: float, iters: int = 200) -> float:
    flo = f(lo)
    if flo * f(hi) > 0:
        raise ValueError(f"no sign change in [{lo}, {hi}]")
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        fm = f(mid)
        if (fm < 0) == (flo < 0):
            lo, flo = mid, fm
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fit(
    body_median: float = 1000.0,
    body_sigma: float = 1.5,
    facts: dict[str, float] = FACTS,
    bin_s: float = 0.01,
) -> TraceLikeModel:
    """The model fitted to ``facts`` with the given (assumed) body."""
    base = TraceLikeModel(
        body_weight=1.0 - facts["flows_above_18.2kB"],
        split_bytes=float(FACT_SIZES["small"]),
        body_mu=math.log(body_median),
        body_sigma=body_sigma,
        body_min=1.0,
        tail_alpha=1.0,
        tail_max_bytes=1e10,
        flow_rate_bps=1.0,
        rate_bps=facts["mean_rate_bps"],
    )
    big, mid = FACT_SIZES["large"], FACT_SIZES["medium"]
    share_big, share_mid = facts["bytes_in_flows_above_280.7MB"], facts["bytes_in_flows_above_6.4MB"]

    def with_h(alpha: float) -> TraceLikeModel:
        def g(log_h: float) -> float:
            m = replace(base, tail_alpha=alpha, tail_max_bytes=math.exp(log_h))
            return m.bytes_share_above(big) - share_big

        log_h = _bisect(g, math.log(big * 1.0001), math.log(1e15))
        return replace(base, tail_alpha=alpha, tail_max_bytes=math.exp(log_h))

    alpha = _bisect(lambda a: with_h(a).bytes_share_above(mid) - share_mid, 0.05, 0.99, iters=100)
    m = with_h(alpha)
    lam = m.arrival_rate(facts["mean_rate_bps"])
    r = facts["mean_rate_bps"] / (facts["active_flows_10ms"] - lam * bin_s)
    return replace(m, flow_rate_bps=r)


def analytic_facts(m: TraceLikeModel, bin_s: float = 0.01) -> dict[str, float]:
    return {
        "flows_above_18.2kB": m.ccdf(FACT_SIZES["small"]),
        "bytes_in_flows_above_6.4MB": m.bytes_share_above(FACT_SIZES["medium"]),
        "bytes_in_flows_above_280.7MB": m.bytes_share_above(FACT_SIZES["large"]),
        "mean_rate_bps": m.rate_bps,
        "active_flows_10ms": m.active_flows(bin_s=bin_s),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", type=float, default=0.0, help="also sample a workload of this many seconds")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    m = fit()
    print("TRACE_LIKE = TraceLikeModel(")
    for k, v in m.__dict__.items():
        print(f"    {k}={v!r},")
    print(")")
    lam = m.arrival_rate()
    print(f"mean size {m.mean_size:.1f} B, arrival rate {lam:.2f} flows/s at {m.rate_bps:g} bit/s")
    print(f"{'fact':32} {'published':>12} {'model':>12}")
    for k, v in analytic_facts(m).items():
        print(f"{k:32} {FACTS[k]:12.4g} {v:12.4g}")
    stored = TRACE_LIKE.__dict__
    if any(not math.isclose(v, stored[k], rel_tol=1e-9) for k, v in m.__dict__.items()):
        print("note: differs from TRACE_LIKE in tracelike.py")
    if args.check:
        w = trace_like(args.check, seed=args.seed, model=m)
        print(f"sampled {len(w)} flows over {args.check:g} s (seed {args.seed}); facts on the second half:")
        for k, v in measure_facts(w, start_s=args.check / 2).items():
            print(f"  {k:32} {v:12.4g}")


if __name__ == "__main__":
    main()
