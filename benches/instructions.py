"""Instructions and cache misses per bottleneck packet, counted by cachegrind:
`python benches/instructions.py [NAME ...]` (`make bench-instructions`).

Wall time on a shared machine drifts (this project's 2-core machines ran
the same commit 1.5x slower from one day to the next) and a single run
varies by up to a third; the instructions a run executes do not, so a
change's effect on the work per packet can be read from one run of each
side. Cachegrind also simulates the caches: a 32 KiB first level and a
16 MiB last level (the size beyond which a load costs 135-160 ns here),
so the misses say how much of the flows' state the run reaches for. It
ignores software prefetches: its misses are those without them.

Each scenario of `make bench` (`crates/sim/benches/throughput.rs`) whose
name contains one of the NAMEs runs twice under cachegrind, once only
built (`--setup-only`) and once run; the difference is the run's own
cost, divided by its bottleneck packets. The default rows are 10 and
10,000 CUBIC flows at 10 Gbit/s and 10 CUBIC, Prague and BBRv3 flows at
1 Gbit/s. Under cachegrind a run takes about 50 times its normal time
(10,000 flows: about two minutes). Needs valgrind.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [
    "flows: 10 cubic, 10 Gbps, 3 s",
    "flows: 10000 cubic, 10 Gbps, 3 s",
    "rate: 10 cubic, 1Gbps, 30s",
    "cc: 10 prague, 1 Gbps, 10 s",
    "cc: 10 bbr3, 1 Gbps, 10 s",
]
LL_BYTES = 16 << 20


def bench_binary() -> Path:
    """Build the throughput benchmark and return its executable."""
    out = subprocess.run(
        ["cargo", "bench", "-q", "-p", "ccarena-sim", "--no-run", "--message-format=json"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        is_bench = msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "throughput"
        if is_bench and msg.get("executable"):
            return Path(msg["executable"])
    raise SystemExit("benches/instructions.py: cargo built no throughput benchmark")


def counts(cmd: list[str]) -> tuple[dict[str, int], str]:
    """Cachegrind's totals for `cmd` (instructions, first-level data misses,
    last-level data read misses) and the command's own output."""
    with tempfile.TemporaryDirectory() as tmp:
        cp = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=yes",
                f"--LL={LL_BYTES},16,64",
                f"--cachegrind-out-file={tmp}/out",
                *cmd,
            ],
            check=True,
            capture_output=True,
            text=True,
        )

    def total(label: str, part: int = 0) -> int:
        m = re.search(rf"{label}:\s+([\d,]+)(?:\s+\(\s*([\d,]+) rd\s+\+\s+([\d,]+) wr\))?", cp.stderr)
        if m is None:
            raise SystemExit(f"benches/instructions.py: no {label!r} in cachegrind's output")
        return int(m.group(1 + part).replace(",", ""))

    return {"ir": total("I\\s+refs"), "d1": total("D1\\s+misses"), "ll_rd": total("LLd misses", 1)}, cp.stdout


def main(argv: list[str]) -> int:
    if shutil.which("valgrind") is None:
        print("benches/instructions.py: valgrind not found: apt-get install valgrind", file=sys.stderr)
        return 2
    wanted = argv or DEFAULT
    exe = bench_binary()
    listed = subprocess.run([exe, "--list"], check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t", 1) for line in listed.splitlines()]
    chosen = [(int(i), name) for i, name in rows if any(w in name for w in wanted)]
    if not chosen:
        print(f"benches/instructions.py: no scenario matches {wanted}", file=sys.stderr)
        return 2
    print(f"{'scenario':<40} {'Mpkts':>6} {'instr/pkt':>10} {'L1d miss/pkt':>13} {'LL rd miss/pkt':>15}")
    for i, name in chosen:
        setup, _ = counts([str(exe), "--one", str(i), "--setup-only"])
        run, out = counts([str(exe), "--one", str(i)])
        fields = out.split()
        if not fields or fields[0] != "OK":
            print(f"{name:<40} skipped: {out.strip()}")
            continue
        pkts = int(fields[6])
        per = {k: (run[k] - setup[k]) / pkts for k in run}
        print(f"{name:<40} {pkts / 1e6:>6.2f} {per['ir']:>10.0f} {per['d1']:>13.2f} {per['ll_rd']:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
