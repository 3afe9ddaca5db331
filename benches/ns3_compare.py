"""ccarena against ns-3, side by side: the same dumbbell scenarios, whole processes timed.

    python benches/ns3_compare.py [--quick] [--scenarios 2cubic-100m,10cubic-1g]

Needs ns-3 from Debian (`apt-get install -y libns3-dev`) and g++. Compiles
benches/ns3/dumbbell.cc against it once (cached as target/ns3/dumbbell-<hash>,
the hash of the source, the compiler command and the package version), then
for each scenario runs, one after the other:

- ccarena: `python -m ccarena run SCENARIO.toml --out DIR --no-figure --yes`
  on a TOML written to a temporary directory (no figure: ns-3 draws none);
- ns-3: the dumbbell program with the bottleneck buffer, access rate and
  per-way delay read from ccarena's resolved scenario (scenario.json), so
  both run the same buffer in bytes.

Each is timed as a whole process (start-up included): wall time, and user +
system CPU time from the child's rusage. "pkts" are the packets that left
the bottleneck queue (ccarena: run_stats.bottleneck_packets; ns-3: the
bottleneck device queue's Dequeue trace); ns/pkt is wall time per such
packet. Under the table, each side's fixed cost per process, from a run of
0.1 s (ccarena's, about 0.7 s, is Python's start-up and imports and the
result files; it dominates --quick runs). A second table compares what the
two simulated (drops at the bottleneck, goodput), to show the runs are
comparable work; their dynamics are not expected to match (see
benches/ns3/dumbbell.cc for what is matched and what differs).

--quick divides every duration by 10 (for testing the script); the full
list keeps ns-3 busy for minutes.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "benches" / "ns3" / "dumbbell.cc"
CACHE = ROOT / "target" / "ns3"
PACKAGE = "libns3-dev"
INSTALL_HINT = f"apt-get install -y {PACKAGE}"
# The ns-3 modules dumbbell.cc uses (each one library).
MODULES = ("core", "network", "internet", "point-to-point", "applications", "traffic-control")
CXXFLAGS = ("-O2", "-std=c++17")


@dataclass(frozen=True)
class Scenario:
    key: str
    flows: int
    cc: str  # ccarena's name
    ns3_cc: str  # ns-3's TypeId, without ns3::
    rate: str  # ccarena's and ns-3's rate syntax alike ("100Mbps")
    rtt_ms: int
    duration_s: float

    def label(self, duration_s: float) -> str:
        return f"{self.flows} {self.cc}, {self.rate}, {self.rtt_ms} ms, 1 BDP, {duration_s:g} s"


SCENARIOS = [
    Scenario("2cubic-100m", 2, "cubic", "TcpCubic", "100Mbps", 20, 60),
    Scenario("10cubic-1g", 10, "cubic", "TcpCubic", "1Gbps", 20, 30),
    # ns-3's TcpBbr is BBRv1: ccarena's bbr1.
    Scenario("10bbr1-1g", 10, "bbr1", "TcpBbr", "1Gbps", 20, 30),
    Scenario("10reno-1g", 10, "reno", "TcpNewReno", "1Gbps", 20, 30),
]
# A run too small to cost anything but the process itself: each side's
# fixed cost (ccarena's is Python's start-up and imports, and writing the
# result files), printed under the table and never divided by --quick.
STARTUP = Scenario("startup", 1, "cubic", "TcpCubic", "10Mbps", 20, 0.1)


def fail(msg: str, code: int = 1) -> None:
    print(f"ns3_compare: {msg}", file=sys.stderr)
    sys.exit(code)


def ns3_version() -> str | None:
    """The installed libns3-dev package's version, or None."""
    try:
        res = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Status} ${Version}", PACKAGE],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:  # not Debian: no dpkg
        return None
    status, _, version = res.stdout.strip().partition(" ")
    if res.returncode != 0 or status != "installed" or not version:
        return None
    return version


def ns3_libs() -> list[str]:
    """-l flags for MODULES, named as the installed libraries are.

    Debian names them libns3-<module>.so; an upstream install
    libns3.<ver>-<module>-<profile>.so. Both are found from the core
    library's name."""
    for pattern in (
        "/usr/lib/*/libns3*-core*.so",
        "/usr/lib/libns3*-core*.so",
        "/usr/local/lib/libns3*-core*.so",
    ):
        found = sorted(glob.glob(pattern))
        if found:
            name = Path(found[0]).name[len("lib") : -len(".so")]  # ns3-core, ns3.37-core-optimized
            head, tail = name.split("core", 1)
            return [f"-l{head}{m}{tail}" for m in MODULES]
    fail(f"ns-3's libraries not found; install them: {INSTALL_HINT}", 2)
    raise AssertionError  # unreachable


def build(version: str) -> Path:
    """The dumbbell binary, compiled unless the cache has this build."""
    cxx = shutil.which("g++")
    if cxx is None:
        fail("g++ not found; install it: apt-get install -y g++", 2)
    if not Path("/usr/include/ns3/core-module.h").exists():
        fail(f"ns-3's headers (/usr/include/ns3) not found; install them: {INSTALL_HINT}", 2)
    src = SOURCE.read_bytes()
    cmd = [cxx, *CXXFLAGS, "-I/usr/include", str(SOURCE), "-o", "{out}", *ns3_libs()]
    digest = hashlib.sha256(src + "\0".join(cmd).encode() + version.encode()).hexdigest()[:16]
    binary = CACHE / f"dumbbell-{digest}"
    if binary.exists():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_name(f".{binary.name}.{os.getpid()}")
    print(f"compiling {SOURCE.relative_to(ROOT)} -> {binary.relative_to(ROOT)}", file=sys.stderr)
    res = subprocess.run([str(tmp) if a == "{out}" else a for a in cmd], capture_output=True, text=True)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        sys.stderr.write(res.stderr[-4000:])
        fail("compiling dumbbell.cc failed")
    tmp.replace(binary)
    for old in CACHE.glob("dumbbell-*"):  # builds of an older source or package
        if old != binary:
            old.unlink(missing_ok=True)
    return binary


@dataclass
class Timed:
    wall_s: float
    cpu_s: float
    stdout: str


def run_timed(cmd: list[str], what: str) -> Timed:
    """Run cmd to completion; its wall time, and its CPU time from its rusage
    (wait4: this child's own, with the children it waited for). Not its peak
    memory: Linux keeps in ru_maxrss the parent's, which the child had
    before its exec."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.stderr.write(stderr[-4000:])
        fail(f"{what} exited with status {proc.returncode}: {' '.join(cmd)}")
    return Timed(wall, ru.ru_utime + ru.ru_stime, stdout)


def toml_for(sc: Scenario, duration_s: float) -> str:
    return "\n".join(
        [
            f'name = "ns3-compare-{sc.key}"',
            f'duration = "{duration_s:g}s"',
            "seed = 1",
            "",
            "[bottleneck]",
            f'rate = "{sc.rate}"',
            'buffer = "1BDP"',
            'qdisc = "taildrop"',
            "",
            "[path]",
            f'rtt = "{sc.rtt_ms}ms"',
            "",
            "[[flows]]",
            f'cc = "{sc.cc}"',
            f"count = {sc.flows}",
            "",
        ]
    )


@dataclass
class Result:
    label: str
    cca: Timed
    cca_pkts: int
    cca_drops: int
    cca_goodput_mbps: float
    ns3: Timed
    ns3_pkts: int
    ns3_drops: int
    ns3_goodput_mbps: float


def run_scenario(sc: Scenario, duration_s: float, binary: Path, tmp: Path) -> Result:
    import pyarrow.parquet as pq

    d = tmp / sc.key
    d.mkdir()
    toml = d / "scenario.toml"
    toml.write_text(toml_for(sc, duration_s))
    out = d / "ccarena"
    cmd = [sys.executable, "-m", "ccarena", "run", str(toml), "--out", str(out), "--no-figure", "--yes"]
    cca = run_timed(cmd, "ccarena")
    resolved = json.loads((out / "scenario.json").read_text())
    stats, scen = resolved["run_stats"], resolved["scenario"]
    if stats["sim_time_ns"] != round(duration_s * 1e9):
        fail(f"{sc.key}: ccarena simulated {stats['sim_time_ns']} ns, not {duration_s} s")
    limit = scen["bottleneck"]["limit"]
    if "bytes" not in limit:
        fail(f"{sc.key}: ccarena's buffer is not in bytes: {limit}")
    flow = scen["flows"][0]
    if flow["fwd_delay_ns"] != flow["rev_delay_ns"]:
        fail(f"{sc.key}: the RTT is not split equally; dumbbell.cc puts half on each way")
    summary = pq.read_table(out / "summary.parquet").to_pylist()[0]
    flows = pq.read_table(out / "flows.parquet", columns=["bytes_acked"]).column("bytes_acked").to_pylist()

    ns3_cmd = [
        str(binary),
        f"--flows={sc.flows}",
        f"--cc={sc.ns3_cc}",
        f"--rate={scen['bottleneck']['rate_bps']}bps",
        f"--accessRate={flow['access_rate_bps']}bps",
        f"--rtt={flow['fwd_delay_ns'] + flow['rev_delay_ns']}ns",
        f"--bufferBytes={limit['bytes']}",
        f"--duration={duration_s:g}s",
        f"--mss={flow['mss']}",
        f"--initCwnd={flow['init_cwnd']}",
    ]
    ns3 = run_timed(ns3_cmd, "ns-3 dumbbell")
    kv = dict(line.split("=", 1) for line in ns3.stdout.splitlines() if "=" in line)
    if abs(float(kv["sim_time_s"]) - duration_s) > 1e-6:
        fail(f"{sc.key}: ns-3 simulated {kv['sim_time_s']} s, not {duration_s} s")
    return Result(
        label=sc.label(duration_s),
        cca=cca,
        cca_pkts=int(stats["bottleneck_packets"]),
        cca_drops=int(summary["drops"]),
        cca_goodput_mbps=sum(flows) * 8 / duration_s / 1e6,
        ns3=ns3,
        ns3_pkts=int(kv["bottleneck_packets"]),
        ns3_drops=int(kv["bottleneck_drops"]),
        ns3_goodput_mbps=int(kv["goodput_bytes"]) * 8 / duration_s / 1e6,
    )


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every duration divided by 10 (for testing)")
    ap.add_argument(
        "--scenarios",
        help="comma-separated subset of: " + ", ".join(s.key for s in SCENARIOS) + " (default: all)",
    )
    args = ap.parse_args()

    chosen = SCENARIOS
    if args.scenarios:
        keys = [k.strip() for k in args.scenarios.split(",") if k.strip()]
        known = {s.key: s for s in SCENARIOS}
        unknown = [k for k in keys if k not in known]
        if unknown:
            ap.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        chosen = [known[k] for k in keys]

    version = ns3_version()
    if version is None:
        fail(f"ns-3 is not installed; install it with: {INSTALL_HINT}", 2)
    binary = build(version)

    results = []
    with tempfile.TemporaryDirectory(prefix="ns3-compare-") as tmp:
        startup = run_scenario(STARTUP, STARTUP.duration_s, binary, Path(tmp))
        for sc in chosen:
            duration = sc.duration_s / 10 if args.quick else sc.duration_s
            print(f"running {sc.label(duration)} ...", file=sys.stderr, flush=True)
            results.append(run_scenario(sc, duration, binary, Path(tmp)))

    print(
        f"ccarena vs ns-3 (Debian {PACKAGE} {version}; dumbbell.cc built with g++ {' '.join(CXXFLAGS)})"
        + (", --quick: durations / 10" if args.quick else "")
    )
    print("whole processes, run one after the other; ns/pkt = wall time per bottleneck packet")
    print()
    rows = []
    for r in results:
        rows.append(
            [
                r.label,
                f"{r.cca.wall_s:.2f}",
                f"{r.cca.cpu_s:.2f}",
                f"{r.ns3.wall_s:.2f}",
                f"{r.ns3.cpu_s:.2f}",
                f"{r.ns3.wall_s / r.cca.wall_s:.1f}x",
                f"{r.cca_pkts:,}",
                f"{r.ns3_pkts:,}",
                f"{r.cca.wall_s * 1e9 / max(r.cca_pkts, 1):,.0f}",
                f"{r.ns3.wall_s * 1e9 / max(r.ns3_pkts, 1):,.0f}",
            ]
        )
    print(
        table(
            [
                "scenario",
                "ccarena wall s",
                "ccarena CPU s",
                "ns-3 wall s",
                "ns-3 CPU s",
                "ns-3/ccarena (wall)",
                "ccarena pkts",
                "ns-3 pkts",
                "ccarena ns/pkt",
                "ns-3 ns/pkt",
            ],
            rows,
        )
    )
    print()
    print(
        f"fixed cost of one process ({startup.label}): ccarena {startup.cca.wall_s:.2f} s wall, "
        f"{startup.cca.cpu_s:.2f} s CPU; ns-3 {startup.ns3.wall_s:.2f} s wall, {startup.ns3.cpu_s:.2f} s CPU"
    )
    print()
    print(f"what each simulated (ns-3 {version}):")
    print()
    print(
        table(
            [
                "scenario",
                "ccarena drops",
                "ns-3 drops",
                "ccarena goodput Mbit/s",
                "ns-3 goodput Mbit/s",
            ],
            [
                [
                    r.label,
                    f"{r.cca_drops:,}",
                    f"{r.ns3_drops:,}",
                    f"{r.cca_goodput_mbps:.1f}",
                    f"{r.ns3_goodput_mbps:.1f}",
                ]
                for r in results
            ],
        )
    )


if __name__ == "__main__":
    main()
