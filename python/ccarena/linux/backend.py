"""One scenario on real Linux TCP: namespaces, the user-space bottleneck,
the traffic generator, and the result tables.

The order of a run:

1. Preflight: root, ``ip netns``, ethtool, the ``ccarena-bottleneck``
   binary, and that every flow can be run by this kernel (otherwise
   ``LinuxBackendError``, exit status 2 on the command line, nothing built).
2. Build the namespaces (``netns.Topology``), start the bottleneck in the
   router namespace and the receiver in the receivers' namespace, both told
   the run's time zero (CLOCK_MONOTONIC, a little in the future); once both
   are ready, start the sender.
3. Wait for the duration, then stop everything and read what each process
   wrote; build the same tables as the simulator (``tables.py``), with the
   self-checks; write the run directory through the store.
4. Always (success, error, SIGINT, SIGTERM): kill the processes, delete the
   namespaces and the scratch directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import LinuxBackendError, LinuxNotAvailable, LinuxUnsupported
from ..interrupt import SignalGuard, deferred
from ..results import Results
from ..scenario import Scenario
from ..stats import turnaround_median
from ..store import DEFAULT_ROOT, capture_files, capture_meta, check_target, new_kernel_run_dir, write_run
from ..version import __version__
from . import capture, cpu, netns
from .gen import mixed_routes
from .gen import revision as generator_revision
from .host import ccarena_commit, host_info, utc_now
from .modules import KERNEL_CC
from .netns import Topology
from .tables import build_tables, self_check
from .testbeds import DEFAULT_TESTBED, TESTBEDS

__all__ = [
    "BACKEND",
    "FAKE_NONROOT_ENV",
    "KERNEL_CC",
    "LinuxBackendError",
    "LinuxNotAvailable",
    "LinuxUnsupported",
    "execute",
    "find_bottleneck",
    "preflight",
    "traffic_progress",
]

BACKEND = "linux"
PORT_BASE = 35000
# Test-only: when set to 1, the backend behaves as if it were not root
# (tests/test_linux.py uses it where it cannot drop privileges).
FAKE_NONROOT_ENV = "CCARENA_TEST_FAKE_NONROOT"
BOTTLENECK_ENV = "CCARENA_BOTTLENECK"
BOTTLENECK_BIN = "ccarena-bottleneck"
STARTUP_S = 1.5

# SO_MAX_PACING_RATE values: ~0 means "no limit" and leaves pacing to fq;
# any other value makes TCP pace internally (SK_PACING_NEEDED).
PACING_UNLIMITED_BUT_ON = (1 << 64) - 2
DEFAULT_MSS = 1448
TCP_TIMESTAMP_OPT = 12


#: Bytes a full data frame carries besides its payload: Ethernet 14, IPv4
#: 20, TCP 20 and its timestamp option 12 (the simulator's ``wire_len``).
FRAME_OVERHEAD = 66


def _payload_rate(max_rate_bps: int, mss: int) -> int:
    """A flow's ``max_rate`` (sch_fq's ``maxrate``: frames, headers and all,
    ``qdisc_pkt_len``) as ``SO_MAX_PACING_RATE`` must say it: TCP's internal
    pacing, which stands in for sch_fq here, counts only the payload
    (``tcp_update_skb_after_send`` divides ``skb->len`` of the unsent buffer
    by the rate). Measured: 20 Mbit/s given as is paced 19.82 Mbit/s of
    goodput, against the simulator's sch_fq 18.97 (1448/1514 of 20)."""
    return max_rate_bps * mss // (mss + FRAME_OVERHEAD)


def _is_root() -> bool:
    if os.environ.get(FAKE_NONROOT_ENV) == "1":
        return False
    return os.geteuid() == 0


def find_bottleneck() -> Path:
    """The ``ccarena-bottleneck`` program: ``$CCARENA_BOTTLENECK``, then the
    console script installed with this package (beside this interpreter's
    ``ccarena``), then PATH, then ``target/release`` of a ccarena source
    tree above the current directory or this package."""
    env = os.environ.get(BOTTLENECK_ENV)
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return p.resolve()
        raise LinuxNotAvailable(f"${BOTTLENECK_ENV}={env}: not an executable file")
    script = Path(sysconfig.get_path("scripts")) / BOTTLENECK_BIN
    if script.is_file() and os.access(script, os.X_OK):
        return script
    found = shutil.which(BOTTLENECK_BIN)
    if found:
        return Path(found).resolve()
    starts = [Path.cwd(), Path(__file__).resolve().parent]
    for start in starts:
        for d in [start, *start.parents]:
            cand = d / "target" / "release" / BOTTLENECK_BIN
            if (d / "crates" / "emu" / "Cargo.toml").is_file() and cand.is_file():
                return cand
    raise LinuxNotAvailable(
        f"{BOTTLENECK_BIN} not found: it comes with `pip install ccarena` (a console script "
        f"beside `ccarena`); or build it with `cargo build --release -p ccarena-emu` "
        f"(or set ${BOTTLENECK_ENV})"
    )


def _as_root() -> str:
    """This very command under sudo, by full path: sudo's own PATH
    (``secure_path``) leaves out a virtualenv's ``bin``, so a bare ``sudo
    ccarena`` finds no ccarena, or another one."""
    argv = list(sys.argv)
    if not argv or not argv[0] or Path(argv[0]).name in ("__main__.py", "-c"):
        head = [sys.executable, "-m", "ccarena"]
    else:
        head = [str(Path(shutil.which(argv[0]) or argv[0]).absolute())]
    cmd = head + argv[1:] if argv and Path(argv[0]).name != "-c" else [*head, "..."]
    return "sudo " + shlex.join(cmd)


def preflight() -> Path:
    """Check that the Linux backend can run here; returns the bottleneck binary."""
    if sys.platform != "linux":
        raise LinuxNotAvailable("the Linux backend needs Linux")
    if not _is_root():
        raise LinuxNotAvailable(
            f"the Linux backend must run as root (it creates network namespaces); try: {_as_root()}"
        )
    for tool in ("ip", "ethtool", "sysctl"):
        if shutil.which(tool) is None:
            raise LinuxNotAvailable(f"{tool} not found: install iproute2, ethtool and procps")
    # The probe namespace is owned and removed like a run's (a signal here
    # must not leave it behind).
    owner: netns.Owner | None = None
    with SignalGuard(
        lambda: netns.remove_prefix(owner.prefix) if owner is not None else None,
        lambda: owner.release() if owner is not None else None,
    ):
        # A signal waits until `owner` holds the lock it creates (else
        # the clean-up would not know of the lock).
        with deferred():
            owner = netns.Owner()
        cp = netns.run(["ip", "netns", "add", f"{owner.prefix}-rtr"], check=False)
        if cp.returncode != 0:
            msg = (cp.stderr or cp.stdout).strip()
            raise LinuxNotAvailable(f"network namespaces are not available here: {msg}")
    return find_bottleneck()


def _available_cc() -> set[str]:
    try:
        text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        return set()
    return set(text.split())


def plan(scn: Scenario) -> tuple[list[dict[str, Any]], list[str]]:
    """The generator's flow specs and the notes on what the kernel does
    differently from what the scenario asks; raises ``LinuxBackendError`` for
    what cannot be run at all."""
    n = scn.normalized
    notes: list[str] = []
    avail = _available_cc()
    flows = []
    fq_warned = none_warned = False
    for f in n["flows"]:
        at = f"flows[{f['group']}]"
        cc = f["cc"]
        kernel = KERNEL_CC.get(cc)
        if kernel is None:
            raise LinuxUnsupported(
                f"{at}.cc: {cc!r} has no kernel module the Linux backend can use "
                f"(available: {', '.join(sorted(KERNEL_CC))})"
            )
        if avail and kernel not in avail:
            raise LinuxUnsupported(
                f"{at}.cc: this kernel has no {kernel!r} (tcp_available_congestion_control: "
                f"{' '.join(sorted(avail))}); try `modprobe tcp_{kernel}`"
            )
        raw_group = (scn.raw.get("flows") or [{}])[f["group"]]
        if raw_group.get("cc_params"):
            raise LinuxUnsupported(
                f"{at}.cc_params: the Linux backend cannot set an algorithm's parameters per flow "
                "(kernel module parameters are global); remove cc_params"
            )
        pacing = f.get("pacing") or {}
        mode = pacing.get("mode", "fq")
        max_rate = pacing.get("max_rate_bps")
        if max_rate:
            max_rate = _payload_rate(max_rate, int(f.get("mss", DEFAULT_MSS)))
        so_max = None
        if mode == "fq":
            so_max = max_rate // 8 if max_rate else PACING_UNLIMITED_BUT_ON
            if not fq_warned:
                notes.append(
                    'pacing = "fq": this kernel has no sch_fq; TCP\'s internal pacing stands in for it '
                    "(SO_MAX_PACING_RATE turns it on for every algorithm, at sk_pacing_rate"
                    + (", capped at max_rate" if max_rate else "")
                    + ")"
                )
                fq_warned = True
        elif mode == "internal":
            if max_rate:
                so_max = max_rate // 8
        elif mode == "none" and kernel == "bbr" and not none_warned:
            notes.append('pacing = "none": Linux BBR always paces itself; it is paced here')
            none_warned = True
        if f.get("chunks"):
            raise LinuxUnsupported(
                f"{at}: trace replay (chunks) is not supported by the Linux backend's traffic generator"
            )
        mss = int(f.get("mss", DEFAULT_MSS))
        if mss > DEFAULT_MSS:
            raise LinuxUnsupported(
                f"{at}.mss: {mss} does not fit the veths' 1500-byte MTU (at most {DEFAULT_MSS})"
            )
        flows.append(
            {
                "id": f["id"],
                "port": PORT_BASE + f["id"],
                "cc": kernel,
                "start_ns": f["start_ns"],
                "size": f.get("size_bytes"),
                "stop_ns": f.get("stop_ns"),
                "max_pacing_rate": so_max,
                "user_mss": mss + TCP_TIMESTAMP_OPT if mss < DEFAULT_MSS else None,
                "rcvbuf": f.get("rwnd_bytes"),
                "after": f.get("after"),
            }
        )
    capture.check(n)
    if any(f.get("rwnd_bytes") for f in n["flows"]):
        notes.append(
            "rwnd: the receiver's buffer is locked to it and the bottleneck clamps the windows "
            "it advertises to it (Linux advertises up to 1.24x the buffer's rwnd)"
        )
    access = {f.get("access_rate_bps") for f in n["flows"]}
    if access != {40_000_000_000}:
        notes.append("access_rate is not emulated: the veths are the access links")
    return flows, notes


def _cpu_plan() -> tuple[int | None, list[int]]:
    """The bottleneck gets the last CPU we may use; the hosts' TCP receive
    processing (RPS) and the traffic generators get the others. With one
    CPU, nothing is pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, []
    return cpus[-1], cpus[:-1]


def _host_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def kernel_version() -> str:
    return platform.release()


class _Procs:
    """The processes of one run, killed on exit whatever happens."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], log: Path) -> subprocess.Popen:
        # Started and recorded with the signals deferred: an interrupt in
        # between would leave a process nobody kills (netns.run).
        with open(log, "wb") as lf, deferred():
            p = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True
            )
            self.procs[name] = p
        return p

    def stop(self, name: str, timeout: float = 5.0) -> int | None:
        p = self.procs.get(name)
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                # Timed, never an untimed wait: an interrupt that landed
                # inside an earlier wait can leave its lock taken
                # (netns.run), and the clean-up must not block on it. A
                # killed child not reaped here is a zombie until exit.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5.0)
        return p.returncode

    def kill_all(self) -> None:
        for name in list(self.procs):
            self.stop(name, timeout=2.0)


def _wait_for(path: Path, until_ns: int, procs: _Procs) -> bool:
    while time.monotonic_ns() < until_ns:
        if path.exists():
            return True
        for name, p in procs.procs.items():
            if p.poll() is not None:
                raise LinuxBackendError(f"{name} exited early (status {p.returncode})")
        time.sleep(0.01)
    return path.exists()


def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def traffic_progress(now_ns: int, t0_ns: int, duration_ns: int, began_ns: int) -> str:
    """The progress line of a run at ``now_ns`` (CLOCK_MONOTONIC, as the
    others): how far its traffic is, which starts at ``t0_ns`` and lasts
    ``duration_ns``, and the wall time since the run began (``began_ns``:
    namespaces, start-up and collecting the results count too), e.g.
    "traffic: 3.2 of 15 s, 5.4 s elapsed"."""
    elapsed = f"{max(now_ns - began_ns, 0) / 1e9:.1f} s elapsed"
    total = f"{duration_ns / 1e9:g}"
    if now_ns < t0_ns:
        return f"traffic starts in {(t0_ns - now_ns) / 1e9:.1f} s (for {total} s), {elapsed}"
    if now_ns - t0_ns < duration_ns:
        return f"traffic: {(now_ns - t0_ns) / 1e9:.1f} of {total} s, {elapsed}"
    return f"traffic: {total} of {total} s, collecting the results, {elapsed}"


def run_in_namespaces(
    scn: Scenario,
    workdir: Path,
    topo: Topology,
    procs: _Procs,
    binary: Path,
    *,
    progress: Callable[[str], None] | None = None,
    spin_us: float | None = None,
    batch_us: float | None = None,
    realtime: bool = True,
    frame_trace: Path | None = None,
) -> dict[str, Any]:
    """Build and run one run in ``topo``'s namespaces; returns what the
    processes wrote. The caller removes ``topo``, ``procs`` and ``workdir``
    whatever happens (``execute``)."""
    say = progress or (lambda m: None)
    began = time.monotonic_ns()
    flows, notes = plan(scn)
    n = scn.normalized
    duration_ns = int(n["duration_ns"])
    (workdir / "scenario.json").write_text(scn.core_json, encoding="utf-8")
    say(f"building namespaces {topo.prefix}-snd|rtr|rcv")
    # Flows that differ in ECN or initial window get a route each (both are
    # route attributes; gen.REVISION 6); alike, one for all.
    mixed = mixed_routes(n)
    sender_sysctls = {
        "net.ipv4.tcp_no_metrics_save": "1",
        "net.ipv4.tcp_wmem": "4096 16384 67108864",
        "net.ipv4.tcp_ecn": "1" if any(f.get("ecn") for f in n["flows"]) and not mixed else "0",
    }
    receiver_sysctls = {
        "net.ipv4.tcp_no_metrics_save": "1",
        "net.ipv4.tcp_rmem": "4096 131072 67108864",
    }
    topo.build(sender_sysctls=sender_sysctls, receiver_sysctls=receiver_sysctls)
    if mixed:
        topo.set_flow_routes(
            [(PORT_BASE + f["id"], int(f.get("init_cwnd", 10)), bool(f.get("ecn"))) for f in n["flows"]]
        )
    else:
        init = int(n["flows"][0].get("init_cwnd", 10))
        if init != 10:
            topo.set_initcwnd(init)
    bn_cpu, other_cpus = _cpu_plan()
    if other_cpus:
        topo.steer_host_rx(other_cpus)
    t0 = time.monotonic_ns() + int(STARTUP_S * 1e9)
    gen_cfg = {
        "t0_ns": t0,
        "duration_ns": duration_ns,
        "interval_ns": int(n["sample_interval_ns"]),
        "dst": netns.RECEIVER_ADDR,
        "flows": flows,
        "cpus": other_cpus,
    }
    (workdir / "gen.json").write_text(json.dumps(gen_cfg), encoding="utf-8")
    # The run's clock (t0, CLOCK_MONOTONIC) on tcpdump's (CLOCK_REALTIME).
    origin_realtime_ns = t0 + time.time_ns() - time.monotonic_ns()
    taps = capture.start(n, topo, procs, workdir, PORT_BASE)
    bn_dir = workdir / "bottleneck"
    bn_dir.mkdir()
    procs.start(
        "bottleneck",
        topo.exec_args(
            topo.rtr,
            str(binary),
            "--scenario",
            str(workdir / "scenario.json"),
            "--if-senders",
            netns.ROUTER_IF_SND,
            "--if-receivers",
            netns.ROUTER_IF_RCV,
            "--port-base",
            str(PORT_BASE),
            "--t0-ns",
            str(t0),
            "--stop-after-s",
            str(duration_ns / 1e9 + 20),
            "--out",
            str(bn_dir),
            *(["--cpu", str(bn_cpu)] if bn_cpu is not None else []),
            *(["--spin-us", f"{float(spin_us):g}"] if spin_us is not None else []),
            *(["--batch-us", f"{float(batch_us):g}"] if batch_us is not None else []),
            *(["--trace"] if frame_trace is not None else []),
            *([] if realtime else ["--no-realtime"]),
        ),
        workdir / "bottleneck.log",
    )
    gen = str(Path(__file__).resolve().parent / "gen.py")
    py = sys.executable
    procs.start(
        "receiver",
        topo.exec_args(topo.rcv, py, "-u", gen, "receiver", str(workdir / "gen.json"), str(workdir)),
        workdir / "receiver.log",
    )
    ready_by = t0 - int(0.2e9)
    if not _wait_for(bn_dir / "ready", ready_by, procs) or not _wait_for(
        workdir / "receiver.ready", ready_by, procs
    ):
        raise LinuxBackendError(
            "the bottleneck or the receiver was not ready in time: "
            + _tail(workdir / "bottleneck.log")
            + " "
            + _tail(workdir / "receiver.log")
        )
    procs.start(
        "sender",
        topo.exec_args(topo.snd, py, "-u", gen, "sender", str(workdir / "gen.json"), str(workdir)),
        workdir / "sender.log",
    )
    cpu0 = _host_cpu()
    procs0 = cpu.snapshot()
    end = t0 + duration_ns
    shown = ""
    while (now := time.monotonic_ns()) < end + int(0.8e9):
        line = traffic_progress(now, t0, duration_ns, began)
        if line != shown:
            say(line)
            shown = line
        for name, p in procs.procs.items():
            if p.poll() is not None and p.returncode != 0:
                raise LinuxBackendError(
                    f"{name} failed (status {p.returncode}): {_tail(workdir / f'{name}.log')}"
                )
        time.sleep(0.05)
    say(traffic_progress(time.monotonic_ns(), t0, duration_ns, began))
    cpu1 = _host_cpu()
    procs1 = cpu.snapshot()
    for name in ("sender", "receiver"):
        p = procs.procs[name]
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            procs.stop(name)
    procs.stop("bottleneck", timeout=10)
    out: dict[str, Any] = {
        "notes": notes,
        "prefix": topo.prefix,
        "t0_ns": t0,
        "bottleneck_program": str(binary),
        "captures": capture.finish(taps, procs, origin_realtime_ns, kernel_version()),
    }
    for name, f in (("sender", "sender.json"), ("receiver", "receiver.json"),
                    ("bottleneck", "bottleneck/stats.json")):  # fmt: skip
        path = workdir / f
        if not path.is_file():
            raise LinuxBackendError(f"the {name} wrote no results: {_tail(workdir / f'{name}.log')}")
        out[name] = json.loads(path.read_text(encoding="utf-8"))
    out["queue_csv"] = (bn_dir / "queue.csv").read_text(encoding="utf-8")
    out["flow_queue_csv"] = (bn_dir / "flow_queue.csv").read_text(encoding="utf-8")
    busy = cpu1[0] - cpu0[0]
    total = cpu1[1] - cpu0[1]
    out["host_cpu_busy"] = busy / total if total > 0 else float("nan")
    out["others_cpu_share"] = cpu.others_share(procs0, procs1)
    out["ncpu"] = os.cpu_count() or 1
    return out


def run_meta(
    scn: Scenario, raw: dict[str, Any], check: dict[str, Any], started_utc: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "backend": BACKEND,
        "ccarena_version": __version__,
        "hash": scn.hash,
        "scenario": scn.normalized,
        "kernel": kernel_version(),
        "linux": {
            "kernel": kernel_version(),
            # Which kernel testbed (testbeds.py): this one's bottleneck is in user space.
            "testbed": DEFAULT_TESTBED,
            # Where, when and with what the run was made (a kernel run
            # cannot be made again: its record says what would be needed).
            "started_utc": started_utc,
            "host": host_info(),
            "ccarena_commit": ccarena_commit(),
            # The traffic generator's revision for this scenario (gen.revision).
            "generator": generator_revision(scn.normalized),
            "notes": raw["notes"],
            "bottleneck": raw["bottleneck_program"],
            "trustworthy": check["trustworthy"],
            "warnings": check["warnings"],
            "self_check": check["values"],
            "thresholds": check["thresholds"],
            # The hosts' turnarounds the bottleneck measured, us at the
            # simulator's percentiles (`[hosts] latency`'s table).
            "turnarounds": raw["bottleneck"].get("turnarounds"),
            # ACKs whose advertised window the bottleneck clamped to their
            # flow's rwnd (gen.REVISION 3; Linux advertises more).
            "windows_clamped": raw["bottleneck"].get("windows_clamped", 0),
            # When each flow's kernel counts (tcp_info) were read, s from the
            # run's start: a capture goes on until the socket closes.
            "counts_read_s": {str(f["flow"]): f.get("final_s") for f in raw["sender"]["flows"]},
            # The senders' namespace's TcpExt counters that moved during the
            # run, over all its flows (nstat's names: TCPHystartTrainDetect,
            # TCPHystartDelayCwnd, TCPSackRecovery, TCPTimeouts, ...).
            "tcpext": raw["sender"].get("netstat", {}),
        },
        "run_stats": {
            "bottleneck_packets": int(raw["bottleneck"]["bottleneck"]["departures"]),
            "frames_forwarded": int(raw["bottleneck"]["frames_sent"]),
        },
    }
    if raw.get("captures"):
        meta["captures"] = [
            {**m, "dropped_by_kernel": int(c["dropped_by_kernel"])}
            for m, c in zip(capture_meta(raw["captures"]), raw["captures"], strict=True)
        ]
    return meta


def execute(
    scn: Scenario,
    out: str | Path | None = None,
    *,
    root: str | Path = DEFAULT_ROOT,
    figure: bool = False,
    progress: Callable[[str], None] | None = None,
    spin_us: float | None = None,
    batch_us: float | None = None,
    realtime: bool = True,
    frame_trace: str | Path | None = None,
    testbed: str = DEFAULT_TESTBED,
) -> Results:
    """Run ``scn`` on the Linux backend and write its run directory: ``out``
    exactly (new, or empty), or a new ``<root>/<scenario name>/<hash>-linux-<UTC time>``
    (``store.new_kernel_run_dir``): a kernel run never replaces another. ``spin_us`` and
    ``batch_us`` tune the bottleneck's release loop (see
    ``ccarena-bottleneck --help``; defaults there); ``realtime=False`` keeps
    it off SCHED_FIFO. ``frame_trace``: copy the bottleneck's per-frame
    log (``ccarena-bottleneck --trace``) to this file, for measuring host
    timing (``scripts/host_latency.py``). ``testbed``: ``"bridge-tbf"`` makes
    the run on the second testbed (``bridge.py``: bridges, the kernel's tbf,
    iperf3), which takes none of the bottleneck's tuning."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed: {testbed!r}: expected one of {', '.join(TESTBEDS)}")
    if testbed != DEFAULT_TESTBED:
        if spin_us is not None or batch_us is not None or frame_trace is not None:
            raise ValueError(
                f"testbed {testbed}: spin_us, batch_us and frame_trace are the user-space bottleneck's"
            )
        from . import bridge

        return bridge.execute(scn, out, root=root, figure=figure, progress=progress, realtime=realtime)
    for name, v in (("spin_us", spin_us), ("batch_us", batch_us)):
        if v is not None and not (0 <= float(v) <= 10_000):
            raise ValueError(f"{name}: {v!r} is outside 0..10000 us")
    # Root, namespaces and the tools first (one line when not: nothing made
    # yet, not even the lock directory); then the output directory, which
    # must not hold an earlier kernel run or the user's files.
    binary = preflight()
    started = utc_now()
    plan(scn)
    target = Path(out) if out is not None else new_kernel_run_dir(scn.name, scn.short_hash, root)
    check_target(target)
    from ..plots.timeseries import FIGURE_NAME, plot_run

    # Everything the run creates (lock, work directory, namespaces,
    # processes) is removed as the guard's block ends, which a signal
    # cannot interrupt (``interrupt.SignalGuard``); SIGINT/SIGTERM/SIGHUP
    # end the run with ``Interrupted`` (exit 128 + signal).
    owner: netns.Owner | None = None
    workdir: Path | None = None
    procs = _Procs()
    topo: Topology | None = None
    with SignalGuard(
        lambda: progress("removing namespaces") if progress is not None else None,
        procs.kill_all,
        lambda: topo.destroy() if topo is not None else None,
        lambda: shutil.rmtree(workdir, ignore_errors=True) if workdir is not None else None,
        lambda: owner.release() if owner is not None else None,
    ):
        with deferred():  # as in `preflight`
            owner = netns.Owner()
        workdir = owner.workdir()
        topo = Topology(owner.prefix)
        raw = run_in_namespaces(
            scn,
            workdir,
            topo,
            procs,
            binary,
            progress=progress,
            spin_us=spin_us,
            batch_us=batch_us,
            realtime=realtime,
            frame_trace=Path(frame_trace) if frame_trace is not None else None,
        )
        if frame_trace is not None:
            shutil.copyfile(workdir / "bottleneck" / "frames.csv", frame_trace)
    tables = build_tables(scn.normalized, raw)
    check = self_check(scn.normalized, raw)
    summary = tables["summary"]
    import pyarrow as pa

    tables["summary"] = summary.append_column("trustworthy", pa.array([check["trustworthy"]])).append_column(
        "warnings", pa.array(["; ".join(check["warnings"])])
    )
    # The hosts' median turnarounds as the bottleneck measured them (the
    # simulator's [hosts] latency; informational, not a self-check).
    turnarounds = raw["bottleneck"].get("turnarounds") or {}
    host = {
        f"host_{side}_p50_us": turnaround_median(turnarounds.get(f"{side}_us"))
        for side in ("sender", "receiver")
    }
    for k, v in {**check["values"], **host}.items():
        x = float("nan") if v is None else float(v)
        tables["summary"] = tables["summary"].append_column(k, pa.array([x], pa.float64()))
    meta = run_meta(scn, raw, check, started)
    results = Results.from_arrow(tables, meta)

    def draw(tmp: Path) -> None:
        plot_run(results, tmp / FIGURE_NAME)

    write_run(target, meta, tables, draw if figure else None, capture_files(raw.get("captures", [])))
    results.path = target
    return results
