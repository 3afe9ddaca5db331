"""Heatmaps over two swept keys: colour = a metric (e.g. Jain's index), each
cell annotated with further metrics (e.g. utilization and each CCA's share),
one panel per value of a third key."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .common import PlotError, axis_label, metric_label, metric_scale, new_figure, numeric, save, sort_values
from .drawn import Drawn

__all__ = ["heatmap_table", "plot_heatmap"]


def heatmap_table(
    frame: pd.DataFrame, x: str, y: str, value: str, annotate: Sequence[str] = (), facet: str | None = None
) -> pd.DataFrame:
    """Mean of ``value`` and each ``annotate`` column per (facet, y, x) cell."""
    cols = [value, *annotate]
    keys = [k for k in (facet, y, x) if k is not None]
    for c in (*cols, *keys):
        if c not in frame.columns:
            raise PlotError(f"no column {c!r}; have: {', '.join(map(str, frame.columns))}")
    if frame.empty:
        raise PlotError("no runs to draw")
    return frame.groupby(keys, sort=False)[cols].mean().reset_index()


def _fmt(col: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    scale = metric_scale(col)
    short = {"utilization": "util", "jain": "J"}.get(col, col.replace("share_", "").replace("_", " "))
    if scale == 100.0 or col.startswith("share"):
        return f"{short} {100 * v:.0f}%"
    return f"{short} {v:.3g}"


def plot_heatmap(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    x: str,
    y: str,
    value: str = "jain",
    annotate: Sequence[str] = ("utilization",),
    facet: str | None = None,
    title: str = "",
    cmap: str = "RdYlGn",
    vmin: float | None = None,
    vmax: float | None = None,
) -> Drawn:
    """Cells of (``x``, ``y``) coloured by the mean of ``value`` (scaled for
    display, e.g. Jain in %), annotated with the mean of each ``annotate``
    column; one panel per ``facet`` value."""
    table = heatmap_table(frame, x, y, value, annotate, facet)
    facets = sort_values(table[facet]) if facet else [None]
    xs, ys = sort_values(table[x]), sort_values(table[y])
    ncols = min(3, len(facets))
    nrows = math.ceil(len(facets) / ncols)
    cell_w = max(1.1, 0.25 + 0.14 * max(10, max(len(_fmt(a, 0.5)) for a in [value, *annotate])))
    fig, axes = new_figure(
        min(28.0, ncols * (len(xs) * cell_w + 1.8) + 1.2),
        min(40.0, nrows * (len(ys) * (0.45 + 0.22 * (1 + len(annotate))) + 1.6)),
        nrows=nrows,
        ncols=ncols,
        squeeze=False,
    )
    scale = metric_scale(value)
    lo = vmin if vmin is not None else (0.0 if scale == 100.0 else float(table[value].min() * scale))
    hi = vmax if vmax is not None else (100.0 if scale == 100.0 else float(table[value].max() * scale))
    image = None
    xnum, ynum = numeric(xs), numeric(ys)
    for k, f in enumerate(facets):
        ax = axes[k // ncols][k % ncols]
        t = table if f is None else table[table[facet] == f]
        grid = np.full((len(ys), len(xs)), np.nan)
        for _, r in t.iterrows():
            i, j = ys.index(r[y]), xs.index(r[x])
            grid[i, j] = r[value] * scale
            notes = [_fmt(a, r[a]) for a in annotate if not pd.isna(r[a])]
            text = "\n".join([_fmt(value, r[value]), *notes])
            v = grid[i, j]
            light = not math.isnan(v) and (v - lo) / max(hi - lo, 1e-9) < 0.25
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if light else "black")
        image = ax.imshow(grid, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", origin="lower")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([f"{v:g}" for v in xnum[0]] if xnum else [str(v) for v in xs])
        ax.set_yticks(range(len(ys)))
        ax.set_yticklabels([f"{v:g}" for v in ynum[0]] if ynum else [str(v) for v in ys])
        ax.set_xlabel(axis_label(x, xnum[1] if xnum else ""))
        ax.set_ylabel(axis_label(y, ynum[1] if ynum else ""))
        if f is not None and facet:
            ax.set_title(f"{axis_label(facet)} = {f}", fontsize="medium")
    for k in range(len(facets), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label=metric_label(value))
    if title:
        fig.suptitle(title)
    return Drawn(save(fig, path), table)
