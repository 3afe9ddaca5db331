#!/usr/bin/env python3
"""Two kernel tables judged against each other, as conformance judges the
simulator: the runs of FIRST stand where the simulator's seeds would, those
of SECOND as the kernel, cell by cell over the cells both hold (each
cell's runs by its group's rule, the trustworthy ones). Beside it, the
ceiling of such a comparison (``conformance.run.ceiling_table`` with
FIRST's run count as the seeds) on each table's own runs: what two sets of
runs from one machine would reach.

    python scripts/kernel_vs_kernel.py conformance/matrix.toml \\
        conformance/kernel-2026-11.parquet conformance/kernel-2026-11-29.parquet

No simulator run and no root. Two machines' kernels differing by more
than the ceiling says is the machine's part of "kernel truth"
(docs/validation.md, "Where it stands").
"""

from __future__ import annotations

import argparse

import pandas as pd

from ccarena.conformance import KernelRuns, ceiling_table, flow_verdicts, load_kernel_reference, load_matrix
from ccarena.conformance.judge import judge_cell


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix")
    ap.add_argument("first", help="kernel.parquet judged as the simulator would be")
    ap.add_argument("second", help="kernel.parquet judged against")
    args = ap.parse_args()
    matrix = load_matrix(args.matrix)
    a = KernelRuns(None, load_kernel_reference(args.first))
    b = KernelRuns(None, load_kernel_reference(args.second))
    ranked = matrix.identical_flows == "ranked"
    cells, rows = [], []
    for cell in matrix.cells:
        ra = [r.values for r in a.of_cell(cell) or [] if r.trustworthy]
        rb = [r.values for r in b.of_cell(cell) or [] if r.trustworthy]
        if ra and rb:
            cells.append(cell)
            rows += judge_cell(cell, ra, rb, matrix.tolerance, ranked, {})
    seeds = min(cell.repeats for cell in cells)
    flows = flow_verdicts(pd.DataFrame(rows))
    ca, cb = ceiling_table(matrix, cells, a, seeds), ceiling_table(matrix, cells, b, seeds)
    print("group\tflows\tagree\tceiling (first's runs)\tceiling (second's runs)")
    for g, s in [*flows.groupby("group", sort=False)["agree"], ("all", flows["agree"])]:
        sa = ca if g == "all" else ca[ca["group"] == g]
        sb = cb if g == "all" else cb[cb["group"] == g]
        print(f"{g}\t{len(s)}\t{s.mean():.3f}\t{sa['ceiling'].mean():.3f}\t{sb['ceiling'].mean():.3f}")


if __name__ == "__main__":
    main()
