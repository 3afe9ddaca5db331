"""The findings of bbrv2_eval, each as the paper states it (catalog/findings.py)."""

from __future__ import annotations
