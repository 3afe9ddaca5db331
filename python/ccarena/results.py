"""The results of one run, as pandas data frames."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from .schema import ColumnDef, columns, numeric_columns
from .store import REQUIRED_TABLES, SCENARIO_FILE, TABLES

__all__ = ["ColumnDef", "Results", "columns", "conform", "numeric_columns", "schemas", "tables_from_ipc"]


def tables_from_ipc(streams: Mapping[str, bytes]) -> dict[str, pa.Table]:
    """Arrow tables from the IPC streams that ``_core.run`` returns."""
    return {name: pa.ipc.open_stream(pa.py_buffer(data)).read_all() for name, data in streams.items()}


_TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}


@functools.cache
def schemas() -> dict[str, pa.Schema]:
    """Each table's fixed columns as an Arrow schema (see ``columns``)."""
    return {t: pa.schema([(c.name, _TYPES[c.type]) for c in cols]) for t, (_, cols) in columns().items()}


def conform(name: str, frame: pd.DataFrame) -> pa.Table:
    """``frame`` as the ``name`` table: the schema's columns first, in its
    order and types (integers nullable where a backend lacks the value),
    then the frame's other columns. Raises ``ValueError`` naming a schema
    column the frame lacks, so a backend cannot drift from the contract."""
    defs = columns()[name][1]
    missing = [c.name for c in defs if c.name not in frame.columns]
    if missing:
        raise ValueError(f"table {name} lacks the column(s) {', '.join(missing)} of the results schema")
    arrays, names = [], []
    for c in defs:
        col = frame[c.name]
        if c.type == "string":
            col = col.fillna("").astype(str)
        arrays.append(pa.array(col, type=_TYPES[c.type], from_pandas=True))
        names.append(c.name)
    fixed = set(names)
    for k in frame.columns:
        if k not in fixed:
            arrays.append(pa.array(frame[k], from_pandas=True))
            names.append(k)
    return pa.Table.from_arrays(arrays, names=names)


def markdown() -> str:
    """``docs/results.md``'s tables of columns, from the schema."""
    lines = []
    for t, (row, cols) in columns().items():
        lines += [
            f"### `{t}` (a row: {row})",
            "",
            "| column | type | unit | definition |",
            "|---|---|---|---|",
        ]
        lines += [f"| `{c.name}` | {c.type} | {c.unit or '-'} | {c.doc} |" for c in cols]
        lines.append("")
    return "\n".join(lines)


def _with_links(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """A run written before networks existed (one bottleneck, no ``links``
    table, no ``link`` and ``route`` columns) in today's layout: its one
    link is the dumbbell's bottleneck, whose row the summary holds."""
    if "links" in frames:
        return frames
    s = frames["summary"]
    # Each links column from the summary column that holds it for one link.
    same = ("rate_mbps", "flows", "utilization", "wire_utilization", "qdelay_mean_ms", "qdelay_p50_ms",
            "qdelay_p95_ms", "qdelay_p99_ms", "drops", "max_backlog_bytes", "max_backlog_pkts")  # fmt: skip
    source = {**{c: c for c in same}, "packets": "bottleneck_pkts"}
    links = pd.DataFrame({"link": ["bottleneck"] * len(s), "delay_ms": [0.0] * len(s)})
    for col, src in source.items():
        links[col] = s[src].to_numpy() if src in s else float("nan")
    frames["links"] = links[[c.name for c in columns()["links"][1]]]
    if "link" not in frames["queue"]:
        frames["queue"].insert(1, "link", "bottleneck")
    if "route" not in frames["flows"]:
        frames["flows"]["route"] = "bottleneck"
    return frames


class Results:
    """One run: ``.summary`` (one row), ``.flows`` (one row per flow),
    ``.samples`` (per flow per sample interval), ``.queue`` (per link per
    interval), ``.transitions`` (CC state changes) and ``.links`` (one row
    per link), each a ``pandas.DataFrame`` whose
    column names carry their units (``goodput_mbps``, ``srtt_ms``, ``time_s``).

    ``.path`` is the run directory (``None`` for results not written);
    ``.meta`` the content of ``scenario.json``; ``.scenario`` the normalized
    scenario; ``.stats`` the simulator's run statistics.
    """

    def __init__(self, frames: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], path: Path | None = None):
        missing = [t for t in REQUIRED_TABLES if t not in frames]
        if missing:
            raise ValueError(f"results lack table(s): {', '.join(missing)}")
        self._frames = _with_links(dict(frames))
        self.meta: dict[str, Any] = dict(meta)
        self.path = Path(path) if path is not None else None

    @classmethod
    def from_arrow(cls, tables: Mapping[str, pa.Table], meta: Mapping[str, Any], path: Path | None = None):
        return cls({name: t.to_pandas() for name, t in tables.items()}, meta, path)

    @classmethod
    def load(cls, path: str | Path) -> Results:
        """Read a run directory written by ``ccarena run``."""
        path = Path(path)
        meta_file = path / SCENARIO_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path}: not a run directory (no {SCENARIO_FILE})")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        files = {t: path / f"{t}.parquet" for t in TABLES}
        frames = {t: pq.read_table(f).to_pandas() for t, f in files.items() if f.is_file()}
        return cls(frames, meta, path)

    # The tables, named so they complete in an editor.
    @property
    def summary(self) -> pd.DataFrame:
        return self._frames["summary"]

    @property
    def flows(self) -> pd.DataFrame:
        return self._frames["flows"]

    @property
    def samples(self) -> pd.DataFrame:
        return self._frames["samples"]

    @property
    def queue(self) -> pd.DataFrame:
        return self._frames["queue"]

    @property
    def transitions(self) -> pd.DataFrame:
        return self._frames["transitions"]

    @property
    def links(self) -> pd.DataFrame:
        """One row per link: the dumbbell's ``bottleneck``, or each of a
        network's ``[[links]]`` (utilization, queueing delay, drops)."""
        return self._frames["links"]

    def table(self, name: str) -> pd.DataFrame:
        return self._frames[name]

    def sampled_srtt_ms(self) -> pd.Series:
        """Per flow: the mean of the srtt sampled every ``sample.interval``,
        each sample weighted by the bytes delivered in its interval.

        One definition for both backends: the Linux backend can only sample
        ``tcpi_rtt`` (its ``flows.srtt_mean_ms`` is exactly this), while the
        simulator's ``flows.srtt_mean_ms`` averages over every ACK, which
        differs by a median 4% of the queueing delay (up to 10 ms at a
        180 ms standing queue). Comparisons between backends use this."""
        s = self.samples
        if s.empty:
            return pd.Series(dtype=float, name="srtt_ms")
        s = s.sort_values(["flow", "time_s"])
        delta = s.groupby("flow")["delivered_bytes"].diff().fillna(s["delivered_bytes"]).astype(float)
        ok = s["srtt_ms"].notna() & (s["srtt_ms"] > 0) & (delta > 0)
        w = delta[ok]
        num = (s.loc[ok, "srtt_ms"] * w).groupby(s.loc[ok, "flow"]).sum()
        den = w.groupby(s.loc[ok, "flow"]).sum()
        return (num / den).rename("srtt_ms")

    @property
    def scenario(self) -> dict[str, Any]:
        return self.meta.get("scenario", {})

    @property
    def stats(self) -> dict[str, int]:
        return self.meta.get("run_stats", {})

    @property
    def name(self) -> str:
        return str(self.scenario.get("name") or (self.path.parent.name if self.path else "run"))

    @property
    def figure(self) -> Path | None:
        """The run figure, if it was drawn."""
        if self.path is None:
            return None
        png = self.path / "timeseries.png"
        return png if png.is_file() else None

    @property
    def captures(self) -> dict[str, Path]:
        """The ``[capture]`` files of a stored run, by point ("sender",
        "receiver" or a link's name): pcapng for Wireshark, tshark or
        ``ccarena.capture``."""
        if self.path is None:
            return {}
        return {c["point"]: self.path / c["file"] for c in self.meta.get("captures", [])}

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"<Results {self.name!r}{where}: {len(self.flows)} flows, {len(self.samples)} samples>"

    def _repr_html_(self) -> str:
        """Jupyter: the summary, the flows and the run figure (``ccarena.notebook``)."""
        from .notebook import results_html  # matplotlib only when a notebook asks

        return results_html(self)
