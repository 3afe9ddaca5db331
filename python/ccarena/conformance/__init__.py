"""Conformance: does the simulator do what the kernel does?

``ccarena conformance MATRIX`` runs every cell of a matrix of scenarios on
both backends, the kernel's cells several times so its own run-to-run
spread is known, the simulator's over as many seeds (its host timing noise
makes seeds differ, docs/model.md), and judges, flow by flow and metric by
metric, whether the simulator agrees with the kernel. By default the
simulator runs as a user runs it: the shipped defaults.

- ``matrix.py``: the matrix file, its cells and the runs per cell;
- ``hosts.py``: the hosts the simulator's side runs with;
- ``kernel.py``: a kernel run's identity and provenance, the reference table;
- ``judge.py``: the tolerances and the three readings of each flow-metric;
- ``run.py``: running and judging a matrix; ``report.py``: what it shows.

docs/validation.md says what the shipped matrix gives, on which machine.
"""

from __future__ import annotations

from .hosts import MODES as SIM_HOSTS
from .hosts import NO_HOSTS, HostTable, seed_hosts
from .judge import (
    METRICS,
    TOLERANCE,
    Tolerance,
    flow_values,
    flow_verdicts,
    judge,
    perfect_model,
    rank_within_classes,
)
from .kernel import (
    KERNEL_COLUMNS,
    PROVENANCE,
    KernelRun,
    KernelRuns,
    kernel_hash,
    kernel_table,
    load_kernel_reference,
    run_dir,
)
from .matrix import COUNTS, Cell, Matrix, hosts_mode, load_matrix, select
from .report import SCOPE, ceiling_line, cells_table, differs_table, summary_table
from .run import Conformance, MissingRuns, ceiling_table, collect, run_conformance, sim_side

__all__ = [
    "COUNTS",
    "KERNEL_COLUMNS",
    "METRICS",
    "NO_HOSTS",
    "PROVENANCE",
    "SCOPE",
    "SIM_HOSTS",
    "TOLERANCE",
    "Cell",
    "Conformance",
    "HostTable",
    "KernelRun",
    "KernelRuns",
    "Matrix",
    "MissingRuns",
    "Tolerance",
    "ceiling_line",
    "ceiling_table",
    "cells_table",
    "collect",
    "differs_table",
    "flow_values",
    "flow_verdicts",
    "hosts_mode",
    "judge",
    "kernel_hash",
    "kernel_table",
    "load_kernel_reference",
    "load_matrix",
    "perfect_model",
    "rank_within_classes",
    "run_conformance",
    "run_dir",
    "seed_hosts",
    "select",
    "sim_side",
    "summary_table",
]
