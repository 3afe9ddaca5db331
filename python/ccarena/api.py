"""The Python API's three calls, ``load``, ``run`` and ``sweep`` (the
package re-exports them: ``ccarena.run(...)``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backends import backend as _backend
from .scenario import Scenario, keyword_override

if TYPE_CHECKING:
    from .experiment import Experiment
    from .results import Results

__all__ = ["load", "run", "sweep"]


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
    return _backend(backend or scn.backend or "sim").run(scn, out, figure=figure, yes=yes)


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
    from .experiment import run_sweep  # pandas and the executors only for a sweep

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
