"""Running one scenario on the simulator and storing its results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .results import Results, tables_from_ipc
from .scenario import Scenario
from .store import (
    DEFAULT_ROOT,
    TABLES,
    capture_files,
    capture_meta,
    check_target,
    default_run_dir,
    write_run,
)
from .version import __version__

__all__ = ["BACKEND", "execute", "run_meta", "simulate", "store_streams"]

BACKEND = "sim"


#: A simulated run's output: table streams, run statistics, captures.
SimOutput = tuple[dict[str, bytes], dict[str, int], list[dict[str, Any]]]


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


def simulate(core_json: str, progress: Callable[[int], None] | None = None) -> SimOutput:
    """Run a normalized scenario (JSON) on the simulator: the Arrow IPC
    streams of its tables, the run statistics and the ``[capture]`` files
    (``_core.run``). Pure: no files. ``progress(sim_time_ns)`` is called
    about ten times a second of wall time; Ctrl-C stops the run within
    about as long (KeyboardInterrupt)."""
    from . import _core

    streams, stats, captures = _core.run(core_json, progress)
    missing = [t for t in TABLES if t not in streams]
    if missing:
        raise RuntimeError(f"the simulator returned no table(s) {', '.join(missing)}")
    return {t: streams[t] for t in TABLES}, dict(stats), list(captures)


def store_streams(core_json: str, run_hash: str, output: SimOutput, target: str | Path) -> Path:
    """Write the run directory of a simulated scenario (``output`` as
    ``simulate`` returns it)."""
    import json

    streams, stats, captures = output
    tables = tables_from_ipc(streams)
    meta = _meta(json.loads(core_json), run_hash, stats, captures)
    return write_run(Path(target), meta, tables, captures=capture_files(captures))


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
    an interrupted run writes nothing."""
    from .cost import check
    from .plots.timeseries import FIGURE_NAME, plot_run

    check(scn, force=yes)
    target = Path(out) if out is not None else default_run_dir(scn.name, scn.short_hash, root)
    check_target(target)  # refused before the run costs anything

    streams, stats, captures = simulate(scn.core_json, progress)
    arrow = tables_from_ipc(streams)
    tables = {t: arrow[t] for t in TABLES}
    meta = run_meta(scn, stats, captures)
    results = Results.from_arrow(tables, meta)

    def draw(tmp: Path) -> None:
        plot_run(results, tmp / FIGURE_NAME)

    write_run(target, meta, tables, draw if figure else None, capture_files(captures))
    results.path = target
    return results
