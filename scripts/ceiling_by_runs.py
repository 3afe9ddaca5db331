#!/usr/bin/env python3
"""The conformance criterion's ceiling as the number of kernel runs grows:
the agreement a model as good as the kernel's own runs would reach, from a
recorded kernel table (``conformance.run.ceiling_table``: each cell's runs
by its group's rule, held out in turn, the difference scaled to stand for
N kernel runs against the matrix's simulator seeds).

    python scripts/ceiling_by_runs.py conformance/matrix.toml \\
        conformance/kernel-2026-11-29.parquet --runs 3 5 10 20

No simulator run and no root: it reads the kernel table only. The scaling
assumes runs independent and alike; docs/validation.md, "The ceiling".
"""

from __future__ import annotations

import argparse

from ccarena.conformance import KernelRuns, ceiling_table, load_kernel_reference, load_matrix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix")
    ap.add_argument("kernel", help="a kernel.parquet (conformance/kernel-*.parquet)")
    ap.add_argument("--runs", type=int, nargs="+", default=[3, 5, 10, 20])
    args = ap.parse_args()
    matrix = load_matrix(args.matrix)
    kernel = KernelRuns(None, load_kernel_reference(args.kernel))
    cells = [c for c in matrix.cells if kernel.of_cell(c) is not None]
    groups = list(dict.fromkeys(c.group for c in cells))
    print("kernel runs\tall flows\t" + "\t".join(groups))
    for n in args.runs:
        d = ceiling_table(matrix, cells, kernel, as_runs=n)
        by = d.groupby("group")["ceiling"].mean()
        print(f"{n}\t{d['ceiling'].mean():.3f} ({len(d)})\t" + "\t".join(f"{by[g]:.2f}" for g in groups))


if __name__ == "__main__":
    main()
