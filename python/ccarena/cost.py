"""What a run or a sweep will cost, said before it starts.

The core estimates one run (``_core.cost``, ``Scenario::cost`` in Rust): an
upper bound on the bottleneck's packets (its capacity in full frames), the
events they cause, the rows of the sampled tables and the memory those take.
``check`` refuses, with one line naming the field to change, a run above
``LIMITS`` unless forced (``--yes`` on the command line, ``force=True`` in
Python); ``check_points`` does the same for the number of sweep points and
``check_sweep_flows`` for their flows.
``validate`` prints the estimate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .scenario import Scenario, ScenarioError

__all__ = [
    "LIMITS",
    "MAX_POINTS",
    "MAX_SWEEP_FLOWS",
    "Cost",
    "check",
    "check_points",
    "check_sweep_flows",
    "estimate",
]

#: Simulated bottleneck packets per wall second on the reference machine
#: (README, "Performance": 2-3 million), for the time estimate only.
PACKETS_PER_S = 2.0e6

#: Above any of these a run is refused unless forced: 500 million
#: bottleneck packets (about 4 minutes at 2 million/s; 100 Gbit/s for 30 s
#: is half of it), 4 GiB of tables, 50 million sample rows.
LIMITS = {"events": 2e9, "memory_bytes": 4 * 2**30, "sample_rows": 5e7}

#: Sweep points above which a sweep is refused unless forced (before any
#: point is built: 10^6 points took 3.3 GB before anything was said).
MAX_POINTS = 100_000

#: Flows summed over a sweep's points above which it is refused unless
#: forced: a sweep holds every point's normalized scenario until it is done,
#: about 2 KB a flow, so this keeps that near the 4 GiB of ``LIMITS`` (10
#: points of 100,000 flows took 2 GB and 36 s to build; 1,000 would take
#: 200 GB). The catalog's largest sweep (mixed-workload/fig2, paper scale)
#: has 1.6 million.
MAX_SWEEP_FLOWS = 2_000_000


@dataclass(frozen=True)
class Cost:
    bottleneck_packets: float
    events: float
    sample_rows: float
    queue_rows: float
    memory_bytes: float

    @property
    def wall_s(self) -> float:
        """Rough wall time at ``PACKETS_PER_S``."""
        return self.bottleneck_packets / PACKETS_PER_S

    def describe(self) -> str:
        return (
            f"~{self.bottleneck_packets:.3g} packets at the bottleneck (~{_duration(self.wall_s)} at "
            f"{PACKETS_PER_S / 1e6:g} million packets/s), {self.sample_rows:.3g} sample rows, "
            f"~{_bytes(self.memory_bytes)} of tables"
        )


def estimate(scn: Scenario) -> Cost:
    from . import _core

    return Cost(**_core.cost(json.dumps(scn.normalized)))


def check(scn: Scenario, force: bool = False) -> Cost:
    """The estimate; raises ``ScenarioError`` naming the field to change when
    it is above ``LIMITS`` and not ``force``."""
    c = estimate(scn)
    if force:
        return c
    over = {k: getattr(c, k) / v for k, v in LIMITS.items() if getattr(c, k) > v}
    if over:
        worst = max(over, key=over.get)
        # The tables' memory is the sample rows' unless there are many flows.
        rows = worst == "sample_rows" or (
            worst == "memory_bytes" and c.sample_rows * 240 > c.memory_bytes / 2
        )
        field, fix = (
            ("sample.interval", "raise sample.interval or shorten the duration")
            if rows
            else ("duration", "shorten the duration or lower the rate")
        )
        raise ScenarioError(
            scn.source,
            field,
            f"this run would cost {c.describe()}: above the limit of {_limit(worst)}; "
            f"{fix}, or force it (--yes)",
        )
    return c


def check_points(n: int, source: str, force: bool = False) -> None:
    """Refuse a sweep of more than ``MAX_POINTS`` points unless forced."""
    if n > MAX_POINTS and not force:
        raise ScenarioError(
            source,
            "sweep",
            f"{n:,} points (values x repeats): more than {MAX_POINTS:,}; "
            "sweep fewer values or force it (--yes)",
        )


def check_sweep_flows(n: int, source: str, force: bool = False) -> None:
    """Refuse a sweep of more than ``MAX_SWEEP_FLOWS`` flows (summed over
    its points; ``n`` so far) unless forced."""
    if n > MAX_SWEEP_FLOWS and not force:
        raise ScenarioError(
            source,
            "sweep",
            f"{n:,} flows or more over its points (flows x points): more than {MAX_SWEEP_FLOWS:,}; "
            "sweep fewer points or flows or force it (--yes)",
        )


def _limit(key: str) -> str:
    v = LIMITS[key]
    return {
        "events": f"{v:.3g} events",
        "memory_bytes": f"{_bytes(v)} of tables",
        "sample_rows": f"{v:.3g} sample rows",
    }[key]


def _bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _duration(s: float) -> str:
    if s < 1:
        return "under a second"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.2g} s"
