"""The result of drawing a figure: where it is and the numbers it shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Drawn"]


@dataclass
class Drawn:
    """``png`` (an SVG with the same name sits beside it) and ``data``: the
    plotted numbers as a tidy frame, to write as CSV."""

    png: Path
    data: pd.DataFrame

    @property
    def svg(self) -> Path:
        return self.png.with_suffix(".svg")

    def write_csv(self, path: str | Path | None = None) -> Path:
        out = Path(path) if path is not None else self.png.with_suffix(".csv")
        self.data.to_csv(out, index=False, float_format="%.6g")
        return out
