"""Metrics on result frames: flow completion time slowdown and the SRPT ideal.

Slowdown = FCT / FCT of the same flow alone on the link. "Alone" is
``AloneModel``; by default, with ``mss`` 1448 and 66 bytes of headers per
segment (the simulator's 1514-byte frames, docs/model.md):

    alone = RTT (handshake: SYN, SYN-ACK)
          + wire bytes x 8 / bottleneck rate (serialisation at the bottleneck)
          + RTT (the last segment's propagation and its ACK's return)

which is the simulator's FCT (SYN sent to last ACK received) of a flow with
an unlimited window on an empty path. ``slow_start=True`` adds the idle time
of slow start from ``init_cwnd``: round k sends ``init_cwnd * 2**k``
segments back to back, and the next round starts when the ACK of round k's
first segment returns, one RTT after that segment left the bottleneck, so
the link idles ``RTT - (window - 1) x segment time`` between rounds until a
window fills the pipe (an ACK per segment, as in Linux's quick-ACK mode;
delayed ACKs and pacing are not modelled).

``burst_bytes`` models the bottleneck's token bucket (the scenario's
``bottleneck.burst``, one 1514-byte packet by default in the simulator):
after an idle time it lets that many bytes through at once, so a flow alone
finishes up to ``burst / rate`` sooner (1.2 ms at 10 Mbit/s, 4 us at
3 Gbit/s). The default, 0, is the fluid link, for which the SRPT ideal and
``ideal_fct`` agree exactly; ``AloneModel(slow_start=True, burst_bytes=1514)``
reproduces the simulator's FCT of a lone CUBIC flow (tests/test_workloads_sim.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .workloads.srpt import srpt_completion

__all__ = ["ALONE", "AloneModel", "ideal_fct", "slowdown", "srpt_fct"]


@dataclass(frozen=True)
class AloneModel:
    """What the FCT of a flow alone on the link counts (see the module doc)."""

    handshake: bool = True  # + 1 RTT before the first data segment
    last_ack: bool = True  # + 1 RTT for the last segment to arrive and its ACK to return
    slow_start: bool = False  # + slow start's idle rounds from init_cwnd
    init_cwnd: int = 10
    mss: int = 1448
    header_bytes: int = 66  # per segment on the bottleneck: 52 (IP, TCP, timestamps) + 14 (Ethernet)
    burst_bytes: int = 0  # the bottleneck's token-bucket depth: passes at once after an idle time

    def wire_bytes(self, size_bytes) -> np.ndarray:
        z = np.asarray(size_bytes, dtype=np.float64)
        return z + np.ceil(z / self.mss) * self.header_bytes

    def fixed_s(self, rtt_s) -> np.ndarray:
        """The latency terms: handshake and last ACK."""
        return np.asarray(rtt_s, dtype=np.float64) * (int(self.handshake) + int(self.last_ack))


ALONE = AloneModel()


def ideal_fct(size_bytes, rate_bps: float, rtt_s, alone: AloneModel = ALONE) -> np.ndarray:
    """FCT (seconds) of flows of ``size_bytes`` alone on a link of ``rate_bps``
    with base RTT ``rtt_s`` (scalars or arrays), as ``alone`` defines it."""
    z, rtt = np.broadcast_arrays(
        np.asarray(size_bytes, dtype=np.float64), np.asarray(rtt_s, dtype=np.float64)
    )
    wire = alone.wire_bytes(z)
    free = np.minimum(wire, alone.burst_bytes) * 8.0 / rate_bps  # the bucket is full at the start
    t = wire * 8.0 / rate_bps - free + alone.fixed_s(rtt)
    if alone.slow_start:
        segs = np.ceil(z / alone.mss)
        seg_tx = (alone.mss + alone.header_bytes) * 8.0 / rate_bps
        sent = np.zeros(z.shape)
        for k in range(64):
            w = alone.init_cwnd * 2.0**k
            sent = sent + w
            # Data left after round k, whose first ACK returns one RTT after its first segment
            # left: the link idles from the end of the round until then, if the round was shorter.
            gap = rtt - (w - 1) * seg_tx
            idle = (sent < segs) & (gap > 0)
            if not idle.any():
                break
            # after the gap the bucket has refilled by up to its depth: that much passes at once
            t = t + np.where(idle, gap - np.minimum(gap, alone.burst_bytes * 8.0 / rate_bps), 0.0)
    return t


def _rtt(flows: pd.DataFrame, rtt_s, rtt_col: str) -> np.ndarray:
    if rtt_s is not None:
        return np.broadcast_to(np.asarray(rtt_s, dtype=np.float64), (len(flows),))
    if rtt_col not in flows.columns:
        raise ValueError(f"give rtt_s or a {rtt_col!r} column")
    v = flows[rtt_col].to_numpy(np.float64)
    return v / 1e3 if rtt_col.endswith("_ms") else v


def slowdown(
    flows: pd.DataFrame,
    rate_bps: float,
    *,
    rtt_s=None,
    alone: AloneModel = ALONE,
    fct_col: str = "fct_s",
    size_col: str = "size_bytes",
    rtt_col: str = "rtt_ms",
) -> pd.Series:
    """FCT / ``ideal_fct`` for each flow of a frame (e.g. ``Results.flows``:
    ``fct_s``, ``size_bytes``, ``rtt_ms``). ``rtt_s`` overrides the frame's
    RTTs. Flows that did not complete (FCT NaN) get NaN."""
    ideal = ideal_fct(flows[size_col].to_numpy(), rate_bps, _rtt(flows, rtt_s, rtt_col), alone)
    return pd.Series(flows[fct_col].to_numpy(np.float64) / ideal, index=flows.index, name="slowdown")


def srpt_fct(
    flows: pd.DataFrame,
    rate_bps: float,
    *,
    rtt_s=None,
    alone: AloneModel = ALONE,
    start_col: str = "start_s",
    size_col: str = "size_bytes",
    rtt_col: str = "rtt_ms",
) -> pd.Series:
    """FCT of each flow under the SRPT ideal on the bottleneck: a flow's
    ``alone.wire_bytes`` reach the link one handshake after its start, the
    link serves them by preemptive SRPT (``workloads.srpt``), and the flow
    completes one RTT after its last byte left the link. Alone on the link
    this is exactly ``ideal_fct`` without slow start (SRPT does not slow start)
    and with ``burst_bytes`` 0 (SRPT serves a fluid link)."""
    rtt = _rtt(flows, rtt_s, rtt_col)
    start = flows[start_col].to_numpy(np.float64)
    arrive = start + (rtt if alone.handshake else 0.0)
    done = srpt_completion(arrive, alone.wire_bytes(flows[size_col].to_numpy()), rate_bps)
    fct = done - start + (rtt if alone.last_ack else 0.0)
    return pd.Series(fct, index=flows.index, name="srpt_fct_s")
