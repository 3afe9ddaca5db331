"""Quantities the findings are checked on, computed from a run's tables
(``findings.Quantity``): the run's summary, a flow's or a flow group's
metrics and share, queueing delay in units of RTTmin as the papers sample
it, a sample column's mean over a time window. A paper module builds the
rest of what its figures show from these, or from the tables directly."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..lazy import lazy
from .findings import Quantity, Runs

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..results import Results
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = [
    "FRACTION",
    "NONNEG",
    "flow_metric",
    "group_metric",
    "group_share",
    "qdelay_rttmin",
    "qdelay_rttmin_samples",
    "sample_mean",
    "summary",
]

#: Domains: a fraction of something, and a non-negative number.
FRACTION = (0.0, 1.0)
NONNEG = (0.0, math.inf)

#: Summary columns that are fractions (their domain is 0..1).
_FRACTIONS = {"utilization", "wire_utilization", "jain", "retrans_rate"}


def summary(metric: str) -> Quantity:
    """A column of the run's summary (one value per run)."""
    return Quantity(
        metric,
        per_run=lambda r: float(r.summary[metric].iloc[0]),
        domain=FRACTION if metric in _FRACTIONS else NONNEG,
    )


def _group_rows(r: Results, group: int | None, flow: int | None) -> pd.DataFrame:
    f = r.flows
    if flow is not None:
        return f[f["flow"] == flow]
    if group is not None:
        return f[f["group"] == group]
    return f


def flow_metric(metric: str, flow: int) -> Quantity:
    """A column of one flow's row of ``flows`` (``share``: its goodput over
    all the flows' summed goodput)."""
    return _rows_metric(metric, None, flow, f"flow {flow}'s {metric}")


def group_metric(metric: str, group: int) -> Quantity:
    """A ``[[flows]]`` entry's flows together: goodput summed, ``share`` of
    the total, the retransmission rate recomputed, other metrics averaged."""
    return _rows_metric(metric, group, None, f"group {group}'s {metric}")


def group_share(group: int) -> Quantity:
    return group_metric("share", group)


def _rows_metric(metric: str, group: int | None, flow: int | None, text: str) -> Quantity:
    def value(r: Results) -> float:
        rows = _group_rows(r, group, flow)
        if rows.empty:
            return math.nan
        if metric == "share":
            total = float(r.flows["goodput_mbps"].sum())
            return float(rows["goodput_mbps"].sum()) / total if total > 0 else math.nan
        if metric == "goodput_mbps" and group is not None:
            return float(rows["goodput_mbps"].sum())
        if metric == "retrans_rate":
            sent = float(rows["segs_sent"].sum())
            return float(rows["segs_retrans"].sum()) / sent if sent > 0 else math.nan
        return float(rows[metric].mean())

    domain = FRACTION if metric in ("share", "retrans_rate") else NONNEG
    return Quantity(text, per_run=value, domain=domain)


def qdelay_rttmin_samples(r: Results, after_s: float = 0.0, link: str | None = None) -> np.ndarray:
    """The queueing delay of every queue sample after ``after_s``, in units
    of the run's smallest base RTT: the backlog over the link's rate (the
    papers sample the queue, at 10 Hz, and divide by the rate)."""
    q = r.queue
    if link is not None:
        q = q[q["link"] == link]
    q = q[q["time_s"] > after_s]
    rate = float(r.summary["rate_mbps"].iloc[0]) * 1e6
    rtt = float(r.flows["rtt_ms"].min()) / 1e3
    return q["backlog_bytes"].to_numpy(dtype=float) * 8.0 / rate / rtt


def qdelay_rttmin(quantile: float, after_s: float = 0.0, pooled: bool = True) -> Quantity:
    """A quantile of the queueing delay in RTTmin (``qdelay_rttmin_samples``),
    pooled over the point's repetitions (as a paper's CDF pools them) or
    one value per run."""
    text = f"p{quantile * 100:g} queueing delay (RTTmin)"

    def of_runs(runs: Runs) -> float:
        values = [qdelay_rttmin_samples(r, after_s) for r in runs.results()]
        allv = np.concatenate(values) if values else np.array([])
        return float(np.quantile(allv, quantile)) if len(allv) else math.nan

    def of_run(r: Results) -> float:
        v = qdelay_rttmin_samples(r, after_s)
        return float(np.quantile(v, quantile)) if len(v) else math.nan

    if pooled:
        return Quantity(text, pooled=of_runs, domain=NONNEG, unit="RTTmin")
    return Quantity(text, per_run=of_run, domain=NONNEG, unit="RTTmin")


def sample_mean(
    column: str,
    *,
    flow: int | None = None,
    group: int | None = None,
    after_s: float = 0.0,
    before_s: float = math.inf,
    domain: tuple[float, float] = NONNEG,
) -> Quantity:
    """The mean of a ``samples`` column over a time window, of one flow or a
    group's flows (one value per run)."""
    who = f"flow {flow}" if flow is not None else (f"group {group}" if group is not None else "all flows")

    def value(r: Results) -> float:
        s = r.samples
        if flow is not None:
            s = s[s["flow"] == flow]
        elif group is not None:
            s = s[s["group"] == group]
        s = s[(s["time_s"] > after_s) & (s["time_s"] <= before_s)]
        return float(s[column].mean()) if len(s) else math.nan

    return Quantity(f"{who}'s mean {column} in ({after_s:g}, {before_s:g}] s", per_run=value, domain=domain)
