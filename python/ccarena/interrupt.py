"""Signals: interrupt a run, never its clean-up, an import or a process start.

A Linux-backend run owns kernel state that outlives the process
(namespaces, veths) and files in the temporary directory; a signal must
end the run, and the clean-up must then finish whatever else arrives.

Holding signals. Python runs a signal's handler in the main thread between
two bytecodes, wherever that is. Blocking the signals with
``pthread_sigmask`` does not hold them back once the process has a second
thread (the kernel hands the signal to a thread that does not block it,
and Python still runs the handler in the main thread): ``ccarena run`` has
one, the terminal status line's refresh thread, and a mask-based clean-up
was measured being interrupted there. So holding is done in the handler:
while a ``held()`` block runs, the three signals' handler only records
them; the outermost block then hands them on (``deferred``) or leaves
them to its owner (``SignalGuard``'s clean-up).

- ``deferred()``: the signals wait until the block ends, then reach the
  handler the process had (``signal.raise_signal``). Imports are not
  interruptible: a ``KeyboardInterrupt`` inside a C extension's
  initialization (numpy, pandas, pyarrow, matplotlib) surfaces as
  ``ImportError: initialization failed`` (exit 1), leaves the interpreter
  marked so that it kills itself by SIGINT at exit after the command
  printed its own status, or aborts it (``Fatal Python error``, -6): all
  three seen with SIGINT 0.2-1.3 s into ``ccarena run --backend linux``.
  ``guard_imports()`` (the command line calls it first) makes every
  import that loads a module from then on run deferred, wherever it is,
  so each command loads only what it uses, when it uses it (start-up
  time); ``preload()`` imports modules deferred at once. Starting a process
  is not interruptible either (an interrupt inside ``Popen``, after the
  fork, leaves a child nobody waits for: ``linux.netns.run``).
- ``SignalGuard(*steps)``: installs its own handler for SIGINT, SIGTERM
  and SIGHUP whatever the inherited disposition (a shell starts ``ccarena
  run ... &`` in a script with SIGINT ignored; that run must still stop on
  ``kill -INT``); the first signal raises ``Interrupted``, later ones are
  absorbed (the run is already ending; the command exits with the first
  one's status). Its ``__exit__`` runs the clean-up ``steps`` (given when
  the guard is made, before anything they remove exists: closures over
  the caller's variables) with the signals held, every one even when one
  fails, and raises, after the steps, an interrupt that came during an
  ordinary (not signal-started) clean-up; then the previous handlers
  return. No bytecode lies unguarded between the block and its clean-up:
  a signal Python handles while ``__exit__`` is on the stack, even at its
  very first instruction, is recorded, never raised there (a clean-up
  called from a ``finally`` left the call itself open: a run's probe
  namespace and lock were left behind by a SIGINT that landed there).

``Interrupted`` is a ``KeyboardInterrupt`` carrying the signal; the command
line exits ``128 + signal`` (130 for SIGINT, 143 for SIGTERM, 129 for
SIGHUP), as a shell reports a process that a signal ended.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType, ModuleType
from typing import ClassVar

__all__ = ["SIGNALS", "Interrupted", "SignalGuard", "deferred", "guard_imports", "held", "preload"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal; ``exit_status`` is ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Held:
    """The process's one record of held signals (main thread only)."""

    depth: ClassVar[int] = 0
    pending: ClassVar[list[int]] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _Held.pending.append(signum)


def _install(handler: object) -> dict[int, object]:
    """Install ``handler`` for the three signals; returns the previous ones.
    A signal that a previous handler turns into an exception half way
    leaves the previous ones in place."""
    old: dict[int, object] = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        for s in SIGNALS:
            signal.signal(s, handler)  # type: ignore[arg-type]
    except BaseException:
        _restore(old)
        raise
    return old


def _restore(old: dict[int, object]) -> None:
    """Put back every handler in ``old``, all of them even when one that
    comes back raises on a signal already on its way (each later one is
    restored in a ``finally``)."""
    if not old:
        return
    (s, h), *rest = old.items()
    if h is None:
        # Installed outside Python (a C extension): not restorable from
        # here; Python's own default stands in.
        h = signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL
    try:
        signal.signal(s, h)  # type: ignore[arg-type]
    finally:
        _restore(dict(rest))


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """Hold the three signals for the block; yields the list they are
    recorded in, complete once the block ends, and leaves them to the
    caller (a nested block leaves them to the outermost). Main thread only;
    elsewhere Python delivers none and this does nothing."""
    if not _main_thread():
        yield []
        return
    outer = _Held.depth == 0
    old = _install(_record) if outer else {}
    _Held.depth += 1
    pending = _Held.pending
    try:
        yield pending
    finally:
        _Held.depth -= 1
        if outer:
            # A fresh record first: a signal the restored handler acts on
            # at once must not leave this block's signals to the next one.
            _Held.pending = []
            _restore(old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """The signals wait until the block ends, then reach the handler the
    process had (the first one; a repeat of a signal already on its way
    adds nothing)."""
    with held() as pending:
        yield
    if pending and _Held.depth == 0:
        signal.raise_signal(pending[0])


def preload(modules: Sequence[str]) -> None:
    """Import ``modules`` with the signals deferred (see the module)."""
    with deferred():
        for name in modules:
            importlib.import_module(name)


_plain_import = builtins.__import__


def _loaded(
    name: str, globals_: Mapping[str, object] | None, fromlist: Sequence[str] | None, level: int
) -> bool:
    """Whether an import statement would load nothing new: its module and
    every name of its ``from`` list are there already."""
    if level:
        package = str((globals_ or {}).get("__package__") or "")
        try:
            name = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError):
            return False
    module = sys.modules.get(name)
    if module is None:
        return False
    # The module's own namespace, not getattr: a name a module makes on
    # first use (PEP 562) is an import still to come.
    names = getattr(module, "__dict__", {})
    return all(n in names for n in fromlist or () if n != "*")


def _deferring_import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    if _Held.depth or not _main_thread() or _loaded(name, globals, fromlist, level):
        return _plain_import(name, globals, locals, fromlist or (), level)
    with deferred():
        return _plain_import(name, globals, locals, fromlist or (), level)


def guard_imports() -> None:
    """From now on, in this process, an import statement that loads a module
    holds the three signals until it is done (``deferred``): a signal
    then lands after the import, as an ordinary interrupt. Statements that
    find their module loaded cost one dictionary lookup more."""
    builtins.__import__ = _deferring_import


class SignalGuard:
    """``with SignalGuard(step, ...): ...`` (see the module).

    Outside the main thread (where Python cannot install handlers) it only
    runs the steps at exit: the caller's own handling applies."""

    def __init__(self, *steps: Callable[[], object]) -> None:
        self.active = _main_thread()
        self._steps = steps
        self._old: dict[int, object] = {}
        self.fired = False
        # Signals Python handled while ``__exit__`` ran, before its steps
        # hold the signals or after they let go: raised after the steps.
        self._early: list[int] = []

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.fired:
            return  # the run is already ending by a signal
        if _within(frame, _EXIT):
            self._early.append(signum)
            return
        self.fired = True
        raise Interrupted(signum)

    def __enter__(self) -> SignalGuard:
        if self.active:
            self._old = _install(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        """Run every step with the signals held. The first error of a step
        is raised after all steps ran; an interrupt that came during an
        ordinary clean-up is raised after the steps too (one that came
        during a clean-up a signal started is absorbed)."""
        errors: list[Exception] = []
        try:
            with held() as pending:
                for step in self._steps:
                    try:
                        step()
                    except Exception as e:  # every step runs; the first error is reported
                        errors.append(e)
        finally:
            if self.active:
                _restore(self._old)
        signals = self._early + pending
        self._early = []
        if signals and not self.fired:
            self.fired = True
            raise Interrupted(signals[0])
        if errors:
            raise errors[0]


def _within(frame: FrameType | None, code: object) -> bool:
    """Whether ``code`` runs in ``frame`` or any frame that called it."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


_EXIT = SignalGuard.__exit__.__code__
