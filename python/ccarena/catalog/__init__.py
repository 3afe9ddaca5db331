"""The experiment catalog: every experiment of ../../shared/experiments.md
(four papers), one module per paper. ``ccarena reproduce ID|PAPER|all`` runs
an id's sweep (``--quick``: its short form), draws the paper's figure with the
plotted numbers as CSV, checks the id's expectations and writes a report;
``--estimate`` runs nothing and prints what that would cost (estimate.py).

Ids whose mechanisms the installed core lacks (a congestion control, a
queue discipline, a path impairment, a workload) are listed with what they
need and refuse to run, instead of running something else.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rich.text import Text

from ..cost import EXPAND_PER_FLOW_S, FLOW_OVERHEAD_S, NS_PER_PACKET, RUN_OVERHEAD_S
from ..termtable import Rows
from . import (  # noqa: F401  (they register their ids)  # noqa: F401  (they add the papers' findings)
    bbq,
    bbrv2_eval,
    bbrv3_insights,
    findings_bbq,
    findings_bbrv2_eval,
    findings_bbrv3_insights,
    findings_mixed_workload,
    mixed_workload,
)
from .base import REGISTRY, Entry
from .capabilities import available, describe, missing
from .estimate import totals

__all__ = [
    "PAPERS",
    "REGISTRY",
    "CatalogError",
    "Entry",
    "Unavailable",
    "catalog_table",
    "estimate_report",
    "findings_table",
    "lookup",
    "wall_time",
]

PAPERS = {
    "bbrv2-eval": "An Emulation-based Evaluation of TCP BBRv2 Alpha for Wired Broadband",
    "bbrv3-insights": "Insights into BBRv3's Performance and Behavior by Experimental Evaluation",
    "bbq": "Towards RTT fairness of congestion-based congestion control (BBQ)",
    "mixed-workload": "Impact of TCP BBR on CUBIC Traffic: A Mixed Workload Evaluation",
}
DEFAULT_ROOT = Path("results") / "reproduce"


class CatalogError(ValueError):
    """An unknown id or paper."""


class Unavailable(RuntimeError):
    """The experiment needs mechanisms that are not built yet."""


def lookup(target: str) -> list[Entry]:
    """The entries of an id (``bbq/fig3``), a paper (``bbq``) or ``all``."""
    target = target.strip().rstrip("/")
    if target == "all":
        return list(REGISTRY.values())
    if target in REGISTRY:
        return [REGISTRY[target]]
    if target in PAPERS:
        return [e for e in REGISTRY.values() if e.paper == target]
    close = [i for i in REGISTRY if target in i][:5]
    hint = f"; did you mean {', '.join(close)}?" if close else "; see ccarena list"
    raise CatalogError(f"{target}: no such experiment id or paper{hint}")


def status(entry: Entry) -> list[str]:
    """What the entry needs that is missing (empty: it runs)."""
    return missing(entry.needs)


def catalog_table(width: int = 80) -> Text:
    """Every id, what it draws, and whether it runs with the installed core
    (else what it waits for): the id, then its title wrapped to ``width``
    columns beside it."""
    import textwrap

    lines = Text("experiment catalog (ccarena reproduce ID|PAPER [--quick]):\n", style="bold")
    head = max(len(i) for i in REGISTRY) + 4
    room = max(20, width - head)
    for e in REGISTRY.values():
        miss = status(e)
        body = textwrap.wrap(e.title, room) or [""]
        lines.append(f"  {e.id:<{head - 2}}")
        lines.append(body[0] + "\n")
        for more in body[1:]:
            lines.append(" " * head + more + "\n")
        if miss:
            for i, part in enumerate(textwrap.wrap("waits for " + ", ".join(miss), room)):
                lines.append(" " * head + part + "\n", style="yellow" if i == 0 else None)
    return lines


def unavailable_message(entry: Entry, miss: list[str]) -> str:
    what = "; ".join(describe(m) for m in miss)
    return f"{entry.id}: not built yet: needs {what} ({', '.join(miss)}); nothing was run"


#: The columns of a findings table (``findings-*.csv``, ``findings.csv``).
FINDING_COLUMNS = ("id", "cite", "finding", "paper", "check", "holds", "measured", "kernel")


def finding_rows(entry: Entry, verdicts: list[Any]) -> list[dict[str, Any]]:
    """One row per finding of ``entry`` (``findings.evaluate``): where the
    paper says it, the claim, what the paper reports, the check, whether it
    holds here, what was measured, and what the kernel here can show."""
    rows = []
    for v in verdicts:
        f = v.finding
        rows.append(
            {
                "id": entry.id,
                "cite": f.cite,
                "finding": f.claim,
                "paper": f.paper,
                "check": f.check.describe(),
                "holds": "n/a" if v.holds is None else ("yes" if v.holds else "no"),
                "measured": v.measured,
                "kernel": f.kernel,
            }
        )
    return rows


def findings_table(rows: list[dict[str, Any]], title: str = "paper findings") -> Rows:
    """Which of the papers' findings hold: id, finding, the paper's number,
    yes/no, what was measured."""
    names = ("id", "finding", "paper", "holds", "measured")
    t = Rows(title, [(n, "right" if n == "measured" else "left") for n in names])
    style = {"yes": "green", "no": "red", "n/a": "yellow"}
    for r in rows:
        holds = Text(r["holds"], style[r["holds"]])
        t.add_row(r["id"], f"{r['finding']} ({r['cite']})", r["paper"], holds, r["measured"])
    return t


def findings_summary(rows: list[dict[str, Any]]) -> str:
    n = {k: sum(r["holds"] == k for r in rows) for k in ("yes", "no", "n/a")}
    text = f"{n['yes']} of {len(rows)} finding(s) hold, {n['no']} do not"
    return text + (f", {n['n/a']} not checked (no run at their points)" if n["n/a"] else "")


def write_findings_csv(rows: list[dict[str, Any]], path: Path) -> None:
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(FINDING_COLUMNS))
        w.writeheader()
        w.writerows(rows)


def experiment_dir(
    entry: Entry, doc: dict[str, Any], quick: bool, root: Path, narrowed: bool = False, linux: bool = False
) -> Path:
    """``root/NAME[-quick][-linux]``; a narrowed sweep (``--at``,
    ``--repeats``) gets its own directory, ``NAME[-quick]-at-HASH`` (the start
    of the sha256 of its sweep), so it never rewrites the whole form's index
    or figures; the kernel's runs (``--executor linux``) their own."""
    name = str(doc.get("name", entry.id.replace("/", "-"))) + ("-quick" if quick else "")
    name += "-linux" if linux else ""
    if narrowed:
        digest = hashlib.sha256(json.dumps(doc.get("sweep"), sort_keys=True).encode()).hexdigest()
        name += f"-at-{digest[:8]}"
    return root / name


def parse_at(items: list[str]) -> dict[str, list[str]]:
    """``--at KEY=V1,V2`` (repeatable) as {key: [values]}."""
    at: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise CatalogError(f"--at {item}: expected KEY=VALUE[,VALUE...], e.g. --at flows.0.cc=bbr2")
        at.setdefault(key.strip(), []).extend(v.strip() for v in values.split(",") if v.strip())
    return at


def estimate_report(costs: list[Any], jobs: int, what: str) -> list[Any]:
    """The table of ``estimate_entries``' costs and the lines under it."""

    times = [1] if jobs == 1 else [1, jobs]
    t = Rows(
        f"{what}: estimated cost, nothing run",
        [
            ("id", "left"),
            ("runs", "right"),
            ("flows", "right"),
            ("G pkts", "right"),
            *((f"{n} job{'s' if n != 1 else ''}", "right") for n in times),
        ],
    )
    for c in costs:
        if c.missing:
            t.add_row(c.id, "-", "-", "-", *(["waits"] * len(times)))
            continue
        mark = ("*" if c.shared_with else "") + ("!" if c.over_limits else "")
        t.add_row(
            c.id + (f" {mark}" if mark else ""),
            f"{c.runs:,}",
            f"{c.flows:,}",
            _sig(c.packets / 1e9),
            *(wall_time(c.hours(n) * 3600) for n in times),
        )
    done = [c for c in costs if not c.missing]
    tot = totals(costs, jobs)
    runs, packets, one, many = tot.runs, tot.packets, tot.one_s, tot.many_s
    notes = []
    if len(costs) > 1:
        t.add_row(
            "total",
            f"{runs:,}",
            f"{max((c.flows for c in done), default=0):,}",
            _sig(packets / 1e9),
            *[wall_time(one), wall_time(many)][: len(times)],
        )
        on_n = f", ~{wall_time(many)} on {jobs} workers" if jobs != 1 else ""
        notes.append(
            f"total: {runs:,} runs, {_sig(packets / 1e9)} G bottleneck packets, ~{wall_time(one)} on 1 "
            f"worker{on_n} (one id after another, each sweep's runs longest first)."
        )
    notes.append(
        "flows: the most in one run. G pkts: the bottleneck's capacity in full frames, an upper bound. "
        f"A run takes its packets at {NS_PER_PACKET[0][1]:.0f}-{NS_PER_PACKET[-1][1]:,.0f} ns each (by "
        f"the flows sending at once) + {RUN_OVERHEAD_S:g} s + {FLOW_OVERHEAD_S * 1e6:g} us a flow, after "
        f"{EXPAND_PER_FLOW_S * 1e6:g} us a flow per point to build the sweep (python/ccarena/cost.py)."
    )
    if any(c.shared_with for c in done):
        notes.append("* its runs are an earlier id's (one experiment directory): counted once in the total.")
    if any(c.over_limits for c in done):
        notes.append("! above the cost limits: reproduce it with --yes.")
    return [t, *(Text(n) for n in notes)]


def wall_time(s: float) -> str:
    """Seconds as a short duration: ``45 s``, ``4.1 min``, ``1.25 h``, ``34.8 h``."""
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min" if s < 600 else f"{s / 60:.0f} min"
    return f"{_sig(s / 3600)} h"


def _sig(x: float) -> str:
    """Three significant digits, at most two decimals, thousands separated."""
    import math

    if x == 0:
        return "0"
    if x < 0.005:
        return "<0.01"
    decimals = min(2, max(0, 2 - math.floor(math.log10(x))))
    return f"{x:,.{decimals}f}"


def capabilities() -> frozenset[str]:
    return available()
