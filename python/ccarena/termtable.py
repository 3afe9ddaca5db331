"""Tables that fit the terminal they are printed on.

A table of many columns printed at 80 columns becomes rows of "…" in rich.
Every table the CLI prints is built here as :class:`Rows` (or wrapped in
:class:`Fitted` with a narrow form of its own): at render time, when the
console is too narrow for the table's natural width, it is printed as
records instead, one block per row with each column's header beside its
value, so every number stays readable at any width from 80 columns up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.table import Table

__all__ = ["Fitted", "Rows"]


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


@dataclass
class Rows:
    """A titled table of text cells: ``columns`` are (header, justify); the
    first ``key`` columns name a row, and head its block in the record form."""

    title: str
    columns: Sequence[tuple[str, str]]
    rows: list[list[str]] = field(default_factory=list)
    caption: str | None = None
    key: int = 1
    show_header: bool = True

    def add_row(self, *cells: Any) -> None:
        self.rows.append([str(c) for c in cells])

    def wide(self) -> Table:
        t = Table(title=self.title, title_justify="left", caption=self.caption, show_header=self.show_header)
        for name, justify in self.columns:
            t.add_column(name, justify=justify, no_wrap=True)
        for r in self.rows:
            t.add_row(*r)
        return t

    def records(self) -> Table:
        """One block per row: its key cells as a heading, then each other
        column's header and value."""
        t = Table(title=self.title, title_justify="left", caption=self.caption, show_header=False)
        t.add_column("field", style="dim")
        t.add_column("value", overflow="fold")
        heads = [name for name, _ in self.columns]
        for i, r in enumerate(self.rows):
            if i:
                t.add_section()
            key = " · ".join(f"{h} {v}" for h, v in zip(heads[: self.key], r[: self.key], strict=True))
            t.add_row(key, "", style="bold")
            for h, v in zip(heads[self.key :], r[self.key :], strict=True):
                t.add_row(h, v)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield Fitted(self.wide(), self.records)
