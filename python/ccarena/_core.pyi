"""Type stub of the extension module ``ccarena._core`` (crate ``crates/py``).

The extension is deliberately thin: scenarios cross as JSON strings; results
stay in Rust (``Run``) until written as Parquet or handed over as Arrow IPC.
Use the public API in ``ccarena`` instead.
"""

import os
from collections.abc import Callable
from typing import Any

class ScenarioError(ValueError):
    """A scenario field is invalid; ``str(e)`` is ``"<path>: <message>"``."""

    path: str
    """The field, e.g. ``"flows[1].rtt"`` (empty when the whole document is wrong)."""
    message: str
    """What is wrong and what is allowed."""

BATCH_ROWS: int
"""Rows of a batch in which the growing tables leave a run (``run``'s ``spill``)."""

def normalize(input_json: str) -> tuple[str, list[tuple[str, str]]]:
    """Validate a scenario (the TOML file as ``tomllib`` loads it, as JSON) and
    return the normalized scenario as JSON (units resolved, flows expanded by
    ``count`` with ``id`` and ``group``, buffer in bytes, seed, duration, sample
    interval) and its warnings, ``(path, message)`` pairs: values a run
    accepts that make it mean less than it seems (a link that carries less
    than one frame in the run, ...). Raises ``ScenarioError``."""

class Run:
    """A finished run's results, held in Rust until written or read."""

    stats: dict[str, int]
    """"events", "bottleneck_packets" and "sim_time_ns"."""
    captures: list[dict[str, Any]]
    """One dict per ``[capture]`` point: "name", "frames", "skipped"
    (frames past ``max_packets``) and "pcapng" (the file's bytes)."""

    def names(self) -> list[str]:
        """The tables: "summary", "flows", "samples", "queue", "transitions", "links"
        (after ``close``, only those held in memory)."""
    def held(self) -> list[str]:
        """The tables held in memory (``rows`` reads these); with a spill, the
        growing ones wait on disk."""
    def close(self) -> None:
        """Remove the tables waiting on disk (a run with ``spill``)."""
    def num_rows(self, name: str) -> int: ...
    def write(self, directory: str | os.PathLike[str]) -> None:
        """Every table as ``<directory>/<name>.parquet`` (zstd; the same
        table gives the same bytes). Releases the GIL."""
    def parquet(self, name: str) -> bytes:
        """One table as a Parquet file's bytes (what ``write`` writes)."""
    def ipc(self, name: str) -> bytes:
        """One table as an Arrow IPC stream (``pyarrow.ipc.open_stream``)."""
    def rows(self, name: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The first ``limit`` rows (all with None) as dicts, without pyarrow."""

def run(
    normalized_json: str,
    progress: Callable[[int], object] | None = None,
    spill: str | None = None,
) -> Run:
    """Simulate a normalized scenario (the output of ``normalize``).

    Returns the ``Run``: its tables ("summary", "flows", "samples",
    "queue", "transitions" and "links"), statistics and captures. Releases the GIL while
    simulating; every 2^20 events it checks for signals (Ctrl-C raises
    KeyboardInterrupt, nothing is returned) and calls
    ``progress(sim_time_ns)`` if given (an exception it raises stops the
    run). Raises ``ScenarioError`` if the JSON is not a normalized scenario.
    With ``spill`` (a directory that must not exist), "samples", "queue" and
    "transitions" leave the core in batches as the run goes and wait there
    on disk, so memory does not grow with simulated time; the directory is
    removed by ``Run.close`` (or when the run is dropped or stops). The
    tables written are the same either way."""

def pcap_to_pcapng(
    pcap: bytes, interface: str, application: str, comment: str, origin_ns: int
) -> tuple[bytes, int]:
    """A classic pcap file of Ethernet frames (tcpdump's) as a pcapng file
    with one interface named ``interface``, times less ``origin_ns`` (never
    below 0); and its number of frames. Raises ValueError."""

def bottleneck_cli() -> int:
    """The ``ccarena-bottleneck`` console script: runs the Linux backend's
    user-space bottleneck with ``sys.argv[1:]``; returns the exit status."""

def version() -> str:
    """The version of the Rust crates (equal to ``ccarena.__version__``)."""

def build_commit() -> str:
    """The git commit the extension was built from ("unknown" outside a
    checkout; a trailing "+" when the tree had uncommitted changes)."""

def _set_mutant(name: str) -> None:
    """Build every later simulation of this process with a deliberately
    wrong model (tests/test_mutants.py); "none": the model."""

def _mutants() -> list[str]:
    """The deliberately wrong models ``_set_mutant`` takes."""

def cc_names() -> list[str]:
    """Every congestion control accepted in a flow's ``cc``."""

def qdisc_names() -> list[str]:
    """Every queue discipline accepted in ``bottleneck.qdisc``."""

def cc_reference(name: str) -> str:
    """Where an algorithm's rules come from (Linux file, paper or RFC)."""

def qdisc_reference(name: str) -> str:
    """Where a queue discipline's rules come from."""

def default_host_table() -> tuple[list[float], list[float]]:
    """The core's default turnaround table (``[hosts] latency = "measured"``),
    us at ``host_percentiles``: (sender, receiver)."""

def host_percentiles() -> list[float]:
    """The percentiles a ``[hosts] latency`` table holds its values at."""

def capacity_bits(normalized_json: str, from_ns: int, to_ns: int, link: int | None = None) -> float:
    """Bits the links can carry in ``[from_ns, to_ns)`` (each link's rate
    integrated over its schedule, or its trace's opportunities): summed over
    the links, or link ``link``'s alone."""

def run_capacity_bits(normalized_json: str, link: int | None = None) -> float:
    """The run's capacity: each link's scheduled rate integrated over the run
    plus the token bucket it starts with (a trace link: its opportunities),
    summed over the links or link ``link``'s alone (every utilization's
    denominator)."""

def cost(normalized_json: str) -> dict[str, float]:
    """Upper bounds on the run's cost: "bottleneck_packets" (summed over the
    links), "line_packets" (those onto links' delay lines), "events",
    "sample_rows", "queue_rows", "packets_held" (the most packets the
    network can hold: each link's buffer and bandwidth-delay product),
    "table_bytes" (the tables' size before compression)."""

def schema() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """The result tables' fixed columns, the one definition both backends
    fill: ``[(table, row, [(column, type, unit, definition), ...]), ...]`` in
    the order a run returns the tables; types are "int64", "float64",
    "string"."""

def jain(values: list[float]) -> float:
    """Jain's fairness index (RFC 5166) over the finite values; NaN when none
    is finite or all are zero."""

class Simulation:
    """A run stepped from Python (``ccarena.gym``); the same bits as ``run``."""

    def __init__(self, normalized_json: str) -> None: ...
    def advance(self, until_ns: int) -> bool:
        """Run the events due by ``until_ns``; False once the scenario has ended."""
    def results(self) -> Run:
        """``run``'s ``Run``, once the scenario has ended."""

class AckSample:
    """What one ACK told a Python controller's flow (``ccarena.controller``)."""

    now: float
    acked: int
    lost: int
    rtt: float | None
    delivery_rate: float | None
    app_limited: bool
    ece: bool
    prior_in_flight: int

class ConnView:
    """The connection as a Python controller may read it."""

    flow: int
    now: float
    mss: int
    in_flight: int
    delivered: int
    lost: int
    delivered_ce: int
    srtt: float | None
    min_rtt: float | None
    ca_state: str
    cwnd_limited: bool
    app_limited: bool
