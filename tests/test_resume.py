"""A sweep killed with SIGKILL mid-way resumes without losing or duplicating a
run, and ends with the same results as an uninterrupted sweep."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

import ccarena
from ccarena.experiment import INDEX_FILE

SLOW = {
    "name": "resume",
    "duration": "6s",
    "seed": 3,
    "bottleneck": {"rate": "1Gbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms", "count": 10}],
    "sweep": {
        "bottleneck.buffer": ["0.5BDP", "1BDP", "2BDP", "4BDP"],
        "flows.0.cc": ["reno", "cubic"],
        "repeats": 2,
    },
}


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started (its pool workers), from /proc."""
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out |= {int(c) for c in (task / "children").read_text().split()}
    return out


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie nobody reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _run_dirs(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")] if d.is_dir() else []


def test_sigkill_then_resume(tmp_path: Path, write_scenario):
    scenario = write_scenario(SLOW, "resume.toml")
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ccarena",
            "sweep",
            str(scenario),
            "--out",
            str(killed),
            "--jobs",
            "2",
            "--no-progress",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while len(_run_dirs(killed)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before it could be killed: " + proc.stderr.read().decode()
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    done_at_kill = len(_run_dirs(killed))
    assert 0 < done_at_kill < 16
    # The orphaned workers notice their driver is gone and exit (after at
    # most the run in hand): wait for them, however loaded the machine.
    deadline = time.monotonic() + 120
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "orphaned workers still running after 120 s"

    resumed = ccarena.sweep(scenario, out=killed, jobs=2)
    assert resumed.cached >= done_at_kill - 2  # runs published by workers after the kill count too
    assert resumed.ran + resumed.cached == 16
    runs = pq.read_table(killed / INDEX_FILE).to_pandas()
    assert len(runs) == 16 and runs["hash"].is_unique
    assert sorted(p.name for p in _run_dirs(killed)) == sorted(runs["run"])
    assert not [p for p in killed.iterdir() if p.name.startswith(".") and "tmp" in p.name]

    clean = ccarena.sweep(scenario, out=tmp_path / "clean", jobs=1)
    pd.testing.assert_frame_equal(clean.runs, runs)
    for run in runs["run"]:
        for f in sorted((tmp_path / "clean" / run).iterdir()):
            assert f.read_bytes() == (killed / run / f.name).read_bytes(), f
