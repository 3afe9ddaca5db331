"""Workloads -> scenario ``[[flows]]`` entries, whole scenarios, TOML.

Each flow becomes one entry, sizes as ``"<n>B"`` and times as ``"<n>ns"``
strings (exact integers, as the core parses them):

- Collapsed / Synthetic / trace-like: ``{cc, start, size, host}``;
- Replay: ``{cc, start, chunks = [[offset, bytes], ...], host}``: the
  connection opens at ``start`` and writes each chunk ``offset`` after it.

Flows are dealt round-robin to ``senders`` hosts in order of start
(``host = i % senders``, hosts numbered from 0), as paper B deals its flows
to its 2 senders.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .model import Workload

__all__ = ["scenario_flows", "successive_flow", "to_toml", "workload_scenario", "write_toml"]


def _ns(x: int) -> str:
    return f"{int(x)}ns"


def _b(x: int) -> str:
    return f"{int(x)}B"


def scenario_flows(
    workload: Workload,
    cc: str = "cubic",
    senders: int = 2,
    *,
    replay_chunks: bool | None = None,
    end_ns: int | None = None,
    **extra: Any,
) -> list[dict[str, Any]]:
    """One ``[[flows]]`` entry per flow of ``workload``, in order of start.

    ``senders``: how many hosts the flows are dealt to round-robin
    (``host = i % senders``); ``senders=0`` leaves ``host`` out.
    ``replay_chunks``: write ``chunks`` (default: when the workload has
    them, i.e. Replay) or ``size``. ``end_ns``: the end of the run; flows
    starting at or after it and chunks written at or after it are left out
    (the core refuses them). ``extra``: keys added to every entry (e.g.
    ``rtt="20ms"``, ``pacing="fq"``)."""
    if senders < 0:
        raise ValueError("senders must be >= 0")
    fl = workload.flows
    order = np.argsort(fl.start_ns.to_numpy(), kind="stable")
    starts = fl.start_ns.to_numpy(np.int64)
    sizes = fl.size_bytes.to_numpy(np.int64)
    use_chunks = workload.chunks is not None if replay_chunks is None else replay_chunks
    if use_chunks and workload.chunks is None:
        raise ValueError("this workload has no chunks (it is not a Replay workload)")
    per_flow: list[list[list[str]]] | None = None
    if use_chunks and workload.chunks is not None:
        ch = workload.chunks.sort_values(["flow", "offset_ns"], kind="stable")
        if end_ns is not None:
            ch = ch[starts[ch.flow.to_numpy()] + ch.offset_ns.to_numpy() < end_ns]
        f = ch.flow.to_numpy(np.int64)
        off = ch.offset_ns.to_numpy(np.int64)
        nb = ch.bytes.to_numpy(np.int64)
        bounds = np.searchsorted(f, np.arange(len(fl) + 1))
        per_flow = [
            [[_ns(off[j]), _b(nb[j])] for j in range(bounds[i], bounds[i + 1])] for i in range(len(fl))
        ]
    out: list[dict[str, Any]] = []
    if end_ns is not None:
        order = order[starts[order] < end_ns]
    if per_flow is not None:
        order = order[np.array([len(per_flow[i]) > 0 for i in order], dtype=bool)]
    for k, i in enumerate(order):
        e: dict[str, Any] = {"cc": cc, "start": _ns(starts[i])}
        if per_flow is not None:
            e["chunks"] = per_flow[i]
        else:
            e["size"] = _b(sizes[i])
        if senders:
            e["host"] = k % senders
        e.update(extra)
        out.append(e)
    return out


def successive_flow(
    cc: str,
    size: str,
    *,
    gap: str = "100ms",
    count: int | None = None,
    start: str = "0s",
    **extra: Any,
) -> dict[str, Any]:
    """One entry for a succession of flows (paper D): a flow of ``size``
    starts at ``start``, each next one ``gap`` after the previous completes,
    ``count`` of them (None: until the end of the run)."""
    rep: dict[str, Any] = {"gap": gap}
    if count is not None:
        rep["count"] = int(count)
    return {"cc": cc, "start": start, "size": size, "repeat": rep, **extra}


def workload_scenario(
    workload: Workload,
    *,
    cc: str = "cubic",
    rate: str = "3Gbps",
    rtt: str = "10ms",
    buffer: str = "1BDP",
    senders: int = 2,
    name: str | None = None,
    duration_s: float | None = None,
    drain_s: float = 5.0,
    seed: int = 1,
    sample_interval: str = "100ms",
    bottleneck: dict[str, Any] | None = None,
    **flow_extra: Any,
) -> dict[str, Any]:
    """A whole scenario (a dict, as ``tomllib`` would load one) running
    ``workload`` over one bottleneck: ``rate``, ``buffer``, every flow's
    base RTT ``rtt``. ``duration_s`` defaults to the workload's span plus
    ``drain_s`` for the last flows to finish; flows and chunks that would
    start at or after the end are left out."""
    dur = duration_s if duration_s is not None else workload.duration_ns / 1e9 + drain_s
    end_ns = math.ceil(dur * 1e9)
    return {
        "name": name or f"workload-{workload.mode}",
        "duration": _ns(end_ns),
        "seed": seed,
        "bottleneck": {"rate": rate, "buffer": buffer, **(bottleneck or {})},
        "path": {"rtt": rtt},
        "sample": {"interval": sample_interval},
        "flows": scenario_flows(workload, cc=cc, senders=senders, end_ns=end_ns, **flow_extra),
    }


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, np.integer | np.floating):
        return repr(v.item())
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(doc: dict[str, Any]) -> str:
    """A scenario dict as TOML: top-level scalars, tables, arrays of tables
    (``[[flows]]``, one per entry, nested values inline)."""
    lines: list[str] = []
    tables, arrays = [], []
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


def write_toml(doc: dict[str, Any], path: str | Path) -> Path:
    """Write a scenario dict as a TOML file."""
    path = Path(path)
    path.write_text(to_toml(doc), encoding="utf-8")
    return path
