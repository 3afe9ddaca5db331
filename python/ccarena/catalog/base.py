"""The pieces every catalog module uses: the registry of experiment ids,
scenario builders, and figure helpers that draw and write the plotted
numbers as CSV."""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..stats import jain

if TYPE_CHECKING:
    import pandas as pd

    from .. import plots
    from ..plots import common
    from ..plots.drawn import Drawn
else:
    # The figures' modules (matplotlib, pandas) load when a figure is drawn:
    # registering the catalog's ids (``ccarena list``) needs none of them.
    pd = lazy("pandas")
    plots = lazy("ccarena.plots")
    common = lazy("ccarena.plots.common")

__all__ = ["REGISTRY", "Entry", "register"]

Build = Callable[..., dict[str, Any]]
Figure = Callable[..., "list[Drawn]"]


@dataclass(frozen=True)
class Entry:
    """One experiment of experiments.md.

    ``build(quick)`` returns the scenario document with its ``[sweep]`` (the
    paper's points, durations and repeats; ``quick``: shorter runs, fewer
    points and repeats). ``figure(experiment, directory, quick)`` draws the
    paper's figure there and writes the plotted numbers as CSV. ``needs``: the
    capabilities it uses (see capabilities.py). ``options``: the names of
    ``ccarena reproduce`` options (e.g. ``trace``, from ``--trace PCAP``)
    that ``build`` and ``figure`` take as keyword arguments (None when not
    given)."""

    id: str
    title: str
    needs: frozenset[str]
    build: Build
    figure: Figure
    notes: str = ""
    sweep_name: str = field(default="")
    options: frozenset[str] = field(default=frozenset())

    @property
    def paper(self) -> str:
        return self.id.split("/")[0]

    @property
    def findings(self) -> list[Any]:
        """The paper's findings for this id, as the paper states them
        (``catalog.findings``)."""
        from .findings import of_id

        return of_id(self.id)


REGISTRY: dict[str, Entry] = {}


def register(
    id: str,
    title: str,
    needs: Sequence[str],
    build: Build,
    figure: Figure,
    notes: str = "",
    options: Sequence[str] = (),
) -> Entry:
    if id in REGISTRY:
        raise ValueError(f"catalog id {id} registered twice")
    e = Entry(id, title, frozenset(needs), build, figure, notes, options=frozenset(options))
    REGISTRY[id] = e
    return e


def when_json(value: Any) -> str:
    """A swept table as the run table stores it (compact JSON, sorted keys),
    for a ``when`` selector on a key whose values are tables."""
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------- scenarios


def scenario(
    name: str,
    *,
    duration: str,
    rate: str,
    buffer: str,
    flows: list[dict[str, Any]],
    rtt: str | None = None,
    seed: int = 1,
    bdp_rtt: str | None = None,
    burst: str | None = None,
    qdisc: str = "taildrop",
    path: dict[str, Any] | None = None,
    sample: str = "100ms",
    description: str = "",
) -> dict[str, Any]:
    """A scenario document in the core's format."""
    bottleneck: dict[str, Any] = {"rate": rate, "buffer": buffer, "qdisc": qdisc}
    if bdp_rtt:
        bottleneck["bdp_rtt"] = bdp_rtt
    if burst:
        bottleneck["burst"] = burst
    doc: dict[str, Any] = {
        "name": name,
        "description": description,
        "duration": duration,
        "seed": seed,
        "bottleneck": bottleneck,
        "flows": copy.deepcopy(flows),
        "sample": {"interval": sample},
    }
    p = dict(path or {})
    if rtt:
        p.setdefault("rtt", rtt)
    if p:
        doc["path"] = p
    return doc


def with_sweep(doc: dict[str, Any], repeats: int = 1, zip_: Any = None, **axes: Any) -> dict[str, Any]:
    """``doc`` with a ``[sweep]``: ``axes`` use ``__`` for dots
    (``bottleneck__buffer=[...]``) or pass a dict via ``axes={...}``."""
    sweep: dict[str, Any] = {}
    for k, v in axes.pop("axes", {}).items():
        sweep[k] = v
    for k, v in axes.items():
        sweep[k.replace("__", ".")] = v
    if zip_ is not None:
        sweep["zip"] = zip_
    if repeats > 1:
        sweep["repeats"] = repeats
    out = copy.deepcopy(doc)
    if sweep:
        out["sweep"] = sweep
    return out


def bdp(values: Sequence[float]) -> list[str]:
    return [f"{v:g}BDP" for v in values]


def ms(values: Sequence[float]) -> list[str]:
    return [f"{v:g}ms" for v in values]


def mbps(values: Sequence[float]) -> list[str]:
    return [f"{v:g}Mbps" for v in values]


# --------------------------------------------------------------------------- figures


def flows_with_cols(exp: Any) -> pd.DataFrame:
    return exp.flows


def cdf(
    exp: Any,
    out: Path,
    frame: pd.DataFrame,
    metric: str,
    *,
    hue: str,
    panel: str | None = None,
    title: str = "",
    xlabel: str | None = None,
    log: bool = False,
    ylim: tuple[float, float] | None = None,
) -> list[Drawn]:
    """One CDF figure, or one per value of ``panel``."""
    return _per_panel(
        frame,
        panel,
        title,
        lambda sub, suffix, t: plots.plot_cdf(
            sub, metric, out / f"figure{suffix}.png", hue=hue, title=t, xlabel=xlabel, log=log, ylim=ylim
        ),
    )


def _per_panel(
    frame: pd.DataFrame,
    panel: str | None,
    title: str,
    draw: Callable[[pd.DataFrame, str, str], Drawn],
) -> list[Drawn]:
    """Draw ``frame`` once, or once per value of ``panel`` (files suffixed
    ``-0``, ``-1``, ...; the panel value leads each CSV), writing the CSVs."""
    if panel is None:
        parts = [(frame, "", title, None)]
    else:
        parts = [
            (frame[frame[panel] == v], f"-{i}", f"{title}: {common.axis_label(panel)} = {v}", v)
            for i, v in enumerate(common.sort_values(frame[panel]))
        ]
    drawn = []
    for sub, suffix, t, v in parts:
        d = draw(sub, suffix, t)
        if panel is not None:
            d.data.insert(0, panel, v)
        d.write_csv()
        drawn.append(d)
    return drawn


def mean(
    exp: Any,
    out: Path,
    frame: pd.DataFrame,
    metric: str,
    *,
    x: str,
    hue: str | None,
    panel: str | None = None,
    title: str = "",
    name: str = "figure",
    ylabel: str | None = None,
    scale: float | None = None,
) -> list[Drawn]:
    """Means with 95% CIs against ``x``; one file per ``panel`` value."""
    return _per_panel(
        frame,
        panel,
        title,
        lambda sub, suffix, t: plots.plot_mean(
            sub, metric, out / f"{name}{suffix}.png", x=x, hue=hue, title=t, ylabel=ylabel, scale=scale
        ),
    )


def box(
    exp: Any,
    out: Path,
    frame: pd.DataFrame,
    metric: str,
    *,
    x: str,
    hue: str | None,
    title: str = "",
    name: str = "figure",
    ylabel: str | None = None,
) -> list[Drawn]:
    d = plots.plot_box(frame, metric, out / f"{name}.png", x=x, hue=hue, title=title, ylabel=ylabel)
    d.write_csv()
    return [d]


def heatmap(
    exp: Any,
    out: Path,
    frame: pd.DataFrame,
    *,
    x: str,
    y: str,
    value: str,
    annotate: Sequence[str],
    facet: str | None,
    title: str = "",
) -> list[Drawn]:
    d = plots.plot_heatmap(
        frame, out / "figure.png", x=x, y=y, value=value, annotate=annotate, facet=facet, title=title
    )
    d.write_csv()
    return [d]


def _key_value(key: str, value: Any) -> str:
    """``RTT = 20ms`` for a title; a swept table (JSON) as its leaves,
    ``jitter.model = per_packet, jitter.max = 1ms, rtt = 10ms``."""
    import json

    if isinstance(value, str) and value.startswith("{"):
        try:
            table = json.loads(value)
        except ValueError:
            table = None
        if isinstance(table, dict):
            leaves: list[str] = []

            def walk(prefix: str, v: Any) -> None:
                if isinstance(v, dict):
                    for k2, v2 in v.items():
                        walk(f"{prefix}.{k2}" if prefix else k2, v2)
                else:
                    leaves.append(f"{prefix} = {v}")

            walk("", table)
            return f"{common.axis_label(key)}: " + ", ".join(leaves)
    return f"{common.axis_label(key)} = {value}"


def timeseries(
    exp: Any,
    out: Path,
    *,
    metrics: Sequence[str],
    queue_metric: str | None = "sojourn_mean_ms",
    state_flow: int | None = None,
    xlim: tuple[float, float] | None = None,
    title: str = "",
    rows: Sequence[int] | None = None,
    extra_queue: Callable[[Any, pd.DataFrame], pd.DataFrame] | None = None,
) -> list[Drawn]:
    """Per-run time series panels (the first run of each point, or ``rows``)."""
    drawn = []
    if rows is None:
        rows = [i for i in range(len(exp.runs)) if int(exp.runs["repeat"].iloc[i]) == 0]
    for n, i in enumerate(rows):
        res = exp.results(i)
        label = ", ".join(_key_value(k, exp.runs[k].iloc[i]) for k in exp.keys)
        queue = res.queue if extra_queue is None else extra_queue(res, res.queue)
        d = plots.plot_panels(
            res.samples,
            queue,
            out / f"figure-{n}.png",
            metrics=tuple(metrics),
            queue_metric=queue_metric,
            flows=res.flows,
            transitions=res.transitions,
            state_flow=state_flow,
            xlim=xlim,
            title="\n".join([title, *textwrap.wrap(label, 110)]) if label else title,
        )
        if xlim and "time_s" in d.data:
            d.data = d.data[(d.data["time_s"].isna()) | d.data["time_s"].between(*xlim)]
        d.write_csv()
        drawn.append(d)
    return drawn


def lines(
    out: Path,
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str | None,
    title: str = "",
    name: str = "figure",
    ylabel: str | None = None,
    xlabel: str | None = None,
    logx: bool = False,
    ideal: str | None = None,
    band: tuple[str, str] | None = None,
) -> Drawn:
    """A plain line plot of precomputed values (``ideal``: a dashed reference
    column; ``band``: two columns drawn as a shaded range, e.g. quartiles)."""
    fig, ax = common.new_figure(7.5, 4.8)
    groups = common.sort_values(data[hue]) if hue else [None]
    scale = common.metric_scale(y)
    num = common.numeric(data[x])
    categorical = num is None
    unit = "" if num is None else num[1]
    if categorical and hue is None:
        # categories, one value each (e.g. one bar per flow class): bars, not a line
        ax.bar([str(v) for v in data[x]], data[y] * scale, color="tab:blue", alpha=0.8)
        if ideal:
            ax.scatter([str(v) for v in data[x]], data[ideal] * scale, marker="_", s=400, color="gray")
        groups = []
    for i, g in enumerate(groups):
        sub = data if g is None else data[data[hue] == g]
        sub_num = None if categorical else common.numeric(sub[x])
        xs = [str(v) for v in sub[x]] if sub_num is None else sub_num[0]
        # categories (e.g. "m,n" pairs) are not a continuum: markers, no connecting lines
        style = {"linestyle": "none"} if categorical else {}
        ax.plot(
            xs,
            sub[y] * scale,
            marker="o",
            color=common.cc_color(g, i),
            label=None if g is None else str(g),
            **style,
        )
        if ideal:
            if categorical:
                ax.plot(
                    xs,
                    sub[ideal] * scale,
                    linestyle="none",
                    marker="_",
                    markersize=18,
                    color=common.cc_color(g, i),
                )
            else:
                ax.plot(xs, sub[ideal] * scale, linestyle="--", color=common.cc_color(g, i), alpha=0.5)
        if band:
            lo, hi = (sub[c].to_numpy(dtype=float) * scale for c in band)
            ax.fill_between(xs, lo, hi, color=common.cc_color(g, i), alpha=0.15, linewidth=0)
    if logx or (num is not None and common.wants_log(num[0], unit)):
        ax.set_xscale("log")
        ticks = sorted(set(num[0])) if num is not None else []
        if 0 < len(ticks) <= 12:
            ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
            ax.minorticks_off()
    ax.set_xlabel(xlabel or common.axis_label(x, unit))
    ax.set_ylabel(ylabel or common.metric_label(y))
    ax.grid(True, alpha=0.3)
    if hue:
        ax.legend(title=common.axis_label(hue), fontsize="small")
    if title:
        ax.set_title(title)
    d = plots.Drawn(common.save(fig, out / f"{name}.png"), data)
    d.write_csv()
    return d


def run_means(exp: Any, frame: pd.DataFrame, metric: str, by: Sequence[str] = ()) -> pd.DataFrame:
    """``metric`` of a per-flow frame averaged within each run (and ``by``
    column), so that a mean figure's confidence interval and n are across
    repeats, not across the (correlated) flows of one run. NaN (a flow that
    did not complete) is left out of its run's mean."""
    keys = [*exp.keys, "repeat", "run", *[b for b in by if b not in exp.keys]]
    return frame.groupby(keys, sort=False, as_index=False, dropna=False)[metric].mean()


def per_cc_runs(exp: Any) -> pd.DataFrame:
    """Runs with ``share_<cc>`` and ``goodput_<cc>_mbps`` columns."""
    return plots.runs_with_shares(exp)


def per_group(exp: Any) -> pd.DataFrame:
    """Per run and flow group: summed goodput, mean retransmission rate, share, Jain within the group."""
    f = exp.flows
    keys = [*exp.keys, "repeat", "run"]
    rows = []
    for key_vals, sub in f.groupby([*keys, "group"], sort=False, dropna=False):
        total = f[(f["run"] == sub["run"].iloc[0]) & (f["repeat"] == sub["repeat"].iloc[0])][
            "goodput_mbps"
        ].sum()
        row = dict(zip([*keys, "group"], key_vals, strict=True))
        row.update(
            cc=sub["cc"].iloc[0],
            rtt_ms=float(sub["rtt_ms"].iloc[0]),
            flows=len(sub),
            goodput_mbps=float(sub["goodput_mbps"].sum()),
            goodput_per_flow_mbps=float(sub["goodput_mbps"].mean()),
            retrans_rate=float(sub["segs_retrans"].sum() / max(1, sub["segs_sent"].sum())),
            share=float(sub["goodput_mbps"].sum() / total) if total > 0 else float("nan"),
            jain_in_group=jain(sub["goodput_mbps"]),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def qdelay_rttmin_frame(exp: Any, rtt_key: str | None = None, rtt_ms: float | None = None) -> pd.DataFrame:
    """Queue samples with ``qdelay_rttmin`` = queued bytes / rate / RTTmin."""
    q = exp.queue.copy()
    runs = exp.runs.set_index(["run", "repeat"])
    rates = {k: float(v) for k, v in runs["rate_mbps"].items()}
    out = []
    for (run, rep), sub in q.groupby(["run", "repeat"], sort=False):
        rate = rates[(run, rep)]
        rtt = rtt_ms
        if rtt is None:
            fl = exp.flows
            rtt = float(fl[(fl["run"] == run) & (fl["repeat"] == rep)]["rtt_ms"].min())
        sub = sub.copy()
        sub["qdelay_rttmin"] = sub["backlog_bytes"] * 8.0 / (rate * 1e6) * 1e3 / rtt
        out.append(sub)
    return pd.concat(out, ignore_index=True) if out else q
