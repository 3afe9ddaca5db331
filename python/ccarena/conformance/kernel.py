"""The kernel's side of a conformance matrix: each kernel run's identity,
what the judge reads of it, where and how it was made, and the reference
table (``kernel.parquet``) that records them so a matrix can be judged
later, elsewhere, without root.

A kernel run is identified by what the kernel sees (``kernel_hash``): the
normalized scenario without what only the simulator reads (its model
version, its host models and each flow's algorithm parameters, which the
Linux backend cannot set: the kernel's modules have their own), with the
traffic generator's revision and the testbed. So a new simulator model, or
a changed default of an algorithm's parameter, keeps every kernel run; a
generator or testbed change makes them again.

Each run records where and how it was made (``PROVENANCE``): the host (its
name, CPU model, CPUs, kernel release), the start time, the ccarena commit,
the testbed, its self-check values and the hosts' turnarounds it measured.
Runs recorded before provenance existed read as empty there."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..linux.gen import REVISION as GENERATOR_REVISION
from ..linux.gen import revision as generator_revision
from ..linux.testbeds import DEFAULT_TESTBED, REVISIONS
from ..results import Results
from ..scenario import Scenario, ScenarioError
from ..store import is_complete
from .hosts import HostTable
from .judge import METRICS, flow_values

if TYPE_CHECKING:
    import pandas as pd

    from .matrix import Cell, Matrix
else:
    pd = lazy("pandas")

__all__ = [
    "KERNEL_COLUMNS",
    "PROVENANCE",
    "KernelRun",
    "KernelRuns",
    "kernel_hash",
    "kernel_table",
    "load_kernel_reference",
    "run_dir",
]

#: Normalized fields that only the simulator reads: its model version and
#: its models of the end hosts (the Linux backend has real ones).
SIM_ONLY_FIELDS = ("model", "hosts")
#: Fields of a normalized flow only the simulator reads: the algorithm's
#: parameters (the kernel's modules have their own; the Linux backend
#: refuses a scenario that sets them).
SIM_ONLY_FLOW_FIELDS = ("cc_params",)


def kernel_hash(scn: Scenario, testbed: str = DEFAULT_TESTBED) -> str:
    """The identity of a kernel run (see the module)."""
    doc = {k: v for k, v in json.loads(scn.core_json).items() if k not in SIM_ONLY_FIELDS}
    doc["flows"] = [{k: v for k, v in f.items() if k not in SIM_ONLY_FLOW_FIELDS} for f in doc["flows"]]
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


#: Where and how each kernel run was made, as the reference table records
#: it (one value per run): its host, start, ccarena commit, testbed and
#: self-check values.
PROVENANCE = (
    "host_hostname",
    "host_cpu_model",
    "host_cpus",
    "started_utc",
    "ccarena_commit",
    "testbed",
    "lateness_p50_us",
    "lateness_p99_us",
    "lateness_max_us",
    "bottleneck_cpu_load",
    "sender_cpu_load",
    "receiver_cpu_load",
)
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
    *PROVENANCE,
    "flow",
    "cc",
    "rtt_ms",
)


def _provenance(meta: Mapping[str, Any]) -> dict[str, Any]:
    linux = meta.get("linux", {})
    host = linux.get("host") or {}
    check = linux.get("self_check") or {}

    def num(v: Any) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan

    return {
        "host_hostname": str(host.get("hostname", "")),
        "host_cpu_model": str(host.get("cpu_model", "")),
        "host_cpus": int(host.get("cpus", 0) or 0),
        "started_utc": str(linux.get("started_utc", "")),
        "ccarena_commit": str(linux.get("ccarena_commit", "")),
        "testbed": str(linux.get("testbed", DEFAULT_TESTBED)),
        **{k: num(check.get(k)) for k in PROVENANCE[6:]},
    }


@dataclass(frozen=True)
class KernelRun:
    """One kernel run as the judge sees it: whether its self-checks passed,
    its flows' judged values, and on what and how it ran."""

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
    #: ``PROVENANCE``'s values (empty for runs recorded before them).
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

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
            _provenance(res.meta),
        )

    @property
    def testbed(self) -> str:
        """The kernel testbed it was made on (``linux.testbeds``)."""
        return str(self.provenance.get("testbed") or DEFAULT_TESTBED)

    @property
    def machine(self) -> str:
        """Where it ran, in words ("" when not recorded)."""
        p = self.provenance
        parts = [str(p.get(k) or "") for k in ("host_hostname", "host_cpu_model")]
        parts.append(self.kernel)
        return ", ".join(x for x in parts if x)


class KernelRuns:
    """The kernel runs one conformance run can see: those under ``out``
    (each loaded once; None: none) and those of a recorded ``reference``."""

    def __init__(
        self,
        out: Path | None,
        reference: Mapping[str, KernelRun] | None = None,
        testbed: str = DEFAULT_TESTBED,
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
        if self.out is not None and is_complete(d := run_dir(self.out, scn, "linux", self.testbed)):
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
        if self.out is None:
            return None
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

    def of_cell(self, cell: Cell, repeats: int | None = None) -> list[KernelRun] | None:
        """The cell's first ``repeats`` kernel runs (its group's rule by
        default), or None while any is missing."""
        runs = []
        for seed in cell.seeds(cell.repeats if repeats is None else repeats):
            run = self.get(cell.with_seed(seed))
            if run is None:
                return None
            runs.append(run)
        return runs


def kernel_table(matrix: Matrix, cells: Sequence[Cell], kernel: KernelRuns) -> pd.DataFrame:
    """The kernel reference table of the given cells: every kernel run there,
    one row per run and flow. Past a cell's rule its runs go on up to the
    first one missing, so a table written after judging with fewer runs
    still holds every run it could see."""
    from .matrix import COUNTS

    most = COUNTS["linux_repeats"][2]
    frames = []
    for cell in cells:
        for r, seed in enumerate(cell.seeds(most)):
            scn = cell.with_seed(seed)
            run = kernel.get(scn)
            if run is None:
                if r >= cell.repeats:
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
                **{k: run.provenance.get(k, _EMPTY[k]) for k in PROVENANCE},
            }
            for i, (k, v) in enumerate(head.items()):
                f.insert(i, k, [v] * len(f))
            frames.append(f)
    if not frames:
        return pd.DataFrame(columns=[*KERNEL_COLUMNS, *METRICS])
    return pd.concat(frames, ignore_index=True)


#: What a provenance column holds for a run recorded before it existed.
_EMPTY: dict[str, Any] = {
    **{k: "" for k in PROVENANCE[:6]},
    "host_cpus": 0,
    "testbed": DEFAULT_TESTBED,
    **{k: math.nan for k in PROVENANCE[6:]},
}


def load_kernel_reference(path: str | Path) -> dict[str, KernelRun]:
    """Read a kernel reference table (``kernel.parquet``) into kernel runs by
    ``kernel_hash``. Raises ``ScenarioError`` (one line) on a file that is
    not one."""
    import pyarrow.parquet as pq

    source = str(path)
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError) as e:
        raise ScenarioError(source, "", f"not a readable Parquet file ({e.__class__.__name__})") from None
    # `meter` and the provenance came later: a table without them reads as
    # meter 1 and no provenance.
    later = {"meter", *PROVENANCE}
    needed = [c for c in (*KERNEL_COLUMNS, *METRICS) if c not in frame.columns and c not in later]
    if needed:
        raise ScenarioError(
            source, needed[0], "missing column: expected a kernel.parquet written by ccarena conformance"
        )
    for k in later - set(frame.columns):
        frame[k] = 1 if k == "meter" else _EMPTY[k]
    runs: dict[str, KernelRun] = {}
    for h, g in frame.groupby("kernel_hash", sort=False):
        trusted = g["trustworthy"].astype(bool)
        if trusted.nunique() != 1:
            raise ScenarioError(source, "trustworthy", f"run {h}: differs between its flows")
        values = g[["flow", "cc", "rtt_ms", *METRICS]].reset_index(drop=True)
        values["flow"] = values["flow"].astype(int)
        first = g.iloc[0]
        prov = {k: first[k] for k in PROVENANCE}
        prov["host_cpus"] = int(prov["host_cpus"] or 0)
        runs[str(h)] = KernelRun(
            bool(trusted.iloc[0]),
            values,
            str(first["kernel"]),
            int(first["generator"]),
            str(first["ccarena_version"]),
            HostTable.of({"sender_us": first["host_sender_us"], "receiver_us": first["host_receiver_us"]}),
            int(first["meter"]),
            prov,
        )
    return runs
