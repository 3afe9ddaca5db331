"""Experiments: the results of a sweep, and running one.

An experiment directory (``results/<name>/`` or ``--out DIR``) holds:

- ``experiment.json``: the scenario as written (with ``[sweep]`` and
  ``[[expect]]``), the swept keys, and every point: its swept values, repeat,
  seed, hash and run directory;
- one run directory per distinct run, named by the start of its hash, as
  ``ccarena run`` writes it (so a run is cached whichever command made it);
- ``runs.parquet``: the index, one row per point: the swept values (one
  column per dotted key), ``repeat``, ``seed``, ``hash``, ``run`` (the run
  directory's name) and the run's summary metrics.

A run is skipped when its directory exists and is complete. The index is
rebuilt from the run directories at the end of every sweep (and when a sweep
is interrupted), so a sweep killed at any point, even with SIGKILL, resumes
where it stopped: nothing is lost (every published run directory is
complete) and nothing is duplicated (one row per point, one directory per
hash).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .backends import linux as linux_backend
from .cost import estimate
from .errors import StoreError, SweepError
from .results import Results
from .scenario import Scenario
from .store import (
    DEFAULT_ROOT,
    SCENARIO_FILE,
    clean_stale_tmp,
    default_run_dir,
    is_complete,
    write_bytes_atomic,
)
from .sweep import Point, expand, parse_sweep
from .version import __version__

__all__ = ["EXPERIMENT_FILE", "INDEX_FILE", "Experiment", "SweepError", "run_sweep"]

EXPERIMENT_FILE = "experiment.json"
INDEX_FILE = "runs.parquet"
POINT_COLUMNS = ("repeat", "seed", "hash", "run")


def _is_table(v: Any) -> bool:
    """A swept value that is a list or a table (stored as JSON text)."""
    return isinstance(v, dict | list)


def _cell(v: Any) -> Any:
    """A swept value as a table cell: scalars as they are, tables and lists as JSON text."""
    if _is_table(v):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


def _column(values: list[Any]) -> list[Any]:
    """One type per column (Parquet needs it): numbers stay numbers, anything
    mixed becomes text."""
    cells = [_cell(v) for v in values]
    kinds = {type(c) for c in cells}
    if kinds <= {int, float} or len(kinds) <= 1:
        return cells
    return [c if isinstance(c, str) else json.dumps(c) for c in cells]


def _index_frame(points: list[dict[str, Any]], keys: list[str], directory: Path) -> pd.DataFrame:
    """The index: one row per point whose run is complete."""
    rows: dict[str, list[Any]] = {k: [] for k in (*keys, *POINT_COLUMNS)}
    summaries: list[pd.DataFrame] = []
    cache: dict[str, pd.DataFrame] = {}
    for p in points:
        run_dir = directory / p["run"]
        if p["hash"] not in cache:
            if not is_complete(run_dir, p["hash"]):
                continue
            cache[p["hash"]] = pq.read_table(run_dir / "summary.parquet").to_pandas()
        for k in keys:
            if k not in POINT_COLUMNS:  # a swept seed is the seed column (the swept one at repeat 0)
                rows[k].append(p["values"].get(k))
        for c in POINT_COLUMNS:
            rows[c].append(p[c])
        summaries.append(cache[p["hash"]])
    head = pd.DataFrame({k: _column(v) for k, v in rows.items()})
    if "seed" in rows:
        head["seed"] = head["seed"].astype("int64")
        head["repeat"] = head["repeat"].astype("int64")
    if not summaries:
        return head
    body = pd.concat(summaries, ignore_index=True)
    body = body.drop(columns=[c for c in body.columns if c in head.columns])
    return pd.concat([head.reset_index(drop=True), body], axis=1)


def _write_index(frame: pd.DataFrame, directory: Path) -> Path:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return write_bytes_atomic(directory / INDEX_FILE, sink.getvalue().to_pybytes())


class Experiment:
    """The results of a sweep.

    ``.runs``: the index (``runs.parquet``), one row per point. ``.flows``,
    ``.samples``, ``.queue``, ``.transitions``: every run's table stacked, each
    row carrying its point's swept columns, ``repeat``, ``seed``, ``hash`` and
    ``run``; read on first use. ``.keys``: the swept columns. ``.path``: the
    experiment directory. ``.results(i)``: the ``Results`` of row ``i``.
    """

    def __init__(self, path: Path, meta: dict[str, Any], runs: pd.DataFrame):
        self.path = Path(path)
        self.meta = meta
        self.runs = runs
        self.keys: list[str] = list(meta.get("keys", []))
        self._frames: dict[str, pd.DataFrame] = {}
        self.expectations: list[Any] = []  # outcomes, filled by run_sweep

    @classmethod
    def load(cls, path: str | Path) -> Experiment:
        """Read an experiment directory; the index is rebuilt if missing."""
        path = Path(path)
        meta_file = path / EXPERIMENT_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path}: not an experiment directory (no {EXPERIMENT_FILE})")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        index = path / INDEX_FILE
        if index.is_file():
            runs = pq.read_table(index).to_pandas()
        else:
            runs = _index_frame(meta["points"], meta["keys"], path)
        return cls(path, meta, runs)

    @classmethod
    def from_run(cls, path: str | Path) -> Experiment:
        """A single run directory seen as a one-point experiment (for plots and reports)."""
        path = Path(path)
        r = Results.load(path)
        h = str(r.meta.get("hash", ""))
        point = {"values": {}, "repeat": 0, "seed": r.scenario.get("seed", 0), "hash": h, "run": path.name}
        meta = {"name": r.name, "keys": [], "points": [point], "single_run": True}
        runs = _index_frame([point], [], path.parent)
        return cls(path.parent, meta, runs)

    @property
    def name(self) -> str:
        return str(self.meta.get("name", self.path.name))

    @property
    def scenario(self) -> dict[str, Any]:
        """The scenario as written, with its ``[sweep]`` and ``[[expect]]``."""
        return self.meta.get("scenario", {})

    def run_dir(self, i: int) -> Path:
        return self.path / str(self.runs["run"].iloc[i])

    def results(self, i: int) -> Results:
        return Results.load(self.run_dir(i))

    def _table_keys(self) -> set[str]:
        """Swept keys whose values are lists or tables (e.g. a whole ``flows``
        list): their cells are JSON text of any size."""
        return {
            k for p in self.meta.get("points", []) for k, v in p.get("values", {}).items() if _is_table(v)
        }

    def _stack(self, table: str) -> pd.DataFrame:
        if table in self._frames:
            return self._frames[table]
        parts, sizes = [], []
        cache: dict[str, pd.DataFrame] = {}
        head_cols = [*self.keys, *POINT_COLUMNS]
        for run in self.runs["run"].astype(str):
            if run not in cache:
                cache[run] = pq.read_table(self.path / run / f"{table}.parquet").to_pandas()
            parts.append(cache[run])
            sizes.append(len(cache[run]))
        if not parts:
            out = pd.DataFrame(columns=head_cols)
        else:
            # Each row carries its point's columns. A list or table swept as
            # one value (bbrv3-insights/fig14 sweeps whole 5,000-flow
            # workloads, 400 kB of JSON each) is a categorical: one copy per
            # point, not one per row (a string column held 5,417 copies per
            # run and 260 GB in all).
            point_of_row = np.repeat(np.arange(len(self.runs)), sizes)
            tables = self._table_keys()
            head = {}
            for c in head_cols:
                col = self.runs[c]
                if c in tables:
                    cat = pd.Categorical(col)
                    head[c] = pd.Categorical.from_codes(cat.codes[point_of_row], categories=cat.categories)
                else:
                    head[c] = col.take(point_of_row).reset_index(drop=True)
            out = pd.concat([pd.DataFrame(head), pd.concat(parts, ignore_index=True)], axis=1)
        self._frames[table] = out
        return out

    @property
    def flows(self) -> pd.DataFrame:
        return self._stack("flows")

    @property
    def samples(self) -> pd.DataFrame:
        return self._stack("samples")

    @property
    def queue(self) -> pd.DataFrame:
        return self._stack("queue")

    @property
    def transitions(self) -> pd.DataFrame:
        return self._stack("transitions")

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        return f"<Experiment {self.name!r} at {self.path}: {len(self.runs)} runs, keys {self.keys}>"

    def _repr_html_(self) -> str:
        """Jupyter: its keys, the runs table and, with a swept key, the mean
        Jain index over it with 95% confidence intervals."""
        import html

        from . import notebook as nb
        from .plots import PlotError, make_figure  # matplotlib only when a notebook asks

        keys = ", ".join(self.keys) or "none"
        facts = [("directory", self.path), ("runs", len(self.runs)), ("swept keys", keys)]
        metrics = [c for c in nb.SUMMARY_COLUMNS if c in self.runs.columns]
        parts = [nb.table(self.runs[[*self.keys, "repeat", *metrics]], "runs")]
        if self.keys and len(self.runs) > 1:
            try:
                parts.append(nb.temporary_png(lambda d: make_figure(self, "mean", out=d / "mean.png")))
            except PlotError as err:
                parts.append(f"<p>no figure: {html.escape(str(err))}</p>")
        return nb.block(f"Experiment {self.name}", facts, parts)


def _experiment_meta(scn: Scenario, points: list[Point], keys: list[str]) -> dict[str, Any]:
    return {
        "name": scn.name,
        "source": scn.source,
        "ccarena_version": __version__,
        "scenario": scn.document,
        "keys": keys,
        "points": [
            {
                "values": {k: p.values[k] for k in keys},
                "repeat": p.repeat,
                "seed": p.seed,
                "hash": p.hash,
                "run": p.scenario.short_hash,
            }
            for p in points
        ],
    }


def _is_ours(path: Path) -> bool:
    """``experiment.json`` as ``run_sweep`` writes it (a foreign file of that
    name is the user's and is never overwritten)."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("points"), list) and "ccarena_version" in meta


def _check_experiment_dir(directory: Path) -> None:
    """Refuse (before anything is written) a directory ``run_sweep`` would
    damage: a run directory, a file, or a folder whose ``experiment.json`` or
    ``runs.parquet`` are not an earlier experiment's."""

    if os.path.lexists(directory) and not directory.is_dir():
        raise StoreError(
            f"{directory}: exists and is not a directory; give --out a directory for the experiment"
        )
    if (directory / SCENARIO_FILE).exists():
        raise StoreError(f"{directory}: is a run directory; give --out a directory for the experiment")
    meta = directory / EXPERIMENT_FILE
    index = directory / INDEX_FILE
    if (os.path.lexists(meta) and not _is_ours(meta)) or (
        os.path.lexists(index) and not os.path.lexists(meta)
    ):
        raise StoreError(
            f"{directory}: holds an {EXPERIMENT_FILE} or {INDEX_FILE} ccarena did not write; "
            "refusing to overwrite it: give --out an empty or new directory"
        )


def default_experiment_dir(name: str, root: str | Path = DEFAULT_ROOT) -> Path:
    return default_run_dir(name, "x", root).parent


Progress = Callable[[int, int, int], None]


def run_sweep(
    scn: Scenario,
    out: str | Path | None = None,
    *,
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    force: bool = False,
    progress: bool | None = None,
    console: Any = None,
    yes: bool = False,
) -> Experiment:
    """Run every point of ``scn``'s sweep that is not done yet and return the
    ``Experiment``. ``jobs``: worker processes (default: all cores; for Ray,
    the CPUs of a local instance it starts). ``executor``: ``"local"`` or
    ``"ray"`` (``address`` of the cluster). ``force`` re-runs finished runs.
    ``progress`` draws a progress bar on stderr (default: when it is a
    terminal). Raises ``ScenarioError`` for a bad scenario or sweep (before
    anything runs), ``SweepError`` when runs failed (after the others ran)."""
    from .executors import EXECUTORS, Job, default_jobs, run_linux, run_local, run_ray

    kernel = linux_backend()
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}: use one of {', '.join(EXECUTORS)}")
    spec = parse_sweep(scn.sweep, scn.source)
    points = expand(scn, spec, yes=yes)
    keys = spec.keys
    directory = Path(out) if out is not None else default_experiment_dir(scn.name)
    _check_experiment_dir(directory)
    directory.mkdir(parents=True, exist_ok=True)
    clean_stale_tmp(directory)
    meta = _experiment_meta(scn, points, keys)
    # A source path that is not UTF-8 (surrogates) is written as \udcXX escapes: JSON reads it back.
    meta_bytes = (json.dumps(meta, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode(
        errors="backslashreplace"
    )
    write_bytes_atomic(directory / EXPERIMENT_FILE, meta_bytes)

    todo: list[Job] = []
    scenarios: dict[int, Scenario] = {}
    #: Points the Linux backend cannot run here (``linux`` executor), and why.
    skipped: dict[str, str] = {}
    seen: set[str] = set()
    seconds: dict[int, float] = {}
    run_s = 0.0
    for p in points:
        if p.repeat == 0:  # points come grid point by grid point; the repeats cost the same
            run_s = estimate(p.scenario).run_s
        if p.hash in seen:
            continue
        seen.add(p.hash)
        target = directory / p.scenario.short_hash
        if not force and is_complete(target, p.hash):
            continue
        if executor == "linux":
            why = kernel.refusal(p.scenario.normalized)
            if why is not None:
                skipped[p.label()] = why
                continue
            scenarios[p.index] = p.scenario
        todo.append(Job(p.index, p.scenario.core_json, p.hash, str(target)))
        seconds[p.index] = run_s
    # Longest first (ties in point order): the workers take runs in this
    # order, so the last to start are the shortest and the pool ends nearly
    # together (LPT list scheduling, ``cost.makespan``). The order changes no
    # result: each run is written to its own directory, named by its hash,
    # and the index is rebuilt in point order.
    todo.sort(key=lambda job: -seconds[job.index])
    total = len(seen)
    cached = total - len(todo)
    workers = jobs if jobs is not None else default_jobs()
    failures: dict[str, str] = {}
    label_of = {p.index: p.label() for p in points}

    show = sys.stderr.isatty() if progress is None else progress
    bar = _ProgressBar(total, cached, scn.name, console) if show else None

    def on_done(job: Job, err: BaseException | None) -> None:
        if err is not None:
            failures[label_of[job.index]] = str(err)
        if bar is not None:
            bar.advance(failed=err is not None)

    try:
        if bar is not None:
            bar.start()
        if executor == "ray":
            run_ray(todo, address, jobs, on_done)
        elif executor == "linux":
            run_linux(todo, scenarios, on_done)
        else:
            run_local(todo, workers, on_done)
    finally:
        if bar is not None:
            bar.stop()
        # Whatever happened, the index reflects the run directories there are.
        runs = _index_frame(meta["points"], keys, directory)
        _write_index(runs, directory)
    exp = Experiment(directory, meta, runs)
    exp.cached = cached  # type: ignore[attr-defined]
    exp.ran = len(todo) - len(failures)  # type: ignore[attr-defined]
    exp.skipped = skipped  # type: ignore[attr-defined]
    if failures:
        raise SweepError(exp, failures)
    return exp


class _ProgressBar:
    """A rich progress bar with the runs done, elapsed time and ETA."""

    def __init__(self, total: int, cached: int, name: str, console: Any = None):
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._cached = cached
        self._failed = 0
        self._task = self._progress.add_task(escape(name), total=total, completed=cached, note=self._note())

    def _note(self) -> str:
        parts = []
        if self._cached:
            parts.append(f"{self._cached} cached")
        if self._failed:
            parts.append(f"[red]{self._failed} failed[/red]")
        return ", ".join(parts)

    def start(self) -> None:
        self._progress.start()

    def stop(self) -> None:
        self._progress.stop()

    def advance(self, failed: bool = False) -> None:
        self._failed += int(failed)
        self._progress.update(self._task, advance=1, note=self._note())
