"""The two backends a scenario runs on, behind one interface.

A ``Backend`` runs a ``Scenario`` into a run directory and returns its
``Results``; it says before anything is written whether it can run here
(``preflight``) and whether it can run this scenario (``refusal``). The
simulator (``SIM``) and the real kernel in network namespaces
(``linux(testbed)``) are its two implementations; ``backend(name)`` picks
one by the name a scenario's ``backend`` field or ``--backend`` gives, and
everything that runs a scenario (``ccarena.run``, ``ccarena run``,
``compare``, and a sweep's ``linux`` executor) goes through it.

Light: the simulator's runner and the Linux backend load when a run starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .linux.testbeds import DEFAULT_TESTBED
from .scenario import BACKENDS, Scenario
from .store import DEFAULT_ROOT

if TYPE_CHECKING:
    from .results import Results

__all__ = ["BACKENDS", "LINUX_MAX_RATE_BPS", "SIM", "Backend", "backend", "linux"]

#: Progress: one line of what the run is doing, shown as it goes.
Progress = Callable[[str], None]
#: The fastest link the Linux backend emulates trustworthily on this
#: project's 2-core machines (docs/validation.md, "Accuracy").
LINUX_MAX_RATE_BPS = 500_000_000


class Backend(Protocol):
    """Runs a scenario and writes its run directory."""

    @property
    def name(self) -> str: ...

    def preflight(self) -> None:
        """Raise (one line) when this machine or user cannot use it at all;
        called before anything is written."""

    def refusal(self, normalized: dict[str, Any]) -> str | None:
        """Why it cannot run this normalized scenario here (None: it can)."""

    def run(
        self,
        scn: Scenario,
        out: str | Path | None = None,
        *,
        root: str | Path = DEFAULT_ROOT,
        figure: bool = False,
        yes: bool = False,
        progress: Progress | None = None,
    ) -> Results:
        """Run ``scn`` into ``out`` (or its default directory under
        ``root``) and return what it wrote."""


@dataclass(frozen=True)
class _Sim:
    """The simulator (``runner.execute``)."""

    name: str = "sim"

    def preflight(self) -> None:
        return None

    def refusal(self, normalized: dict[str, Any]) -> str | None:
        return None

    def run(
        self,
        scn: Scenario,
        out: str | Path | None = None,
        *,
        root: str | Path = DEFAULT_ROOT,
        figure: bool = False,
        yes: bool = False,
        progress: Progress | None = None,
    ) -> Results:
        from .runner import execute

        shown = None if progress is None else _simulated(int(scn.normalized["duration_ns"]), progress)
        return execute(scn, out, root=root, figure=figure, yes=yes, progress=shown)


@dataclass(frozen=True)
class _Linux:
    """The real kernel in network namespaces, on one of ``TESTBEDS``
    (``linux.execute``); a run is a kernel run, kept under its own id."""

    testbed: str = DEFAULT_TESTBED
    name: str = "linux"

    def preflight(self) -> None:
        from .linux import preflight

        preflight()

    def refusal(self, normalized: dict[str, Any]) -> str | None:
        """An algorithm the kernel has no module for, or a link faster than
        this backend emulates trustworthily here."""
        from .linux.modules import KERNEL_CC

        for f in normalized.get("flows", []):
            if f.get("cc") not in KERNEL_CC:
                return f"{f.get('cc')}: the kernel here has no such module"
        links = normalized.get("links") or [normalized.get("bottleneck") or {}]
        fastest = max((int(x.get("rate_bps") or 0) for x in links), default=0)
        if fastest > LINUX_MAX_RATE_BPS:
            most = LINUX_MAX_RATE_BPS / 1e6
            return f"{fastest / 1e6:g} Mbit/s: above the {most:g} Mbit/s this backend emulates here"
        return None

    def run(
        self,
        scn: Scenario,
        out: str | Path | None = None,
        *,
        root: str | Path = DEFAULT_ROOT,
        figure: bool = False,
        yes: bool = False,
        progress: Progress | None = None,
    ) -> Results:
        from .linux import execute

        return execute(scn, out, root=root, figure=figure, progress=progress, testbed=self.testbed)


SIM: Backend = _Sim()


def linux(testbed: str = DEFAULT_TESTBED) -> Backend:
    """The Linux backend on ``testbed`` (one of ``linux.testbeds.TESTBEDS``;
    ``linux.execute`` refuses another)."""
    return _Linux(testbed)


def backend(name: str, testbed: str | None = None) -> Backend:
    """The backend called ``name`` (``BACKENDS``); ``testbed`` is the Linux
    backend's."""
    if name == "sim":
        return SIM
    if name == "linux":
        return linux(testbed or DEFAULT_TESTBED)
    raise ValueError(f"unknown backend {name!r}; expected {' or '.join(repr(b) for b in BACKENDS)}")


def _simulated(duration_ns: int, show: Progress) -> Callable[[int], None]:
    """The simulator's progress (simulated ns) as a line: simulated time,
    its fraction of the scenario and the time left at the rate so far."""
    start = time.monotonic()

    def line(sim_ns: int) -> None:
        done = min(sim_ns / duration_ns, 1.0) if duration_ns > 0 else 1.0
        spent = time.monotonic() - start
        left = spent * (1 - done) / done if done > 0 else float("nan")
        show(f"{sim_ns / 1e9:.1f} of {duration_ns / 1e9:g} s simulated ({done:.0%}), about {left:.0f} s left")

    return line
