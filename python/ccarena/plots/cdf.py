"""Empirical CDFs: per-flow throughput, utilization, FCT, queueing delay."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import ecdf
from .common import PlotError, axis_label, cc_color, metric_label, metric_scale, new_figure, save, sort_values
from .drawn import Drawn

__all__ = ["plot_cdf"]


def plot_cdf(
    frame: pd.DataFrame,
    metric: str,
    path: str | Path,
    *,
    hue: str | None = None,
    title: str = "",
    xlabel: str | None = None,
    log: bool = False,
    scale: float | None = None,
    ylim: tuple[float, float] | None = None,
) -> Drawn:
    """One ECDF of ``frame[metric]`` per value of ``hue`` (or one for all rows).
    Values are multiplied by ``scale`` (default: the metric's display scale,
    e.g. 100 for utilization in %)."""
    if metric not in frame.columns:
        raise PlotError(f"no column {metric!r}; have: {', '.join(map(str, frame.columns))}")
    if hue is not None and hue not in frame.columns:
        raise PlotError(f"no column {hue!r} for the hue")
    scale = metric_scale(metric) if scale is None else scale
    fig, ax = new_figure(7.5, 4.8)
    groups = sort_values(frame[hue]) if hue else [None]
    rows = []
    for i, g in enumerate(groups):
        sub = frame if g is None else frame[frame[hue] == g]
        x, y = ecdf(sub[metric].astype(float) * scale)
        if len(x) == 0:
            continue
        label = "all" if g is None else str(g)
        # rise from 0 at the smallest value, so that a single value (one run) still draws a step
        ax.step(
            [x[0], *x],
            [0.0, *y],
            where="post",
            color=cc_color(g, i),
            linewidth=1.6,
            marker="o" if len(x) <= 10 else None,
            markersize=4,
            label=f"{label} (n={len(x)})",
        )
        rows.append(pd.DataFrame({"group": label, "value": x, "cdf": y}))
    if not rows:
        raise PlotError(f"no finite values of {metric!r} to draw")
    ax.set_xlabel(xlabel or metric_label(metric))
    ax.set_ylabel("fraction ≤ x (CDF)")
    ax.set_ylim(*(ylim or (0, 1.02)))
    if log:
        ax.set_xscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(title=axis_label(hue) if hue else None, fontsize="small", loc="lower right")
    if title:
        ax.set_title(title)
    data = pd.concat(rows, ignore_index=True)
    if hue:
        data = data.rename(columns={"group": hue})
    return Drawn(save(fig, path), data)
