#!/usr/bin/env python3
"""Run the catalog's full forms id by id, and keep what each cost.

For each id of the given papers (or ids), `ccarena reproduce ID --out ROOT
--yes` in a process of its own, timed, with the peak resident memory of its
largest process (the parent or one worker, as wait4 reports it: not
their sum); a row per id in TABLES/runs.csv (id, form, runs, wall_s,
peak_rss_mib, reduced). An id already in runs.csv in the full form is not
run again (its runs are cached in ROOT anyway), so an interrupted session
resumes. Then, for each paper all of whose ids are done, `ccarena
reproduce PAPER --out ROOT` (every run cached) writes its findings table,
copied to TABLES/sim-PAPER-full.csv for scripts/findings_doc.py.

    python scripts/full_forms.py bbq mixed-workload --root results/full --jobs 2
    python scripts/full_forms.py bbrv2-eval --skip bbrv2-eval/fig16 --root results/full

Ids left out with --skip are recorded as not run, with the reason given.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ccarena.catalog import PAPERS, lookup

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("id", "form", "runs", "wall_s", "peak_rss_mib", "reduced")


def _done(table: Path) -> dict[str, dict[str, str]]:
    if not table.is_file():
        return {}
    with table.open(newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f) if r["form"] == "full"}


def _append(table: Path, row: dict[str, object]) -> None:
    new = not table.is_file()
    with table.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow(row)


def _run(cmd: list[str], log: Path) -> tuple[int, float, float, str]:
    """Exit status, wall seconds, the largest process's peak RSS (MiB), output."""
    start = time.monotonic()
    with log.open("w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    # wait4's usage is the child's and its reaped descendants' (Linux keeps
    # the largest maxrss among them): the largest process, not the sum
    peak_kib = usage.ru_maxrss
    return os.waitstatus_to_exitcode(status), wall, peak_kib / 1024.0, log.read_text(errors="replace")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="+", help="papers or ids")
    ap.add_argument("--root", default="results/full", help="ccarena reproduce --out")
    ap.add_argument("--tables", default=str(ROOT / "docs" / "findings"))
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip", action="append", default=[], metavar="ID[=REASON]")
    a = ap.parse_args()
    tables, root = Path(a.tables), Path(a.root)
    tables.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    runs_csv = tables / "runs.csv"
    skip = dict([*s.split("=", 1), "left out"][:2] for s in a.skip)
    ccarena = shutil.which("ccarena") or sys.exit("ccarena is not on PATH")
    papers = []
    for target in a.targets:
        entries = lookup(target)
        if target in PAPERS:
            papers.append(target)
        for e in entries:
            done = _done(runs_csv)
            if e.id in done:
                continue
            if e.id in skip:
                _append(
                    runs_csv,
                    {
                        "id": e.id,
                        "form": "full",
                        "runs": 0,
                        "wall_s": "",
                        "peak_rss_mib": "",
                        "reduced": f"not run: {skip[e.id]}",
                    },
                )
                continue
            log = root / f"{e.id.replace('/', '-')}.log"
            cmd = [
                ccarena,
                "reproduce",
                e.id,
                "--out",
                str(root),
                "--yes",
                "--no-progress",
                "-j",
                str(a.jobs),
            ]
            code, wall, peak, text = _run(cmd, log)
            ran = re.findall(r"\((\d+) run, (\d+) cached\)", text)
            n = sum(int(x) + int(y) for x, y in ran)
            print(f"{e.id}: exit {code}, {n} runs, {wall:.0f} s, peak {peak:.0f} MiB", flush=True)
            if code not in (0, 1):  # 1: an expectation failed; the findings are still written
                print(f"  see {log}", flush=True)
                continue
            _append(
                runs_csv,
                {
                    "id": e.id,
                    "form": "full",
                    "runs": n,
                    "wall_s": round(wall),
                    "peak_rss_mib": round(peak),
                    "reduced": "",
                },
            )
    for paper in papers:
        done = _done(runs_csv)
        if not all(e.id in done for e in lookup(paper)):
            continue
        log = root / f"{paper}.log"
        code, _, _, _ = _run([ccarena, "reproduce", paper, "--out", str(root), "--no-progress"], log)
        src = root / f"findings-{paper}.csv"
        if src.is_file():
            shutil.copyfile(src, tables / f"sim-{paper}-full.csv")
            print(f"{paper}: findings -> {tables / f'sim-{paper}-full.csv'}", flush=True)
        else:
            print(f"{paper}: no findings table (exit {code}; {log})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
