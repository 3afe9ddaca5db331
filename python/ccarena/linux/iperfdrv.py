"""The traffic driver of the bridge testbed (``bridge.py``): iperf3 in the
host namespaces, and what the kernel says of it.

``iperfdrv.py CONFIG.json OUTDIR``, started in the router's namespace.
Standard library only (started as a script, as ``gen.py``). It enters the
other namespaces itself (``setns``), so one process does it all:

- starts one ``iperf3 -s -1`` per flow in the flow's receiver namespace,
  and says ``driver.ready`` once each listens;
- starts flow ``i``'s ``iperf3 -c`` in its sender namespace at the flow's
  start (``t0_ns + start``, CLOCK_MONOTONIC); a bulk flow's client is told
  to stop (SIGINT) at the run's end;
- at every sampling instant reads, through ``sock_diag`` (what ``ss -tin``
  shows), the ``tcp_info`` of each flow's data connection at its sender (and
  BBR's ``tcp_bbr_info``) and the bytes its receiver's socket received in
  order (``tcpi_bytes_received``), and the router's ``tbf`` counters
  (``RTM_GETQDISC``: bytes and packets sent, drops, backlog);
- polls a flow's sender every millisecond while its data connection is
  being opened (when its SYN left and when it was established);
- after the traffic, reads every host's interface counters (frames sent
  and received: a flow's drops are the frames its sender sent that its
  receiver never got) and the senders' TcpExt counters, and writes
  ``driver.json``.

A flow is its iperf3 pair: the server listens on ``port``, the client's
data connection leaves from ``cport`` (``--cport``); its control connection
(to ``port`` too) carries a few hundred bytes before and after the test.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__:
    from .cpu import ksoftirqd
    from .tcpinfo import parse_bbr, parse_tcp_info
else:  # started as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cpu import ksoftirqd  # type: ignore[no-redef]
    from tcpinfo import parse_bbr, parse_tcp_info  # type: ignore[no-redef]

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE = 0
NETLINK_SOCK_DIAG = 4
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
SOCK_DIAG_BY_FAMILY = 20
RTM_GETQDISC = 38
RTM_NEWQDISC = 36
INET_DIAG_INFO = 2
INET_DIAG_VEGASINFO = 3
INET_DIAG_CONG = 4
INET_DIAG_BBRINFO = 16
TCA_KIND = 1
TCA_STATS2 = 7
TCA_STATS_BASIC = 1
TCA_STATS_QUEUE = 3
TCP_ESTABLISHED = 1
TCP_LISTEN = 10
#: A socket's cookie when the request does not know it (INET_DIAG_NOCOOKIE).
NO_COOKIE = 0xFFFFFFFF
#: tcp_info, the algorithm's name and its own info (BBR's, through the Vegas bit).
DIAG_EXT = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) | (1 << (INET_DIAG_CONG - 1))
#: A flow whose data connection is opening is polled this often, the
#: flows together at most once a FINE_S (each flow every FINE_S x the
#: number of them): at most a sock_diag dump a millisecond.
FINE_S = 0.001
STOP = False


def _on_signal(signum, frame) -> None:
    global STOP
    STOP = True


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        _libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


class Namespaces:
    """Enter a named network namespace for a block (``setns`` of this one
    thread; the driver has no other)."""

    def __init__(self) -> None:
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self.fds: dict[str, int] = {}

    def fd(self, name: str) -> int:
        if name not in self.fds:
            self.fds[name] = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
        return self.fds[name]

    @contextlib.contextmanager
    def inside(self, name: str):
        _setns(self.fd(name))
        try:
            yield
        finally:
            _setns(self.home)


# --------------------------------------------------------------------------- netlink


def _attrs(buf: bytes, off: int, end: int) -> dict[int, bytes]:
    out = {}
    while off + 4 <= end:
        ln, typ = struct.unpack_from("=HH", buf, off)
        if ln < 4:
            break
        out[typ & 0x3FFF] = buf[off + 4 : off + ln]
        off += (ln + 3) & ~3
    return out


def _dump(sock: socket.socket, msg_type: int, body: bytes, seq: int) -> list[bytes]:
    """One netlink dump: the bodies of its messages."""
    sock.send(struct.pack("=IHHII", 16 + len(body), msg_type, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body)
    out: list[bytes] = []
    while True:
        data = sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if typ == NLMSG_DONE:
                return out
            if typ == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + 16)[0]
                raise OSError(-err, f"netlink: {os.strerror(-err)}")
            out.append(data[off + 16 : off + ln])
            off += (ln + 3) & ~3


def _parse_diag(body: bytes) -> dict[str, Any]:
    """One ``inet_diag_msg``: the socket's state, ports, tcp_info, algorithm, BBR's info."""
    a = _attrs(body, 72, len(body))
    sport, dport = struct.unpack_from(">HH", body, 4)
    return {
        "state": body[1],
        "ports": (sport, dport),
        "info": parse_tcp_info(a[INET_DIAG_INFO]) if INET_DIAG_INFO in a else {},
        "cc": a.get(INET_DIAG_CONG, b"").split(b"\0")[0].decode(errors="replace"),
        "bbr": parse_bbr(a[INET_DIAG_BBRINFO]) if INET_DIAG_BBRINFO in a else None,
    }


class Diag:
    """``sock_diag`` of one namespace: a TCP socket's ``tcp_info``, looked
    up by its addresses and ports (a dump walks the kernel's whole
    connection table, all namespaces' alike: 3 ms here, where a lookup
    takes microseconds)."""

    def __init__(self, ns: Namespaces, name: str) -> None:
        with ns.inside(name):
            self.sock = socket.socket(
                socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
            )
        self.sock.bind((0, 0))
        self.seq = 0

    def one(self, src: str, dst: str, sport: int, dport: int) -> dict[str, Any] | None:
        """The connection (src:sport -> dst:dport) as ``_parse_diag`` gives
        it, or None when there is none."""
        self.seq += 1
        sockid = struct.pack(">HH", sport, dport) + socket.inet_aton(src) + bytes(12)
        sockid += socket.inet_aton(dst) + bytes(12) + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE)
        req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, DIAG_EXT, 0, 0xFFFFFFFF) + sockid
        self.sock.send(
            struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, self.seq, 0) + req
        )
        data = self.sock.recv(1 << 16)
        _, typ, _, _, _ = struct.unpack_from("=IHHII", data, 0)
        if typ == NLMSG_ERROR:
            err = struct.unpack_from("=i", data, 16)[0]
            if err in (0, -2):  # ENOENT: no such connection (yet, or any more)
                return None
            raise OSError(-err, f"sock_diag: {os.strerror(-err)}")
        return _parse_diag(data[16 : struct.unpack_from("=I", data, 0)[0]])

    def listening(self, port: int) -> bool:
        """Whether a socket listens on ``port`` (a dump of the listening
        sockets only, which leaves the connection table alone)."""
        self.seq += 1
        req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + bytes(48)
        return any(
            _parse_diag(body)["ports"][0] == port
            for body in _dump(self.sock, SOCK_DIAG_BY_FAMILY, req, self.seq)
        )


class Qdiscs:
    """The router's qdiscs on one interface (``RTM_GETQDISC``)."""

    def __init__(self, ifname: str) -> None:
        self.ifindex = socket.if_nametoindex(ifname)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
        self.sock.bind((0, 0))
        self.seq = 0

    def read(self) -> dict[str, dict[str, Any]]:
        """handle (``1:``) -> kind, bytes and packets sent, drops, overlimits,
        backlog bytes and packets."""
        self.seq += 1
        req = struct.pack("=BBHiIII", socket.AF_UNSPEC, 0, 0, self.ifindex, 0, 0, 0)
        out = {}
        for body in _dump(self.sock, RTM_GETQDISC, req, self.seq):
            _, _, _, ifindex, handle, _, _ = struct.unpack_from("=BBHiIII", body, 0)
            if ifindex != self.ifindex:
                continue
            a = _attrs(body, 20, len(body))
            row: dict[str, Any] = {"kind": a.get(TCA_KIND, b"").split(b"\0")[0].decode()}
            s2 = _attrs(a.get(TCA_STATS2, b""), 0, len(a.get(TCA_STATS2, b"")))
            if TCA_STATS_BASIC in s2:
                row["bytes"], row["packets"] = struct.unpack_from("=QI", s2[TCA_STATS_BASIC], 0)
            if TCA_STATS_QUEUE in s2:
                q = struct.unpack_from("=5I", s2[TCA_STATS_QUEUE], 0)
                row.update(zip(("qlen", "backlog", "drops", "requeues", "overlimits"), q, strict=True))
            out[f"{handle >> 16:x}:"] = row
        return out


def _proc_net(name: str) -> str:
    """``/proc/net/<name>`` of this thread's namespace."""
    return Path(f"/proc/thread-self/net/{name}").read_text()


def _netdev() -> dict[str, dict[str, int]]:
    """This namespace's interfaces: frames and bytes sent and received, drops."""
    out = {}
    for line in _proc_net("dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        v = [int(x) for x in rest.split()]
        out[name.strip()] = {"rx_bytes": v[0], "rx_packets": v[1], "rx_drop": v[3],
                             "tx_bytes": v[8], "tx_packets": v[9], "tx_drop": v[11]}  # fmt: skip
    return out


def _tcpext() -> dict[str, int]:
    lines = _proc_net("netstat").splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            return {k: int(v) for k, v in zip(names.split()[1:], values.split()[1:], strict=False)}
    return {}


# --------------------------------------------------------------------------- processes


class Proc:
    """One iperf3, reaped with its resource usage; its scheduler counters
    (``/proc/<pid>/schedstat``: time on a CPU and waiting for one) read while
    it lives."""

    def __init__(self, name: str, args: list[str], log: Path, clock: Clock) -> None:
        self.name = name
        with open(log, "wb") as lf:
            self.p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT)
        self.started_s = clock.now()
        self.ended_s: float | None = None
        self.status: int | None = None
        self.cpu_s = 0.0
        self.sched = (0, 0)

    def poll(self, clock: Clock) -> bool:
        """Whether it has exited (reaping it)."""
        if self.status is not None:
            return True
        with contextlib.suppress(OSError, ValueError):
            run_ns, wait_ns, _ = (int(x) for x in Path(f"/proc/{self.p.pid}/schedstat").read_text().split())
            self.sched = (run_ns, wait_ns)
        pid, st, ru = os.wait4(self.p.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.status = os.waitstatus_to_exitcode(st)
        self.p.returncode = self.status  # reaped here, not by Popen
        self.ended_s = clock.now()
        self.cpu_s = ru.ru_utime + ru.ru_stime
        return True

    def signal(self, sig: int) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                self.p.send_signal(sig)

    def record(self) -> dict[str, Any]:
        wall = (self.ended_s or 0.0) - self.started_s
        return {
            "name": self.name,
            "pid": self.p.pid,
            "status": self.status,
            "started_s": self.started_s,
            "ended_s": self.ended_s,
            "cpu_s": self.cpu_s,
            "cpu_load": self.cpu_s / wall if wall > 0 else None,
            "runqueue_wait_s": self.sched[1] / 1e9,
            "runqueue_share": self.sched[1] / 1e9 / wall if wall > 0 else None,
        }


class Clock:
    def __init__(self, t0_ns: int) -> None:
        self.t0_ns = t0_ns

    def now(self) -> float:
        return (time.monotonic_ns() - self.t0_ns) / 1e9

    def sleep_until(self, t: float) -> None:
        while not STOP:
            left = t - self.now()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))


# --------------------------------------------------------------------------- the run


class Flow:
    def __init__(self, spec: dict[str, Any], ns: Namespaces) -> None:
        self.spec = spec
        self.id = int(spec["id"])
        self.snd = Diag(ns, spec["sender_ns"])
        self.rcv = Diag(ns, spec["receiver_ns"])
        #: iperf3's cookie (its first bytes on the data connection) comes before the payload.
        self.cookie = int(spec.get("cookie", 0))
        # The data connection, as each end sees it.
        self.key_snd = (spec["sender_addr"], spec["receiver_addr"], spec["cport"], spec["port"])
        self.key_rcv = (spec["receiver_addr"], spec["sender_addr"], spec["port"], spec["cport"])
        self.server: Proc | None = None
        self.client: Proc | None = None
        self.result: dict[str, Any] = {"flow": self.id}
        self.received = 0  # bytes its receiver's data socket received in order, last read
        self.final: dict[str, Any] | None = None

    def hot(self) -> bool:
        """Polled every millisecond: its data connection is being opened."""
        return self.client is not None and "established_s" not in self.result

    def read_sender(self, now: float) -> dict[str, Any] | None:
        """The data connection at the sender (None while it is not open),
        noting when it was first seen (its SYN had left) and established."""
        got = self.snd.one(*self.key_snd)
        if got is None:
            return None
        info = got["info"]
        self.result.setdefault("syn_s", now)
        # The algorithm as first seen (iperf3 may set it after its SYN) and last.
        self.result.setdefault("cc_first", got["cc"])
        self.result["cc_set"] = got["cc"]
        if got["state"] == TCP_ESTABLISHED or info.get("bytes_acked"):
            self.result.setdefault("established_s", now)
        return {**info, **{f"bbr_{k}": v for k, v in (got["bbr"] or {}).items()}}

    def read_receiver(self) -> int:
        """Payload bytes its receiver has received in order (the cookie left
        out; the last count once its socket is gone)."""
        got = self.rcv.one(*self.key_rcv)
        if got is not None and got["info"].get("bytes_received") is not None:
            self.received = max(self.received, int(got["info"]["bytes_received"]) - self.cookie)
        return self.received


def _counters(ns: Namespaces, names: list[str]) -> dict[str, dict[str, dict[str, int]]]:
    out = {}
    for name in names:
        with ns.inside(name):
            out[name] = _netdev()
    return out


def _tcpext_sum(ns: Namespaces, names: list[str]) -> dict[str, int]:
    total: dict[str, int] = {}
    for name in names:
        with ns.inside(name):
            for k, v in _tcpext().items():
                total[k] = total.get(k, 0) + v
    return total


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run(cfg: dict[str, Any], out: Path) -> None:
    ns = Namespaces()
    clock = Clock(cfg["t0_ns"])
    duration = cfg["duration_ns"] / 1e9
    interval = cfg["interval_ns"] / 1e9
    flows = [Flow(f, ns) for f in cfg["flows"]]
    qdiscs = Qdiscs(cfg["bottleneck_if"])
    senders = [f.spec["sender_ns"] for f in flows]
    receivers = [f.spec["receiver_ns"] for f in flows]
    hosts = senders + receivers
    before = _counters(ns, hosts)
    tcpext0 = _tcpext_sum(ns, senders)
    procs: list[Proc] = []
    for fl in flows:
        with ns.inside(fl.spec["receiver_ns"]):
            fl.server = Proc(f"server{fl.id}", fl.spec["server_args"], out / f"server{fl.id}.log", clock)
        procs.append(fl.server)
    # Ready once every server listens (its listening socket shows in sock_diag).
    deadline = time.monotonic() + 10
    for fl in flows:
        while not fl.rcv.listening(fl.spec["port"]):
            if STOP:
                break
            if fl.server is not None and fl.server.poll(clock):
                raise RuntimeError(f"iperf3 server of flow {fl.id} exited (status {fl.server.status})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 server of flow {fl.id} is not listening")
            time.sleep(0.005)
    if not STOP:
        (out / "driver.ready").write_text("ready\n")

    soft0 = ksoftirqd(cfg.get("cpus") or [])
    soft_t0 = clock.now()
    launches = sorted((f.spec["start_ns"] / 1e9, f.id) for f in flows if f.spec["start_ns"] / 1e9 < duration)
    times = [k * interval for k in range(1, round(duration / interval) + 1)]
    if not times or times[-1] < duration - 1e-9:
        times.append(duration)
    samples: list[dict[str, Any]] = []
    counts: list[dict[str, Any]] = []
    qrows: list[dict[str, Any]] = []
    late_launch: list[float] = []
    late_sample: list[float] = []
    fine_gap = 0.0
    q0 = qdiscs.read()
    k = 0
    li = 0
    last_fine = -1.0
    loops = 0
    while not STOP and k < len(times):
        loops += 1
        now = clock.now()
        # Launches due.
        while li < len(launches) and launches[li][0] <= now:
            t_start, i = launches[li]
            fl = flows[i]
            with ns.inside(fl.spec["sender_ns"]):
                fl.client = Proc(f"client{i}", fl.spec["client_args"], out / f"client{i}.log", clock)
            procs.append(fl.client)
            fl.result["launched_s"] = fl.client.started_s
            late_launch.append(fl.client.started_s - t_start)
            li += 1
        # A sampling instant.
        if times[k] <= now:
            t = times[k]
            at = clock.now()
            for fl in flows:
                if fl.client is not None:
                    row = fl.read_sender(at)
                    if row is not None:
                        samples.append({"time_s": t, "flow": fl.id, "at_s": at, **row})
                        if t >= duration - 1e-9 and fl.final is None:
                            # The state the flow ended the run in.
                            fl.final = row
                            fl.result["final"] = row
                            fl.result["final_s"] = at
                counts.append({"time_s": t, "flow": fl.id, "bytes": fl.read_receiver()})
            q = qdiscs.read()
            qrows.append({"time_s": t, "at_s": clock.now(), **{h: v for h, v in q.items()}})
            late_sample.append(at - t)
            for p in procs:
                p.poll(clock)
            k += 1
            continue
        # Fine polls of the flows whose data connection is opening.
        hot = [fl for fl in flows if fl.hot()]
        fine = FINE_S * max(len(hot), 1)
        if hot and now - last_fine >= fine:
            if last_fine >= 0:
                fine_gap = max(fine_gap, now - last_fine)
            for fl in hot:
                fl.read_sender(clock.now())
            last_fine = now
        elif not hot:
            last_fine = -1.0
        nxt = times[k]
        if li < len(launches):
            nxt = min(nxt, launches[li][0])
        if hot:
            nxt = min(nxt, last_fine + fine)
        left = nxt - clock.now()
        if left > 0:
            time.sleep(min(left, 0.05))
    if STOP:
        # Told to stop before the end (the run is being torn down): no results.
        for p in procs:
            p.signal(signal.SIGKILL)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not all(p.poll(clock) for p in procs):
            time.sleep(0.01)
        return
    # The run's end: bulk clients are told to stop (iperf3 writes its JSON
    # and tells its server), then every iperf3 is waited for.
    end_s = clock.now()
    soft1 = ksoftirqd(cfg.get("cpus") or [])
    softirq = {
        k: {"run_s": (v[0] - soft0[k][0]) / 1e9, "wait_s": (v[1] - soft0[k][1]) / 1e9}
        for k, v in soft1.items()
        if k in soft0
    }
    for fl in flows:
        if fl.client is not None:
            fl.client.signal(signal.SIGINT)
    deadline = time.monotonic() + cfg.get("exit_grace_s", 5.0)
    while time.monotonic() < deadline and not all(p.poll(clock) for p in procs):
        if all(fl.client is None or fl.client.poll(clock) for fl in flows):
            # A server whose client never came (or is gone) is told too.
            for fl in flows:
                if fl.server is not None and fl.server.status is None and fl.client is None:
                    fl.server.signal(signal.SIGINT)
        time.sleep(0.01)
    for p in procs:
        if not p.poll(clock):
            p.signal(signal.SIGKILL)
            deadline = time.monotonic() + 2
            while not p.poll(clock) and time.monotonic() < deadline:
                time.sleep(0.01)
    # Let what is in flight land (the longest path and a full queue), then count.
    time.sleep(cfg.get("drain_s", 0.5))
    after = _counters(ns, hosts)
    tcpext1 = _tcpext_sum(ns, senders)
    q1 = qdiscs.read()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    wall = clock.now() - (cfg.get("started_s") or 0.0)
    _write_json(
        out / "driver.json",
        {
            "flows": [fl.result for fl in flows],
            "samples": samples,
            "counts": counts,
            "qdisc": {"before": q0, "samples": qrows, "after": q1},
            "interfaces": {"before": before, "after": after},
            "netstat": {k: v - tcpext0.get(k, 0) for k, v in tcpext1.items() if v - tcpext0.get(k, 0)},
            "processes": [p.record() for p in procs],
            # How late the clients were started and the samples read (s).
            "lateness_s": {
                "launch_max": max(late_launch, default=None),
                "sample_max": max(late_sample, default=None),
                "max": max(late_launch + late_sample, default=None),
            },
            "fine_poll_max_gap_s": fine_gap,
            "loops": loops,
            # The softirq threads of the hosts' CPUs over the traffic (from
            # the servers' start to the run's end).
            "ksoftirqd": {"threads": softirq, "wall_s": end_s - soft_t0},
            "end_s": end_s,
            "cpu_user_s": ru.ru_utime,
            "cpu_sys_s": ru.ru_stime,
            "wall_s": wall,
        },
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: iperfdrv.py CONFIG.json OUTDIR", file=sys.stderr)
        return 2
    _die_with_parent()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    cfg = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    if cfg.get("cpus"):
        # Off the delay hop's CPU; the iperf3s inherit it.
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cfg["cpus"])
    with contextlib.suppress(OSError, AttributeError):
        _libc.prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK: 1 us
    cfg["started_s"] = Clock(cfg["t0_ns"]).now()
    run(cfg, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
