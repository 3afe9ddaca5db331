"""Tables that fit the terminal they are printed on.

A table of many columns printed at 80 columns becomes rows of "…" in rich.
Every table the CLI prints is built here as :class:`Rows` (or wrapped in
:class:`Fitted` with a narrow form of its own): at render time, when the
console is too narrow for the table's natural width, it is printed as
records instead, one block per row with each column's header beside its
value, so every number stays readable at any width from 80 columns up.

In the record form a value too long for its column is broken where it
reads (after a space, ``>``, ``,``, ``;``, ``/``, ``|``, ``=``), never
inside a name or a number unless one alone is wider than the column; the
row's key cells head its block on one line when they fit beside the
values, else each on a line of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = ["Fitted", "Rows", "wrap_value"]

#: Borders and padding of a two-column table: "│ " + field + " │ " + value + " │".
_FRAME = 7

#: A piece of a value that ends where a line may break: after spaces or one
#: of the separators.
_PIECE = re.compile(r"[^\s>,;/|=]*(?:[>,;/|=]+\s*|\s+|$)")


class Fitted:
    """Renders ``wide`` when its natural width fits the console, else
    ``narrow()`` (built only when needed)."""

    def __init__(self, wide: RenderableType, narrow: Callable[[], RenderableType]):
        self.wide = wide
        self.narrow = narrow

    def fits(self, console: Console, width: int) -> bool:
        # Measured without a limit: rich clamps a measurement to the width
        # it is given, and would squeeze the table into "…" cells.
        natural = Measurement.get(console, console.options.update_width(1_000_000), self.wide).maximum
        return natural <= width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield self.wide if self.fits(console, options.max_width) else self.narrow()


def wrap_value(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after
    spaces and separators (``>``, ``,``, ``;``, ``/``, ``|``, ``=``); a
    piece wider than ``width`` alone is cut at ``width``."""
    width = max(width, 1)
    lines: list[str] = []
    line = ""
    for piece in _PIECE.findall(text):
        if not piece:
            continue
        if len(line) + len(piece.rstrip()) <= width:
            line += piece
            continue
        if line.strip():
            lines.append(line.rstrip())
        line = piece.lstrip() if lines else piece
        while len(line.rstrip()) > width:
            lines.append(line[:width])
            line = line[width:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


#: A cell: text, or rich ``Text`` for a styled one.
Cell: TypeAlias = "str | Text"


@dataclass
class Rows:
    """A titled table of cells (text, or rich ``Text`` for a styled one):
    ``columns`` are (header, justify); the first ``key`` columns name a row,
    and head its block in the record form."""

    title: str
    columns: Sequence[tuple[str, str]]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str | None = None
    key: int = 1
    show_header: bool = True

    def add_row(self, *cells: Any) -> None:
        self.rows.append([c if isinstance(c, Text) else str(c) for c in cells])

    def wide(self) -> Table:
        t = Table(title=self.title, title_justify="left", caption=self.caption, show_header=self.show_header)
        for name, justify in self.columns:
            t.add_column(name, justify=justify, no_wrap=True)
        for r in self.rows:
            t.add_row(*r)
        return t

    def records(self, width: int = 80) -> Table:
        """One block per row within ``width`` columns: its key cells as a
        heading, then each other column's header and value."""
        heads = [name for name, _ in self.columns]
        field_w = min(max((len(h) for h in heads), default=1), max(width // 2 - _FRAME, 8))
        value_w = max(width - field_w - _FRAME, 8)

        def fit(cell: Cell) -> Cell:
            return cell if isinstance(cell, Text) else "\n".join(wrap_value(cell, value_w))

        def plain(cell: Cell) -> str:
            return cell.plain if isinstance(cell, Text) else cell

        rows = [[fit(c) for c in r] for r in self.rows]
        widest = max((len(ln) for r in rows for c in r[self.key :] for ln in plain(c).split("\n")), default=0)
        headings = [
            Text(" · ").join(
                Text.assemble(f"{h} " if h else "", v)
                for h, v in zip(heads[: self.key], r[: self.key], strict=True)
            )
            for r in self.rows
        ]
        # The key on one line when it fits beside the values, else a line a cell.
        one_line = all("\n" not in h.plain and h.cell_len + widest + _FRAME <= width for h in headings)
        t = Table(title=self.title, title_justify="left", caption=self.caption, show_header=False)
        t.add_column("field", style="dim", max_width=None if one_line else field_w, overflow="fold")
        t.add_column("value", overflow="fold")
        for i, r in enumerate(rows):
            if i:
                t.add_section()
            if one_line:
                t.add_row(headings[i], "", style="bold")
            else:
                for h, v in zip(heads[: self.key], r[: self.key], strict=True):
                    t.add_row(h, v, style="bold")
            for h, v in zip(heads[self.key :], r[self.key :], strict=True):
                t.add_row(h, v)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield Fitted(self.wide(), lambda: self.records(options.max_width))
