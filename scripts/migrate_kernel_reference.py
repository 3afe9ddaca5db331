#!/usr/bin/env python3
"""Rewrite a kernel reference table (``kernel.parquet``) to today's
``kernel_hash``: each row's run is found by its cell and seed in the matrix
and keyed by the identity that run has now. For a change to what the
identity covers that does not change what the kernel ran (2026-11-29: the
algorithms' parameters left out, which the Linux backend never sets), so
that the recorded runs are not made again. Rows whose cell the matrix no
longer has are left out and counted; provenance columns the table lacks are
added empty.

    python scripts/migrate_kernel_reference.py MATRIX IN OUT
"""

from __future__ import annotations

import sys

import pandas as pd

from ccarena.conformance import KERNEL_COLUMNS, PROVENANCE, kernel_hash, load_matrix
from ccarena.conformance.kernel import _EMPTY


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    matrix, src, dst = argv
    cells = {c.id: c for c in load_matrix(matrix).cells}
    frame = pd.read_parquet(src)
    new: dict[tuple[str, int], str] = {}
    for cell_id, seed in frame[["cell", "seed"]].drop_duplicates().itertuples(index=False):
        cell = cells.get(cell_id)
        if cell is not None:
            new[(cell_id, int(seed))] = kernel_hash(cell.with_seed(int(seed)))
    keys = list(zip(frame["cell"], frame["seed"].astype(int), strict=True))
    keep = [k in new for k in keys]
    out = frame[keep].copy()
    out["kernel_hash"] = [new[k] for k, ok in zip(keys, keep, strict=True) if ok]
    for k in PROVENANCE:
        if k not in out:
            out[k] = _EMPTY[k]
    out = out[[*KERNEL_COLUMNS, *[c for c in out.columns if c not in KERNEL_COLUMNS]]]
    out.to_parquet(dst, compression="zstd", index=False)
    runs = out.drop_duplicates("kernel_hash")
    print(
        f"{len(runs)} runs of {out['cell'].nunique()} cells rewritten; {len(frame) - len(out)} rows left out"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
