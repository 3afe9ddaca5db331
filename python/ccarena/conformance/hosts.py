"""The hosts the simulator's side of a conformance cell runs with.

A user's simulation runs with the shipped defaults (``[hosts]`` as the
scenario says, the default profile compiled into the core): that is what
conformance judges by default (``"defaults"``). The other choices are
readings beside it, each saying how much of a gap is host timing:

- ``"per-run"``: seed k draws its turnarounds from the table kernel run k
  measured (the bottleneck's turnaround meter), at that run's speed: the
  simulator given each kernel run's own host timing, which a user never
  has. A diagnostic.
- ``"kernel"``: every seed with the mean of the cell's kernel runs' tables,
  each at a drawn speed: the machine the kernel runs were made on.
- ``"none"``: ideal hosts, every answer at once.
- a profile (a file ``ccarena linux measure-host`` wrote, or a shipped
  profile's name, ``ccarena.profiles``): every seed with that machine's table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..lazy import lazy
from ..profiles import Profile

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

__all__ = ["MODES", "NO_HOSTS", "HostTable", "HostsMode", "seed_hosts"]

#: The named choices of ``sim_hosts`` (a profile is the other kind).
MODES = ("defaults", "per-run", "kernel", "none")


@dataclass(frozen=True)
class HostTable:
    """A hosts' turnaround table as the Linux backend's bottleneck measures
    it (us at the simulator's percentiles, ``[hosts] latency``)."""

    sender_us: tuple[float, ...]
    receiver_us: tuple[float, ...]
    #: Measured in one kernel run, so at that run's speed: the
    #: simulator keeps it as it is (``[hosts] run_speed = "fixed"``). A mean
    #: of runs, or a profile, is no run's speed, so each seed draws one
    #: (``"drawn"``).
    one_run: bool = True

    @classmethod
    def of(cls, doc: Any) -> HostTable | None:
        """From a run's ``linux.turnarounds``: None without receiver samples.
        Where every sender paces (the data after an ACK waits for the pacing
        timer, so the bottleneck measures no sender turnaround) the sender
        side takes the receiver's: the two sides' medians differ by 1-3 us
        where both are measured (docs/validation.md)."""
        if not isinstance(doc, Mapping):
            return None
        sender, receiver = (doc.get(k) for k in ("sender_us", "receiver_us"))
        if receiver is None or len(receiver) == 0:
            return None
        r = tuple(map(float, receiver))
        return cls(tuple(map(float, sender)) if sender is not None and len(sender) else r, r)

    @classmethod
    def mean(cls, tables: Sequence[HostTable]) -> HostTable | None:
        """Percentile by percentile, rounded to 0.1 us; None for no tables."""
        if not tables:
            return None
        s = np.mean([t.sender_us for t in tables], axis=0)
        r = np.mean([t.receiver_us for t in tables], axis=0)
        return cls(tuple(round(float(x), 1) for x in s), tuple(round(float(x), 1) for x in r), one_run=False)

    @classmethod
    def of_profile(cls, profile: Profile) -> HostTable:
        return cls(profile.sender_us, profile.receiver_us, one_run=False)

    def latency(self) -> dict[str, list[float]]:
        return {"sender_us": list(self.sender_us), "receiver_us": list(self.receiver_us)}

    def onto(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """A scenario document whose hosts are these (``[hosts] latency``,
        and ``run_speed = "fixed"`` for one run's table), its other
        ``[hosts]`` settings kept."""
        if not self.sender_us:  # NO_HOSTS
            return {**doc, "hosts": {**doc.get("hosts", {}), "latency": "none"}}
        hosts = {**doc.get("hosts", {}), "latency": self.latency()}
        if self.one_run:
            hosts["run_speed"] = "fixed"
        return {**doc, "hosts": hosts}


#: Ideal hosts (``[hosts] latency = "none"``): every answer at once.
NO_HOSTS = HostTable((), (), one_run=False)

#: ``sim_hosts``: one of ``MODES``, or a profile.
HostsMode = str | Profile


class MeasuredRun(Protocol):
    """What the hosts' choice reads of a kernel run (``kernel.KernelRun``):
    whether its self-checks passed and the turnarounds it measured."""

    @property
    def trustworthy(self) -> bool: ...

    @property
    def hosts(self) -> HostTable | None: ...


def seed_hosts(mode: HostsMode, runs: Sequence[MeasuredRun], n: int) -> list[HostTable | None]:
    """The turnaround table each of a cell's ``n`` simulator seeds runs with
    (None: the scenario's own, the shipped defaults). With ``"per-run"``
    seed k takes its k-th trustworthy kernel run's table (cycling), with
    ``"kernel"`` their mean; either falls back to the defaults where no
    kernel run measured one."""
    if isinstance(mode, Profile):
        return [HostTable.of_profile(mode)] * n
    if mode == "defaults":
        return [None] * n
    if mode == "none":
        return [NO_HOSTS] * n
    tables = [r.hosts for r in runs if r.trustworthy and r.hosts is not None]
    if not tables:
        return [None] * n
    if mode == "kernel":
        return [HostTable.mean(tables)] * n
    return [tables[k % len(tables)] for k in range(n)]


def describe(mode: HostsMode) -> str:
    """The mode in words, for the summary and the report."""
    if isinstance(mode, Profile):
        return f"the profile {mode.describe()}"
    return {
        "defaults": "the shipped defaults, as a user runs it",
        "per-run": "each kernel run's own host timing (a diagnostic: a user never has it)",
        "kernel": "the mean host timing of the cell's kernel runs",
        "none": "ideal hosts (no host timing noise)",
    }[mode]
