"""The traffic generator of the Linux backend: ``gen.py sender CONFIG`` in
the senders' namespace and ``gen.py receiver CONFIG`` in the receivers'.

Standard library only (it is started as a script, without importing the
``ccarena`` package and its dependencies). Flow ``i`` is one TCP connection
to receiver port ``port_base + i``, which is how the bottleneck tells flows
apart.

Sender: one thread per flow sleeps until the flow's start, opens a socket
with the flow's congestion control (``TCP_CONGESTION``; as root this needs
no entry in ``net.ipv4.tcp_allowed_congestion_control``), pacing
(``SO_MAX_PACING_RATE``, see ``backend.py``) and MSS, connects, and sends
either ``size`` bytes (then waits for the receiver's close: the flow
completion time runs from the SYN to that moment) or bulk data until the
end of the run. A successive flow (``after``) starts its gap after its
predecessor completes. A sampler thread reads ``TCP_INFO`` (and BBR's
``TCP_CC_INFO``) of every open socket at every sampling instant.

Receiver: one listening socket per flow (its ``SO_RCVBUF`` is the flow's
``rwnd``), one thread per connection reading and counting bytes; a sampler
records each flow's byte count at every sampling instant, which gives the
goodput per interval as the simulator defines it (payload received in order).

Both write ``<role>.json`` in the output directory when they stop: at the end
of the run, or on SIGTERM/SIGINT. Times are seconds since the run's time
zero (``t0_ns``, CLOCK_MONOTONIC).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

if __package__:
    from .tcpinfo import read_bbr, read_tcp_info
else:  # started as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tcpinfo import read_bbr, read_tcp_info  # type: ignore[no-redef]

SO_MAX_PACING_RATE = 47
CHUNK = 1 << 20
#: What the generator does to the kernel's traffic, by revision; a kernel
#: run is identified with it (``conformance.kernel_hash``), so a change that
#: alters what the kernel is asked to do re-runs the kernel's side.
#: 1: the send buffer was allocated between connect and the first write.
#: 2: allocated before the start time. Under revision 1 the first data left
#:    0.58 ms after the handshake, and a second flow started with it 0.48 ms
#:    later (the allocation, ~0.4 ms, held the GIL); two CUBIC flows at
#:    100 Mbit/s, 20 ms, then differed in their HyStart exits (cwnd 89 by
#:    delay vs 247 by ACK train, in every run). Revision 2: 0.09 ms, and the
#:    two flows' first writes 0.06-0.07 ms apart (exits at 169 and 248).
#: 3: a flow's ``rwnd`` is enforced on its receiver's advertised windows by
#:    the bottleneck (``ccarena-bottleneck``: ``frame::WindowClamps``). With
#:    the locked buffer alone (``SO_RCVBUFFORCE`` of the ``rwnd``, which the
#:    kernel doubles) Linux 6.18 advertised 1.2-1.24 times the ``rwnd`` once
#:    it had measured the buffer's payload-to-memory ratio (100,000 B: a
#:    window of 124,200 B and 46.9 Mbit/s on a 20 ms path, where 100,000 B a
#:    round trip is 38.8), and ``TCP_WINDOW_CLAMP`` does not hold (the
#:    kernel re-derives the clamp from the buffer). Scenarios without
#:    ``rwnd`` ask the kernel for the same as under revision 2 and keep that
#:    number (``revision``).
#: 4: a flow's pacing ``max_rate`` (sch_fq's ``maxrate``, which counts whole
#:    frames) goes to ``SO_MAX_PACING_RATE`` as its payload rate, mss / (mss
#:    + 66) of it: TCP's internal pacing, which stands in for sch_fq here,
#:    counts payload bytes only (20 Mbit/s paced 19.82 Mbit/s of goodput, the
#:    simulator's sch_fq 18.97; now 18.96). Only scenarios with a
#:    ``max_rate`` take this number.
#: 5: a bulk flow's ``stop`` is kept: its sender stops writing then and
#:    shuts its side down once what it wrote is sent (before, the flow ran
#:    to the end of the run). Only scenarios with a ``stop`` take it.
#: 6: flows that differ in ECN or initial window each get a route of their
#:    own (a policy rule by destination port; ``initcwnd`` and ``features
#:    ecn``); before, all took the largest window and ECN if any asked for
#:    it. Only such scenarios take this number.
REVISION = 6
STOP = threading.Event()


def mixed_routes(normalized: dict[str, Any]) -> bool:
    """Whether the flows differ in ECN or initial window, which Linux takes
    from the route (``initcwnd``, ``features ecn``) or a host-wide sysctl:
    then each flow gets a route of its own (REVISION 6)."""
    flows = normalized.get("flows", [])
    return (
        len({bool(f.get("ecn")) for f in flows}) > 1 or len({int(f.get("init_cwnd", 10)) for f in flows}) > 1
    )


def revision(normalized: dict[str, Any]) -> int:
    """The revision a scenario's kernel run is made under: the last one
    that changed what the kernel is asked to do in it."""
    flows = normalized.get("flows", [])
    if mixed_routes(normalized):
        return 6
    if any(f.get("stop_ns") is not None for f in flows):
        return 5
    if any((f.get("pacing") or {}).get("max_rate_bps") for f in flows):
        return 4
    if any(f.get("rwnd_bytes") for f in flows):
        return 3
    return 2


def _on_signal(signum, frame) -> None:
    STOP.set()


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: SIGTERM when the process that started us dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Clock:
    def __init__(self, t0_ns: int):
        self.t0_ns = t0_ns

    def now(self) -> float:
        """Seconds since time zero."""
        return (time.monotonic_ns() - self.t0_ns) / 1e9

    def sleep_until(self, t: float) -> bool:
        """Sleep until run time ``t``; False if told to stop first."""
        while True:
            left = t - self.now()
            if left <= 0:
                return True
            if STOP.wait(min(left, 0.05)):
                return False


def _usage() -> dict[str, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime}


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _sample_times(cfg: dict[str, Any]) -> list[float]:
    """Sampling instants: every interval up to the duration, plus the end."""
    step, end = cfg["interval_ns"], cfg["duration_ns"]
    times = [k * step / 1e9 for k in range(1, end // step + 1)]
    if not times or times[-1] < end / 1e9:
        times.append(end / 1e9)
    return times


# --------------------------------------------------------------------------- sender


class SenderFlow:
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()
        self.result: dict[str, Any] = {"flow": spec["id"]}
        self.final_info: dict[str, Any] | None = None
        # Set when the flow completes (the receiver closed after the last byte).
        self.done = threading.Event()
        # Set when the flow's thread is past waiting for its start, whatever
        # follows (it started, or the run ended first).
        self.waited = threading.Event()
        self.after: SenderFlow | None = None

    def open_socket(self) -> socket.socket:
        f = self.spec
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, f["cc"].encode())
        if f.get("max_pacing_rate") is not None:
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("Q", int(f["max_pacing_rate"])))
        if f.get("user_mss"):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, int(f["user_mss"]))
        return s

    def run(self, cfg: dict[str, Any], clock: Clock) -> None:
        f = self.spec
        end = cfg["duration_ns"] / 1e9
        # Made before the start time (REVISION 2): allocating 1 MiB takes a
        # few hundred us, which would otherwise sit between connect and the
        # first write and, under the GIL, delay the flows starting with this one.
        buf = memoryview(bytearray(CHUNK))
        try:
            if self.after is not None:
                # A successive flow: gap_ns after its predecessor completes
                # (the wait returns the moment it does). Until the
                # predecessor itself is under way it sleeps without a
                # timeout: a chain of a thousand flows, each waking every
                # 50 ms to see whether the run has ended, kept the sender
                # busy before any traffic.
                self.after.waited.wait()
                while not self.after.done.is_set():
                    if STOP.is_set() or clock.now() >= end:
                        return
                    self.after.done.wait(0.05)
                start = clock.now() + f["after"]["gap_ns"] / 1e9
            else:
                start = f["start_ns"] / 1e9
            if not clock.sleep_until(start) or clock.now() >= end:
                return
            self.waited.set()
            s = self.open_socket()
            self.result["cc_set"] = (
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
            )
            self.result["syn_s"] = clock.now()
            s.settimeout(max(end - clock.now(), 0.1))
            s.connect((cfg["dst"], f["port"]))
            self.result["established_s"] = clock.now()
            with self.lock:
                self.sock = s
            s.settimeout(0.05)
            size = f.get("size")
            sent = 0
            # A bulk flow with `stop` stops writing then (REVISION 5); what
            # it wrote still goes, and it shuts its side down.
            stop = end if f.get("stop_ns") is None else min(end, f["stop_ns"] / 1e9)
            while not STOP.is_set() and clock.now() < stop and (size is None or sent < size):
                n = CHUNK if size is None else min(CHUNK, size - sent)
                if stop < end:
                    s.settimeout(min(0.05, max(stop - clock.now(), 1e-4)))
                try:
                    sent += s.send(buf[:n])
                except TimeoutError:
                    continue
            self.result["bytes_written"] = sent
            stopped = stop < end and clock.now() >= stop
            if stopped:
                self.result["stopped_s"] = clock.now()
                s.settimeout(0.05)
            if (size is not None and sent >= size) or stopped:
                s.shutdown(socket.SHUT_WR)
                # The receiver closes once it has read everything; its FIN
                # arrives right after the ACK of our last byte.
                while not STOP.is_set() and clock.now() < end:
                    try:
                        if s.recv(4096) == b"":
                            self.result["done_s"] = clock.now()
                            self.done.set()
                            break
                    except TimeoutError:
                        continue
            self.snapshot_final(s, clock)
        except OSError as e:
            self.result["error"] = f"{type(e).__name__}: {e}"
        finally:
            self.waited.set()
            with self.lock:
                held, self.sock = self.sock, None
            if held is not None:
                if self.final_info is None:
                    self.snapshot_final(held, clock)
                # An abortive close: the run is over, nothing should linger.
                held.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                held.close()

    def snapshot_final(self, s: socket.socket, clock: Clock) -> None:
        try:
            info = read_tcp_info(s)
            bbr = read_bbr(s) if self.spec["cc"] == "bbr" else None
        except OSError:
            return
        # As a sample row has it: the sampler's last instant is the run's
        # end, when this socket closes, so that row may have to be this.
        self.final_info = {**info, **{f"bbr_{k}": v for k, v in (bbr or {}).items()}}
        self.result["final"] = self.final_info
        # When the counts were read (a capture holds what the kernel sent
        # after, until the socket closes).
        self.result["final_s"] = clock.now()

    def sample(self) -> tuple[dict[str, Any], dict[str, float] | None] | None:
        with self.lock:
            s = self.sock
            if s is None:
                return None
            try:
                info = read_tcp_info(s)
                bbr = read_bbr(s) if self.spec["cc"] == "bbr" else None
            except OSError:
                return None
        return info, bbr


def _netstat() -> dict[str, int]:
    """The senders' namespace's TcpExt counters (/proc/net/netstat is per
    network namespace): HyStart's detections, recoveries, timeouts, ..."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            return {k: int(v) for k, v in zip(names.split()[1:], values.split()[1:], strict=False)}
    return {}


def run_sender(cfg: dict[str, Any], out: Path) -> None:
    netstat0 = _netstat()
    clock = Clock(cfg["t0_ns"])
    flows = [SenderFlow(f) for f in cfg["flows"]]
    for fl in flows:
        if fl.spec.get("after"):
            fl.after = flows[fl.spec["after"]["flow"]]
    threads = [threading.Thread(target=fl.run, args=(cfg, clock), daemon=True) for fl in flows]
    for t in threads:
        t.start()
    samples: list[dict[str, Any]] = []
    for t_s in _sample_times(cfg):
        if not clock.sleep_until(t_s):
            break
        for fl in flows:
            got = fl.sample()
            if got is None:
                continue
            info, bbr = got
            row = {"time_s": t_s, "flow": fl.spec["id"], "at_s": clock.now(), **info}
            if bbr is not None:
                row.update({f"bbr_{k}": v for k, v in bbr.items()})
            samples.append(row)
    STOP.set()
    for t in threads:
        t.join(timeout=2.0)
    netstat = {k: v - netstat0.get(k, 0) for k, v in _netstat().items()}
    _write_json(
        out / "sender.json",
        {
            "flows": [fl.result for fl in flows],
            "samples": samples,
            # The counters that moved during the run, summed over its flows.
            "netstat": {k: v for k, v in netstat.items() if v},
            **_usage(),
            "wall_s": clock.now(),
        },
    )


# --------------------------------------------------------------------------- receiver


class ReceiverFlow:
    def __init__(self, spec: dict[str, Any], addr: str):
        self.spec = spec
        self.bytes = 0
        self.result: dict[str, Any] = {"flow": spec["id"]}
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if spec.get("rcvbuf"):
            # SO_RCVBUFFORCE (root) goes past net.core.rmem_max; the kernel
            # doubles the value for its bookkeeping, as for SO_RCVBUF.
            ls.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), int(spec["rcvbuf"]))
        ls.bind((addr, spec["port"]))
        ls.listen(4)
        ls.setblocking(False)  # accepted by one thread for all flows (accept_all)
        self.listener = ls

    def serve(self, conn: socket.socket, clock: Clock) -> None:
        """Read the flow's connection to its end (its own thread)."""
        buf = bytearray(CHUNK)
        try:
            self.result["accepted_s"] = clock.now()
            conn.settimeout(0.05)
            while not STOP.is_set():
                try:
                    n = conn.recv_into(buf)
                except TimeoutError:
                    continue
                except ConnectionResetError:
                    self.result["reset_s"] = clock.now()
                    break
                if n == 0:
                    self.result["eof_s"] = clock.now()
                    break
                if self.bytes == 0:
                    self.result["first_byte_s"] = clock.now()
                self.bytes += n
            self.result["bytes"] = self.bytes
        except OSError as e:
            self.result["error"] = f"{type(e).__name__}: {e}"
        finally:
            conn.close()


def accept_all(flows: list[ReceiverFlow], clock: Clock, readers: list[threading.Thread]) -> None:
    """Accept each flow's one connection as it comes and start its reader:
    one thread waits on every listener (a thread per listener, each waking
    every 50 ms, kept a thousand successive flows' receiver busy before
    the traffic began)."""
    sel = selectors.DefaultSelector()
    try:
        for fl in flows:
            sel.register(fl.listener, selectors.EVENT_READ, fl)
        while not STOP.is_set() and sel.get_map():
            for key, _ in sel.select(timeout=0.05):
                fl = key.data
                try:
                    conn, _ = fl.listener.accept()
                except BlockingIOError:
                    continue
                except OSError as e:
                    fl.result["error"] = f"{type(e).__name__}: {e}"
                    sel.unregister(fl.listener)
                    continue
                sel.unregister(fl.listener)
                conn.setblocking(True)
                t = threading.Thread(target=fl.serve, args=(conn, clock), daemon=True)
                t.start()
                readers.append(t)
    finally:
        sel.close()


def run_receiver(cfg: dict[str, Any], out: Path) -> None:
    clock = Clock(cfg["t0_ns"])
    flows = [ReceiverFlow(f, cfg["dst"]) for f in cfg["flows"]]
    readers: list[threading.Thread] = []
    acceptor = threading.Thread(target=accept_all, args=(flows, clock, readers), daemon=True)
    acceptor.start()
    (out / "receiver.ready").write_text("ready\n")
    counts: list[dict[str, Any]] = []
    for t_s in _sample_times(cfg):
        if not clock.sleep_until(t_s):
            break
        counts.extend({"time_s": t_s, "flow": fl.spec["id"], "bytes": fl.bytes} for fl in flows)
    # Let sized flows that finished by the end close cleanly; bulk senders reset.
    clock.sleep_until(cfg["duration_ns"] / 1e9 + 0.5)
    STOP.set()
    acceptor.join(timeout=2.0)
    for t in list(readers):
        t.join(timeout=2.0)
    for fl in flows:
        fl.listener.close()
    _write_json(
        out / "receiver.json",
        {"flows": [fl.result for fl in flows], "counts": counts, **_usage(), "wall_s": clock.now()},
    )


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("sender", "receiver"):
        print("usage: gen.py sender|receiver CONFIG.json OUTDIR", file=sys.stderr)
        return 2
    _die_with_parent()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    cfg = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    # A socket per flow (a listener each on the receiver): past the usual
    # soft limit of 1,024 descriptors for a thousand successive flows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out = Path(argv[2])
    if cfg.get("cpus"):
        # Off the bottleneck's CPU.
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cfg["cpus"])
    if argv[0] == "sender":
        run_sender(cfg, out)
    else:
        run_receiver(cfg, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
