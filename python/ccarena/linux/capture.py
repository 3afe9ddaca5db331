"""Packet captures on the Linux backend (``[capture]``): tcpdump in the run's
namespaces, converted to the pcapng files the simulator writes.

The points are the simulator's:

- ``sender``: the senders' interface (``eth0`` in ``<prefix>-snd``): data
  as the kernel hands it to the device, ACKs as they arrive;
- ``receiver``: the receivers' interface (``eth0`` in ``<prefix>-rcv``);
- ``bottleneck``: what the bottleneck sends towards the receivers: the
  data after the shaper and the queue discipline, as the simulator's link
  point. The bottleneck writes its frames past the kernel's capture taps
  (``PACKET_QDISC_BYPASS``), so they are taken where they arrive, inbound
  on the receivers' ``eth0``; a veth adds no delay.

Addresses and ports are the simulator's too (``capture::PORT_BASE``), so
the same display filter works on both backends' files. Times are rebased
to the run's start (the flows table's ``start_s`` clock) and kept in
nanoseconds. Each tcpdump runs beside the run and costs CPU; frames the
kernel could not hand to it are counted (``dropped_by_kernel`` in
``scenario.json``) and flagged, never hidden.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LinuxBackendError, LinuxUnsupported
from ..version import __version__
from . import netns

__all__ = ["Tap", "check", "finish", "start"]

#: point: (namespace suffix, interface, direction for ``tcpdump -Q``).
POINTS = {
    "sender": ("snd", netns.HOST_IF, None),
    "receiver": ("rcv", netns.HOST_IF, None),
    "bottleneck": ("rcv", netns.HOST_IF, "in"),
}
#: tcpdump's capture buffer (KiB, ``-B``): a few seconds of a 1 Gbit/s link.
BUFFER_KIB = 65536


@dataclass
class Tap:
    point: str
    pcap: Path
    log: Path


def check(normalized: dict[str, Any]) -> list[str]:
    """The points of the scenario's ``[capture]`` (none without one);
    raises for a point the Linux backend cannot tap or a missing tcpdump."""
    spec = normalized.get("capture")
    if not spec:
        return []
    points = []
    for p in spec["at"]:
        name = p if isinstance(p, str) else p["link"]
        if name not in POINTS or (not isinstance(p, str) and normalized.get("links")):
            raise LinuxUnsupported(
                f"capture.at: {name!r}: the Linux backend captures at the sender, the receiver "
                "and the dumbbell's bottleneck"
            )
        points.append(name)
    if shutil.which("tcpdump") is None:
        raise LinuxBackendError("capture: tcpdump not found; install it (Debian: apt-get install tcpdump)")
    return points


def _filter(spec: dict[str, Any], port_base: int) -> list[str]:
    """The BPF filter: TCP, the flows asked for, the direction asked for."""
    parts = ["tcp"]
    if spec.get("flows"):
        parts.append("(" + " or ".join(f"port {port_base + i}" for i in spec["flows"]) + ")")
    packets = spec.get("packets", "all")
    if packets == "data":
        parts.append(f"dst host {netns.RECEIVER_ADDR}")
    elif packets == "acks":
        parts.append(f"src host {netns.RECEIVER_ADDR}")
    return [" and ".join(parts)]


def start(normalized: dict[str, Any], topo: Any, procs: Any, workdir: Path, port_base: int) -> list[Tap]:
    """Start one tcpdump per point, before any flow; returns once each is
    listening."""
    spec = normalized.get("capture")
    if not spec:
        return []
    taps = []
    for name in check(normalized):
        suffix, iface, direction = POINTS[name]
        ns = f"{topo.prefix}-{suffix}"
        tap = Tap(name, workdir / f"capture-{name}.pcap", workdir / f"capture-{name}.log")
        args = [
            "tcpdump", "-i", iface, "-n", "-s", str(spec["snaplen"]), "-B", str(BUFFER_KIB),
            "--time-stamp-precision=nano", "-Z", "root", "-c", str(spec["max_packets"]),
            "-w", str(tap.pcap),
            *(["-Q", direction] if direction else []),
            *_filter(spec, port_base),
        ]  # fmt: skip
        procs.start(f"capture-{name}", topo.exec_args(ns, *args), tap.log)
        taps.append(tap)
    deadline = time.monotonic() + 10
    for tap in taps:
        while "listening on" not in tap.log.read_text(errors="replace"):
            p = procs.procs[f"capture-{tap.point}"]
            if p.poll() is not None or time.monotonic() > deadline:
                said = tap.log.read_text(errors="replace")[-300:]
                raise LinuxBackendError(f"capture: tcpdump at the {tap.point} did not start: {said}")
            time.sleep(0.02)
    return taps


_DROPPED = re.compile(r"(\d+) packets? dropped by kernel")


def finish(taps: list[Tap], procs: Any, origin_realtime_ns: int, kernel: str) -> list[dict[str, Any]]:
    """Stop the tcpdumps and convert their files: one entry per point as
    ``runner.capture_meta`` and ``capture_files`` read them, plus the
    frames the kernel dropped before tcpdump saw them."""
    from .. import _core

    out = []
    for tap in taps:
        procs.stop(f"capture-{tap.point}", timeout=10)
        if not tap.pcap.is_file():
            raise LinuxBackendError(
                f"capture: tcpdump at the {tap.point} wrote nothing: {tap.log.read_text()[-300:]}"
            )
        m = _DROPPED.search(tap.log.read_text(errors="replace"))
        data, frames = _core.pcap_to_pcapng(
            tap.pcap.read_bytes(),
            tap.point,
            f"ccarena {__version__} (Linux backend, tcpdump)",
            f"Linux {kernel}: times from the run's start",
            origin_realtime_ns,
        )
        out.append(
            {
                "name": tap.point,
                "frames": frames,
                "skipped": 0,
                "dropped_by_kernel": int(m.group(1)) if m else 0,
                "pcapng": data,
            }
        )
    return out
