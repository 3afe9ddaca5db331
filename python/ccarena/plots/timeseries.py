"""The run figure: goodput of each flow and the queueing delay over time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from .common import PlotError, metric_label, save
from .drawn import Drawn

__all__ = [
    "FIGURE_NAME",
    "RunTables",
    "flow_label",
    "plot_panels",
    "plot_run",
    "plot_timeseries",
    "state_spans",
]

FIGURE_NAME = "timeseries.png"
_MAX_LEGEND = 16
# Above this many flows the run figure draws each flow group's mean goodput
# per flow and its spread (p10-p90) instead of one line per flow: thousands
# of lines are unreadable and cost seconds to draw.
_MAX_LINES = 64


def per_link(queue: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The queue table's rows of each link (one link, "bottleneck", in the
    dumbbell; tables written before networks have no ``link`` column), each
    in time order."""
    if not len(queue):
        return []
    if "link" not in queue:
        return [("bottleneck", queue.sort_values("time_s"))]
    return [(str(name), q.sort_values("time_s")) for name, q in queue.groupby("link", sort=False)]


def _fmt_ms(v: float) -> str:
    return f"{v:g} ms" if v == v else "? ms"


def _label(row: pd.Series) -> str:
    parts = [f"flow {int(row['flow'])}"]
    if "cc" in row:
        parts.append(str(row["cc"]))
    if "rtt_ms" in row:
        parts.append(_fmt_ms(round(float(row["rtt_ms"]), 3)))
    return " · ".join(parts)


def flow_label(flow: int, flows: pd.DataFrame | None) -> str:
    """``"flow 0 · cubic · 20 ms"`` from the flows table, or ``"flow 0"``."""
    if flows is None or "flow" not in flows:
        return f"flow {flow}"
    row = flows.loc[flows["flow"] == flow]
    return _label(row.iloc[0]) if len(row) else f"flow {flow}"


def flow_labels(flows: pd.DataFrame | None) -> dict[int, str]:
    """Every flow's ``flow_label``, from one pass over the flows table (a
    figure of many flows would otherwise scan it once per flow)."""
    if flows is None or "flow" not in flows:
        return {}
    return {int(r["flow"]): _label(r) for _, r in flows.drop_duplicates("flow").iterrows()}


def per_flow(samples: pd.DataFrame) -> list[tuple[int, pd.DataFrame]]:
    """Each flow's sample rows in time order, from one grouping of the table
    (not a mask per flow, which costs the table's length once per flow)."""
    if not len(samples):
        return []
    ordered = samples.sort_values(["flow", "time_s"], kind="stable")
    return [(int(f), s) for f, s in ordered.groupby("flow", sort=True)]


def group_label(group: int, flows: pd.DataFrame | None, group_of: dict) -> str:
    """``"group 1 · small · bbr1 · 45 ms · 30 flows"`` for a flow group."""
    members = [f for f, g in group_of.items() if g == group]
    parts = [f"group {group}"]
    if flows is not None and "flow" in flows:
        rows = flows[flows["flow"].isin(members)]
        if len(rows):
            r = rows.iloc[0]
            if "label" in r and isinstance(r["label"], str) and r["label"]:
                parts.append(r["label"])
            if "cc" in r:
                parts.append(str(r["cc"]))
            if "rtt_ms" in r:
                parts.append(_fmt_ms(round(float(r["rtt_ms"]), 3)))
    parts.append(f"{len(members)} flow{'s' if len(members) != 1 else ''}")
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
    if len(ids) > _MAX_LINES:
        _plot_group_spread(ax_gp, samples, flows)
    else:
        labels = flow_labels(flows)
        for flow, s in per_flow(samples):
            ax_gp.plot(s["time_s"], s["goodput_mbps"], linewidth=1.2, label=labels.get(flow, f"flow {flow}"))
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

    links = per_link(queue)
    if len(links) == 1:
        ((_, q),) = links
        if "sojourn_max_ms" in q:
            ax_q.plot(
                q["time_s"],
                q["sojourn_max_ms"],
                color="tab:gray",
                alpha=0.35,
                linewidth=0.8,
                label="max sojourn",
            )
        ax_q.plot(q["time_s"], q["sojourn_mean_ms"], color="tab:red", linewidth=1.2, label="mean sojourn")
    else:
        for name, q in links:
            ax_q.plot(q["time_s"], q["sojourn_mean_ms"], linewidth=1.2, label=f"{name} mean sojourn")
    if links:
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


def _plot_group_spread(ax, samples: pd.DataFrame, flows: pd.DataFrame | None) -> None:
    """Per flow group (all flows as one without a ``group`` column): the mean
    goodput of its flows at each sample time, and the band from the 10th to
    the 90th percentile across them."""
    df = samples if "group" in samples else samples.assign(group=0)
    grouped = df.groupby(["group", "time_s"], sort=True)["goodput_mbps"]
    stats = pd.DataFrame(
        {"mean": grouped.mean(), "p10": grouped.quantile(0.1), "p90": grouped.quantile(0.9)}
    ).reset_index()
    group_of = dict(zip(df["flow"], df["group"], strict=False))
    for g, st in stats.groupby("group", sort=True):
        label = group_label(g, flows, group_of) if "group" in samples else f"{len(group_of)} flows"
        (line,) = ax.plot(st["time_s"], st["mean"], linewidth=1.2, label=f"{label}: mean per flow")
        ax.fill_between(
            st["time_s"],
            st["p10"],
            st["p90"],
            color=line.get_color(),
            alpha=0.2,
            linewidth=0,
            label="p10-p90 across its flows",
        )


class RunTables(Protocol):
    """What the run figure reads of a run (``results.Results`` has it)."""

    @property
    def path(self) -> Path | None: ...

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> pd.DataFrame: ...

    @property
    def flows(self) -> pd.DataFrame: ...

    @property
    def samples(self) -> pd.DataFrame: ...

    @property
    def queue(self) -> pd.DataFrame: ...


def _subtitle(results: RunTables) -> str:
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


def plot_run(results: RunTables, path: str | Path | None = None) -> Path:
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


# --------------------------------------------------------------------------- panels and BBR states

_STATE_COLORS = {
    "STARTUP": "#f4a261",
    "DRAIN": "#e9c46a",
    "PROBE_RTT": "#9d4edd",
    "UP": "#e76f51",
    "REFILL": "#2a9d8f",
    "DOWN": "#457b9d",
    "CRUISE": "#d9ed92",
}
_MODES = {"STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}


def _state_color(label: str) -> str:
    for key, color in _STATE_COLORS.items():
        if label.endswith(key):
            return color
    return "#cccccc"


def state_spans(
    samples: pd.DataFrame, transitions: pd.DataFrame | None, flow: int, end: float
) -> list[tuple[float, float, str]]:
    """(start, end, state) spans of a BBR flow: from ``transitions`` when they
    carry ProbeBW phases, else from the samples' ``bbr_phase`` /
    ``bbr_gain_phase`` and ``bbr_mode`` columns (each sample covering its
    interval), else from the mode transitions."""
    spans: list[tuple[float, float, str]] = []
    tr = None
    if transitions is not None and len(transitions) and "to" in transitions:
        tr = transitions[transitions["flow"] == flow].sort_values("time_s")
    fine = tr is not None and bool(set(tr["to"]) - _MODES - {""})
    s = samples[samples["flow"] == flow].sort_values("time_s") if "flow" in samples else samples.iloc[:0]
    phase_col = next((c for c in ("bbr_phase", "bbr_gain_phase") if c in s), None)
    if not fine and "bbr_mode" in s and len(s):
        t = s["time_s"].to_numpy()
        dt = float(np.median(np.diff(t))) if len(t) > 1 else 0.1
        for ti, mode, phase in zip(
            t, s["bbr_mode"], s[phase_col] if phase_col else [""] * len(s), strict=True
        ):
            if not mode:
                continue
            label = f"PROBE_BW {phase}" if mode == "PROBE_BW" and phase else str(mode)
            a, b = ti - dt, ti
            if spans and spans[-1][2] == label and abs(spans[-1][1] - a) < 1e-9:
                spans[-1] = (spans[-1][0], b, label)
            else:
                spans.append((a, b, label))
        return spans
    if tr is not None and len(tr):
        times = [*tr["time_s"].tolist(), end]
        for i, label in enumerate(tr["to"]):
            if label:
                spans.append((float(times[i]), float(times[i + 1]), str(label)))
    return spans


def plot_panels(
    samples: pd.DataFrame,
    queue: pd.DataFrame | None,
    path: str | Path,
    *,
    metrics: tuple[str, ...] = ("goodput_mbps", "cwnd_pkts"),
    queue_metric: str | None = "sojourn_mean_ms",
    flows: pd.DataFrame | None = None,
    transitions: pd.DataFrame | None = None,
    state_flow: int | None = None,
    xlim: tuple[float, float] | None = None,
    title: str = "",
):
    """Stacked panels against time: each of ``metrics`` per flow, then the
    queue (``queue_metric`` of the queue table). With ``state_flow``, the
    BBR states of that flow are shaded behind every panel (see
    ``state_spans``). Writes PNG and SVG; returns a ``Drawn``."""
    metrics = tuple(m for m in metrics if m in samples.columns)
    if not metrics and queue_metric is None:
        raise PlotError("none of the metrics is a column of the samples")
    if xlim:
        # only what is shown, so that the y axes scale to the zoomed window
        samples = samples[samples["time_s"].between(xlim[0], xlim[1])]
        if queue is not None and len(queue):
            queue = queue[queue["time_s"].between(xlim[0], xlim[1])]
    n = len(metrics) + (1 if queue_metric and queue is not None and queue_metric in queue else 0)
    fig = Figure(figsize=(10, 2.3 * n + 1.0), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    ids = sorted(samples["flow"].unique()) if len(samples) else []
    many = len(ids) > _MAX_LEGEND
    data = [samples[["time_s", "flow", *metrics]].copy()] if metrics else []
    # many flows, or groups of several flows (successive short flows): one colour and one
    # legend entry per flow group
    by_group = "group" in samples.columns and (
        many or samples.groupby("group")["flow"].nunique().max() > 1 if len(samples) else False
    )
    group_of = dict(zip(samples["flow"], samples["group"], strict=False)) if by_group else {}
    groups = sorted(set(group_of.values())) if by_group else []
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink"]
    flow_rows = per_flow(samples) if metrics else []
    labels = flow_labels(flows) if not (many or by_group) else {}
    colors = [
        palette[groups.index(group_of[flow]) % len(palette)] if by_group else f"C{i % 10}"
        for i, (flow, _) in enumerate(flow_rows)
    ]
    for ax, m in zip(axes, metrics, strict=False):
        # byte counts in kB or MB: no "1e6" offset above the axis
        div, unit = 1.0, ""
        if m.endswith("_bytes") and len(samples):
            top = float(samples[m].max())
            div, unit = (1e6, "MB") if top >= 1e6 else (1e3, "kB") if top >= 1e3 else (1.0, "")
        if many:
            # one collection, not a line object per flow (thousands cost seconds)
            segs = [np.column_stack((s["time_s"], s[m] / div)) for _, s in flow_rows]
            ax.add_collection(LineCollection(segs, colors=colors, linewidths=0.8, alpha=0.6))
            ax.autoscale_view()
        else:
            for (flow, s), color in zip(flow_rows, colors, strict=True):
                ax.plot(
                    s["time_s"],
                    s[m] / div,
                    linewidth=1.2,
                    color=color,
                    label=None if by_group else labels.get(flow, f"flow {flow}"),
                )
        ax.set_ylabel(metric_label(m).replace("(bytes)", f"({unit})") if unit else metric_label(m))
        ax.set_ylim(bottom=0)
        top = float(samples[m].max()) / div if len(samples) else float("nan")
        if math.isfinite(top) and top > 0:
            # headroom: a constant series (a BBR bandwidth estimate) would sit on the frame
            ax.set_ylim(top=max(ax.get_ylim()[1], 1.08 * top))
        ax.grid(True, alpha=0.3)
    if metrics and by_group:
        for i, g in enumerate(groups):
            axes[0].plot([], [], color=palette[i % len(palette)], label=group_label(g, flows, group_of))
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    if metrics and not many and not by_group and ids:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    if queue_metric and queue is not None and n > len(metrics):
        ax = axes[-1]
        links = per_link(queue)
        for name, q in links:
            one = len(links) == 1
            ax.plot(q["time_s"], q[queue_metric], color="tab:red" if one else None, linewidth=1.2, label=name)
            qd = q[["time_s", queue_metric]].copy()
            qd.insert(1, "flow", "queue" if one else f"queue {name}")
            data.append(qd)
        if len(links) > 1:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        ax.set_ylabel(metric_label(queue_metric))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    end = float(samples["time_s"].max()) if len(samples) else 0.0
    if state_flow is not None:
        spans = state_spans(samples, transitions, state_flow, end)
        seen: set[str] = set()
        for a, b, label in spans:
            if xlim and (b < xlim[0] or a > xlim[1]):
                continue
            for ax in axes:
                ax.axvspan(a, b, color=_state_color(label), alpha=0.25, linewidth=0)
            if label not in seen:
                seen.add(label)
                axes[-1].plot([], [], color=_state_color(label), linewidth=8, alpha=0.5, label=label)
        if seen:
            axes[-1].legend(
                title=f"BBR state of flow {state_flow}",
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                fontsize="small",
                frameon=False,
            )
        data.append(pd.DataFrame(spans, columns=["state_start_s", "state_end_s", "state"]))
    axes[-1].set_xlabel("time (s)")
    if xlim:
        axes[-1].set_xlim(*xlim)
    else:
        axes[-1].set_xlim(left=0)
    if title:
        fig.suptitle(title)
    out = pd.concat(data, ignore_index=True) if data else pd.DataFrame()
    return Drawn(save(fig, path), out)
