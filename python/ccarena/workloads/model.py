"""Workloads: the flows a scenario replays, in the three modes of paper B.

A ``Workload`` is a table of flows (``start_ns``, ``size_bytes``, sorted by
start) and, for Replay, a table of chunks (``flow``, ``offset_ns``,
``bytes``: what the flow's connection writes, and when, counted from the
flow's start). Times are integer nanoseconds, sizes integer bytes: the
units the simulator's scenario takes.

- ``replay(trace)``: one connection per flow, started at the flow's first
  packet, writing each chunk at its offset (the pauses are replayed);
- ``collapsed(trace)``: one contiguous transfer per flow, all its bytes at
  its first packet's time;
- ``synthetic(workload, seed)``: inter-arrival times and sizes drawn
  independently (with replacement) from a Collapsed workload's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .pcap import Trace

__all__ = ["MODES", "Workload", "collapsed", "replay", "size_cdf", "synthetic"]

MODES = ("replay", "collapsed", "synthetic", "trace-like")


@dataclass
class Workload:
    """Flows to replay. ``flows``: ``start_ns``, ``size_bytes`` (int64),
    sorted by start, row i = flow i; other columns are carried along (e.g.
    ``trace_flow``, the flow's id in the trace, or ``duration_ns``).
    ``chunks`` (Replay only): ``flow`` (row of ``flows``), ``offset_ns`` from
    the flow's start, ``bytes``; a flow's chunks sum to its size.
    ``duration_ns``: the span the arrivals were drawn from (the capture's
    length, or the generated duration); ``mode``: one of ``MODES``;
    ``meta``: provenance (source file, threshold, seed, ...)."""

    flows: pd.DataFrame
    duration_ns: int
    mode: str = "collapsed"
    chunks: pd.DataFrame | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.flows)

    @property
    def total_bytes(self) -> int:
        return int(self.flows.size_bytes.sum())

    @property
    def mean_rate_bps(self) -> float:
        """Offered load: bytes of every flow x 8 / ``duration_ns``."""
        return self.total_bytes * 8e9 / self.duration_ns if self.duration_ns > 0 else float("nan")

    def __repr__(self) -> str:
        return (
            f"<Workload {self.mode}: {len(self)} flows, {self.total_bytes / 1e9:.3f} GB over "
            f"{self.duration_ns / 1e9:g} s = {self.mean_rate_bps / 1e9:.3f} Gbit/s>"
        )

    # ------------------------------------------------------------------ selection and scaling

    def _select(self, keep: np.ndarray, shift_ns: int = 0, duration_ns: int | None = None) -> Workload:
        fl = self.flows[keep].copy()
        fl["start_ns"] = fl.start_ns - shift_ns
        chunks = None
        if self.chunks is not None:
            new_id = np.full(len(self.flows), -1, dtype=np.int64)
            new_id[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
            ch = self.chunks[keep[self.chunks.flow.to_numpy()]].copy()
            ch["flow"] = new_id[ch.flow.to_numpy()]
            chunks = ch.reset_index(drop=True)
        return replace(
            self,
            flows=fl.reset_index(drop=True),
            chunks=chunks,
            duration_ns=self.duration_ns if duration_ns is None else duration_ns,
        )

    def window(self, duration_s: float, start_s: float = 0.0) -> Workload:
        """The flows that start in [start, start + duration), times shifted so
        the window starts at 0. Flows keep their whole size (and chunks):
        the scenario's duration decides how much of them is simulated."""
        t0, t1 = round(start_s * 1e9), round((start_s + duration_s) * 1e9)
        s = self.flows.start_ns.to_numpy()
        keep = (s >= t0) & (s < t1)
        return self._select(keep, t0, max(min(t1, self.duration_ns) - t0, 0))

    def filter(self, min_size: int | None = None, max_size: int | None = None) -> Workload:
        """The flows with min_size <= size <= max_size (bytes); e.g. the short flows."""
        z = self.flows.size_bytes.to_numpy()
        keep = np.ones(len(z), dtype=bool)
        if min_size is not None:
            keep &= z >= min_size
        if max_size is not None:
            keep &= z <= max_size
        return self._select(keep)

    def scale_rate(self, factor: float) -> Workload:
        """Arrivals ``factor`` times as dense: start times (and the duration)
        divided by ``factor``, sizes and the chunks' offsets within a flow kept,
        so the offered load is multiplied by ``factor``."""
        if not factor > 0:
            raise ValueError("factor must be positive")
        fl = self.flows.copy()
        fl["start_ns"] = np.round(fl.start_ns.to_numpy() / factor).astype(np.int64)
        return replace(
            self,
            flows=fl,
            duration_ns=round(self.duration_ns / factor),
            meta={**self.meta, "rate_scale": self.meta.get("rate_scale", 1.0) * factor},
        )

    def to_rate(self, rate_bps: float) -> Workload:
        """``scale_rate`` to an offered load of ``rate_bps``."""
        return self.scale_rate(rate_bps / self.mean_rate_bps)

    # ------------------------------------------------------------------ storage

    def save(self, path: str | Path) -> Path:
        """Write ``path/`` with ``flows.parquet``, ``chunks.parquet`` (Replay) and
        ``workload.json`` (mode, duration, meta)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.flows.to_parquet(path / "flows.parquet", index=False)
        if self.chunks is not None:
            self.chunks.to_parquet(path / "chunks.parquet", index=False)
        info = {"mode": self.mode, "duration_ns": int(self.duration_ns), "meta": self.meta}
        (path / "workload.json").write_text(json.dumps(info, indent=1, default=str), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        path = Path(path)
        info = json.loads((path / "workload.json").read_text(encoding="utf-8"))
        ch = path / "chunks.parquet"
        return cls(
            flows=pd.read_parquet(path / "flows.parquet"),
            duration_ns=int(info["duration_ns"]),
            mode=info["mode"],
            chunks=pd.read_parquet(ch) if ch.is_file() else None,
            meta=info.get("meta", {}),
        )


def _flows_with_data(trace: Trace, min_bytes: int) -> pd.DataFrame:
    fl = trace.flows[trace.flows.bytes >= max(min_bytes, 1)]
    return fl.sort_values(["start_ns", "flow"], kind="stable").reset_index(drop=True)


def collapsed(trace: Trace, *, min_bytes: int = 1) -> Workload:
    """One contiguous transfer per flow: size = the flow's payload bytes,
    start = its first packet. Flows with fewer than ``min_bytes`` (at least 1)
    are left out."""
    fl = _flows_with_data(trace, min_bytes)
    flows = pd.DataFrame(
        {
            "start_ns": fl.start_ns.to_numpy(np.int64),
            "size_bytes": fl.bytes.to_numpy(np.int64),
            "trace_flow": fl.flow.to_numpy(np.int64),
        }
    )
    meta = {"source": trace.source, "epoch_s": trace.epoch_s}
    return Workload(flows=flows, duration_ns=trace.duration_ns, mode="collapsed", meta=meta)


def replay(trace: Trace, threshold_s: float | None = None, *, min_bytes: int = 1) -> Workload:
    """Each flow's chunks and the pauses between them: one connection per flow,
    started at the flow's first packet, writing chunk k at ``offset_ns`` (the
    chunk's first data packet minus the flow's first packet). ``threshold_s``:
    split at pauses of at least this (default: the threshold the trace was
    read with; ``inf`` = never split, which is Collapsed with the start of
    the first data packet as offset)."""
    fl = _flows_with_data(trace, min_bytes)
    ch = trace.chunks if threshold_s is None else trace.split(threshold_s)
    row = pd.Series(np.arange(len(fl)), index=fl.flow.to_numpy())
    ch = ch[ch.flow.isin(row.index)]
    rows = row.loc[ch.flow.to_numpy()].to_numpy()
    chunks = pd.DataFrame(
        {
            "flow": rows.astype(np.int64),
            "offset_ns": (ch.start_ns.to_numpy() - fl.start_ns.to_numpy()[rows]).astype(np.int64),
            "bytes": ch.bytes.to_numpy(np.int64),
        }
    )
    chunks = chunks.sort_values(["flow", "offset_ns"], kind="stable").reset_index(drop=True)
    flows = pd.DataFrame(
        {
            "start_ns": fl.start_ns.to_numpy(np.int64),
            "size_bytes": fl.bytes.to_numpy(np.int64),
            "trace_flow": fl.flow.to_numpy(np.int64),
        }
    )
    thr = trace.threshold_ns / 1e9 if threshold_s is None else threshold_s
    meta = {"source": trace.source, "epoch_s": trace.epoch_s, "threshold_s": thr}
    return Workload(flows=flows, duration_ns=trace.duration_ns, mode="replay", chunks=chunks, meta=meta)


def synthetic(
    workload: Workload,
    seed: int | np.random.Generator = 0,
    *,
    n: int | None = None,
    duration_s: float | None = None,
) -> Workload:
    """Inter-arrival times and sizes drawn independently, with replacement,
    from ``workload``'s (its flows' sizes, and the gaps between consecutive
    starts). ``n`` flows, or as many as start within ``duration_s``; by
    default as many as ``workload`` has. The first flow starts after one
    drawn inter-arrival time."""
    rng = np.random.default_rng(seed)
    starts = np.sort(workload.flows.start_ns.to_numpy(np.int64))
    sizes = workload.flows.size_bytes.to_numpy(np.int64)
    if len(starts) < 2:
        raise ValueError("need at least two flows to draw inter-arrival times from")
    gaps = np.diff(starts)
    if n is None and duration_s is None:
        n = len(starts)
    if n is not None:
        ia = rng.choice(gaps, size=n)
        start = np.cumsum(ia)
        if duration_s is None:  # the drawn gaps, and one more on average
            duration = int(start[-1] + round(gaps.mean()))
        else:
            duration = round(duration_s * 1e9)
    else:
        assert duration_s is not None  # n is None only with a duration (above)
        duration = round(duration_s * 1e9)
        mean = max(gaps.mean(), 1.0)
        parts, total = [], 0
        while total < duration:
            ia = rng.choice(gaps, size=int(1.1 * (duration - total) / mean) + 16)
            c = total + np.cumsum(ia)
            parts.append(c)
            total = int(c[-1])
        start = np.concatenate(parts)
        start = start[start < duration]
    z = rng.choice(sizes, size=len(start))
    flows = pd.DataFrame({"start_ns": start.astype(np.int64), "size_bytes": z.astype(np.int64)})
    seed_meta = seed if isinstance(seed, int) else None
    meta = {**workload.meta, "synthetic_from": workload.mode, "seed": seed_meta}
    return Workload(flows=flows, duration_ns=duration, mode="synthetic", meta=meta)


def size_cdf(sizes: np.ndarray | pd.Series, by: str = "flow") -> pd.DataFrame:
    """Empirical CDF of sizes (flow or chunk sizes, bytes), weighted ``by``
    ``"flow"`` (each counts once) or ``"byte"`` (each counts its size: the
    share of bytes in items of at most that size). Columns ``size_bytes``,
    ``cdf``; one row per distinct size."""
    z = np.sort(np.asarray(sizes, dtype=np.int64))
    if by == "flow":
        w = np.ones(len(z))
    elif by == "byte":
        w = z.astype(float)
    else:
        raise ValueError("by must be 'flow' or 'byte'")
    c = np.cumsum(w)
    last = np.r_[z[1:] != z[:-1], True] if len(z) else np.zeros(0, dtype=bool)
    total = c[-1] if len(c) else 1.0
    return pd.DataFrame({"size_bytes": z[last], "cdf": c[last] / total})
