"""The findings of mixed_workload, each as the paper states it (catalog/findings.py)."""

from __future__ import annotations
