"""HTML representations for notebooks: a run (``Results``), an
``Experiment`` and a ``Comparison`` show their summary tables and their
figure when Jupyter displays them. Figures are drawn into a temporary
directory and embedded, so displaying never writes into a run directory."""

from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .compare import Comparison
    from .experiment import Experiment
    from .results import Results

__all__ = ["comparison_html", "experiment_html", "results_html"]

FLOW_COLUMNS = ("flow", "cc", "rtt_ms", "goodput_mbps", "retrans_rate", "srtt_mean_ms", "fct_s")
SUMMARY_COLUMNS = ("utilization", "jain", "retrans_rate", "mean_rtt_ms", "qdelay_p95_ms", "drops")
MAX_ROWS = 40


def _img(png: Path | None) -> str:
    if png is None or not png.is_file():
        return ""
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%"/>'


def _table(frame: pd.DataFrame, caption: str) -> str:
    shown = frame.head(MAX_ROWS)
    more = f"<p>… {len(frame) - MAX_ROWS} more rows</p>" if len(frame) > MAX_ROWS else ""
    body = shown.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="—", border=0)
    return f"<h4>{html.escape(caption)}</h4>{body}{more}"


def _block(title: str, facts: Sequence[tuple[str, Any]], parts: Sequence[str]) -> str:
    items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in facts)
    return f"<div><h3>{html.escape(title)}</h3><ul>{items}</ul>{''.join(parts)}</div>"


def _cols(frame: pd.DataFrame, wanted: Sequence[str]) -> pd.DataFrame:
    return frame[[c for c in wanted if c in frame.columns]]


def results_html(r: Results) -> str:
    """A run: where it is, its summary and flows, its time-series figure."""
    from .plots.timeseries import FIGURE_NAME, plot_run

    facts = [
        ("run directory", r.path or "not written"),
        ("flows", len(r.flows)),
        ("backend", r.meta.get("backend", "sim")),
    ]
    parts = [
        _table(_cols(r.summary, SUMMARY_COLUMNS), "summary"),
        _table(_cols(r.flows, FLOW_COLUMNS), "flows"),
    ]
    if r.figure is not None:
        parts.append(_img(r.figure))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            parts.append(_img(plot_run(r, Path(tmp) / FIGURE_NAME)))
    return _block(f"Results {r.name}", facts, parts)


def experiment_html(e: Experiment) -> str:
    """An experiment: its keys, the runs table and, with a swept key, the
    mean Jain index over it with 95% confidence intervals."""
    from .plots import PlotError, make_figure

    facts = [("directory", e.path), ("runs", len(e.runs)), ("swept keys", ", ".join(e.keys) or "none")]
    metrics = [c for c in SUMMARY_COLUMNS if c in e.runs.columns]
    parts = [_table(e.runs[[*e.keys, "repeat", *metrics]], "runs")]
    if e.keys and len(e.runs) > 1:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                parts.append(_img(make_figure(e, "mean", out=Path(tmp) / "mean.png")))
            except PlotError as err:
                parts.append(f"<p>no figure: {html.escape(str(err))}</p>")
    return _block(f"Experiment {e.name}", facts, parts)


def comparison_html(c: Comparison) -> str:
    """A comparison: per-flow metrics of each backend and their differences,
    the run summaries, and the comparison figure."""
    from .compare import plot_comparison

    facts = [("scenario", c.scenario.name), ("backends", " vs ".join(c.backends))]
    parts = [_table(c.flows, "per flow"), _table(c.summary.reset_index(), "run summary")]
    if c.figure_path is not None:
        parts.append(_img(c.figure_path))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            parts.append(_img(plot_comparison(c, Path(tmp) / "compare.png")))
    return _block(f"Comparison {c.scenario.name}", facts, parts)
