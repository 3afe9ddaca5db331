"""Sim vs Linux on the validation matrix of docs/validation.md.

    sudo .venv/bin/python scripts/linux_validation.py OUT.csv [--duration 8s] [--cc cubic,reno,bbr1]
        [--flows 1,2,10] [--rtt 10ms,50ms] [--buffer 0.5BDP,1BDP,4BDP] [--rate 50Mbps,100Mbps]

Runs each cell on both backends (results under OUT.csv's directory), and
appends one row per cell to OUT.csv as it goes, so an interrupted sweep
keeps what it ran. Cells already in OUT.csv are skipped.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
from pathlib import Path

from ccarena import Scenario
from ccarena.compare import compare

FIELDS = ["utilization", "jain", "retrans_rate", "mean_rtt_ms", "qdelay_mean_ms", "qdelay_p95_ms", "drops"]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--duration", default="8s")
    p.add_argument("--cc", default="cubic,reno,bbr1")
    p.add_argument("--flows", default="1,2,10")
    p.add_argument("--rtt", default="10ms,50ms")
    p.add_argument("--buffer", default="0.5BDP,1BDP,4BDP")
    p.add_argument("--rate", default="50Mbps,100Mbps")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        with out.open() as f:
            done = {(r["cc"], r["flows"], r["rtt"], r["buffer"], r["rate"]) for r in csv.DictReader(f)}
    cols = ["cc", "flows", "rtt", "buffer", "rate"]
    cols += [f"{b}_{k}" for k in FIELDS for b in ("sim", "linux")]
    cols += ["linux_trustworthy", "lateness_p99_us", "lateness_max_us", "bottleneck_cpu_load"]
    cols += ["host_cpu_busy", "warnings"]
    new = not out.exists()
    grid = itertools.product(
        a.cc.split(","), a.flows.split(","), a.rtt.split(","), a.buffer.split(","), a.rate.split(",")
    )
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        if new:
            w.writeheader()
        for cc, n, rtt, buf, rate in grid:
            if (cc, n, rtt, buf, rate) in done:
                continue
            doc = {
                "name": f"val-{cc}-{n}f-{rtt}-{buf}-{rate}",
                "duration": a.duration,
                "bottleneck": {"rate": rate, "buffer": buf},
                "flows": [{"cc": cc, "rtt": rtt, "count": int(n)}],
            }
            scn = Scenario.from_dict(doc)
            comp = compare(scn, ["sim", "linux"], root=out.parent / "runs", figure=False)
            row = {"cc": cc, "flows": n, "rtt": rtt, "buffer": buf, "rate": rate}
            for b in ("sim", "linux"):
                s = comp.results[b].summary.iloc[0]
                for k in FIELDS:
                    row[f"{b}_{k}"] = float(s[k])
            lx = comp.results["linux"].meta["linux"]
            sc = lx["self_check"]
            row.update(
                linux_trustworthy=lx["trustworthy"],
                lateness_p99_us=sc["lateness_p99_us"],
                lateness_max_us=sc["lateness_max_us"],
                bottleneck_cpu_load=sc["bottleneck_cpu_load"],
                host_cpu_busy=sc["host_cpu_busy"],
                warnings="; ".join(lx["warnings"]),
            )
            w.writerow(row)
            f.flush()
            u = (row["sim_utilization"], row["linux_utilization"])
            print(f"{doc['name']}: util {u[0]:.3f}/{u[1]:.3f} trustworthy={lx['trustworthy']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
