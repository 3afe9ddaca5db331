"""Shared helpers: a tiny TOML writer and scenario files to mutate."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(doc: dict[str, Any]) -> str:
    """Enough TOML for scenario files: scalars, tables, arrays of tables."""
    lines: list[str] = []
    tables: list[tuple[str, dict]] = []
    arrays: list[tuple[str, list]] = []
    for k, v in doc.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for k, t in tables:
        lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in t.items()]
    for k, arr in arrays:
        for t in arr:
            lines += ["", f"[[{k}]]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in t.items()]
    return "\n".join(lines) + "\n"


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
