"""Sweep throughput: 100 small runs with --jobs 1 and --jobs 2, and the speed-up.

    python benches/sweep_speedup.py [--runs 100] [--jobs 1,2] [--ray-nodes 2]

Each run is one CUBIC and one Reno flow over 100 Mbit/s for 30 s (about 0.1 s of CPU each); the sweep is
`repeats = N`, so every run differs only in its seed. Each measurement writes
a fresh experiment directory (nothing is cached). Prints wall time, runs per
second (and per hour) and the speed-up over the first job count. With
--ray-nodes N the same sweep also runs on the Ray executor over a local
multi-node cluster (N nodes of one CPU each on this machine, Ray's
``cluster_utils.Cluster``): what `--executor ray` costs against the local
pool, scheduling and object transfer included. Not a unit test.
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
    ap.add_argument("--duration", default="30s", help="simulated time of each run")
    ap.add_argument("--ray-nodes", type=int, default=0, help="also on a local Ray cluster of N one-CPU nodes")
    args = ap.parse_args()
    doc = {
        "name": "speedup",
        "duration": args.duration,
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
                f"--jobs {jobs}: {args.runs} runs in {wall:.2f} s = {args.runs / wall:.1f} runs/s "
                f"({3600 * args.runs / wall:,.0f} runs/h), speed-up {base / wall:.2f}x"
            )
        if args.ray_nodes:
            from ray.cluster_utils import Cluster  # optional: only with --ray-nodes

            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            for _ in range(args.ray_nodes - 1):
                cluster.add_node(num_cpus=1)
            try:
                t0 = time.perf_counter()
                exp = ccarena.sweep(
                    doc, out=Path(tmp) / "ray", executor="ray", address=cluster.address, progress=False
                )
                wall = time.perf_counter() - t0
                assert exp.ran == args.runs, exp.ran
                print(
                    f"ray, {args.ray_nodes} nodes x 1 CPU: {args.runs} runs in {wall:.2f} s = "
                    f"{args.runs / wall:.1f} runs/s ({3600 * args.runs / wall:,.0f} runs/h), "
                    f"speed-up {base / wall:.2f}x"
                )
            finally:
                cluster.shutdown()


if __name__ == "__main__":
    main()
