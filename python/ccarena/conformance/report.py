"""What a conformance run shows: the summary per group, the flows that
differ, a figure of simulator against kernel per metric, and an HTML
report."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..store import write_bytes_atomic
from .hosts import describe
from .judge import METRICS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .matrix import Cell, Matrix
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = ["SCOPE", "ceiling_line", "cells_table", "differs_table", "plot", "report", "summary_table"]

#: What the cells behind an AQM validate, and what they do not.
SCOPE = (
    "The cells whose bottleneck is an AQM (RED, CoDel, FQ-CoDel, CAKE, PIE, FQ-PIE, DualPI2, sch_fq) "
    "validate the kernel's TCP against the simulator's TCP behind ccarena's own queue disciplines: "
    "the Linux backend's bottleneck runs the simulator's qdisc code (the kernel here has only pfifo, "
    "bfifo, tbf and htb). They do not validate that code against Linux's sch_*.c: each discipline is "
    "checked against its reference by its own tests (docs/conditions.md)."
)


def cells_table(cells: Sequence[Cell]) -> Any:
    """``conformance --list``: each cell's id and its values, the values
    wrapped beside the id (a rich grid: no borders, no cell cut)."""
    from rich.table import Table

    t = Table.grid(padding=(0, 2))
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    for c in cells:
        t.add_row(c.id, c.label())
    return t


def differs_table(flows: pd.DataFrame, limit: int = 30) -> Any:
    """The flows that do not agree (``flow_verdicts``' rows), at most
    ``limit``: cell, flow, its CCA and RTT, its rank in its class of
    identical flows, the metrics that differ."""
    from ..termtable import Rows

    names = ("cell", "flow", "cc", "rtt ms", "rank", "differs in")
    t = Rows(
        "flows that differ",
        [(n, "right" if n in ("flow", "rtt ms", "rank") else "left") for n in names],
        key=2,
    )
    for _, r in flows.head(limit).iterrows():
        rank = "" if math.isnan(float(r["rank"])) else f"{int(r['rank'])}"
        t.add_row(r["cell"], r["flow"], r["cc"], f"{float(r['rtt_ms']):g}", rank, r["disagree"])
    if len(flows) > limit:
        t.caption = f"… {len(flows) - limit} more in flows.csv"
    return t


def ceiling_line(overall: Any) -> str:
    """The sentence that puts the headline beside its ceiling ("" without one)."""
    c = overall["ceiling"]
    if math.isnan(c):
        return ""
    return (
        f"a model as good as the kernel's own runs would agree on about {c:.1%} of these flows "
        "(the ceiling: each kernel run held out against the others' mean)"
    )


def _ceiling_html(overall: Any) -> str:
    line = ceiling_line(overall)
    if not line:
        return ""
    return (
        f"<p>The ceiling: {html.escape(line)}. The kernel's mean of a cell is itself an estimate "
        "from a few runs; the column <i>ceiling</i> gives, per group, the agreement that no model "
        "can be expected to beat with this many runs.</p>"
    )


def summary_table(table: pd.DataFrame, title: str = "agreement per group") -> Any:
    """``judge.summary``'s rows as a terminal table."""
    from ..termtable import Rows

    names = ("group", "flows", "agree", "%", "ceiling %", "equivalent", "differ", "resolvable %")
    t = Rows(title, [(n, "left" if n == "group" else "right") for n in names])
    for _, r in table.iterrows():
        t.add_row(
            r["group"],
            str(r["flows"]),
            str(r["agree"]),
            "—" if math.isnan(r["agree_fraction"]) else f"{100 * r['agree_fraction']:.1f}",
            "—" if math.isnan(r["ceiling"]) else f"{100 * r['ceiling']:.1f}",
            str(r["equivalent"]),
            str(r["differs"]),
            "—" if math.isnan(r["resolvable_fraction"]) else f"{100 * r['resolvable_fraction']:.0f}",
        )
    return t


def plot(frame: pd.DataFrame, path: Path) -> Path:
    """Simulator vs kernel, one panel per metric, each flow a point
    (kernel range as a bar), green where they agree, red where not."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 7.5), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 4).ravel()
    for ax, m in zip(axes, METRICS, strict=False):
        g = frame[(frame["metric"] == m) & frame["agree"].notna()]
        for ok, colour in ((True, "tab:green"), (False, "tab:red")):
            h = g[g["agree"].astype(bool) == ok]
            if h.empty:
                continue
            ax.errorbar(
                h["linux_mean"],
                h["sim_mean"],
                xerr=[h["linux_mean"] - h["linux_min"], h["linux_max"] - h["linux_mean"]],
                fmt="o",
                ms=3,
                lw=0.6,
                color=colour,
                alpha=0.7,
                label=f"{'agree' if ok else 'differ'} ({len(h)})",
            )
        if not g.empty:
            lo = float(np.nanmin([g["linux_min"].min(), g["sim_mean"].min()]))
            hi = float(np.nanmax([g["linux_max"].max(), g["sim_mean"].max()]))
            ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8)
            if m in ("retrans_rate", "drops", "fct_s", "goodput_mbps") and lo > 0:
                ax.set_xscale("log")
                ax.set_yscale("log")
            ax.legend(fontsize=7, loc="upper left")
        ax.set_title(m, fontsize=10, loc="left")
        ax.set_xlabel("kernel (mean, range)", fontsize=8)
        ax.set_ylabel("simulator (mean over seeds)", fontsize=8)
    for ax in axes[len(METRICS) :]:
        ax.axis("off")
    fig.suptitle("ccarena conformance: simulator vs Linux, per flow")
    fig.savefig(path, dpi=100)
    return path


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            v = r[c]
            s = ("" if math.isnan(v) else f"{v:.4g}") if isinstance(v, float) else str(v)
            cells.append(f"<td>{html.escape(s)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def report(
    matrix: Matrix,
    frame: pd.DataFrame,
    out: Path,
    figure: Path | None,
    *,
    flows: pd.DataFrame,
    table: pd.DataFrame,
    machines: str = "",
    sensitivity: pd.DataFrame | None = None,
) -> Path:
    """``report.html`` of a judged matrix: ``frame`` (``judge.judge_cell``'s
    rows), its ``flows`` (``flow_verdicts``) and per-group ``table``
    (``judge.summary``), as the run computed them."""
    tol = pd.DataFrame(
        [
            {"metric": m, "absolute": t.absolute, "relative": t.relative, "of the link's rate": t.of_link}
            for m, t in matrix.tolerance.items()
        ]
    )
    overall = table.iloc[-1]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>ccarena conformance</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style>",
        "<h1>ccarena conformance</h1>",
        f"<p>{html.escape(matrix.source)}: {html.escape(matrix.description)}</p>",
        f"<p><b>{overall['agree']} of {overall['flows']} flows agree</b> "
        f"({overall['agree_fraction']:.1%}) with the simulator run with "
        f"{html.escape(describe(matrix.sim_hosts))}; {overall['equivalent']} shown equivalent, "
        f"{overall['differs']} shown to differ; in {frame['cell'].nunique() if not frame.empty else 0} "
        f"of {len(matrix.cells)} cells. Kernel: each group's rule of runs per cell (fixed before any "
        f"run, the same for every cell of a group); simulator: {matrix.sim_seeds} seeds.</p>",
        _ceiling_html(overall),
        "<p>A metric agrees when the simulator's mean lies within the tolerance of the kernel's mean "
        "(the largest of its absolute part, its relative part times the kernel's mean and, for rates, "
        "its part of the link's rate). Equivalence: Welch's 90% interval of the difference inside the "
        "tolerance (two one-sided tests at 5%); <i>resolvable</i>: the interval narrower than the "
        "tolerance, so that equivalence could be shown at all with these runs. "
        + (
            "Flows alike but for their index are judged by rank: a row with a <i>rank</i> k compares "
            "the k-th largest value of its class in each run, metric by metric.</p>"
            if matrix.identical_flows == "ranked"
            else "Every flow is judged by its own index.</p>"
        ),
    ]
    if machines:
        parts.append(f"<p>Kernel runs: {html.escape(machines)}</p>")
    parts += [f"<p>{html.escape(SCOPE)}</p>", "<h2>Tolerances</h2>", _html_table(tol)]
    parts += ["<h2>Per group</h2>", _html_table(table)]
    if sensitivity is not None and not sensitivity.empty:
        parts += ["<h2>The simulator's hosts: agreement with each choice</h2>", _html_table(sensitivity)]
    if figure is not None:
        parts.append(
            f"<h2>Simulator vs kernel</h2><img src='{html.escape(figure.name)}' style='max-width:100%'>"
        )
    if len(flows):
        by_metric = frame[frame["agree"].notna()].groupby("metric", sort=False)["agree"].agg(["count", "sum"])
        parts += ["<h2>Per metric</h2>", _html_table(by_metric.reset_index())]
        bad = flows[~flows["agree"].astype(bool)]
        parts += [f"<h2>Flows that differ ({len(bad)})</h2>", _html_table(bad)]
        parts += ["<h2>Every flow and metric</h2>", _html_table(frame)]
    path = out / "report.html"
    write_bytes_atomic(path, "\n".join(parts).encode())
    return path
