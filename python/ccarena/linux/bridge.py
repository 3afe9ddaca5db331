"""The second kernel testbed, ``bridge-tbf``: built as the papers' Mininet
setups are, with the kernel's own queue and iperf3.

::

    senders (10.202.x.y/16)                                   receivers (10.203.x.y/16)
    [P-s0] eth0 --+                                           +-- eth0 [P-r0]
    [P-s1] eth0 --+ br0 [P-sw1]                   [P-sw2] br0 +-- eth0 [P-r1]
     ...          |                                       |         ...
                 up0 -- lan0 [P-rtr] wan0 -- in0 [P-dly] out0 -- dn0
                         router: tbf + bfifo     delay hop: per-flow
                         on wan0's egress        delay lines, both ways

- A host namespace per flow on each side (``P-s<i>``, ``P-r<i>``), each
  with its own stack (its own sysctls, route and metrics), joined by a
  Linux bridge in a switch namespace (``P-sw1``, ``P-sw2``; static
  forwarding entries, so nothing is flooded), to a router namespace that
  forwards IPv4 between the two subnets (static neighbours: no ARP).
- The bottleneck is the router's egress toward the receivers (``wan0``):
  the kernel's ``tbf`` (rate = the scenario's bottleneck rate, burst = the
  scenario's ``burst`` but at least ``MIN_BURST_BYTES``) with a ``bfifo``
  child holding the scenario's buffer in bytes (``pfifo`` for a buffer in
  packets).
- The propagation delay is a hop of its own between the router and the
  receivers' switch (this kernel has no netem): ``ccarena-bottleneck`` as a
  pure per-flow delay line (the scenario's flows with their RTTs and
  ``rtt_split``, a 10 Gbit/s link and a 1 GB buffer, nothing else). It sits
  after the tbf, on the receivers' side, and delays both directions: data
  by the forward share of the flow's RTT after the queue, ACKs by the
  reverse share before they reach the router. At a single bottleneck a
  flow sees only the sum of the delays around its loop, wherever they are
  (the same flow with the hop on the senders' side, in front of the
  router, did the same within run-to-run noise); after the tbf, its frames
  arrive spaced by the tbf and it never queues them.
- The traffic is iperf3 (``iperfdrv.py``): a server per flow in its
  receiver's namespace, a client per flow in its sender's, started at the
  flow's start; the tables come from the kernel's ``tcp_info`` of the
  iperf3 sockets (``sock_diag``), the tbf's counters and the hosts'
  interface counters.

The same tables as the other testbed are written (``tables.build_tables``),
with NaN where this testbed cannot measure (the queue's sojourn times).
Everything it creates is owned and removed as the other testbed's are
(``netns.Owner``, ``SignalGuard``); its namespaces match ``netns.NAME_RE``,
so ``ccarena linux cleanup`` finds a killed run's.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LinuxBackendError, LinuxNotAvailable, LinuxUnsupported
from ..interrupt import SignalGuard, deferred
from ..results import Results
from ..scenario import Scenario
from ..store import DEFAULT_ROOT, check_target, new_kernel_run_dir, write_run
from ..version import __version__
from . import backend, cpu, netns
from .host import ccarena_commit, host_info, utc_now
from .modules import KERNEL_CC
from .tables import NAN, THRESHOLDS, build_tables
from .testbeds import REVISIONS

__all__ = ["TESTBED", "BridgeTopology", "execute", "plan"]

TESTBED = "bridge-tbf"
PORT_BASE = backend.PORT_BASE
#: The clients' data connections leave from CPORT_BASE + i (iperf3 --cport).
CPORT_BASE = 45000
MAX_FLOWS = 200
SND_NET = "10.202"
RCV_NET = "10.203"
ROUTER_SND = f"{SND_NET}.255.254"
ROUTER_RCV = f"{RCV_NET}.255.254"
#: The delay hop's link: fast and deep enough never to queue or drop.
DELAY_RATE_BPS = 10_000_000_000
DELAY_LIMIT_BYTES = 1 << 30
#: The tbf's bucket at least: two full frames. With one (the simulator's
#: default ``burst``), every departure waits for the kernel's timer to
#: refill the bucket exactly, and the timer's lateness is lost rate.
FRAME = 1514
MIN_BURST_BYTES = 2 * FRAME
#: iperf3's cookie (COOKIE_SIZE): the first bytes on each data connection.
IPERF3_COOKIE = 37
STARTUP_S = 1.5
#: How long iperf3 may take to exit after the run's end (SIGINT to its client).
EXIT_GRACE_S = 5.0

# Self-check thresholds of this testbed (besides tables.THRESHOLDS for the delay hop).
BRIDGE_THRESHOLDS = {
    # The delay hop's own queue: a frame may wait behind a tbf burst (2.4 us a frame).
    "delay_hop_queue_max_us": 100.0,
    # An iperf3 waiting this share of its life for a CPU: the hosts were starved.
    "runqueue_share": 0.10,
    # The driver's samples this late (s): a 10th of the default sampling interval.
    "driver_sample_late_max_s": 0.01,
    # A client started this late (s). Flows that start together are started
    # one after another, 1-2.5 ms apart (ten: the last 15-25 ms late).
    "driver_launch_late_max_s": 0.05,
    # The hosts' softirq threads waiting this share of the traffic's time for
    # a CPU: the forwarding and the hosts' TCP were deferred behind other work.
    "ksoftirqd_wait_share": 0.02,
}

#: Fields of the normalized scenario this testbed runs (others are refused).
_TOP = {"model", "name", "description", "duration_ns", "seed", "bottleneck", "flows", "sample_interval_ns",
        "hosts", "backend"}  # fmt: skip
_BOTTLENECK = {"rate_bps", "buffer", "limit", "bdp_bytes", "bdp_rtt_ns", "qdisc", "ecn", "burst_bytes"}
_FLOW = {"id", "group", "label", "cc", "cc_params", "rtt_ns", "fwd_delay_ns", "rev_delay_ns",
         "access_rate_bps", "start_ns", "size_bytes", "pacing", "rwnd_bytes", "ecn", "mss", "init_cwnd",
         "host", "rtt_split", "rtt_schedule"}  # fmt: skip
#: Normalized names as a scenario file spells them.
_SPELLED = {"stop_ns": "stop", "after": "repeat", "rwnd_bytes": "rwnd", "links": "[[links]]",
            "capture": "[capture]", "reverse_route": "reverse_route"}  # fmt: skip
_WHY = {
    "stop": "iperf3 cannot stop writing at a time and let what it wrote go",
    # Tried (iperf3 3.12, -n 300KB): the client ends its test once it has
    # written the bytes, and its server closed the connection with 188 KB of
    # them still in flight, both saying nothing was wrong.
    "size": "iperf3 -n ends a sized flow at the client's last write, not at its delivery",
    "repeat": "successive flows are not iperf3's",
    "chunks": "iperf3 cannot replay writes",
    "rwnd": "iperf3's -w sets the socket buffers, from which Linux derives a larger window",
    "loss": "the delay hop is a pure delay line",
    "ack_loss": "the delay hop is a pure delay line",
    "jitter": "the delay hop is a pure delay line",
    "ack_jitter": "the delay hop is a pure delay line",
    "[[links]]": "this testbed is a dumbbell",
    "reverse_route": "this testbed is a dumbbell",
    "[capture]": "not on this testbed",
}


def _refuse(field_name: str, why: str) -> LinuxUnsupported:
    return LinuxUnsupported(f"{field_name}: {why} (testbed {TESTBED}; the default testbed runs it)")


def host_addr(net: str, i: int) -> str:
    """Host ``i`` of a side's /16 (``x.y.0.1`` ...; ``.255.254`` is the router)."""
    return f"{net}.{i // 250}.{i % 250 + 1}"


def mac(kind: int, i: int) -> str:
    """A fixed, locally administered MAC: senders kind 1, receivers 2, router 3."""
    return f"02:cc:b2:{kind:02x}:{(i >> 8) & 0xFF:02x}:{i & 0xFF:02x}"


ROUTER_SND_MAC = mac(3, 1)
ROUTER_RCV_MAC = mac(3, 2)


@dataclass
class Plan:
    """What a scenario becomes on this testbed."""

    flows: list[dict[str, Any]]
    notes: list[str]
    tbf: dict[str, Any]


def _iperf3() -> str:
    found = shutil.which("iperf3")
    if found is None:
        raise LinuxNotAvailable("iperf3 not found: the bridge-tbf testbed needs it (apt-get install iperf3)")
    return found


def plan(scn: Scenario) -> Plan:
    """The flows' iperf3 command lines, the tbf's parameters and the notes;
    ``LinuxUnsupported`` (one line naming the field) for what this testbed
    cannot run, before anything is built."""
    n = scn.normalized
    for k, v in n.items():
        if k not in _TOP and v not in (None, [], {}):
            name = _SPELLED.get(k, k)
            raise _refuse(name, _WHY.get(name, "not on this testbed"))
    b = n["bottleneck"]
    for k, v in b.items():
        if k not in _BOTTLENECK and v not in (None, [], {}, False):
            raise _refuse(f"bottleneck.{k.removesuffix('_bps').removesuffix('_bytes')}",
                          "the kernel's tbf with a drop-tail fifo is this testbed's bottleneck")  # fmt: skip
    kind = (b.get("qdisc") or {}).get("kind")
    if kind != "taildrop":
        raise _refuse(f"bottleneck.qdisc: {kind!r}", "the tbf's child here is a drop-tail bfifo (or pfifo)")
    if len(n["flows"]) > MAX_FLOWS:
        raise _refuse("flows", f"{len(n['flows'])} flows: at most {MAX_FLOWS} (two namespaces each)")
    notes = [
        f"testbed {TESTBED}: a host namespace per sender and receiver, Linux bridges, the kernel's tbf and "
        "bfifo at the router, a pure delay hop after it, iperf3",
        "iperf3 opens its control connection first: a flow's data begins a few round trips after its "
        "start (linux.flow_times)",
    ]
    # The main backend's refusals and pacing rules first (algorithm, cc_params, chunks, mss).
    specs, main_notes = backend.plan(scn)
    notes += [x for x in main_notes if not x.startswith("access_rate")]
    if any(f.get("access_rate_bps") != 40_000_000_000 for f in n["flows"]):
        notes.append("access_rate is not emulated: the veths are the access links")
    iperf3 = _iperf3()
    flows = []
    for f, spec in zip(n["flows"], specs, strict=True):
        at = f"flows[{f['group']}]"
        for k, v in f.items():
            if k not in _FLOW and v not in (None, [], {}):
                name = _SPELLED.get(k, k)
                raise _refuse(f"{at}.{name}", _WHY.get(name, "not on this testbed"))
        if f.get("rwnd_bytes"):
            raise _refuse(f"{at}.rwnd", _WHY["rwnd"])
        if f.get("size_bytes") is not None:
            raise _refuse(f"{at}.size", _WHY["size"])
        i = int(f["id"])
        port, cport = PORT_BASE + i, CPORT_BASE + i
        client = [iperf3, "-4", "-c", host_addr(RCV_NET, i), "-p", str(port), "--cport", str(cport),
                  "-C", KERNEL_CC[f["cc"]], "-J", "-i", "1"]  # fmt: skip
        # Bulk: until told to stop at the run's end (SIGINT).
        client += ["-t", str(math.ceil((n["duration_ns"] - f["start_ns"]) / 1e9) + 10)]
        if spec["max_pacing_rate"] is not None:
            # iperf3 hands SO_MAX_PACING_RATE a 32-bit byte rate: the largest
            # one short of "no limit" (~0U) turns TCP's internal pacing on.
            bytes_per_s = min(int(spec["max_pacing_rate"]), 0xFFFF_FFFE)
            client += ["--fq-rate", str(bytes_per_s * 8)]
        flows.append(
            {
                "id": i,
                "port": port,
                "cport": cport,
                "cookie": IPERF3_COOKIE,
                "sender_addr": host_addr(SND_NET, i),
                "receiver_addr": host_addr(RCV_NET, i),
                "start_ns": int(f["start_ns"]),
                "sender_ns": "",  # set once the prefix is known
                "receiver_ns": "",
                "client_args": client,
                "server_args": [iperf3, "-s", "-1", "-4", "-B", host_addr(RCV_NET, i), "-p", str(port), "-J"],
                "init_cwnd": int(f.get("init_cwnd", 10)),
                "ecn": bool(f.get("ecn")),
                "cc": KERNEL_CC[f["cc"]],
                # An MSS below the veths' is the receiver's route's advmss (with
                # the timestamp option, as TCP_MAXSEG in the other testbed).
                "advmss": spec["user_mss"],
            }
        )
    limit = b["limit"]
    tbf = {
        "rate_bps": int(b["rate_bps"]),
        "burst_bytes": max(int(b.get("burst_bytes") or FRAME), MIN_BURST_BYTES),
        "child": "bfifo" if "bytes" in limit else "pfifo",
        "limit": int(limit["bytes"] if "bytes" in limit else limit["packets"]),
    }
    if tbf["burst_bytes"] != int(b.get("burst_bytes") or FRAME):
        notes.append(
            f"bottleneck.burst: the tbf's bucket is {tbf['burst_bytes']} bytes (at least two frames: "
            "with one, the timer's lateness is lost rate)"
        )
    return Plan(flows, notes, tbf)


def delay_scenario(normalized: dict[str, Any]) -> dict[str, Any]:
    """The scenario the delay hop runs: the flows and their delays as they
    are, the link fast and deep enough never to queue or drop."""
    d = copy.deepcopy(normalized)
    limit = {"bytes": DELAY_LIMIT_BYTES}
    d["bottleneck"] = {
        **d["bottleneck"],
        "rate_bps": DELAY_RATE_BPS,
        "buffer": f"{DELAY_LIMIT_BYTES}B",
        "limit": limit,
        "qdisc": {"kind": "taildrop", "limit": limit},
        "ecn": False,
        "burst_bytes": FRAME,
    }
    return d


@dataclass
class BridgeTopology:
    """The namespaces of one bridge-testbed run (see the module);
    ``destroy`` removes them all."""

    prefix: str
    nflows: int
    created: list[str] = field(default_factory=list)

    def snd(self, i: int) -> str:
        return f"{self.prefix}-s{i}"

    def rcv(self, i: int) -> str:
        return f"{self.prefix}-r{i}"

    @property
    def sw1(self) -> str:
        return f"{self.prefix}-sw1"

    @property
    def rtr(self) -> str:
        return f"{self.prefix}-rtr"

    @property
    def dly(self) -> str:
        return f"{self.prefix}-dly"

    @property
    def sw2(self) -> str:
        return f"{self.prefix}-sw2"

    def exec_args(self, ns: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *args]

    def _ip(self, ns: str, lines: list[str]) -> None:
        """Several ``ip`` commands in one namespace (``ip -batch``)."""
        netns.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", timeout=60)

    def _sysctl(self, ns: str, values: dict[str, str]) -> None:
        netns.run(self.exec_args(ns, "sysctl", "-q", "-w", *(f"{k}={v}" for k, v in values.items())))

    def _offloads_off(self, ns: str, ifname: str, ethtool: str) -> None:
        features = [x for f in netns.OFFLOADS for x in (f, "off")]
        cp = netns.run(self.exec_args(ns, ethtool, "-K", ifname, *features), check=False)
        if cp.returncode != 0:
            for f in netns.OFFLOADS:
                netns.run(self.exec_args(ns, ethtool, "-K", ifname, f, "off"), check=False)
        shown = netns.run(self.exec_args(ns, ethtool, "-k", ifname)).stdout
        for feature in ("tcp-segmentation-offload", "generic-segmentation-offload",
                        "generic-receive-offload", "tx-checksumming", "rx-checksumming"):  # fmt: skip
            for line in shown.splitlines():
                if line.startswith(f"{feature}:") and line.split()[1] != "off":
                    raise LinuxBackendError(f"{ns}/{ifname}: cannot turn {feature} off")

    def build(self, flows: list[dict[str, Any]], tbf: dict[str, Any]) -> None:
        n = self.nflows
        hosts = [self.snd(i) for i in range(n)] + [self.rcv(i) for i in range(n)]
        for ns in [self.sw1, self.rtr, self.dly, self.sw2, *hosts]:
            netns.run(["ip", "netns", "add", ns])
            self.created.append(ns)
            self._ip(ns, ["link set lo up"])
            self._sysctl(
                ns, {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
            )
        # Veths made in the switches and the router, their far ends moved
        # straight into their namespaces (nothing in the machine's own).
        self._ip(
            self.sw1,
            [f"link add s{i} type veth peer name eth0 netns {self.snd(i)}" for i in range(n)]
            + [f"link add up0 type veth peer name lan0 netns {self.rtr}",
               "link add br0 type bridge stp_state 0 mcast_snooping 0", "link set br0 multicast off",
               *(f"link set s{i} master br0" for i in range(n)), "link set up0 master br0"],
        )  # fmt: skip
        self._ip(self.rtr, [f"link add wan0 type veth peer name in0 netns {self.dly}"])
        self._ip(self.dly, [f"link add out0 type veth peer name dn0 netns {self.sw2}"])
        self._ip(
            self.sw2,
            [f"link add r{i} type veth peer name eth0 netns {self.rcv(i)}" for i in range(n)]
            + ["link add br0 type bridge stp_state 0 mcast_snooping 0", "link set br0 multicast off",
               *(f"link set r{i} master br0" for i in range(n)), "link set dn0 master br0"],
        )  # fmt: skip
        ethtool = shutil.which("ethtool")
        if ethtool is None:
            raise LinuxBackendError("ethtool not found: install it (apt-get install ethtool)")
        ends = [(h, "eth0") for h in hosts]
        ends += [(self.sw1, f"s{i}") for i in range(n)] + [(self.sw1, "up0")]
        ends += [(self.rtr, "lan0"), (self.rtr, "wan0"), (self.dly, "in0"), (self.dly, "out0")]
        ends += [(self.sw2, f"r{i}") for i in range(n)] + [(self.sw2, "dn0")]
        for ns, ifname in ends:
            self._offloads_off(ns, ifname, ethtool)
        # Switches: every port up, every MAC where it is (no flooding, no learning needed).
        self._ip(self.sw1, [f"link set s{i} up" for i in range(n)] + ["link set up0 up", "link set br0 up"])
        self._ip(self.sw2, [f"link set r{i} up" for i in range(n)] + ["link set dn0 up", "link set br0 up"])
        netns.run(["bridge", "-n", self.sw1, "-batch", "-"], input="\n".join(
            [f"fdb replace {mac(1, i)} dev s{i} master static" for i in range(n)]
            + [f"fdb replace {ROUTER_SND_MAC} dev up0 master static"]) + "\n")  # fmt: skip
        netns.run(["bridge", "-n", self.sw2, "-batch", "-"], input="\n".join(
            [f"fdb replace {mac(2, i)} dev r{i} master static" for i in range(n)]
            + [f"fdb replace {ROUTER_RCV_MAC} dev dn0 master static"]) + "\n")  # fmt: skip
        # Hosts: an address, the router as their gateway, a static neighbour.
        for i, f in enumerate(flows):
            sides = ((0, self.snd(i), SND_NET, ROUTER_SND, ROUTER_SND_MAC, 1),
                     (1, self.rcv(i), RCV_NET, ROUTER_RCV, ROUTER_RCV_MAC, 2))  # fmt: skip
            for side, ns, net, gw, gw_mac, kind in sides:
                route = f"route replace default via {gw} dev eth0 onlink"
                if side == 0:
                    # The flow's algorithm from its SYN on: iperf3 sets -C only once
                    # connected (a SYN, and BBR's pacing, which stays on, under the
                    # host's default), and a namespace may not default to an
                    # algorithm tcp_allowed_congestion_control (host-wide) lacks.
                    route += f" congctl {f['cc']}"
                if side == 0 and f["init_cwnd"] != 10:
                    route += f" initcwnd {f['init_cwnd']}"
                if side == 1 and f.get("advmss"):
                    route += f" advmss {f['advmss']}"
                self._ip(ns, [f"link set eth0 address {mac(kind, i)}",
                              f"addr add {host_addr(net, i)}/16 dev eth0", "link set eth0 up", route,
                              f"neigh replace {gw} lladdr {gw_mac} dev eth0 nud permanent"])  # fmt: skip
        # Router: forwards between its two subnets, every host a static neighbour.
        self._ip(
            self.rtr,
            [f"link set lan0 address {ROUTER_SND_MAC}", f"link set wan0 address {ROUTER_RCV_MAC}",
             f"addr add {ROUTER_SND}/16 dev lan0", f"addr add {ROUTER_RCV}/16 dev wan0",
             "link set lan0 up", "link set wan0 up"]
            + [f"neigh replace {host_addr(SND_NET, i)} lladdr {mac(1, i)} dev lan0 nud permanent"
               for i in range(n)]
            + [f"neigh replace {host_addr(RCV_NET, i)} lladdr {mac(2, i)} dev wan0 nud permanent"
               for i in range(n)],
        )  # fmt: skip
        self._sysctl(self.rtr, {"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.send_redirects": "0"})
        self._ip(self.dly, ["link set in0 up", "link set out0 up"])
        # The delay hop only moves frames; its stack stays out of the way.
        self._sysctl(self.dly, {"net.ipv4.ip_forward": "0"})
        for i, f in enumerate(flows):
            self._sysctl(self.snd(i), {"net.ipv4.tcp_no_metrics_save": "1",
                                       "net.ipv4.tcp_wmem": "4096 16384 67108864",
                                       "net.ipv4.tcp_ecn": "1" if f["ecn"] else "0"})  # fmt: skip
            self._sysctl(self.rcv(i), {"net.ipv4.tcp_no_metrics_save": "1",
                                       "net.ipv4.tcp_rmem": "4096 131072 67108864"})  # fmt: skip
        # The bottleneck: tbf on the router's egress toward the receivers, its child a fifo.
        limit_bytes = tbf["limit"] if tbf["child"] == "bfifo" else tbf["limit"] * FRAME
        netns.run(["tc", "-n", self.rtr, "qdisc", "replace", "dev", "wan0", "root", "handle", "1:", "tbf",
                   "rate", f"{tbf['rate_bps']}bit", "burst", str(tbf["burst_bytes"]),
                   "limit", str(limit_bytes)])  # fmt: skip
        netns.run(["tc", "-n", self.rtr, "qdisc", "replace", "dev", "wan0", "parent", "1:1", "handle", "10:",
                   tbf["child"], "limit", str(tbf["limit"])])  # fmt: skip

    def steer_rx(self, cpus: list[int]) -> None:
        """Receive Packet Steering on the two interfaces the delay hop sends
        into: what follows (forwarding, bridging, the hosts' TCP) runs on
        ``cpus``, not on the delay hop's CPU."""
        mask = format(sum(1 << c for c in cpus), "x")
        for ns, ifname in ((self.rtr, "wan0"), (self.sw2, "dn0")):
            path = f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus"
            cp = netns.run(self.exec_args(ns, "tee", path), check=False, timeout=10, input=mask + "\n")
            if cp.returncode != 0:
                raise LinuxBackendError(f"{ns}: cannot set {path}: {cp.stderr.strip()}")

    def qdisc_stats(self) -> list[dict[str, Any]]:
        """``tc -s -j qdisc show dev wan0`` in the router."""
        cp = netns.run(["tc", "-n", self.rtr, "-s", "-j", "qdisc", "show", "dev", "wan0"], check=False)
        try:
            return list(json.loads(cp.stdout or "[]"))
        except ValueError:
            return []

    def destroy(self) -> None:
        for ns in reversed(self.created):
            netns.delete_namespace(ns)
        self.created.clear()
        netns.remove_prefix(self.prefix)


def _preflight() -> Path:
    binary = backend.preflight()
    for tool in ("tc", "bridge"):
        if shutil.which(tool) is None:
            raise LinuxNotAvailable(f"{tool} not found: install iproute2")
    _iperf3()
    return binary


def run_in_namespaces(
    scn: Scenario,
    pl: Plan,
    workdir: Path,
    topo: BridgeTopology,
    procs: backend._Procs,
    binary: Path,
    *,
    progress: Callable[[str], None] | None = None,
    realtime: bool = True,
) -> dict[str, Any]:
    """Build the testbed, run the traffic, return what its parts wrote.
    The caller removes everything whatever happens (``execute``)."""
    say = progress or (lambda m: None)
    began = time.monotonic_ns()
    n = scn.normalized
    duration_ns = int(n["duration_ns"])
    flows = [dict(f, sender_ns=topo.snd(i), receiver_ns=topo.rcv(i)) for i, f in enumerate(pl.flows)]
    for f in flows:
        f["client_args"] = [*f["client_args"], "--logfile", str(workdir / f"client{f['id']}.json")]
        f["server_args"] = [*f["server_args"], "--logfile", str(workdir / f"server{f['id']}.json")]
    say(f"building namespaces {topo.prefix}-s*|sw1|rtr|dly|sw2|r* ({2 * len(flows) + 4})")
    topo.build(flows, pl.tbf)
    dly_cpu, other_cpus = backend._cpu_plan()
    if other_cpus:
        topo.steer_rx(other_cpus)
    (workdir / "delay.json").write_text(json.dumps(delay_scenario(n)), encoding="utf-8")
    max_rtt = max(f["rtt_ns"] for f in n["flows"]) / 1e9
    limit = pl.tbf["limit"] * (1 if pl.tbf["child"] == "bfifo" else FRAME)
    drain_s = max_rtt + limit * 8 / pl.tbf["rate_bps"] + 0.3
    t0 = time.monotonic_ns() + int(STARTUP_S * 1e9)
    cfg = {
        "t0_ns": t0,
        "duration_ns": duration_ns,
        "interval_ns": int(n["sample_interval_ns"]),
        "flows": flows,
        "bottleneck_if": "wan0",
        "cpus": other_cpus,
        "drain_s": drain_s,
        "exit_grace_s": EXIT_GRACE_S,
    }
    (workdir / "drive.json").write_text(json.dumps(cfg), encoding="utf-8")
    dly_dir = workdir / "delay"
    dly_dir.mkdir()
    procs.start(
        "delay",
        topo.exec_args(
            topo.dly, str(binary), "--scenario", str(workdir / "delay.json"),
            "--if-senders", "in0", "--if-receivers", "out0", "--port-base", str(PORT_BASE),
            "--t0-ns", str(t0), "--stop-after-s", str(duration_ns / 1e9 + EXIT_GRACE_S + drain_s + 30),
            "--out", str(dly_dir), "--batch-us", "0",
            *(["--cpu", str(dly_cpu)] if dly_cpu is not None else []),
            *([] if realtime else ["--no-realtime"]),
        ),
        workdir / "delay.log",
    )  # fmt: skip
    driver = str(Path(__file__).resolve().parent / "iperfdrv.py")
    procs.start(
        "driver",
        topo.exec_args(topo.rtr, sys.executable, "-u", driver, str(workdir / "drive.json"), str(workdir)),
        workdir / "driver.log",
    )
    ready_by = t0 - int(0.2e9)
    if not backend._wait_for(dly_dir / "ready", ready_by, procs) or not backend._wait_for(
        workdir / "driver.ready", ready_by, procs
    ):
        raise LinuxBackendError(
            "the delay hop or the iperf3 servers were not ready in time: "
            + backend._tail(workdir / "delay.log")
            + " "
            + backend._tail(workdir / "driver.log")
        )
    cpu0 = backend._host_cpu()
    procs0 = cpu.snapshot()
    end = t0 + duration_ns
    shown = ""
    cpu1: tuple[int, int] | None = None
    driver_p = procs.procs["driver"]
    until = end + int((EXIT_GRACE_S + drain_s + 15) * 1e9)
    while driver_p.poll() is None:
        now = time.monotonic_ns()
        if cpu1 is None and now >= end:
            cpu1 = backend._host_cpu()
            procs1 = cpu.snapshot()
        if now > until:
            raise LinuxBackendError(
                "the iperf3 driver did not finish: " + backend._tail(workdir / "driver.log")
            )
        line = backend.traffic_progress(now, t0, duration_ns, began)
        if line != shown:
            say(line)
            shown = line
        for name, p in procs.procs.items():
            if p.poll() is not None and p.returncode != 0:
                raise LinuxBackendError(
                    f"{name} failed (status {p.returncode}): {backend._tail(workdir / f'{name}.log')}"
                )
        time.sleep(0.05)
    if driver_p.returncode != 0:
        why = backend._tail(workdir / "driver.log")
        raise LinuxBackendError(f"the iperf3 driver failed (status {driver_p.returncode}): {why}")
    if cpu1 is None:
        cpu1 = backend._host_cpu()
        procs1 = cpu.snapshot()
    tc_after = topo.qdisc_stats()
    procs.stop("delay", timeout=10)
    out: dict[str, Any] = {
        "notes": pl.notes,
        "prefix": topo.prefix,
        "t0_ns": t0,
        "tbf": pl.tbf,
        "tc": tc_after,
    }
    for name, file in (("driver", "driver.json"), ("delay", "delay/stats.json")):
        path = workdir / file
        if not path.is_file():
            raise LinuxBackendError(f"the {name} wrote no results: {backend._tail(workdir / f'{name}.log')}")
        out[name] = json.loads(path.read_text(encoding="utf-8"))
    out["iperf3"] = {}
    for fl in flows:
        out["iperf3"][fl["id"]] = {
            side: _iperf3_json(workdir / f"{side}{fl['id']}.json") for side in ("client", "server")
        }
    busy = cpu1[0] - cpu0[0]
    total = cpu1[1] - cpu0[1]
    out["host_cpu_busy"] = busy / total if total > 0 else float("nan")
    out["others_cpu_share"] = cpu.others_share(procs0, procs1)
    out["ncpu"] = os.cpu_count() or 1
    out["flows_cfg"] = flows
    return out


def _iperf3_json(path: Path) -> dict[str, Any]:
    """What a run needs of one iperf3's JSON: bytes, retransmissions, its error."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return {"error": f"no JSON ({type(e).__name__})"}
    end = doc.get("end") or {}
    sent = end.get("sum_sent") or {}
    recv = end.get("sum_received") or {}
    return {
        "bytes_sent": sent.get("bytes"),
        "bytes_received": recv.get("bytes"),
        "retransmits": sent.get("retransmits"),
        "seconds": sent.get("seconds") or recv.get("seconds"),
        "error": doc.get("error", ""),
    }


# --------------------------------------------------------------------------- tables and checks

#: What this testbed asks of the kernel, by revision (``linux.generator`` of
#: its runs, and their identity in ``conformance.kernel_hash``).
DRIVER_REVISION = REVISIONS[TESTBED]


def _iperf3_version() -> str:
    try:
        cp = subprocess.run([_iperf3(), "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (cp.stdout.splitlines() or [""])[0].strip()


def _expected_end(doc: dict[str, Any]) -> bool:
    """Whether an iperf3's error is how a flow ends here: its client told to
    stop at the run's end (SIGINT: "interrupt - the client has terminated"),
    its server told so by it ("the client has terminated")."""
    return "the client has terminated" in str(doc.get("error") or "")


def _flow_errors(raw: dict[str, Any]) -> dict[int, str]:
    """Each flow's failure, if any: an iperf3 error other than the expected
    end, an iperf3 that exited otherwise than told, a data connection never
    opened."""
    drv = raw["driver"]
    procs = {p["name"]: p for p in drv["processes"]}
    out: dict[int, str] = {}
    for spec, res in zip(raw["flows_cfg"], drv["flows"], strict=True):
        i = int(spec["id"])
        docs = raw["iperf3"].get(i) or raw["iperf3"].get(str(i)) or {}
        why = []
        if "launched_s" not in res:
            continue  # started after the end: never run, as in the other testbed
        if "established_s" not in res:
            why.append("its data connection was never established")
        for side in ("client", "server"):
            doc = docs.get(side) or {}
            if doc.get("error") and not _expected_end(doc):
                why.append(f"iperf3 {side}: {doc['error']}")
            st = (procs.get(f"{side}{i}") or {}).get("status")
            if st not in (0, 1) or (st == 1 and not _expected_end(doc)):
                why.append(f"iperf3 {side} exited with status {st}")
        if why:
            out[i] = "; ".join(dict.fromkeys(why))
    return out


def _frames(raw: dict[str, Any]) -> list[dict[str, int]]:
    """Per flow, frames its sender sent and its receiver got, and back (the
    hosts' ``eth0`` counters over the run: each carries one flow's two
    connections and nothing else)."""
    drv = raw["driver"]
    b, a = drv["interfaces"]["before"], drv["interfaces"]["after"]

    def d(ns: str, key: str) -> int:
        return int(a[ns]["eth0"][key]) - int(b[ns]["eth0"][key])

    out = []
    for spec in raw["flows_cfg"]:
        s, r = spec["sender_ns"], spec["receiver_ns"]
        out.append(
            {
                "flow": int(spec["id"]),
                "data_sent": d(s, "tx_packets"),
                "data_received": d(r, "rx_packets"),
                "acks_sent": d(r, "tx_packets"),
                "acks_received": d(s, "rx_packets"),
                "host_drops": d(s, "rx_drop") + d(s, "tx_drop") + d(r, "rx_drop") + d(r, "tx_drop"),
            }
        )
    return out


def _queue_rows(n: dict[str, Any], raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The queue table from the tbf's counters at each sampling instant."""
    from .._core import capacity_bits

    sc_json = json.dumps(n)
    q = raw["driver"]["qdisc"]
    first = q["before"].get("1:", {})
    prev_bytes, prev_t = int(first.get("bytes", 0)), 0.0
    rows = []
    for s in q["samples"]:
        root = s.get("1:", {})
        t = float(s["time_s"])
        cap = capacity_bits(sc_json, round(prev_t * 1e9), round(t * 1e9), 0)
        sent = int(root.get("bytes", 0))
        drops = int(root.get("drops", 0)) - int(first.get("drops", 0))
        rows.append(
            {
                "time_s": t,
                "link": "bottleneck",
                "backlog_bytes": int(root.get("backlog", 0)),
                "backlog_pkts": int(root.get("qlen", 0)),
                "sojourn_mean_ms": NAN,
                "sojourn_max_ms": NAN,
                "drops": drops,
                "drops_overflow": drops,
                "drops_aqm": 0,
                "drops_policer": 0,
                "marks": 0,
                "wire_utilization": (sent - prev_bytes) * 8 / cap if cap > 0 else NAN,
            }
        )
        prev_bytes, prev_t = sent, t
    return rows


def tables_raw(n: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """What this testbed measured, in the shape ``tables.build_tables``
    reads from the other testbed's processes."""
    import pandas as pd

    drv = raw["driver"]
    errors = _flow_errors(raw)
    frames = _frames(raw)
    q = drv["qdisc"]
    first = q["before"].get("1:", {})
    qrows = _queue_rows(n, raw)
    at_end = q["samples"][-1].get("1:", {}) if q["samples"] else first
    bn_flows = []
    for fr in frames:
        drops = fr["data_sent"] - fr["data_received"]
        bn_flows.append(
            {
                "flow": fr["flow"],
                # Frames of the flow's connections the tbf dropped: sent, never received.
                "drops": drops,
                "drops_overflow": drops,
                "drops_aqm": 0,
                "drops_policer": 0,
                "drops_random": 0,
                "acks_lost": fr["acks_sent"] - fr["acks_received"],
                "marks": 0,
                "ack_interval_mean_us": None,
                "ack_interval_cv": None,
            }
        )
    bottleneck = {
        "departures": int(at_end.get("packets", 0)) - int(first.get("packets", 0)),
        "drops": int(at_end.get("drops", 0)) - int(first.get("drops", 0)),
        # At the sampling instants only: the tbf keeps no maximum.
        "max_backlog_bytes": max((r["backlog_bytes"] for r in qrows), default=0),
        "max_backlog_pkts": max((r["backlog_pkts"] for r in qrows), default=0),
        **{k: None for k in ("qdelay_mean_ms", "qdelay_p50_ms", "qdelay_p95_ms", "qdelay_p99_ms")},
    }
    sender_flows = []
    receiver_flows = []
    last = {}
    for c in drv["counts"]:
        last[int(c["flow"])] = int(c["bytes"])
    for res in drv["flows"]:
        i = int(res["flow"])
        sender_flows.append({**res, "error": errors.get(i, "")})
        receiver_flows.append({"flow": i, "bytes": last.get(i, 0), "error": ""})
    queue_csv = pd.DataFrame(qrows).to_csv(index=False) if qrows else ""
    return {
        "sender": {"flows": sender_flows, "samples": drv["samples"], "netstat": drv.get("netstat", {})},
        "receiver": {"flows": receiver_flows, "counts": drv["counts"]},
        "bottleneck": {"flows": bn_flows, "bottleneck": bottleneck},
        "queue_csv": queue_csv,
        "flow_queue_csv": "time_s,flow,queue_backlog_bytes\n",
    }


def self_check(n: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """This testbed's self-checks: the delay hop kept time and neither
    queued nor dropped, nothing was lost outside the tbf, the hosts were not
    starved of CPU, every flow ran."""
    dl = raw["delay"]
    drv = raw["driver"]
    lat = dl["lateness_us"]
    frames = _frames(raw)
    tbf_drops = tables_raw_drops(raw)
    flow_drops = sum(f["data_sent"] - f["data_received"] for f in frames)
    lost_delay_hop = (
        int(dl["rx_socket_drops"]) + int(dl["send_nobuf_drops"]) + int(dl["veth_tx_drops"])
        + int(dl["frames_oversize"]) + int(dl["bottleneck"]["drops"])
    )  # fmt: skip
    acks_lost = sum(f["acks_sent"] - f["acks_received"] for f in frames)
    lost_outside = (
        lost_delay_hop + abs(flow_drops - tbf_drops) + abs(acks_lost) + sum(f["host_drops"] for f in frames)
    )
    iperfs = [p for p in drv["processes"] if p.get("cpu_load") is not None]

    def most(prefix: str, key: str) -> float:
        v = [float(p[key]) for p in iperfs if p["name"].startswith(prefix) and p.get(key) is not None]
        return max(v) if v else NAN

    wall = float(drv.get("wall_s") or 0)
    soft = drv.get("ksoftirqd") or {}
    soft_wall = float(soft.get("wall_s") or 0)
    soft_wait = max((float(t["wait_s"]) for t in (soft.get("threads") or {}).values()), default=NAN)
    values = {
        "lateness_p50_us": _f(lat.get("p50")),
        "lateness_p99_us": _f(lat.get("p99")),
        "lateness_p999_us": _f(lat.get("p999")),
        "lateness_max_us": _f(lat.get("max")),
        "lateness_max_at_s": _f(lat.get("max_at_s")),
        "releases_late_over_1ms": _f(lat.get("over_1ms")),
        "delay_hop_queue_max_us": int(dl["bottleneck"]["max_backlog_bytes"]) * 8 / DELAY_RATE_BPS * 1e6,
        "frames_lost_outside_qdisc": float(lost_outside),
        "bottleneck_cpu_load": _f(dl.get("cpu_load")),
        "sender_cpu_load": most("client", "cpu_load"),
        "receiver_cpu_load": most("server", "cpu_load"),
        "driver_cpu_load": (float(drv["cpu_user_s"]) + float(drv["cpu_sys_s"])) / wall if wall > 0 else NAN,
        "runqueue_share_max": max(most("client", "runqueue_share"), most("server", "runqueue_share")),
        "ksoftirqd_wait_share": soft_wait / soft_wall if soft_wall > 0 else NAN,
        "others_cpu_share": _f(raw.get("others_cpu_share")),
        "driver_sample_late_max_s": _f((drv.get("lateness_s") or {}).get("sample_max")),
        "driver_launch_late_max_s": _f((drv.get("lateness_s") or {}).get("launch_max")),
        "host_cpu_busy": _f(raw.get("host_cpu_busy")),
    }
    th = {**THRESHOLDS, **BRIDGE_THRESHOLDS}
    warnings = []
    if values["lateness_p99_us"] > th["lateness_p99_us"]:
        warnings.append(
            f"delay hop release lateness p99 {values['lateness_p99_us']:.0f} us "
            f"> {th['lateness_p99_us']:.0f} us"
        )
    if values["lateness_max_us"] > th["lateness_max_us"]:
        warnings.append(
            f"delay hop release lateness max {values['lateness_max_us'] / 1e3:.1f} ms "
            f"> {th['lateness_max_us'] / 1e3:.0f} ms"
        )
    if values["delay_hop_queue_max_us"] > th["delay_hop_queue_max_us"]:
        warnings.append(f"the delay hop queued frames ({values['delay_hop_queue_max_us']:.0f} us at most)")
    if lost_outside > th["frames_lost_outside_qdisc"]:
        warnings.append(
            f"{lost_outside} frames lost outside the tbf (delay hop {lost_delay_hop}, flows' data "
            f"{flow_drops} against the tbf's {tbf_drops}, ACKs {acks_lost}, hosts' interfaces "
            f"{sum(f['host_drops'] for f in frames)})"
        )
    loads = (("the delay hop", "bottleneck_cpu_load"), ("an iperf3 client", "sender_cpu_load"),
             ("an iperf3 server", "receiver_cpu_load"), ("the iperf3 driver", "driver_cpu_load"))  # fmt: skip
    for who, key in loads:
        v = values[key]
        if v > th["process_cpu_load"]:
            warnings.append(f"{who} used {v:.0%} of a core (> {th['process_cpu_load']:.0%})")
    if values["runqueue_share_max"] > th["runqueue_share"]:
        warnings.append(
            f"an iperf3 waited {values['runqueue_share_max']:.0%} of its life for a CPU "
            f"(> {th['runqueue_share']:.0%})"
        )
    if values["others_cpu_share"] > th["others_cpu_share"]:
        warnings.append(
            f"other work took {values['others_cpu_share']:.0%} of the run's CPUs (> "
            f"{th['others_cpu_share']:.0%}), where the tbf, the forwarding and the hosts' TCP run"
        )
    if values["ksoftirqd_wait_share"] > th["ksoftirqd_wait_share"]:
        warnings.append(
            f"a softirq thread of the hosts' CPUs waited {values['ksoftirqd_wait_share']:.1%} of the "
            f"traffic's time for a CPU (> {th['ksoftirqd_wait_share']:.0%})"
        )
    for what, key in (
        ("sampled", "driver_sample_late_max_s"),
        ("started a client", "driver_launch_late_max_s"),
    ):
        if values[key] > th[key]:
            warnings.append(f"the driver {what} {values[key] * 1e3:.1f} ms late (> {th[key] * 1e3:.0f} ms)")
    if values["host_cpu_busy"] > th["host_cpu_busy"]:
        warnings.append(
            f"the machine was {values['host_cpu_busy']:.0%} busy ({raw.get('ncpu', 1)} CPUs; "
            "other work competes) (informational)"
        )
    for i, why in sorted(_flow_errors(raw).items()):
        warnings.append(f"flow {i}: {why}")
    if not dl.get("sched_fifo"):
        warnings.append("the delay hop did not get SCHED_FIFO (informational)")
    return {
        "trustworthy": not any("informational" not in w for w in warnings),
        "warnings": warnings,
        "values": {k: (None if math.isnan(v) else v) for k, v in values.items()},
        "thresholds": th,
    }


def tables_raw_drops(raw: dict[str, Any]) -> int:
    """The tbf's drops over the whole run, the flows' tails after its end included."""
    q = raw["driver"]["qdisc"]
    return int(q["after"].get("1:", {}).get("drops", 0)) - int(q["before"].get("1:", {}).get("drops", 0))


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return NAN


#: What a run records of the delay hop's statistics (``ccarena-bottleneck``'s stats.json).
DELAY_HOP_KEYS = (
    "frames_fwd",
    "frames_rev",
    "frames_sent",
    "sched_fifo",
    "cpu_load",
    "lateness_us",
    "bottleneck",
)


def run_meta(
    scn: Scenario, raw: dict[str, Any], check: dict[str, Any], started_utc: str = ""
) -> dict[str, Any]:
    drv = raw["driver"]
    q = drv["qdisc"]
    root_end = (q["samples"][-1] if q["samples"] else q["before"]).get("1:", {})
    flow_times = {
        str(f["flow"]): {k: f.get(k) for k in ("launched_s", "syn_s", "established_s")} for f in drv["flows"]
    }
    return {
        "backend": backend.BACKEND,
        "ccarena_version": __version__,
        "hash": scn.hash,
        "scenario": scn.normalized,
        "kernel": backend.kernel_version(),
        "linux": {
            "kernel": backend.kernel_version(),
            "testbed": TESTBED,
            "started_utc": started_utc,
            "host": host_info(),
            "ccarena_commit": ccarena_commit(),
            "generator": DRIVER_REVISION,
            "traffic": _iperf3_version(),
            "notes": raw["notes"],
            "bottleneck": "tbf",
            "tbf": raw["tbf"],
            # `tc -s -j qdisc show dev wan0` once the traffic was over.
            "tc": raw["tc"],
            # The delay hop's own record: frames each way, its lateness, its queue.
            "delay_hop": {k: raw["delay"].get(k) for k in DELAY_HOP_KEYS},
            "trustworthy": check["trustworthy"],
            "warnings": check["warnings"],
            "self_check": check["values"],
            "thresholds": check["thresholds"],
            # Not measured here: the delay hop's turnaround meter would count
            # the tbf's queue as the senders' time.
            "turnarounds": None,
            "windows_clamped": 0,
            "counts_read_s": {str(f["flow"]): f.get("final_s") for f in drv["flows"]},
            # When each flow's iperf3 was started, and its data connection's
            # SYN left and it was established: s from the run's start, to 1 ms
            # (the data begins a few round trips after the start: iperf3's
            # control connection comes first).
            "flow_times": flow_times,
            "frames": _frames(raw),
            "iperf3": {str(k): v for k, v in raw["iperf3"].items()},
            "processes": drv["processes"],
            "tcpext": drv.get("netstat", {}),
        },
        "run_stats": {
            "bottleneck_packets": int(root_end.get("packets", 0))
            - int(q["before"].get("1:", {}).get("packets", 0)),
            "frames_forwarded": int(raw["delay"]["frames_sent"]),
        },
    }


def execute(
    scn: Scenario,
    out: str | Path | None = None,
    *,
    root: str | Path = DEFAULT_ROOT,
    figure: bool = False,
    progress: Callable[[str], None] | None = None,
    realtime: bool = True,
) -> Results:
    """Run ``scn`` on the bridge testbed and write its run directory (as
    ``backend.execute``: ``out``, or a new ``<root>/<name>/<hash>-linux-<UTC time>``).
    A scenario this testbed cannot run is refused before anything is made."""
    pl = plan(scn)
    binary = _preflight()
    started = utc_now()
    target = Path(out) if out is not None else new_kernel_run_dir(scn.name, scn.short_hash, root)
    check_target(target)
    from ..plots.timeseries import FIGURE_NAME, plot_run

    owner: netns.Owner | None = None
    workdir: Path | None = None
    procs = backend._Procs()
    topo: BridgeTopology | None = None
    with SignalGuard(
        lambda: progress("removing namespaces") if progress is not None else None,
        procs.kill_all,
        lambda: topo.destroy() if topo is not None else None,
        lambda: shutil.rmtree(workdir, ignore_errors=True) if workdir is not None else None,
        lambda: owner.release() if owner is not None else None,
    ):
        with deferred():
            owner = netns.Owner()
        workdir = owner.workdir()
        topo = BridgeTopology(owner.prefix, len(pl.flows))
        raw = run_in_namespaces(scn, pl, workdir, topo, procs, binary, progress=progress, realtime=realtime)
    n = scn.normalized
    tables = build_tables(n, tables_raw(n, raw))
    check = self_check(n, raw)
    import pyarrow as pa

    tables["summary"] = (
        tables["summary"]
        .append_column("trustworthy", pa.array([check["trustworthy"]]))
        .append_column("warnings", pa.array(["; ".join(check["warnings"])]))
    )
    host = {"host_sender_p50_us": None, "host_receiver_p50_us": None}
    for k, v in {**check["values"], **host}.items():
        x = float("nan") if v is None else float(v)
        tables["summary"] = tables["summary"].append_column(k, pa.array([x], pa.float64()))
    meta = run_meta(scn, raw, check, started)
    results = Results.from_arrow(tables, meta)

    def draw(tmp: Path) -> None:
        plot_run(results, tmp / FIGURE_NAME)

    write_run(target, meta, tables, draw if figure else None)
    results.path = target
    return results
