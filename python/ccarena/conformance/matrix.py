"""A conformance matrix: groups of cells, each a scenario; how many kernel
runs and simulator seeds judge each; the tolerances.

Matrix file (TOML; ``conformance/matrix.toml`` is the shipped one)::

    description = "..."
    duration = "15s"        # every cell's simulated time, unless its scenario says otherwise
    linux_repeats = 5       # kernel runs per cell: a rule fixed before any run is seen,
                            # the same for every cell of a group (a group may set its own)
    sim_seeds = 10          # simulator seeds per cell
    sim_hosts = "defaults"  # the simulator's hosts (hosts.py): "defaults" (as a user runs it),
                            # "per-run", "kernel", "none", or a host profile (file or shipped name)
    identical_flows = "ranked"  # flows alike but for their index: judged by rank ("ranked")
                                # or each by its own index ("indexed")

    [tolerance]             # judge.py's TOLERANCE: metric = absolute, or { absolute, relative }
    share = { absolute = 0.01, relative = 0.10 }

    [[group]]
    name = "mixed-rtt"
    linux_repeats = 5       # optional: this group's rule
    [group.scenario]        # a scenario, as in any scenario file
    bottleneck = { rate = "50Mbps", buffer = "1BDP" }
    flows = [{ cc = "cubic", rtt = "10ms" }, { cc = "cubic", rtt = "50ms" }]
    [group.sweep]           # its cells: a sweep grid (zip allowed; repeats are not)
    "bottleneck.buffer" = ["0.25BDP", "1BDP", "4BDP"]
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..profiles import ProfileError, resolve
from ..scenario import Scenario, ScenarioError, read_toml
from ..sweep import derive_seed, expand, parse_sweep
from .hosts import MODES, HostsMode, HostTable
from .judge import METRICS, TOLERANCE, Tolerance

__all__ = ["COUNTS", "Cell", "Matrix", "load_matrix", "select"]

MATRIX_KEYS = (
    "description",
    "duration",
    "linux_repeats",
    "sim_seeds",
    "sim_hosts",
    "identical_flows",
    "tolerance",
    "group",
)
GROUP_KEYS = ("name", "scenario", "sweep", "description", "linux_repeats")
#: How flows alike but for their index are judged (see judge.py).
IDENTICAL_FLOWS = ("ranked", "indexed")
#: Fields of a normalized flow that tell apart flows otherwise alike (their
#: position, name and host index): left out of a flow's class.
_NOT_CLASS = ("id", "group", "label", "host")
#: The run counts a matrix sets: (default, least, most).
COUNTS = {"linux_repeats": (3, 1, 100), "sim_seeds": (5, 1, 1000)}


@dataclass(frozen=True)
class Cell:
    """One scenario of the matrix: its group, its position, its swept
    values, and the number of kernel runs its group's rule judges it on."""

    group: str
    index: int
    values: dict[str, Any]
    scenario: Scenario = field(repr=False)
    repeats: int = 3

    @property
    def id(self) -> str:
        return f"{self.group}/{self.index}"

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values.items()) or "-"

    def classes(self) -> list[list[int]]:
        """The flow ids of each class of two or more identical flows (alike
        but for ``_NOT_CLASS``), each sorted, in order of their first flow."""
        by: dict[str, list[int]] = {}
        for f in self.scenario.normalized["flows"]:
            key = json.dumps({k: v for k, v in f.items() if k not in _NOT_CLASS}, sort_keys=True)
            by.setdefault(key, []).append(int(f["id"]))
        return [sorted(ids) for ids in by.values() if len(ids) > 1]

    def seeds(self, n: int) -> list[int]:
        base = int(self.scenario.normalized["seed"])
        return [derive_seed(base, r) for r in range(n)]

    def with_seed(self, seed: int, hosts: HostTable | None = None) -> Scenario:
        """The cell's scenario at ``seed``; with ``hosts``, its hosts'
        turnarounds drawn from that table."""
        doc = self.scenario.raw if hosts is None else hosts.onto(self.scenario.raw)
        return Scenario.from_dict(doc, source=self.scenario.source, overrides=[f"seed={seed}"])

    @property
    def rate_mbps(self) -> float:
        """The bottleneck's rate (the slowest link's in a network), Mbit/s."""
        n = self.scenario.normalized
        links = n.get("links") or [n.get("bottleneck") or {}]
        rates = [float(x.get("rate_bps") or 0) for x in links if x.get("rate_bps")]
        return min(rates) / 1e6 if rates else math.nan


@dataclass
class Matrix:
    source: str
    description: str
    linux_repeats: int
    sim_seeds: int
    tolerance: dict[str, Tolerance]
    cells: list[Cell]
    sim_hosts: HostsMode = "defaults"
    identical_flows: str = "ranked"

    def with_counts(
        self, linux_repeats: int | None = None, sim_seeds: int | None = None, source: str = "<counts>"
    ) -> Matrix:
        """This matrix with other run counts (None: keep), every cell's rule
        the new count, checked against the bounds a matrix file has
        (``COUNTS``; ``ScenarioError`` naming ``source`` and the count
        otherwise)."""
        given = {
            k: v for k, v in (("linux_repeats", linux_repeats), ("sim_seeds", sim_seeds)) if v is not None
        }
        counts = {k: _count(given, k, source) for k in given}
        cells = self.cells
        if "linux_repeats" in counts:
            cells = [dataclasses.replace(c, repeats=counts["linux_repeats"]) for c in cells]
        return dataclasses.replace(
            self,
            linux_repeats=counts.get("linux_repeats", self.linux_repeats),
            sim_seeds=counts.get("sim_seeds", self.sim_seeds),
            cells=cells,
        )


def _fail(source: str, where: str, what: str) -> ScenarioError:
    return ScenarioError(source, where, what)


def _count(doc: Mapping[str, Any], key: str, source: str, where: str | None = None) -> int:
    default, lo, hi = COUNTS[key]
    v = doc.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _fail(source, where or key, f"{v!r}: expected an integer from {lo} to {hi}")
    return v


def hosts_mode(value: Any, source: str, where: str = "sim_hosts", base: Path | None = None) -> HostsMode:
    """A ``sim_hosts`` value: one of ``MODES``, or a profile (a file, read
    relative to ``base``, or a shipped profile's name)."""
    if not isinstance(value, str):
        raise _fail(source, where, f"{value!r}: expected one of {', '.join(MODES)} or a host profile")
    if value in MODES:
        return value
    try:
        return resolve(value, base)
    except ProfileError as e:
        raise _fail(source, where, f"{e}; or one of {', '.join(MODES)}") from None


def _tolerances(raw: Any, source: str) -> dict[str, Tolerance]:
    tol = dict(TOLERANCE)
    if not isinstance(raw, dict):
        raise _fail(source, "tolerance", "expected a table of metric = absolute tolerance")
    for k, v in raw.items():
        if k not in TOLERANCE:
            raise _fail(source, f"tolerance.{k}", f"unknown metric; expected one of {', '.join(METRICS)}")
        parts = v if isinstance(v, dict) else {"absolute": v}
        for part, x in parts.items():
            if part not in ("absolute", "relative"):
                raise _fail(source, f"tolerance.{k}.{part}", "unknown field; expected absolute or relative")
            if isinstance(x, bool) or not isinstance(x, int | float) or not (0 <= x < math.inf):
                raise _fail(source, f"tolerance.{k}.{part}", f"{x!r}: expected a non-negative number")
        tol[k] = dataclasses.replace(TOLERANCE[k], **{p: float(x) for p, x in parts.items()})
    return tol


def load_matrix(path: str | Path) -> Matrix:
    """Read and check a matrix file; every cell validated by the core.
    Raises ``ScenarioError`` (one line: file, field, what is allowed)."""
    source = str(path)
    doc = read_toml(path)
    for k in doc:
        if k not in MATRIX_KEYS:
            raise _fail(source, k, f"unknown field; expected one of {', '.join(MATRIX_KEYS)}")
    linux_repeats = _count(doc, "linux_repeats", source)
    sim_seeds = _count(doc, "sim_seeds", source)
    sim_hosts = hosts_mode(doc.get("sim_hosts", "defaults"), source, base=Path(path).parent)
    identical = doc.get("identical_flows", "ranked")
    if identical not in IDENTICAL_FLOWS:
        raise _fail(source, "identical_flows", f"{identical!r}: expected one of {', '.join(IDENTICAL_FLOWS)}")
    tol = _tolerances(doc.get("tolerance", {}), source)
    groups = doc.get("group")
    if not isinstance(groups, list) or not groups:
        raise _fail(source, "group", "expected one or more [[group]] tables")
    cells: list[Cell] = []
    names: set[str] = set()
    for gi, g in enumerate(groups):
        where = f"group[{gi}]"
        if not isinstance(g, dict):
            raise _fail(source, where, "expected a table")
        for k in g:
            if k not in GROUP_KEYS:
                raise _fail(source, f"{where}.{k}", f"unknown field; expected one of {', '.join(GROUP_KEYS)}")
        name = g.get("name")
        if not isinstance(name, str) or not name or "/" in name or name in names:
            raise _fail(source, f"{where}.name", f"{name!r}: expected a unique name without '/'")
        names.add(name)
        repeats = (
            _count(g, "linux_repeats", source, f"{where}.linux_repeats")
            if "linux_repeats" in g
            else linux_repeats
        )
        body = g.get("scenario")
        if not isinstance(body, dict):
            raise _fail(source, f"{where}.scenario", "expected a scenario table")
        sdoc = {"duration": doc.get("duration", "15s"), **body, "name": f"conformance-{name}"}
        sweep = g.get("sweep")
        if sweep is not None and "repeats" in sweep:
            raise _fail(source, f"{where}.sweep.repeats", "not here: use linux_repeats and sim_seeds")
        try:
            scn = Scenario.from_dict(sdoc, source=f"{source}: {where}.scenario")
            spec = parse_sweep(sweep, f"{source}: {where}.sweep")
            points = expand(scn, spec)
        except ScenarioError as e:
            raise _fail(source, f"{where}.{e.path}" if e.path else where, e.message) from None
        for p in points:
            cells.append(Cell(name, p.index, p.values, p.scenario, repeats))
    return Matrix(
        source, str(doc.get("description", "")), linux_repeats, sim_seeds, tol, cells, sim_hosts, identical
    )


def select(
    cells: Sequence[Cell],
    groups: Sequence[str] = (),
    part: tuple[int, int] | None = None,
    ids: Sequence[str] = (),
) -> list[Cell]:
    """The cells of the given groups and with the given ids (shell patterns
    each; none given: all), then part K of N."""
    out = [c for c in cells if not groups or any(fnmatch.fnmatchcase(c.group, g) for g in groups)]
    out = [c for c in out if not ids or any(fnmatch.fnmatchcase(c.id, i) for i in ids)]
    if part is not None:
        k, n = part
        out = [c for i, c in enumerate(out) if i % n == k - 1]
    return out
