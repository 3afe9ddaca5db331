"""How much the hosts' speed differs from one kernel run to the next.

Reads the kernel runs of a conformance table (``conformance/kernel-2026-11.parquet``:
each trustworthy run's measured turnaround tables, ``host_sender_us`` and
``host_receiver_us``) and prints the distribution of a run's host speed
relative to the mean of its cell's runs: the speed is the mean of the
sender's and the receiver's median turnaround; each deviation from the
cell's mean is widened by sqrt(n / (n - 1)), as a deviation from the mean
of n runs is narrower than one from the true mean. The printed percentiles
are the simulator's ``[hosts] run_speed = "drawn"`` table
(``SPEED_SPREAD`` in ``crates/sim/src/net/host.rs``).

    python3 scripts/host_speed_spread.py conformance/kernel-2026-11.parquet
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

#: The percentiles of ``SPEED_PCT`` in ``net/host.rs``.
PCT = [0, 1, 2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99, 100]


def relative_speeds(kernel: pd.DataFrame) -> np.ndarray:
    runs = kernel[kernel.trustworthy].drop_duplicates("kernel_hash")
    runs = runs[runs.host_receiver_us.notna() & runs.host_sender_us.notna()]
    # The median is the ninth of the table's 18 percentiles.
    speed = pd.Series(
        [(s[8] + r[8]) / 2 for s, r in zip(runs.host_sender_us, runs.host_receiver_us, strict=True)],
        index=runs.index,
    )
    by_cell = speed.groupby(runs.cell)
    n = by_cell.transform("size")
    keep = n >= 2
    rel = speed / by_cell.transform("mean")
    widened = 1 + (rel - 1) * np.sqrt(n / (n - 1))
    return widened[keep].to_numpy()


def main() -> None:
    kernel = pd.read_parquet(sys.argv[1] if len(sys.argv) > 1 else "conformance/kernel-2026-11.parquet")
    rel = relative_speeds(kernel)
    q = np.percentile(rel, PCT)
    print(f"{len(rel)} runs: sd {rel.std():.4f}; 5th-95th percentile {q[3]:.4f}-{q[13]:.4f}")
    print("SPEED_SPREAD: [" + ", ".join(f"{x:.4f}" for x in q) + "]")


if __name__ == "__main__":
    main()
