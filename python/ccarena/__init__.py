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

from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import sweep as _sweep_module  # noqa: F401  (loaded before `def sweep` below replaces the name)
from .errors import StoreError, SweepError
from .scenario import Scenario, ScenarioError, keyword_override
from .version import __version__

if TYPE_CHECKING:
    from .controller import Controller
    from .experiment import Experiment
    from .results import Results

# `Experiment` and `Results` load pandas and pyarrow: imported when first
# used (PEP 562), so `ccarena --help` and `ccarena-bottleneck` start fast.
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


def load(scenario: str | Path | dict[str, Any] | Scenario, **overrides: Any) -> Scenario:
    """Validate a scenario (file, dict or ``Scenario``) with keyword overrides;
    raises ``ScenarioError``."""
    ovs = [keyword_override(k, v) for k, v in overrides.items()]
    if isinstance(scenario, Scenario):
        if not ovs:
            return scenario
        return Scenario.from_dict(scenario.document, source=scenario.source, overrides=ovs)
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario, overrides=ovs)
    return Scenario.load(scenario, ovs)


def run(
    scenario: str | Path | dict[str, Any] | Scenario,
    out: str | Path | None = None,
    *,
    figure: bool = False,
    backend: str | None = None,
    yes: bool = False,
    **overrides: Any,
) -> Results:
    """Simulate one scenario and return its ``Results``.

    ``out`` is the run directory to write (replaced if it holds an earlier
    run); by default ``results/<scenario name>/<hash>/`` under the current
    directory, where ``<hash>`` is the start of the sha256 of the normalized
    scenario. ``figure=True`` also draws ``timeseries.png`` there.
    ``overrides`` set scenario fields, ``__`` standing for a dot:
    ``run("s.toml", bottleneck__rate="50Mbps", flows__0__rtt="10ms")``.
    ``backend`` is ``"sim"`` (default) or ``"linux"`` (real kernel TCP in
    network namespaces, as root; see ``ccarena.linux``); when None, the
    scenario's own ``backend`` field decides.
    Raises ``ScenarioError`` for an invalid scenario, ``StoreError`` when the
    output directory cannot be used, ``ccarena.linux.LinuxBackendError`` when
    the Linux backend cannot run the scenario. A simulation whose estimated
    cost is above ``ccarena.cost.LIMITS`` is refused unless ``yes=True``.
    """
    scn = load(scenario, **overrides)
    chosen = backend or scn.backend or "sim"
    if chosen == "linux":
        from .linux import execute as execute_linux

        return execute_linux(scn, out, figure=figure)
    if chosen != "sim":
        raise ValueError(f"unknown backend {chosen!r}; expected 'sim' or 'linux'")
    from .runner import execute

    return execute(scn, out, figure=figure, yes=yes)


def sweep(
    scenario: str | Path | dict[str, Any] | Scenario,
    out: str | Path | None = None,
    jobs: int | None = None,
    executor: str = "local",
    *,
    address: str | None = None,
    force: bool = False,
    progress: bool | None = None,
    yes: bool = False,
    **overrides: Any,
) -> Experiment:
    """Run every point of a scenario's ``[sweep]`` and return the ``Experiment``.

    ``out`` is the experiment directory (default ``results/<name>/``); runs
    already there are reused. ``jobs`` worker processes (default: all cores);
    ``executor`` ``"local"`` (a process pool) or ``"ray"`` (``address`` of a
    cluster, or the Ray instance this process started). ``overrides`` as for
    ``run``; ``sweep__repeats=3`` changes the sweep itself. The experiment's
    ``.runs``, ``.flows``, ``.samples`` and ``.queue`` are pandas frames with a
    column per swept key. Raises ``ScenarioError`` before running anything
    when a point is invalid (or, unless ``yes``, too costly: see
    ``ccarena.cost``), ``SweepError`` when runs failed.
    """
    from .experiment import run_sweep

    return run_sweep(
        load(scenario, **overrides),
        out,
        jobs=jobs,
        executor=executor,
        address=address,
        force=force,
        progress=progress,
        yes=yes,
    )
