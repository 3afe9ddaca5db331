"""How the simulator is judged against the kernel, flow by flow and metric
by metric.

For each flow and metric the kernel's runs give a mean m_k and the
simulator's seeds a mean m_s. The tolerance (``TOLERANCE``) is

    delta = max(absolute, relative * |m_k|, of_link * the bottleneck's rate)

relative where values are small: a flow with 5% of the link is judged to
0.01 of the link (20% of its share), not to the 0.05 that would be all of
it. The relative parts are the kernel's own run-to-run spread: the 75th
percentile, over the matrix's flows, of the coefficient of variation of its
runs (share and goodput 9%, retransmission rate 21%, drops 18%, FCT 7%,
queueing delay 4%, docs/validation.md, "The criterion"), rounded up. A
difference inside it is one a study with one run per point could not see.

Three readings of each flow-metric, all in the table:

- ``agree`` (the headline): the point estimate, |m_s - m_k| <= delta.
- ``equivalence``: Welch's 90% interval of m_s - m_k (the two one-sided
  tests at 5%): ``"equivalent"`` when it lies inside [-delta, delta],
  ``"differs"`` when it lies wholly outside, ``"undecided"`` otherwise.
  Its power is stated by ``resolvable``: whether the interval is narrower
  than delta at all (with few kernel runs a noisy metric cannot be shown
  equivalent, however close the means).
- ``p_means``: the permutation test of equal means, and ``q_means`` it
  adjusted for the number of tests (Benjamini-Hochberg).

A flow agrees when each of its metrics does; it is shown equivalent when
each is, and shown to differ when any is.

The ceiling (``perfect_model``). The kernel's mean is itself an estimate
from a few runs, so even a model whose runs were drawn from the kernel's
own distribution would miss the tolerance on some flows. How often is
measured on the kernel's runs alone: each run in turn is held out and
compared with the mean of the others, the difference scaled by
sqrt((1/n + 1/s) / (1 + 1/(n-1))) (n kernel runs, s simulator seeds) so
that its spread is that of a perfect model's s-seed mean against the n-run
kernel mean (runs independent and alike); a flow's ceiling is the fraction
of held-out runs whose every metric falls within the tolerance. The
ceiling of a group is the agreement no model can be expected to beat with
this many runs.

Identical flows. Flows that differ only in their index (a ``count = 5``
entry) are interchangeable: which of them a run favours is a lottery on the
kernel and in the simulator alike. With ``identical_flows = "ranked"`` (the
default) each run's values of every metric are sorted within each class of
identical flows, largest first, and the class's k-th flow holds the k-th
largest value (the table's ``rank``, 1 = largest)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..stats import bh_adjust, permutation_p, t_quantile

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..results import Results
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = [
    "LEVEL",
    "METRICS",
    "TOLERANCE",
    "Judgment",
    "Tolerance",
    "flow_values",
    "judge",
    "perfect_model",
]


@dataclass(frozen=True)
class Tolerance:
    """delta = max(absolute, relative * |kernel mean|, of_link * link rate)."""

    absolute: float
    relative: float = 0.0
    #: A fraction of the bottleneck's rate (Mbit/s metrics).
    of_link: float = 0.0

    def at(self, kernel_mean: float, rate_mbps: float = math.nan) -> float:
        link = self.of_link * rate_mbps if self.of_link and math.isfinite(rate_mbps) else 0.0
        return max(self.absolute, self.relative * abs(kernel_mean), link)


#: metric -> tolerance. Shares are fractions of the total goodput; delays
#: in ms; FCT in s; drops in packets.
TOLERANCE: dict[str, Tolerance] = {
    "share": Tolerance(0.01, 0.10),
    "goodput_mbps": Tolerance(0.0, 0.10, of_link=0.01),
    "retrans_rate": Tolerance(0.0005, 0.25),
    "srtt_mean_ms": Tolerance(0.5, 0.05),
    "qdelay_ms": Tolerance(0.5, 0.10),
    "drops": Tolerance(10.0, 0.25),
    "fct_s": Tolerance(0.01, 0.10),
}
METRICS = list(TOLERANCE)
#: The equivalence reading's confidence: a 90% interval, two one-sided tests at 5%.
LEVEL = 0.90


def flow_values(res: Results) -> pd.DataFrame:
    """The judged metrics of every flow of one run that started (the Linux
    tables list a flow that never connected, with no segment counts; the
    simulator's leave it out)."""
    f = res.flows
    f = f[f["segs_sent"].notna()]
    total = float(f["goodput_mbps"].sum())
    # srtt as both backends can measure it (Results.sampled_srtt_ms)
    srtt = f["flow"].map(res.sampled_srtt_ms()).astype(float)
    return pd.DataFrame(
        {
            "flow": f["flow"].astype(int),
            "cc": f["cc"].astype(str),
            "rtt_ms": f["rtt_ms"].astype(float),
            "share": f["goodput_mbps"] / total if total > 0 else math.nan,
            "goodput_mbps": f["goodput_mbps"].astype(float),
            "retrans_rate": f["retrans_rate"].astype(float),
            "srtt_mean_ms": srtt,
            "qdelay_ms": srtt - f["rtt_ms"].astype(float),
            "drops": f["drops"].astype(float),
            "fct_s": f["fct_s"].astype(float),
        }
    )


def rank_within_classes(values: pd.DataFrame, classes: Sequence[Sequence[int]]) -> pd.DataFrame:
    """One run's ``flow_values`` with every metric sorted within each class
    of identical flows: the class's k-th flow present (by id) holds the k-th
    largest value (NaN last), and ``rank`` is k (1 = largest; NaN for a
    flow alone in its class). Metrics are sorted each on its own: the judge
    compares each metric's order statistics."""
    out = values.copy()
    out["rank"] = math.nan
    for ids in classes:
        rows = out.index[out["flow"].isin(ids)]
        if len(rows) < 2:
            continue
        rows = out.loc[rows].sort_values("flow").index
        for m in METRICS:
            v = out.loc[rows, m].to_numpy(dtype=float)
            out.loc[rows, m] = np.concatenate([-np.sort(-v[~np.isnan(v)]), v[np.isnan(v)]])
        out.loc[rows, "rank"] = np.arange(1, len(rows) + 1, dtype=float)
    return out


@dataclass(frozen=True)
class Judgment:
    """One flow-metric judged (see the module)."""

    sim_mean: float
    kernel_mean: float
    tolerance: float
    #: |sim_mean - kernel_mean| <= tolerance
    agree: bool
    #: Welch's ``LEVEL`` interval of sim_mean - kernel_mean (NaN without two runs a side)
    ci_low: float
    ci_high: float
    #: "equivalent", "differs" or "undecided"
    equivalence: str
    #: whether the interval is narrower than the tolerance (equivalence could be shown)
    resolvable: bool

    @property
    def diff(self) -> float:
        return self.sim_mean - self.kernel_mean


def _finite(values: Sequence[float]) -> list[float]:
    return [float(x) for x in values if x is not None and math.isfinite(x)]


def welch_interval(
    sim: Sequence[float], kernel: Sequence[float], level: float = LEVEL
) -> tuple[float, float]:
    """Welch's ``level`` interval of mean(sim) - mean(kernel): the
    difference +- t * se with the Welch-Satterthwaite degrees of freedom;
    (NaN, NaN) without two values a side."""
    s, k = np.asarray(_finite(sim)), np.asarray(_finite(kernel))
    if len(s) < 2 or len(k) < 2:
        return math.nan, math.nan
    d = float(s.mean() - k.mean())
    vs, vk = float(s.var(ddof=1)) / len(s), float(k.var(ddof=1)) / len(k)
    se = math.sqrt(vs + vk)
    if se == 0.0:
        return d, d
    df = (vs + vk) ** 2 / (vs**2 / (len(s) - 1) + vk**2 / (len(k) - 1))
    half = t_quantile(0.5 + level / 2.0, max(df, 1.0)) * se
    return d - half, d + half


def judge(sim: Sequence[float], kernel: Sequence[float], tol: Tolerance, rate_mbps: float) -> Judgment | None:
    """The three readings of one flow-metric; None where either side has no value."""
    s, k = _finite(sim), _finite(kernel)
    if not s or not k:
        return None
    ms, mk = float(np.mean(s)), float(np.mean(k))
    delta = tol.at(mk, rate_mbps)
    lo, hi = welch_interval(s, k)
    if math.isnan(lo):
        verdict, resolvable = "undecided", False
    else:
        resolvable = (hi - lo) / 2.0 < delta
        if -delta <= lo and hi <= delta:
            verdict = "equivalent"
        elif lo > delta or hi < -delta:
            verdict = "differs"
        else:
            verdict = "undecided"
    return Judgment(ms, mk, delta, abs(ms - mk) <= delta, lo, hi, verdict, resolvable)


def judge_cell(
    cell: Any,
    sims: Sequence[pd.DataFrame],
    kernels: Sequence[pd.DataFrame],
    tolerance: dict[str, Tolerance],
    ranked: bool,
    extra: dict[str, Any],
) -> list[dict[str, Any]]:
    """One row per flow and metric of ``cell``: the simulator's seeds' values
    (``sims``, one frame per seed) against the kernel's trustworthy runs'
    (``kernels``), each reading (``Judgment``) and the sides' spreads."""
    if ranked:
        classes = cell.classes()
        sims = [rank_within_classes(v, classes) for v in sims]
        kernels = [rank_within_classes(v, classes) for v in kernels]
    rows: list[dict[str, Any]] = []
    # A flow that started in only some runs (successive sized flows near
    # the end) is judged on the runs that have it.
    flows = sorted(set().union(*(set(s["flow"]) for s in sims)))
    for flow in flows:
        s_f = [s[s["flow"] == flow].iloc[0] for s in sims if (s["flow"] == flow).any()]
        k_f = [v[v["flow"] == flow].iloc[0] for v in kernels if (v["flow"] == flow).any()]
        for m in METRICS:
            sv = [float(x[m]) for x in s_f]
            kv = [float(x[m]) for x in k_f]
            j = judge(sv, kv, tolerance[m], cell.rate_mbps)
            if j is None:
                if all(math.isnan(x) for x in sv):
                    continue  # a metric the flow does not have (FCT of a bulk flow)
                nan = math.nan
                j = Judgment(nan, nan, nan, False, nan, nan, "undecided", False)
                missing = True
            else:
                missing = False
            sf, kf = _finite(sv), _finite(kv)
            rows.append(
                {
                    "cell": cell.id,
                    "group": cell.group,
                    "values": cell.label(),
                    "flow": int(flow),
                    # k: the k-th largest of its class of identical flows
                    "rank": float(s_f[0].get("rank", math.nan)),
                    "cc": str(s_f[0]["cc"]),
                    "rtt_ms": float(s_f[0]["rtt_ms"]),
                    "metric": m,
                    "sim_mean": j.sim_mean,
                    "sim_sd": float(np.std(sf, ddof=1)) if len(sf) > 1 else math.nan,
                    "sim_min": min(sf) if sf else math.nan,
                    "sim_max": max(sf) if sf else math.nan,
                    "linux_mean": j.kernel_mean,
                    "linux_sd": float(np.std(kf, ddof=1)) if len(kf) > 1 else math.nan,
                    "linux_min": min(kf) if kf else math.nan,
                    "linux_max": max(kf) if kf else math.nan,
                    "tolerance": j.tolerance,
                    "diff": j.diff,
                    "ci_low": j.ci_low,
                    "ci_high": j.ci_high,
                    # a metric the kernel did not give (no value in any
                    # run) cannot agree: it is judged apart
                    "agree": None if missing else j.agree,
                    "equivalence": j.equivalence,
                    "resolvable": j.resolvable,
                    "p_means": permutation_p(sv, kv),
                    "n_sim": len(sf),
                    "n_linux": len(kf),
                    **extra,
                }
            )
    return rows


def perfect_model(
    cell: Any,
    kernels: Sequence[pd.DataFrame],
    tolerance: dict[str, Tolerance],
    ranked: bool,
    n_sim: int,
    as_runs: int | None = None,
) -> list[dict[str, Any]]:
    """One row per flow of ``cell``: ``ceiling``, the fraction of the
    kernel's runs that, held out and scaled to stand for a perfect model's
    ``n_sim``-seed mean against the mean of ``as_runs`` kernel runs (by
    default as many as there are), agree with the mean of the others on
    every metric (see the module). Empty with fewer than three runs."""
    n = len(kernels)
    if n < 3:
        return []
    if ranked:
        classes = cell.classes()
        kernels = [rank_within_classes(v, classes) for v in kernels]
    scale = math.sqrt((1.0 / (as_runs or n) + 1.0 / n_sim) / (1.0 + 1.0 / (n - 1)))
    rows: list[dict[str, Any]] = []
    by_flow = [{int(r["flow"]): r for r in k.to_dict("records")} for k in kernels]
    for flow in sorted(set().union(*by_flow)):
        runs = [k[flow] for k in by_flow if flow in k]
        if len(runs) < 3:
            continue
        hits = []
        for i, held in enumerate(runs):
            ok = True
            for m in METRICS:
                rest = _finite([float(r[m]) for j, r in enumerate(runs) if j != i])
                x = float(held[m])
                if not rest or not math.isfinite(x):
                    continue
                ref = float(np.mean(rest))
                ok = ok and abs(x - ref) * scale <= tolerance[m].at(ref, cell.rate_mbps)
            hits.append(ok)
        rows.append(
            {
                "cell": cell.id,
                "group": cell.group,
                "flow": int(flow),
                "rank": float(runs[0].get("rank", math.nan)),
                "ceiling": float(np.mean(hits)),
            }
        )
    return rows


def finish(frame: pd.DataFrame) -> pd.DataFrame:
    """The table's columns that depend on every test at once (``q_means``)."""
    if not frame.empty:
        # Hundreds of flow-metrics are tested at once: the false discovery
        # rate says which small p are more than the number of tests.
        frame["q_means"] = bh_adjust(frame["p_means"].to_numpy())
    return frame


FLOW_COLUMNS = [
    "cell",
    "group",
    "values",
    "flow",
    "rank",
    "cc",
    "rtt_ms",
    "agree",
    "equivalent",
    "differs",
    "disagree",
]


def flow_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and flow: ``agree`` when every judged metric agrees
    (the names of those that do not in ``disagree``), ``equivalent`` when
    every one is shown equivalent, ``differs`` when any is shown to differ."""
    if frame.empty:
        return pd.DataFrame(columns=FLOW_COLUMNS)
    judged = frame[frame["agree"].notna()]
    keys = ["cell", "group", "values", "flow", "cc", "rtt_ms"]
    rows = []
    for key, g in judged.groupby(keys, sort=False):
        bad = g.loc[~g["agree"].astype(bool), "metric"].tolist()
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "rank": float(g["rank"].iloc[0]) if "rank" in g else math.nan,
                "agree": not bad,
                "equivalent": bool((g["equivalence"] == "equivalent").all()),
                "differs": bool((g["equivalence"] == "differs").any()),
                "disagree": ", ".join(bad),
            }
        )
    return pd.DataFrame(rows)[FLOW_COLUMNS]


def summary(flows: pd.DataFrame, frame: pd.DataFrame, ceiling: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group and over the matrix: flows, those that agree (and the
    fraction), shown equivalent, shown to differ, the flow-metrics whose
    equivalence could be shown at all (the reading's power) and, given the
    ``perfect_model`` rows, the ceiling: the agreement a model as good as
    the kernel's own runs would be expected to reach (NaN without them)."""
    if ceiling is not None and len(ceiling) and len(flows):
        ceiling = ceiling[ceiling["cell"].isin(set(flows["cell"]))]
    rows = []
    groups = [*dict.fromkeys(flows["group"]), None] if len(flows) else [None]
    for g in groups:
        f = flows if g is None else flows[flows["group"] == g]
        fm = frame if g is None else frame[frame["group"] == g]
        n = len(f)
        rows.append(
            {
                "group": "all" if g is None else g,
                "flows": n,
                "agree": int(f["agree"].sum()) if n else 0,
                "agree_fraction": float(f["agree"].mean()) if n else math.nan,
                "equivalent": int(f["equivalent"].sum()) if n else 0,
                "differs": int(f["differs"].sum()) if n else 0,
                "resolvable_fraction": float(fm["resolvable"].mean()) if len(fm) else math.nan,
                "ceiling": _ceiling_of(ceiling, g),
            }
        )
    return pd.DataFrame(rows)


def _ceiling_of(ceiling: pd.DataFrame | None, group: str | None) -> float:
    if ceiling is None or not len(ceiling):
        return math.nan
    c = ceiling if group is None else ceiling[ceiling["group"] == group]
    return float(c["ceiling"].mean()) if len(c) else math.nan
