"""Running a conformance matrix: the kernel's runs (as root, one at a time),
the simulator's (in a pool), the judging, and what is written.

Runs are stored under ``OUT/runs/``: the simulator's by their scenario's
hash, the kernel's by ``kernel_hash``, so an interrupted conformance run
resumes where it stopped, a new simulator model re-runs only the
simulator's side, and ``--part K/N`` runs one N-th of the cells. Every
conformance run writes ``kernel.parquet``, the judged values and the
provenance of every kernel run it could see; ``--kernel FILE`` reuses such
a table (with ``--sim-only``, without root).

Every selected cell is judged, or the run is an error (``MissingRuns``)
naming the cells that lack runs (a kernel reference recorded for another
matrix, a scenario that changed since): nothing is dropped silently, unless
``allow_missing``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..linux import execute as execute_linux
from ..linux.testbeds import DEFAULT_TESTBED
from ..results import Results
from ..scenario import Scenario
from ..stats import turnaround_median
from ..store import is_complete, write_bytes_atomic
from .hosts import HostsMode, HostTable, describe, seed_hosts
from .judge import finish, flow_values, flow_verdicts, judge_cell, perfect_model, summary
from .kernel import KernelRun, KernelRuns, kernel_table, run_dir
from .matrix import Cell, Matrix, select
from .report import plot, report

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy("pandas")

__all__ = ["Conformance", "MissingRuns", "ceiling_table", "collect", "run_conformance", "sim_side"]


class MissingRuns(RuntimeError):
    """Selected cells that cannot be judged: their runs are not all there."""

    def __init__(self, cells: Sequence[str], why: str) -> None:
        self.cells = list(cells)
        shown = ", ".join(self.cells[:5]) + (
            f" and {len(self.cells) - 5} more" if len(self.cells) > 5 else ""
        )
        super().__init__(
            f"{len(self.cells)} selected cell(s) cannot be judged ({why}): {shown}; make their runs, "
            "or give --allow-missing to judge the others"
        )


def sim_side(
    mode: HostsMode, cell: Cell, runs: Sequence[KernelRun], seeds: int
) -> list[tuple[Scenario, HostTable | None]]:
    """A cell's simulator scenarios, seed by seed, each with the hosts table
    it runs with (``hosts.seed_hosts``)."""
    hosts = seed_hosts(mode, runs, seeds)
    return [(cell.with_seed(seed, h), h) for seed, h in zip(cell.seeds(seeds), hosts, strict=True)]


def _kernel_runs(
    cell: Cell,
    out: Path,
    kernel: KernelRuns,
    say: Callable[[str], None],
    retry_untrusted: bool,
) -> None:
    """Make the cell's missing kernel runs (its group's rule of them)."""
    for r, seed in enumerate(cell.seeds(cell.repeats)):
        scn = cell.with_seed(seed)
        run = kernel.get(scn)
        if run is not None and retry_untrusted and not run.trustworthy:
            moved = kernel.set_aside(scn)
            say(f"{cell.id} linux {r + 1}: untrustworthy, run again" + (f" ({moved})" if moved else ""))
            run = None
        if run is None:
            say(f"{cell.id} linux {r + 1}/{cell.repeats}")
            execute_linux(scn, run_dir(out, scn, "linux", kernel.testbed), testbed=kernel.testbed)


def _run_sims(todo: Sequence[tuple[Scenario, Path]], jobs: int, say: Callable[[str], None]) -> None:
    """The simulator's runs, on ``jobs`` processes (each run's files are the
    same bits whatever ran it); the first failure is raised once all ended."""
    from ..executors import Job, run_local

    errors: list[BaseException] = []
    done = 0

    def on_done(job: Job, error: BaseException | None) -> None:
        nonlocal done
        done += 1
        if error is not None:
            errors.append(error)
        say(f"simulator runs: {done} of {len(todo)}")

    run_local(
        [Job(i, scn.core_json, scn.hash, str(d)) for i, (scn, d) in enumerate(todo)], max(1, jobs), on_done
    )
    if errors:
        raise errors[0]


def collect(
    matrix: Matrix, cells: Sequence[Cell], out: Path, kernel: KernelRuns, mode: HostsMode | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """One row per cell, flow and metric (``judge.judge_cell``) of every cell
    whose runs are all there, the simulator's with the hosts of ``mode``
    (the matrix's by default); and the ids of the cells that are not."""
    mode = matrix.sim_hosts if mode is None else mode
    rows: list[dict[str, Any]] = []
    missing: list[str] = []
    for cell in cells:
        runs = kernel.of_cell(cell)
        trusted = [r.values for r in runs if r.trustworthy] if runs is not None else []
        if runs is None or not trusted:
            missing.append(cell.id)
            continue
        side = sim_side(mode, cell, runs, matrix.sim_seeds)
        sims = []
        for scn, _ in side:
            d = run_dir(out, scn, "sim")
            if not is_complete(d, scn.hash):
                break
            sims.append(flow_values(Results.load(d)))
        if len(sims) < matrix.sim_seeds:
            missing.append(cell.id)
            continue
        medians = [turnaround_median(h.sender_us) for _, h in side if h is not None and h.sender_us]
        extra = {
            "linux_untrusted": len(runs) - len(trusted),
            # The simulator's hosts: the median sender turnaround of the
            # tables its seeds ran with, averaged (NaN: the scenario's own).
            "sim_host_p50_us": float(sum(medians) / len(medians)) if medians else math.nan,
        }
        rows += judge_cell(cell, sims, trusted, matrix.tolerance, matrix.identical_flows == "ranked", extra)
    return finish(pd.DataFrame(rows)), missing


def ceiling_table(
    matrix: Matrix,
    cells: Sequence[Cell],
    kernel: KernelRuns,
    seeds: int | None = None,
    as_runs: int | None = None,
) -> pd.DataFrame:
    """``judge.perfect_model`` of every cell with three or more trustworthy
    kernel runs: the agreement the kernel's own runs reach against each
    other, scaled to ``seeds`` simulator seeds (the matrix's by default)
    against ``as_runs`` kernel runs (as many as there are)."""
    rows: list[dict[str, Any]] = []
    for cell in cells:
        trusted = [r.values for r in kernel.of_cell(cell) or [] if r.trustworthy]
        rows += perfect_model(
            cell,
            trusted,
            matrix.tolerance,
            matrix.identical_flows == "ranked",
            seeds or matrix.sim_seeds,
            as_runs,
        )
    return pd.DataFrame(rows, columns=["cell", "group", "flow", "rank", "ceiling"])


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as Parquet (zstd), replacing ``path`` atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf, compression="zstd")
    write_bytes_atomic(path, buf.getvalue().to_pybytes())


def machines(kernel: KernelRuns, cells: Sequence[Cell]) -> str:
    """Where the judged kernel runs were made, and whether that is this
    machine: judging against another machine's runs says so."""
    from ..linux.host import host_info

    seen: dict[str, int] = {}
    for cell in cells:
        for run in kernel.of_cell(cell) or []:
            seen[run.machine or "a machine not recorded"] = (
                seen.get(run.machine or "a machine not recorded", 0) + 1
            )
    here = host_info()
    this = ", ".join(x for x in (here["hostname"], here["cpu_model"], here["kernel"]) if x)
    if not seen:
        return ""
    parts = "; ".join(f"{n} on {m}" for m, n in sorted(seen.items(), key=lambda kv: -kv[1]))
    same = set(seen) == {this}
    return f"{parts}" + ("" if same else f" (this machine: {this}: judged against another machine's runs)")


@dataclass
class Conformance:
    matrix: Matrix
    frame: pd.DataFrame
    flows: pd.DataFrame
    directory: Path
    figure: Path | None = None
    report: Path | None = None
    summary: pd.DataFrame | None = None
    #: Per judged flow: the ceiling (``judge.perfect_model``), from the kernel's runs alone.
    ceiling: pd.DataFrame | None = None
    #: Per hosts choice (``sensitivity``): that choice's per-group summary.
    sensitivity: pd.DataFrame | None = None
    machines: str = ""
    missing: list[str] = field(default_factory=list)

    @property
    def agree_fraction(self) -> float:
        return float(self.flows["agree"].mean()) if len(self.flows) else math.nan


def run_conformance(
    matrix: Matrix,
    out: str | Path,
    *,
    groups: Sequence[str] = (),
    part: tuple[int, int] | None = None,
    ids: Sequence[str] = (),
    linux: bool = True,
    reference: dict[str, KernelRun] | None = None,
    figure: bool = True,
    progress: Callable[[str], None] | None = None,
    retry_untrusted: bool = False,
    jobs: int = 1,
    allow_missing: bool = False,
    sensitivity: Sequence[HostsMode] = (),
    testbed: str = DEFAULT_TESTBED,
) -> Conformance:
    """Run the selected cells (skipping runs already there, and kernel runs
    the ``reference`` holds; the kernel's only with ``linux``), then judge
    them with the simulator's hosts as the matrix says (and, for
    ``sensitivity``, with each other choice too), and write
    ``conformance.parquet``, ``kernel.parquet``, ``flows.csv``,
    ``summary.csv`` (and ``sensitivity.csv``), ``conformance.png`` and
    ``report.html`` into ``out``. Raises ``MissingRuns`` when a selected
    cell cannot be judged, unless ``allow_missing``. With
    ``retry_untrusted`` (and ``linux``) a selected cell's kernel runs whose
    self-checks failed are made again, the old ones moved to
    ``out/untrusted/`` (``KernelRuns.set_aside``)."""
    say = progress or (lambda m: None)
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    chosen = select(matrix.cells, groups, part, ids)
    kernel = KernelRuns(out, reference, testbed)
    if linux:
        for k, cell in enumerate(chosen):
            say(f"[{k + 1}/{len(chosen)}] {cell.id} {cell.label()}")
            _kernel_runs(cell, out, kernel, say, retry_untrusted)
    modes = [matrix.sim_hosts, *[m for m in sensitivity if m != matrix.sim_hosts]]
    todo: dict[Path, Scenario] = {}
    for mode in modes:
        for cell in chosen:
            runs = kernel.of_cell(cell)
            if runs is None and mode in ("per-run", "kernel"):
                continue  # its hosts come from the kernel runs, not all there yet
            for scn, _ in sim_side(mode, cell, runs or [], matrix.sim_seeds):
                d = run_dir(out, scn, "sim")
                if not is_complete(d, scn.hash):
                    todo[d] = scn
    _run_sims([(s, d) for d, s in todo.items()], jobs, say)
    frame, missing = collect(matrix, chosen, out, kernel)
    if missing and not allow_missing:
        why = "no trustworthy kernel run, or none recorded for them as they are now"
        raise MissingRuns(missing, why)
    flows = flow_verdicts(frame)
    ceiling = ceiling_table(matrix, [c for c in chosen if c.id not in missing], kernel)
    table = summary(flows, frame, ceiling)
    sens = None
    if len(modes) > 1:
        parts = []
        for mode in modes:
            f, _ = (frame, None) if mode is matrix.sim_hosts else collect(matrix, chosen, out, kernel, mode)
            s = summary(flow_verdicts(f), f, ceiling)
            s.insert(0, "hosts", describe(mode))
            parts.append(s)
        sens = pd.concat(parts, ignore_index=True)
        write_bytes_atomic(out / "sensitivity.csv", sens.to_csv(index=False).encode())
    where = machines(kernel, [c for c in chosen if c.id not in missing])
    _write_parquet(frame, out / "conformance.parquet")
    _write_parquet(kernel_table(matrix, matrix.cells, kernel), out / "kernel.parquet")
    write_bytes_atomic(out / "flows.csv", flows.to_csv(index=False).encode())
    write_bytes_atomic(out / "summary.csv", table.to_csv(index=False).encode())
    fig = plot(frame, out / "conformance.png") if figure and not frame.empty else None
    rep = report(matrix, frame, out, fig, flows=flows, table=table, machines=where, sensitivity=sens)
    return Conformance(matrix, frame, flows, out, fig, rep, table, ceiling, sens, where, missing)
