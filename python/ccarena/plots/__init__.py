"""Figures, one function per kind. Each draws with matplotlib's object API
(no pyplot state), writes a PNG and returns its path."""

from .timeseries import plot_run, plot_timeseries

__all__ = ["plot_run", "plot_timeseries"]
