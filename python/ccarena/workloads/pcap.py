"""Packet captures -> unidirectional flows -> transmission chunks.

``read_pcap`` streams a pcap or pcapng file (read with dpkt) once, keeping
one small accumulator per flow and the chunks closed so far, never the
packets. A flow is one direction of a 5-tuple (protocol, source address and
port, destination address and port). A packet's payload is its IP length
minus the IP and transport headers, so a capture truncated by its snaplen
(as backbone traces are) still gives the sizes sent.

Chunks: a flow's data packets (payload > 0) are grouped into transmission
chunks; a new chunk starts when the pause since the flow's previous data
packet is **at least** the threshold (a pause of exactly 100 ms splits, one
of 99.999 ms does not). Times are integer nanoseconds from the capture's
first packet, so the comparison is exact at the capture's resolution.
Packets without payload (SYN, pure ACKs) count in the flow's packets, start
and end, but neither start nor extend a chunk.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_THRESHOLD_S", "Trace", "merge_chunks", "read_pcap"]

DEFAULT_THRESHOLD_S = 0.1

_TCP, _UDP = 6, 17
_PROTO_NAMES = {_TCP: "tcp", _UDP: "udp"}

# Link types (pcap-linktype(7)).
_DLT_NULL, _DLT_EN10MB, _DLT_RAW, _DLT_LOOP, _DLT_LINUX_SLL = 0, 1, 101, 108, 113
_DLT_RAW_ALT = (12, 14)  # DLT_RAW on some BSDs
_DLT_IPV4, _DLT_IPV6, _DLT_LINUX_SLL2 = 228, 229, 276

_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_ETH_VLAN = (0x8100, 0x88A8, 0x9100)
# IPv6 extension headers we walk over (hop-by-hop, routing, destination options); 44 = fragment, 51 = AH.
_V6_EXT = (0, 43, 60)


def _ns(ts: Any, ticks_per_s: float) -> int:
    """A dpkt timestamp as integer nanoseconds since the epoch, exact at the
    capture's resolution: dpkt gives a Decimal for nanosecond pcap files and
    a float otherwise, which is rounded to the capture's tick (exact for
    microsecond captures; ~0.25 us for nanosecond pcapng at today's epoch)."""
    if isinstance(ts, Decimal):
        return int(ts * 1_000_000_000)
    if ticks_per_s <= 1e6 and 1_000_000_000 % int(ticks_per_s) == 0:
        return round(ts * ticks_per_s) * (1_000_000_000 // int(ticks_per_s))
    return round(ts * 1e9)


def _network_offset(buf: bytes, linktype: int) -> tuple[int, int] | None:
    """(offset of the IP header, IP version) for a link-layer frame, or None."""
    if linktype == _DLT_EN10MB:
        off, etype = 12, None
        while True:
            if len(buf) < off + 2:
                return None
            etype = (buf[off] << 8) | buf[off + 1]
            if etype in _ETH_VLAN:
                off += 4
                continue
            off += 2
            break
    elif linktype == _DLT_LINUX_SLL:
        if len(buf) < 16:
            return None
        etype, off = (buf[14] << 8) | buf[15], 16
    elif linktype == _DLT_LINUX_SLL2:
        if len(buf) < 20:
            return None
        etype, off = (buf[0] << 8) | buf[1], 20
    elif linktype in (_DLT_NULL, _DLT_LOOP):
        if len(buf) < 5:
            return None
        off = 4
        etype = None
    elif linktype in (_DLT_RAW, _DLT_IPV4, _DLT_IPV6, *_DLT_RAW_ALT):
        off, etype = 0, None
    else:
        raise ValueError(f"unsupported link type {linktype} (Ethernet, Linux SLL, raw IP, null/loopback)")
    if etype is not None:
        if etype == _ETH_IPV4:
            return off, 4
        if etype == _ETH_IPV6:
            return off, 6
        return None
    if len(buf) <= off:
        return None
    v = buf[off] >> 4
    return (off, v) if v in (4, 6) else None


@dataclass
class _Stats:
    packets: int = 0  # records in the file
    used: int = 0  # TCP/UDP packets attributed to a flow
    not_ip: int = 0  # not IPv4/IPv6 (ARP, ...)
    other_proto: int = 0  # IP but neither TCP nor UDP (or protocol filtered out)
    fragments: int = 0  # IPv4/IPv6 non-first fragments (no transport header)
    short: int = 0  # captured too short to read the ports (or data offset)
    truncated: int = 0  # captured less than the IP length says (payload taken from the IP length)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _parse(buf: bytes, off: int, version: int, protos: frozenset[int], st: _Stats):
    """(proto, src, dst, sport, dport, payload) of an IP packet at ``off``, or None."""
    n = len(buf)
    if version == 4:
        if n < off + 20:
            st.short += 1
            return None
        ihl = (buf[off] & 0x0F) * 4
        total = (buf[off + 2] << 8) | buf[off + 3]
        if ((buf[off + 6] & 0x1F) << 8) | buf[off + 7]:  # fragment offset != 0
            st.fragments += 1
            return None
        proto = buf[off + 9]
        src, dst = buf[off + 12 : off + 16], buf[off + 16 : off + 20]
        if total == 0:  # captured on a host with segmentation offload: length unknown, use what is there
            total = n - off
        ip_payload = total - ihl
        t = off + ihl
    else:
        if n < off + 40:
            st.short += 1
            return None
        plen = (buf[off + 4] << 8) | buf[off + 5]
        proto = buf[off + 6]
        src, dst = buf[off + 8 : off + 24], buf[off + 24 : off + 40]
        t = off + 40
        ip_payload = plen
        while proto in _V6_EXT or proto == 44 or proto == 51:
            if n < t + 8:
                st.short += 1
                return None
            if proto == 44:
                if ((buf[t + 2] << 8 | buf[t + 3]) & 0xFFF8) != 0:
                    st.fragments += 1
                    return None
                hl = 8
            elif proto == 51:
                hl = (buf[t + 1] + 2) * 4
            else:
                hl = (buf[t + 1] + 1) * 8
            proto = buf[t]
            t += hl
            ip_payload -= hl
    if proto not in protos:
        st.other_proto += 1
        return None
    if proto == _TCP:
        if n < t + 13:
            st.short += 1
            return None
        hl = (buf[t + 12] >> 4) * 4
    else:
        if n < t + 4:
            st.short += 1
            return None
        hl = 8
    sport = (buf[t] << 8) | buf[t + 1]
    dport = (buf[t + 2] << 8) | buf[t + 3]
    if n < t + ip_payload:
        st.truncated += 1
    return proto, src, dst, sport, dport, max(ip_payload - hl, 0)


def _open(f: BinaryIO):
    """A dpkt reader for a pcap or pcapng stream, and its timestamp ticks per second."""
    import dpkt

    magic = f.read(4)
    f.seek(0)
    if magic == b"\x0a\x0d\x0d\x0a":
        r = dpkt.pcapng.Reader(f)
        return r, float(getattr(r, "_divisor", 1e6))
    r = dpkt.pcap.Reader(f)
    # dpkt gives Decimal timestamps for nanosecond files, floats for microsecond ones
    return r, 1e6


def _addr(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.ip_address(b))


@dataclass
class Trace:
    """Flows and chunks read from a capture.

    ``flows``: one row per unidirectional flow, in order of first packet:
    ``flow`` (0..), ``proto`` (``"tcp"``/``"udp"``), ``src``, ``sport``, ``dst``,
    ``dport``, ``start_ns`` and ``end_ns`` (first and last packet, any payload,
    from the capture's first packet), ``packets``, ``data_packets``,
    ``bytes`` (payload) and ``chunks`` (how many).

    ``chunks``: one row per chunk, by flow then time: ``flow``, ``start_ns``
    and ``end_ns`` (first and last data packet, from the capture's first
    packet), ``bytes``, ``packets``. ``threshold_ns`` is the pause that split
    them; ``epoch_s`` the capture time of the first packet (UNIX seconds);
    ``duration_ns`` first to last packet of the capture; ``stats`` what was
    read and skipped.
    """

    flows: pd.DataFrame
    chunks: pd.DataFrame
    threshold_ns: int
    epoch_s: float = 0.0
    duration_ns: int = 0
    source: str = ""
    stats: dict[str, int] = field(default_factory=dict)

    def split(self, threshold_s: float | None) -> pd.DataFrame:
        """The chunks at a coarser split threshold (>= the one read with);
        ``None`` or ``inf`` = never split (one chunk per flow with data)."""
        thr = None if threshold_s is None or np.isinf(threshold_s) else round(threshold_s * 1e9)
        if thr is not None and thr < self.threshold_ns:
            raise ValueError(
                f"threshold {threshold_s} s is finer than the {self.threshold_ns / 1e9} s the trace was read "
                "with: read it again with a smaller threshold"
            )
        return merge_chunks(self.chunks, thr)

    def window(self, duration_s: float, start_s: float = 0.0) -> Trace:
        """The trace as if captured only during [start, start + duration), from
        the chunks: flows keep the chunks that start inside (a chunk that
        runs past the end is kept whole), flows without one are dropped,
        times are shifted to the window's start, and ``packets`` counts data
        packets only. ``read_pcap(..., duration_s=T)`` gives the first T
        seconds exactly."""
        t0, t1 = round(start_s * 1e9), round((start_s + duration_s) * 1e9)
        ch = self.chunks[(self.chunks.start_ns >= t0) & (self.chunks.start_ns < t1)].copy()
        ch["start_ns"] -= t0
        ch["end_ns"] -= t0
        fl = self.flows[self.flows.flow.isin(ch.flow.unique())].copy()
        agg = ch.groupby("flow").agg(
            first=("start_ns", "min"), last=("end_ns", "max"), bytes=("bytes", "sum"), n=("bytes", "size")
        )
        fl = fl.set_index("flow")
        # a flow that began before the window is first seen at its first chunk inside
        fl["start_ns"] = np.where(fl.start_ns >= t0, fl.start_ns - t0, agg["first"])
        fl["end_ns"] = agg["last"]
        fl["bytes"] = agg["bytes"]
        fl["chunks"] = agg["n"]
        fl["data_packets"] = ch.groupby("flow").packets.sum()
        fl["packets"] = fl["data_packets"]  # packets without payload are not kept per chunk
        fl = fl.reset_index().sort_values(["start_ns", "flow"], kind="stable").reset_index(drop=True)
        return replace(
            self,
            flows=fl,
            chunks=ch.reset_index(drop=True),
            epoch_s=self.epoch_s + start_s,
            duration_ns=min(t1, self.duration_ns) - t0,
        )


def merge_chunks(chunks: pd.DataFrame, threshold_ns: int | None) -> pd.DataFrame:
    """Merge consecutive chunks of a flow whose pause (start of the next minus
    end of the previous) is below ``threshold_ns``; ``None`` merges all of a
    flow's chunks. Exact: chunks split at threshold T merged at T' >= T are
    the chunks one would get splitting the packets at T'."""
    cols = ["flow", "start_ns", "end_ns", "bytes", "packets"]
    if len(chunks) == 0:
        return chunks[cols].copy()
    c = chunks.sort_values(["flow", "start_ns"], kind="stable")
    flow = c.flow.to_numpy()
    start = c.start_ns.to_numpy()
    end = c.end_ns.to_numpy()
    new = np.ones(len(c), dtype=bool)
    same = flow[1:] == flow[:-1]
    if threshold_ns is None:
        new[1:] = ~same
    else:
        new[1:] = ~same | (start[1:] - end[:-1] >= threshold_ns)
    idx = np.flatnonzero(new)
    return pd.DataFrame(
        {
            "flow": flow[idx],
            "start_ns": start[idx],
            "end_ns": np.maximum.reduceat(end, idx),
            "bytes": np.add.reduceat(c.bytes.to_numpy(), idx),
            "packets": np.add.reduceat(c.packets.to_numpy(), idx),
        }
    )


def read_pcap(
    path: str | Path,
    *,
    threshold_s: float = DEFAULT_THRESHOLD_S,
    protocols: tuple[str, ...] = ("tcp", "udp"),
    duration_s: float | None = None,
    idle_timeout_s: float | None = None,
) -> Trace:
    """Read a pcap or pcapng file into flows and chunks (see the module doc).

    ``threshold_s``: the pause that starts a new chunk (>=). ``protocols``:
    which transport protocols make flows. ``duration_s``: stop after that
    much capture time (the first T seconds). ``idle_timeout_s``: a 5-tuple
    silent for at least that long starts a new flow (default: never, a
    5-tuple is one flow for the whole capture).

    Streaming: memory holds one accumulator per flow and the closed chunks,
    not the packets.
    """
    path = Path(path)
    want = {"tcp": _TCP, "udp": _UDP}
    try:
        protos = frozenset(want[p.lower()] for p in protocols)
    except KeyError as e:
        raise ValueError(f"unknown protocol {e.args[0]!r}: use 'tcp' and/or 'udp'") from None
    thr = round(threshold_s * 1e9)
    if thr <= 0:
        raise ValueError("threshold_s must be positive")
    limit = None if duration_s is None else round(duration_s * 1e9)
    idle = None if idle_timeout_s is None else round(idle_timeout_s * 1e9)

    st = _Stats()
    # key -> [flow id, first, last, packets, data packets, bytes, chunk start, chunk last, chunk bytes,
    #         chunk packets, chunks closed]
    acc: dict[tuple, list[int]] = {}
    keys: list[tuple] = []  # flow id -> key
    done: list[list[int]] = []  # accumulators of flows ended by the idle timeout
    closed = array("q")  # closed chunks, 5 int64 each: flow, start, end, bytes, packets
    t_first: int | None = None
    t_last = 0
    epoch_s = 0.0

    with open(path, "rb") as f:
        reader, ticks = _open(f)
        linktype = reader.datalink()
        _network_offset(b"", linktype)  # an unsupported link type fails here, before any packet
        for ts, buf in reader:
            st.packets += 1
            t_abs = _ns(ts, ticks)
            if t_first is None:
                t_first = t_abs
                epoch_s = float(ts)
            t = t_abs - t_first
            if limit is not None and t >= limit:
                st.packets -= 1
                break
            t_last = max(t_last, t)
            loc = _network_offset(buf, linktype)
            if loc is None:
                st.not_ip += 1
                continue
            parsed = _parse(buf, loc[0], loc[1], protos, st)
            if parsed is None:
                continue
            st.used += 1
            key = parsed[:5]
            payload = parsed[5]
            a = acc.get(key)
            if a is not None and idle is not None and t - a[2] >= idle:
                _close(a, closed)
                done.append(a)
                a = None
            if a is None:
                a = [len(keys), t, t, 0, 0, 0, -1, -1, 0, 0, 0]
                acc[key] = a
                keys.append(key)
            a[2] = t
            a[3] += 1
            if payload > 0:
                a[4] += 1
                a[5] += payload
                if a[6] >= 0 and t - a[7] >= thr:
                    closed.extend((a[0], a[6], a[7], a[8], a[9]))
                    a[10] += 1
                    a[6] = -1
                if a[6] < 0:
                    a[6], a[8], a[9] = t, 0, 0
                a[7] = t
                a[8] += payload
                a[9] += 1

    for a in acc.values():
        _close(a, closed)
    rows = done + list(acc.values())
    rows.sort(key=lambda a: a[0])
    n = len(rows)
    arr = np.array([[*a[:6], a[10]] for a in rows], dtype=np.int64).reshape(n, 7)
    flows = pd.DataFrame(
        {
            "flow": arr[:, 0],
            "proto": [_PROTO_NAMES[keys[i][0]] for i in arr[:, 0]],
            "src": [_addr(keys[i][1]) for i in arr[:, 0]],
            "sport": np.array([keys[i][3] for i in arr[:, 0]], dtype=np.int64),
            "dst": [_addr(keys[i][2]) for i in arr[:, 0]],
            "dport": np.array([keys[i][4] for i in arr[:, 0]], dtype=np.int64),
            "start_ns": arr[:, 1],
            "end_ns": arr[:, 2],
            "packets": arr[:, 3],
            "data_packets": arr[:, 4],
            "bytes": arr[:, 5],
            "chunks": arr[:, 6],
        }
    )
    ch = np.frombuffer(closed, dtype=np.int64).reshape(-1, 5) if len(closed) else np.zeros((0, 5), np.int64)
    chunks = (
        pd.DataFrame(ch, columns=["flow", "start_ns", "end_ns", "bytes", "packets"])
        .sort_values(["flow", "start_ns"], kind="stable")
        .reset_index(drop=True)
    )
    return Trace(
        flows=flows,
        chunks=chunks,
        threshold_ns=thr,
        epoch_s=epoch_s,
        duration_ns=t_last,
        source=str(path),
        stats=st.as_dict(),
    )


def _close(a: list[int], closed: array) -> None:
    """Close a flow's open chunk."""
    if a[6] >= 0:
        closed.extend((a[0], a[6], a[7], a[8], a[9]))
        a[10] += 1
        a[6] = -1
