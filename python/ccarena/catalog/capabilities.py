"""What the simulator core can do now, asked of the core itself.

A catalog experiment lists what it needs (``cc:bbr2``, ``qdisc:fq_codel``,
``loss``, ``jitter``, ``successive``, ...); ``missing(needs)`` says which of
those the installed core lacks. Congestion controls and queue disciplines
come from ``_core.cc_names()`` and ``_core.qdisc_names()``; scenario
features are probed by asking ``_core.normalize`` to accept a small scenario
that uses them, so the list follows the core without being kept by hand.
"""

from __future__ import annotations

import functools
import json
from typing import Any

__all__ = ["CAPABILITIES", "available", "describe", "missing"]

_BASE: dict[str, Any] = {
    "duration": "1s",
    "bottleneck": {"rate": "10Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "reno", "rtt": "20ms"}],
}


def _with(path: tuple, value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(_BASE))
    node = doc
    for seg in path[:-1]:
        node = node[seg]
    node[path[-1]] = value
    return doc


#: feature -> (what it is, a scenario that uses it)
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "loss": ("random loss on the path (path.loss)", _with(("path",), {"loss": "1%"})),
    "jitter": (
        "order-keeping jitter (path.jitter)",
        _with(("path",), {"jitter": {"model": "slotted", "max": "10ms"}}),
    ),
    "ack_jitter": (
        "order-keeping jitter on the ACK path (path.ack_jitter)",
        _with(("path",), {"ack_jitter": {"model": "per_packet", "max": "1ms"}}),
    ),
    "ack_jitter_flow": (
        "jitter on one flow's ACK path (flows.N.ack_jitter)",
        _with(
            ("flows",), [{"cc": "reno", "rtt": "20ms", "ack_jitter": {"model": "per_packet", "max": "10ms"}}]
        ),
    ),
    "successive": (
        "successive flows (flows.N.repeat = { gap, count })",
        _with(
            ("flows",), [{"cc": "reno", "rtt": "20ms", "size": "1MB", "repeat": {"gap": "100ms", "count": 2}}]
        ),
    ),
    "chunks": (
        "trace workloads (flows.N.chunks)",
        _with(("flows",), [{"cc": "reno", "rtt": "20ms", "chunks": [["0s", "20KB"], ["0.5s", "20KB"]]}]),
    ),
    "hosts": (
        "flows sharing a sender (flows.N.host)",
        _with(("flows",), [{"cc": "reno", "rtt": "20ms", "host": 0}]),
    ),
    "pacing_max_rate": (
        "sch_fq maxrate (flows.N.pacing.max_rate)",
        _with(("flows",), [{"cc": "reno", "rtt": "20ms", "pacing": {"mode": "fq", "max_rate": "8.5Mbps"}}]),
    ),
    "bbr1_drain_to_target": (
        "BBRv1's drain-to-one-BDP variant (cc_params.drain_to_target)",
        _with(("flows",), [{"cc": "bbr1", "rtt": "20ms", "cc_params": {"drain_to_target": True}}]),
    ),
    "flow_stop": (
        "a bulk flow that stops at a given time (flows.N.stop)",
        _with(("flows",), [{"cc": "reno", "rtt": "20ms", "stop": "0.5s"}]),
    ),
    "rtt_schedule": (
        "a flow RTT that changes during the run (flows.N.rtt_schedule)",
        _with(("flows",), [{"cc": "reno", "rtt": "20ms", "rtt_schedule": [["1s", "40ms"]]}]),
    ),
}

#: features that are not scenario fields of the simulator
EXTERNAL: dict[str, str] = {
    "linux": "the Linux backend (real kernel TCP in network namespaces)",
    "trace": "reading a packet trace into a flow-size model (ccarena.workloads)",
}


def _probe(doc: dict[str, Any]) -> bool:
    from .. import _core

    try:
        _core.normalize(json.dumps(doc))
    except _core.ScenarioError:
        return False
    return True


def _external(name: str) -> bool:
    import importlib.util

    if name == "linux":
        return importlib.util.find_spec("ccarena.linux") is not None
    if name == "trace":
        return importlib.util.find_spec("ccarena.workloads") is not None
    return False


@functools.cache
def available() -> frozenset[str]:
    """Every capability of the installed core: ``cc:<name>``, ``qdisc:<name>``
    and the features of ``PROBES`` and ``EXTERNAL`` that work."""
    from .. import _core

    caps = {f"cc:{n}" for n in _core.cc_names()} | {f"qdisc:{n}" for n in _core.qdisc_names()}
    caps |= {name for name, (_, doc) in PROBES.items() if _probe(doc)}
    caps |= {name for name in EXTERNAL if _external(name)}
    return frozenset(caps)


CAPABILITIES = available


def missing(needs: set[str] | frozenset[str] | list[str]) -> list[str]:
    """The needs that the installed core lacks, sorted."""
    have = available()
    return sorted(n for n in needs if n not in have)


def describe(need: str) -> str:
    """A need in words: ``cc:bbr2`` -> ``congestion control bbr2``."""
    kind, _, name = need.partition(":")
    if kind == "cc" and name:
        return f"congestion control {name}"
    if kind == "qdisc" and name:
        return f"queue discipline {name}"
    if need in PROBES:
        return PROBES[need][0]
    return EXTERNAL.get(need, need)
