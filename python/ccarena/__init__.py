"""ccarena: a laboratory for TCP congestion control.

>>> import ccarena
>>> r = ccarena.run("scenarios/demo.toml", bottleneck__rate="50Mbps", duration="5s")
>>> r.summary, r.flows, r.samples, r.queue, r.transitions, r.links   # pandas DataFrames
>>> r.path                                                  # results/<name>/<hash>/

``ccarena.run(scenario, out=None, **overrides)`` takes a scenario file, a dict
(as ``tomllib`` loads a scenario file) or a ``Scenario``. Keyword overrides
name a field with ``__`` for each dot or index: ``bottleneck__rate="50Mbps"``
sets ``bottleneck.rate``, ``flows__0__cc="cubic"`` sets ``flows[0].cc``; the
values are used as given (the CLI's ``--set`` parses its values as TOML).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import sweep as _sweep_module  # noqa: F401  (loaded before the function `sweep` takes its name)
from .api import load, run, sweep
from .errors import StoreError, SweepError
from .scenario import Scenario, ScenarioError
from .version import __version__

if TYPE_CHECKING:
    from .controller import Controller
    from .experiment import Experiment
    from .results import Results

# `Experiment`, `Results` and `Controller` load pandas and pyarrow: imported
# when first used (PEP 562), so `ccarena --help` and `ccarena-bottleneck`
# start fast.
_LAZY = {"Experiment": "experiment", "Results": "results", "Controller": "controller"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Controller",
    "Experiment",
    "Results",
    "Scenario",
    "ScenarioError",
    "StoreError",
    "SweepError",
    "__version__",
    "load",
    "run",
    "sweep",
]
