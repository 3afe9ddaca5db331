"""The parts of the HTML a notebook shows for a run (``Results``), an
``Experiment`` and a ``Comparison`` (each class's ``_repr_html_`` puts
them together): a title with facts, tables cut at ``MAX_ROWS`` and
embedded figures. Figures are drawn into a temporary directory, so
displaying never writes into a run directory. Imports nothing of the
package's."""

from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FLOW_COLUMNS", "SUMMARY_COLUMNS", "block", "cols", "img", "table", "temporary_png"]

FLOW_COLUMNS = ("flow", "cc", "rtt_ms", "goodput_mbps", "retrans_rate", "srtt_mean_ms", "fct_s")
SUMMARY_COLUMNS = ("utilization", "jain", "retrans_rate", "mean_rtt_ms", "qdelay_p95_ms", "drops")
MAX_ROWS = 40


def img(png: Path | None) -> str:
    if png is None or not png.is_file():
        return ""
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%"/>'


def table(frame: pd.DataFrame, caption: str) -> str:
    shown = frame.head(MAX_ROWS)
    more = f"<p>… {len(frame) - MAX_ROWS} more rows</p>" if len(frame) > MAX_ROWS else ""
    body = shown.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="—", border=0)
    return f"<h4>{html.escape(caption)}</h4>{body}{more}"


def block(title: str, facts: Sequence[tuple[str, Any]], parts: Sequence[str]) -> str:
    items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in facts)
    return f"<div><h3>{html.escape(title)}</h3><ul>{items}</ul>{''.join(parts)}</div>"


def cols(frame: pd.DataFrame, wanted: Sequence[str]) -> pd.DataFrame:
    return frame[[c for c in wanted if c in frame.columns]]


def temporary_png(draw: Callable[[Path], Path | None]) -> str:
    """``draw`` a figure into a temporary directory and embed it."""
    with tempfile.TemporaryDirectory() as tmp:
        return img(draw(Path(tmp)))
