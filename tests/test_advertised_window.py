"""`[hosts] advertised_window` (on by default since model 18) and `rcv_rtt_timestamps`
(on by default since model version 16): ACKs advertise the receive window and the sender keeps within it
(Linux `tcp_select_window`, `tcp_snd_wnd_test`); the receiver's DRS measures
its rounds by an RTT from timestamps that sees the queue
(`tcp_rcv_rtt_measure_ts`).

What they are for, measured on the Linux backend (docs/experiments.md, bbq
fig17's 200/300 ms BBRv1 pair): a 300 ms flow whose STARTUP ends in a burst
of losses. On the kernel the out-of-order data behind the holes fills its
autotuned receive buffer, the right edge stops, and about half its window
is in flight for three seconds; with the switches on the simulator does the
same, with the window off it stays full. Why the window is on by
default since model version 18: docs/model.md ("The advertised window")."""

from __future__ import annotations

from pathlib import Path

import ccarena

LINUX_WINDOW = {"hosts__advertised_window": True, "hosts__rcv_rtt_timestamps": True}

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


def _held_back(out: Path, **switches: bool) -> float:
    """The 300 ms flow's segments in flight over its window, 8.5-12 s, while
    in STARTUP (whose window nothing but the receiver's holds back; DRAIN,
    which may begin before 12 s, empties the pipe by design)."""
    r = ccarena.run(BBQ_PAIR, out=out, **switches)
    s = r.samples
    late = s[(s["flow"] == 1) & (s["time_s"] >= 8.5) & (s["time_s"] <= 12) & (s["bbr_mode"] == "STARTUP")]
    return float(late["inflight_pkts"].mean() / late["cwnd_pkts"].mean())


def test_losses_behind_a_hole_hold_the_sender_below_its_window(tmp_path: Path):
    on = _held_back(tmp_path / "on", **LINUX_WINDOW)
    off = _held_back(tmp_path / "off", hosts__advertised_window=False)
    # kernel (two runs, 8.5-12 s): 983-1,062 of 1,828-2,107 segments in flight, 0.50-0.54
    assert on < 0.75, on
    assert off > 0.95, off


def test_a_queue_stretched_rtt_does_not_shrink_the_window(tmp_path: Path):
    """A lone loss-free CUBIC flow in a deep buffer: with the RTT from
    timestamps DRS keeps the window ahead of the cwnd, so the whole window
    stays in flight; with the handshake's RTT the window stops it (about
    480 segments at 1.3 s of 3 s)."""
    doc = {
        "name": "window-ahead",
        "duration": "3s",
        "bottleneck": {"rate": "50Mbps", "buffer": "8BDP"},
        "flows": [{"cc": "cubic", "rtt": "20ms"}],
    }
    full = ccarena.run(doc, out=tmp_path / "ts", **LINUX_WINDOW)
    handshake = ccarena.run(
        doc, out=tmp_path / "hs", hosts__advertised_window=True, hosts__rcv_rtt_timestamps=False
    )
    s = full.samples[full.samples["time_s"] > 0.5]
    assert (s["inflight_pkts"] >= 0.95 * s["cwnd_pkts"]).mean() > 0.95
    assert full.samples["cwnd_pkts"].max() > 1.3 * handshake.samples["cwnd_pkts"].max()
