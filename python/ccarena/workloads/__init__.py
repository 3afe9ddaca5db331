"""Workloads: packet captures -> flows -> chunks -> scenario flows; a synthetic
trace-like workload; the SRPT ideal.

>>> from ccarena import workloads as wl
>>> trace = wl.read_pcap("capture.pcap")             # flows and chunks (100 ms pauses)
>>> w = wl.replay(trace)                              # or wl.collapsed(trace), wl.synthetic(...)
>>> w = wl.trace_like(900, rate_bps=3e9, seed=1)      # no capture at hand: fitted to paper B's facts
>>> doc = wl.workload_scenario(w.window(60), cc="bbr3", rate="3Gbps", rtt="20ms")
>>> wl.write_toml(doc, "trace.toml")

See docs/workloads.md.
"""

from .generate import scenario_flows, successive_flow, to_toml, workload_scenario, write_toml
from .model import MODES, Workload, collapsed, replay, size_cdf, synthetic
from .pcap import DEFAULT_THRESHOLD_S, Trace, merge_chunks, read_pcap
from .srpt import srpt, srpt_completion
from .tracelike import FACTS, TRACE_LIKE, TraceLikeModel, measure_facts, trace_like

__all__ = [
    "DEFAULT_THRESHOLD_S",
    "FACTS",
    "MODES",
    "TRACE_LIKE",
    "Trace",
    "TraceLikeModel",
    "Workload",
    "collapsed",
    "measure_facts",
    "merge_chunks",
    "read_pcap",
    "replay",
    "scenario_flows",
    "size_cdf",
    "srpt",
    "srpt_completion",
    "successive_flow",
    "synthetic",
    "to_toml",
    "trace_like",
    "workload_scenario",
    "write_toml",
]
