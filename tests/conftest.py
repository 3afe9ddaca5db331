"""Shared fixtures: scenario files to mutate (written with the package's TOML writer)."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ccarena.workloads.generate import to_toml

TINY: dict[str, Any] = {
    "name": "tiny",
    "duration": "2s",
    "seed": 7,
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP", "qdisc": "taildrop"},
    "flows": [{"cc": "reno", "rtt": "20ms"}],
}


@pytest.fixture
def tiny() -> dict[str, Any]:
    return copy.deepcopy(TINY)


@pytest.fixture
def write_scenario(tmp_path: Path):
    """write_scenario(doc, name="s.toml") -> Path of a TOML file in tmp_path."""

    def write(doc: dict[str, Any], name: str = "s.toml") -> Path:
        p = tmp_path / name
        p.write_text(to_toml(doc), encoding="utf-8")
        return p

    return write


def linux_unavailable() -> str | None:
    """Why the Linux backend cannot run here (None if it can): root on
    Linux and the backend's preflight (ip, ethtool, ccarena-bottleneck)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux"
    from ccarena.linux import backend as lb

    try:
        lb.preflight()
    except lb.LinuxBackendError as e:
        return str(e)
    return None
