"""A sweep killed with SIGKILL mid-way resumes without losing or duplicating a
run, and ends with the same results as an uninterrupted sweep."""

from __future__ import annotations

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
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    done_at_kill = len(_run_dirs(killed))
    assert 0 < done_at_kill < 16
    time.sleep(1.2)  # the orphaned workers notice their driver is gone and exit

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
