"""What a kernel run records of where and with what it ran: the host
(name, CPU model, cores, kernel release), the time and the ccarena commit.
A kernel run cannot be made again bit for bit, so its record says what
would be needed to make a comparable one."""

from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

__all__ = ["ccarena_commit", "host_info", "utc_now"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_info() -> dict[str, Any]:
    """This machine: hostname, CPU model, logical CPUs, kernel release, architecture."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count() or 0,
        "kernel": platform.release(),
        "machine": platform.machine(),
    }


def ccarena_commit() -> str:
    """The git commit the installed extension was built from."""
    from .. import _core

    return _core.build_commit()


def utc_now() -> str:
    """The time now, UTC, to the second (ISO 8601)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
