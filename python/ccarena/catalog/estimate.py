"""What reproducing catalog ids will cost, said before anything runs
(``ccarena reproduce ID|PAPER|all --estimate [--quick] [--jobs N]``).

Per id: its runs (sweep points x repeats, each distinct run once, as
``run_sweep`` runs them), the most flows in one run, the bottleneck packets
summed over the runs (the core's upper bound, ``cost.estimate``) and the
wall time on one worker and on N (``cost.makespan``: the runs submitted
longest first, as ``run_sweep`` submits them). Each run's time is
``Cost.run_s``: its packets at the time per packet measured for the flows
it has sending at once, plus ``cost.RUN_OVERHEAD_S``.

Ids that plot the same sweep (bbrv2-eval fig4 and fig5, ...) share one
experiment directory, so ``reproduce`` runs those runs once: a row shows the
id's own cost, marked when an earlier id already ran its runs, and the total
counts each run once. ``reproduce`` runs the ids one after another, each
sweep on its own pool, so the total on N workers is the sum of the ids'
makespans over the runs left to them.

The repeats of a grid point differ only in their seed, which changes no
cost: each grid point is built once (``sweep.iter_grid``), which keeps the
estimate of the whole catalog to seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cost import EXPAND_PER_FLOW_S, LIMITS, MAX_POINTS, MAX_SWEEP_FLOWS, estimate, makespan
from ..scenario import Scenario
from ..sweep import iter_grid, parse_sweep
from .base import Entry
from .capabilities import missing

__all__ = ["IdCost", "Totals", "estimate_entries", "estimate_entry", "totals"]


@dataclass
class IdCost:
    """The estimated cost of one catalog id's sweep (``quick``: its quick form)."""

    id: str
    quick: bool
    #: The experiment directory's name (ids with the same one share runs).
    experiment: str = ""
    #: Each distinct run's estimated wall seconds (``Cost.run_s``), in point order.
    seconds: list[float] = field(default_factory=list)
    #: Each run's key, (grid point hash, repeat): equal keys are one run.
    keys: list[tuple[str, int]] = field(default_factory=list)
    #: Bottleneck packets summed over the runs (an upper bound).
    packets: float = 0.0
    #: The most flows in one run, and the most sending at once.
    flows: int = 0
    active_flows: int = 0
    #: Whether a run or the sweep is above the cost limits (``reproduce`` needs ``--yes``).
    over_limits: bool = False
    #: Capabilities the core lacks (nothing estimated then).
    missing: list[str] = field(default_factory=list)
    #: Of ``seconds``, the runs no earlier id of the same list already runs.
    new_seconds: list[float] = field(default_factory=list)
    new_packets: float = 0.0
    #: The earlier id whose experiment directory already holds runs of this one.
    shared_with: str | None = None
    #: Building the sweep's points before any run (``cost.EXPAND_PER_FLOW_S``), serial.
    serial_s: float = 0.0

    @property
    def runs(self) -> int:
        return len(self.seconds)

    def hours(self, workers: int = 1) -> float:
        """Wall hours of its runs on ``workers`` workers, after building them."""
        return (self.serial_s + makespan(self.seconds, workers)) / 3600

    def new_hours(self, workers: int = 1) -> float:
        """Wall hours of the runs left to it after the ids before it (its
        sweep's points are built all the same)."""
        return (self.serial_s + makespan(self.new_seconds, workers)) / 3600


@dataclass(frozen=True)
class _Grid:
    """One built sweep: per grid point (hash, run seconds, packets, flows,
    active flows, over the run limits) and the repeats."""

    points: tuple[tuple[str, float, float, int, int, bool], ...]
    repeats: int
    size: int


def estimate_entry(entry: Entry, quick: bool, **options: Any) -> IdCost:
    """The cost of ``entry``'s full (or ``quick``) form; ``options`` as
    ``reproduce`` passes them to ``build`` (``trace``)."""
    return estimate_entries([entry], quick, options)[0]


def estimate_entries(
    entries: Sequence[Entry],
    quick: bool,
    options: dict[str, Any] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> list[IdCost]:
    """The cost of each entry, in order; runs an earlier entry of the list
    already runs in the same experiment directory are counted once (in
    ``new_seconds`` of the first)."""
    options = options or {}
    grids: dict[str, _Grid] = {}  # a sweep built once for the ids that share it
    first: dict[tuple[str, str, int], str] = {}  # (experiment, point hash, repeat) -> id
    out = []
    for entry in entries:
        cost = IdCost(entry.id, quick)
        out.append(cost)
        cost.missing = missing(entry.needs)
        if cost.missing:
            continue
        if progress is not None:
            progress(entry.id)
        opts = {k: options.get(k) for k in sorted(entry.options)}
        doc = entry.build(quick, **opts)
        cost.experiment = str(doc.get("name", entry.id.replace("/", "-"))) + ("-quick" if quick else "")
        canon = json.dumps(doc, sort_keys=True, default=str)
        grid = grids.get(canon)
        if grid is None:
            grid = grids[canon] = _build(doc, entry.id)
        cost.over_limits = any(p[5] for p in grid.points) or grid.size > MAX_POINTS
        seen: set[tuple[str, int]] = set()
        sweep_flows = 0
        for h, seconds, packets, flows, active, _ in grid.points:
            sweep_flows += flows * grid.repeats
            cost.serial_s += flows * grid.repeats * EXPAND_PER_FLOW_S
            cost.flows = max(cost.flows, flows)
            cost.active_flows = max(cost.active_flows, active)
            for r in range(grid.repeats):
                key = (h, r)
                if key in seen:  # run_sweep runs a run once however many points it is
                    continue
                seen.add(key)
                cost.keys.append(key)
                cost.seconds.append(seconds)
                cost.packets += packets
                owner = first.setdefault((cost.experiment, h, r), entry.id)
                if owner == entry.id:
                    cost.new_seconds.append(seconds)
                    cost.new_packets += packets
                elif cost.shared_with is None:
                    cost.shared_with = owner
        cost.over_limits = cost.over_limits or sweep_flows > MAX_SWEEP_FLOWS
    return out


@dataclass(frozen=True)
class Totals:
    """A list of ids' cost, each run once (ids sharing runs count them once)."""

    runs: int
    packets: float
    #: Wall seconds on one worker and on ``jobs``, one id after another.
    one_s: float
    many_s: float


def totals(costs: Sequence[IdCost], jobs: int) -> Totals:
    """The sum of ``costs`` (those estimated) as ``reproduce`` would run them."""
    done = [c for c in costs if not c.missing]
    return Totals(
        runs=sum(len(c.new_seconds) for c in done),
        packets=sum(c.new_packets for c in done),
        one_s=sum(c.new_hours(1) for c in done) * 3600,
        many_s=sum(c.new_hours(jobs) for c in done) * 3600,
    )


def _build(doc: dict[str, Any], source: str) -> _Grid:
    scn = Scenario.from_dict(doc, source=source)
    spec = parse_sweep(scn.sweep, source)
    points = []
    for p in iter_grid(scn, spec):
        c = estimate(p.scenario)
        over = any(getattr(c, k) > v for k, v in LIMITS.items())
        points.append(
            (p.hash, c.run_s, c.bottleneck_packets, len(p.scenario.normalized["flows"]), c.active_flows, over)
        )
    return _Grid(tuple(points), spec.repeats, spec.size)
