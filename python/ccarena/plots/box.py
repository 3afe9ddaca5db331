"""Box plots of a metric per swept value (and hue)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .common import (
    PlotError,
    axis_label,
    cc_color,
    metric_label,
    metric_scale,
    new_figure,
    numeric,
    save,
    sort_values,
)
from .drawn import Drawn

__all__ = ["plot_box"]


def plot_box(
    frame: pd.DataFrame,
    metric: str,
    path: str | Path,
    *,
    x: str | None = None,
    hue: str | None = None,
    title: str = "",
    ylabel: str | None = None,
    scale: float | None = None,
) -> Drawn:
    """Boxes (quartiles, whiskers at 1.5 IQR, median line) of ``frame[metric]``
    for each value of ``x``, side by side for each value of ``hue``."""
    for c in (metric, x, hue):
        if c is not None and c not in frame.columns:
            raise PlotError(f"no column {c!r}; have: {', '.join(map(str, frame.columns))}")
    scale = metric_scale(metric) if scale is None else scale
    xs = sort_values(frame[x]) if x else [None]
    hs = sort_values(frame[hue]) if hue else [None]
    fig, ax = new_figure(min(13.0, max(6.0, 1.1 * len(xs) * max(1, len(hs)) + 2)), 4.8)
    width = 0.8 / len(hs)
    rows = []
    for j, h in enumerate(hs):
        data, pos = [], []
        for i, xv in enumerate(xs):
            sub = frame
            if x:
                sub = sub[sub[x] == xv]
            if hue:
                sub = sub[sub[hue] == h]
            v = (sub[metric].astype(float) * scale).to_numpy()
            v = v[np.isfinite(v)]
            if len(v) == 0:
                continue
            data.append(v)
            pos.append(i + (j - (len(hs) - 1) / 2) * width)
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            rows.append(
                {
                    **({x: xv} if x else {}),
                    **({hue: h} if hue else {}),
                    "n": len(v),
                    "min": v.min(),
                    "q1": q1,
                    "median": med,
                    "q3": q3,
                    "max": v.max(),
                    "mean": v.mean(),
                }
            )
        if not data:
            continue
        color = cc_color(h, j)
        bp = ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True, showfliers=True)
        for b in bp["boxes"]:
            b.set_facecolor(color)
            b.set_alpha(0.55)
        for m in bp["medians"]:
            m.set_color("black")
        for p, v in zip(pos, data, strict=True):
            # few values (runs, not samples) as dots: with one or two repeats the box alone is a line
            if len(v) <= 20:
                ax.plot([p] * len(v), v, linestyle="none", marker="o", markersize=4, color=color, zorder=3)
        if hue:
            ax.plot([], [], color=color, linewidth=8, alpha=0.55, label=str(h))
    if not rows:
        raise PlotError(f"no finite values of {metric!r} to draw")
    ax.set_xticks(range(len(xs)))
    if x:
        num = numeric(xs)
        ax.set_xticklabels([f"{v:g}" for v in num[0]] if num else [str(v) for v in xs])
        ax.set_xlabel(axis_label(x, num[1] if num else ""))
    else:
        ax.set_xticklabels([""])
    ax.set_ylabel(ylabel or metric_label(metric))
    ax.grid(True, axis="y", alpha=0.3)
    if hue:
        ax.legend(title=axis_label(hue), fontsize="small")
    if title:
        ax.set_title(title)
    return Drawn(save(fig, path), pd.DataFrame(rows))
