"""The findings of bbq, each as the paper states it (catalog/findings.py)."""

from __future__ import annotations
