"""The self-checks' reading of other work on the run's CPUs
(ccarena.linux.cpu): which processes are the run's, and that work done
outside the run is counted, reaped children included."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ccarena.linux import cpu

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")


def snap(at_s: float, procs: dict[int, tuple]) -> cpu.Snapshot:
    """A snapshot from {pid: (parent, comm, own_s[, children_s])}."""
    return cpu.Snapshot(
        at_s,
        {p: v[2] for p, v in procs.items()},
        {p: v[3] if len(v) > 3 else 0.0 for p, v in procs.items()},
        {p: v[0] for p, v in procs.items()},
        {p: v[1] for p, v in procs.items()},
    )


def test_the_runs_processes_and_softirq_threads_are_not_other_work():
    # The run (pid 10) with a child (11) and a grandchild (12) that appears
    # during the window, the softirq thread, and two other processes: one
    # that used 1 s, one new that used 0.5 s. Two CPUs over 5 s.
    before = snap(0.0, {1: (0, "init", 0.0), 10: (1, "python", 1.0), 11: (10, "ip", 0.2),
                        14: (2, "ksoftirqd/0", 3.0), 20: (1, "cc1", 4.0)})  # fmt: skip
    after = snap(5.0, {1: (0, "init", 0.0), 10: (1, "python", 3.0), 11: (10, "ip", 2.2),
                       12: (11, "iperf3", 2.0), 14: (2, "ksoftirqd/0", 6.0), 20: (1, "cc1", 5.0),
                       30: (20, "make", 0.5)})  # fmt: skip
    assert cpu.others_share(before, after, cpus=2, root=10) == pytest.approx(1.5 / 10.0)
    # Seen from another root, the first run is other work and cc1 is ours.
    assert cpu.others_share(before, after, cpus=2, root=20) == pytest.approx((2.0 + 2.0 + 2.0) / 10.0)


def test_a_child_reaped_in_the_window_counts_its_time_in_it():
    # A shell (50) whose long job (51, 100 s so far, with 20 s of its own
    # reaped children) ends 1 s into the window and is reaped: the shell's
    # children's time gains 121 s, of which 1 s is the window's.
    before = snap(0.0, {1: (0, "init", 0.0), 50: (1, "bash", 0.5, 3.0), 51: (50, "job", 100.0, 20.0)})
    after = snap(4.0, {1: (0, "init", 0.0), 50: (1, "bash", 0.5, 3.0 + 121.0)})
    assert cpu.others_share(before, after, cpus=1, root=99) == pytest.approx(1.0 / 4.0)


def test_a_whole_tree_ending_in_the_window_counts_its_time_in_it():
    # `timeout 10 busy` started from a shell that is gone: init (1) reaps
    # timeout (60), which reaped the busy child (61, 9 s so far): init's
    # children's time gains 10 s, of which 1 s is the window's.
    before = snap(0.0, {1: (0, "init", 0.0, 5.0), 60: (1, "timeout", 0.0), 61: (60, "python3", 9.0)})
    after = snap(2.0, {1: (0, "init", 0.0, 15.0)})
    assert cpu.others_share(before, after, cpus=1, root=99) == pytest.approx(1.0 / 2.0)


def test_a_reused_pid_never_counts_negative():
    before = snap(0.0, {1: (0, "init", 0.0), 40: (1, "old", 9.0)})
    after = snap(2.0, {1: (0, "init", 0.0), 40: (1, "new", 0.1)})
    assert cpu.others_share(before, after, cpus=1, root=99) == 0.0


def test_work_outside_the_run_is_counted_with_reaped_children():
    # A process outside this one's tree (double-forked, so init's) that
    # runs short-lived busy children one after another: their CPU reaches
    # the snapshot through its cutime. At least what it measured itself
    # must count as other work (other programs can only add to it).
    code = (
        "import os, subprocess, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "t = time.monotonic()\n"
        "while time.monotonic() - t < 1.0:\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nt=time.process_time()\\n"
        "while time.process_time()-t<0.1: pass'])\n"
        "r = os.times()\n"
        "print(r.children_user + r.children_system, flush=True)\n"
        "time.sleep(1.0)\n"
    )
    before = cpu.snapshot()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    p.wait()  # the first fork returns at once; its child is init's
    used = float(p.stdout.readline())
    time.sleep(0.2)
    after = cpu.snapshot()
    p.stdout.close()
    wall = after.at_s - before.at_s
    others_s = cpu.others_share(before, after, cpus=1) * wall
    assert used > 0.5
    assert others_s >= 0.9 * used, (others_s, used)
