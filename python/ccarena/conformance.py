"""Conformance: does the simulator do what the kernel does?

``ccarena conformance MATRIX`` runs every cell of a matrix of scenarios on
both backends, the kernel's cells several times so its own run-to-run spread
is known, the simulator's over as many seeds (its host timing noise makes
seeds differ, docs/model.md), and judges, flow by flow and metric by
metric, whether the simulator agrees with the kernel.

Matrix file (TOML; ``conformance/matrix.toml`` is the shipped one)::

    description = "..."
    duration = "15s"        # every cell's simulated time, unless its scenario says otherwise
    linux_repeats = 3       # kernel runs per cell (>= 3: the spread needs them)
    sim_seeds = 5           # simulator seeds per cell
    sim_hosts = "per-run"   # the simulator's host turnarounds: seed k with the table kernel
                            # run k measured ("per-run"), all seeds with their mean
                            # ("kernel"), or the shipped table ("shipped")
    identical_flows = "ranked"  # flows alike but for their index: judged by rank ("ranked")
                                # or each by its own index ("indexed")

    [tolerance]             # see TOLERANCE below for the defaults and their meaning
    share = 0.05

    [[group]]
    name = "mixed-rtt"
    [group.scenario]        # a scenario, as in any scenario file
    bottleneck = { rate = "50Mbps", buffer = "1BDP" }
    flows = [{ cc = "cubic", rtt = "10ms" }, { cc = "cubic", rtt = "50ms" }]
    [group.sweep]           # its cells: a sweep grid (zip allowed; repeats are not)
    "bottleneck.buffer" = ["0.25BDP", "1BDP", "4BDP"]

Agreement. For each flow and metric, the kernel's runs give a range
[min, max]; the simulator agrees when the mean over its seeds lies in that
range widened by the metric's tolerance on both sides. A flow agrees when
every metric it has agrees. The table also says whether the two ranges
(the simulator's over seeds, the kernel's widened) overlap at all
(``overlap``): the looser, distribution-level reading, which the CI subset
uses as its regression guard because a 3-run kernel range is itself noisy.
Kernel runs whose self-checks failed (``trustworthy = false``) are left
out and counted. ``p_means`` is a third reading: the two-sided permutation
test of equal means, the simulator's seeds against the kernel's runs
(``stats.permutation_p``; with 5 seeds and 3 runs the smallest p is
0.018). A small p where the verdict is "agree" says the means differ
although the ranges meet; a disagreement with a large p is one more kernel
runs are likely to dissolve (docs/validation.md, "Ten kernel runs").
``q_means`` is p adjusted for the number of flow-metrics in the table
(Benjamini and Hochberg's false discovery rate, ``stats.bh_adjust``): a
matrix tests well over a thousand at once, so p < 0.01 happens a dozen
times by chance; the rows with q < 0.05 are the differences to believe.
It depends on the table (a subset of cells has fewer tests).

Where a few runs cannot tell, run more of the same cells: ``--cell
PATTERN`` picks cells by id (``mixed-rtt/32``, ``sized/*``), and
``--linux-repeats N`` / ``--sim-seeds N`` override the matrix's counts.
``--every-run`` judges each cell on every kernel run it has (in ``OUT``
or ``--kernel``, up to the first missing; at least ``linux_repeats``) with
as many simulator seeds, so cells run more often are judged on their
larger sample.
Run r of a cell always has the seed ``derive_seed(seed, r)``, so the
first runs are the ones already made (or in ``--kernel FILE``) and only the
further ones are run.

Identical flows. Flows that differ only in their index (the same algorithm,
RTT, start, size, pacing, ...: a ``count = 5`` entry, say) are
interchangeable: which of them a run favours is a lottery on the kernel and
in the simulator alike, so comparing flow 7 with flow 7 judges the draw,
not the model. With ``identical_flows = "ranked"`` (the default) each run's
values of every metric are sorted within each class of identical flows,
largest first, and the class's k-th flow (by index) holds the k-th largest
value: the judge compares order statistics (the largest share of five
CUBIC flows with the kernel's largest, and so on), metric by metric. The
table's ``rank`` column says so (1 = largest; empty for a flow alone in its
class). ``"indexed"`` judges each flow by its own index.

Runs are stored under ``OUT/runs/`` by their hash, like a sweep's, so an
interrupted conformance run resumes where it stopped; kernel runs by the
hash of what the kernel sees (``kernel_hash``: the scenario without the
simulator's model version and host models), so a new simulator model
re-runs only the simulator's side, and ``--part K/N``
runs one N-th of the cells (in a fixed order), for running a large matrix
in parts. The table, the figure and the report cover every cell whose runs
are all there.

Hosts. The hosts' turnarounds differ between machines (docs/model.md,
"Host timing noise"), and the Linux backend's bottleneck measures them in
every run (``linux.turnarounds``). With ``sim_hosts = "per-run"`` (the
default) a cell's simulator seed k draws its turnarounds from the table
its k-th trustworthy kernel run measured (cycling when there are more
seeds than runs), so the seeds carry the kernel runs' differences in host
speed, which decide outcomes through the flows' phase at the queue
(docs/validation.md, "The drop split is the hosts' phase"); with
``"kernel"`` every seed uses the mean of the tables (``seed_hosts``). The
simulator's side is run after the kernel's; runs that measured none (made
before the meter) leave the shipped table.

Kernel reference. Every conformance run also writes ``kernel.parquet``: the
judged values of every kernel run it used, one row per run and flow, keyed
by ``kernel_hash`` (with the kernel release and the generator revision).
``--kernel FILE`` reuses the kernel runs such a table holds instead of
running them again: with ``--sim-only`` the simulator's side is run and
judged against the recorded kernel runs, with no root and no Linux
backend; without it, only the kernel runs the table lacks are run (a
raised ``linux_repeats``, a new cell), and every row of the new
``kernel.parquet`` says on which kernel its run was made; runs past the
count that a cell has without a gap (made with a larger
``--linux-repeats``, here or in the ``--kernel`` table) stay in it, so
judging with fewer repeats loses none. ``conformance/kernel.parquet`` is the shipped
reference for the shipped matrix (docs/validation.md says on which machine,
kernel and date it was recorded). A cell whose scenario changed since the
reference was recorded has a different ``kernel_hash`` and is reported as
missing, never judged against another scenario's runs.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .linux import execute as execute_linux
from .linux.gen import REVISION as GENERATOR_REVISION
from .linux.gen import revision as generator_revision
from .linux.testbeds import DEFAULT_TESTBED, REVISIONS
from .results import Results
from .scenario import Scenario, ScenarioError, read_toml
from .stats import bh_adjust, permutation_p, turnaround_median
from .store import is_complete, write_bytes_atomic
from .sweep import derive_seed, expand, parse_sweep

__all__ = [
    "KERNEL_COLUMNS",
    "METRICS",
    "TOLERANCE",
    "Cell",
    "KernelRun",
    "KernelRuns",
    "Matrix",
    "agreement",
    "cells_table",
    "differs_table",
    "flow_values",
    "kernel_table",
    "load_kernel_reference",
    "load_matrix",
    "run_conformance",
]

#: metric -> (absolute tolerance, relative tolerance): the larger applies,
#: relative to the kernel's mean. Shares are fractions of the total goodput;
#: delays in ms; FCT in s.
TOLERANCE: dict[str, tuple[float, float]] = {
    "share": (0.05, 0.0),
    "goodput_mbps": (0.5, 0.10),
    "retrans_rate": (0.002, 0.5),
    "srtt_mean_ms": (0.5, 0.10),
    "qdelay_ms": (0.5, 0.10),
    "drops": (20.0, 0.5),
    "fct_s": (0.05, 0.10),
}
METRICS = list(TOLERANCE)
MATRIX_KEYS = (
    "description",
    "duration",
    "linux_repeats",
    "sim_seeds",
    "sim_hosts",
    "identical_flows",
    "tolerance",
    "group",
)
#: Where the simulator's host turnarounds (``[hosts] latency``) come from:
#: each seed the table one of the cell's kernel runs measured (the
#: bottleneck's turnaround meter), every seed their mean, or the shipped one.
SIM_HOSTS = ("per-run", "kernel", "shipped", "none")
#: How flows alike but for their index are judged (see the module).
IDENTICAL_FLOWS = ("ranked", "indexed")
#: Fields of a normalized flow that tell apart flows otherwise alike (their
#: position, name and host index): left out of a flow's class.
_NOT_CLASS = ("id", "group", "label", "host")
GROUP_KEYS = ("name", "scenario", "sweep", "description")


@dataclass(frozen=True)
class Cell:
    """One scenario of the matrix: its group, its position and its swept values."""

    group: str
    index: int
    values: dict[str, Any]
    scenario: Scenario = field(repr=False)

    @property
    def id(self) -> str:
        return f"{self.group}/{self.index}"

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values.items()) or "-"

    def classes(self) -> list[list[int]]:
        """The flow ids of each class of two or more identical flows (alike
        but for ``_NOT_CLASS``), each sorted, in order of their first flow."""
        by: dict[str, list[int]] = {}
        for f in self.scenario.normalized["flows"]:
            key = json.dumps({k: v for k, v in f.items() if k not in _NOT_CLASS}, sort_keys=True)
            by.setdefault(key, []).append(int(f["id"]))
        return [sorted(ids) for ids in by.values() if len(ids) > 1]

    def seeds(self, n: int) -> list[int]:
        base = int(self.scenario.normalized["seed"])
        return [derive_seed(base, r) for r in range(n)]

    def with_seed(self, seed: int, hosts: HostTable | None = None) -> Scenario:
        """The cell's scenario at ``seed``; with ``hosts``, its hosts'
        turnarounds drawn from that table."""
        doc = self.scenario.raw if hosts is None else hosts.onto(self.scenario.raw)
        return Scenario.from_dict(doc, source=self.scenario.source, overrides=[f"seed={seed}"])


@dataclass(frozen=True)
class HostTable:
    """A hosts' turnaround table as the Linux backend's bottleneck measures
    it (us at the simulator's percentiles, ``[hosts] latency``)."""

    sender_us: tuple[float, ...]
    receiver_us: tuple[float, ...]
    #: Measured in one kernel run, so at that run's host speed: the
    #: simulator keeps it as it is (``[hosts] run_speed = "fixed"``). A mean
    #: of runs is no run's speed, so each seed draws one (``"drawn"``).
    one_run: bool = True

    @classmethod
    def of(cls, doc: Any) -> HostTable | None:
        """From a run's ``linux.turnarounds``: None without receiver samples.
        Where every sender paces (the data after an ACK waits for the pacing
        timer, so the bottleneck measures no sender turnaround) the sender
        side takes the receiver's: the two sides' medians differ by 1-3 us
        where both are measured (docs/validation.md)."""
        if not isinstance(doc, Mapping):
            return None
        sender, receiver = (doc.get(k) for k in ("sender_us", "receiver_us"))
        if receiver is None or len(receiver) == 0:
            return None
        r = tuple(map(float, receiver))
        return cls(tuple(map(float, sender)) if sender is not None and len(sender) else r, r)

    @classmethod
    def mean(cls, tables: Sequence[HostTable]) -> HostTable | None:
        """Percentile by percentile, rounded to 0.1 us; None for no tables."""
        if not tables:
            return None
        s = np.mean([t.sender_us for t in tables], axis=0)
        r = np.mean([t.receiver_us for t in tables], axis=0)
        return cls(tuple(round(float(x), 1) for x in s), tuple(round(float(x), 1) for x in r), one_run=False)

    def latency(self) -> dict[str, list[float]]:
        return {"sender_us": list(self.sender_us), "receiver_us": list(self.receiver_us)}

    def onto(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """A scenario document whose hosts are these (``[hosts] latency``,
        and ``run_speed = "fixed"`` for one run's table), its other
        ``[hosts]`` settings kept."""
        if not self.sender_us:  # NO_HOSTS
            return {**doc, "hosts": {**doc.get("hosts", {}), "latency": "none"}}
        hosts = {**doc.get("hosts", {}), "latency": self.latency()}
        if self.one_run:
            hosts["run_speed"] = "fixed"
        return {**doc, "hosts": hosts}


#: Ideal hosts (``[hosts] latency = "none"``): every answer at once.
NO_HOSTS = HostTable((), (), one_run=False)


@dataclass
class Matrix:
    source: str
    description: str
    linux_repeats: int
    sim_seeds: int
    tolerance: dict[str, tuple[float, float]]
    cells: list[Cell]
    sim_hosts: str = "per-run"
    identical_flows: str = "ranked"
    #: Judge each cell on every kernel run it has without a gap (at least
    #: ``linux_repeats``), with as many simulator seeds (at least
    #: ``sim_seeds``): ``--every-run``.
    every_run: bool = False

    def with_counts(
        self, linux_repeats: int | None = None, sim_seeds: int | None = None, source: str = "<counts>"
    ) -> Matrix:
        """This matrix with other run counts (None: keep), checked against
        the bounds a matrix file has (``COUNTS``; ``ScenarioError`` naming
        ``source`` and the count otherwise)."""
        given = {
            k: v for k, v in (("linux_repeats", linux_repeats), ("sim_seeds", sim_seeds)) if v is not None
        }
        counts = {k: _count(given, k, source) for k in given}
        return dataclasses.replace(
            self,
            linux_repeats=counts.get("linux_repeats", self.linux_repeats),
            sim_seeds=counts.get("sim_seeds", self.sim_seeds),
        )


#: The run counts a matrix sets: (default, least, most).
COUNTS = {"linux_repeats": (3, 1, 100), "sim_seeds": (5, 1, 1000)}


def _fail(source: str, where: str, what: str) -> ScenarioError:
    return ScenarioError(source, where, what)


def _count(doc: Mapping[str, Any], key: str, source: str) -> int:
    default, lo, hi = COUNTS[key]
    v = doc.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _fail(source, key, f"{v!r}: expected an integer from {lo} to {hi}")
    return v


def load_matrix(path: str | Path) -> Matrix:
    """Read and check a matrix file; every cell validated by the core.
    Raises ``ScenarioError`` (one line: file, field, what is allowed)."""
    source = str(path)
    doc = read_toml(path)
    for k in doc:
        if k not in MATRIX_KEYS:
            raise _fail(source, k, f"unknown field; expected one of {', '.join(MATRIX_KEYS)}")
    linux_repeats = _count(doc, "linux_repeats", source)
    sim_seeds = _count(doc, "sim_seeds", source)
    sim_hosts = doc.get("sim_hosts", "per-run")
    if sim_hosts not in SIM_HOSTS:
        raise _fail(source, "sim_hosts", f"{sim_hosts!r}: expected one of {', '.join(SIM_HOSTS)}")
    identical = doc.get("identical_flows", "ranked")
    if identical not in IDENTICAL_FLOWS:
        raise _fail(source, "identical_flows", f"{identical!r}: expected one of {', '.join(IDENTICAL_FLOWS)}")
    tol = dict(TOLERANCE)
    raw_tol = doc.get("tolerance", {})
    if not isinstance(raw_tol, dict):
        raise _fail(source, "tolerance", "expected a table of metric = absolute tolerance")
    for k, v in raw_tol.items():
        if k not in TOLERANCE:
            raise _fail(source, f"tolerance.{k}", f"unknown metric; expected one of {', '.join(METRICS)}")
        if isinstance(v, bool) or not isinstance(v, int | float) or not (0 <= v < math.inf):
            raise _fail(source, f"tolerance.{k}", f"{v!r}: expected a non-negative number")
        tol[k] = (float(v), TOLERANCE[k][1])
    groups = doc.get("group")
    if not isinstance(groups, list) or not groups:
        raise _fail(source, "group", "expected one or more [[group]] tables")
    cells: list[Cell] = []
    names: set[str] = set()
    for gi, g in enumerate(groups):
        where = f"group[{gi}]"
        if not isinstance(g, dict):
            raise _fail(source, where, "expected a table")
        for k in g:
            if k not in GROUP_KEYS:
                raise _fail(source, f"{where}.{k}", f"unknown field; expected one of {', '.join(GROUP_KEYS)}")
        name = g.get("name")
        if not isinstance(name, str) or not name or "/" in name or name in names:
            raise _fail(source, f"{where}.name", f"{name!r}: expected a unique name without '/'")
        names.add(name)
        body = g.get("scenario")
        if not isinstance(body, dict):
            raise _fail(source, f"{where}.scenario", "expected a scenario table")
        sdoc = {"duration": doc.get("duration", "15s"), **body, "name": f"conformance-{name}"}
        sweep = g.get("sweep")
        if sweep is not None and "repeats" in sweep:
            raise _fail(source, f"{where}.sweep.repeats", "not here: use linux_repeats and sim_seeds")
        try:
            scn = Scenario.from_dict(sdoc, source=f"{source}: {where}.scenario")
            spec = parse_sweep(sweep, f"{source}: {where}.sweep")
            points = expand(scn, spec)
        except ScenarioError as e:
            raise _fail(source, f"{where}.{e.path}" if e.path else where, e.message) from None
        for p in points:
            cells.append(Cell(name, p.index, p.values, p.scenario))
    return Matrix(
        source, str(doc.get("description", "")), linux_repeats, sim_seeds, tol, cells, sim_hosts, identical
    )


def select(
    cells: Sequence[Cell],
    groups: Sequence[str] = (),
    part: tuple[int, int] | None = None,
    ids: Sequence[str] = (),
) -> list[Cell]:
    """The cells of the given groups and with the given ids (shell patterns
    each; none given: all), then part K of N."""
    out = [c for c in cells if not groups or any(fnmatch.fnmatchcase(c.group, g) for g in groups)]
    out = [c for c in out if not ids or any(fnmatch.fnmatchcase(c.id, i) for i in ids)]
    if part is not None:
        k, n = part
        out = [c for i, c in enumerate(out) if i % n == k - 1]
    return out


#: Normalized fields that only the simulator reads: its model version and
#: its models of the end hosts (the Linux backend has real ones).
SIM_ONLY_FIELDS = ("model", "hosts")


def kernel_hash(scn: Scenario, testbed: str = DEFAULT_TESTBED) -> str:
    """The identity of a kernel run: the normalized scenario without
    ``SIM_ONLY_FIELDS``, so a simulator upgrade keeps the kernel's runs, and
    the traffic generator's revision, so a generator change re-runs them;
    on a testbed other than the default (``linux.testbeds``), the testbed
    and its revision, so each testbed's runs of a cell are kept apart."""
    doc = {k: v for k, v in json.loads(scn.core_json).items() if k not in SIM_ONLY_FIELDS}
    doc["linux_generator"] = generator_revision(doc)
    if testbed != DEFAULT_TESTBED:
        doc["linux_testbed"] = testbed
        doc["linux_testbed_revision"] = REVISIONS[testbed]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run_dir(out: Path, scn: Scenario, backend: str, testbed: str = DEFAULT_TESTBED) -> Path:
    if backend == "linux":
        tail = "-linux" if testbed == DEFAULT_TESTBED else f"-linux-{testbed}"
        return out / "runs" / (kernel_hash(scn, testbed)[:16] + tail)
    return out / "runs" / scn.hash[:16]


#: The columns of a kernel reference table (``kernel.parquet``) besides the
#: judged metrics: which run of which cell, and on what it ran.
KERNEL_COLUMNS = (
    "kernel_hash",
    "cell",
    "repeat",
    "seed",
    "trustworthy",
    "kernel",
    "generator",
    "ccarena_version",
    "host_sender_us",
    "host_receiver_us",
    "meter",
    "flow",
    "cc",
    "rtt_ms",
)


@dataclass(frozen=True)
class KernelRun:
    """One kernel run as the judge sees it: whether its self-checks passed,
    its flows' judged values, and on what it ran."""

    trustworthy: bool
    values: pd.DataFrame = field(repr=False)
    kernel: str = ""
    generator: int = GENERATOR_REVISION
    ccarena_version: str = ""
    #: The hosts' turnarounds the run measured (None for runs made before
    #: the bottleneck measured them).
    hosts: HostTable | None = None
    #: The turnaround meter's revision that measured ``hosts``
    #: (``METER_REVISION`` in crates/emu/src/turnaround.rs; 1 before the
    #: meter said).
    meter: int = 1
    #: The kernel testbed it was made on (``linux.testbeds``).
    testbed: str = DEFAULT_TESTBED

    @classmethod
    def load(cls, d: Path) -> KernelRun:
        res = Results.load(d)
        linux = res.meta.get("linux", {})
        return cls(
            bool(res.summary["trustworthy"].iloc[0]),
            flow_values(res),
            str(linux.get("kernel", res.meta.get("kernel", ""))),
            int(linux.get("generator", GENERATOR_REVISION)),
            str(res.meta.get("ccarena_version", "")),
            HostTable.of(linux.get("turnarounds")),
            int((linux.get("turnarounds") or {}).get("meter", 1)),
            str(linux.get("testbed", DEFAULT_TESTBED)),
        )


class KernelRuns:
    """The kernel runs one conformance run can see on one testbed: those
    under ``out`` (each loaded once) and those of a recorded ``reference``."""

    def __init__(
        self, out: Path, reference: Mapping[str, KernelRun] | None = None, testbed: str = DEFAULT_TESTBED
    ) -> None:
        self.out = out
        self.reference = reference or {}
        self.testbed = testbed
        self._loaded: dict[str, KernelRun] = {}
        self._set_aside: set[str] = set()

    def get(self, scn: Scenario) -> KernelRun | None:
        """The kernel run of ``scn``, or None if there is none yet."""
        h = kernel_hash(scn, self.testbed)
        if h in self._loaded:
            return self._loaded[h]
        d = run_dir(self.out, scn, "linux", self.testbed)
        if is_complete(d):
            self._loaded[h] = KernelRun.load(d)
            return self._loaded[h]
        return None if h in self._set_aside else self.reference.get(h)

    def set_aside(self, scn: Scenario) -> Path | None:
        """Stop using the kernel run of ``scn`` so that it is made again:
        a recorded one is ignored from now on, one under ``out`` is moved to
        ``out/untrusted/`` (never deleted); returns where it went."""
        h = kernel_hash(scn, self.testbed)
        self._loaded.pop(h, None)
        self._set_aside.add(h)
        d = run_dir(self.out, scn, "linux", self.testbed)
        if not d.exists():
            return None
        dest = self.out / "untrusted" / d.name
        n = 1
        while dest.exists():
            n += 1
            dest = self.out / "untrusted" / f"{d.name}.{n}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        d.rename(dest)
        return dest

    def of_cell(self, cell: Cell, repeats: int) -> list[KernelRun] | None:
        """Every kernel run of ``cell``, or None while any is missing."""
        runs = []
        for seed in cell.seeds(repeats):
            run = self.get(cell.with_seed(seed))
            if run is None:
                return None
            runs.append(run)
        return runs

    def judged(self, cell: Cell, matrix: Matrix) -> list[KernelRun] | None:
        """The kernel runs ``cell`` is judged on: its first
        ``linux_repeats`` (None while any is missing) and, with
        ``every_run``, the further ones up to the first missing."""
        runs = self.of_cell(cell, matrix.linux_repeats)
        if runs is None or not matrix.every_run:
            return runs
        for seed in cell.seeds(COUNTS["linux_repeats"][2])[len(runs) :]:
            run = self.get(cell.with_seed(seed))
            if run is None:
                break
            runs.append(run)
        return runs


def kernel_table(matrix: Matrix, cells: Sequence[Cell], kernel: KernelRuns) -> pd.DataFrame:
    """The kernel reference table of the given cells: every kernel run there,
    one row per run and flow. Past the matrix's ``linux_repeats`` a cell's
    runs go on up to the first one missing, so that a run with fewer
    repeats than its ``--kernel`` file records (or than it made before)
    writes a table that still holds them all."""
    most = COUNTS["linux_repeats"][2]
    frames = []
    for cell in cells:
        for r, seed in enumerate(cell.seeds(most)):
            scn = cell.with_seed(seed)
            run = kernel.get(scn)
            if run is None:
                if r >= matrix.linux_repeats:
                    break
                continue
            f = run.values.copy()
            head = {
                "kernel_hash": kernel_hash(scn, kernel.testbed),
                "cell": cell.id,
                "repeat": r,
                "seed": seed,
                "trustworthy": run.trustworthy,
                "kernel": run.kernel,
                "generator": run.generator,
                "ccarena_version": run.ccarena_version,
                "host_sender_us": list(run.hosts.sender_us) if run.hosts else None,
                "host_receiver_us": list(run.hosts.receiver_us) if run.hosts else None,
                "meter": run.meter,
            }
            for i, (k, v) in enumerate(head.items()):
                f.insert(i, k, [v] * len(f))
            frames.append(f)
    if not frames:
        return pd.DataFrame(columns=[*KERNEL_COLUMNS, *METRICS])
    return pd.concat(frames, ignore_index=True)


def load_kernel_reference(path: str | Path) -> dict[str, KernelRun]:
    """Read a kernel reference table (``kernel.parquet``) into kernel runs by
    ``kernel_hash``. Raises ``ScenarioError`` (one line) on a file that is
    not one."""
    source = str(path)
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError) as e:
        raise _fail(source, "", f"not a readable Parquet file ({e.__class__.__name__})") from None
    # `meter` came later: a table without it was measured by meter 1.
    needed = [c for c in (*KERNEL_COLUMNS, *METRICS) if c not in frame.columns and c != "meter"]
    if needed:
        raise _fail(
            source, needed[0], "missing column: expected a kernel.parquet written by ccarena conformance"
        )
    runs: dict[str, KernelRun] = {}
    for h, g in frame.groupby("kernel_hash", sort=False):
        trusted = g["trustworthy"].astype(bool)
        if trusted.nunique() != 1:
            raise _fail(source, "trustworthy", f"run {h}: differs between its flows")
        values = g[["flow", "cc", "rtt_ms", *METRICS]].reset_index(drop=True)
        values["flow"] = values["flow"].astype(int)
        first = g.iloc[0]
        runs[str(h)] = KernelRun(
            bool(trusted.iloc[0]),
            values,
            str(first["kernel"]),
            int(first["generator"]),
            str(first["ccarena_version"]),
            HostTable.of({"sender_us": first["host_sender_us"], "receiver_us": first["host_receiver_us"]}),
            int(first["meter"]) if "meter" in g.columns else 1,
        )
    return runs


def flow_values(res: Results) -> pd.DataFrame:
    """The judged metrics of every flow of one run that started (the Linux
    tables list a flow that never connected, with no segment counts; the
    simulator's leave it out)."""
    f = res.flows
    f = f[f["segs_sent"].notna()]
    total = float(f["goodput_mbps"].sum())
    # srtt as both backends can measure it (Results.sampled_srtt_ms)
    srtt = f["flow"].map(res.sampled_srtt_ms()).astype(float)
    return pd.DataFrame(
        {
            "flow": f["flow"].astype(int),
            "cc": f["cc"].astype(str),
            "rtt_ms": f["rtt_ms"].astype(float),
            "share": f["goodput_mbps"] / total if total > 0 else math.nan,
            "goodput_mbps": f["goodput_mbps"].astype(float),
            "retrans_rate": f["retrans_rate"].astype(float),
            "srtt_mean_ms": srtt,
            "qdelay_ms": srtt - f["rtt_ms"].astype(float),
            "drops": f["drops"].astype(float),
            "fct_s": f["fct_s"].astype(float),
        }
    )


def rank_within_classes(values: pd.DataFrame, classes: Sequence[Sequence[int]]) -> pd.DataFrame:
    """One run's ``flow_values`` with every metric sorted within each class
    of identical flows: the class's k-th flow present (by id) holds the k-th
    largest value (NaN last), and ``rank`` is k (1 = largest; NaN for a
    flow alone in its class). Metrics are sorted each on its own: the judge
    compares each metric's order statistics."""
    out = values.copy()
    out["rank"] = math.nan
    for ids in classes:
        rows = out.index[out["flow"].isin(ids)]
        if len(rows) < 2:
            continue
        rows = out.loc[rows].sort_values("flow").index
        for m in METRICS:
            v = out.loc[rows, m].to_numpy(dtype=float)
            out.loc[rows, m] = np.concatenate([-np.sort(-v[~np.isnan(v)]), v[np.isnan(v)]])
        out.loc[rows, "rank"] = np.arange(1, len(rows) + 1, dtype=float)
    return out


def agreement(
    sim: Sequence[float], linux: Sequence[float], tol: tuple[float, float]
) -> tuple[bool | None, float]:
    """Whether the simulator's mean lies in the kernel's range widened by the
    tolerance (the larger of absolute and relative-to-the-kernel's-mean), and
    that allowance. None where either side has no value."""
    s = [x for x in sim if not math.isnan(x)]
    k = [x for x in linux if not math.isnan(x)]
    if not s or not k:
        return None, math.nan
    allow = max(tol[0], tol[1] * abs(float(np.mean(k))))
    m = float(np.mean(s))
    return bool(min(k) - allow <= m <= max(k) + allow), allow


def _overlap(sim: Sequence[float], linux: Sequence[float], allow: float) -> bool | None:
    """The looser, distribution-level reading: the simulator's range over
    seeds meets the kernel's range over runs widened by the allowance."""
    s = [x for x in sim if not math.isnan(x)]
    k = [x for x in linux if not math.isnan(x)]
    if not s or not k or math.isnan(allow):
        return None
    return bool(min(s) <= max(k) + allow and max(s) >= min(k) - allow)


def seed_hosts(matrix: Matrix, runs: Sequence[KernelRun], n: int) -> list[HostTable | None]:
    """The turnaround table each of a cell's ``n`` simulator seeds runs
    with: seed k that of its k-th trustworthy kernel run that measured one
    (``sim_hosts = "per-run"``, cycling), their mean (``"kernel"``), or
    None for the shipped table (``"shipped"``, or kernel runs that
    measured none)."""
    if matrix.sim_hosts == "shipped":
        return [None] * n
    if matrix.sim_hosts == "none":
        return [NO_HOSTS] * n
    tables = [r.hosts for r in runs if r.trustworthy and r.hosts is not None]
    if matrix.sim_hosts == "kernel" or not tables:
        return [HostTable.mean(tables)] * n
    return [tables[k % len(tables)] for k in range(n)]


def seed_count(matrix: Matrix, runs: Sequence[KernelRun] | None) -> int:
    """Simulator seeds for a cell judged on ``runs``: the matrix's, or with
    ``every_run`` as many as the kernel runs if those are more."""
    if matrix.every_run and runs is not None:
        return max(matrix.sim_seeds, len(runs))
    return matrix.sim_seeds


def sim_side(
    matrix: Matrix, cell: Cell, runs: Sequence[KernelRun] | None
) -> list[tuple[Scenario, HostTable | None]]:
    """A cell's simulator scenarios, seed by seed, each with the hosts table
    it runs with (``seed_hosts``; the shipped table while the kernel runs
    are not all there, ``runs`` None)."""
    n = seed_count(matrix, runs)
    hosts = seed_hosts(matrix, runs, n) if runs is not None else [None] * n
    return [(cell.with_seed(seed, h), h) for seed, h in zip(cell.seeds(n), hosts, strict=True)]


def _run_cell(
    cell: Cell,
    out: Path,
    matrix: Matrix,
    *,
    linux: bool,
    kernel: KernelRuns,
    say: Callable[[str], None],
    retry_untrusted: bool = False,
) -> list[tuple[Scenario, Path]]:
    """Make the cell's missing kernel runs (with ``linux``); returns the
    simulator runs it still needs (scenario, directory), which the caller
    runs in a pool."""
    if linux:
        for r, seed in enumerate(cell.seeds(matrix.linux_repeats)):
            scn = cell.with_seed(seed)
            run = kernel.get(scn)
            if run is not None and retry_untrusted and not run.trustworthy:
                moved = kernel.set_aside(scn)
                say(f"{cell.id} linux {r + 1}: untrustworthy, run again" + (f" ({moved})" if moved else ""))
                run = None
            if run is None:
                say(f"{cell.id} linux {r + 1}/{matrix.linux_repeats}")
                execute_linux(scn, run_dir(out, scn, "linux", kernel.testbed), testbed=kernel.testbed)
    # The simulator's side with the hosts the kernel runs measured (the
    # shipped table until they are all there).
    todo = []
    for scn, _ in sim_side(matrix, cell, kernel.judged(cell, matrix)):
        d = run_dir(out, scn, "sim")
        if not is_complete(d, scn.hash):
            todo.append((scn, d))
    return todo


def _run_sims(todo: Sequence[tuple[Scenario, Path]], jobs: int, say: Callable[[str], None]) -> None:
    """The simulator's runs, on ``jobs`` processes (each run's files are the
    same bits whatever ran it); the first failure is raised once all ended."""
    from .executors import Job, run_local

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
    matrix: Matrix, cells: Sequence[Cell], out: Path, kernel: KernelRuns | None = None
) -> pd.DataFrame:
    """One row per cell, flow and metric, for every cell whose runs are all
    there (the simulator's under ``out``, the kernel's in ``kernel``, by
    default those under ``out``): the simulator's and the kernel's mean,
    min and max, the allowance and the verdict."""
    kernel = kernel or KernelRuns(out)
    rows: list[dict[str, Any]] = []
    for cell in cells:
        runs = kernel.judged(cell, matrix)
        if runs is None:
            continue
        lins = [r.values for r in runs if r.trustworthy]
        untrusted = len(runs) - len(lins)
        side = sim_side(matrix, cell, runs)
        sims = []
        for scn, _ in side:
            d = run_dir(out, scn, "sim")
            if not is_complete(d, scn.hash):
                break
            sims.append(flow_values(Results.load(d)))
        if len(sims) < seed_count(matrix, runs):
            continue
        medians = [turnaround_median(h.sender_us) for _, h in side if h is not None]
        sim_host_p50 = float(np.mean(medians)) if medians else math.nan
        if matrix.identical_flows == "ranked":
            classes = cell.classes()
            sims = [rank_within_classes(v, classes) for v in sims]
            lins = [rank_within_classes(v, classes) for v in lins]
        # A flow that started in only some runs (successive sized
        # flows near the end) is judged on the runs that have it.
        flows = sorted(set().union(*(set(s["flow"]) for s in sims)))
        for flow in flows:
            s_f = [s[s["flow"] == flow].iloc[0] for s in sims if (s["flow"] == flow).any()]
            l_f = [v[v["flow"] == flow].iloc[0] for v in lins if (v["flow"] == flow).any()]
            for m in METRICS:
                sv = [float(x[m]) for x in s_f]
                lv = [float(x[m]) for x in l_f]
                ok, allow = agreement(sv, lv, matrix.tolerance[m])
                if ok is None and all(math.isnan(x) for x in sv):
                    continue  # a metric the flow does not have (FCT of a bulk flow)
                rows.append(
                    {
                        "cell": cell.id,
                        "group": cell.group,
                        "values": cell.label(),
                        "flow": int(flow),
                        # k: the k-th largest of its class of identical flows
                        "rank": float(s_f[0].get("rank", math.nan)),
                        "cc": str(s_f[0]["cc"]),
                        "rtt_ms": float(s_f[0]["rtt_ms"]),
                        "metric": m,
                        "sim_mean": float(np.nanmean(sv)) if sv else math.nan,
                        "sim_min": float(np.nanmin(sv)) if sv else math.nan,
                        "sim_max": float(np.nanmax(sv)) if sv else math.nan,
                        "linux_mean": float(np.nanmean(lv)) if lv and not np.all(np.isnan(lv)) else math.nan,
                        "linux_min": float(np.nanmin(lv)) if lv and not np.all(np.isnan(lv)) else math.nan,
                        "linux_max": float(np.nanmax(lv)) if lv and not np.all(np.isnan(lv)) else math.nan,
                        "allowance": allow,
                        "agree": ok,
                        "overlap": _overlap(sv, lv, allow),
                        "p_means": permutation_p(sv, lv),
                        "n_sim": len(sv),
                        "n_linux": len(lv),
                        "linux_untrusted": untrusted,
                        # The simulator's hosts: the median sender
                        # turnaround of the kernel-measured tables
                        # its seeds ran with, averaged (NaN: the
                        # shipped table).
                        "sim_host_p50_us": sim_host_p50,
                    }
                )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        # Hundreds of flow-metrics are tested at once: the false discovery
        # rate says which small p are more than the number of tests.
        frame["q_means"] = bh_adjust(frame["p_means"].to_numpy())
    return frame


def flow_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and flow: agrees when every judged metric agrees;
    the metrics that do not, named."""
    if frame.empty:
        cols = ["cell", "group", "values", "flow", "rank", "cc", "rtt_ms", "agree", "overlap", "disagree"]
        return pd.DataFrame(columns=cols)
    judged = frame[frame["agree"].notna()]
    keys = ["cell", "group", "values", "flow", "cc", "rtt_ms"]
    rows = []
    for key, g in judged.groupby(keys, sort=False):
        bad = g.loc[~g["agree"].astype(bool), "metric"].tolist()
        apart = g.loc[~g["overlap"].astype(bool), "metric"].tolist()
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "rank": float(g["rank"].iloc[0]) if "rank" in g else math.nan,
                "agree": not bad,
                "overlap": not apart,
                "disagree": ", ".join(bad),
            }
        )
    return pd.DataFrame(rows)


def cells_table(cells: Sequence[Cell]) -> Any:
    """``conformance --list``: each cell's id and its values, the values
    wrapped beside the id (a rich grid: no borders, no cell cut)."""
    from rich.table import Table

    t = Table.grid(padding=(0, 2))
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    for c in cells:
        t.add_row(c.id, c.label())
    return t


def differs_table(flows: pd.DataFrame, limit: int = 30) -> Any:
    """The flows that do not agree (``flow_verdicts``' rows), at most
    ``limit``: cell, flow, its CCA and RTT, its rank in its class of
    identical flows, the metrics that differ."""
    from .termtable import Rows

    names = ("cell", "flow", "cc", "rtt ms", "rank", "differs in")
    t = Rows(
        "flows that differ",
        [(n, "right" if n in ("flow", "rtt ms", "rank") else "left") for n in names],
        key=2,
    )
    for _, r in flows.head(limit).iterrows():
        rank = "" if math.isnan(float(r["rank"])) else f"{int(r['rank'])}"
        t.add_row(r["cell"], r["flow"], r["cc"], f"{float(r['rtt_ms']):g}", rank, r["disagree"])
    if len(flows) > limit:
        t.caption = f"… {len(flows) - limit} more in flows.csv"
    return t


def plot(frame: pd.DataFrame, path: Path) -> Path:
    """Simulator vs kernel, one panel per metric, each flow a point
    (kernel range as a bar), green where they agree, red where not."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 7.5), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 4).ravel()
    for ax, m in zip(axes, METRICS, strict=False):
        g = frame[(frame["metric"] == m) & frame["agree"].notna()]
        for ok, colour in ((True, "tab:green"), (False, "tab:red")):
            h = g[g["agree"].astype(bool) == ok]
            if h.empty:
                continue
            ax.errorbar(
                h["linux_mean"],
                h["sim_mean"],
                xerr=[h["linux_mean"] - h["linux_min"], h["linux_max"] - h["linux_mean"]],
                fmt="o",
                ms=3,
                lw=0.6,
                color=colour,
                alpha=0.7,
                label=f"{'agree' if ok else 'differ'} ({len(h)})",
            )
        if not g.empty:
            lo = float(np.nanmin([g["linux_min"].min(), g["sim_mean"].min()]))
            hi = float(np.nanmax([g["linux_max"].max(), g["sim_mean"].max()]))
            ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8)
            if m in ("retrans_rate", "drops", "fct_s", "goodput_mbps") and lo > 0:
                ax.set_xscale("log")
                ax.set_yscale("log")
            ax.legend(fontsize=7, loc="upper left")
        ax.set_title(m, fontsize=10, loc="left")
        ax.set_xlabel("kernel (mean, range)", fontsize=8)
        ax.set_ylabel("simulator (mean over seeds)", fontsize=8)
    for ax in axes[len(METRICS) :]:
        ax.axis("off")
    fig.suptitle("ccarena conformance: simulator vs Linux, per flow")
    fig.savefig(path, dpi=100)
    return path


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            v = r[c]
            s = ("" if math.isnan(v) else f"{v:.4g}") if isinstance(v, float) else str(v)
            cells.append(f"<td>{html.escape(s)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def report(matrix: Matrix, frame: pd.DataFrame, out: Path, figure: Path | None) -> Path:
    flows = flow_verdicts(frame)
    n = len(flows)
    agree = int(flows["agree"].sum()) if n else 0
    by_group = (
        flows.groupby("group", sort=False)["agree"]
        .agg(["count", "sum"])
        .rename(columns={"count": "flows", "sum": "agree"})
        if n
        else pd.DataFrame()
    )
    by_metric = (
        frame[frame["agree"].notna()]
        .groupby("metric", sort=False)["agree"]
        .agg(["count", "sum"])
        .reset_index()
        if not frame.empty
        else pd.DataFrame()
    )
    tol = pd.DataFrame(
        [{"metric": m, "absolute": a, "relative": r} for m, (a, r) in matrix.tolerance.items()]
    )
    parts = [
        "<!doctype html><meta charset='utf-8'><title>ccarena conformance</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style>",
        "<h1>ccarena conformance</h1>",
        f"<p>{html.escape(matrix.source)}: {html.escape(matrix.description)}</p>",
        f"<p><b>{agree} of {n} flows agree</b> ({(agree / n if n else 0):.1%}); "
        f"{int(flows['overlap'].sum()) if n else 0} overlap on every metric; in "
        f"{frame['cell'].nunique() if not frame.empty else 0} of {len(matrix.cells)} cells run. "
        + (
            f"Kernel: every run a cell has (at least {matrix.linux_repeats}); simulator: as many seeds "
            f"(at least {matrix.sim_seeds}). "
            if matrix.every_run
            else f"Kernel: {matrix.linux_repeats} runs per cell; simulator: {matrix.sim_seeds} seeds. "
        )
        + "A metric agrees "
        "when the simulator's mean lies in the kernel's range widened by the allowance "
        "(the larger of the absolute tolerance and the relative one times the kernel's mean). "
        + (
            "Flows alike but for their index are judged by rank: a row with a <i>rank</i> k compares "
            "the k-th largest value of its class in each run, metric by metric.</p>"
            if matrix.identical_flows == "ranked"
            else "Every flow is judged by its own index.</p>"
        ),
        "<h2>Tolerances</h2>",
        _html_table(tol),
    ]
    if figure is not None:
        parts.append(
            f"<h2>Simulator vs kernel</h2><img src='{html.escape(figure.name)}' style='max-width:100%'>"
        )
    if n:
        parts += ["<h2>Per group</h2>", _html_table(by_group.reset_index())]
        parts += ["<h2>Per metric</h2>", _html_table(by_metric)]
        bad = flows[~flows["agree"].astype(bool)]
        parts += [f"<h2>Flows that differ ({len(bad)})</h2>", _html_table(bad)]
        parts += ["<h2>Every flow and metric</h2>", _html_table(frame)]
    path = out / "report.html"
    write_bytes_atomic(path, "\n".join(parts).encode())
    return path


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as Parquet (zstd), replacing ``path`` atomically."""
    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf, compression="zstd")
    write_bytes_atomic(path, buf.getvalue().to_pybytes())


@dataclass
class Conformance:
    matrix: Matrix
    frame: pd.DataFrame
    flows: pd.DataFrame
    directory: Path
    figure: Path | None = None
    report: Path | None = None

    @property
    def agree_fraction(self) -> float:
        return float(self.flows["agree"].mean()) if len(self.flows) else math.nan

    @property
    def overlap_fraction(self) -> float:
        return float(self.flows["overlap"].mean()) if len(self.flows) else math.nan


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
    testbed: str = DEFAULT_TESTBED,
) -> Conformance:
    """Run the selected cells (skipping runs already there, and kernel runs
    the ``reference`` holds; the kernel's only with ``linux``), then judge
    every cell of the matrix whose runs are complete, under ``out`` or in
    the kernel ``reference`` (``load_kernel_reference``), and write
    ``conformance.parquet``,
    ``kernel.parquet``, ``flows.csv``, ``conformance.png`` and
    ``report.html`` into ``out``. With ``retry_untrusted`` (and ``linux``)
    a selected cell's kernel runs whose self-checks failed are made again,
    the old ones moved to ``out/untrusted/`` (``KernelRuns.set_aside``).
    ``testbed``: the kernel testbed of the kernel's side (``linux.testbeds``)."""
    say = progress or (lambda m: None)
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    chosen = select(matrix.cells, groups, part, ids)
    kernel = KernelRuns(out, reference, testbed)
    todo: list[tuple[Scenario, Path]] = []
    for k, cell in enumerate(chosen):
        say(f"[{k + 1}/{len(chosen)}] {cell.id} {cell.label()}")
        todo += _run_cell(
            cell, out, matrix, linux=linux, kernel=kernel, say=say, retry_untrusted=retry_untrusted
        )
    _run_sims(todo, jobs, say)
    frame = collect(matrix, matrix.cells, out, kernel)
    flows = flow_verdicts(frame)
    _write_parquet(frame, out / "conformance.parquet")
    _write_parquet(kernel_table(matrix, matrix.cells, kernel), out / "kernel.parquet")
    write_bytes_atomic(out / "flows.csv", flows.to_csv(index=False).encode())
    fig = plot(frame, out / "conformance.png") if figure and not frame.empty else None
    rep = report(matrix, frame, out, fig)
    return Conformance(matrix, frame, flows, out, fig, rep)
