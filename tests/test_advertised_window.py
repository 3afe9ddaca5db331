"""`[hosts] advertised_window`: ACKs advertise the receive window and the
sender keeps within it (Linux `tcp_select_window`, `tcp_snd_wnd_test`).

What it is for, measured on the Linux backend (docs/experiments.md, bbq
fig17's 200/300 ms BBRv1 pair): a 300 ms flow whose STARTUP ends in a burst
of losses. On the kernel the out-of-order data behind the holes fills its
autotuned receive buffer, the right edge stops, and fewer than half its
window is in flight for three seconds; with the switch on the simulator
does the same, with it off the window stays full.

Why it is off by default: the window's DRS measures with the handshake's
RTT, where Linux's `tcp_rcv_rtt_measure_ts` sees the queue too, so a lone
loss-free CUBIC flow at 50 Mbit/s, 20 ms, in an 8 BDP buffer stops at a
window of about 480 segments with the switch on (1.3 s in) and grows on
without it (docs/model.md)."""

from __future__ import annotations

from pathlib import Path

import ccarena

BBQ_PAIR = {
    "name": "advertised-window",
    "duration": "12s",
    "seed": 1,
    "bottleneck": {"rate": "100Mbps", "buffer": "2MB"},
    "flows": [
        {"cc": "bbr1", "rtt": "200ms"},
        {"cc": "bbr1", "rtt": "300ms", "start": "5s"},
    ],
}


def _held_back(tmp_path: Path, on: bool) -> float:
    r = ccarena.run(BBQ_PAIR, out=tmp_path / str(on), hosts__advertised_window=on)
    s = r.samples
    late = s[(s["flow"] == 1) & (s["time_s"] >= 8.5) & (s["time_s"] <= 12)]
    return float(late["inflight_pkts"].mean() / late["cwnd_pkts"].mean())


def test_losses_behind_a_hole_hold_the_sender_below_its_window(tmp_path: Path):
    on, off = _held_back(tmp_path, True), _held_back(tmp_path, False)
    # kernel (two runs, 8.5-12 s): 983-1,062 of 1,828-2,107 segments in flight, 0.50-0.54
    assert on < 0.75, on
    assert off > 0.95, off
