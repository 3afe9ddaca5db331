"""The result tables' columns as the core defines them
(``crates/sim/src/metrics/schema.rs``: the one definition both backends
fill), without pandas or pyarrow: ``ccarena.results`` builds Arrow schemas
and conforms frames from these."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import _core

__all__ = ["ColumnDef", "columns", "numeric_columns"]


@dataclass(frozen=True)
class ColumnDef:
    """One column of a result table: its name, Arrow type name ("int64",
    "float64", "string"), unit and definition."""

    name: str
    type: str
    unit: str
    doc: str


@functools.cache
def columns() -> dict[str, tuple[str, list[ColumnDef]]]:
    """Each table's row (what one row is) and fixed columns, from the core:
    the one definition (``crates/sim/src/metrics/schema.rs``) that both
    backends fill and ``docs/results.md`` prints. The samples table has more
    columns after these (each algorithm's state; the Linux backend adds
    kernel fields)."""
    return {t: (row, [ColumnDef(*c) for c in cols]) for t, row, cols in _core.schema()}


def numeric_columns(table: str) -> list[str]:
    """The numeric columns of ``table`` (``summary``, ``flows``, ...), in order."""
    return [c.name for c in columns()[table][1] if c.type in ("int64", "float64")]
