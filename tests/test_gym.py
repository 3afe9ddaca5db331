"""`ccarena.gym`: the Gymnasium environment over any scenario."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from ccarena.gym import OBSERVATION, CcEnv, make_vec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DUMBBELL = {
    "duration": "2s",
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "40ms"}, {"cc": "cubic", "rtt": "40ms"}],
}


def test_the_environment_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = CcEnv(DUMBBELL)
    check_env(env, skip_render_check=True)
    env.close()


def _trajectory(env, seed, action):
    obs, _ = env.reset(seed=seed)
    out, done = [obs], False
    while not done:
        obs, _, done, trunc, _ = env.step(np.array([action], dtype=np.float32))
        assert not trunc
        out.append(obs)
    return np.array(out)


def test_an_episode_is_the_scenario_and_a_seed_fixes_it():
    env = CcEnv(DUMBBELL, interval="50ms")
    a, b = _trajectory(env, 3, 0.0), _trajectory(env, 3, 0.0)
    assert len(a) == 1 + 2000 // 50
    assert np.array_equal(a, b)
    assert not np.array_equal(a, _trajectory(env, 4, 0.0))  # host timing noise differs by seed
    res = env.results()
    assert list(res.flows["cc"]) == ["python", "cubic"]


def test_the_agents_window_is_the_flows_window():
    # 5 packets per 40 ms, window-limited: 1.45 Mbit/s in every interval.
    env = CcEnv({**DUMBBELL, "flows": [{"cc": "reno", "rtt": "40ms"}]}, interval="200ms", action="cwnd")
    traj = _trajectory(env, 1, 5.0)
    g = traj[3:, OBSERVATION.index("goodput_mbps")]
    assert np.allclose(g, 5 * 1448 * 8 / 0.040 / 1e6, rtol=0.1), g
    assert (traj[3:, OBSERVATION.index("cwnd_pkts")] == 5).all()


def test_vectorized_environments_run_side_by_side():
    v = make_vec(3, DUMBBELL, interval="100ms")
    obs, _ = v.reset(seed=[1, 2, 3])
    assert obs.shape == (3, len(OBSERVATION))
    for _ in range(5):
        obs, r, _, _, _ = v.step(np.zeros((3, 1), dtype=np.float32))
    assert obs.shape == (3, len(OBSERVATION)) and r.shape == (3,)
    v.close()


def test_the_documented_training_loop_learns():
    """examples/gym_cem.py (docs/controllers.md) improves its policy on a held-out seed."""
    ns = runpy.run_path(str(ROOT / "examples" / "gym_cem.py"))
    first, last = ns["main"]()
    assert last > first + 20, (first, last)


def test_a_bad_flow_or_action_is_refused():
    with pytest.raises(Exception, match="flow"):
        CcEnv(DUMBBELL, flow=5)
    with pytest.raises(ValueError, match="action"):
        CcEnv(DUMBBELL, action="warp")
    with pytest.raises(Exception, match="count = 1"):
        CcEnv({**DUMBBELL, "flows": [{"cc": "reno", "rtt": "40ms", "count": 2}]})
