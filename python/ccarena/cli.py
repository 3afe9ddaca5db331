"""The ``ccarena`` command.

Exit status: 0 on success; 1 when an expectation (``[[expect]]``) failed,
a run of a sweep failed, or a Linux run failed midway (its namespaces are
removed all the same); 2 on bad input of any kind (scenario, override,
output directory, command line) and when the Linux backend cannot run here
(not root, no namespaces) or cannot run the scenario, with one line on
stderr and nothing written; 3 when a catalog experiment needs mechanisms
that are not built yet.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .backends import backend
from .errors import ControllerError, LinuxBackendError, LinuxNotAvailable, LinuxUnsupported, StoreError
from .interrupt import guard_imports
from .linux.testbeds import DEFAULT_TESTBED, TESTBEDS
from .scenario import Scenario, ScenarioError
from .termtable import Rows
from .version import __version__

PLOT_KINDS = ("cdf", "heatmap", "timeseries", "box", "mean")

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3
_MAX_ROWS = 40


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other bad input (argparse prints usage too).
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ccarena", description="A laboratory for TCP congestion control.")
    p.add_argument("--version", action="version", version=f"ccarena {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def scenario_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
        sp.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a field, e.g. --set bottleneck.rate=50Mbps --set flows[0].cc=cubic "
            "(VALUE is read as TOML when it parses, else as a string; repeatable)",
        )
        sp.add_argument(
            "--yes",
            action="store_true",
            help="run even when the estimated cost (validate prints it) is above the limits",
        )

    r = sub.add_parser("run", help="simulate one scenario, store its results, draw its figure")
    scenario_args(r)
    r.add_argument(
        "--backend",
        choices=["sim", "linux"],
        default=None,
        help="where to run it: the simulator, or real Linux TCP in network namespaces (root); "
        "default: the scenario's `backend` field, else sim",
    )
    r.add_argument(
        "--testbed",
        choices=TESTBEDS,
        default=None,
        help="with --backend linux, the kernel testbed: the user-space bottleneck (default) or bridges, "
        "the kernel's tbf and iperf3 (docs/validation.md)",
    )
    r.add_argument("--out", metavar="DIR", help="run directory (default: results/<name>/<hash>/)")
    r.add_argument("--no-figure", action="store_true", help="do not draw timeseries.png")

    c = sub.add_parser("compare", help="run a scenario on several backends and compare them side by side")
    scenario_args(c)
    c.add_argument(
        "--backends", default="sim,linux", help="comma-separated backends to run (default: sim,linux)"
    )
    c.add_argument("--out", metavar="DIR", default="results", help="results root (default: results/)")
    c.add_argument("--no-figure", action="store_true", help="do not draw the comparison figure")

    cf = sub.add_parser(
        "conformance",
        help="run a matrix of scenarios on the simulator and the kernel and say where they agree",
    )
    cf.add_argument("matrix", metavar="MATRIX", help="matrix file (TOML), e.g. conformance/matrix.toml")
    cf.add_argument(
        "--out", metavar="DIR", default="results/conformance", help="output directory (resumable)"
    )
    cf.add_argument(
        "--group", action="append", default=[], metavar="PATTERN", help="only these groups (glob)"
    )
    cf.add_argument(
        "--cell",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only these cells, by id (glob: sized/*)",
    )
    cf.add_argument("--part", metavar="K/N", help="run only part K of N of the selected cells")
    cf.add_argument(
        "--linux-repeats",
        type=int,
        metavar="N",
        help="kernel runs per cell, instead of the matrix's (the first ones are those already made)",
    )
    cf.add_argument(
        "--sim-seeds", type=int, metavar="N", help="simulator seeds per cell, instead of the matrix's"
    )
    cf.add_argument("--sim-only", action="store_true", help="run only the simulator's side (no root needed)")
    cf.add_argument(
        "--testbed",
        choices=TESTBEDS,
        default=DEFAULT_TESTBED,
        help="the kernel testbed of the kernel's side (default: the user-space bottleneck); each "
        "testbed's runs of a cell are kept apart",
    )
    cf.add_argument(
        "--kernel",
        metavar="FILE",
        help="reuse the kernel runs recorded in FILE (a kernel.parquet of an earlier run, e.g. "
        "conformance/kernel-2026-11.parquet) instead of running them again; with --sim-only, no root needed",
    )
    cf.add_argument(
        "--retry-untrusted",
        action="store_true",
        help="make again the selected cells' kernel runs whose self-checks failed (the old run "
        "is moved to OUT/untrusted/, never deleted)",
    )
    cf.add_argument(
        "--sim-hosts",
        metavar="HOSTS",
        help="the simulator's hosts, instead of the matrix's sim_hosts: defaults (as a user runs it), "
        "per-run (each kernel run's own timing: a diagnostic), kernel (their mean), none, or a host "
        "profile (a file from `ccarena linux measure-host`, or a shipped profile's name)",
    )
    cf.add_argument(
        "--sensitivity",
        action="append",
        default=[],
        metavar="HOSTS",
        help="also judge with these hosts (as --sim-hosts; repeatable) and print agreement for each "
        "side by side",
    )
    cf.add_argument(
        "--allow-missing",
        action="store_true",
        help="judge the selected cells that have all their runs and leave out the others (by default "
        "a selected cell that cannot be judged is an error)",
    )
    cf.add_argument("--jobs", "-j", type=int, metavar="N", help="simulator runs at once (default: all cores)")
    cf.add_argument("--list", action="store_true", help="list the cells and exit")

    lx = sub.add_parser("linux", help="Linux backend utilities")
    lsub = lx.add_subparsers(dest="linux_command", required=True, metavar="ACTION", parser_class=_Parser)
    lsub.add_parser(
        "cleanup",
        help="remove what dead ccarena Linux runs left (namespaces, processes, work directories); "
        "live runs are left alone",
    )
    lsub.add_parser("check", help="check that the Linux backend can run here")
    mh = lsub.add_parser(
        "measure-host",
        help="measure this machine's host profile (the hosts' turnarounds the simulator draws from)",
    )
    mh.add_argument("--runs", type=int, default=5, metavar="N", help="kernel runs of 20 s (default 5)")
    mh.add_argument(
        "--out", metavar="FILE", help="the profile file to write (default: host-profile-<host>-<date>.toml)"
    )

    def pool_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: all cores)")
        sp.add_argument(
            "--executor",
            choices=["local", "ray", "linux"],
            default="local",
            help="local process pool, a Ray cluster, or the Linux backend (the kernel's TCP, one run at a "
            "time, as root; points it cannot run here are left out)",
        )
        sp.add_argument("--address", metavar="ADDR", help="Ray cluster address (default: start a local Ray)")
        sp.add_argument("--force", action="store_true", help="re-run runs that are already there")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar")

    sw = sub.add_parser(
        "sweep", help="run every point of a scenario's [sweep]; runs already there are reused"
    )
    scenario_args(sw)
    sw.add_argument("--out", metavar="DIR", help="experiment directory (default: results/<name>/)")
    pool_args(sw)

    v = sub.add_parser("validate", help="check a scenario and print its normalized form")
    scenario_args(v)

    pl = sub.add_parser("plot", help="draw a figure from a run or an experiment directory")
    pl.add_argument("results", metavar="RESULTS", help="a run directory or an experiment directory")
    pl.add_argument("--kind", required=True, choices=PLOT_KINDS, help="kind of figure")
    pl.add_argument("--metric", help="what to draw (a column; defaults depend on the kind)")
    pl.add_argument("--x", help="x axis: a swept key (mean, box, heatmap)")
    pl.add_argument("--y", help="y axis of a heatmap: a swept key")
    pl.add_argument("--hue", help="one line/box colour per value of this column (e.g. flows.0.cc, cc)")
    pl.add_argument("--out", metavar="FILE", help="the PNG to write (an SVG is written beside it)")

    rp = sub.add_parser("report", help="write a static HTML report of a run or an experiment")
    rp.add_argument("results", metavar="DIR", help="a run directory or an experiment directory")
    rp.add_argument("--out", metavar="DIR", help="where to write index.html (default: DIR/report/)")

    rr = sub.add_parser("reproduce", help="run an experiment of the catalog and draw its figure")
    rr.add_argument(
        "target",
        metavar="ID|PAPER|all",
        help="an id (bbq/fig3), a paper (bbq) or all of them; see ccarena list",
    )
    rr.add_argument("--quick", action="store_true", help="the quick form: shorter runs, fewer points")
    rr.add_argument(
        "--estimate",
        action="store_true",
        help="run nothing: print each id's runs, flows, bottleneck packets and estimated hours "
        "on 1 worker and on --jobs workers",
    )
    rr.add_argument("--out", metavar="DIR", help="root directory (default: results/reproduce/)")
    rr.add_argument(
        "--yes",
        action="store_true",
        help="run paper-scale points whose estimated cost is above the limits (see validate)",
    )
    rr.add_argument(
        "--trace",
        metavar="PCAP",
        help="a packet capture (pcap/pcapng) for the trace experiments (bbrv3-insights/fig13-15); "
        "without one they use the synthetic trace-like workload",
    )
    rr.add_argument(
        "--at",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="only the points where the swept KEY has one of these values, as the run labels write "
        "them (e.g. --at flows.0.cc=bbr2 --at bottleneck.buffer=100BDP); one id only; written "
        "to its own experiment directory (NAME-at-HASH)",
    )
    rr.add_argument(
        "--repeats",
        type=int,
        metavar="N",
        help="repeats of each point instead of the id's own (the first N: the same seeds)",
    )
    pool_args(rr)

    sub.add_parser("list", help="list the congestion controls, queue disciplines and catalog experiments")
    return p


# --------------------------------------------------------------------------- formatting


def _num(v: Any, fmt: str, scale: float = 1.0, none: str = "—") -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return none
    if math.isnan(f):
        return none
    return format(f * scale, fmt)


def _flows_table(res) -> Rows:
    """A run's flows (the first ``_MAX_ROWS``), from ``Results.head``."""
    names = ("flow", "cc", "rtt ms", "goodput Mbit/s", "retrans %", "mean srtt ms", "fct s")
    t = Rows("flows", [(n, "left" if n == "cc" else "right") for n in names], key=2)
    for f in res.head("flows", _MAX_ROWS):
        t.add_row(
            f.get("flow", ""),
            f.get("cc", ""),
            _num(f.get("rtt_ms"), "g"),
            _num(f.get("goodput_mbps"), ".2f"),
            _num(f.get("retrans_rate"), ".3f", 100),
            _num(f.get("srtt_mean_ms"), ".1f"),
            _num(f.get("fct_s"), ".3f"),
        )
    n = res.count("flows")
    if n > _MAX_ROWS:
        t.caption = f"… {n - _MAX_ROWS} more flows in flows.parquet"
    return t


def _links_table(res) -> Rows:
    """A network's links: utilization, queueing delay and drops of each."""
    names = ("link", "Mbit/s", "flows", "util %", "qdelay mean / p99 ms", "drops")
    t = Rows("links", [(n, "left" if n == "link" else "right") for n in names])
    for x in res.head("links", _MAX_ROWS):
        t.add_row(
            x.get("link", ""),
            _num(x.get("rate_mbps"), "g"),
            _num(x.get("flows"), ".0f"),
            _num(x.get("utilization"), ".1f", 100),
            _num(x.get("qdelay_mean_ms"), ".2f") + " / " + _num(x.get("qdelay_p99_ms"), ".2f"),
            _num(x.get("drops"), ".0f"),
        )
    n = res.count("links")
    if n > _MAX_ROWS:
        t.caption = f"… {n - _MAX_ROWS} more links in links.parquet"
    return t


def _summary_table(res) -> Table:
    rows = res.head("summary", 1)
    s = rows[0] if rows else {}
    t = Table(title="run summary", title_justify="left", show_header=False)
    t.add_column("metric")
    t.add_column("value", justify="right")
    rows = [
        ("utilization", _num(s.get("utilization"), ".1f", 100) + " %"),
        ("Jain fairness", _num(s.get("jain"), ".3f")),
        ("retransmission rate", _num(s.get("retrans_rate"), ".3f", 100) + " %"),
        ("mean RTT", _num(s.get("mean_rtt_ms"), ".1f") + " ms"),
        (
            "queueing delay p50 / p95 / p99",
            " / ".join(_num(s.get(f"qdelay_{p}_ms"), ".2f") for p in ("p50", "p95", "p99")) + " ms",
        ),
        ("drops", _num(s.get("drops"), ".0f")),
    ]
    for k, v in rows:
        t.add_row(k, v)
    return t


def _dur_s(ns: Any) -> str:
    return _num(ns, "g", 1e-9) + " s"


def _limit(limit: Any) -> str:
    """A normalized queue limit: ``{"bytes": n}`` or ``{"packets": n}``."""
    if isinstance(limit, dict) and len(limit) == 1:
        ((unit, n),) = limit.items()
        return f"{int(n):,} {unit}"
    return str(limit)


def _validate_summary(scn: Scenario) -> list[Any]:
    """What `validate` prints: the normalized scenario in short."""
    n = scn.normalized
    b = n.get("bottleneck") or {}
    head = Table(title=f"{scn.name} ({scn.source})", title_justify="left", show_header=False)
    head.add_column("field")
    head.add_column("value")
    head.add_row("hash", scn.short_hash)
    head.add_row("duration", _dur_s(n.get("duration_ns")))
    head.add_row("seed", str(n.get("seed", "")))
    head.add_row("sample interval", _num(n.get("sample_interval_ns"), "g", 1e-6) + " ms")
    links = n.get("links") or []
    if not links:
        head.add_row("bottleneck rate", _num(b.get("rate_bps"), "g", 1e-6) + " Mbit/s")
        head.add_row("buffer", _buffer(b))
        head.add_row("qdisc", _qdisc(b))
    latency = (n.get("hosts") or {}).get("latency", "")
    if isinstance(latency, dict):  # a measured table: {"table": {"sender_ns": [...], ...}}
        from .stats import turnaround_median

        t = latency["table"]
        latency = "table (medians {:.1f} / {:.1f} us)".format(
            turnaround_median(t["sender_ns"]) / 1e3, turnaround_median(t["receiver_ns"]) / 1e3
        )
    speed = (n.get("hosts") or {}).get("run_speed", "fixed")
    if isinstance(speed, dict):  # a factor: {"factor": 1.2}
        speed = f"x{speed['factor']:g}"
    head.add_row(
        "host latency",
        f"{latency}, run speed {speed} (simulator; model version {n.get('model', 1)})",
    )
    flows = n.get("flows", [])
    names = [str(x.get("name", "")) for x in links]
    cols = ("id", "group", "label", "cc", "rtt ms", "start s", "size bytes", "pacing") + (
        ("route",) if links else ()
    )
    left = ("label", "cc", "pacing", "route")
    ft = Rows(f"{len(flows)} flows", [(c, "left" if c in left else "right") for c in cols])
    for f in flows[:_MAX_ROWS]:
        size = f.get("size_bytes")
        pacing = f.get("pacing") or {}
        route = [">".join(names[k] for k in f.get("route", []))] if links else []
        ft.add_row(
            f.get("id", ""),
            f.get("group", ""),
            f.get("label", ""),
            f.get("cc", ""),
            _num(f.get("rtt_ns"), "g", 1e-6),
            _num(f.get("start_ns"), "g", 1e-9),
            f"{int(size):,}" if isinstance(size, int) else "bulk",
            str(pacing.get("mode", "")) if isinstance(pacing, dict) else str(pacing),
            *route,
        )
    if len(flows) > _MAX_ROWS:
        ft.caption = f"… {len(flows) - _MAX_ROWS} more flows"
    if not links:
        return [head, ft]
    cols = ("name", "rate Mbit/s", "delay ms", "buffer", "qdisc")
    lt = Rows(
        f"{len(links)} links", [(c, "left" if c in ("name", "buffer", "qdisc") else "right") for c in cols]
    )
    for x in links[:_MAX_ROWS]:
        lt.add_row(
            x.get("name", ""),
            _num(x.get("rate_bps"), "g", 1e-6),
            _num(x.get("delay_ns"), "g", 1e-6),
            f'{_limit(x.get("limit"))} ("{x.get("buffer", "")}")',
            _qdisc(x),
        )
    return [head, lt, ft]


def _buffer(b: dict[str, Any]) -> str:
    """A normalized link's buffer: its limit, as written, and its BDP."""
    buffer = _limit(b.get("limit"))
    if "bdp_bytes" in b:
        bdp_rtt = _num(b.get("bdp_rtt_ns"), "g", 1e-6)
        buffer += f'  ("{b.get("buffer", "")}"; BDP {int(b["bdp_bytes"]):,} bytes at {bdp_rtt} ms)'
    return buffer


def _qdisc(b: dict[str, Any]) -> str:
    qd = b.get("qdisc")
    return str(qd.get("kind", qd) if isinstance(qd, dict) else qd) + (", ECN" if b.get("ecn") else "")


# --------------------------------------------------------------------------- commands


def expectations_table(outcomes) -> Rows:
    """Pass/fail of each expectation: over how many runs, the worst value."""
    names = ("", "expectation", "runs passed", "worst", "at")
    t = Rows(
        "expectations", [(n, "right" if n in ("runs passed", "worst") else "left") for n in names], key=2
    )
    for o in outcomes:
        n = len(o.checks)
        worst = o.worst()
        if n == 0:
            mark, passed, value, at = Text("FAIL", "red"), "no run selected", "", ""
        else:
            mark = Text("PASS", "green") if o.passed else Text("FAIL", "red")
            passed = f"{n - len(o.failures)}/{n}"
            shown = o.failures[0] if o.failures else worst
            label, check = shown
            value = _num(check.actual, ".4g") if check.actual is not None else "—"
            at = label + (f" ({check.detail})" if check.detail else "")
        t.add_row(mark, o.expectation.describe(), passed, value, at)
    return t


def print_expectations(outcomes, out: Console) -> int:
    """Print the table; the exit status they give (1 when one failed, or applied to no run)."""
    if not outcomes:
        return 0
    out.print(expectations_table(outcomes))
    failed = [o for o in outcomes if not o.passed]
    if failed:
        out.print(f"{len(failed)} of {len(outcomes)} expectation(s) failed", style="red")
        return EXIT_FAILED
    out.print(f"all {len(outcomes)} expectation(s) hold")
    return 0


def _print_warnings(scn: Scenario) -> None:
    """The scenario's warnings (``Scenario.warnings``) on stderr, one line
    each, before the command runs it; they never change the exit status."""
    for w in scn.warnings:
        print(w, file=sys.stderr)


def _cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .expect import check_all, check_expectations, parse_expectations

    scn = Scenario.load(args.scenario, args.overrides)
    _print_warnings(scn)
    expectations = parse_expectations(scn.expect, scn.source)  # before the run: bad ones cost nothing
    check_expectations(expectations, scn)
    name = args.backend or scn.backend or "sim"
    if args.testbed is not None and name != "linux":
        raise _BadArgs("ccarena run: --testbed picks a kernel testbed: only with --backend linux")
    chosen = backend(name, args.testbed)  # the Linux backend checks root and namespaces first
    earlier: list[Any] = []
    if chosen.name == "linux":
        earlier = _kernel_runs(scn, None if args.out is None else Path(args.out).parent)
    verb = "simulating" if chosen.name == "sim" else "running on Linux:"
    with err.status(escape(f"{verb} {scn.name} …")) as st:
        res = chosen.run(
            scn,
            args.out,
            figure=not args.no_figure,
            yes=args.yes,
            progress=lambda m: st.update(escape(f"{verb} {scn.name}: {m} …")),
        )
    out.print(_flows_table(res))
    if res.count("links") > 1:
        out.print(_links_table(res))
    out.print(_summary_table(res))
    _print_linux_checks(res, out, err)
    out.print(f"run directory: {res.path}")
    _print_earlier(earlier, out)
    if scn.sweep:  # after the run: a refusal before it is one line alone
        err.print(
            f"note: {scn.source} has a [sweep]; this ran its base scenario (ccarena sweep runs the points)"
        )
    if res.figure is not None:
        out.print(f"figure: {res.figure}")
    _print_captures(res, out, err)
    if not expectations:
        return 0
    outcomes = check_all(expectations, [("run", {}, res.summary, res.flows)])
    return print_expectations(outcomes, out)


def _runs_table(exp, limit: int = _MAX_ROWS) -> Rows:
    runs = exp.runs
    cols = [*exp.keys, "repeat"]
    metrics = [
        c for c in ("utilization", "jain", "retrans_rate", "mean_rtt_ms", "qdelay_p95_ms") if c in runs
    ]
    right = {*metrics, "repeat"}
    t = Rows(
        f"{len(runs)} runs",
        [(c, "right" if c in right else "left") for c in [*cols, *metrics]],
        key=len(cols),
    )
    for _, r in runs.head(limit).iterrows():
        cells = [str(r[c]) for c in cols]
        for m in metrics:
            scale = 100 if m in ("utilization", "retrans_rate") else 1
            cells.append(_num(r[m], ".2f" if scale == 1 else ".1f", scale) + (" %" if scale == 100 else ""))
        t.add_row(*cells)
    if len(runs) > limit:
        t.caption = f"… {len(runs) - limit} more rows in runs.parquet"
    return t


def run_experiment(scn: Scenario, args: argparse.Namespace, out: Console, err: Console, directory) -> tuple:
    """Run a sweep with the pool arguments; returns (experiment, exit status)."""
    from .errors import SweepError
    from .experiment import run_sweep

    status = 0
    try:
        exp = run_sweep(
            scn,
            directory,
            jobs=args.jobs,
            executor=args.executor,
            address=args.address,
            force=args.force,
            progress=False if args.no_progress else None,
            console=err,
            yes=args.yes,
        )
    except SweepError as e:
        exp = e.experiment
        for label, msg in list(e.failures.items())[:10]:
            err.print(Text.assemble(("failed", "red"), f" {label}: {msg}"))
        status = EXIT_FAILED
    return exp, status


def _cmd_sweep(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .expect import check_expectations, check_experiment, parse_expectations

    if args.jobs is not None and args.jobs < 1:
        raise _BadArgs("--jobs must be at least 1")
    scn = Scenario.load(args.scenario, args.overrides)
    _print_warnings(scn)
    expectations = parse_expectations(scn.expect, scn.source)
    check_expectations(expectations, scn)
    exp, status = run_experiment(scn, args, out, err, args.out)
    out.print(_runs_table(exp))
    out.print(
        f"experiment directory: {exp.path} ({exp.ran} run, {exp.cached} cached); "
        f"index: {exp.path / 'runs.parquet'}"
    )
    outcomes = check_experiment(expectations, exp)
    return max(status, print_expectations(outcomes, out))


def _print_captures(res, out: Console, err: Console) -> None:
    """One line per capture file; a warning where frames are missing from it."""
    for c in res.meta.get("captures", []):
        out.print(f"capture: {res.path / c['file']} ({c['frames']} frames)")
        if c.get("skipped"):
            err.print(
                f"[yellow]warning:[/] capture at the {c['point']}: {c['skipped']} frames "
                "past max_packets not written"
            )
        if c.get("dropped_by_kernel"):
            err.print(
                f"[yellow]warning:[/] capture at the {c['point']}: the kernel dropped "
                f"{c['dropped_by_kernel']} frames before tcpdump saw them"
            )


def _print_linux_checks(res, out: Console, err: Console) -> None:
    """The Linux backend's notes and self-check verdict."""
    lx = res.meta.get("linux")
    if not lx:
        return
    for note in lx.get("notes", []):
        err.print(f"note: {note}")
    sc = lx.get("self_check", {})
    # The user-space element: the bottleneck, or the bridge testbed's delay hop.
    element = "delay hop" if lx.get("testbed", DEFAULT_TESTBED) != DEFAULT_TESTBED else "bottleneck"
    out.print(
        f"kernel {lx.get('kernel')}"
        + (f", testbed {lx['testbed']}" if lx.get("testbed", DEFAULT_TESTBED) != DEFAULT_TESTBED else "")
        + f"; {element} release lateness p50/p99/max "
        f"{_num(sc.get('lateness_p50_us'), '.0f')}/{_num(sc.get('lateness_p99_us'), '.0f')}/"
        f"{_num(sc.get('lateness_max_us'), '.0f')} us; CPU {element} "
        f"{_num(sc.get('bottleneck_cpu_load'), '.0%')}, sender {_num(sc.get('sender_cpu_load'), '.0%')}, "
        f"receiver {_num(sc.get('receiver_cpu_load'), '.0%')}"
    )
    for w in lx.get("warnings", []):
        err.print(Text.assemble(("warning:", "yellow"), f" {w}"))
    if not lx.get("trustworthy", True):
        err.print("warning: this run is marked trustworthy = false (see docs/validation.md)", style="yellow")


def _kernel_runs(scn: Scenario, *also: Path | None) -> list[Path]:
    """The kernel runs of ``scn`` already made: in its default results
    directory and in ``also`` (the folder an ``--out`` is in)."""
    from .store import DEFAULT_ROOT, default_run_dir, runs_of

    home = default_run_dir(scn.name, scn.short_hash, DEFAULT_ROOT).parent
    return runs_of(scn.hash, "linux", home, *[d for d in also if d is not None])


def _print_earlier(earlier: Sequence[Path], out: Console) -> None:
    """The kernel runs of the same scenario made before this one (all kept)."""
    if not earlier:
        return
    out.print(f"earlier kernel runs of this scenario ({len(earlier)}, each kept):")
    for p in earlier[-5:]:
        out.print(f"  {p}")
    if len(earlier) > 5:
        out.print(f"  … and {len(earlier) - 5} more")


def _cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .compare import compare

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in ("sim", "linux")]
    if bad or len(backends) < 2:
        print(
            f"ccarena compare: --backends {args.backends!r}: give two or more of sim, linux", file=sys.stderr
        )
        return EXIT_BAD_INPUT
    scn = Scenario.load(args.scenario, args.overrides)
    from .store import default_run_dir, runs_of

    earlier = runs_of(scn.hash, "linux", default_run_dir(scn.name, scn.short_hash, args.out).parent)
    comp = compare(scn, backends, root=args.out, figure=not args.no_figure, console=err)
    for t in comp.rich_tables():
        out.print(t)
    for b, res in comp.results.items():
        if b == "linux":
            _print_linux_checks(res, out, err)
        out.print(f"{b} run directory: {res.path}")
        _print_captures(res, out, err)
    _print_earlier(earlier, out)
    out.print(f"comparison: {comp.csv_path}")
    if comp.figure_path is not None:
        out.print(f"figure: {comp.figure_path}")
    return 0


def _parse_part(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise _BadArgs(f"ccarena conformance: --part {text!r}: expected K/N with 1 <= K <= N") from None
    if not 1 <= k <= n:
        raise _BadArgs(f"ccarena conformance: --part {text!r}: expected K/N with 1 <= K <= N")
    return k, n


def _cmd_conformance(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .conformance import (
        MissingRuns,
        ceiling_line,
        cells_table,
        differs_table,
        hosts_mode,
        load_kernel_reference,
        load_matrix,
        run_conformance,
        select,
        summary_table,
    )
    from .executors import default_jobs

    matrix = load_matrix(args.matrix)
    for flag, key in (("--linux-repeats", "linux_repeats"), ("--sim-seeds", "sim_seeds")):
        if getattr(args, key) is not None:
            matrix = matrix.with_counts(**{key: getattr(args, key)}, source=f"ccarena conformance {flag}")
    if args.sim_hosts is not None:
        mode = hosts_mode(args.sim_hosts, "ccarena conformance", "--sim-hosts", Path.cwd())
        matrix = dataclasses.replace(matrix, sim_hosts=mode)
    sensitivity = [
        hosts_mode(h, "ccarena conformance", "--sensitivity", Path.cwd()) for h in args.sensitivity
    ]
    reference = load_kernel_reference(args.kernel) if args.kernel is not None else None
    part = _parse_part(args.part)
    cells = select(matrix.cells, args.group, part, args.cell)
    if not cells:
        chosen = " ".join([f"--group {g}" for g in args.group] + [f"--cell {c}" for c in args.cell])
        raise _BadArgs(f"ccarena conformance: {args.matrix}: no cell matches {chosen}")
    if args.list:
        out.print(cells_table(cells))
        out.print(f"{len(cells)} of {len(matrix.cells)} cells")
        return 0
    if args.retry_untrusted and args.sim_only:
        raise _BadArgs("ccarena conformance: --retry-untrusted makes kernel runs; not with --sim-only")
    if not args.sim_only:
        from .linux.backend import preflight

        preflight()
    try:
        with err.status("conformance") as st:
            conf = run_conformance(
                matrix,
                args.out,
                groups=args.group,
                part=part,
                ids=args.cell,
                linux=not args.sim_only,
                reference=reference,
                progress=lambda m: st.update(escape(m)),
                retry_untrusted=args.retry_untrusted,
                jobs=args.jobs or default_jobs(),
                allow_missing=args.allow_missing,
                sensitivity=sensitivity,
                testbed=args.testbed,
            )
    except MissingRuns as e:
        print(f"ccarena conformance: {args.matrix}: {e}", file=sys.stderr)
        return EXIT_FAILED
    from .conformance.hosts import describe

    table = conf.summary
    assert table is not None
    overall = table.iloc[-1]
    out.print(
        f"{overall['agree']} of {overall['flows']} flows agree ({overall['agree_fraction']:.1%}) in "
        f"{conf.frame['cell'].nunique() if len(conf.frame) else 0} cells, the simulator with "
        f"{describe(matrix.sim_hosts)}; {overall['equivalent']} shown equivalent, "
        f"{overall['differs']} shown to differ"
    )
    if line := ceiling_line(overall):
        out.print(line)
    if conf.missing:
        out.print(f"left out (--allow-missing): {len(conf.missing)} cells without all their runs")
    if conf.machines:
        out.print(f"kernel runs: {conf.machines}")
    out.print(summary_table(table))
    if conf.sensitivity is not None:
        for hosts, s in conf.sensitivity.groupby("hosts", sort=False):
            out.print(summary_table(s.drop(columns="hosts"), f"with {hosts}"))
    f = conf.flows
    bad = f[~f["agree"].astype(bool)] if len(f) else f
    if len(bad):
        out.print(differs_table(bad))
    out.print(f"table: {conf.directory / 'conformance.parquet'}")
    out.print(f"report: {conf.report}")
    return 0


def _measure_host(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .linux.measure import measure_host, write_profile
    from .store import StoreError

    if not 1 <= args.runs <= 100:
        raise _BadArgs("ccarena linux measure-host: --runs: expected an integer from 1 to 100")
    from .linux import preflight

    preflight()
    target = Path(args.out) if args.out else None
    if target is not None and target.exists():
        raise StoreError(f"{target}: exists; give --out a new file (a measurement is never overwritten)")
    with err.status("measuring the hosts …") as st:
        profile, _ = measure_host(args.runs, progress=lambda m: st.update(escape(m)))
    path = target or Path(f"host-profile-{profile.name}.toml")
    n = 2
    while target is None and path.exists():
        path = Path(f"host-profile-{profile.name}-{n}.toml")
        n += 1
    write_profile(profile, path)
    m = profile.measured
    out.print(
        f"{m['trustworthy_runs']} of {m['runs']} runs trustworthy; median turnarounds (us) "
        f"sender {', '.join(f'{x:g}' for x in m['sender_p50_us'])}; "
        f"receiver {', '.join(f'{x:g}' for x in m['receiver_p50_us'])}; run-to-run sd {m['run_speed_sd']:.1%}"
    )
    out.print(f'profile: {path} (use it with [hosts] profile = "{path}", or conformance --sim-hosts {path})')
    return 0


def _cmd_linux(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .linux import cleanup, preflight

    if args.linux_command == "check":
        binary = preflight()
        out.print(f"the Linux backend can run here (bottleneck: {binary})")
        return 0
    if args.linux_command == "measure-host":
        return _measure_host(args, out, err)
    import os

    if os.geteuid() != 0:
        print("ccarena linux cleanup: must run as root", file=sys.stderr)
        return EXIT_BAD_INPUT
    done = cleanup()
    out.print(
        f"removed {len(done.namespaces)} namespace(s)"
        + (": " + ", ".join(done.namespaces) if done.namespaces else "")
        + f" and {len(done.workdirs)} work director{'y' if len(done.workdirs) == 1 else 'ies'}"
        + (f"; left {len(done.live)} live run(s) alone: {', '.join(done.live)}" if done.live else ""),
    )
    return 0


def _cmd_validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .cost import check
    from .expect import check_expectations, flow_shape, parse_expectations
    from .sweep import iter_points

    scn = Scenario.load(args.scenario, args.overrides)
    _print_warnings(scn)
    # Everything a run or sweep would refuse is refused here: expectations,
    # every sweep point (each validated by the core, then let go), the cost.
    expectations = parse_expectations(scn.expect, scn.source)
    shapes = (
        [flow_shape(p.scenario.normalized) for p in iter_points(scn, yes=args.yes)] if scn.sweep else None
    )
    check_expectations(expectations, scn, shapes)
    cost = check(scn, force=args.yes)
    for t in _validate_summary(scn):
        out.print(t)
    out.print(f"cost of one run: {cost.describe()}")
    if shapes:
        out.print(f"sweep: {len(shapes):,} points, each valid")
    out.print(f"{args.scenario}: valid")
    return 0


def _listing(title: str, rows: Sequence[tuple[str, str, str]], width: int) -> Text:
    """Rows of (name, a short note, a reference) as text that fits ``width``
    columns: the reference wraps under itself."""
    import textwrap

    a = max(len(r[0]) for r in rows) + 2
    b = max(len(r[1]) for r in rows) + 2
    room = max(20, width - 2 - a - b)
    text = Text(title + "\n", style="bold")
    for name, note, ref in rows:
        parts = textwrap.wrap(ref, room) or [""]
        text.append(f"  {name:<{a}}{note:<{b}}{parts[0]}\n")
        for more in parts[1:]:
            text.append(" " * (2 + a + b) + more + "\n")
    return text


def _cmd_list(args: argparse.Namespace, out: Console, err: Console) -> int:
    from . import _core
    from .catalog import catalog_table
    from .linux.modules import KERNEL_CC
    from .traces import shipped

    width = out.width
    out.print(
        _listing(
            "congestion controls (cc = NAME; kernel X: the Linux backend runs module X)",
            [
                (n, f"kernel {KERNEL_CC[n]}" if n in KERNEL_CC else "-", _core.cc_reference(n))
                for n in _core.cc_names()
            ],
            width,
        )
    )
    out.print(
        _listing(
            "queue disciplines (bottleneck.qdisc = NAME)",
            [(n, "", _core.qdisc_reference(n)) for n in _core.qdisc_names()],
            width,
        )
    )
    traces = ", ".join(shipped())
    out.print(_listing("delivery traces (trace = NAME or a file)", [("", "", traces)], width))
    out.print(catalog_table(width))
    return 0


def _load_results(path: str):
    """An experiment directory, or a run directory seen as a one-run experiment."""
    from .experiment import EXPERIMENT_FILE, Experiment
    from .store import SCENARIO_FILE

    p = Path(path)
    if (p / EXPERIMENT_FILE).is_file():
        return Experiment.load(p)
    if (p / SCENARIO_FILE).is_file():
        return Experiment.from_run(p)
    raise _BadArgs(
        f"{path}: neither a run directory (no {SCENARIO_FILE}) nor an experiment ({EXPERIMENT_FILE})"
    )


def _cmd_plot(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .plots import PlotError, make_figure

    exp = _load_results(args.results)
    try:
        path = make_figure(exp, args.kind, metric=args.metric, x=args.x, y=args.y, hue=args.hue, out=args.out)
    except PlotError as e:
        raise _BadArgs(f"{args.results}: {e}") from None
    out.print(f"figure: {path} (and {path.with_suffix('.svg').name})")
    return 0


def _cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .report import write_report

    exp = _load_results(args.results)
    with err.status("writing the report …"):
        index = write_report(exp, args.out)
    out.print(f"report: {index}")
    return 0


def _reproduce(target: str, args: argparse.Namespace, out: Console, err: Console) -> int:
    """``ccarena reproduce``: run each id of ``target`` that can run; the exit
    status is the worst of theirs (3 when one waits for a mechanism).

    Each id's paper findings (``findings.of_id``) are checked on its runs and
    printed, with a table of all of them at the end of a paper's run, and
    written as ``findings.csv`` beside the figures. They do not change the
    exit status: only the scenario's own [[expect]] rows do."""
    from .catalog import (
        DEFAULT_ROOT,
        CatalogError,
        Unavailable,
        experiment_dir,
        finding_rows,
        findings_summary,
        findings_table,
        lookup,
        parse_at,
        status,
        unavailable_message,
        write_findings_csv,
    )
    from .catalog.findings import evaluate
    from .expect import check_experiment, parse_expectations
    from .report import write_report
    from .sweep import narrow

    if getattr(args, "estimate", False):
        if getattr(args, "at", None) or getattr(args, "repeats", None) is not None:
            raise CatalogError("--estimate prices an id's whole sweep; it takes no --at or --repeats")
        return _print_estimate(target, args, out, err)
    entries = lookup(target)
    at = parse_at(getattr(args, "at", None) or [])
    repeats = getattr(args, "repeats", None)
    narrowed = bool(at) or repeats is not None
    if narrowed and len(entries) != 1:
        raise CatalogError(f"{target}: --at and --repeats narrow one id's sweep; give an id, not a paper")
    root = Path(args.out) if args.out else DEFAULT_ROOT
    worst = 0
    ran = 0
    all_rows: list[dict[str, Any]] = []
    for entry in entries:
        miss = status(entry)
        if miss:
            msg = unavailable_message(entry, miss)
            if len(entries) == 1:
                raise Unavailable(msg)
            err.print(Text.assemble(("skipped", "yellow"), f" {msg}"))
            worst = max(worst, EXIT_UNAVAILABLE)
            continue
        opts = {k: getattr(args, k, None) for k in sorted(entry.options)}
        doc = entry.build(args.quick, **opts)
        if narrowed:
            doc = {**doc, "sweep": narrow(doc.get("sweep"), at, repeats, entry.id)}
        scn = Scenario.from_dict(doc, source=entry.id)
        linux = getattr(args, "executor", "local") == "linux"
        directory = experiment_dir(entry, doc, args.quick, root, narrowed, linux)
        out.print(Text.assemble((entry.id, "bold"), f"{' (quick)' if args.quick else ''}: {entry.title}"))
        exp, code = run_experiment(scn, args, out, err, directory)
        skipped = getattr(exp, "skipped", {})
        if skipped:
            reasons = sorted(set(skipped.values()))
            out.print(f"left out on the kernel: {len(skipped)} point(s) ({'; '.join(reasons[:3])})")
        fig_dir = directory / entry.id.split("/", 1)[1]
        fig_dir.mkdir(parents=True, exist_ok=True)
        drawn = entry.figure(exp, fig_dir, args.quick, **opts) if len(exp.runs) else []
        outcomes = check_experiment(parse_expectations(scn.expect, scn.source), exp)
        verdicts = evaluate(entry.id, exp) if len(exp.runs) else []
        rows = finding_rows(entry, verdicts)
        index = write_report(
            exp,
            fig_dir / "report",
            figures=drawn,
            title=f"{entry.id}{' (quick)' if args.quick else ''}: {entry.title}",
            intro=entry.notes,
            outcomes=outcomes,
        )
        for d in drawn:
            out.print(f"figure: {d.png} (+ .svg, data: {d.png.with_suffix('.csv').name})")
        out.print(f"experiment: {directory} ({exp.ran} run, {exp.cached} cached); report: {index}")
        code = max(code, print_expectations(outcomes, out))
        if rows:
            write_findings_csv(rows, fig_dir / "findings.csv")
            out.print(findings_table(rows, f"{entry.id}: the paper's findings"))
            out.print(findings_summary(rows) + " (findings do not change the exit status)")
        all_rows += rows
        worst = max(worst, code)
        ran += 1
    if ran == 0 and len(entries) > 1:
        err.print(f"{target}: none of its experiments can run with this core")
    if len(entries) > 1 and all_rows:
        write_findings_csv(all_rows, root / f"findings-{target}{'-quick' if args.quick else ''}.csv")
        out.print(
            findings_table(
                all_rows, f"{target}{' (quick)' if args.quick else ''}: did the paper's findings hold?"
            )
        )
        out.print(findings_summary(all_rows))
    return worst


def _print_estimate(target: str, args: argparse.Namespace, out: Console, err: Console) -> int:
    """``ccarena reproduce TARGET --estimate``: what running it would cost,
    one row per id (``estimate.estimate_entries``); nothing runs, nothing is
    written. The exit status is 3 when an id waits for a mechanism, else 0."""
    from .catalog import estimate_report, lookup
    from .catalog.estimate import estimate_entries
    from .executors import default_jobs

    entries = lookup(target)
    jobs = args.jobs or default_jobs()
    options = {k: getattr(args, k, None) for e in entries for k in e.options}
    with err.status(f"estimating {target} …") as st:
        costs = estimate_entries(
            entries, args.quick, options, progress=lambda i: st.update(f"estimating {i} …")
        )
    for t in estimate_report(costs, jobs, f"{target}{' (quick form)' if args.quick else ' (full form)'}"):
        out.print(t)
    waiting = [c for c in costs if c.missing]
    for c in waiting:
        err.print(Text.assemble(("not estimated", "yellow"), f" {c.id}: waits for {', '.join(c.missing)}"))
    return EXIT_UNAVAILABLE if waiting else 0


def _cmd_reproduce(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .catalog import CatalogError, Unavailable

    if args.jobs is not None and args.jobs < 1:
        raise _BadArgs("--jobs must be at least 1")
    try:
        return _reproduce(args.target, args, out, err)
    except CatalogError as e:
        raise _BadArgs(str(e)) from None
    except Unavailable as e:
        print(str(e), file=sys.stderr)
        return EXIT_UNAVAILABLE


class _BadArgs(ValueError):
    """A bad command-line value found after parsing."""


def main(argv: Sequence[str] | None = None) -> int:
    # Every module a command loads, it loads when it needs it; no signal can
    # cut such an import in two (ccarena.interrupt): one that comes meanwhile
    # lands after it, as an ordinary interrupt, handled below like any.
    guard_imports()
    try:
        return _dispatch(_parser().parse_args(argv))
    except KeyboardInterrupt as e:
        # A Linux run ends by SIGINT/SIGTERM/SIGHUP with ``Interrupted``
        # (128 + signal, after its clean-up); Ctrl-C elsewhere is SIGINT.
        status = int(getattr(e, "exit_status", 128 + signal.SIGINT))
        # Exiting on this interrupt: a second Ctrl-C now must not turn the
        # exit status into death by signal.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        print(f"ccarena: interrupted ({signal.Signals(status - 128).name})", file=sys.stderr)
        return status


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command ``args`` names; bad input of any kind is one line on
    stderr and exit status 2."""
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        # A path that is not UTF-8 (surrogates in Python) prints as stderr
        # prints it, not as a UnicodeEncodeError after the work is done.
        sys.stdout.reconfigure(errors="backslashreplace")
    # No console markup: names, labels and paths are the user's text and
    # print as written ("[/bold]" too); ccarena's own colours are Text styles.
    out = Console(highlight=False, markup=False)
    err = Console(stderr=True, highlight=False, markup=False)
    command = {
        "run": _cmd_run,
        "sweep": _cmd_sweep,
        "validate": _cmd_validate,
        "list": _cmd_list,
        "plot": _cmd_plot,
        "report": _cmd_report,
        "reproduce": _cmd_reproduce,
        "compare": _cmd_compare,
        "linux": _cmd_linux,
        "conformance": _cmd_conformance,
    }[args.command]
    try:
        return command(args, out, err)
    except (ScenarioError, StoreError, _BadArgs) as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except LinuxNotAvailable as e:
        print(f"ccarena: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except LinuxUnsupported as e:
        print(f"ccarena: linux backend: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except LinuxBackendError as e:
        print(f"ccarena: linux backend failed: {e}", file=sys.stderr)
        return 1
    except ControllerError as e:
        # The user's own code: one line here, the traceback from ccarena.run.
        print(f"ccarena: {e} (nothing was written)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
