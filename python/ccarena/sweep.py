"""Sweeps: a scenario's ``[sweep]`` table expanded into concrete runs.

```toml
[sweep]
"bottleneck.buffer" = ["0.1BDP", "1BDP", "10BDP"]   # a grid axis: a dotted key and its values
"flows.0.cc" = ["cubic", "bbr1"]                      # crossed with every other axis
zip = [["flows.0.rtt", "flows.1.rtt"]]                 # these keys vary together (equal lengths)
repeats = 3                                            # each point 3 times, seeds derived below

[sweep.zip]                                            # or: one group of keys that vary together
"flows.0.count" = [1, 2, 5]
"flows.1.count" = [1, 1, 5]
```

Keys are dotted paths as ``--set`` takes them (``flows.0.cc`` or
``flows[0].cc``); written unquoted (``bottleneck.buffer = [...]`` under
``[sweep]``) TOML nests them, which means the same. Every key with a list of
values is an axis; ``zip`` names groups of axes that advance together instead
of being crossed: a list of key lists (the keys' values given beside it), a
table of keys and values (one group), or an array of such tables
(``[[sweep.zip]]``, one group each). The grid is the Cartesian product of the
axes and groups in the order written, the first varying slowest, then the
repeats innermost.

Seeds. A point's base seed is the scenario's ``seed`` (or the point's swept
``seed``). Repeat 0 runs with the base seed itself, so a one-point sweep is
exactly ``ccarena run``; repeat r >= 1 runs with

    seed(base, r) = int.from_bytes(sha256(f"ccarena-repeat:{base}:{r}")[:8], "big") >> 1

(a 63-bit integer, so it can be written back into a TOML file). Repeat r of
every point uses the same seed: the points differ only in what was swept
(common random numbers), and adding points or repeats never changes the
seeds of existing runs.

Each concrete run is validated by the core and named by the sha256 of its
normalized scenario, exactly as ``ccarena run`` names it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .cost import check, check_points, check_sweep_flows
from .keys import Override, ScenarioError, apply_override, parse_key
from .scenario import Scenario
from .sections import Axis, SweepSpec, column_name, parse_sweep

__all__ = [
    "Axis",
    "Point",
    "SweepSpec",
    "column_name",
    "derive_seed",
    "expand",
    "iter_grid",
    "iter_points",
    "matches",
    "narrow",
    "parse_sweep",
]


def derive_seed(base: int, repeat: int) -> int:
    """The seed of repeat ``repeat`` of a point whose base seed is ``base``
    (see the module docstring)."""
    if repeat == 0:
        return int(base)
    digest = hashlib.sha256(f"ccarena-repeat:{int(base)}:{int(repeat)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class Point:
    """One concrete run of a sweep."""

    index: int
    values: dict[str, Any]  # column name -> value as written
    repeat: int
    seed: int
    scenario: Scenario = field(repr=False)

    @property
    def hash(self) -> str:
        return self.scenario.hash

    def label(self) -> str:
        parts = [f"{k}={_short(v)}" for k, v in self.values.items()]
        parts.append(f"repeat={self.repeat}")
        return " ".join(parts)


def _short(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def narrow(
    sweep: Mapping[str, Any] | None,
    at: Mapping[str, list[str]],
    repeats: int | None = None,
    source: str = "<dict>",
) -> dict[str, Any]:
    """A ``[sweep]`` table cut down to some of its points: ``at`` maps swept
    keys to the values to keep, written as the run labels write them
    (``flows.0.count=2``, ``bottleneck.buffer=100BDP``); a zipped key keeps
    the whole zip columns where it has one of them. ``repeats`` replaces
    the number of repeats (the seeds of repeats 0..n-1 are the full sweep's,
    so the runs are the same runs). Raises ``ScenarioError`` naming the key
    and the values it has."""
    spec = parse_sweep(sweep, source)
    want: dict[str, set[str]] = {}
    for k, v in at.items():  # two spellings of one key (flows[0].cc, flows.0.cc) add up
        want.setdefault(column_name(k), set()).update(v)
    unknown = sorted(set(want) - set(spec.keys))
    if unknown:
        swept = ", ".join(spec.keys) or "nothing"
        raise ScenarioError(source, f"sweep.{unknown[0]}", f"is not swept here; the swept keys: {swept}")
    out: dict[str, Any] = {}
    zips: list[dict[str, list[Any]]] = []
    for axis in spec.axes:
        # Each axis's values as the labels write them, one column per key.
        labels = [[_short(v) for v in vals] for vals in axis.values]
        for i, k in enumerate(axis.keys):
            have = dict.fromkeys(row[i] for row in labels)
            missing = sorted(want.get(k, set()) - set(have))
            if missing:
                raise ScenarioError(
                    source, f"sweep.{k}", f"has no value {missing[0]}; its values: {', '.join(have)}"
                )
        keep = [
            vals
            for vals, row in zip(axis.values, labels, strict=True)
            if all(row[i] in want[k] for i, k in enumerate(axis.keys) if k in want)
        ]
        if not keep:
            raise ScenarioError(
                source, f"sweep.{axis.keys[0]}", "no zipped column has all the values asked for"
            )
        if len(axis.keys) == 1:
            out[axis.keys[0]] = [vals[0] for vals in keep]
        else:
            zips.append({k: [vals[i] for vals in keep] for i, k in enumerate(axis.keys)})
    if zips:
        out["zip"] = zips
    n = spec.repeats if repeats is None else repeats
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScenarioError(source, "sweep.repeats", f"must be a positive integer, not {n!r}")
    out["repeats"] = n
    return out


def _base_seed(doc: Mapping[str, Any]) -> int:
    seed = doc.get("seed", 1)
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 1


def expand(scn: Scenario, spec: SweepSpec | None = None, *, yes: bool = False) -> list[Point]:
    """Every concrete run of ``scn``'s sweep (one point for a scenario
    without one), each validated and hashed. Raises ``ScenarioError`` for a
    point the core rejects, naming the swept values, and (unless ``yes``)
    for more than ``cost.MAX_POINTS`` points, more than
    ``cost.MAX_SWEEP_FLOWS`` flows over the points or a point whose
    estimated cost is above ``cost.LIMITS``, before anything runs."""
    return list(iter_points(scn, spec, yes=yes))


def iter_points(scn: Scenario, spec: SweepSpec | None = None, *, yes: bool = False) -> Iterator[Point]:
    """The points of ``expand`` one at a time (``validate`` keeps none)."""
    if spec is None:
        spec = parse_sweep(scn.sweep, scn.source)
    check_points(spec.size, scn.source, force=yes)
    if not any(k == "flows" or k.startswith("flows.") for k in spec.keys):  # every point has the base's flows
        check_sweep_flows(spec.size * len(scn.normalized["flows"]), scn.source, force=yes)
    index = flows = 0
    for values, ovs, base in _combos(scn, spec):
        for r in range(spec.repeats):
            seed = derive_seed(base, r)
            concrete = _concrete(scn, ovs, seed, r)
            if r == 0:
                check(concrete, force=yes)  # the repeats cost the same
            flows += len(concrete.normalized["flows"])
            check_sweep_flows(flows, scn.source, force=yes)
            yield Point(index, dict(values), r, seed, concrete)
            index += 1


def iter_grid(scn: Scenario, spec: SweepSpec | None = None) -> Iterator[Point]:
    """Each point of the grid once, at repeat 0 (``index`` counts these),
    checked by the core but not against the cost limits: what an estimate
    needs, since the repeats differ only in their seed, which changes no
    cost. ``spec.repeats`` runs of each make the sweep."""
    if spec is None:
        spec = parse_sweep(scn.sweep, scn.source)
    for index, (values, ovs, base) in enumerate(_combos(scn, spec)):
        seed = derive_seed(base, 0)
        yield Point(index, dict(values), 0, seed, _concrete(scn, ovs, seed, 0))


def _combos(scn: Scenario, spec: SweepSpec) -> Iterator[tuple[dict[str, Any], list[Override], int]]:
    """The grid in order: each point's swept values, their overrides and its base seed."""
    for combo in itertools.product(*(a.values for a in spec.axes)):
        values: dict[str, Any] = {}
        ovs: list[Override] = []
        for axis, vals in zip(spec.axes, combo, strict=True):
            for key, v in zip(axis.keys, vals, strict=True):
                values[key] = v
                ovs.append(Override(parse_key(key), v, f"sweep {key}={_short(v)}"))
        doc = json.loads(json.dumps(scn.raw))
        for ov in ovs:
            try:
                apply_override(doc, ov)
            except ValueError as e:
                raise ScenarioError(scn.source, f"sweep.{ov.field}", str(e)) from None
        yield values, ovs, _base_seed(doc)


def _concrete(scn: Scenario, ovs: list[Override], seed: int, repeat: int) -> Scenario:
    """Repeat ``repeat`` (seed ``seed``) of the point the overrides ``ovs`` make."""
    return Scenario.from_dict(
        scn.raw, source=scn.source, overrides=[*ovs, Override(("seed",), seed, f"repeat {repeat}")]
    )


def matches(point: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Whether a run whose swept keys have ``values`` is at ``point`` (some
    of those keys and a value each): every key there, its value equal as
    given or as text (a TOML ``2`` and a column's ``"2"``)."""
    for k, v in point.items():
        if k not in values:
            return False
        have = values[k]
        if have != v and str(have) != str(v):
            return False
    return True
