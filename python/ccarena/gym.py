"""A Gymnasium environment: one flow of any scenario, driven by an agent.

``ccarena.gym.CcEnv(scenario, flow=0, interval="20ms", action="cwnd_scale")``
runs the scenario in the simulator and stops every ``interval`` of
simulated time: the agent sees what flow ``flow`` (an entry of
``[[flows]]`` with ``count = 1``) measured over the interval and sets its
congestion window or pacing rate for the next one. The other flows run
their own algorithms. An episode is the scenario's duration; ``reset(seed=)``
sets the scenario's seed, so an episode is reproducible to the bit.

Observation (``float32``, names in ``OBSERVATION``): goodput (Mbit/s,
payload ACKed in the interval), mean RTT of the interval's samples (ms),
minimum RTT so far (ms), loss rate (packets newly marked lost over packets
ACKed and lost), ECN-echo fraction of the ACKs, cwnd (packets), packets in
flight, largest delivery-rate sample (Mbit/s). Zero before the connection
is up. An RTT that was not measured is absent: the observation dict (what
``reward=`` is given, and ``info``) has no ``rtt_ms`` for an interval
without an RTT sample and no ``min_rtt_ms`` before the first sample, and
the array holds 0 in their place (``RTT_ABSENT``): a NaN would leave the
observation space, which Gymnasium's checker refuses. So a feature built
on the array's RTTs needs both to be positive.

Actions (``action=``): ``"cwnd_scale"`` (default): one number a in [-1, 1],
cwnd *= 2**a; ``"cwnd"``: the window in packets, [1, ``max_cwnd``];
``"pacing_rate"``: Mbit/s in [0.01, ``max_rate_mbps``], with cwnd twice
that rate times the minimum RTT (at least 4 packets).

Reward (``reward=`` a callable of the observation dict, or the default):
goodput / bottleneck rate - 0.5 x (RTT / min RTT - 1) - 10 x loss rate.

Needs the ``gymnasium`` package (``pip install 'ccarena[gym]'``).
``make_vec(n, ...)`` gives ``n`` independent environments as a Gymnasium
``SyncVectorEnv``. The environment is registered as
``ccarena/CongestionControl-v0``.
"""

from __future__ import annotations

import itertools
import json
import math
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium
import numpy as np

from . import _core
from .controller import Controller
from .scenario import Scenario, ScenarioError

__all__ = ["OBSERVATION", "RTT_ABSENT", "CcEnv", "make_vec"]

OBSERVATION = (
    "goodput_mbps",
    "rtt_ms",
    "min_rtt_ms",
    "loss_rate",
    "ecn_fraction",
    "cwnd_pkts",
    "inflight_pkts",
    "delivery_rate_mbps",
)
#: What the observation array holds for an RTT not measured (``rtt_ms`` of
#: an interval without an RTT sample, ``min_rtt_ms`` before the first one);
#: the observation dict has no such key.
RTT_ABSENT = 0.0
ACTIONS = ("cwnd_scale", "cwnd", "pacing_rate")
_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _duration_ns(text: str) -> int:
    """ "20ms", "1s", "500us" -> ns (the scenario's duration syntax)."""
    t = text.strip()
    for unit in ("ns", "us", "ms", "s"):
        if t.endswith(unit):
            try:
                v = float(t[: -len(unit)])
            except ValueError:
                break
            if v > 0 and math.isfinite(v):
                return round(v * _UNITS_NS[unit])
            break
    raise ValueError(f'interval = {text!r}: expected a positive duration such as "20ms"')


_ENVS: dict[int, weakref.ref[CcEnv]] = {}
_IDS = itertools.count(1)


class _Agent(Controller):
    """The agent's flow: keeps the window the agent set, counts what the
    interval's ACKs say."""

    def __init__(self, env: int) -> None:
        super().__init__()
        ref = _ENVS.get(env)
        owner = ref() if ref is not None else None
        if owner is None:
            raise RuntimeError("ccarena.gym: the environment of this flow is gone")
        owner._agent = self
        self.interval_reset()
        self.min_rtt = math.inf
        self.in_flight = 0

    def interval_reset(self) -> None:
        self.acked = self.lost = self.acks = self.ece = 0
        self.rtt_sum = 0.0
        self.rtt_n = 0
        self.rate_max = 0.0

    def on_ack(self, sample: Any, conn: Any) -> None:
        self.acks += 1
        self.acked += sample.acked
        self.lost += sample.lost
        self.ece += sample.ece
        if sample.rtt is not None:
            self.rtt_sum += sample.rtt
            self.rtt_n += 1
        if sample.delivery_rate is not None:
            self.rate_max = max(self.rate_max, sample.delivery_rate)
        if conn.min_rtt is not None:
            self.min_rtt = conn.min_rtt
        self.in_flight = conn.in_flight
        self.mss = conn.mss


class CcEnv(gymnasium.Env):
    """See the module's text."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        scenario: str | dict[str, Any] | Scenario,
        flow: int = 0,
        interval: str = "20ms",
        action: str = "cwnd_scale",
        reward: Callable[[dict[str, float]], float] | None = None,
        max_cwnd: int = 100_000,
        max_rate_mbps: float = 100_000.0,
    ) -> None:
        base = (
            scenario
            if isinstance(scenario, Scenario)
            else (Scenario.load(scenario) if isinstance(scenario, str) else Scenario.from_dict(scenario))
        )
        flows = base.raw.get("flows") or []
        if not 0 <= flow < len(flows):
            raise ScenarioError(
                base.source, "flow", f"{flow}: expected an index of [[flows]] (0 to {len(flows) - 1})"
            )
        if int(flows[flow].get("count", 1)) != 1:
            raise ScenarioError(base.source, f"flows[{flow}].count", "the agent's flow needs count = 1")
        if action not in ACTIONS:
            raise ValueError(f"action = {action!r}: expected one of {', '.join(ACTIONS)}")
        self._id = next(_IDS)
        _ENVS[self._id] = weakref.ref(self)
        raw = json.loads(json.dumps(base.raw))
        raw["flows"][flow]["cc"] = "python"
        raw["flows"][flow]["cc_params"] = {"class": "ccarena.gym:_Agent", "env": self._id}
        raw.pop("capture", None)
        self._raw = raw
        self._source = base.source
        self.interval_ns = _duration_ns(interval)
        self.action_kind = action
        self.reward_fn = reward or self.default_reward
        self.max_cwnd = max_cwnd
        self.max_rate_mbps = max_rate_mbps
        scn = Scenario.from_dict(raw, source=base.source)
        bn = scn.normalized.get("bottleneck") or {}
        self.rate_mbps = float(bn.get("rate_bps", 0)) / 1e6
        self.observation_space = gymnasium.spaces.Box(
            0.0, float(np.finfo(np.float32).max), shape=(len(OBSERVATION),), dtype=np.float32
        )
        if action == "cwnd_scale":
            self.action_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        elif action == "cwnd":
            self.action_space = gymnasium.spaces.Box(1.0, float(max_cwnd), shape=(1,), dtype=np.float32)
        else:
            self.action_space = gymnasium.spaces.Box(0.01, float(max_rate_mbps), shape=(1,), dtype=np.float32)
        self._sim: Any = None
        self._agent: _Agent | None = None
        self._now = 0

    def default_reward(self, obs: dict[str, float]) -> float:
        """goodput / link rate - 0.5 x (RTT / min RTT - 1) - 10 x loss rate;
        0 before the first RTT sample, no delay term in an interval without one."""
        if "min_rtt_ms" not in obs:
            return 0.0
        util = obs["goodput_mbps"] / self.rate_mbps if self.rate_mbps > 0 else 0.0
        delay = max(obs["rtt_ms"] / obs["min_rtt_ms"] - 1.0, 0.0) if "rtt_ms" in obs else 0.0
        return util - 0.5 * delay - 10.0 * obs["loss_rate"]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        raw = dict(self._raw)
        if seed is not None:
            raw["seed"] = int(seed)
        scn = Scenario.from_dict(raw, source=self._source)
        self._agent = None
        self._sim = _core.Simulation(scn.core_json)
        self._now = 0
        obs, _ = self._observe()
        return obs, {"time_s": 0.0}

    def _observe(self) -> tuple[np.ndarray, dict[str, float]]:
        a = self._agent
        d: dict[str, float]
        if a is None:
            d = {k: 0.0 for k in OBSERVATION if k not in ("rtt_ms", "min_rtt_ms")}
        else:
            secs = self.interval_ns / 1e9
            mss = getattr(a, "mss", 1448)
            d = {
                "goodput_mbps": a.acked * mss * 8 / secs / 1e6,
                "loss_rate": a.lost / (a.acked + a.lost) if a.acked + a.lost else 0.0,
                "ecn_fraction": a.ece / a.acks if a.acks else 0.0,
                "cwnd_pkts": float(a.cwnd),
                "inflight_pkts": float(a.in_flight),
                "delivery_rate_mbps": a.rate_max * 8 / 1e6,
            }
            # An RTT not measured is absent, not 0 ms.
            if a.rtt_n:
                d["rtt_ms"] = a.rtt_sum / a.rtt_n * 1e3
            if math.isfinite(a.min_rtt):
                d["min_rtt_ms"] = a.min_rtt * 1e3
            a.interval_reset()
        d = {k: d[k] for k in OBSERVATION if k in d}
        return np.array([d.get(k, RTT_ABSENT) for k in OBSERVATION], dtype=np.float32), d

    def _apply(self, action: Any) -> None:
        a = self._agent
        if a is None:
            return
        x = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        if self.action_kind == "cwnd_scale":
            a.cwnd = min(max(a.cwnd * 2.0 ** min(max(x, -1.0), 1.0), 1.0), self.max_cwnd)
        elif self.action_kind == "cwnd":
            a.cwnd = min(max(x, 1.0), self.max_cwnd)
        else:
            rate = min(max(x, 0.01), self.max_rate_mbps) * 1e6 / 8
            a.pacing_rate = rate
            rtt = a.min_rtt if math.isfinite(a.min_rtt) else 0.1
            a.cwnd = max(2 * rate * rtt / getattr(a, "mss", 1448), 4.0)

    def step(self, action: Any):
        if self._sim is None:
            raise RuntimeError("call reset() first")
        self._apply(action)
        self._now += self.interval_ns
        more = self._sim.advance(self._now)
        obs, d = self._observe()
        terminated = not more
        return obs, float(self.reward_fn(d)), terminated, False, {"time_s": self._now / 1e9, **d}

    def results(self):
        """The episode's result tables (a ``ccarena.Results``), once it has ended."""
        from .results import Results, tables_from_ipc

        run = self._sim.results()
        scn = Scenario.from_dict(self._raw, source=self._source)
        meta = {"backend": "sim", "scenario": scn.normalized, "run_stats": dict(run.stats)}
        streams = {t: run.ipc(t) for t in run.names()}
        return Results.from_arrow(tables_from_ipc(streams), meta)

    def close(self) -> None:
        self._sim = None
        _ENVS.pop(self._id, None)


def make_vec(n: int, scenario: Any, **kwargs: Any) -> gymnasium.vector.SyncVectorEnv:
    """``n`` independent environments of the same scenario (seeded apart by ``reset(seed=)``)."""
    return gymnasium.vector.SyncVectorEnv([lambda: CcEnv(scenario, **kwargs) for _ in range(n)])


gymnasium.register(id="ccarena/CongestionControl-v0", entry_point="ccarena.gym:CcEnv")
