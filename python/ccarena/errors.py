"""The exceptions ccarena raises besides ``ScenarioError``
(``ccarena.scenario``), in a module that imports nothing heavy, so the
command line can catch them without loading pandas or pyarrow."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ControllerError",
    "LinuxBackendError",
    "LinuxNotAvailable",
    "LinuxUnsupported",
    "StoreError",
    "SweepError",
]


class StoreError(OSError):
    """The results cannot be written where asked; ``str(e)`` is one line."""


class SweepError(RuntimeError):
    """Some runs of a sweep failed; ``.failures`` maps point labels to errors,
    ``.experiment`` holds what did run (an ``experiment.Experiment``; typed
    loosely so that this module imports nothing of the package's)."""

    def __init__(self, experiment: Any, failures: dict[str, str]):
        self.experiment = experiment
        self.failures = failures
        first = next(iter(failures.items()))
        super().__init__(f"{len(failures)} run(s) failed; first: {first[0]}: {first[1]}")


class ControllerError(RuntimeError):
    """A Python controller (``cc = "python"``) raised during a run; ``str(e)``
    names the flow, the hook and the exception, which is ``__cause__``."""


class LinuxBackendError(RuntimeError):
    """The Linux backend cannot run here or failed; ``str(e)`` says why."""


class LinuxNotAvailable(LinuxBackendError):
    """This machine or user cannot run the Linux backend (not root, no namespaces, ...)."""


class LinuxUnsupported(LinuxBackendError):
    """The scenario asks for something the Linux backend cannot do (an
    algorithm the kernel lacks, per-flow algorithm parameters, ...)."""
