"""Who else used the machine's CPUs during a kernel run: the reading both
testbeds' self-checks judge "other work" by.

The bottleneck, the hosts' TCP, their receive processing and the traffic
programs share the run's CPUs; another program busy there (a second run, a
compile) slows them and moves the result while every lateness check of the
bottleneck still passes. Each process's CPU time is read from
``/proc/<pid>/stat`` before and after the traffic, with its reaped
children's (so short-lived processes count in their parent), and what did
not go to the run's own processes or the softirq threads is other work.
(``/proc/stat``'s per-CPU ticks cannot say it: a process waking on timers
between ticks, as the bottleneck does, is mostly missed by them.)

Standard library only: the iperf3 driver (``iperfdrv.py``), run as a
script from this folder, imports it by its file name too.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TICK_HZ", "Snapshot", "ksoftirqd", "others_share", "snapshot"]

#: The unit of /proc/stat's times.
TICK_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Snapshot:
    """Every process's CPU time at one moment: its own (all threads) and its
    reaped children's (so work done by short-lived processes appears in
    their parent's), and its parent, to tell a run's processes from others."""

    at_s: float
    own_s: dict[int, float]
    children_s: dict[int, float]
    parent: dict[int, int]
    comm: dict[int, str]

    def total_s(self, pid: int) -> float:
        """Its own time and its reaped children's."""
        return self.own_s.get(pid, 0.0) + self.children_s.get(pid, 0.0)


def snapshot() -> Snapshot:
    """Read /proc/<pid>/stat of every process (one that ends meanwhile is
    left out)."""
    at_s = time.monotonic()
    own, children, parent, comm = {}, {}, {}, {}
    for d in os.scandir("/proc"):
        if not d.name.isdigit():
            continue
        try:
            with open(f"/proc/{d.name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        pid = int(d.name)
        close = stat.rindex(")")
        fields = stat[close + 2 :].split()  # after "pid (comm) ": field 3 on
        comm[pid] = stat[stat.index("(") + 1 : close]
        parent[pid] = int(fields[1])
        own[pid] = (int(fields[11]) + int(fields[12])) / TICK_HZ  # utime, stime (fields 14, 15)
        children[pid] = (int(fields[13]) + int(fields[14])) / TICK_HZ  # cutime, cstime (16, 17)
    return Snapshot(at_s, own, children, parent, comm)


def others_share(
    before: Snapshot, after: Snapshot, cpus: int | None = None, root: int | None = None
) -> float:
    """The share of ``cpus`` CPUs' time (the ones this process may use, by
    default) between two snapshots that went to processes other than
    ``root`` (this process by default) and its descendants, the softirq
    threads (the run's forwarding, deferred) left with the run. A process
    new since ``before`` counts whole; a child reaped meanwhile counts what
    it used after ``before`` (its parent's children's time gains its whole
    life)."""
    cpus = len(os.sched_getaffinity(0)) if cpus is None else cpus
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for pid, par in {**before.parent, **after.parent}.items():
        children.setdefault(par, []).append(pid)
    ours, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in ours:
                ours.add(child)
                todo.append(child)

    # What the processes gone since had used by `before`, by the nearest
    # ancestor still there, whose children's time has gained their whole
    # lives (a gone process's own and its children reaped by then: each
    # counted once).
    gone: dict[int, float] = {}
    for pid in before.own_s:
        if pid in after.own_s:
            continue
        up = before.parent.get(pid, 0)
        while up in before.parent and up not in after.own_s:
            up = before.parent[up]
        gone[up] = gone.get(up, 0.0) + before.total_s(pid)
    others = 0.0
    for pid in after.own_s:
        if pid in ours or after.comm[pid].startswith("ksoftirqd/"):
            continue
        own = after.own_s[pid] - before.own_s.get(pid, 0.0)
        reaped = after.children_s[pid] - before.children_s.get(pid, 0.0) - gone.get(pid, 0.0)
        others += max(own, 0.0) + max(reaped, 0.0)
    wall = after.at_s - before.at_s
    return others / (wall * cpus) if wall > 0 and cpus > 0 else float("nan")


def ksoftirqd(cpus: list[int]) -> dict[str, tuple[int, int]]:
    """The softirq threads of ``cpus`` (all, if none): their time on a CPU
    and waiting for one, ns (``/proc/<pid>/schedstat``). Softirqs (the
    forwarding, the bridges, the qdiscs, the hosts' TCP) run there once the
    kernel defers them, and then wait their turn beside every other thread."""
    want = {f"ksoftirqd/{c}" for c in cpus} if cpus else None
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            comm = (d / "comm").read_text().strip()
            if comm.startswith("ksoftirqd/") and (want is None or comm in want):
                run_ns, wait_ns, _ = (int(x) for x in (d / "schedstat").read_text().split())
                out[comm] = (run_ns, wait_ns)
    return out
