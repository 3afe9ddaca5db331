"""Figures, one module per kind, each drawn with matplotlib's object API (no
pyplot state, Agg) and written as PNG and SVG:

- ``cdf.plot_cdf``: empirical CDFs (per-flow throughput, utilization, FCT, queueing delay)
- ``heatmap.plot_heatmap``: two swept keys, colour = a metric, cells annotated
- ``timeseries.plot_timeseries`` / ``plot_panels``: goodput, cwnd, queue over time, BBR states shaded
- ``box.plot_box``: box plots per swept value
- ``mean.plot_mean``: means with 95% confidence intervals across repeats

``make_figure(experiment, kind, ...)`` picks sensible frames and columns for
``ccarena plot``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .box import plot_box
from .cdf import plot_cdf
from .common import PlotError
from .drawn import Drawn
from .heatmap import plot_heatmap
from .mean import plot_mean
from .timeseries import plot_panels, plot_run, plot_timeseries

__all__ = [
    "KINDS",
    "Drawn",
    "PlotError",
    "make_figure",
    "plot_box",
    "plot_cdf",
    "plot_heatmap",
    "plot_mean",
    "plot_panels",
    "plot_run",
    "plot_timeseries",
    "runs_with_shares",
]

KINDS = ("cdf", "heatmap", "timeseries", "box", "mean")


def runs_with_shares(exp: Any) -> pd.DataFrame:
    """The experiment's runs with ``share_<cc>`` columns: each CCA's part of
    the total goodput of the run (0..1), and ``goodput_<cc>_mbps``."""
    runs = exp.runs.copy()
    flows = exp.flows
    if flows.empty or "cc" not in flows:
        return runs
    per = flows.groupby(["run", "repeat", *exp.keys, "cc"], sort=False, dropna=False)["goodput_mbps"].sum()
    per = per.reset_index()
    pos: dict[Any, list[int]] = {}
    for i, r in enumerate(runs.itertuples(index=False)):
        pos.setdefault(r.run, []).append(i)
    for cc in pd.unique(flows["cc"]):
        runs[f"goodput_{cc}_mbps"] = float("nan")  # NaN: no flow of this CCA in the run
    for _, r in per.iterrows():
        for i in pos.get(r["run"], []):
            if runs.at[i, "repeat"] == r["repeat"]:
                runs.at[i, f"goodput_{r['cc']}_mbps"] = r["goodput_mbps"]
    total = sum(runs[f"goodput_{cc}_mbps"].fillna(0.0) for cc in pd.unique(flows["cc"]))
    for cc in pd.unique(flows["cc"]):
        runs[f"share_{cc}"] = runs[f"goodput_{cc}_mbps"] / total.where(total > 0)
    return runs


def _frame_for(exp: Any, metric: str) -> tuple[pd.DataFrame, str]:
    """The frame that has ``metric``: runs, flows, queue or samples."""
    runs = exp.runs
    if metric in runs.columns:
        return runs, "runs"
    if metric in exp.flows.columns:
        return exp.flows, "flows"
    if metric in exp.queue.columns:
        return exp.queue, "queue"
    if metric in exp.samples.columns:
        return exp.samples, "samples"
    if metric.startswith("share_") or (metric.startswith("goodput_") and metric != "goodput_mbps"):
        return runs_with_shares(exp), "runs"
    cols = sorted(set(runs.columns) | set(exp.flows.columns) | set(exp.queue.columns))
    raise PlotError(f"no metric {metric!r}; runs, flows and queue have: {', '.join(map(str, cols))}")


def _default_hue(exp: Any, where: str, x: str | None) -> str | None:
    keys = [k for k in exp.keys if k != x]
    if keys:
        return keys[0]
    return "cc" if where in ("flows",) and "cc" in exp.flows else None


def make_figure(
    exp: Any,
    kind: str,
    *,
    metric: str | None = None,
    x: str | None = None,
    y: str | None = None,
    hue: str | None = None,
    out: str | Path | None = None,
) -> Path:
    """Draw one figure of ``kind`` from an ``Experiment`` (a single run is a
    one-point experiment) and return the PNG's path; also writes the SVG and
    the plotted numbers as CSV beside it."""
    if kind not in KINDS:
        raise PlotError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if len(exp.runs) == 0:
        raise PlotError("the experiment has no finished runs")
    default_metric = {
        "cdf": "goodput_mbps",
        "heatmap": "jain",
        "box": "jain",
        "mean": "jain",
        "timeseries": "goodput_mbps,cwnd_pkts",
    }[kind]
    metric = metric or default_metric
    home = exp.run_dir(0) if exp.meta.get("single_run") else exp.path
    target = Path(out) if out else home / "figures" / f"{kind}-{metric.replace(',', '+')}.png"
    title = exp.name
    if kind == "timeseries":
        run_dir = exp.run_dir(0)
        res = exp.results(0)
        bbr = [int(f) for f, cc in zip(res.flows["flow"], res.flows["cc"], strict=True) if "bb" in str(cc)]
        drawn = plot_panels(
            res.samples,
            res.queue,
            target,
            metrics=tuple(metric.split(",")),
            flows=res.flows,
            transitions=res.transitions,
            state_flow=bbr[0] if bbr else None,
            title=f"{title} ({run_dir.name})",
        )
    elif kind == "heatmap":
        frame = runs_with_shares(exp)
        keys = list(exp.keys)
        x = x or (keys[0] if keys else None)
        y = y or next((k for k in keys if k != x), None)
        if x is None or y is None:
            raise PlotError("a heatmap needs two swept keys (--x and --y)")
        facet = hue or next((k for k in keys if k not in (x, y)), None)
        shares = [c for c in frame.columns if c.startswith("share_")]
        annotate = [c for c in ("utilization", *shares) if c in frame.columns and c != metric]
        drawn = plot_heatmap(
            frame, target, x=x, y=y, value=metric, annotate=annotate, facet=facet, title=title
        )
    else:
        frame, where = _frame_for(exp, metric)
        if kind == "cdf":
            hue = hue or _default_hue(exp, where, None)
            drawn = plot_cdf(frame, metric, target, hue=hue, title=title)
        else:
            x = x or (exp.keys[0] if exp.keys else None)
            if x is None:
                raise PlotError(f"a {kind} plot needs --x (a swept key)")
            hue = hue or _default_hue(exp, where, x)
            if kind == "box":
                drawn = plot_box(frame, metric, target, x=x, hue=hue, title=title)
            else:
                drawn = plot_mean(frame, metric, target, x=x, hue=hue, title=title)
    drawn.write_csv()
    return drawn.png
