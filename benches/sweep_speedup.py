"""Sweep throughput: 100 small runs with --jobs 1 and --jobs 2, and the speed-up.

    python benches/sweep_speedup.py [--runs 100] [--jobs 1,2]

Each run is one CUBIC and one Reno flow over 100 Mbit/s for 30 s (about 0.1 s of CPU each); the sweep is
`repeats = N`, so every run differs only in its seed. Each measurement writes
a fresh experiment directory (nothing is cached). Prints wall time, runs per
second and the speed-up over the first job count. Not a unit test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import ccarena


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--jobs", default="1,2")
    args = ap.parse_args()
    doc = {
        "name": "speedup",
        "duration": "30s",
        "seed": 1,
        "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
        "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "reno", "rtt": "40ms"}],
        "sweep": {"repeats": args.runs},
    }
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (int(j) for j in args.jobs.split(",")):
            t0 = time.perf_counter()
            exp = ccarena.sweep(doc, out=Path(tmp) / f"jobs{jobs}", jobs=jobs, progress=False)
            wall = time.perf_counter() - t0
            assert exp.ran == args.runs, exp.ran
            base = base or wall
            print(
                f"--jobs {jobs}: {args.runs} runs in {wall:.2f} s = {args.runs / wall:.1f} runs/s, "
                f"speed-up {base / wall:.2f}x"
            )


if __name__ == "__main__":
    main()
