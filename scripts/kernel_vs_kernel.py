#!/usr/bin/env python3
"""Two kernel tables judged against each other, as conformance judges the
simulator: the runs of FIRST stand where the simulator's seeds would, those
of SECOND as the kernel, cell by cell over the cells both hold (each
cell's first ``linux_repeats`` trustworthy runs). Beside it, the ceiling
of such a comparison (``judge.perfect_model`` with FIRST's run count as the
seeds) on each table's own runs: what two sets of runs from one machine
would reach.

    python scripts/kernel_vs_kernel.py conformance/matrix.toml \\
        conformance/kernel-2026-11.parquet conformance/kernel-2026-11-29.parquet

No simulator run and no root. Two machines' kernels differing by more
than the ceiling says is the machine's part of "kernel truth"
(docs/validation.md, "Where it stands").
"""

from __future__ import annotations

import argparse

import pandas as pd

from ccarena.conformance import METRICS, flow_verdicts, load_matrix, perfect_model
from ccarena.conformance.judge import judge_cell


def _runs(table: pd.DataFrame, cell_id: str, n: int) -> list[pd.DataFrame]:
    t = table[(table["cell"] == cell_id) & table["trustworthy"]]
    return [g[["flow", "cc", "rtt_ms", *METRICS]] for _, g in t.groupby("repeat")][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix")
    ap.add_argument("first", help="kernel.parquet judged as the simulator would be")
    ap.add_argument("second", help="kernel.parquet judged against")
    args = ap.parse_args()
    matrix = load_matrix(args.matrix)
    a, b = pd.read_parquet(args.first), pd.read_parquet(args.second)
    ranked = matrix.identical_flows == "ranked"
    rows, ceil_a, ceil_b = [], [], []
    for cell in matrix.cells:
        ra, rb = _runs(a, cell.id, cell.repeats), _runs(b, cell.id, cell.repeats)
        if not ra or not rb:
            continue
        rows += judge_cell(cell, ra, rb, matrix.tolerance, ranked, {})
        ceil_a += perfect_model(cell, ra, matrix.tolerance, ranked, len(ra))
        ceil_b += perfect_model(cell, rb, matrix.tolerance, ranked, len(ra))
    flows = flow_verdicts(pd.DataFrame(rows))
    by = flows.groupby("group", sort=False)["agree"]
    ca, cb = pd.DataFrame(ceil_a), pd.DataFrame(ceil_b)
    print("group\tflows\tagree\tceiling (first's runs)\tceiling (second's runs)")
    for g, s in by:
        print(
            f"{g}\t{len(s)}\t{s.mean():.3f}\t"
            f"{ca[ca['group'] == g]['ceiling'].mean():.3f}\t{cb[cb['group'] == g]['ceiling'].mean():.3f}"
        )
    print(
        f"all\t{len(flows)}\t{flows['agree'].mean():.3f}\t{ca['ceiling'].mean():.3f}\t{cb['ceiling'].mean():.3f}"
    )


if __name__ == "__main__":
    main()
