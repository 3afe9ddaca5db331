#!/usr/bin/env python3
"""The kernel's testbed uncertainty: the same matrix cells on both kernel
testbeds, side by side.

For each cell and run r (the cell's seed for run r, as `ccarena
conformance` makes it), one run on the user-space-bottleneck testbed and
one on the bridge testbed, interleaved. Each starts only once the machine
is quiet (1-minute load under 0.5 and under 10% busy over 3 s); a run is
kept when its self-checks passed and the machine stayed under
``--max-busy`` busy during it (the first testbed's runs do not check
that themselves), else it is moved to ``OUT/rejected/`` and made again
(at most four times). Runs are stored as conformance stores them
(``OUT/runs/<kernel hash>-linux[-bridge-tbf]``), so a later ``ccarena
conformance MATRIX --out OUT [--testbed bridge-tbf]`` judges the
simulator against either testbed's runs without making them again.
Needs root.

    sudo python scripts/testbed_spread.py conformance/matrix.toml \\
        --cell mixed-rtt/0 --cell mixed-cc/0 --repeats 3 --out results/testbeds
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from ccarena import Results
from ccarena.conformance import flow_values, load_matrix, run_dir, select
from ccarena.linux import backend as lb
from ccarena.linux.testbeds import TESTBEDS
from ccarena.store import is_complete

METRICS = ("share", "goodput_mbps", "srtt_mean_ms", "retrans_rate", "drops")


def busy(dt: float = 3.0) -> float:
    """The machine's busy share over ``dt`` seconds (/proc/stat)."""

    def read() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4], sum(v)

    a = read()
    time.sleep(dt)
    b = read()
    return (b[0] - a[0]) / max(b[1] - a[1], 1)


def wait_quiet(wait_max: float = 5400.0) -> tuple[float, float]:
    """Wait (at most ``wait_max`` s) for the 1-minute load under 0.5 and
    under 10% busy over 3 s; returns both as they were."""
    t = time.monotonic()
    while True:
        load = os.getloadavg()[0]
        if load < 0.5:
            b = busy()
            if b < 0.10:
                return load, b
        if time.monotonic() - t > wait_max:
            return load, busy()
        time.sleep(15)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("matrix")
    ap.add_argument("--cell", action="append", default=[], help="cells by id (glob; repeatable)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="results/testbeds")
    ap.add_argument(
        "--max-busy", type=float, default=0.30, help="the machine's busy share a kept run stays under"
    )
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("testbed_spread.py: must run as root", file=sys.stderr)
        return 2
    out = Path(a.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    matrix = load_matrix(a.matrix)
    cells = select(matrix.cells, ids=a.cell)
    log_path = out / "testbed_spread.jsonl"
    kept: list[dict] = []
    for r in range(a.repeats):
        for cell in cells:
            scn = cell.with_seed(cell.seeds(a.repeats)[r])
            for tb in TESTBEDS:
                d = run_dir(out, scn, "linux", tb)
                for attempt in range(4):
                    if is_complete(d):
                        res = Results.load(d)
                        kept.append({"cell": cell.id, "repeat": r, "testbed": tb,
                                     "flows": flow_values(res).to_dict("records")})  # fmt: skip
                        break
                    load, quiet_busy = wait_quiet()
                    res = lb.execute(scn, d, testbed=tb)
                    lx = res.meta["linux"]
                    machine = lx["self_check"].get("host_cpu_busy") or 0.0
                    ok = bool(lx["trustworthy"]) and machine < a.max_busy
                    rec = {
                        "cell": cell.id, "repeat": r, "testbed": tb, "attempt": attempt, "kept": ok,
                        "load_before": load, "busy_before": quiet_busy, "busy": machine,
                        "warnings": lx["warnings"], "flows": flow_values(res).to_dict("records"),
                    }  # fmt: skip
                    with open(log_path, "a", encoding="utf-8") as log:
                        print(json.dumps(rec), file=log)
                    print(f"{cell.id} run {r} {tb}: {'kept' if ok else 'made again'} (busy {machine:.0%})")
                    if not ok:
                        dest = out / "rejected" / f"{d.name}.{attempt}"
                        dest.parent.mkdir(exist_ok=True)
                        shutil.move(str(d), str(dest))
    for cell in cells:
        for flow in sorted({f["flow"] for k in kept if k["cell"] == cell.id for f in k["flows"]}):
            for m in METRICS:
                cols = []
                for tb in TESTBEDS:
                    v = [f[m] for k in kept if k["cell"] == cell.id and k["testbed"] == tb
                         for f in k["flows"] if f["flow"] == flow]  # fmt: skip
                    cols.append(f"{tb}: " + " ".join(f"{x:.4g}" for x in v))
                print(f"{cell.id} flow {flow} {m:13s} " + " | ".join(cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
