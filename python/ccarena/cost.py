"""What a run or a sweep will cost, said before it starts.

The core estimates one run (``_core.cost``, ``Scenario::cost`` in Rust): an
upper bound on the bottleneck's packets (its capacity in full frames), the
events they cause, the rows of the sampled tables and their size, and the
most packets the network can hold. ``Cost.peak_bytes`` prices a run's peak
memory from those (the process, the flows, the packets, the samples held:
the tables wait on disk while a run goes on).
``check`` refuses, with one line naming the field to change, a run above
``LIMITS`` unless forced (``--yes`` on the command line, ``force=True`` in
Python); ``check_points`` does the same for the number of sweep points and
``check_sweep_flows`` for their flows.
``validate`` prints the estimate.

Wall time. ``NS_PER_PACKET`` is the simulator's measured time per
bottleneck packet against the number of flows sending at once (README,
"Performance"), interpolated linearly in log10(flows) between its points and
clamped at both ends; ``active_flows`` counts the flows that can send at
once (successive flows of a ``repeat`` chain count once, a sized flow only
while it could be sending). In a network a packet counts once per link it
leaves, and each one a link then puts on its delay line (a link with a
delay, loss or jitter after its queue; the dumbbell's bottleneck has none)
costs ``LINE_EVENT_COST`` of a packet more: its arrival at the next hop is
an event of its own. ``Cost.wall_s`` is one run's simulation and
``Cost.run_s`` adds ``RUN_OVERHEAD_S`` for everything around it;
``makespan`` spreads such runs over workers as a sweep does (longest first).
Since packets are the capacity's upper bound, so are the times, for links
the flows do not keep busy.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .scenario import Scenario, ScenarioError

__all__ = [
    "EXPAND_PER_FLOW_S",
    "FLOW_OVERHEAD_S",
    "LIMITS",
    "LINE_EVENT_COST",
    "MAX_POINTS",
    "MAX_SWEEP_FLOWS",
    "NS_PER_PACKET",
    "RUN_OVERHEAD_S",
    "Cost",
    "active_flows",
    "check",
    "check_points",
    "check_sweep_flows",
    "estimate",
    "makespan",
    "ns_per_packet",
]

#: Wall nanoseconds per bottleneck packet against the flows sending at once,
#: for the time estimates only: ``cargo bench -p ccarena-sim`` (README,
#: "Performance"), one core of this project's 2-core machines, model
#: version 7, calendar event queue, medians of three: CUBIC at 10 Gbit/s,
#: 1 flow 141 ns, 10 flows 162 (187 at 1 Gbit/s, 247 at 100 Mbit/s, where
#: more events fall on each packet), 100 flows 246, 1,000 flows 605, 10,000
#: flows 1,768. Rounded up to the 1 Gbit/s figure at 10 flows and below;
#: between the points linear in log10(flows), clamped at the ends.
NS_PER_PACKET: tuple[tuple[int, float], ...] = (
    (1, 190.0),
    (10, 190.0),
    (100, 250.0),
    (1_000, 610.0),
    (10_000, 1_770.0),
)

#: What a packet onto a link's delay line adds to the time of a packet at
#: ``NS_PER_PACKET``: its arrival at the next hop is one more event
#: (``Scenario::cost``'s ``line_packets``). Measured on parking lots of 1
#: Gbit/s links, each crossed by a Reno cross flow, and one long flow across
#: them all (2026-11-29, model 21), 5 ms after each link against the same
#: delays in the flows' own paths: 3.35 events a packet-hop against 2.36 on
#: 3 and on 32 links; 32 links 1.28x the instructions a packet-hop
#: (cachegrind, 4,359 against 3,414), and whole processes 1.35x the time
#: (median of 5 pairs, 1.24-1.54), 3 links 1.22x (1.14-1.46). About 0.3 of
#: a packet's time per event, which is what an event of such a run costs.
#: Not counted: 32 busy links each cost more than one (the same packets on
#: 32 links take 2.2x the time a packet-hop they take on 3, with the same
#: delays in the flows' paths in both, and 1.8x what one link carrying as
#: many flows and packets takes: each event touches another link's and
#: flow's state, 38 first-level cache misses a packet-hop against 12), so a
#: network of many busy links runs about 2x longer than estimated.
LINE_EVENT_COST = 0.3

#: Wall seconds per run besides its simulation, inside a sweep
#: (``Cost.run_s``; ``ccarena reproduce`` runs sweeps): a sweep's workers
#: start once, and a trivial run then costs about 0.02 s (building it,
#: writing its tables). A whole ``ccarena run`` process adds its start-up,
#: 0.73-0.79 s, which no estimate here includes.
RUN_OVERHEAD_S = 0.02

#: Wall seconds per flow of a run besides its simulation, in the worker
#: (``Cost.run_s``: normalizing it, writing its per-flow rows and samples):
#: a run of mixed-workload/fig2 (1,001 flows, 2 at once) took 0.100 s in
#: ``ccarena.run`` with its tables written, 0.019 s of it simulating.
FLOW_OVERHEAD_S = 80e-6

#: Wall seconds per flow per sweep point to build a sweep's points, in the
#: process that starts the sweep before any run (serial, whatever the
#: workers): 27.8 s for mixed-workload/fig2's 1,600 points of 1,001 flows.
EXPAND_PER_FLOW_S = 17e-6

#: Peak resident memory of a ``ccarena run --no-figure`` process around
#: the simulator: the interpreter, the package and the core (one CUBIC
#: flow for 10 s: 32.8 MiB; the intercept of 2,000 and 10,000 flows: 39 MiB).
PROCESS_BYTES = 34 * 2**20

#: Memory of each flow as built: its normalized spec, sender, receiver and
#: paths (5,000 against 1,000 flows of 100 KB sending a few at a time:
#: 9.0 KiB a flow).
FLOW_BYTES = 9 * 2**10

#: A flow's memory while it sends, beyond ``FLOW_BYTES``: its scoreboard,
#: queues and timers at their working size (10,000 against 2,000 bulk CUBIC
#: flows at 10 Gbit/s, 3 s, no samples: 16.3 KiB a flow in all).
ACTIVE_FLOW_BYTES = 7 * 2**10

#: Memory of each packet the network can hold (``Cost.packets_held``): a
#: sender's scoreboard entry, the packet on its path, the queues' slack (10
#: CUBIC flows at 100 Gbit/s with 1 BDP and at 10 Gbit/s with 10 BDP:
#: 170-240 bytes).
PACKET_BYTES = 200

#: A row of ``samples`` held while its batch fills and while it is written
#: (66,000 against 33,000 rows of one flow: 255 bytes).
SAMPLE_ROW_BYTES = 260

#: Above any of these a run is refused unless forced: 500 million
#: bottleneck packets (2-4 minutes at 200-480 ns a packet; 100 Gbit/s for
#: 30 s is half of it), 4 GiB of memory, 50 million sample rows (about 12 GB
#: of tables to write).
LIMITS = {"events": 2e9, "peak_bytes": 4 * 2**30, "sample_rows": 5e7}

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
    #: Packets out of the links' queues, summed over the links (the
    #: dumbbell's one bottleneck): at most their capacity in full frames.
    bottleneck_packets: float
    events: float
    sample_rows: float
    queue_rows: float
    #: The most full-size packets the network can hold at once.
    packets_held: float
    #: The result tables' size before compression.
    table_bytes: float
    #: Of ``bottleneck_packets``, those that then take a link's delay line.
    line_packets: float = 0.0
    #: The most flows sending at once (``active_flows``), which sets the time per packet.
    active_flows: int = 1
    #: The scenario's flows, which set the time around the simulation.
    flows: int = 1
    #: The queueing links (1: the dumbbell).
    links: int = 1

    @property
    def rows_held(self) -> float:
        """The most ``samples`` rows in memory at once: those of the flows
        sending at once, at most one batch (``_core.BATCH_ROWS``) and one
        interval's rows; the rest wait on disk."""
        from . import _core

        intervals = self.sample_rows / max(1, self.flows)
        return min(self.active_flows * intervals, _core.BATCH_ROWS + self.active_flows)

    @property
    def flow_memory(self) -> float:
        """Bytes of the flows: as built, and those sending at once."""
        return (
            self.flows * FLOW_BYTES
            + self.active_flows * ACTIVE_FLOW_BYTES
            + self.rows_held * SAMPLE_ROW_BYTES
        )

    @property
    def peak_bytes(self) -> float:
        """The run's peak resident memory: the process, the flows and their
        samples held, the packets the network holds."""
        return PROCESS_BYTES + self.flow_memory + self.packets_held * PACKET_BYTES

    @property
    def ns_per_packet(self) -> float:
        return ns_per_packet(self.active_flows)

    @property
    def wall_s(self) -> float:
        """Rough wall time of the simulation: the packets at ``ns_per_packet``,
        those onto a delay line at ``1 + LINE_EVENT_COST`` times that."""
        return (self.bottleneck_packets + LINE_EVENT_COST * self.line_packets) * self.ns_per_packet * 1e-9

    @property
    def run_s(self) -> float:
        """Rough wall time of the run in a sweep: ``wall_s`` + ``RUN_OVERHEAD_S``
        + ``FLOW_OVERHEAD_S`` a flow."""
        return self.wall_s + RUN_OVERHEAD_S + self.flows * FLOW_OVERHEAD_S

    def describe(self) -> str:
        n = self.active_flows
        where = "at the bottleneck" if self.links == 1 else f"summed over its {self.links} links"
        line = f", {self.line_packets:.3g} of them onto delay lines" if self.line_packets else ""
        return (
            f"~{self.bottleneck_packets:.3g} packets {where}{line} (~{_duration(self.wall_s)} at "
            f"~{self.ns_per_packet:.0f} ns a packet for {n:,} flow{'s' if n != 1 else ''} at once), "
            f"{self.sample_rows:.3g} sample rows (~{_bytes(self.table_bytes)} of tables), "
            f"~{_bytes(self.peak_bytes)} of memory at its peak"
        )


def estimate(scn: Scenario) -> Cost:
    from . import _core

    normalized = scn.normalized
    return Cost(
        **_core.cost(scn.core_json),
        active_flows=active_flows(normalized),
        flows=max(1, len(normalized.get("flows") or [])),
        links=max(1, len(normalized.get("links") or [])),
    )


def ns_per_packet(flows: float) -> float:
    """Wall nanoseconds per bottleneck packet with ``flows`` sending at once
    (``NS_PER_PACKET``, linear in log10(flows), clamped at the ends)."""
    points = NS_PER_PACKET
    if flows <= points[0][0]:
        return points[0][1]
    for (f0, t0), (f1, t1) in itertools.pairwise(points):
        if flows <= f1:
            x = (math.log10(flows) - math.log10(f0)) / (math.log10(f1) - math.log10(f0))
            return t0 + x * (t1 - t0)
    return points[-1][1]


def active_flows(normalized: dict[str, Any]) -> int:
    """The most flows of a normalized scenario that can send at once: a flow
    that starts ``after`` another completes takes that one's place (a
    ``repeat`` chain counts once, until the end of the run); a bulk flow
    sends from its start to its ``stop`` (or the end); a sized flow at most
    from its start until it could have finished alone on its slowest link
    (one RTT of handshake, its bytes at the link's rate, one RTT for the last
    ACK; a lower bound, so this count is too). At least 1."""
    flows = normalized.get("flows") or []
    end = float(normalized.get("duration_ns") or 0)
    chained = {int(f["after"]["flow"]) for f in flows if isinstance(f.get("after"), dict)}
    rates = _link_rates(normalized)
    edges: list[tuple[float, int]] = []
    for f in flows:
        if f.get("after"):
            continue  # in its predecessor's place
        start = float(f.get("start_ns") or 0)
        stop = f.get("stop_ns")
        finish = float(stop) if stop is not None else end
        size = f.get("size_bytes")
        chunks = f.get("chunks") or []
        if chunks:
            size = sum(int(b) for _, b in chunks)
        rate = min((rates.get(i, 0.0) for i in f.get("route") or [0]), default=0.0)
        if size is not None and rate > 0 and int(f.get("id", -1)) not in chained:
            mss = int(f.get("mss") or 1448)
            wire = int(size) + -(-int(size) // mss) * 66
            last = max((float(o) for o, _ in chunks), default=0.0)
            finish = min(finish, start + last + 2 * float(f.get("rtt_ns") or 0) + wire * 8e9 / rate)
        edges += [(start, 1), (max(finish, start), -1)]
    most = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], -e[1])):
        now += step
        most = max(most, now)
    return max(1, most)


def _link_rates(normalized: dict[str, Any]) -> dict[int, float]:
    """Link index -> its slowest rate in bit/s over its schedule (a trace's
    mean rate); the dumbbell's bottleneck is link 0."""
    links = normalized.get("links") or [normalized.get("bottleneck") or {}]
    out = {}
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        rates = [link.get("rate_bps"), *(step[1] for step in link.get("rate_schedule") or [])]
        rates = [float(r) for r in rates if isinstance(r, int | float)]
        if rates and min(rates) > 0:
            out[i] = min(rates)
    return out


def makespan(seconds: Iterable[float], workers: int) -> float:
    """Wall time of runs of ``seconds`` each on ``workers`` workers that each
    take the next run as they come free, the runs submitted longest first
    (LPT list scheduling, as ``run_sweep`` submits them); the sum on one."""
    times = sorted((float(s) for s in seconds), reverse=True)
    if workers <= 1 or len(times) <= 1:
        return sum(times)
    loads = [0.0] * min(workers, len(times))
    for t in times:
        heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def check(scn: Scenario, force: bool = False) -> Cost:
    """The estimate; raises ``ScenarioError`` naming the field to change when
    it is above ``LIMITS`` and not ``force``."""
    c = estimate(scn)
    if force:
        return c
    over = {k: getattr(c, k) / v for k, v in LIMITS.items() if getattr(c, k) > v}
    if over:
        worst = max(over, key=lambda k: over[k])
        memory = (
            ("bottleneck.buffer", "give the links smaller buffers or lower rates")
            if c.packets_held * PACKET_BYTES > c.flow_memory
            else ("flows", "run fewer flows")
        )
        field, fix = {
            "sample_rows": ("sample.interval", "raise sample.interval or shorten the duration"),
            "peak_bytes": memory,
        }.get(worst, ("duration", "shorten the duration or lower the rate"))
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
        "peak_bytes": f"{_bytes(v)} of memory",
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
