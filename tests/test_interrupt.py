"""ccarena.interrupt and the Linux backend's commands under signals, without
root: a signal waits while it would cut an import or a process start in
two, ends a run through ``SignalGuard`` with 128 + signal, and never leaves
a child process nobody waits for (tests/test_linux.py's signal trials do
the same on real runs, as root)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from ccarena.interrupt import Interrupted, SignalGuard, deferred
from ccarena.linux import netns


def _self(sig: int = signal.SIGINT) -> None:
    os.kill(os.getpid(), sig)


def test_a_deferred_signal_lands_when_the_block_ends():
    reached = False
    with pytest.raises(KeyboardInterrupt), deferred():
        _self()
        reached = True  # not interrupted inside the block
    assert reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_signals_are_held_even_when_another_thread_would_take_them():
    """The kernel gives a process-directed signal to any thread that does
    not block it, and Python runs the handler in the main thread anyway:
    with a second thread alive (as ``ccarena run``'s status line has), a
    held block must still not be interrupted."""
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        started: list[int] = []
        done: list[int] = []
        # Python-level work after the signal (a comprehension checks for
        # signals between bytecodes; a C call such as sum() would not, and
        # would pass under a mask-based clean-up too).
        step = lambda: (  # noqa: E731
            started.append(1),
            _self(signal.SIGHUP),
            [x for x in range(300_000)],
            done.append(1),
        )
        with pytest.raises(Interrupted) as e, SignalGuard(step):
            raise RuntimeError("the run failed")
        # The step ran once, uninterrupted; the signal ends the run after it
        # (a pthread_sigmask clean-up: started 5 times, never done).
        assert started == [1] and done == [1] and e.value.exit_status == 128 + signal.SIGHUP
    finally:
        stop.set()
        t.join()


def test_a_guarded_block_ends_with_the_signals_status_and_cleans_up_once():
    steps = []
    # A second signal during the clean-up is absorbed: the run ends with the
    # first one's status and the step ran once.
    with pytest.raises(Interrupted) as e, SignalGuard(lambda: (steps.append(1), _self(signal.SIGINT))):
        _self(signal.SIGTERM)
        raise AssertionError("not interrupted")
    assert e.value.exit_status == 128 + signal.SIGTERM
    assert steps == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.fixture
def signalling_popen(monkeypatch) -> list[subprocess.Popen]:
    """``Popen`` that sends this process SIGINT as it returns (a signal
    landing while a child is being started); the children it started."""
    real = subprocess.Popen
    started: list[subprocess.Popen] = []

    def popen(*a, **k):
        p = real(*a, **k)
        started.append(p)
        _self()
        return p

    monkeypatch.setattr(subprocess, "Popen", popen)
    return started


def test_a_signal_as_the_clean_up_begins_still_runs_every_step(monkeypatch):
    """A signal that comes as the block ends but before the clean-up holds
    the signals (the moment a Linux run's probe namespace and lock were
    left behind, 2026-11-28) is raised after the steps, not before them."""
    from ccarena import interrupt

    hold = interrupt.held

    def signalled_first():
        _self()  # lands before the signals are held
        return hold()

    ran = []
    with (
        pytest.raises(Interrupted) as e,
        SignalGuard(lambda: ran.append("namespaces"), lambda: ran.append("lock")),
    ):
        monkeypatch.setattr(interrupt, "held", signalled_first)
    assert ran == ["namespaces", "lock"]
    assert e.value.exit_status == 130


def test_a_signal_at_the_clean_ups_first_instruction_still_runs_every_step():
    """No bytecode is left between the block and its clean-up: a signal
    Python handles at the very entry of ``__exit__`` (sent from a profile
    hook on its call, so handled before its first line) is recorded and
    raised after the steps. A clean-up called from ``finally`` had this
    one call unguarded."""
    from ccarena.interrupt import _EXIT

    sent = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is _EXIT and not sent:
            sent.append(1)
            _self()
            [x for x in range(1000)]  # a backward jump: Python checks for signals here

    ran = []
    with pytest.raises(Interrupted) as e:
        guard = SignalGuard(lambda: ran.append("namespaces"), lambda: ran.append("lock"))
        sys.setprofile(hook)
        try:
            with guard:
                pass
        finally:
            sys.setprofile(None)
    assert sent == [1]
    assert ran == ["namespaces", "lock"]
    assert e.value.exit_status == 130


def test_an_interrupt_as_a_command_starts_leaves_no_child_behind(tmp_path, signalling_popen):
    """The signal is held until the command is done and reaped (no orphan
    doing its work after the clean-up, no zombie). Without the deferral
    the interrupt lands before ``run`` holds the child."""
    mark = tmp_path / "done"
    with pytest.raises(Interrupted), SignalGuard():
        netns.run([sys.executable, "-c", f"import time; time.sleep(0.3); open({str(mark)!r}, 'w')"])
    (p,) = signalling_popen
    assert p.returncode == 0 and mark.exists()  # finished, and waited for


def test_a_signal_during_a_command_lands_once_it_is_done(tmp_path):
    """Sent from another thread while the command runs (the kernel may hand
    it to any thread): the command finishes and is reaped, then the run
    is interrupted."""
    import threading

    mark = tmp_path / "done"
    timer = threading.Timer(0.1, _self)
    timer.start()
    try:
        with pytest.raises(Interrupted), SignalGuard():
            netns.run([sys.executable, "-c", f"import time; time.sleep(0.4); open({str(mark)!r}, 'w')"])
    finally:
        timer.join()
    assert mark.exists()


def test_a_command_gets_its_input_and_a_missing_one_is_one_error():
    assert netns.run(["cat"], input="abc\n").stdout == "abc\n"
    with pytest.raises(netns.LinuxBackendError, match="no-such-tool-here: command not found"):
        netns.run(["no-such-tool-here"])


def test_every_handler_comes_back_even_when_one_fails():
    """Restoring goes on past a handler that raises as it comes back (a
    signal already on its way): here the first one cannot be set at all."""
    from ccarena.interrupt import _restore

    marker = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *a: None)
    signal.signal(signal.SIGHUP, lambda *a: None)
    try:
        with pytest.raises(TypeError):
            _restore({signal.SIGINT: "not a handler", signal.SIGTERM: marker, signal.SIGHUP: signal.SIG_DFL})
        assert signal.getsignal(signal.SIGTERM) is marker
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, marker)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def test_ctrl_c_while_the_command_imports_is_an_ordinary_interrupt(tmp_path, monkeypatch, capsys):
    """A SIGINT while ``ccarena run`` imports a module waits until it is
    in, then ends the command as any Ctrl-C does: exit 130, one line,
    nothing written. (Each command imports what it uses when it uses it;
    ``interrupt.guard_imports`` holds the signals over every import.)"""
    from ccarena import interrupt
    from ccarena.cli import main

    real = interrupt._plain_import
    done: list[str] = []

    def plain_import(name, *args):
        if not done:  # the first import the command makes: a signal lands in it
            _self()
        module = real(name, *args)
        done.append(name)
        return module

    # Every module counts as not yet loaded (this test process has them all).
    monkeypatch.setattr(interrupt, "_loaded", lambda *a: False)
    monkeypatch.setattr(interrupt, "_plain_import", plain_import)
    scn = tmp_path / "s.toml"
    scn.write_text('duration = "1s"\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "20ms"\n')
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert main(["run", str(scn), "--out", str(tmp_path / "out"), "--no-figure"]) == 130
    finally:
        for s, h in saved.items():  # the CLI ignores them on its way out
            signal.signal(s, h)
    assert capsys.readouterr().err.strip().splitlines()[-1] == "ccarena: interrupted (SIGINT)"
    assert not (tmp_path / "out").exists()
    # The import the signal came in was finished, not cut: the signal landed after it
    # (without the guard it lands in the import, which then never completes).
    assert done
