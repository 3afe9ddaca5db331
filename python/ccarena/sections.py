"""The grammar of a scenario file's Python-only sections, checked as the
file is read (``Scenario.from_dict``): ``[sweep]``, which ``sweep.py``
expands into runs, and ``[[expect]]``, which ``expect.py`` checks results
against (each module's docstring describes its section).

Below ``scenario.py`` (it needs only ``keys.py``), so the scenario checks
its sections without importing what runs them.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .keys import ScenarioError, parse_key

__all__ = [
    "OPS",
    "SCOPES",
    "Axis",
    "Expectation",
    "SweepSpec",
    "column_name",
    "parse_expectations",
    "parse_sweep",
]

# --------------------------------------------------------------------------- [sweep]

#: The keys of ``[sweep]`` that are not axes.
RESERVED = ("zip", "repeats")


def column_name(key: str) -> str:
    """The canonical dotted form of a key, which names its column:
    ``flows[0].cc`` -> ``flows.0.cc``."""
    return ".".join(str(s) for s in parse_key(key))


@dataclass(frozen=True)
class Axis:
    """Keys that advance together and their values: ``values[i]`` holds one
    value per key. A plain grid axis has one key."""

    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class SweepSpec:
    axes: tuple[Axis, ...] = ()
    repeats: int = 1

    @property
    def keys(self) -> list[str]:
        return [k for a in self.axes for k in a.keys]

    @property
    def size(self) -> int:
        n = self.repeats
        for a in self.axes:
            n *= len(a.values)
        return n


def _flatten(table: Mapping[str, Any], prefix: str, out: dict[str, Any], source: str) -> None:
    """Nested tables (TOML's unquoted dotted keys) -> dotted keys; a list ends a key."""
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            _flatten(v, key, out, source)
        else:
            try:
                name = column_name(key)
            except ValueError as e:
                raise ScenarioError(source, f"sweep.{key}", str(e)) from None
            out.pop(name, None)  # a later spelling of the same key wins
            out[name] = v


def _values(source: str, key: str, v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise ScenarioError(source, f"sweep.{key}", f"must be a list of values, not {json.dumps(v)}")
    if not v:
        raise ScenarioError(source, f"sweep.{key}", "has no values")
    return v


def parse_sweep(sweep: Mapping[str, Any] | None, source: str = "<dict>") -> SweepSpec:
    """Check a ``[sweep]`` table and return its axes; raises ``ScenarioError``
    naming ``sweep.<key>``."""
    if not sweep:
        return SweepSpec()
    repeats = sweep.get("repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ScenarioError(source, "sweep.repeats", f"must be a positive integer, not {repeats!r}")
    grid: dict[str, Any] = {}
    _flatten({k: v for k, v in sweep.items() if k not in RESERVED}, "", grid, source)
    groups: list[list[str]] = []
    zspec = sweep.get("zip")
    if zspec is not None:
        tables: list[Mapping[str, Any]] = []
        if isinstance(zspec, Mapping):
            tables = [zspec]
        elif isinstance(zspec, list) and all(isinstance(z, Mapping) for z in zspec):
            tables = list(zspec)
        elif isinstance(zspec, list) and all(
            isinstance(z, list) and all(isinstance(k, str) for k in z) for z in zspec
        ):
            for z in zspec:
                names = []
                for k in z:
                    try:
                        name = column_name(k)
                    except ValueError as e:
                        raise ScenarioError(source, "sweep.zip", str(e)) from None
                    if name not in grid:
                        raise ScenarioError(
                            source, "sweep.zip", f"{k!r} is zipped but has no values in [sweep]"
                        )
                    names.append(name)
                groups.append(names)
        else:
            raise ScenarioError(
                source,
                "sweep.zip",
                'must be a list of key lists (zip = [["a.b", "c.d"]]), a table of keys and values '
                "([sweep.zip]) or an array of such tables ([[sweep.zip]])",
            )
        for t in tables:
            flat: dict[str, Any] = {}
            _flatten(t, "", flat, source)
            for name in flat:
                if name in grid:
                    raise ScenarioError(source, f"sweep.{name}", "is given both in [sweep] and in its zip")
            grid.update(flat)
            groups.append(list(flat))
    seen: set[str] = set()
    for g in groups:
        for name in g:
            if name in seen:
                raise ScenarioError(source, f"sweep.{name}", "is in more than one zip group")
            seen.add(name)
    for name in grid:
        if name.split(".")[0] in ("sweep", "expect", "name"):
            raise ScenarioError(source, f"sweep.{name}", "cannot be swept")
    values = {name: _values(source, name, v) for name, v in grid.items()}
    group_of = {name: i for i, g in enumerate(groups) for name in g}
    axes: list[Axis] = []
    placed: set[int] = set()
    for name in grid:  # in the order written; a group sits where its first key is
        gi = group_of.get(name)
        if gi is None:
            axes.append(Axis((name,), tuple((v,) for v in values[name])))
            continue
        if gi in placed:
            continue
        placed.add(gi)
        keys = tuple(groups[gi])
        lengths = {len(values[k]) for k in keys}
        if len(lengths) != 1:
            detail = ", ".join(f"{k} has {len(values[k])}" for k in keys)
            raise ScenarioError(source, "sweep.zip", f"zipped keys need equally many values: {detail}")
        axes.append(Axis(keys, tuple(zip(*(values[k] for k in keys), strict=True))))
    return SweepSpec(tuple(axes), repeats)


# --------------------------------------------------------------------------- [[expect]]

OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
SCOPES = ("run", "flow", "group")
_FIELDS = {"metric", "op", "value", "scope", "flow", "group", "beside", "when", "tolerance", "name"}


@dataclass(frozen=True)
class Expectation:
    metric: str
    op: str
    value: float
    scope: str = "run"
    flow: int | None = None
    group: int | None = None
    when: dict[str, Any] = field(default_factory=dict)
    tolerance: float = 0.0
    name: str = ""
    beside: int | None = None

    def describe(self) -> str:
        if self.name:
            return self.name
        where = self.scope
        if self.flow is not None:
            where = f"flow {self.flow}"
        elif self.group is not None:
            where = f"group {self.group}"
        elif self.scope != "run":
            where = f"every {self.scope}"
        if self.beside is not None:
            where += f" beside flow {self.beside}"
        text = f"{self.metric} {self.op} {self.value:g} ({where})"
        if self.when:
            text += " when " + ", ".join(f"{k}={v}" for k, v in self.when.items())
        return text

    def holds(self, actual: float) -> bool:
        if actual is None or (isinstance(actual, float) and math.isnan(actual)):
            return False
        if self.op in ("==", "!=") and self.tolerance > 0:
            equal = abs(actual - self.value) <= self.tolerance
            return equal if self.op == "==" else not equal
        return bool(OPS[self.op](actual, self.value))


def _number(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def parse_expectations(
    items: Iterable[Mapping[str, Any]] | None, source: str = "<dict>"
) -> list[Expectation]:
    """Check ``[[expect]]`` tables; raises ``ScenarioError`` naming ``expect[i].<field>``."""
    out: list[Expectation] = []
    for i, e in enumerate(items or []):
        where = f"expect[{i}]"
        unknown = sorted(set(e) - _FIELDS)
        if unknown:
            raise ScenarioError(
                source,
                f"{where}.{unknown[0]}",
                f"unknown field; expected one of {', '.join(sorted(_FIELDS))}",
            )
        metric = e.get("metric")
        if not isinstance(metric, str) or not metric:
            raise ScenarioError(source, f"{where}.metric", 'must name a column, e.g. metric = "jain"')
        op = e.get("op", ">=")
        if not isinstance(op, str) or op not in OPS:  # a list or table is not hashable
            raise ScenarioError(source, f"{where}.op", f"must be one of {' '.join(OPS)}, not {op!r}")
        value = e.get("value")
        if not _number(value):
            raise ScenarioError(source, f"{where}.value", f"must be a number, not {value!r}")
        scope = e.get("scope")
        if scope is None:
            scope = "flow" if "flow" in e else "group" if "group" in e else "run"
        if scope not in SCOPES:
            raise ScenarioError(
                source, f"{where}.scope", f"must be one of {', '.join(SCOPES)}, not {scope!r}"
            )
        sel: dict[str, int | None] = {"flow": None, "group": None}
        for k in ("flow", "group"):
            if k in e:
                v = e[k]
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise ScenarioError(source, f"{where}.{k}", f"must be a flow index >= 0, not {v!r}")
                if scope != k:
                    raise ScenarioError(source, f"{where}.{k}", f'selects a {k}: it needs scope = "{k}"')
                sel[k] = v
        beside = e.get("beside")
        if beside is not None:
            if not isinstance(beside, int) or isinstance(beside, bool) or beside < 0:
                raise ScenarioError(source, f"{where}.beside", f"must be a flow index >= 0, not {beside!r}")
            if scope == "run":
                raise ScenarioError(
                    source, f"{where}.beside", 'selects flows: it needs scope = "flow" or "group"'
                )
        when = e.get("when", {})
        if not isinstance(when, Mapping):
            raise ScenarioError(source, f"{where}.when", "must be a table of swept keys and values")
        tol = e.get("tolerance", 0.0)
        if not _number(tol) or tol < 0:
            raise ScenarioError(source, f"{where}.tolerance", f"must be a number >= 0, not {tol!r}")
        try:
            when = {column_name(k): v for k, v in when.items()}
        except ValueError as err:
            raise ScenarioError(source, f"{where}.when", str(err)) from None
        out.append(
            Expectation(
                metric,
                op,
                float(value),
                scope,
                sel["flow"],
                sel["group"],
                when,
                float(tol),
                str(e.get("name", "")),
                beside,
            )
        )
    return out
