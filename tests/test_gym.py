"""`ccarena.gym`: the Gymnasium environment over any scenario."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from ccarena.gym import OBSERVATION, RTT_ABSENT, CcEnv, make_vec  # noqa: E402

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


def test_an_rtt_not_measured_is_absent_not_zero():
    """Before the first RTT sample there is no rtt_ms or min_rtt_ms in the
    observation dict (0 in the array, which must stay in its Box); an
    interval without a sample later (one packet a 40 ms round, 10 ms
    intervals) has min_rtt_ms but no rtt_ms; measured, both are there."""
    seen: list[dict] = []

    def reward(d):
        seen.append(dict(d))
        return 0.0

    env = CcEnv(
        {**DUMBBELL, "flows": [{"cc": "reno", "rtt": "40ms"}]}, interval="10ms", action="cwnd", reward=reward
    )
    obs, _ = env.reset(seed=1)
    rtt, low = OBSERVATION.index("rtt_ms"), OBSERVATION.index("min_rtt_ms")
    infos = []
    for _ in range(100):
        obs, _, _, _, info = env.step(np.array([1.0], dtype=np.float32))
        assert obs in env.observation_space
        infos.append((obs, info))
    first = infos[0][1]
    assert "rtt_ms" not in first and "min_rtt_ms" not in first and "rtt_ms" not in seen[0], first
    assert infos[0][0][rtt] == infos[0][0][low] == RTT_ABSENT
    measured = [(o, i) for o, i in infos if "rtt_ms" in i]
    gaps = [(o, i) for o, i in infos if "min_rtt_ms" in i and "rtt_ms" not in i]
    assert measured and gaps, "the window of one packet leaves intervals without an RTT sample"
    for o, i in measured:
        assert i["rtt_ms"] >= i["min_rtt_ms"] >= 40.0 and o[rtt] == pytest.approx(i["rtt_ms"], rel=1e-6)
    assert all(o[rtt] == RTT_ABSENT and o[low] > 0 for o, _ in gaps)
    # The default reward has no delay term where there is no RTT.
    assert env.default_reward(gaps[0][1]) == pytest.approx(
        env.default_reward({**gaps[0][1], "rtt_ms": gaps[0][1]["min_rtt_ms"]})
    )
    assert env.default_reward(first) == 0.0


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
