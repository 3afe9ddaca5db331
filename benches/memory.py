#!/usr/bin/env python3
"""Peak memory and wall time of whole ``ccarena run --no-figure --yes``
processes, beside what ``ccarena validate`` estimated for them, on shapes
that stress different parts: few and many flows, long runs, fine
sampling, many ``[[flows]]`` entries, a network. Each shape runs in its
own process (peak RSS from ``wait4``); ``--scale`` shortens the long ones
(0.125 and 0.25 with 1 give peak memory against simulated duration).
``make bench-memory`` runs it.

    python benches/memory.py [--only NAME] [--scale S] [--ccarena PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _dumbbell(name: str, dur: str, rate: str, buffer: str, flows: list[dict], interval: str = "100ms") -> str:
    body = "\n".join("[[flows]]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in f.items()) for f in flows)
    return (
        f'name = "{name}"\nduration = "{dur}"\nseed = 1\n[bottleneck]\nrate = "{rate}"\nbuffer = "{buffer}"\n'
        f'[path]\nrtt = "20ms"\n[sample]\ninterval = "{interval}"\n{body}\n'
    )


def _secs(d: float) -> str:
    return f"{d:g}s"


def shapes(scale: float) -> dict[str, str]:
    """Name: scenario file text. Durations marked long scale with ``scale``."""
    many_entries = [{"cc": "cubic", "size": "100KB", "start": f"{i * 0.01:.2f}s"} for i in range(5000)]
    return {
        "1 flow, 100 Mbit/s, 10 s": _dumbbell("m1", "10s", "100Mbps", "1BDP", [{"cc": "cubic"}]),
        "10,000 flows, 10 Gbit/s, 3 s": _dumbbell(
            "m10k", "3s", "10Gbps", "1BDP", [{"cc": "cubic", "count": 10000}], "1s"
        ),
        "1,000 flows, 1 Gbit/s, 360 s, 1 s samples": _dumbbell(
            "m1000", _secs(360 * scale), "1Gbps", "1BDP", [{"cc": "cubic", "count": 1000}], "1s"
        ),
        "100 flows of 10 GB, 1 Gbit/s, 10 BDP, 12,000 s (fig16's point)": _dumbbell(
            "mf16", _secs(12000 * scale), "1Gbps", "10BDP", [{"cc": "cubic", "count": 100, "size": "10GB"}]
        ),
        "10 flows, 1 Gbit/s, 60 s, 1 ms samples": _dumbbell(
            "mfine", "60s", "1Gbps", "1BDP", [{"cc": "cubic", "count": 10}], "1ms"
        ),
        "5,000 [[flows]] entries of 100 KB, 100 Mbit/s, 60 s": _dumbbell(
            "mentries", "60s", "100Mbps", "1BDP", many_entries
        ),
        "parking lot (scenarios/parking-lot.toml: 3 links of 20 Mbit/s, 4 flows), 120 s": (
            REPO / "scenarios" / "parking-lot.toml"
        )
        .read_text()
        .replace('duration = "30s"', 'duration = "120s"'),
    }


def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr.read().decode() if p.stderr else ''}")
    return wall, ru.ru_maxrss / 1024


def estimate(path: Path) -> dict[str, float]:
    """``validate``'s estimate, computed in a process of its own: this one
    stays small, since a child's peak RSS counts the pages it was forked
    with (Linux keeps the high-water mark across ``exec``)."""
    code = (
        "import json, sys; from ccarena.cost import estimate; from ccarena.scenario import Scenario; "
        "c = estimate(Scenario.load(sys.argv[1])); "
        "print(json.dumps({'memory': c.peak_bytes / 2**20, 'wall': c.run_s}))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="run only the shapes whose name contains this")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the long shapes' durations")
    ap.add_argument("--ccarena", help="the ccarena program (default: the one beside this interpreter)")
    a = ap.parse_args(argv)
    exe = a.ccarena or str(Path(sysconfig.get_path("scripts")) / "ccarena")
    if not Path(exe).is_file():
        exe = shutil.which("ccarena") or exe
    print("| shape | estimated peak | measured peak RSS | off by | estimated wall | measured wall | off by |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ccarena-memory-") as d:
        tmp = Path(d)
        for i, (name, text) in enumerate(shapes(a.scale).items()):
            if a.only and a.only not in name:
                continue
            f = tmp / f"s{i}.toml"
            f.write_text(text)
            e = estimate(f)
            wall, rss = measure([exe, "run", str(f), "--out", str(tmp / f"r{i}"), "--no-figure", "--yes"])
            shutil.rmtree(tmp / f"r{i}")
            print(
                f"| {name} | {e['memory']:.0f} MiB | {rss:.0f} MiB | {e['memory'] / rss - 1:+.0%} "
                f"| {e['wall']:.1f} s | {wall:.1f} s | {e['wall'] / wall - 1:+.0%} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
