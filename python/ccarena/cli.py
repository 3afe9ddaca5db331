"""The ``ccarena`` command.

Exit status: 0 on success, 2 on bad input of any kind (scenario, override,
output directory, command line), with one line on stderr and nothing written.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from . import __version__
from .scenario import Scenario, ScenarioError
from .store import StoreError

EXIT_BAD_INPUT = 2
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

    r = sub.add_parser("run", help="simulate one scenario, store its results, draw its figure")
    scenario_args(r)
    r.add_argument("--backend", choices=["sim"], default="sim", help="where to run it (default: sim)")
    r.add_argument("--out", metavar="DIR", help="run directory (default: results/<name>/<hash>/)")
    r.add_argument("--no-figure", action="store_true", help="do not draw timeseries.png")

    v = sub.add_parser("validate", help="check a scenario and print its normalized form")
    scenario_args(v)

    sub.add_parser("list", help="list the congestion controls and queue disciplines")
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


def _flows_table(flows) -> Table:
    t = Table(title="flows", title_justify="left")
    for name in ("flow", "cc", "rtt ms", "goodput Mbit/s", "retrans %", "mean srtt ms", "fct s"):
        t.add_column(name, justify="left" if name == "cc" else "right", no_wrap=True)
    for _, f in flows.head(_MAX_ROWS).iterrows():
        t.add_row(
            str(f.get("flow", "")),
            str(f.get("cc", "")),
            _num(f.get("rtt_ms"), "g"),
            _num(f.get("goodput_mbps"), ".2f"),
            _num(f.get("retrans_rate"), ".3f", 100),
            _num(f.get("srtt_mean_ms"), ".1f"),
            _num(f.get("fct_s"), ".3f"),
        )
    if len(flows) > _MAX_ROWS:
        t.caption = f"… {len(flows) - _MAX_ROWS} more flows in flows.parquet"
    return t


def _summary_table(summary) -> Table:
    s = summary.iloc[0] if len(summary) else {}
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
    head.add_row("bottleneck rate", _num(b.get("rate_bps"), "g", 1e-6) + " Mbit/s")
    buffer = _limit(b.get("limit"))
    if "bdp_bytes" in b:
        bdp_rtt = _num(b.get("bdp_rtt_ns"), "g", 1e-6)
        buffer += f'  ("{b.get("buffer", "")}"; BDP {int(b["bdp_bytes"]):,} bytes at {bdp_rtt} ms)'
    head.add_row("buffer", buffer)
    qd = b.get("qdisc")
    head.add_row(
        "qdisc", str(qd.get("kind", qd) if isinstance(qd, dict) else qd) + (", ECN" if b.get("ecn") else "")
    )
    flows = n.get("flows", [])
    ft = Table(title=f"{len(flows)} flows", title_justify="left")
    for col in ("id", "group", "label", "cc", "rtt ms", "start s", "size bytes", "pacing"):
        ft.add_column(col, justify="left" if col in ("label", "cc", "pacing") else "right", no_wrap=True)
    for f in flows[:_MAX_ROWS]:
        size = f.get("size_bytes")
        pacing = f.get("pacing") or {}
        ft.add_row(
            str(f.get("id", "")),
            str(f.get("group", "")),
            str(f.get("label", "")),
            str(f.get("cc", "")),
            _num(f.get("rtt_ns"), "g", 1e-6),
            _num(f.get("start_ns"), "g", 1e-9),
            f"{int(size):,}" if isinstance(size, int) else "bulk",
            str(pacing.get("mode", "")) if isinstance(pacing, dict) else str(pacing),
        )
    if len(flows) > _MAX_ROWS:
        ft.caption = f"… {len(flows) - _MAX_ROWS} more flows"
    return [head, ft]


# --------------------------------------------------------------------------- commands


def _cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .runner import execute

    scn = Scenario.load(args.scenario, args.overrides)
    with err.status(f"simulating {scn.name} …"):
        res = execute(scn, args.out, figure=not args.no_figure)
    out.print(_flows_table(res.flows))
    out.print(_summary_table(res.summary))
    out.print(f"run directory: {res.path}")
    if res.figure is not None:
        out.print(f"figure: {res.figure}")
    return 0


def _cmd_validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    scn = Scenario.load(args.scenario, args.overrides)
    for t in _validate_summary(scn):
        out.print(t)
    out.print(f"{args.scenario}: valid")
    return 0


def _cmd_list(args: argparse.Namespace, out: Console, err: Console) -> int:
    from . import _core

    out.print("congestion controls: " + ", ".join(_core.cc_names()))
    out.print("queue disciplines:   " + ", ".join(_core.qdisc_names()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    command = {"run": _cmd_run, "validate": _cmd_validate, "list": _cmd_list}[args.command]
    try:
        return command(args, out, err)
    except (ScenarioError, StoreError) as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ccarena: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
