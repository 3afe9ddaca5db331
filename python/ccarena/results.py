"""The results of one run, as pandas data frames.

Each frame is read when it is first asked for (from the run directory's
Parquet file, or from the Arrow table it was built as), so a command that
only prints a run's summary never loads pandas or pyarrow (start-up time:
``ccarena run`` prints from the core's own rows, ``Results.head``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import ColumnDef, columns, numeric_columns
from .store import REQUIRED_TABLES, SCENARIO_FILE, TABLES

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from . import _core

__all__ = ["ColumnDef", "Results", "columns", "conform", "numeric_columns", "schemas", "tables_from_ipc"]


def tables_from_ipc(streams: Mapping[str, bytes]) -> dict[str, pa.Table]:
    """Arrow tables from Arrow IPC streams (``_core.Run.ipc``)."""
    import pyarrow as pa
    import pyarrow.ipc

    return {name: pyarrow.ipc.open_stream(pa.py_buffer(data)).read_all() for name, data in streams.items()}


def _types() -> dict[str, pa.DataType]:
    import pyarrow as pa

    return {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}


@functools.cache
def schemas() -> dict[str, pa.Schema]:
    """Each table's fixed columns as an Arrow schema (see ``columns``)."""
    import pyarrow as pa

    types = _types()
    return {t: pa.schema([(c.name, types[c.type]) for c in cols]) for t, (_, cols) in columns().items()}


def conform(name: str, frame: pd.DataFrame) -> pa.Table:
    """``frame`` as the ``name`` table: the schema's columns first, in its
    order and types (integers nullable where a backend lacks the value),
    then the frame's other columns. Raises ``ValueError`` naming a schema
    column the frame lacks, so a backend cannot drift from the contract."""
    import pyarrow as pa

    types = _types()
    defs = columns()[name][1]
    missing = [c.name for c in defs if c.name not in frame.columns]
    if missing:
        raise ValueError(f"table {name} lacks the column(s) {', '.join(missing)} of the results schema")
    arrays, names = [], []
    for c in defs:
        col = frame[c.name]
        if c.type == "string":
            col = col.fillna("").astype(str)
        arrays.append(pa.array(col, type=types[c.type], from_pandas=True))
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


def _links_from_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """A run written before networks existed (one bottleneck, no ``links``
    table): its one link is the dumbbell's bottleneck, whose row the
    summary holds."""
    import pandas as pd

    s = summary
    # Each links column from the summary column that holds it for one link.
    same = ("rate_mbps", "flows", "utilization", "wire_utilization", "qdelay_mean_ms", "qdelay_p50_ms",
            "qdelay_p95_ms", "qdelay_p99_ms", "drops", "max_backlog_bytes", "max_backlog_pkts")  # fmt: skip
    source = {**{c: c for c in same}, "packets": "bottleneck_pkts"}
    links = pd.DataFrame({"link": ["bottleneck"] * len(s), "delay_ms": [0.0] * len(s)})
    for col, src in source.items():
        links[col] = s[src].to_numpy() if src in s else float("nan")
    return links[[c.name for c in columns()["links"][1]]]


#: Where a table's frame comes from: a function that reads it (None: the
#: run has no such table).
Loader = Callable[[], "pd.DataFrame | None"]


class Results:
    """One run: ``.summary`` (one row), ``.flows`` (one row per flow),
    ``.samples`` (per flow per sample interval), ``.queue`` (per link per
    interval), ``.transitions`` (CC state changes) and ``.links`` (one row
    per link), each a ``pandas.DataFrame`` whose
    column names carry their units (``goodput_mbps``, ``srtt_ms``, ``time_s``),
    read when first asked for.

    ``.path`` is the run directory (``None`` for results not written);
    ``.meta`` the content of ``scenario.json``; ``.scenario`` the normalized
    scenario; ``.stats`` the simulator's run statistics.
    """

    def __init__(
        self,
        frames: Mapping[str, pd.DataFrame] | None,
        meta: Mapping[str, Any],
        path: Path | None = None,
        *,
        loaders: Mapping[str, Loader] | None = None,
        preview: _core.Run | None = None,
    ):
        """``frames`` given as they are, or ``loaders`` that read each table
        when first asked; ``preview``: the core's ``Run`` these results
        were written from, whose small tables ``head`` prints without
        pandas."""
        have = set(frames or {}) | set(loaders or {})
        missing = [t for t in REQUIRED_TABLES if t not in have]
        if missing:
            raise ValueError(f"results lack table(s): {', '.join(missing)}")
        #: Written before networks existed: no links table, no link or route column.
        self._before_networks = "links" not in have
        self._frames: dict[str, pd.DataFrame] = dict(frames or {})
        self._loaders: dict[str, Loader] = dict(loaders or {})
        self._preview = preview
        self.meta: dict[str, Any] = dict(meta)
        self.path = Path(path) if path is not None else None

    @classmethod
    def from_arrow(cls, tables: Mapping[str, pa.Table], meta: Mapping[str, Any], path: Path | None = None):
        return cls(None, meta, path, loaders={name: t.to_pandas for name, t in tables.items()})

    @classmethod
    def load(cls, path: str | Path, preview: _core.Run | None = None) -> Results:
        """Read a run directory written by ``ccarena run`` (each table when
        first asked for)."""
        path = Path(path)
        meta_file = path / SCENARIO_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path}: not a run directory (no {SCENARIO_FILE})")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))

        def reader(f: Path) -> Loader:
            def read() -> pd.DataFrame:
                import pyarrow.parquet as pq

                return pq.read_table(f).to_pandas()

            return read

        files = {t: path / f"{t}.parquet" for t in TABLES}
        loaders = {t: reader(f) for t, f in files.items() if f.is_file()}
        return cls(None, meta, path, loaders=loaders, preview=preview)

    def _get(self, name: str) -> pd.DataFrame:
        """Table ``name``, read on first use. Runs written before networks
        existed lack ``links`` (derived from their summary) and the
        ``link`` and ``route`` columns (their one link is the bottleneck)."""
        frame = self._frames.get(name)
        if frame is not None:
            return frame
        load = self._loaders.pop(name, None)
        frame = load() if load is not None else None
        if frame is None:
            if name != "links":
                raise KeyError(f"results have no table {name!r}")
            frame = _links_from_summary(self._get("summary"))
        elif self._before_networks and name == "queue" and "link" not in frame:
            frame.insert(1, "link", "bottleneck")
        elif self._before_networks and name == "flows" and "route" not in frame:
            frame["route"] = "bottleneck"
        self._frames[name] = frame
        return frame

    def head(self, name: str, limit: int) -> list[dict[str, Any]]:
        """The first ``limit`` rows of table ``name`` as dicts: from the
        core's own rows when these results came from a simulation (no
        pandas), else from the frame."""
        if self._preview is not None and name in self._preview.held():
            return list(self._preview.rows(name, limit))
        return list(self._get(name).head(limit).to_dict("records"))

    def count(self, name: str) -> int:
        """Rows of table ``name``."""
        if self._preview is not None and name in self._preview.names():
            return int(self._preview.num_rows(name))
        return len(self._get(name))

    # The tables, named so they complete in an editor.
    @property
    def summary(self) -> pd.DataFrame:
        return self._get("summary")

    @property
    def flows(self) -> pd.DataFrame:
        return self._get("flows")

    @property
    def samples(self) -> pd.DataFrame:
        return self._get("samples")

    @property
    def queue(self) -> pd.DataFrame:
        return self._get("queue")

    @property
    def transitions(self) -> pd.DataFrame:
        return self._get("transitions")

    @property
    def links(self) -> pd.DataFrame:
        """One row per link: the dumbbell's ``bottleneck``, or each of a
        network's ``[[links]]`` (utilization, queueing delay, drops)."""
        return self._get("links")

    def table(self, name: str) -> pd.DataFrame:
        return self._get(name)

    def sampled_srtt_ms(self) -> pd.Series:
        """Per flow: the mean of the srtt sampled every ``sample.interval``,
        each sample weighted by the bytes delivered in its interval.

        One definition for both backends: the Linux backend can only sample
        ``tcpi_rtt`` (its ``flows.srtt_mean_ms`` is exactly this), while the
        simulator's ``flows.srtt_mean_ms`` averages over every ACK, which
        differs by a median 4% of the queueing delay (up to 10 ms at a
        180 ms standing queue). Comparisons between backends use this."""
        import pandas as pd

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
        return f"<Results {self.name!r}{where}: {self.count('flows')} flows, {self.count('samples')} samples>"

    def _repr_html_(self) -> str:
        """Jupyter: where it is, the summary, the flows and the run figure."""
        from . import notebook as nb
        from .plots.timeseries import FIGURE_NAME, plot_run  # matplotlib only when a notebook asks

        facts = [("run directory", self.path or "not written"), ("flows", len(self.flows)),
                 ("backend", self.meta.get("backend", "sim"))]  # fmt: skip
        parts = [
            nb.table(nb.cols(self.summary, nb.SUMMARY_COLUMNS), "summary"),
            nb.table(nb.cols(self.flows, nb.FLOW_COLUMNS), "flows"),
        ]
        fig = self.figure
        if fig is not None:
            parts.append(nb.img(fig))
        else:
            parts.append(nb.temporary_png(lambda d: plot_run(self, d / FIGURE_NAME)))
        return nb.block(f"Results {self.name}", facts, parts)
