"""Paper A: An Emulation-based Evaluation of TCP BBRv2 Alpha for Wired
Broadband (id ``bbrv2-eval``).

Setup as the paper's scripts: a 1 Gbit/s TBF bottleneck with a 500 kB token
bucket (``burst = "500KB"``), buffer = factor x BDP of 1 Gbit/s x 20 ms
(``bdp_rtt = "20ms"``, 2.5 MB per BDP) unless an experiment says otherwise,
the propagation delay on the data direction (``rtt_split = 1``), senders
pacing with fq, receive windows of 10 x BDP, tail drop, no loss, 300 s runs
and 10 repetitions. Quick forms: 10-20 s runs, one repetition, fewer points.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import (
    bdp,
    cdf,
    heatmap,
    lines,
    mbps,
    mean,
    ms,
    per_cc_runs,
    per_group,
    register,
    run_means,
    scenario,
    with_sweep,
)

PAPER = "bbrv2-eval"
CCAS = ["cubic", "bbr1", "bbr2"]
RWND = "25MB"  # 10 x BDP of 1 Gbit/s x 20 ms


def _d(quick: bool, full: str = "300s", short: str = "10s") -> str:
    return short if quick else full


def _reps(quick: bool, full: int = 10) -> int:
    return 1 if quick else full


def base(
    name: str,
    quick: bool,
    flows: list[dict[str, Any]],
    *,
    rtt: str = "20ms",
    bdp_rtt: str | None = "20ms",
    rate: str = "1Gbps",
    buffer: str = "1BDP",
    loss: str | None = None,
    duration: str | None = None,
    qdisc: str = "taildrop",
) -> dict[str, Any]:
    path: dict[str, Any] = {"rtt": rtt, "rtt_split": 1.0}
    if loss:
        path["loss"] = loss
    for f in flows:
        f.setdefault("rwnd", RWND)
        f.setdefault("pacing", "fq")
    return scenario(
        f"bbrv2-eval-{name}",
        duration=duration or _d(quick),
        rate=rate,
        buffer=buffer,
        bdp_rtt=bdp_rtt,
        burst="500KB",
        qdisc=qdisc,
        flows=flows,
        path=path,
        description="BBRv2 alpha evaluation: 1 Gbit/s TBF bottleneck, 500 kB bucket",
    )


def _needs(*extra: str) -> list[str]:
    return ["cc:cubic", "cc:bbr1", "cc:bbr2", *extra]


# fig4-7: 100 flows, CCA x buffer ------

BUF_4 = [0.01, 0.1, 1, 10, 100]


def build_many(quick: bool, loss: bool) -> dict[str, Any]:
    doc = base(
        "fig6-7" if loss else "fig4-5", quick, [{"cc": "cubic", "count": 100}], loss="1%" if loss else None
    )
    return with_sweep(
        doc,
        _reps(quick),
        axes={"flows.0.cc": CCAS, "bottleneck.buffer": bdp([0.1, 1, 10] if quick else BUF_4)},
    )


def figure_throughput_cdf(exp: Any, out: Path, quick: bool) -> list:
    drawn = cdf(
        exp,
        out,
        exp.flows,
        "goodput_mbps",
        hue="flows.0.cc",
        panel="bottleneck.buffer",
        title="per-flow throughput",
    )
    drawn += mean(
        exp, out, exp.runs, "jain", x="bottleneck.buffer", hue="flows.0.cc", name="jain", title="Jain's index"
    )
    return drawn


def figure_util_cdf(exp: Any, out: Path, quick: bool) -> list:
    return cdf(
        exp,
        out,
        exp.runs,
        "utilization",
        hue="flows.0.cc",
        panel="bottleneck.buffer",
        title="link utilization",
    )


register(
    "bbrv2-eval/fig4",
    "100 flows of one CCA: CDF of per-flow throughput; Jain",
    _needs(),
    lambda q: build_many(q, False),
    figure_throughput_cdf,
)
register(
    "bbrv2-eval/fig5",
    "100 flows of one CCA: CDF of link utilization",
    _needs(),
    lambda q: build_many(q, False),
    figure_util_cdf,
)
register(
    "bbrv2-eval/fig6",
    "as fig4 with 1% random loss",
    _needs("loss"),
    lambda q: build_many(q, True),
    figure_throughput_cdf,
)
register(
    "bbrv2-eval/fig7",
    "as fig5 with 1% random loss",
    _needs("loss"),
    lambda q: build_many(q, True),
    figure_util_cdf,
)

# fig8: retransmissions vs N ------


def build_fig8(quick: bool) -> dict[str, Any]:
    doc = base("fig8", quick, [{"cc": "cubic", "count": 1}], rtt="100ms", bdp_rtt=None, buffer="0.02BDP")
    n = [1, 10, 50, 100] if quick else [1, *range(10, 101, 10)]
    return with_sweep(doc, _reps(quick), axes={"flows.0.cc": CCAS, "flows.0.count": n})


def figure_fig8(exp: Any, out: Path, quick: bool) -> list:
    return mean(
        exp,
        out,
        exp.runs,
        "retrans_rate",
        x="flows.0.count",
        hue="flows.0.cc",
        title="retransmission rate vs number of flows (0.02 BDP, 100 ms)",
    )


register(
    "bbrv2-eval/fig8",
    "N flows, 0.02 BDP, 100 ms: retransmission rate vs N",
    _needs(),
    build_fig8,
    figure_fig8,
)

# fig9: smoothed RTT vs buffer ------


def build_fig9(quick: bool) -> dict[str, Any]:
    doc = base("fig9", quick, [{"cc": "cubic", "count": 2}], rtt="30ms", bdp_rtt=None)
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "flows.0.count": [2, 25] if quick else [2, 10, 25, 50],
            "flows.0.cc": CCAS,
            "bottleneck.buffer": bdp([1, 10, 100] if quick else [1, 10, 20, 50, 100]),
        },
    )


def figure_fig9(exp: Any, out: Path, quick: bool) -> list:
    return mean(
        exp,
        out,
        exp.runs,
        "mean_rtt_ms",
        x="bottleneck.buffer",
        hue="flows.0.cc",
        panel="flows.0.count",
        title="smoothed RTT",
    )


register(
    "bbrv2-eval/fig9",
    "N flows, 30 ms: smoothed RTT vs buffer, one panel per N",
    _needs(),
    build_fig9,
    figure_fig9,
)

# fig10: one flow, loss sweep ------


def build_fig10(quick: bool) -> dict[str, Any]:
    doc = base("fig10", quick, [{"cc": "cubic"}], rtt="100ms", bdp_rtt=None, loss="0%")
    losses = [0, 0.1, 1, 5] if quick else [0, 0.001, 0.01, 0.1, 1, 2, 5, 10]
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "flows.0.cc": CCAS,
            "path.loss": [f"{v:g}%" for v in losses],
            "bottleneck.buffer": bdp([0.1, 1]),
        },
    )


def figure_fig10(exp: Any, out: Path, quick: bool) -> list:
    drawn = mean(
        exp,
        out,
        exp.flows,
        "goodput_mbps",
        x="path.loss",
        hue="flows.0.cc",
        panel="bottleneck.buffer",
        name="throughput",
        title="throughput vs loss",
    )
    drawn += mean(
        exp,
        out,
        exp.runs,
        "retrans_rate",
        x="path.loss",
        hue="flows.0.cc",
        panel="bottleneck.buffer",
        name="retransmissions",
        title="retransmission rate vs loss",
    )
    return drawn


register(
    "bbrv2-eval/fig10",
    "1 flow, 100 ms: throughput and retransmissions vs loss",
    _needs("loss"),
    build_fig10,
    figure_fig10,
)

# fig11: BBR vs CUBIC ------

BUF_11 = [0.1, 0.5, 1, 2, 4, 10, 50, 100]


def build_fig11(quick: bool) -> dict[str, Any]:
    doc = base("fig11", quick, [{"cc": "bbr1", "count": 1}, {"cc": "cubic", "count": 1}], loss="0%")
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "zip": {
                "flows.0.count": [1, 1, 50, 50],
                "flows.1.count": [1, 1, 50, 50],
                "path.loss": ["0%", "0.01%", "0%", "1%"],
            },
            "flows.0.cc": ["bbr1", "bbr2"],
            "bottleneck.buffer": bdp([0.5, 2, 10] if quick else BUF_11),
        },
    )


def figure_fig11(exp: Any, out: Path, quick: bool) -> list:
    g = per_group(exp)
    g["case"] = [f"{c}x{c}, loss {loss}" for c, loss in zip(g["flows.0.count"], g["path.loss"], strict=True)]
    g["flow class"] = g["cc"]
    drawn = []
    for i, (case, sub) in enumerate(g.groupby("case", sort=False)):
        for bbr, sub2 in sub.groupby("flows.0.cc", sort=False):
            drawn += mean(
                exp,
                out,
                sub2,
                "goodput_mbps",
                x="bottleneck.buffer",
                hue="flow class",
                name=f"throughput-{i}-{bbr}",
                title=f"({case}) {bbr} vs cubic",
                ylabel="goodput of all flows of the CCA (Mbit/s)",
            )
    runs = exp.runs.copy()
    runs["case"] = [
        f"{c}x{c}, loss {loss}" for c, loss in zip(runs["flows.0.count"], runs["path.loss"], strict=True)
    ]
    drawn += mean(
        exp,
        out,
        runs,
        "jain",
        x="bottleneck.buffer",
        hue="flows.0.cc",
        panel="case",
        name="jain",
        title="Jain's index",
    )
    return drawn


register(
    "bbrv2-eval/fig11",
    "BBR (v1, v2) vs CUBIC, 1v1 and 50v50, with and without loss: throughput, Jain",
    _needs("loss"),
    build_fig11,
    figure_fig11,
)

# fig12: m BBRv2 vs n CUBIC ------


def build_fig12(quick: bool) -> dict[str, Any]:
    doc = base("fig12", quick, [{"cc": "bbr2", "count": 1}, {"cc": "cubic", "count": 1}])
    if quick:
        pairs = [(1, 1), (2, 1), (1, 2), (5, 5)]
    else:
        pairs = [(m, n) for m in range(1, 11) for n in range(1, 11)]
    return with_sweep(
        doc,
        _reps(quick),
        axes={"zip": {"flows.0.count": [m for m, _ in pairs], "flows.1.count": [n for _, n in pairs]}},
    )


def figure_fig12(exp: Any, out: Path, quick: bool) -> list:
    g = per_group(exp)
    g["m,n"] = [f"{m},{n}" for m, n in zip(g["flows.0.count"], g["flows.1.count"], strict=True)]
    g["ideal"] = [
        f / (m + n) for f, m, n in zip(g["flows"], g["flows.0.count"], g["flows.1.count"], strict=True)
    ]
    t = g.groupby(["m,n", "cc"], sort=False, as_index=False)[["share", "ideal"]].mean()
    return [
        lines(
            out,
            t,
            x="m,n",
            y="share",
            hue="cc",
            ideal="ideal",
            xlabel="m BBRv2, n CUBIC flows",
            ylabel="share of the bandwidth (%; bars: ideal m/(m+n))",
            title="m BBRv2 vs n CUBIC, 1 BDP: measured vs ideal share",
        )
    ]


register(
    "bbrv2-eval/fig12",
    "m BBRv2 vs n CUBIC at 1 BDP: measured vs ideal share",
    _needs(),
    build_fig12,
    figure_fig12,
)

# fig13: heatmaps ------


def build_fig13(quick: bool) -> dict[str, Any]:
    doc = base(
        "fig13",
        quick,
        [{"cc": "cubic"}, {"cc": "bbr2"}],
        bdp_rtt=None,
        loss="0%",
        duration=_d(quick, "300s", "10s"),
    )
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "bottleneck.rate": mbps([20, 100, 500] if quick else [20, 50, 100, 250, 500, 1000]),
            "path.rtt": ms([10, 50] if quick else [10, 20, 50, 100, 200]),
            "bottleneck.buffer": bdp([1] if quick else [0.1, 1, 10]),
            "path.loss": ["0%"] if quick else ["0%", "0.01%"],
        },
    )


def figure_fig13(exp: Any, out: Path, quick: bool) -> list:
    runs = per_cc_runs(exp)
    runs["buffer, loss"] = [
        f"{b}, {loss}" for b, loss in zip(runs["bottleneck.buffer"], runs["path.loss"], strict=True)
    ]
    annotate = [c for c in ("utilization", "share_cubic", "share_bbr2") if c in runs]
    return heatmap(
        exp,
        out,
        runs,
        x="bottleneck.rate",
        y="path.rtt",
        value="jain",
        annotate=annotate,
        facet="buffer, loss",
        title="1 CUBIC vs 1 BBRv2: Jain's index (colour), utilization, shares",
    )


register(
    "bbrv2-eval/fig13",
    "1 CUBIC vs 1 BBRv2 over rate x delay x buffer x loss: heatmaps",
    _needs("loss"),
    build_fig13,
    figure_fig13,
)

# fig14-15: RTT unfairness with AQM ------


def build_fig14(quick: bool) -> dict[str, Any]:
    doc = base("fig14-15", quick, [{"cc": "bbr1", "rtt": "10ms"}, {"cc": "bbr1", "rtt": "50ms"}])
    bufs = [0.1, 1, 10] if quick else [0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 20, 50, 100]
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "zip": {"flows.0.cc": ["bbr1", "bbr2"], "flows.1.cc": ["bbr1", "bbr2"]},
            "bottleneck.qdisc": ["taildrop", "fq_codel"],
            "bottleneck.buffer": bdp(bufs),
        },
    )


def figure_fig14(exp: Any, out: Path, quick: bool) -> list:
    f = exp.flows.copy()
    f["flow class"] = [f"{cc} {r:g} ms" for cc, r in zip(f["cc"], f["rtt_ms"], strict=True)]
    drawn = []
    for i, (q, sub) in enumerate(f.groupby("bottleneck.qdisc", sort=False)):
        drawn += mean(
            exp,
            out,
            sub,
            "goodput_mbps",
            x="bottleneck.buffer",
            hue="flow class",
            name=f"throughput-{i}",
            title=f"per-flow throughput, {q}",
        )
    runs = exp.runs.copy()
    runs["CCA, AQM"] = [
        f"{c}, {q}" for c, q in zip(runs["flows.0.cc"], runs["bottleneck.qdisc"], strict=True)
    ]
    drawn += mean(
        exp, out, runs, "jain", x="bottleneck.buffer", hue="CCA, AQM", name="jain", title="Jain's index"
    )
    return drawn


def figure_fig15(exp: Any, out: Path, quick: bool) -> list:
    runs = exp.runs.copy()
    runs["CCA, AQM"] = [
        f"{c}, {q}" for c, q in zip(runs["flows.0.cc"], runs["bottleneck.qdisc"], strict=True)
    ]
    return mean(
        exp,
        out,
        runs,
        "retrans_rate",
        x="bottleneck.buffer",
        hue="CCA, AQM",
        title="retransmission rate of the two flows",
    )


register(
    "bbrv2-eval/fig14",
    "10 ms vs 50 ms of one CCA, tail drop vs FQ-CoDel: throughput and Jain",
    _needs("qdisc:fq_codel"),
    build_fig14,
    figure_fig14,
)
register(
    "bbrv2-eval/fig15",
    "as fig14: mean retransmission rate vs buffer",
    _needs("qdisc:fq_codel"),
    build_fig14,
    figure_fig15,
)

# fig16: FCT of 100 flows of 10 GB ------


def build_fig16(quick: bool) -> dict[str, Any]:
    size = "50MB" if quick else "10GB"
    doc = base(
        "fig16",
        quick,
        [{"cc": "cubic", "count": 100, "size": size}],
        loss="0%",
        duration=_d(quick, "12000s", "120s"),
    )
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "flows.0.cc": CCAS,
            "bottleneck.buffer": bdp([0.1, 1, 10] if quick else [0.1, 0.2, 0.5, 1, 2, 5, 10]),
            "path.loss": ["0%"] if quick else ["0%", "0.01%"],
        },
    )


def figure_fig16(exp: Any, out: Path, quick: bool) -> list:
    return mean(
        exp,
        out,
        run_means(exp, exp.flows, "fct_s"),
        "fct_s",
        x="bottleneck.buffer",
        hue="flows.0.cc",
        panel="path.loss",
        title="flow completion time",
    )


register(
    "bbrv2-eval/fig16",
    "100 flows of 10 GB: FCT vs buffer",
    _needs("loss"),
    build_fig16,
    figure_fig16,
    notes="The quick form sends 50 MB per flow.",
)

# fig17-20: FCT CDFs of 50 + 50 flows of 100 MB ------


def build_mixed_fct(quick: bool, bbr: str, loss: bool) -> dict[str, Any]:
    size = "20MB" if quick else "100MB"
    name = {
        ("bbr2", False): "fig17",
        ("bbr1", False): "fig18",
        ("bbr2", True): "fig19",
        ("bbr1", True): "fig20",
    }[(bbr, loss)]
    doc = base(
        name,
        quick,
        [{"cc": "cubic", "count": 50, "size": size}, {"cc": bbr, "count": 50, "size": size}],
        loss="1%" if loss else None,
        duration=_d(quick, "600s", "60s"),
    )
    return with_sweep(
        doc, _reps(quick), axes={"bottleneck.buffer": bdp([0.1, 1, 10] if quick else [0.1, 0.5, 1, 10, 100])}
    )


def figure_fct_cdf(exp: Any, out: Path, quick: bool) -> list:
    return cdf(exp, out, exp.flows, "fct_s", hue="cc", panel="bottleneck.buffer", title="FCT per CCA")


for _bbr, _loss, _id in (
    ("bbr2", False, "fig17"),
    ("bbr1", False, "fig18"),
    ("bbr2", True, "fig19"),
    ("bbr1", True, "fig20"),
):
    register(
        f"bbrv2-eval/{_id}",
        f"50 CUBIC + 50 {'BBRv2' if _bbr == 'bbr2' else 'BBRv1'} flows of 100 MB"
        f"{', 1% loss' if _loss else ''}: CDF of FCT per CCA",
        ["cc:cubic", f"cc:{_bbr}", *(["loss"] if _loss else [])],
        lambda q, b=_bbr, lo=_loss: build_mixed_fct(q, b, lo),
        figure_fct_cdf,
        notes="The quick form sends 20 MB per flow.",
    )

# fig21: AQMs ------

AQMS: dict[str, dict[str, Any]] = {
    "taildrop": {"qdisc": "taildrop"},
    "cake": {"qdisc": "cake"},
    "fq_codel": {"qdisc": "fq_codel"},
    "fq_codel+ecn": {"qdisc": "fq_codel", "ecn": True, "fq_codel": {"ce_threshold": "242us"}},
}


def build_fig21(quick: bool) -> dict[str, Any]:
    doc = base("fig21", quick, [{"cc": "bbr2", "count": 1, "ecn": True}, {"cc": "cubic", "count": 1}])
    pairs = [(1, 1), (10, 10)] if quick else [(1, 1), (1, 10), (10, 10), (50, 50)]
    bufs = [0.5, 2, 10] if quick else [0.1, 0.5, 1, 2, 5, 10, 100]
    tables = []
    for spec in AQMS.values():
        t = {"rate": "1Gbps", "bdp_rtt": "20ms", "burst": "500KB", **spec}
        tables.append(t)
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "zip": {"flows.0.count": [m for m, _ in pairs], "flows.1.count": [n for _, n in pairs]},
            "bottleneck": tables,
            "bottleneck.buffer": bdp(bufs),
        },
    )


def _aqm_name(table: Any) -> str:
    """The AQMS name of a swept bottleneck table (a dict, or its JSON as recorded)."""
    import json

    t = json.loads(table) if isinstance(table, str) else dict(table)
    for name, spec in AQMS.items():
        if all(t.get(k) == v for k, v in spec.items()) and bool(t.get("ecn")) == bool(spec.get("ecn")):
            return name
    return str(t.get("qdisc", table))


def figure_fig21(exp: Any, out: Path, quick: bool) -> list:
    runs = exp.runs.copy()
    runs["AQM"] = [_aqm_name(v) for v in runs["bottleneck"]]
    runs["m vs n"] = [
        f"{m} BBRv2 vs {n} CUBIC" for m, n in zip(runs["flows.0.count"], runs["flows.1.count"], strict=True)
    ]
    return mean(
        exp, out, runs, "jain", x="bottleneck.buffer", hue="AQM", panel="m vs n", title="Jain's index"
    )


register(
    "bbrv2-eval/fig21",
    "m BBRv2 vs n CUBIC under tail drop, CAKE, FQ-CoDel (+ECN): Jain vs buffer",
    _needs("qdisc:cake", "qdisc:fq_codel"),
    build_fig21,
    figure_fig21,
)

# fig22: CUBIC with fq maxrate ------


def build_fig22(quick: bool) -> dict[str, Any]:
    doc = base("fig22", quick, [{"cc": "cubic", "count": 100}], loss="0%")
    # The paper's other arm is CUBIC "without enabling TCP pacing" (Sec. 5.9;
    # its scripts remove the hosts' qdisc): pacing "internal", which leaves
    # CUBIC unpaced. It was {"mode": "fq"}, which paces CUBIC at 1.2 cwnd/srtt.
    return with_sweep(
        doc,
        _reps(quick),
        axes={
            "flows.0.pacing": [{"mode": "internal"}, {"mode": "fq", "max_rate": "8.5Mbps"}],
            "path.loss": ["0%"] if quick else ["0%", "1%"],
            "bottleneck.buffer": bdp([0.1, 1, 10] if quick else [0.1, 0.5, 1, 2, 5, 10, 20]),
        },
    )


def figure_fig22(exp: Any, out: Path, quick: bool) -> list:
    runs = exp.runs.copy()
    runs["pacing"] = [
        "fq, 8.5 Mbit/s maxrate" if "max_rate" in str(p) else "not paced" for p in runs["flows.0.pacing"]
    ]
    runs["aggregate_mbps"] = runs["utilization"] * runs["rate_mbps"]
    drawn = []
    for metric, name, title in (
        ("aggregate_mbps", "throughput", "aggregate throughput of 100 CUBIC flows"),
        ("jain", "jain", "Jain's index of 100 CUBIC flows"),
        ("mean_rtt_ms", "rtt", "mean RTT"),
    ):
        drawn += mean(
            exp,
            out,
            runs,
            metric,
            x="bottleneck.buffer",
            hue="pacing",
            panel="path.loss",
            name=name,
            title=title,
            ylabel="aggregate goodput (Mbit/s)" if metric == "aggregate_mbps" else None,
        )
    return drawn


register(
    "bbrv2-eval/fig22",
    "100 CUBIC flows with and without 8.5 Mbit/s fq maxrate: throughput, Jain, RTT",
    ["cc:cubic", "loss", "pacing_max_rate"],
    build_fig22,
    figure_fig22,
)
