"""Means with 95% confidence intervals across repeats (Student's t; a
bounded metric's interval clipped to its range, ``common.metric_bounds``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import mean_ci
from .common import (
    PlotError,
    axis_label,
    cc_color,
    metric_bounds,
    metric_label,
    metric_scale,
    new_figure,
    numeric,
    save,
    sort_values,
    wants_log,
)
from .drawn import Drawn

__all__ = ["mean_table", "plot_mean"]


def mean_table(
    frame: pd.DataFrame, metric: str, x: str, hue: str | None = None, level: float = 0.95
) -> pd.DataFrame:
    """Per (hue, x): n, mean, ci_low, ci_high of ``metric`` (unscaled). The
    interval of a fraction (a share, a utilization, Jain's index, a
    retransmission rate) is clipped to 0..1 (``stats.mean_ci``: the t
    interval of a few repeats near 0 or 1 reaches past them)."""
    for c in (metric, x, hue):
        if c is not None and c not in frame.columns:
            raise PlotError(f"no column {c!r}; have: {', '.join(map(str, frame.columns))}")
    bounds = metric_bounds(metric)
    rows = []
    for h in sort_values(frame[hue]) if hue else [None]:
        sub_h = frame if h is None else frame[frame[hue] == h]
        for xv in sort_values(sub_h[x]):
            m, lo, hi, n = mean_ci(sub_h.loc[sub_h[x] == xv, metric].astype(float), level, bounds)
            rows.append({**({hue: h} if hue else {}), x: xv, "n": n, "mean": m, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def plot_mean(
    frame: pd.DataFrame,
    metric: str,
    path: str | Path,
    *,
    x: str,
    hue: str | None = None,
    title: str = "",
    ylabel: str | None = None,
    scale: float | None = None,
    level: float = 0.95,
    log_x: bool | None = None,
    ax=None,
) -> Drawn:
    """The mean of ``metric`` against ``x`` with its ``level`` confidence
    interval as error bars, one line per ``hue`` value. Numeric swept values
    (``"0.1BDP"``, ``"20ms"``) become a numeric axis, logarithmic for buffer
    sizes in BDP or values spanning 20x or more."""
    table = mean_table(frame, metric, x, hue, level)
    if table.empty or table["n"].sum() == 0:
        raise PlotError(f"no finite values of {metric!r} to draw")
    scale = metric_scale(metric) if scale is None else scale
    fig = None
    if ax is None:
        fig, ax = new_figure(7.5, 4.8)
    xs = sort_values(table[x])
    num = numeric(xs)
    pos = dict(zip(xs, num[0] if num else range(len(xs)), strict=True))
    for i, h in enumerate(sort_values(table[hue]) if hue else [None]):
        t = table if h is None else table[table[hue] == h]
        px = [pos[v] for v in t[x]]
        m = t["mean"] * scale
        err = [(t["mean"] - t["ci_low"]) * scale, (t["ci_high"] - t["mean"]) * scale]
        ax.errorbar(
            px,
            m,
            yerr=err,
            # a marker shape per line: lines that coincide (e.g. three AQMs at 100%) stay told apart
            marker="osD^v<>p"[i % 8],
            markersize=7 - 1.2 * (i % 4),
            capsize=3,
            linewidth=1.5,
            color=cc_color(h, i),
            label=None if h is None else str(h),
        )
    if num:
        if log_x if log_x is not None else wants_log(num[0], num[1]):
            ax.set_xscale("log")
            ax.set_xticks(sorted(set(num[0])), [f"{v:g}" for v in sorted(set(num[0]))])
            ax.minorticks_off()
        ax.set_xlabel(axis_label(x, num[1]))
    else:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(v) for v in xs])
        ax.set_xlabel(axis_label(x))
    ax.set_ylabel(ylabel or metric_label(metric))
    ax.grid(True, alpha=0.3)
    reps = int(table["n"].max())
    clipped = ", clipped to its range" if metric_bounds(metric) else ""
    note = (
        f"mean ± {int(level * 100)}% CI (Student's t{clipped}), "
        f"n ≤ {reps} run{'s' if reps != 1 else ''} per point"
    )
    if hue:
        ax.legend(title=axis_label(hue), fontsize="small")
    ax.set_title((title + "\n" if title else "") + note, fontsize="medium")
    out = table.copy()
    for c in ("mean", "ci_low", "ci_high"):
        out[c] = out[c] * scale
    png = save(fig, path) if fig is not None else Path(path)
    return Drawn(png, out)
