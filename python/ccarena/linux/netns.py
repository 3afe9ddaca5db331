"""Network namespaces of one Linux-backend run, and their removal.

A run builds three namespaces named ``<prefix>-snd``, ``<prefix>-rtr`` and
``<prefix>-rcv`` (``prefix`` = ``cca`` + 6 hex digits, unique per run)::

    [snd] eth0 ==veth== snd0 [rtr] rcv0 ==veth== eth0 [rcv]
    10.201.0.1/24        ccarena-bottleneck         10.201.0.2/24

Every sender socket lives in ``snd`` and every receiver socket in ``rcv``:
flows are told apart by the receiver's port, and each flow's delays are
applied per flow in the bottleneck, so one host per side suffices and no
bridge is needed. The router has no addresses: the bottleneck moves
Ethernet frames between its two veths, so the two hosts share one subnet
(with static neighbour entries, so there is no ARP during the run). The
veths are created inside the router namespace (never in the host's), their
offloads are turned off, IPv6 is disabled, and every sysctl written is a
per-namespace one. Deleting the namespaces deletes the veths.

Every command is an argument list (no shell); names are made here, never
taken from user input.

Ownership: a run holds an exclusive ``flock`` on ``<lock dir>/<prefix>.lock``
(``/run/ccarena-linux``, or ``$CCARENA_LINUX_LOCKS``) from before it creates
anything until it has removed everything; its work directory is
``<tmp>/ccarena-linux-<prefix>-*``. The kernel drops the lock when the
process dies, even by SIGKILL, so ``cleanup()`` can tell a live run's
namespaces from a dead one's and removes only the dead ones' (namespaces,
their processes, work directories and lock files).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LinuxBackendError
from ..interrupt import deferred

__all__ = [
    "NAME_RE",
    "LinuxBackendError",
    "Owner",
    "Topology",
    "cleanup",
    "list_namespaces",
    "new_prefix",
    "ns_pids",
    "owned_here",
    "prefixes_of",
]

PREFIX_HEAD = "cca"
#: A run's namespaces: the user-space bottleneck's three (``snd``, ``rtr``,
#: ``rcv``), and the bridge testbed's (``bridge.py``): its switches, router
#: and delay hop, and a host per sender (``s<i>``) and receiver (``r<i>``).
NAME_RE = re.compile(r"^(?P<prefix>cca[0-9a-f]{6})-(snd|rtr|rcv|sw1|sw2|dly|s[0-9]+|r[0-9]+)$")
WORKDIR_HEAD = "ccarena-linux-"
WORKDIR_RE = re.compile(r"^ccarena-linux-(?P<prefix>cca[0-9a-f]{6})-[A-Za-z0-9_]+$")
LOCK_RE = re.compile(r"^(?P<prefix>cca[0-9a-f]{6})\.lock$")
LOCKS_ENV = "CCARENA_LINUX_LOCKS"
SUBNET = "10.201.0"
SENDER_ADDR = f"{SUBNET}.1"
RECEIVER_ADDR = f"{SUBNET}.2"
#: The first routing table (and rule priority) of the per-flow routes.
FLOW_TABLE_BASE = 1000
SENDER_MAC = "02:cc:a0:00:00:01"
RECEIVER_MAC = "02:cc:a0:00:00:02"
ROUTER_IF_SND = "snd0"
ROUTER_IF_RCV = "rcv0"
HOST_IF = "eth0"
OFFLOADS = ("tso", "gso", "gro", "lro", "tx", "rx", "sg", "rx-gro-list", "rx-udp-gro-forwarding")


def run(
    args: Sequence[str], *, check: bool = True, timeout: float = 20.0, input: str | None = None
) -> subprocess.CompletedProcess:
    """Run one command (an argument list), capturing its output.

    Signals wait until the command is done (``interrupt.deferred``; the
    commands are ``ip``, ``ethtool``, ``sysctl``: milliseconds, ``timeout``
    at most). An interrupt inside ``subprocess`` leaves it broken: inside
    ``Popen``, after the fork, a child nobody waits for goes on to do its
    work after the clean-up looked (an ``ip netns add`` creating its
    namespace once the run's were removed); inside ``wait``, between
    taking its lock and the ``try`` that releases it, the lock stays taken
    and the next untimed wait blocks for ever (the likeliest cause of a
    run, interrupted twice while building, that hung until killed)."""
    try:
        with deferred():
            cp = subprocess.run(
                list(args), capture_output=True, text=True, timeout=timeout, check=False, input=input
            )
    except FileNotFoundError:
        raise LinuxBackendError(f"{args[0]}: command not found") from None
    except subprocess.TimeoutExpired:
        raise LinuxBackendError(f"{' '.join(args)}: timed out after {timeout:g} s") from None
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        raise LinuxBackendError(f"{' '.join(args)}: {msg[-1] if msg else f'exit {cp.returncode}'}")
    return cp


def new_prefix() -> str:
    return PREFIX_HEAD + secrets.token_hex(3)


def list_namespaces() -> list[str]:
    """Every namespace name (``ip netns list``)."""
    cp = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in cp.stdout.splitlines() if line.strip()]


def ns_pids(ns: str) -> list[int]:
    cp = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in cp.stdout.split() if x.isdigit()]


def _kill_pids(pids: Sequence[int], grace: float = 2.0) -> None:
    """SIGTERM the processes, then SIGKILL what is left after ``grace`` s."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            alive.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.02)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        # A zombie child of ours counts as gone; reap it if it is ours.
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return False
        except ChildProcessError:
            pass
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def delete_namespace(ns: str) -> None:
    """Kill every process in ``ns``, then delete it (its veths go with it)."""
    _kill_pids(ns_pids(ns))
    run(["ip", "netns", "del", ns], check=False)


def lock_dir() -> Path:
    return Path(os.environ.get(LOCKS_ENV) or "/run/ccarena-linux")


#: Every prefix this process has owned (``Owner``), in order: what a test
#: checks for leftovers, so that other runs live on the machine meanwhile
#: are none of its business.
_OWNED_HERE: list[str] = []


def owned_here() -> tuple[str, ...]:
    """The prefixes this process has owned so far."""
    return tuple(_OWNED_HERE)


def prefixes_of(pid: int) -> list[str]:
    """The prefixes whose lock process ``pid`` holds now (its lock file
    names its owner's pid): a run started as another process."""
    out = []
    with contextlib.suppress(OSError):
        for p in lock_dir().iterdir():
            m = LOCK_RE.match(p.name)
            if m is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                if int(p.read_text().strip() or "0") == pid:
                    out.append(m["prefix"])
    return sorted(out)


class Owner:
    """The lock that marks a run's prefix as live (see the module). ``Owner()``
    picks a fresh prefix and holds its lock until ``release()``."""

    def __init__(self) -> None:
        d = lock_dir()
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Locked under a private name first, then linked to its public one,
        # so ``cleanup`` never sees the lock file unlocked.
        tmp = d / f".{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())
            while True:
                prefix = new_prefix()
                path = d / f"{prefix}.lock"
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    continue  # a prefix in use (or left by a dead run): draw again
                break
        except BaseException:
            os.close(fd)
            raise
        finally:
            tmp.unlink()
        self.prefix = prefix
        self.path = path
        self._fd: int | None = fd
        _OWNED_HERE.append(prefix)

    def workdir(self) -> Path:
        """A new work directory in the temporary directory, named after the prefix."""
        return Path(tempfile.mkdtemp(prefix=f"{WORKDIR_HEAD}{self.prefix}-"))

    def release(self) -> None:
        """Remove the lock file, then drop the lock (idempotent)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def owner_alive(prefix: str) -> bool:
    """Whether a live process holds ``prefix``'s lock. No lock file means no
    owner: a run creates its lock before anything else."""
    try:
        fd = os.open(lock_dir() / f"{prefix}.lock", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def remove_prefix(prefix: str) -> list[str]:
    """Delete every namespace of ``prefix`` and its processes, whoever owns
    it (the owner's own clean-up; ``cleanup`` checks the owner first)."""
    removed = []
    for ns in list_namespaces():
        m = NAME_RE.match(ns)
        if m and m["prefix"] == prefix:
            delete_namespace(ns)
            removed.append(ns)
    return removed


@dataclass
class Cleaned:
    """What ``cleanup`` removed, and the live runs it left alone."""

    namespaces: list[str] = field(default_factory=list)
    workdirs: list[Path] = field(default_factory=list)
    live: list[str] = field(default_factory=list)


def cleanup() -> Cleaned:
    """Remove what dead ccarena runs left: their ``cca??????-*`` namespaces
    (``NAME_RE``, either testbed's) and processes, ``ccarena-linux-<prefix>-*`` work
    directories and lock files. Runs whose owner is alive are left alone."""
    out = Cleaned()
    prefixes: set[str] = set()
    for ns in list_namespaces():
        m = NAME_RE.match(ns)
        if m:
            prefixes.add(m["prefix"])
    tmp = Path(tempfile.gettempdir())
    workdirs: dict[str, list[Path]] = {}
    with contextlib.suppress(OSError):
        for p in tmp.iterdir():
            m = WORKDIR_RE.match(p.name)
            if m and p.is_dir() and not p.is_symlink():
                workdirs.setdefault(m["prefix"], []).append(p)
                prefixes.add(m["prefix"])
    locks = lock_dir()
    with contextlib.suppress(OSError):
        for p in locks.iterdir():
            m = LOCK_RE.match(p.name)
            if m:
                prefixes.add(m["prefix"])
    for prefix in sorted(prefixes):
        if owner_alive(prefix):
            out.live.append(prefix)
            continue
        out.namespaces += remove_prefix(prefix)
        for d in workdirs.get(prefix, []):
            shutil.rmtree(d, ignore_errors=True)
            out.workdirs.append(d)
        with contextlib.suppress(FileNotFoundError):
            (locks / f"{prefix}.lock").unlink()
    return out


@dataclass
class Topology:
    """The three namespaces of one run; ``with Topology() as t:`` removes them on exit."""

    prefix: str = field(default_factory=new_prefix)
    created: list[str] = field(default_factory=list)

    @property
    def snd(self) -> str:
        return f"{self.prefix}-snd"

    @property
    def rtr(self) -> str:
        return f"{self.prefix}-rtr"

    @property
    def rcv(self) -> str:
        return f"{self.prefix}-rcv"

    def exec_args(self, ns: str, *args: str) -> list[str]:
        """The argument list that runs ``args`` inside namespace ``ns``."""
        return ["ip", "netns", "exec", ns, *args]

    def sysctl(self, ns: str, key: str, value: str) -> None:
        run(self.exec_args(ns, "sysctl", "-q", "-w", f"{key}={value}"))

    def build(self, *, sender_sysctls: dict[str, str], receiver_sysctls: dict[str, str]) -> None:
        for ns in (self.snd, self.rtr, self.rcv):
            run(["ip", "netns", "add", ns])
            self.created.append(ns)
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            self.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            self.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        # Both veth pairs are made inside the router namespace, their far
        # ends moved straight into the host namespaces.
        run(["ip", "-n", self.rtr, "link", "add", ROUTER_IF_SND, "type", "veth",
             "peer", "name", HOST_IF, "netns", self.snd])  # fmt: skip
        run(["ip", "-n", self.rtr, "link", "add", ROUTER_IF_RCV, "type", "veth",
             "peer", "name", HOST_IF, "netns", self.rcv])  # fmt: skip
        for ns, addr, mac in ((self.snd, SENDER_ADDR, SENDER_MAC), (self.rcv, RECEIVER_ADDR, RECEIVER_MAC)):
            run(["ip", "-n", ns, "link", "set", HOST_IF, "address", mac])
            run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", HOST_IF])
        ethtool = shutil.which("ethtool")
        if ethtool is None:
            raise LinuxBackendError("ethtool not found: install it (apt-get install ethtool)")
        for ns, ifname in ((self.snd, HOST_IF), (self.rcv, HOST_IF), (self.rtr, ROUTER_IF_SND),
                           (self.rtr, ROUTER_IF_RCV)):  # fmt: skip
            for feature in OFFLOADS:
                # Not every veth has every feature; the ones that matter are checked below.
                run(self.exec_args(ns, ethtool, "-K", ifname, feature, "off"), check=False)
            shown = run(self.exec_args(ns, ethtool, "-k", ifname)).stdout
            for feature in ("tcp-segmentation-offload", "generic-segmentation-offload",
                            "generic-receive-offload", "tx-checksumming", "rx-checksumming"):  # fmt: skip
                m = re.search(rf"^{feature}: (\w+)", shown, re.M)
                if m and m.group(1) != "off":
                    raise LinuxBackendError(f"{ns}/{ifname}: cannot turn {feature} off")
        for ns, ifname in ((self.snd, HOST_IF), (self.rcv, HOST_IF), (self.rtr, ROUTER_IF_SND),
                           (self.rtr, ROUTER_IF_RCV)):  # fmt: skip
            run(["ip", "-n", ns, "link", "set", ifname, "up"])
        # The router only forwards frames; its own stack stays out of the way.
        self.sysctl(self.rtr, "net.ipv4.ip_forward", "0")
        run(["ip", "-n", self.snd, "neigh", "replace", RECEIVER_ADDR, "lladdr", RECEIVER_MAC,
             "dev", HOST_IF, "nud", "permanent"])  # fmt: skip
        run(["ip", "-n", self.rcv, "neigh", "replace", SENDER_ADDR, "lladdr", SENDER_MAC,
             "dev", HOST_IF, "nud", "permanent"])  # fmt: skip
        for k, v in sender_sysctls.items():
            self.sysctl(self.snd, k, v)
        for k, v in receiver_sysctls.items():
            self.sysctl(self.rcv, k, v)

    def steer_host_rx(self, cpus: list[int]) -> None:
        """Receive Packet Steering on the hosts' veths: their TCP receive
        processing runs on ``cpus`` (a softirq there), not on the CPU of
        whoever transmitted the frame, which is the bottleneck's."""
        mask = format(sum(1 << c for c in cpus), "x")
        for ns in (self.snd, self.rcv):
            path = f"/sys/class/net/{HOST_IF}/queues/rx-0/rps_cpus"
            cp = run(self.exec_args(ns, "tee", path), check=False, timeout=10, input=mask + "\n")
            if cp.returncode != 0:
                raise LinuxBackendError(f"{ns}: cannot set {path}: {cp.stderr.strip()}")

    def set_initcwnd(self, n: int) -> None:
        """The initial window of every connection from the sender (a route attribute)."""
        run(["ip", "-n", self.snd, "route", "replace", f"{SUBNET}.0/24", "dev", HOST_IF,
             "initcwnd", str(n)])  # fmt: skip

    def set_flow_routes(self, flows: list[tuple[int, int, bool]]) -> None:
        """Each flow's connection routed by its destination port (policy
        rules, ``ip rule ... dport``, one per run of consecutive ports alike)
        through a route that carries its initial window (``initcwnd``) and
        whether it asks for ECN (``features ecn``, which ``tcp_ecn_send_syn``
        honours with ``net.ipv4.tcp_ecn = 0``), one table per kind.
        ``flows``: (port, initcwnd, ecn)."""
        tables: dict[tuple[int, bool], int] = {}
        runs: list[list[Any]] = []  # [first port, last port, table]
        for port, initcwnd, ecn in sorted(flows):
            kind = (initcwnd, ecn)
            if kind not in tables:
                tables[kind] = FLOW_TABLE_BASE + len(tables)
                cmd = ["ip", "-n", self.snd, "route", "replace", f"{SUBNET}.0/24", "dev", HOST_IF,
                       "table", str(tables[kind]), "initcwnd", str(initcwnd)]  # fmt: skip
                run(cmd + (["features", "ecn"] if ecn else []))
            if runs and runs[-1][1] == port - 1 and runs[-1][2] == tables[kind]:
                runs[-1][1] = port
            else:
                runs.append([port, port, tables[kind]])
        for k, (first, last, table) in enumerate(runs):
            ports = str(first) if first == last else f"{first}-{last}"
            run(["ip", "-n", self.snd, "rule", "add", "ipproto", "tcp", "dport", ports,
                 "priority", str(FLOW_TABLE_BASE + k), "table", str(table)])  # fmt: skip

    def destroy(self) -> None:
        for ns in reversed(self.created):
            delete_namespace(ns)
        self.created.clear()
        # Namespaces of this prefix created by a build that failed half way.
        remove_prefix(self.prefix)

    def __enter__(self) -> Topology:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
