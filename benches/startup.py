#!/usr/bin/env python3
"""Start-up of the command line, whole processes: ``ccarena --help``,
``list``, ``validate`` and a run of 0.1 s simulated time with
``--no-figure``. Each is run ``--repeats`` times (default 7, after one
run to warm the page cache) and the median, least and largest wall times
are printed. ``make bench`` runs it.

    python benches/startup.py [--repeats N] [--ccarena PATH]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = """name = "startup"
duration = "0.1s"
[bottleneck]
rate = "20Mbps"
buffer = "1BDP"
[[flows]]
cc = "cubic"
rtt = "20ms"
"""


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--ccarena", help="the ccarena program (default: the one beside this interpreter)")
    a = ap.parse_args(argv)
    exe = a.ccarena or str(Path(sysconfig.get_path("scripts")) / "ccarena")
    if not Path(exe).is_file():
        exe = shutil.which("ccarena") or exe
    with tempfile.TemporaryDirectory(prefix="ccarena-startup-") as d:
        tmp = Path(d)
        (tmp / "small.toml").write_text(SMALL)
        cases = {
            "ccarena --help": [exe, "--help"],
            "ccarena list": [exe, "list"],
            "ccarena validate scenarios/demo.toml": [exe, "validate", str(REPO / "scenarios" / "demo.toml")],
            "ccarena run (0.1 s simulated) --no-figure": None,
        }
        print(f"{'command':<44} {'median s':>9} {'min s':>7} {'max s':>7}")
        for name, cmd in cases.items():
            walls = []
            for k in range(a.repeats + 1):
                c = cmd or [exe, "run", str(tmp / "small.toml"), "--no-figure", "--out", str(tmp / f"r{k}")]
                w = timed(c, tmp)
                if k:  # the first warms the page cache
                    walls.append(w)
            print(f"{name:<44} {statistics.median(walls):>9.3f} {min(walls):>7.3f} {max(walls):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
