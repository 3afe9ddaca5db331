"""Running one scenario on the simulator and storing its results."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .results import Results
from .scenario import Scenario
from .store import (
    DEFAULT_ROOT,
    TABLES,
    ParquetFiles,
    Tables,
    capture_files,
    capture_meta,
    check_target,
    default_run_dir,
    spill_dir,
    write_run,
)
from .version import __version__

if TYPE_CHECKING:
    from . import _core

__all__ = [
    "BACKEND",
    "PortableRun",
    "execute",
    "run_meta",
    "simulate",
    "simulate_portable",
    "simulated",
    "store_run",
]

BACKEND = "sim"

#: A simulated run in a form that crosses processes (a Ray worker's
#: answer): each table as a Parquet file's bytes, the run statistics and
#: the captures.
PortableRun = tuple[dict[str, bytes], dict[str, int], list[dict[str, Any]]]


def run_meta(
    scn: Scenario, stats: dict[str, int], captures: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The content of ``scenario.json``. No wall-clock time, so it is the same
    for the same scenario."""
    return _meta(scn.normalized, scn.hash, stats, captures or [])


def _meta(
    normalized: dict[str, Any], run_hash: str, stats: dict[str, int], captures: list[dict[str, Any]]
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "backend": BACKEND,
        "ccarena_version": __version__,
        "hash": run_hash,
        "run_stats": dict(stats),
        "scenario": normalized,
    }
    if captures:
        meta["captures"] = capture_meta(captures)
    return meta


def simulate(
    core_json: str,
    progress: Callable[[int], None] | None = None,
    spill: Path | None = None,
) -> _core.Run:
    """Run a normalized scenario (JSON) on the simulator: the core's ``Run``
    (its tables, run statistics and ``[capture]`` files, held in Rust until
    written). ``progress(sim_time_ns)`` is called about ten times a second
    of wall time; Ctrl-C stops the run within about as long
    (KeyboardInterrupt). With ``spill`` (a directory to create), the tables
    that grow with simulated time wait there on disk instead of in memory
    until the run is written or closed (``simulated`` manages it);
    without, no files."""
    from . import _core

    run = _core.run(core_json, progress, None if spill is None else str(spill))
    missing = [t for t in TABLES if t not in run.names()]
    if missing:
        run.close()
        raise RuntimeError(f"the simulator returned no table(s) {', '.join(missing)}")
    return run


@contextmanager
def simulated(
    core_json: str, near: str | Path, progress: Callable[[int], None] | None = None
) -> Iterator[_core.Run]:
    """``simulate``, its growing tables kept on disk beside ``near`` (the
    run directory it is bound for) while the run is open: memory then
    follows the flows and the packets in flight, not the simulated time.
    Closed on leaving, written or not."""
    run = simulate(core_json, progress, spill_dir(near))
    try:
        yield run
    finally:
        run.close()


def simulate_portable(core_json: str) -> PortableRun:
    """``simulate``, its tables as Parquet bytes (for a Ray worker to send back)."""
    with simulated(core_json, Path(tempfile.gettempdir()) / "ccarena-run") as run:
        return {t: run.parquet(t) for t in TABLES}, dict(run.stats), list(run.captures)


def store_run(
    core_json: str,
    run_hash: str,
    tables: Tables,
    stats: dict[str, int],
    captures: list[dict[str, Any]],
    target: str | Path,
) -> Path:
    """Write the run directory of a simulated scenario."""
    meta = _meta(json.loads(core_json), run_hash, stats, captures)
    return write_run(Path(target), meta, tables, captures=capture_files(captures))


def store_portable(core_json: str, run_hash: str, output: PortableRun, target: str | Path) -> Path:
    """Write a run that ``simulate_portable`` returned."""
    files, stats, captures = output
    return store_run(core_json, run_hash, ParquetFiles(files), stats, captures, target)


def execute(
    scn: Scenario,
    out: str | Path | None = None,
    *,
    root: str | Path = DEFAULT_ROOT,
    figure: bool = False,
    yes: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Results:
    """Simulate ``scn`` and write its run directory: ``out`` exactly, or
    ``<root>/<scenario name>/<hash>``. With ``figure``, the run figure
    (``timeseries.png``) is drawn into the directory before it appears.
    A run whose estimated cost is above ``cost.LIMITS`` is refused
    (``ScenarioError``) unless ``yes``. ``progress`` as for ``simulate``;
    an interrupted run writes nothing. The ``Results`` read their frames
    from the run directory when first asked for."""
    from .cost import check

    check(scn, force=yes)
    target = Path(out) if out is not None else default_run_dir(scn.name, scn.short_hash, root)
    check_target(target)  # refused before the run costs anything

    def draw(tmp: Path) -> None:
        from .plots.timeseries import FIGURE_NAME, plot_run

        plot_run(Results.load(tmp), tmp / FIGURE_NAME)

    with simulated(scn.core_json, target, progress) as run:
        stats, captures = dict(run.stats), list(run.captures)
        meta = run_meta(scn, stats, captures)
        write_run(target, meta, run, draw if figure else None, capture_files(captures))
    return Results.load(target, preview=run)
