"""ccarena: a laboratory for TCP congestion control.

>>> import ccarena
>>> r = ccarena.run("scenarios/demo.toml", bottleneck__rate="50Mbps", duration="5s")
>>> r.summary, r.flows, r.samples, r.queue, r.transitions   # pandas DataFrames
>>> r.path                                                  # results/<name>/<hash>/

``ccarena.run(scenario, out=None, **overrides)`` takes a scenario file, a dict
(as ``tomllib`` loads a scenario file) or a ``Scenario``. Keyword overrides
name a field with ``__`` for each dot or index: ``bottleneck__rate="50Mbps"``
sets ``bottleneck.rate``, ``flows__0__cc="cubic"`` sets ``flows[0].cc``; the
values are used as given (the CLI's ``--set`` parses its values as TOML).
"""

from __future__ import annotations

from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

from .results import Results
from .scenario import Scenario, ScenarioError, keyword_override
from .store import StoreError

try:
    __version__ = _metadata.version("ccarena")
except _metadata.PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"

__all__ = ["Results", "Scenario", "ScenarioError", "StoreError", "__version__", "load", "run"]


def load(scenario: str | Path | dict[str, Any] | Scenario, **overrides: Any) -> Scenario:
    """Validate a scenario (file, dict or ``Scenario``) with keyword overrides;
    raises ``ScenarioError``."""
    ovs = [keyword_override(k, v) for k, v in overrides.items()]
    if isinstance(scenario, Scenario):
        if not ovs:
            return scenario
        return Scenario.from_dict(scenario.raw, source=scenario.source, overrides=ovs)
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario, overrides=ovs)
    return Scenario.load(scenario, ovs)


def run(
    scenario: str | Path | dict[str, Any] | Scenario,
    out: str | Path | None = None,
    *,
    figure: bool = False,
    **overrides: Any,
) -> Results:
    """Simulate one scenario and return its ``Results``.

    ``out`` is the run directory to write (replaced if it holds an earlier
    run); by default ``results/<scenario name>/<hash>/`` under the current
    directory, where ``<hash>`` is the start of the sha256 of the normalized
    scenario. ``figure=True`` also draws ``timeseries.png`` there.
    ``overrides`` set scenario fields, ``__`` standing for a dot:
    ``run("s.toml", bottleneck__rate="50Mbps", flows__0__rtt="10ms")``.
    Raises ``ScenarioError`` for an invalid scenario, ``StoreError`` when the
    output directory cannot be used.
    """
    from .runner import execute

    return execute(load(scenario, **overrides), out, figure=figure)
