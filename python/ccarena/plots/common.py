"""What every figure shares: saving PNG and SVG reproducibly, axis labels with
units, swept values read as numbers, colours per CCA."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "PlotError",
    "axis_label",
    "cc_color",
    "metric_label",
    "metric_scale",
    "new_figure",
    "numeric",
    "save",
    "value_label",
]


class PlotError(ValueError):
    """A figure cannot be drawn from these results as asked (missing column, no rows)."""


def new_figure(width: float = 8.0, height: float = 5.0, **subplots: Any):
    """A figure not attached to pyplot (no global state), with its axes."""
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(**subplots) if subplots else fig.subplots()
    return fig, axes


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``path`` as PNG and the same name with ``.svg``; both files are
    the same bytes for the same figure (no dates, a fixed SVG id salt).
    Returns the PNG's path."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        path = path.with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    with matplotlib.rc_context({"svg.hashsalt": "ccarena", "svg.fonttype": "path"}):
        fig.savefig(path.with_suffix(".svg"), format="svg", metadata={"Date": None, "Creator": None})
    return path


# --------------------------------------------------------------------------- metrics

#: metric column -> (label, scale): values are multiplied by scale for display
_METRICS: dict[str, tuple[str, float]] = {
    "utilization": ("link utilization (%)", 100.0),
    "wire_utilization": ("wire utilization (%)", 100.0),
    "jain": ("Jain's fairness index (%)", 100.0),
    "retrans_rate": ("retransmission rate (%)", 100.0),
    "share": ("share of the total goodput (%)", 100.0),
    "goodput_mbps": ("goodput (Mbit/s)", 1.0),
    "fct_s": ("flow completion time (s)", 1.0),
    "mean_rtt_ms": ("mean RTT (ms)", 1.0),
    "srtt_mean_ms": ("mean smoothed RTT (ms)", 1.0),
    "srtt_ms": ("smoothed RTT (ms)", 1.0),
    "min_rtt_ms": ("min RTT (ms)", 1.0),
    "qdelay_mean_ms": ("mean queueing delay (ms)", 1.0),
    "qdelay_p50_ms": ("median queueing delay (ms)", 1.0),
    "qdelay_p95_ms": ("95th-percentile queueing delay (ms)", 1.0),
    "qdelay_p99_ms": ("99th-percentile queueing delay (ms)", 1.0),
    "sojourn_mean_ms": ("queueing delay (ms)", 1.0),
    "sojourn_max_ms": ("max queueing delay (ms)", 1.0),
    "qdelay_rttmin": ("queueing delay (RTTmin)", 1.0),
    "cwnd_pkts": ("cwnd (packets)", 1.0),
    "inflight_pkts": ("in flight (packets)", 1.0),
    "pacing_rate_mbps": ("pacing rate (Mbit/s)", 1.0),
    "delivery_rate_mbps": ("delivery rate (Mbit/s)", 1.0),
    "backlog_bytes": ("queue backlog (bytes)", 1.0),
    "backlog_pkts": ("queue backlog (packets)", 1.0),
    "bbr_max_bw_mbps": ("BBR bandwidth estimate (Mbit/s)", 1.0),
    "bbr_bw_mbps": ("BBR bandwidth in use (Mbit/s)", 1.0),
    "drops": ("drops (packets)", 1.0),
    "slowdown": ("slowdown (FCT / ideal FCT)", 1.0),
}
_SUFFIX_UNITS = [
    ("_mbps", "Mbit/s"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_bytes", "bytes"),
    ("_pkts", "packets"),
]


def metric_scale(metric: str) -> float:
    return _METRICS.get(metric, ("", 1.0))[1]


#: Metrics that are fractions of a whole, 0..1 whatever the run: the result
#: tables' columns in the unit "fraction" (utilizations, retransmission
#: rates), Jain's index (1/n..1) and throughput shares (``share``, and
#: ``runs_with_shares``'s ``share_<cc>``).
_FRACTIONS = frozenset({"utilization", "wire_utilization", "retrans_rate", "jain", "share"})


def metric_bounds(metric: str) -> tuple[float, float] | None:
    """The range a metric cannot leave (unscaled), for clipping confidence
    intervals (``stats.mean_ci``); None for an unbounded one."""
    if metric in _FRACTIONS or metric.startswith("share_"):
        return (0.0, 1.0)
    return None


def metric_label(metric: str) -> str:
    """An axis label with its unit: ``goodput_mbps`` -> ``goodput (Mbit/s)``."""
    if metric in _METRICS:
        return _METRICS[metric][0]
    for suffix, unit in _SUFFIX_UNITS:
        if metric.endswith(suffix):
            return f"{metric[: -len(suffix)].replace('_', ' ')} ({unit})"
    return metric.replace("_", " ")


# --------------------------------------------------------------------------- swept keys

BDP_UNIT = "\u00d7 BDP"  # "times BDP"
_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_UNITS: list[tuple[str, str, float]] = [
    # (regex unit, axis unit, factor to the axis unit)
    ("BDP", BDP_UNIT, 1.0),
    ("Gbps", "Mbit/s", 1e3),
    ("Mbps", "Mbit/s", 1.0),
    ("Kbps", "Mbit/s", 1e-3),
    ("bps", "Mbit/s", 1e-6),
    ("s", "ms", 1e3),
    ("ms", "ms", 1.0),
    ("us", "ms", 1e-3),
    ("ns", "ms", 1e-6),
    ("%", "%", 1.0),
    ("GB", "MB", 1e3),
    ("MB", "MB", 1.0),
    ("KB", "MB", 1e-3),
    ("kB", "MB", 1e-3),
    ("B", "MB", 1e-6),
    ("pkt", "packets", 1.0),
]


def _parse(v: Any) -> tuple[float, str] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v), ""
    if not isinstance(v, str):
        return None
    for unit, axis, factor in _UNITS:
        m = re.fullmatch(_NUM + r"\s*" + re.escape(unit), v.strip())
        if m:
            return float(m[1]) * factor, axis
    return None


def numeric(values: Iterable[Any]) -> tuple[list[float], str] | None:
    """Swept values as numbers in one unit (``"0.1BDP"`` -> 0.1 BDP_UNIT,
    ``"20ms"`` -> 20 "ms", ``"1Gbps"`` -> 1000 "Mbit/s"), or None when they
    are not all numbers of one kind (e.g. CCA names)."""
    parsed = [_parse(v) for v in values]
    if not parsed or any(p is None for p in parsed):
        return None
    units = {p[1] for p in parsed if p is not None}
    if len(units) > 1:
        return None
    return [p[0] for p in parsed if p is not None], units.pop() if units else ""


_KEY_NAMES = {
    "bottleneck.buffer": "buffer",
    "bottleneck.rate": "bottleneck rate",
    "bottleneck.qdisc": "queue discipline",
    "bottleneck.ecn": "ECN",
    "path.rtt": "RTT",
    "path.loss": "loss",
    "path.jitter": "jitter",
    "path.ack_jitter": "ACK jitter",
    "duration": "duration",
    "cc": "CCA",
}


def axis_label(key: str, unit: str = "") -> str:
    """A swept key as an axis or legend title: ``flows.1.rtt`` -> ``RTT of flows[1]``."""
    if key in _KEY_NAMES:
        name = _KEY_NAMES[key]
    else:
        parts = key.split(".")
        if len(parts) >= 3 and parts[0] == "flows" and parts[1].isdigit():
            field = ".".join(parts[2:])
            names = {"cc": "CCA", "rtt": "RTT", "count": "flows", "size": "flow size", "start": "start"}
            name = f"{names.get(field, field)} of flows[{parts[1]}]"
        else:
            name = key
    if unit:
        name += f" ({unit})"
    return name


def value_label(key: str, value: Any) -> str:
    """One value of a key for a legend: ``flows.0.cc = bbr1`` -> ``bbr1``."""
    return value if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)


def wants_log(values: Iterable[float], unit: str) -> bool:
    vals = [v for v in values if v > 0]
    if not vals:
        return False
    return unit == BDP_UNIT or (min(vals) > 0 and max(vals) / min(vals) >= 20)


_CC_COLORS = {
    "cubic": "tab:blue",
    "reno": "tab:cyan",
    "dctcp": "tab:olive",
    "bbr1": "tab:orange",
    "bbq": "tab:green",
    "bbr2": "tab:red",
    "bbr3": "tab:purple",
    "vegas": "tab:brown",
    "westwood": "tab:pink",
    "htcp": "tab:gray",
    "illinois": "gold",
    "bic": "navy",
    "scalable": "teal",
    "hybla": "maroon",
    "yeah": "darkgreen",
    "prague": "crimson",
    "ledbat_pp": "khaki",
    "copa": "slateblue",
    "python": "black",
}


def cc_color(name: Any, i: int) -> str:
    """A stable colour per CCA name, else the i-th of matplotlib's cycle."""
    if isinstance(name, str) and name in _CC_COLORS:
        return _CC_COLORS[name]
    cycle = [
        "tab:blue",
        "tab:orange",
        "tab:green",
        "tab:red",
        "tab:purple",
        "tab:brown",
        "tab:pink",
        "tab:gray",
    ]
    return cycle[i % len(cycle)]


def finite(series: pd.Series) -> pd.Series:
    return series[series.map(lambda v: isinstance(v, int | float) and math.isfinite(v))]


def sort_values(values: Iterable[Any]) -> list[Any]:
    """Distinct values in a natural order: by number when they parse, else as first seen."""
    seen = list(dict.fromkeys(values))
    num = numeric(seen)
    if num is None:
        return seen
    return [v for _, v in sorted(zip(num[0], seen, strict=True), key=lambda t: t[0])]
