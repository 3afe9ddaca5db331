"""Paper D: Impact of TCP BBR on CUBIC Traffic: A Mixed Workload Evaluation
(id ``mixed-workload``).

Setup: RTT 45 ms for every flow, all of it on the data path (the testbed's
netem sits on the bottleneck; ``rtt_split = 1``); one large flow (30 MB, or
90 MB) from t = 0; from 0.5 s a succession of small (100 KB) or medium
(500 KB, 1 MB, 2 MB) flows, each starting 0.1 s after the previous one completes
(``repeat = { gap = "100ms", count = N }``). Bottleneck {5 .. 70} Mbit/s,
buffer {0.5 .. 8} BDP, tail drop, 10 repetitions. Combinations LARGE-small:
BBR-bbr, BBR-cubic, CUBIC-bbr, CUBIC-cubic (BBR = bbr1). flows[0] is the
large flow, flows[1] the successive ones (group 1 in flows.parquet).
Quick forms: fewer rates and buffers, one repetition, 20 s runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..expect import flows_beside
from ..lazy import lazy
from .base import (
    bdp,
    box,
    cdf,
    mbps,
    mean,
    register,
    run_means,
    scenario,
    timeseries,
    with_sweep,
)

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy("pandas")

PAPER = "mixed-workload"
RATES = [5, 10, 20, 30, 40, 50, 60, 70]
BUFFERS = [0.5, 1, 2, 4, 8]
COMBOS = {"flows.0.cc": ["bbr1", "bbr1", "cubic", "cubic"], "flows.1.cc": ["bbr1", "cubic", "bbr1", "cubic"]}
NEEDS = ["cc:bbr1", "cc:cubic", "successive"]


def base(
    name: str,
    quick: bool,
    *,
    large: str | None = "30MB",
    small: str = "1MB",
    large_cc: str = "cubic",
    small_cc: str = "cubic",
    rate: str = "20Mbps",
    buffer: str = "1BDP",
    gap: str = "100ms",
    duration: str | None = None,
) -> dict[str, Any]:
    flows: list[dict[str, Any]] = []
    if large:
        flows.append({"cc": large_cc, "size": large, "label": "large"})
    else:  # a second stream of successive flows in place of the large flow
        flows.append(
            {
                "cc": large_cc,
                "size": small,
                "start": "0.5s",
                "label": "small-a",
                "repeat": {"gap": gap, "count": 1000},
            }
        )
    flows.append(
        {
            "cc": small_cc,
            "size": small,
            "start": "0.5s",
            "label": "small",
            "repeat": {"gap": gap, "count": 1000},
        }
    )
    return scenario(
        f"mixed-workload-{name}",
        duration=duration or ("20s" if quick else "60s"),
        rate=rate,
        buffer=buffer,
        rtt="45ms",
        # the testbed's netem sits on the bottleneck, toward the sink: the delay is on the data path
        path={"rtt_split": 1.0},
        flows=flows,
        description="mixed workload: a large flow vs successive small or medium flows, RTT 45 ms",
    )


def _reps(quick: bool) -> int:
    return 1 if quick else 10


def _combo(frame: Any) -> list[str]:
    return [
        f"{a.upper().replace('BBR1', 'BBR')}-{b.replace('bbr1', 'bbr')}"
        for a, b in zip(frame["flows.0.cc"], frame["flows.1.cc"], strict=True)
    ]


def _beside_large(exp: Any) -> pd.DataFrame:
    """The successive flows (group 1) that started while the large flow
    (flow 0) ran, per run: the ones the paper's medium-flow FCTs measure.
    A 60 s run outlives a 30 MB flow at 20 Mbit/s by 45 s, and the flows
    after it run alone (``expect.flows_beside``; the findings,
    findings_mixed_workload.py, select the same flows)."""
    kept = flows_beside(exp.flows, 0, by="run")
    return kept[kept["group"] == 1]


def build_fig2(quick: bool) -> dict[str, Any]:
    doc = base("fig2-4", quick)
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "zip": COMBOS,
            "bottleneck.rate": mbps([10, 40] if quick else RATES),
            "bottleneck.buffer": bdp([0.5, 2] if quick else BUFFERS),
        },
    )


def figure_fig2(exp: Any, out: Path, quick: bool) -> list:
    f = run_means(exp, _beside_large(exp), "fct_s")
    f["combination"] = _combo(f)
    return mean(
        exp,
        out,
        f,
        "fct_s",
        x="bottleneck.rate",
        hue="combination",
        panel="bottleneck.buffer",
        title="completion time of the medium flows beside the large flow (those that completed)",
    )


def figure_fig3(exp: Any, out: Path, quick: bool) -> list:
    f = exp.flows[exp.flows["group"] == 0].copy()
    f["combination"] = _combo(f)
    return mean(
        exp,
        out,
        f,
        "goodput_mbps",
        x="bottleneck.rate",
        hue="combination",
        panel="bottleneck.buffer",
        title="throughput of the large flow",
    )


def utilization_while_large(exp: Any) -> Any:
    """The runs with ``utilization`` measured while the large flow (group 0)
    was sending, from its start to its completion (or the end of the run):
    the summed goodput of all flows over those samples / the bottleneck rate.
    The run's own utilization also counts the time after the large flow is
    done, when only the successive flows load the link."""
    runs = exp.runs.copy()
    f = exp.flows[exp.flows["group"] == 0].set_index(["run", "repeat"])
    s = exp.samples
    per = s.groupby(["run", "repeat", "time_s"], sort=False)["goodput_mbps"].sum().reset_index()
    util = []
    for r in runs.itertuples(index=False):
        key = (r.run, r.repeat)
        if key not in f.index:
            util.append(float("nan"))
            continue
        large = f.loc[key]
        large = large.iloc[0] if hasattr(large, "iloc") and large.ndim > 1 else large
        sub = per[(per["run"] == r.run) & (per["repeat"] == r.repeat)]
        sub = sub[(sub["time_s"] > float(large["start_s"])) & (sub["time_s"] <= float(large["end_s"]))]
        util.append(float(sub["goodput_mbps"].mean() / r.rate_mbps) if len(sub) else float("nan"))
    runs["utilization"] = util
    return runs


def figure_fig4(exp: Any, out: Path, quick: bool) -> list:
    r = utilization_while_large(exp)
    r["combination"] = _combo(r)
    return mean(
        exp,
        out,
        r,
        "utilization",
        x="bottleneck.rate",
        hue="combination",
        panel="bottleneck.buffer",
        title="bottleneck utilization while the large flow sends",
    )


register(
    "mixed-workload/fig2",
    "30 MB large flow vs successive 1 MB flows: FCT of the medium flows",
    NEEDS,
    build_fig2,
    figure_fig2,
)
register("mixed-workload/fig3", "as fig2: throughput of the large flow", NEEDS, build_fig2, figure_fig3)
register("mixed-workload/fig4", "as fig2: bottleneck utilization", NEEDS, build_fig2, figure_fig4)


def build_fig5(quick: bool) -> dict[str, Any]:
    doc = base("fig5", quick, rate="40Mbps", buffer="0.5BDP")
    return with_sweep(doc, axes={"flows.1.cc": ["bbr1", "cubic"]})


def figure_fig5(exp: Any, out: Path, quick: bool) -> list:
    return timeseries(exp, out, metrics=("cwnd_pkts",), title="cwnd of all flows")


register(
    "mixed-workload/fig5",
    "CUBIC large vs 1 MB BBR or CUBIC, 40 Mbit/s, 0.5 BDP: cwnd over time",
    NEEDS,
    build_fig5,
    figure_fig5,
)


def build_fig6(quick: bool) -> dict[str, Any]:
    doc = base("fig6-7", quick, buffer="0.5BDP")
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "flows.1.size": ["500KB", "2MB"] if quick else ["500KB", "1MB", "2MB"],
            "flows.1.cc": ["bbr1", "cubic"],
            "bottleneck.rate": mbps([10, 40] if quick else RATES),
        },
    )


def figure_fig6(exp: Any, out: Path, quick: bool) -> list:
    f = exp.flows[exp.flows["group"] == 0]
    return mean(
        exp,
        out,
        f,
        "goodput_mbps",
        x="bottleneck.rate",
        hue="flows.1.cc",
        panel="flows.1.size",
        title="large-flow throughput",
    )


def figure_fig7(exp: Any, out: Path, quick: bool) -> list:
    return mean(
        exp,
        out,
        utilization_while_large(exp),
        "utilization",
        x="bottleneck.rate",
        hue="flows.1.cc",
        panel="flows.1.size",
        title="utilization while the large flow sends",
    )


register(
    "mixed-workload/fig6",
    "large CUBIC vs medium flows of 500 KB/1 MB/2 MB: large-flow throughput",
    NEEDS,
    build_fig6,
    figure_fig6,
)
register("mixed-workload/fig7", "as fig6: utilization", NEEDS, build_fig6, figure_fig7)


def build_fig8(quick: bool) -> dict[str, Any]:
    doc = base("fig8", quick, large="90MB", rate="40Mbps", buffer="0.5BDP")
    gaps = [0.0, 0.3, 0.6, 0.9] if quick else [round(0.1 * i, 1) for i in range(10)]
    return with_sweep(
        doc,
        _reps(quick),
        axes={"flows.1.repeat.gap": [f"{g:g}s" for g in gaps], "flows.1.cc": ["bbr1", "cubic"]},
    )


def figure_fig8(exp: Any, out: Path, quick: bool) -> list:
    f = exp.flows[exp.flows["group"] == 0]
    drawn = mean(
        exp,
        out,
        f,
        "goodput_mbps",
        x="flows.1.repeat.gap",
        hue="flows.1.cc",
        name="throughput",
        title="large-flow throughput vs interflow gap",
    )
    drawn += mean(
        exp,
        out,
        utilization_while_large(exp),
        "utilization",
        x="flows.1.repeat.gap",
        hue="flows.1.cc",
        name="utilization",
        title="utilization while the large flow sends vs interflow gap",
    )
    return drawn


register(
    "mixed-workload/fig8",
    "90 MB CUBIC vs 1 MB flows, gap 0-0.9 s: throughput and utilization",
    NEEDS,
    build_fig8,
    figure_fig8,
)


def build_fig9(quick: bool) -> dict[str, Any]:
    doc = base("fig9", quick, large=None, large_cc="cubic", rate="20Mbps")
    return with_sweep(
        doc,
        _reps(quick),
        axes={"flows.1.cc": ["bbr1", "cubic"], "bottleneck.buffer": bdp([0.5, 2] if quick else BUFFERS)},
    )


def figure_fig9(exp: Any, out: Path, quick: bool) -> list:
    f = run_means(exp, exp.flows[exp.flows["group"] == 0], "fct_s")
    return mean(
        exp,
        out,
        f,
        "fct_s",
        x="bottleneck.buffer",
        hue="flows.1.cc",
        title="completion time of the CUBIC flows (vs 1 MB BBR or CUBIC flows)",
    )


register(
    "mixed-workload/fig9",
    "1 MB CUBIC flows vs 1 MB BBR/CUBIC flows, 20 Mbit/s: FCT vs buffer",
    NEEDS,
    build_fig9,
    figure_fig9,
)


def _vs_large(name: str, quick: bool, small: str, rate: str, buffers: list[float]) -> dict[str, Any]:
    doc = base(name, quick, small=small, rate=rate)
    return with_sweep(
        doc, _reps(quick), axes={"flows.0.cc": ["bbr1", "cubic"], "bottleneck.buffer": bdp(buffers)}
    )


def _fct_small(exp: Any, out: Path, quick: bool) -> list:
    f = run_means(exp, _beside_large(exp), "fct_s")
    return mean(
        exp,
        out,
        f,
        "fct_s",
        x="bottleneck.buffer",
        hue="flows.0.cc",
        title="completion time of the CUBIC flows beside the large flow, by its CCA",
    )


def _cwnd_box(exp: Any, out: Path, quick: bool) -> list:
    kept = _beside_large(exp)[["run", "flow"]]
    s = exp.samples.merge(kept, on=["run", "flow"])
    return box(
        exp, out, s, "cwnd_pkts", x="bottleneck.buffer", hue="flows.0.cc", title="cwnd of the medium flows"
    )


def _pacing(exp: Any, out: Path, quick: bool) -> list:
    rows = [
        i
        for i in range(len(exp.runs))
        if exp.runs["flows.0.cc"].iloc[i] == "bbr1" and int(exp.runs["repeat"].iloc[i]) == 0
    ]
    return timeseries(
        exp,
        out,
        metrics=("pacing_rate_mbps",),
        rows=rows,
        state_flow=0,
        title="pacing rate of the large BBR flow",
    )


def _ecdf(exp: Any, out: Path, quick: bool) -> list:
    f = _beside_large(exp)
    return cdf(
        exp,
        out,
        f,
        "fct_s",
        hue="flows.0.cc",
        panel="bottleneck.buffer",
        title="completion times beside the large flow",
    )


BUF_FULL = BUFFERS
for _id, _small, _rate, _bufs, _fig, _title in (
    (
        "fig10",
        "1MB",
        "20Mbps",
        BUF_FULL,
        _fct_small,
        "1 MB CUBIC flows vs a large BBR/CUBIC flow, 20 Mbit/s: FCT",
    ),
    (
        "fig11",
        "1MB",
        "20Mbps",
        [1, 2],
        _cwnd_box,
        "as fig10, 1 and 2 BDP: box plots of the medium flows' cwnd",
    ),
    ("fig12", "1MB", "20Mbps", [1, 2], _pacing, "as fig10, 1 and 2 BDP: pacing rate of the large BBR flow"),
    (
        "fig13",
        "100KB",
        "5Mbps",
        BUF_FULL,
        _fct_small,
        "100 KB CUBIC flows vs a large BBR/CUBIC flow, 5 Mbit/s: FCT",
    ),
    ("fig14", "100KB", "5Mbps", [1, 2], _ecdf, "as fig13, 1 and 2 BDP: ECDF of completion times"),
    ("fig15", "100KB", "5Mbps", [1, 2], _pacing, "as fig13, 1 and 2 BDP: pacing rate of the large BBR flow"),
):
    register(
        f"mixed-workload/{_id}",
        _title,
        NEEDS,
        lambda q, i=_id, s=_small, r=_rate, b=_bufs: _vs_large(
            i, q, s, r, [0.5, 2] if q and len(b) > 2 else b
        ),
        _fig,
    )
