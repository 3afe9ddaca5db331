"""The findings of bbrv3_insights, each as the paper states it (catalog/findings.py)."""

from __future__ import annotations
