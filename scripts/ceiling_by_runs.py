#!/usr/bin/env python3
"""The conformance criterion's ceiling as the number of kernel runs grows:
the agreement a model as good as the kernel's own runs would reach, from a
recorded kernel table (``judge.perfect_model``, each cell's first
``linux_repeats`` runs held out in turn, the difference scaled to stand
for N kernel runs against the matrix's simulator seeds).

    python scripts/ceiling_by_runs.py conformance/matrix.toml \\
        conformance/kernel-2026-11-29.parquet --runs 3 5 10 20

No simulator run and no root: it reads the kernel table only. The scaling
assumes runs independent and alike; docs/validation.md, "The ceiling".
"""

from __future__ import annotations

import argparse

import pandas as pd

from ccarena.conformance import METRICS, load_matrix, perfect_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix")
    ap.add_argument("kernel", help="a kernel.parquet (conformance/kernel-*.parquet)")
    ap.add_argument("--runs", type=int, nargs="+", default=[3, 5, 10, 20])
    args = ap.parse_args()
    matrix = load_matrix(args.matrix)
    cells = {c.id: c for c in matrix.cells}
    k = pd.read_parquet(args.kernel)
    k = k[k["trustworthy"]]
    per_cell = []
    for cid, g in k.groupby("cell"):
        cell = cells.get(cid)
        if cell is None:
            continue
        reps = sorted(g["repeat"].unique())[: cell.repeats]
        runs = [g[g["repeat"] == r][["flow", "cc", "rtt_ms", *METRICS]] for r in reps]
        per_cell.append((cell, runs))
    ranked = matrix.identical_flows == "ranked"
    print("kernel runs\tall flows\t" + "\t".join(sorted({c.group for c, _ in per_cell})))
    for n in args.runs:
        rows = []
        for cell, runs in per_cell:
            rows += perfect_model(cell, runs, matrix.tolerance, ranked, matrix.sim_seeds, as_runs=n)
        d = pd.DataFrame(rows)
        by = d.groupby("group")["ceiling"].mean()
        print(f"{n}\t{d['ceiling'].mean():.3f} ({len(d)})\t" + "\t".join(f"{v:.2f}" for v in by.to_numpy()))


if __name__ == "__main__":
    main()
