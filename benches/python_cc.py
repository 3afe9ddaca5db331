"""Cost per ACK of a Python controller (`cc = "python"`) against the native
algorithm it imitates: `python benches/python_cc.py`. One Reno-like flow,
100 Mbit/s, 20 ms, 1 BDP, 20 s; times the simulation alone (`_core.run`),
median of 5, and divides by the ACKs the sender processed (segments
delivered / 2, delayed ACKs)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import ccarena
from ccarena.runner import simulate

PYRENO = textwrap.dedent(
    """
    import ccarena

    class PyReno(ccarena.Controller):
        def __init__(self):
            super().__init__()
            self.ssthresh = float("inf")

        def on_ack(self, sample, conn):
            if conn.ca_state != "open":
                return
            if self.cwnd < self.ssthresh:
                self.cwnd += sample.acked
            else:
                self.cwnd += sample.acked / self.cwnd

        def on_loss(self, kind, conn):
            self.ssthresh = max(self.cwnd / 2, 2)
            self.cwnd = self.ssthresh if kind == "recovery" else 1
    """
)


def timed(doc: dict) -> tuple[float, int]:
    scn = ccarena.Scenario.from_dict(doc)
    walls = []
    for _ in range(5):
        t0 = time.perf_counter()
        simulate(scn.core_json)  # the core run alone (tables kept in Rust, not written)
        walls.append(time.perf_counter() - t0)
    r = ccarena.run(doc)
    acks = int(r.flows["segs_sent"].sum() - r.flows["segs_retrans"].sum()) // 2
    return statistics.median(walls), acks


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "pyreno.py"
        path.write_text(PYRENO)
        base = {"duration": "20s", "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"}}
        rows = []
        for label, flow in [
            ("native reno", {"cc": "reno", "rtt": "20ms"}),
            ("python PyReno", {"cc": "python", "cc_params": {"class": f"{path}:PyReno"}, "rtt": "20ms"}),
        ]:
            wall, acks = timed({**base, "flows": [flow]})
            rows.append((label, wall, acks))
        for label, wall, acks in rows:
            print(f"{label:15s} {wall:6.3f} s  {acks} ACKs  {wall / acks * 1e9:8.0f} ns per ACK")
        extra = (rows[1][1] - rows[0][1]) / rows[1][2] * 1e9
        print(f"the Python controller adds {extra:.0f} ns per ACK")


if __name__ == "__main__":
    sys.exit(main())
