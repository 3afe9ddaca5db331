"""One scenario on several backends, side by side: per-flow throughput
share, retransmission rate, mean RTT and queueing delay (mean srtt minus
the flow's base RTT), each with the difference from the first backend, plus
the run summaries; a CSV and a figure.

``ccarena compare SCENARIO --backends sim,linux`` writes the runs where
``ccarena run`` would (``results/<name>/<hash>`` and a new
``<hash>-linux-<UTC time>``) and the comparison into
``results/<name>/<hash>-compare-<UTC time>/``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from rich.markup import escape
from rich.table import Table

from .backends import backend
from .results import Results
from .scenario import Scenario
from .store import default_run_dir
from .termtable import Fitted

__all__ = ["Comparison", "compare", "flow_metrics", "summary_metrics"]

FLOW_METRICS = [
    ("share", "throughput share", "{:.1%}"),
    ("goodput_mbps", "goodput Mbit/s", "{:.2f}"),
    ("retrans_rate", "retrans", "{:.2%}"),
    ("srtt_mean_ms", "mean RTT ms", "{:.2f}"),
    ("qdelay_ms", "queueing ms", "{:.2f}"),
]
SUMMARY_METRICS = [
    ("utilization", "utilization", "{:.1%}"),
    ("jain", "Jain index", "{:.3f}"),
    ("retrans_rate", "retransmission rate", "{:.2%}"),
    ("mean_rtt_ms", "mean RTT ms", "{:.2f}"),
    ("qdelay_mean_ms", "queueing delay mean ms", "{:.2f}"),
    ("qdelay_p95_ms", "queueing delay p95 ms", "{:.2f}"),
    ("drops", "drops", "{:.0f}"),
]


def flow_metrics(res: Results) -> pd.DataFrame:
    """Per flow: cc, base RTT, share of the total goodput, goodput,
    retransmission rate, mean srtt and queueing delay (mean srtt - base RTT)."""
    f = res.flows
    total = f["goodput_mbps"].sum()
    return pd.DataFrame(
        {
            "flow": f["flow"].astype(int),
            "cc": f["cc"],
            "rtt_ms": f["rtt_ms"],
            "share": f["goodput_mbps"] / total if total > 0 else math.nan,
            "goodput_mbps": f["goodput_mbps"],
            "retrans_rate": f["retrans_rate"].astype(float),
            "srtt_mean_ms": f["srtt_mean_ms"],
            "qdelay_ms": f["srtt_mean_ms"] - f["rtt_ms"],
        }
    )


def summary_metrics(res: Results) -> dict[str, float]:
    s = res.summary.iloc[0]
    return {k: float(s.get(k, math.nan)) for k, _, _ in SUMMARY_METRICS}


def _fmt(fmt: str, v: Any) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "—"
    return "—" if math.isnan(x) else fmt.format(x)


def _diff(fmt: str, a: Any, b: Any) -> str:
    try:
        d = float(b) - float(a)
    except (TypeError, ValueError):
        return "—"
    if math.isnan(d):
        return "—"
    s = fmt.format(d)
    return s if s.startswith("-") else "+" + s


@dataclass
class Comparison:
    scenario: Scenario
    backends: list[str]
    results: dict[str, Results]
    flows: pd.DataFrame = field(init=False)
    summary: pd.DataFrame = field(init=False)
    csv_path: Path | None = None
    figure_path: Path | None = None

    def __post_init__(self) -> None:
        parts = []
        for b in self.backends:
            m = flow_metrics(self.results[b]).set_index("flow")
            m = m[[k for k, _, _ in FLOW_METRICS]].add_prefix(f"{b}_")
            parts.append(m)
        base = flow_metrics(self.results[self.backends[0]]).set_index("flow")[["cc", "rtt_ms"]]
        self.flows = pd.concat([base, *parts], axis=1).reset_index()
        first = self.backends[0]
        for b in self.backends[1:]:
            for k, _, _ in FLOW_METRICS:
                self.flows[f"diff_{b}_{k}"] = self.flows[f"{b}_{k}"] - self.flows[f"{first}_{k}"]
        self.summary = pd.DataFrame({b: summary_metrics(self.results[b]) for b in self.backends}).rename_axis(
            "metric"
        )

    def _values(self, fmt: str, value: Any) -> list[str]:
        """One metric's cells: each backend's ``value(backend)``, then each
        other backend's difference from the first."""
        first, others = self.backends[0], self.backends[1:]
        return [_fmt(fmt, value(b)) for b in self.backends] + [
            _diff(fmt, value(first), value(b)) for b in others
        ]

    def _metric_table(self, title: str) -> Table:
        """A table with a metric per row: the metric, each backend, each Δ."""
        t = Table(title=title, title_justify="left")
        t.add_column("metric")
        for b in self.backends:
            t.add_column(b, justify="right")
        for b in self.backends[1:]:
            t.add_column(f"Δ {b}", justify="right", style="cyan")
        return t

    def rich_tables(self) -> list[Any]:
        """The per-flow table (metrics across, or at narrow widths one block
        per flow with metrics down) and the run summaries."""
        title = f"{self.scenario.name}: per flow ({' vs '.join(self.backends)})"
        rows = [r for _, r in self.flows.head(40).iterrows()]
        wide = Table(title=title, title_justify="left")
        wide.add_column("flow", justify="right")
        wide.add_column("cc")
        wide.add_column("rtt ms", justify="right")
        for _, label, _ in FLOW_METRICS:
            for b in self.backends:
                wide.add_column(f"{label}\n{b}", justify="right")
            for b in self.backends[1:]:
                wide.add_column(f"Δ {b}", justify="right", style="cyan")
        for r in rows:
            cells = [str(int(r["flow"])), str(r["cc"]), _fmt("{:g}", r["rtt_ms"])]
            for k, _, fmt in FLOW_METRICS:
                cells += self._values(fmt, lambda b, r=r, k=k: r[f"{b}_{k}"])
            wide.add_row(*cells)

        def by_flow() -> Table:
            n = self._metric_table(title)
            for i, r in enumerate(rows):
                if i:
                    n.add_section()
                n.add_row(f"flow {int(r['flow'])} · {r['cc']} · {_fmt('{:g}', r['rtt_ms'])} ms", style="bold")
                for k, label, fmt in FLOW_METRICS:
                    n.add_row(label, *self._values(fmt, lambda b, r=r, k=k: r[f"{b}_{k}"]))
            return n

        summary = self._metric_table("run summary")
        for k, label, fmt in SUMMARY_METRICS:
            row = self.summary.loc[k]
            summary.add_row(label, *self._values(fmt, lambda b, row=row: row[b]))
        return [Fitted(wide, by_flow), summary]

    def _repr_html_(self) -> str:
        """Jupyter: per-flow metrics of each backend and their differences,
        the run summaries, and the comparison figure."""
        from . import notebook as nb

        facts = [("scenario", self.scenario.name), ("backends", " vs ".join(self.backends))]
        parts = [nb.table(self.flows, "per flow"), nb.table(self.summary.reset_index(), "run summary")]
        if self.figure_path is not None:
            parts.append(nb.img(self.figure_path))
        else:
            parts.append(nb.temporary_png(lambda d: plot_comparison(self, d / "compare.png")))
        return nb.block(f"Comparison {self.scenario.name}", facts, parts)

    def write(self, directory: Path, figure: bool = True) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.csv_path = directory / "compare_flows.csv"
        self.flows.to_csv(self.csv_path, index=False)
        self.summary.to_csv(directory / "compare_summary.csv")
        if figure:
            self.figure_path = plot_comparison(self, directory / "compare.png")


def plot_comparison(comp: Comparison, path: Path) -> Path:
    """Goodput per flow over time, one panel per backend, the queueing
    delay below, and the throughput shares as bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    nb = len(comp.backends)
    fig = Figure(figsize=(11, 3.0 * (nb + 1)), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nb + 1, 2, gridspec_kw={"width_ratios": [3, 1]}, squeeze=False)
    ymax = 0.0
    for row, b in enumerate(comp.backends):
        res = comp.results[b]
        ax = axes[row][0]
        for flow, g in res.samples.groupby("flow"):
            ax.plot(g["time_s"], g["goodput_mbps"], lw=1, label=f"flow {flow}")
            ymax = max(ymax, float(g["goodput_mbps"].max()))
        ax.set_title(f"{b}: goodput per flow", loc="left", fontsize=10)
        ax.set_ylabel("Mbit/s")
        if res.samples["flow"].nunique() <= 10:
            ax.legend(fontsize=7, loc="upper right")
        axes[row][1].axis("off")
    for row in range(nb):
        axes[row][0].set_ylim(0, ymax * 1.1 if ymax > 0 else 1)
    ax = axes[nb][0]
    for b in comp.backends:
        q = comp.results[b].queue
        ax.plot(q["time_s"], q["sojourn_mean_ms"], lw=1, label=b)
    ax.set_title("queueing delay (mean sojourn per interval)", loc="left", fontsize=10)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)
    bx = axes[nb][1]
    width = 0.8 / nb
    flows = comp.flows["flow"].tolist()
    for k, b in enumerate(comp.backends):
        bx.bar([f + k * width for f in flows], comp.flows[f"{b}_share"], width=width, label=b)
    bx.set_title("throughput share", loc="left", fontsize=10)
    bx.set_xlabel("flow")
    bx.legend(fontsize=8)
    fig.suptitle(f"{comp.scenario.name}: {' vs '.join(comp.backends)}")
    fig.savefig(path, dpi=110)
    return path


def compare(
    scn: Scenario,
    backends: Sequence[str] = ("sim", "linux"),
    *,
    root: str | Path = "results",
    figure: bool = True,
    console: Any = None,
) -> Comparison:
    """Run ``scn`` on each backend, write each run and the comparison (in
    ``<root>/<name>/<hash>-compare-<UTC time>``, named after the kernel run
    it compares, which is new each time: no comparison replaces another)."""
    chosen = [backend(b) for b in backends]
    for each in chosen:
        # Before the simulator's run: a machine that cannot run the
        # kernel's side says so before anything is written.
        each.preflight()
    results: dict[str, Results] = {}
    for each in chosen:
        if console is None:
            results[each.name] = each.run(scn, root=root, figure=figure)
            continue
        with console.status(escape(f"{scn.name}: running on {each.name} …")) as st:

            def show(m: str, st: Any = st, name: str = each.name) -> None:
                st.update(escape(f"{scn.name} {name}: {m}"))

            results[each.name] = each.run(scn, root=root, figure=figure, progress=show)
    comp = Comparison(scn, list(backends), results)
    linux = results.get("linux")
    if linux is not None and linux.path is not None:
        where = linux.path.with_name(linux.path.name.replace("-linux-", "-compare-", 1))
    else:
        where = default_run_dir(scn.name, scn.short_hash + "-compare", root)
    comp.write(where, figure=figure)
    return comp
