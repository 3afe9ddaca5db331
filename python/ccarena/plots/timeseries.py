"""The run figure: goodput of each flow and the queueing delay over time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from ..results import Results

__all__ = ["FIGURE_NAME", "flow_label", "plot_run", "plot_timeseries"]

FIGURE_NAME = "timeseries.png"
_MAX_LEGEND = 16


def _fmt_ms(v: float) -> str:
    return f"{v:g} ms" if v == v else "? ms"


def flow_label(flow: int, flows: pd.DataFrame | None) -> str:
    """``"flow 0 · cubic · 20 ms"`` from the flows table, or ``"flow 0"``."""
    if flows is None or "flow" not in flows:
        return f"flow {flow}"
    row = flows.loc[flows["flow"] == flow]
    if row.empty:
        return f"flow {flow}"
    r = row.iloc[0]
    parts = [f"flow {flow}"]
    if "cc" in r:
        parts.append(str(r["cc"]))
    if "rtt_ms" in r:
        parts.append(_fmt_ms(round(float(r["rtt_ms"]), 3)))
    return " · ".join(parts)


def plot_timeseries(
    samples: pd.DataFrame,
    queue: pd.DataFrame,
    path: str | Path,
    *,
    flows: pd.DataFrame | None = None,
    title: str = "",
    subtitle: str = "",
) -> Path:
    """Draw goodput per flow (Mbit/s, top) and the mean queueing delay at the
    bottleneck (ms, bottom) against simulated time (s); write a PNG to
    ``path`` and return it.

    ``samples`` needs ``time_s``, ``flow`` and ``goodput_mbps``; ``queue``
    needs ``time_s`` and ``sojourn_mean_ms`` (``sojourn_max_ms`` is drawn
    faintly when present); ``flows`` (``flow``, ``cc``, ``rtt_ms``) names the
    lines in the legend.
    """
    path = Path(path)
    fig = Figure(figsize=(10, 6.5), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax_gp, ax_q = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])

    ids = sorted(samples["flow"].unique()) if len(samples) else []
    for flow in ids:
        s = samples.loc[samples["flow"] == flow].sort_values("time_s")
        ax_gp.plot(s["time_s"], s["goodput_mbps"], linewidth=1.2, label=flow_label(int(flow), flows))
    ax_gp.set_ylabel("goodput (Mbit/s)")
    ax_gp.set_ylim(bottom=0)
    ax_gp.grid(True, alpha=0.3)
    if ids:
        handles, labels = ax_gp.get_legend_handles_labels()
        if len(handles) > _MAX_LEGEND:
            handles, labels = handles[:_MAX_LEGEND], labels[:_MAX_LEGEND]
            labels[-1] = f"… {len(ids) - _MAX_LEGEND + 1} more flows"
        ax_gp.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            ncol=max(1, math.ceil(len(handles) / 12)),
            frameon=False,
        )
    else:
        ax_gp.text(0.5, 0.5, "no samples", transform=ax_gp.transAxes, ha="center", va="center")

    q = queue.sort_values("time_s") if len(queue) else queue
    if "sojourn_max_ms" in q and len(q):
        ax_q.plot(
            q["time_s"], q["sojourn_max_ms"], color="tab:gray", alpha=0.35, linewidth=0.8, label="max sojourn"
        )
    if len(q):
        ax_q.plot(q["time_s"], q["sojourn_mean_ms"], color="tab:red", linewidth=1.2, label="mean sojourn")
        ax_q.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax_q.set_ylabel("queueing delay (ms)")
    ax_q.set_xlabel("time (s)")
    ax_q.set_ylim(bottom=0)
    ax_q.set_xlim(left=0)
    ax_q.grid(True, alpha=0.3)

    if title:
        fig.suptitle(title, fontsize="large", fontweight="bold")
    if subtitle:
        ax_gp.set_title(subtitle, fontsize="medium")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def _subtitle(results: Results) -> str:
    parts = []
    s = results.summary
    if len(s):
        row = s.iloc[0]
        if "rate_mbps" in row:
            parts.append(f"bottleneck {row['rate_mbps']:g} Mbit/s")
        if "utilization" in row:
            parts.append(f"utilization {100 * row['utilization']:.1f}%")
        if "jain" in row:
            parts.append(f"Jain {row['jain']:.3f}")
    return ", ".join(parts)


def plot_run(results: Results, path: str | Path | None = None) -> Path:
    """The run figure of ``results``, written to ``path`` (default:
    ``timeseries.png`` in the run directory)."""
    if path is None:
        if results.path is None:
            raise ValueError("results were not written to a directory; pass a path")
        path = results.path / FIGURE_NAME
    return plot_timeseries(
        results.samples,
        results.queue,
        path,
        flows=results.flows,
        title=results.name,
        subtitle=_subtitle(results),
    )
