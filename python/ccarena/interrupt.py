"""Signals during a Linux-backend run: interrupt the run, never its clean-up.

A run owns kernel state that outlives the process (namespaces, veths) and
files in the temporary directory; a signal must end the run, and the
clean-up must then finish whatever else arrives. ``SignalGuard``:

- installs its own handler for SIGINT, SIGTERM and SIGHUP whatever the
  inherited disposition (a shell starts ``ccarena run ... &`` in a script
  with SIGINT ignored; that run must still stop on ``kill -INT``);
- the handler blocks the three signals (``pthread_sigmask``) before it
  raises ``Interrupted``, so a second Ctrl-C 0.1 s later waits, pending,
  until the clean-up is done instead of interrupting it;
- ``cleanup(*steps)`` runs idempotent steps with the signals blocked and
  repeats them when a signal that was already on its way landed before the
  block took effect; every step runs even when one fails;
- on exit restores the previous handlers, then the previous mask; signals
  that came during a clean-up an interrupt started are absorbed (the
  command exits with the first one's status), one that came during an
  ordinary clean-up is delivered then, to the handler the process had.

``Interrupted`` is a ``KeyboardInterrupt`` carrying the signal; the command
line exits ``128 + signal`` (130 for SIGINT, 143 for SIGTERM, 129 for
SIGHUP), as a shell reports a process that a signal ended.

Imports are not interruptible: a ``KeyboardInterrupt`` raised inside a C
extension's initialization (numpy, pandas, pyarrow, matplotlib) surfaces as
``ImportError: initialization failed`` (exit 1), leaves the interpreter
marked so that it kills itself by SIGINT at exit after the command printed
its own status, or aborts it (``Fatal Python error``, status -6): all three
seen with SIGINT 0.2-1.3 s into ``ccarena run --backend linux``.
``preload()`` imports the modules a command will use with the three
signals held back (``deferred``); one that came meanwhile is delivered as
the import ends, at a point where it is an ordinary interrupt.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

__all__ = ["SIGNALS", "Interrupted", "SignalGuard", "deferred", "preload"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """The three signals wait, pending, until the block ends (main thread
    only: elsewhere Python delivers none)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def preload(modules: Sequence[str]) -> None:
    """Import ``modules`` with the signals deferred (see the module)."""
    with deferred():
        for name in modules:
            importlib.import_module(name)


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal; ``exit_status`` is ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class SignalGuard:
    """``with SignalGuard() as g: ... finally: g.cleanup(...)`` (see the module).

    Outside the main thread (where Python cannot install handlers) it does
    nothing: the caller's own handling applies."""

    def __init__(self) -> None:
        self.active = threading.current_thread() is threading.main_thread()
        self._old: dict[int, object] = {}
        self._mask: set[int] = set()
        self.fired = False

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        self.fired = True
        raise Interrupted(signum)

    def __enter__(self) -> SignalGuard:
        if self.active:
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
            for s in SIGNALS:
                self._old[s] = signal.getsignal(s)
                signal.signal(s, self._handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
        return self

    def block(self) -> None:
        if self.active:
            signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)

    def cleanup(self, *steps: Callable[[], object]) -> None:
        """Run every step with the signals blocked (they stay blocked until
        the guard exits). Steps must be idempotent: a signal already on its
        way may interrupt the first pass, which is then repeated. The first
        error of a step is raised after all steps ran; an interrupt that
        landed here is raised after the steps too."""
        late: Interrupted | None = None
        for _ in range(len(SIGNALS) + 2):
            errors: list[Exception] = []
            try:
                self.block()
                for step in steps:
                    try:
                        step()
                    except Exception as e:  # every step runs; the first error is reported
                        errors.append(e)
                break
            except Interrupted as e:
                late = e
        if late is not None:
            raise late
        if errors:
            raise errors[0]

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        self.block()
        if self.fired:
            # The run is already ending by a signal: those that came during
            # the clean-up are absorbed, not delivered to the old handler
            # (which would end the process by the signal, status -2, after
            # the clean-up had already said "interrupted").
            while signal.sigtimedwait(SIGNALS, 0) is not None:
                pass
        for s, h in self._old.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(s, h)  # type: ignore[arg-type]
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
