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

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import LinuxBackendError, LinuxNotAvailable, LinuxUnsupported

if TYPE_CHECKING:
    from .backend import BACKEND, execute, preflight
    from .netns import cleanup

# The backend (pandas, its table builders) loads when first used (PEP 562):
# ``ccarena.linux.modules`` is read by ``ccarena list`` without it.
_LAZY = {"BACKEND": "backend", "execute": "backend", "preflight": "backend", "cleanup": "netns"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKEND",
    "LinuxBackendError",
    "LinuxNotAvailable",
    "LinuxUnsupported",
    "cleanup",
    "execute",
    "preflight",
]
