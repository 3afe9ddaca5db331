"""Paper C: BBR's RTT unfairness and the BBQ fix (id ``bbq``).

Defaults of the paper: a 100 Mbit/s bottleneck with a 2 MB buffer (tail
drop), two bulk flows with RTTs 10 ms and 50 ms, the 10 ms flow first,
senders pacing with fq, 120 s Netperf runs. The 50 ms flow joins after 5 s
(2 s in the quick form); shares are steady-state: averaged over the samples
from 10 s after the join (3 s in the quick form) to the end. The paper's
findings, checked on these runs: findings_bbq.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from .base import box, lines, mbps, mean, ms, register, scenario, timeseries, with_sweep

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy("pandas")

PAPER = "bbq"
RATE, BUFFER = "100Mbps", "2MB"
FULL_S, QUICK_S = 120, 20
JOIN_FULL, JOIN_QUICK = 5.0, 2.0
SETTLE_FULL, SETTLE_QUICK = 10.0, 3.0


def _timing(quick: bool) -> tuple[int, float, float]:
    return (QUICK_S, JOIN_QUICK, SETTLE_QUICK) if quick else (FULL_S, JOIN_FULL, SETTLE_FULL)


def base(
    name: str,
    quick: bool,
    cc: str = "bbr1",
    *,
    short_count: int = 1,
    long_rtt: str = "50ms",
    rate: str = RATE,
    sample: str = "100ms",
    duration: float | None = None,
    cc_params: Any = None,
) -> dict[str, Any]:
    """flows[0]: the short-RTT (10 ms) flow(s), from 0 s; flows[1]: the long-RTT flow, joining later."""
    dur, join, _ = _timing(quick)
    short = {"cc": cc, "rtt": "10ms", "count": short_count}
    long = {"cc": cc, "rtt": long_rtt, "start": f"{join:g}s"}
    if cc_params is not None:
        short["cc_params"] = long["cc_params"] = cc_params
    return scenario(
        f"bbq-{name}",
        duration=f"{duration or dur:g}s",
        rate=rate,
        buffer=BUFFER,
        rtt="10ms",
        flows=[short, long],
        sample=sample,
        description="BBQ paper: 10 ms vs longer-RTT flows on a 100 Mbit/s, 2 MB tail-drop bottleneck",
    )


def steady_shares(exp: Any, quick: bool) -> pd.DataFrame:
    """Per run and flow: mean goodput over the steady-state window, its share
    of the run's total, and a label ("bbr1 10 ms")."""
    _, join, settle = _timing(quick)
    s = exp.samples
    s = s[s["time_s"] > join + settle]
    keys = [*exp.keys, "repeat", "run"]
    per = s.groupby([*keys, "flow", "group"], sort=False, dropna=False)["goodput_mbps"].mean().reset_index()
    f = exp.flows[["run", "repeat", "flow", "cc", "rtt_ms"]]
    per = per.merge(f, on=["run", "repeat", "flow"], how="left")
    total = per.groupby(["run", "repeat"])["goodput_mbps"].transform("sum")
    per["share"] = per["goodput_mbps"] / total.where(total > 0)
    per["flow class"] = [f"{cc} {rtt:g} ms" for cc, rtt in zip(per["cc"], per["rtt_ms"], strict=True)]
    per["rtt class"] = [f"{rtt:g} ms" for rtt in per["rtt_ms"]]
    return per


def _expect_util(value: float = 0.8) -> list[dict[str, Any]]:
    return [{"metric": "utilization", "op": ">=", "value": value}]


# fig1 ------------------------------------------------------------------------------------------


def build_fig1(quick: bool) -> dict[str, Any]:
    doc = base("fig1", quick)
    doc["expect"] = _expect_util()
    return doc


def figure_fig1(exp: Any, out: Path, quick: bool) -> list:
    drawn = timeseries(exp, out, metrics=("goodput_mbps",), title="bbq/fig1: BBRv1, 10 ms vs 50 ms")
    per = steady_shares(exp, quick)
    drawn.append(
        lines(
            out,
            per.groupby("flow class", as_index=False)[["goodput_mbps", "share"]].mean(),
            x="flow class",
            y="goodput_mbps",
            hue=None,
            name="steady-state",
            title="steady-state mean goodput",
            xlabel="flow",
        )
    )
    return drawn


register(
    "bbq/fig1",
    "BBRv1: a 10 ms flow, then a 50 ms flow joins; goodput over time",
    ["cc:bbr1"],
    build_fig1,
    figure_fig1,
)

# fig3 / fig14 -----------------------------------------------------------------------------------

RATES_FULL = [10, 20, 50, 100, 200, 400, 700, 1000]
RATES_QUICK = [20, 100, 400]


def _cc_zip(ccs: list[str]) -> dict[str, Any]:
    """Both flows of one CCA, the CCA swept (flows.0.cc and flows.1.cc together)."""
    return {"zip": {"flows.0.cc": ccs, "flows.1.cc": ccs}} if len(ccs) > 1 else {}


def build_rates(quick: bool, ccs: list[str]) -> dict[str, Any]:
    doc = base("fig3" if ccs == ["bbr1"] else "fig14", quick)
    axes = {**_cc_zip(ccs), "bottleneck.rate": mbps(RATES_QUICK if quick else RATES_FULL)}
    doc = with_sweep(doc, 1 if quick else 5, axes=axes)
    doc["expect"] = _expect_util(0.7)
    return doc


def figure_fig3(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    return mean(
        exp,
        out,
        per,
        "share",
        x="bottleneck.rate",
        hue="flow class",
        title="bbq/fig3: bandwidth share of each flow",
    )


def figure_fig14(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    per = per[per["rtt_ms"] == per["rtt_ms"].min()]
    return mean(
        exp,
        out,
        per,
        "share",
        x="bottleneck.rate",
        hue="cc",
        title="bbq/fig14: share of the 10 ms flow, BBR vs BBQ",
    )


register(
    "bbq/fig3",
    "BBRv1 10 ms vs 50 ms: bandwidth share vs bottleneck rate",
    ["cc:bbr1"],
    lambda q: build_rates(q, ["bbr1"]),
    figure_fig3,
)
register(
    "bbq/fig14",
    "as fig3, BBR vs BBQ: share of the 10 ms flow",
    ["cc:bbr1", "cc:bbq"],
    lambda q: build_rates(q, ["bbr1", "bbq"]),
    figure_fig14,
)

# fig4: RED ------

RED = [
    {"max": "0.5MB", "min": "0.17MB", "probability": 0.02},
    {"max": "0.5MB", "min": "0.17MB", "probability": 0.10},
    {"max": "0.33MB", "min": "0.17MB", "probability": 0.02},
]


def build_fig4(quick: bool) -> dict[str, Any]:
    doc = base("fig4", quick)
    doc["bottleneck"]["qdisc"] = "red"
    return with_sweep(doc, 1 if quick else 5, axes={"bottleneck.red": RED})


def _red_label(v: Any) -> str:
    """A RED setting (a dict, or its JSON as swept) as "max / min / p"."""
    import json

    d = json.loads(v) if isinstance(v, str) else dict(v)
    return f"{d['max']} / {d['min']} / {d['probability']:g}"


def figure_fig4(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    f = exp.flows[["run", "repeat", "flow", "segs_retrans"]]
    per = per.merge(f, on=["run", "repeat", "flow"])
    per["RED max / min / p"] = [_red_label(v) for v in per["bottleneck.red"]]
    drawn = box(
        exp,
        out,
        per,
        "share",
        x="RED max / min / p",
        hue="flow class",
        name="share",
        title="bbq/fig4: bandwidth share with RED (max, min, p)",
    )
    drawn += box(
        exp,
        out,
        per,
        "segs_retrans",
        x="RED max / min / p",
        hue="flow class",
        name="retransmissions",
        ylabel="retransmitted packets",
        title="bbq/fig4: retransmitted packets with RED",
    )
    return drawn


register(
    "bbq/fig4",
    "BBRv1 10 ms vs 50 ms with RED: share and retransmissions",
    ["cc:bbr1", "qdisc:red"],
    build_fig4,
    figure_fig4,
)

# fig5 / fig15 -----------------------------------------------------------------------------------

B_FULL = [10, 15, 20, 30, 40, 50, 75, 100, 150, 200]
B_QUICK = [10, 30, 100]


def build_rtt(quick: bool, ccs: list[str]) -> dict[str, Any]:
    doc = base("fig5" if ccs == ["bbr1"] else "fig15", quick)
    return with_sweep(
        doc, 1 if quick else 5, axes={**_cc_zip(ccs), "flows.1.rtt": ms(B_QUICK if quick else B_FULL)}
    )


def figure_fig5(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    per["flow"] = [
        "A (10 ms)" if r == 10 and g == 0 else "B" for r, g in zip(per["rtt_ms"], per["group"], strict=True)
    ]
    return mean(
        exp,
        out,
        per,
        "goodput_mbps",
        x="flows.1.rtt",
        hue="flow",
        title="bbq/fig5: throughput of A (10 ms) and B",
    )


def figure_fig15(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    per = per[per["group"] == 0]
    return mean(
        exp,
        out,
        per,
        "share",
        x="flows.1.rtt",
        hue="cc",
        title="bbq/fig15: share of the 10 ms flow, BBR vs BBQ",
    )


register(
    "bbq/fig5",
    "BBRv1: flow A 10 ms vs flow B of varying RTT: throughput",
    ["cc:bbr1"],
    lambda q: build_rtt(q, ["bbr1"]),
    figure_fig5,
)
register(
    "bbq/fig15",
    "as fig5, BBR vs BBQ: share of the 10 ms flow",
    ["cc:bbr1", "cc:bbq"],
    lambda q: build_rtt(q, ["bbr1", "bbq"]),
    figure_fig15,
)

# fig6 / fig16 -----------------------------------------------------------------------------------

N_FULL = [1, 2, 5, 10, 15, 20]
N_QUICK = [1, 5, 10]


def build_n(quick: bool, ccs: list[str]) -> dict[str, Any]:
    doc = base("fig6" if ccs == ["bbr1"] else "fig16", quick)
    return with_sweep(
        doc, 1 if quick else 5, axes={**_cc_zip(ccs), "flows.0.count": N_QUICK if quick else N_FULL}
    )


def _per_run_mean(exp: Any, per: pd.DataFrame, by: str) -> pd.DataFrame:
    """The mean per-flow share of each ``by`` class in each run: the
    confidence intervals are then across repeats, not across the flows of a run."""
    keys = [*exp.keys, "repeat", "run", by]
    return per.groupby(keys, sort=False, as_index=False, dropna=False)[["share", "goodput_mbps"]].mean()


def figure_fig6(exp: Any, out: Path, quick: bool) -> list:
    per = _per_run_mean(exp, steady_shares(exp, quick), "flow class")
    return mean(
        exp,
        out,
        per,
        "share",
        x="flows.0.count",
        hue="flow class",
        title="bbq/fig6: per-flow share, one 50 ms flow vs N 10 ms flows",
    )


def figure_fig16(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    per = _per_run_mean(exp, per[per["group"] == 0], "cc")
    return mean(
        exp,
        out,
        per,
        "share",
        x="flows.0.count",
        hue="cc",
        title="bbq/fig16: share of each 10 ms flow, BBR vs BBQ",
    )


register(
    "bbq/fig6",
    "BBRv1: one 50 ms flow vs N 10 ms flows: per-flow share",
    ["cc:bbr1"],
    lambda q: build_n(q, ["bbr1"]),
    figure_fig6,
)
register(
    "bbq/fig16",
    "as fig6, BBR vs BBQ: share of each 10 ms flow",
    ["cc:bbr1", "cc:bbq"],
    lambda q: build_n(q, ["bbr1", "bbq"]),
    figure_fig16,
)

# fig7: race to the bottom ------


def build_fig7(quick: bool) -> dict[str, Any]:
    period = 10 if quick else 50
    steps = [5, 10, 20, 40, 80]
    sched_a: list[list[str]] = []
    sched_b: list[list[str]] = []
    for i, rtt in enumerate(steps[1:], start=1):
        (sched_a if i % 2 else sched_b).append([f"{i * period}s", f"{rtt}ms"])
    doc = scenario(
        "bbq-fig7",
        duration=f"{period * len(steps)}s",
        rate=RATE,
        buffer=BUFFER,
        rtt="5ms",
        flows=[
            {"cc": "bbr1", "rtt": "5ms", "rtt_schedule": sched_a},
            {"cc": "bbr1", "rtt": "5ms", "rtt_schedule": sched_b},
        ],
    )
    return doc


def figure_fig7(exp: Any, out: Path, quick: bool) -> list:
    return timeseries(exp, out, metrics=("goodput_mbps", "srtt_ms"), title="bbq/fig7: race to the bottom")


register(
    "bbq/fig7",
    "two BBRv1 flows take turns inflating their RTT: goodput over time",
    ["cc:bbr1", "rtt_schedule"],
    build_fig7,
    figure_fig7,
)

# fig8-11: fig1 zoomed ------


def build_zoom(quick: bool) -> dict[str, Any]:
    return base("fig8-11", quick, sample="10ms", duration=25 if quick else 30)


def figure_zoom(exp: Any, out: Path, quick: bool) -> list:
    xlim = (5.0, 15.0) if quick else (12.0, 22.0)
    return timeseries(
        exp,
        out,
        metrics=("goodput_mbps", "srtt_ms", "queue_backlog_bytes", "cwnd_pkts", "inflight_pkts"),
        state_flow=0,
        xlim=xlim,
        title="bbq/fig8-11: fig1 zoomed",
    )


register(
    "bbq/fig8-11",
    "fig1 zoomed: goodput, RTT, per-flow backlog, cwnd and inflight",
    ["cc:bbr1"],
    build_zoom,
    figure_zoom,
    notes="The quick form zooms on 5-15 s, the full form on 12-22 s.",
)

# fig12: drain to one BDP ------


#: Swept in fig12: each flow drains to one BDP (true) or is plain BBRv1 (false).
DRAIN_KEYS = ("flows.0.cc_params.drain_to_target", "flows.1.cc_params.drain_to_target")


def build_fig12(quick: bool) -> dict[str, Any]:
    # Setup fix: the paper applies the variant "to the previous experiment in
    # Fig. 1" (Sec. V-A) and finds the 10 ms flow's share "even lower" than
    # with BBR. So the full form is Fig. 1's 120 s run (it was 20 s, which
    # left a 5 s steady window), and both forms run plain BBRv1 beside the
    # variant (drain_to_target false/true), so that the comparison is within
    # the id; the full form repeats 5 times. The figure still draws the
    # variant's run only.
    doc = base(
        "fig12", quick, sample="5ms", duration=15 if quick else None, cc_params={"drain_to_target": True}
    )
    return with_sweep(doc, 1 if quick else 5, axes={"zip": {k: [False, True] for k in DRAIN_KEYS}})


def figure_fig12(exp: Any, out: Path, quick: bool) -> list:
    rows = [
        i
        for i in range(len(exp.runs))
        if int(exp.runs["repeat"].iloc[i]) == 0
        and all(str(exp.runs[k].iloc[i]) == "True" for k in DRAIN_KEYS if k in exp.keys)
    ]
    return timeseries(
        exp,
        out,
        metrics=("bbr_pacing_gain",),
        state_flow=0,
        xlim=(12.0, 13.0),
        title="bbq/fig12: BBRv1 draining to one BDP after probing",
        rows=rows,
    )


register(
    "bbq/fig12",
    "BBRv1 variant that drains to exactly one BDP: queueing delay and pacing gain",
    ["cc:bbr1", "bbr1_drain_to_target"],
    build_fig12,
    figure_fig12,
)

# fig13: BBQ, the 10 ms flow leaves ------


def build_fig13(quick: bool) -> dict[str, Any]:
    doc = base("fig13", quick)
    dur, _, _ = _timing(quick)
    doc["flows"][0]["stop"] = f"{dur - 10 if not quick else dur - 5}s"
    return with_sweep(doc, axes=_cc_zip(["bbr1", "bbq"]))


def figure_fig13(exp: Any, out: Path, quick: bool) -> list:
    return timeseries(exp, out, metrics=("goodput_mbps",), title="bbq/fig13: BBR vs BBQ")


register(
    "bbq/fig13",
    "BBQ in fig1's setting, the 10 ms flow leaves at 110 s: goodput and queueing delay",
    ["cc:bbr1", "cc:bbq", "flow_stop"],
    build_fig13,
    figure_fig13,
)

# fig17: pairs of RTTs ------

PAIR_RTTS_FULL = [5, 10, 20, 50, 100, 200, 300]
PAIR_RTTS_QUICK = [10, 50, 200]


def build_fig17(quick: bool) -> dict[str, Any]:
    rtts = PAIR_RTTS_QUICK if quick else PAIR_RTTS_FULL
    pairs = [(a, b) for i, a in enumerate(rtts) for b in rtts[i + 1 :]]
    doc = base("fig17", quick)
    return with_sweep(
        doc,
        1 if quick else 5,
        axes={
            "zip": [
                {"flows.0.rtt": ms([a for a, _ in pairs]), "flows.1.rtt": ms([b for _, b in pairs])},
                {"flows.0.cc": ["bbr1", "bbq"], "flows.1.cc": ["bbr1", "bbq"]},
            ],
        },
    )


def figure_fig17(exp: Any, out: Path, quick: bool) -> list:
    per = steady_shares(exp, quick)
    per = per[per["group"] == 0].copy()
    per["rtt pair"] = [f"{a} / {b}" for a, b in zip(per["flows.0.rtt"], per["flows.1.rtt"], strict=True)]
    return mean(
        exp, out, per, "share", x="rtt pair", hue="cc", title="bbq/fig17: share of the shorter-RTT flow"
    )


register(
    "bbq/fig17",
    "pairs of RTTs, BBR vs BBQ: share of the shorter-RTT flow",
    ["cc:bbr1", "cc:bbq"],
    build_fig17,
    figure_fig17,
)
