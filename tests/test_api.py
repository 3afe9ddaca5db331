"""The public Python API: ccarena.run with keyword overrides."""

from pathlib import Path

import pytest

import ccarena


def test_run_dict_with_keyword_overrides(tmp_path: Path, tiny):
    r = ccarena.run(tiny, out=tmp_path / "run", bottleneck__rate="10Mbps", flows__0__rtt="30ms")
    assert r.path == tmp_path / "run"
    assert list(r.flows["cc"]) == ["reno"]
    assert r.flows["rtt_ms"].iloc[0] == pytest.approx(30.0)
    assert r.summary["rate_mbps"].iloc[0] == pytest.approx(10.0)
    assert {"time_s", "flow", "goodput_mbps"} <= set(r.samples.columns)
    assert {"time_s", "sojourn_mean_ms"} <= set(r.queue.columns)
    assert r.stats["events"] > 0
    loaded = ccarena.Results.load(r.path)
    assert loaded.flows.equals(r.flows)
    assert tiny["bottleneck"]["rate"] == "20Mbps"  # the caller's dict is not modified


def test_run_bad_keyword_override_raises_scenario_error(tmp_path: Path, tiny):
    with pytest.raises(ccarena.ScenarioError) as ei:
        ccarena.run(tiny, out=tmp_path / "run", bottleneck__rate="0Mbps")
    assert ei.value.path == "bottleneck.rate"
    assert "bottleneck__rate" in str(ei.value)
    assert not (tmp_path / "run").exists()


def test_same_scenario_same_hash(tiny):
    a = ccarena.load(tiny)
    b = ccarena.load(dict(reversed(list(tiny.items()))))
    assert a.hash == b.hash and len(a.hash) == 64
    assert ccarena.load(tiny, seed=8).hash != a.hash


def test_version():
    from ccarena import _core

    assert ccarena.__version__ == _core.version()
