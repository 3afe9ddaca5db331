"""``struct tcp_info`` (``TCP_INFO``) and BBR's ``struct tcp_bbr_info``
(``TCP_CC_INFO``), read from a socket with getsockopt: the per-flow numbers
``ss -tin`` shows, without parsing its text.

Layout of include/uapi/linux/tcp.h (Linux 6.x); fields a shorter (older)
kernel does not fill come back as ``None``. Standard library only: the
traffic generator imports this inside the namespaces.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

__all__ = ["BBR_GAIN_UNIT", "TCP_CC_INFO", "bbr_mode", "ca_state_name", "read_bbr", "read_tcp_info"]

TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CC_INFO = 26
INFO_LEN = 248
BBR_GAIN_UNIT = 256

# (name, struct code, offset)
_FIELDS: list[tuple[str, str, int]] = [
    ("state", "B", 0),
    ("ca_state", "B", 1),
    ("retransmits", "B", 2),
    ("probes", "B", 3),
    ("backoff", "B", 4),
    ("options", "B", 5),
    ("rto_us", "I", 8),
    ("ato_us", "I", 12),
    ("snd_mss", "I", 16),
    ("rcv_mss", "I", 20),
    ("unacked", "I", 24),
    ("sacked", "I", 28),
    ("lost", "I", 32),
    ("retrans", "I", 36),
    ("pmtu", "I", 60),
    ("rcv_ssthresh", "I", 64),
    ("rtt_us", "I", 68),
    ("rttvar_us", "I", 72),
    ("snd_ssthresh", "I", 76),
    ("snd_cwnd", "I", 80),
    ("advmss", "I", 84),
    ("reordering", "I", 88),
    ("total_retrans", "I", 100),
    ("pacing_rate", "Q", 104),
    ("max_pacing_rate", "Q", 112),
    ("bytes_acked", "Q", 120),
    ("bytes_received", "Q", 128),
    ("segs_out", "I", 136),
    ("segs_in", "I", 140),
    ("notsent_bytes", "I", 144),
    ("min_rtt_us", "I", 148),
    ("data_segs_in", "I", 152),
    ("data_segs_out", "I", 156),
    ("delivery_rate", "Q", 160),
    ("busy_time_us", "Q", 168),
    ("rwnd_limited_us", "Q", 176),
    ("sndbuf_limited_us", "Q", 184),
    ("delivered", "I", 192),
    ("delivered_ce", "I", 196),
    ("bytes_sent", "Q", 200),
    ("bytes_retrans", "Q", 208),
    ("dsack_dups", "I", 216),
    ("reord_seen", "I", 220),
    ("rcv_ooopack", "I", 224),
    ("snd_wnd", "I", 228),
    ("rcv_wnd", "I", 232),
    ("rehash", "I", 236),
    ("total_rto", "H", 240),
    ("total_rto_recoveries", "H", 242),
    ("total_rto_time_ms", "I", 244),
]

_CA_STATES = {0: "Open", 1: "Disorder", 2: "CWR", 3: "Recovery", 4: "Loss"}


def parse_tcp_info(buf: bytes) -> dict[str, Any]:
    """Decode a ``TCP_INFO`` buffer (as many fields as it holds)."""
    out: dict[str, Any] = {}
    for name, code, off in _FIELDS:
        size = struct.calcsize(code)
        out[name] = struct.unpack_from("<" + code, buf, off)[0] if off + size <= len(buf) else None
    if len(buf) > 7:
        out["delivery_rate_app_limited"] = bool(buf[7] & 1)
    return out


def read_tcp_info(sock: socket.socket) -> dict[str, Any]:
    return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, INFO_LEN))


def read_bbr(sock: socket.socket) -> dict[str, float] | None:
    """BBR's bandwidth (bytes/s), min RTT (us) and gains, or ``None`` when the
    socket's congestion control is not BBR."""
    try:
        buf = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 20)
    except OSError:
        return None
    return parse_bbr(buf)


def parse_bbr(buf: bytes) -> dict[str, float] | None:
    if len(buf) < 20:
        return None
    bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain = struct.unpack_from("<5I", buf, 0)
    return {
        "bw_bytes_per_s": float((bw_hi << 32) | bw_lo),
        "min_rtt_us": float(min_rtt),
        "pacing_gain": pacing_gain / BBR_GAIN_UNIT,
        "cwnd_gain": cwnd_gain / BBR_GAIN_UNIT,
    }


def ca_state_name(v: int | None) -> str:
    return _CA_STATES.get(v if v is not None else -1, "")


def bbr_mode(pacing_gain: float, cwnd_gain: float) -> tuple[str, str]:
    """BBRv1's mode (and PROBE_BW gain phase) from its gains, as tcp_bbr.c
    sets them: STARTUP 2.885/2.885, DRAIN 0.346/2.885, PROBE_BW x/2 with
    x in 1.25 (UP), 0.75 (DOWN), 1 (CRUISE), PROBE_RTT 1/1. The labels are
    those of the simulator's ``bbr_mode`` and ``bbr_gain_phase`` columns."""
    if pacing_gain > 2.0:
        return "STARTUP", ""
    if pacing_gain < 0.5:
        return "DRAIN", ""
    if cwnd_gain < 1.5:
        return "PROBE_RTT", ""
    if pacing_gain > 1.1:
        return "PROBE_BW", "UP"
    if pacing_gain < 0.9:
        return "PROBE_BW", "DOWN"
    return "PROBE_BW", "CRUISE"
