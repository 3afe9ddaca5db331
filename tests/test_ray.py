"""The Ray executor gives the same results as the local pool (on a local Ray
instance with two CPUs). Skipped only when Ray is not installed."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest

import ccarena

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ccarena[ray]')")

DOC = {
    "name": "ray",
    "duration": "2s",
    "seed": 5,
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms"}, {"cc": "cubic", "rtt": "30ms"}],
    "sweep": {"bottleneck.buffer": ["0.5BDP", "2BDP"], "flows.0.cc": ["reno", "cubic"], "repeats": 2},
}


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_matches_local_pool(tmp_path: Path, ray_local):
    local = ccarena.sweep(copy.deepcopy(DOC), out=tmp_path / "local", jobs=2)
    remote = ccarena.sweep(copy.deepcopy(DOC), out=tmp_path / "ray", executor="ray")
    assert remote.ran == 8
    pd.testing.assert_frame_equal(local.runs, remote.runs)
    for run in local.runs["run"]:
        for f in sorted((tmp_path / "local" / run).iterdir()):
            assert f.read_bytes() == (tmp_path / "ray" / run / f.name).read_bytes(), f
    assert ray.is_initialized()  # the sweep used the caller's Ray and left it running
