"""Measure the hosts' timing noise on the Linux backend.

Runs a scenario on the Linux backend with the bottleneck's frame trace
(``ccarena-bottleneck --trace``) and measures, at the bottleneck, two
turnarounds that the simulator's ideal hosts make zero:

Both are counted from the time the bottleneck's schedule had the frame due
(the simulator's instant), so the bottleneck's own release lateness is in.

- sender: an ACK due towards the senders -> the first data frame of
  the same flow that arrives after it (the ACK-clocked send it triggered:
  veth, softirq, tcp_ack, tcp_write_xmit, veth back, the bottleneck's read);
- receiver: a data frame due towards the receivers -> the ACK that
  covers exactly it (the receiver's immediate ACK, same path the other way).

Prints quantiles (us) of each, and writes them as CSV with ``--csv``. Used
to size ``[hosts] latency`` (docs/model.md, "Host timing noise"). With
``--toml`` it also prints the ``[hosts]`` table that makes the simulator
draw from this measurement (the values at the 18 percentiles the shipped
table holds, the top 0.1% left out as there).

    python scripts/host_latency.py SCENARIO [--runs N] [--set K=V ...] [--csv FILE] [--toml]
"""

from __future__ import annotations

import argparse
import bisect
import csv
import tempfile
from pathlib import Path

import numpy as np

QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
CUT_NS = 1_000_000  # longer turnarounds are protocol waits (delayed ACK, cwnd full), not noise


def turnarounds(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(sender, receiver) turnarounds in ns from one frames.csv."""
    snd: list[int] = []
    rcv: list[int] = []
    last_ack: dict[int, int] = {}  # flow -> release time of the newest ACK not yet answered
    released: dict[int, list[list[int]]] = {}  # flow -> [start, end, release time] of data frames, by end
    base: dict[int, int] = {}  # flow -> its first data frame's sequence number
    with open(path, newline="") as fh:
        rows = csv.DictReader(fh)
        for r in rows:
            t = int(r["t_ns"])
            flow = int(r["flow"])
            pay = int(r["payload"])
            if r["side"] == "s":
                if r["ev"] == "r" and pay == 0:
                    last_ack[flow] = int(r["due_ns"])
                elif r["ev"] == "a" and pay > 0:
                    t0 = last_ack.pop(flow, None)
                    if t0 is not None and t - t0 < CUT_NS:
                        snd.append(t - t0)
            else:
                if r["ev"] == "r" and pay > 0:
                    # Sequence numbers relative to the flow's first frame
                    # (no wrap within a run); frames kept sorted by end.
                    base.setdefault(flow, int(r["seq"]))
                    start = (int(r["seq"]) - base[flow]) & 0xFFFFFFFF
                    frames = released.setdefault(flow, [])
                    k = bisect.bisect_left(frames, start + pay, key=lambda f: f[1])
                    if k < len(frames) and frames[k][1] == start + pay:
                        frames[k][2] = int(r["due_ns"])  # a retransmission
                    else:
                        frames.insert(k, [start, start + pay, int(r["due_ns"])])
                elif r["ev"] == "a" and pay == 0 and flow in base:
                    # As the bottleneck's meter (crates/emu/src/turnaround.rs):
                    # the ACK answers the last-released frame it covers (after
                    # a hole, the retransmission that filled it), counted when
                    # it covers exactly a frame's end and no frame beyond a
                    # hole was out before it (then that frame sent it).
                    ack = (int(r["ack"]) - base[flow]) & 0xFFFFFFFF
                    frames = released.get(flow, [])
                    k = bisect.bisect_right(frames, ack, key=lambda f: f[1])
                    covered, rest = frames[:k], frames[k:]
                    released[flow] = rest
                    if covered and covered[-1][1] == ack:
                        t0 = max(f[2] for f in covered)
                        gap = bool(rest) and rest[0][2] <= t and rest[0][0] != ack
                        if t - t0 < CUT_NS and not gap:
                            rcv.append(t - t0)
    return np.array(snd, dtype=np.int64), np.array(rcv, dtype=np.int64)


def toml_table(sender_us: np.ndarray, receiver_us: np.ndarray) -> str:
    """The `[hosts]` table that draws turnarounds from these samples (us)."""

    from ccarena._core import host_percentiles

    def row(x: np.ndarray) -> str:
        return "[" + ", ".join(f"{v:.1f}" for v in np.percentile(x, host_percentiles())) + "]"

    return f"[hosts]\nlatency = {{ sender_us = {row(sender_us)}, receiver_us = {row(receiver_us)} }}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--csv", help="write every turnaround (us) here")
    ap.add_argument("--toml", action="store_true", help="print the [hosts] latency table of this measurement")
    a = ap.parse_args()

    from ccarena.linux.backend import execute
    from ccarena.scenario import load

    scn = load(a.scenario, a.set)
    all_s, all_r = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.runs):
            trace = Path(tmp) / f"frames{k}.csv"
            res = execute(scn, Path(tmp) / f"run{k}", frame_trace=trace)
            s, r = turnarounds(trace)
            ok = bool(res.summary["trustworthy"].iloc[0])
            g = res.flows["goodput_mbps"]
            shares = " ".join(f"{x / g.sum():.3f}" for x in g)
            print(
                f"run {k}: trustworthy={ok} shares {shares} sender n={len(s)} receiver n={len(r)}", flush=True
            )
            all_s.append(s)
            all_r.append(r)
    s = np.concatenate(all_s) / 1e3
    r = np.concatenate(all_r) / 1e3
    print("quantile  " + "  ".join(f"{q:>6}" for q in QUANTILES) + "    mean")
    for name, x in (("sender", s), ("receiver", r)):
        qs = np.quantile(x, QUANTILES) if len(x) else [float("nan")] * len(QUANTILES)
        print(f"{name:9} " + "  ".join(f"{v:6.1f}" for v in qs) + f"  {x.mean():6.1f}")
    if a.toml:
        print(toml_table(s, r))
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["side", "us"])
            w.writerows(("sender", v) for v in s)
            w.writerows(("receiver", v) for v in r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
