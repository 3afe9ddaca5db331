"""The Linux backend: real kernel TCP in network namespaces, through a
user-space bottleneck that runs the simulator's shaper, queue disciplines
and delays against the wall clock (``crates/emu``, ``ccarena-bottleneck``).

Needs root (it creates network namespaces), iproute2 and ethtool, and
``ccarena-bottleneck``, which ``pip install`` puts beside ``ccarena`` (the
same extension module; ``cargo build --release -p ccarena-emu`` builds a
standalone one).
``ccarena run SCENARIO --backend linux`` and ``ccarena compare SCENARIO
--backends sim,linux`` use it; ``ccarena linux cleanup`` removes what a
crashed run left.
"""

from __future__ import annotations

from .backend import BACKEND, LinuxBackendError, LinuxNotAvailable, LinuxUnsupported, execute, preflight
from .netns import cleanup

__all__ = [
    "BACKEND",
    "LinuxBackendError",
    "LinuxNotAvailable",
    "LinuxUnsupported",
    "cleanup",
    "execute",
    "preflight",
]
