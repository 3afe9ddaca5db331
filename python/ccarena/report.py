"""A static HTML report of a run or an experiment: one ``index.html`` with the
scenario, the summary tables, the expectations and the figures, the images
beside it. No scripts, fonts or styles from elsewhere: the directory opens
offline and can be copied anywhere."""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .plots import PlotError, make_figure
from .plots.drawn import Drawn
from .store import write_dir
from .version import __version__

__all__ = ["to_toml", "write_report"]

_MAX_ROWS = 200

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #c62828; font-weight: bold; }
.meta { color: #555; font-size: 0.9em; }
"""


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if v is None:
        return '""'
    return json.dumps(str(v))


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def to_toml(doc: dict[str, Any], prefix: str = "") -> str:
    """A scenario document as TOML (tables, arrays of tables, inline values)."""
    lines: list[str] = []
    tables: list[tuple[str, dict]] = []
    arrays: list[tuple[str, list]] = []
    for k, v in doc.items():
        if isinstance(v, dict) and v and not prefix.startswith("flows"):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, t in tables:
        name = f"{prefix}.{_toml_key(k)}" if prefix else _toml_key(k)
        lines += ["", f"[{name}]", to_toml(t, name).rstrip("\n")]
    for k, arr in arrays:
        name = f"{prefix}.{_toml_key(k)}" if prefix else _toml_key(k)
        for t in arr:
            inner = "\n".join(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in t.items())
            lines += ["", f"[[{name}]]", inner]
    return "\n".join(line for line in lines if line is not None).strip("\n") + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "—"
        return f"{v:.4g}"
    s = str(v)
    # a swept table (a workload's whole flow list) shown by its start
    return s if len(s) <= _BULKY_CHARS else f"{s[:80]}… ({len(s)} characters)"


def _table(frame: pd.DataFrame, limit: int = _MAX_ROWS) -> str:
    cols = list(frame.columns)
    out = ['<div class="scroll"><table><thead><tr>']
    for c in cols:
        left = not pd.api.types.is_numeric_dtype(frame[c])
        out.append(f'<th class="{"l" if left else ""}">{html.escape(str(c))}</th>')
    out.append("</tr></thead><tbody>")
    for _, r in frame.head(limit).iterrows():
        out.append("<tr>")
        for c in cols:
            left = not pd.api.types.is_numeric_dtype(frame[c])
            out.append(f'<td class="{"l" if left else ""}">{html.escape(_fmt(r[c]))}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if len(frame) > limit:
        out.append(f'<p class="meta">… {len(frame) - limit} more rows (see the Parquet files)</p>')
    return "".join(out)


def _expectations_html(outcomes: Sequence[Any]) -> str:
    rows = []
    for o in outcomes:
        n = len(o.checks)
        ok = o.passed
        shown = o.failures[0] if o.failures else o.worst()
        actual = _fmt(shown[1].actual) if shown and shown[1].actual is not None else "—"
        at = (shown[0] + (f" ({shown[1].detail})" if shown[1].detail else "")) if shown else "no run selected"
        rows.append(
            f'<tr><td class="l {"pass" if ok else "fail"}">{"PASS" if ok else "FAIL"}</td>'
            f'<td class="l">{html.escape(o.expectation.describe())}</td>'
            f"<td>{n - len(o.failures)}/{n}</td><td>{html.escape(actual)}</td>"
            f'<td class="l">{html.escape(at)}</td></tr>'
        )
    head = (
        '<table><thead><tr><th class="l"></th><th class="l">expectation</th><th>runs passed</th>'
        '<th>worst</th><th class="l">at</th></tr></thead><tbody>'
    )
    return head + "".join(rows) + "</tbody></table>"


_BULKY_CHARS = 200
_MAX_TIMESERIES_FLOWS = 200


def _default_figures(exp: Any, out: Path) -> list[tuple[Path, str]]:
    """The figures a report draws by itself."""
    figs: list[tuple[Path, str]] = []

    def add(caption: str, kind: str, **kw: Any) -> None:
        name = kw.pop("name")
        try:
            p = make_figure(exp, kind, out=out / f"{name}.png", **kw)
        except PlotError:
            return
        figs.append((p, caption))

    single = bool(exp.meta.get("single_run")) or len(exp.runs) == 1
    # a swept key whose values are whole tables (e.g. a trace workload's flow
    # list) is no axis to plot against, and a run of hundreds of flows no
    # per-flow time series to read
    bulky = any(exp.runs[k].astype(str).str.len().max() > _BULKY_CHARS for k in exp.keys if k in exp.runs)
    if len(exp.flows) <= _MAX_TIMESERIES_FLOWS * max(1, len(exp.runs)):
        add(
            "Goodput and cwnd of each flow and the queueing delay over time (first run)",
            "timeseries",
            name="timeseries",
        )
    if not single and exp.keys and not bulky:
        add(
            "Jain's fairness index: mean and 95% confidence interval over repeats",
            "mean",
            metric="jain",
            name="mean-jain",
        )
        add(
            "Link utilization: mean and 95% confidence interval over repeats",
            "mean",
            metric="utilization",
            name="mean-utilization",
        )
        add("Distribution of Jain's index across repeats", "box", metric="jain", name="box-jain")
        numeric_keys = [k for k in exp.keys if k in exp.runs]
        if len(numeric_keys) >= 2:
            add(
                "Jain's index per pair of swept values (cells: utilization and each CCA's share)",
                "heatmap",
                metric="jain",
                name="heatmap-jain",
            )
    add("CDF of per-flow goodput", "cdf", metric="goodput_mbps", name="cdf-goodput")
    add("CDF of the queueing delay (per sample interval)", "cdf", metric="sojourn_mean_ms", name="cdf-qdelay")
    return figs


def write_report(
    exp: Any,
    out: str | Path | None = None,
    *,
    figures: Iterable[Drawn | Path | tuple[Path, str]] = (),
    title: str | None = None,
    intro: str = "",
    outcomes: Sequence[Any] | None = None,
    default_figures: bool = True,
) -> Path:
    """Write ``index.html`` for an ``Experiment`` (or a run seen as one, see
    ``Experiment.from_run``) into ``out`` (default: ``<dir>/report/``) and
    return its path. ``figures`` are added first (copied beside the page,
    with their SVG and CSV when present); the default figures follow.
    ``outcomes`` of expectations are checked here when not given. The
    report directory is written whole and appears only complete; an
    earlier report there is replaced, a folder holding other files is
    refused (``store.write_dir``)."""
    single = bool(exp.meta.get("single_run"))
    home = exp.run_dir(0) if single else exp.path
    target = Path(out) if out is not None else home / "report"

    def fill(tmp: Path) -> None:
        _write_page(exp, tmp, home, single, figures, title or exp.name, intro, outcomes, default_figures)

    write_dir(target, fill, f"ccarena {__version__} report")
    return target / "index.html"


def _write_page(
    exp: Any,
    out: Path,
    home: Path,
    single: bool,
    figures: Iterable[Drawn | Path | tuple[Path, str]],
    title: str,
    intro: str,
    outcomes: Sequence[Any] | None,
    default_figures: bool,
) -> None:
    """The report's page and images, written into ``out``."""
    from .expect import check_experiment, parse_expectations

    items: list[tuple[Path, str]] = []
    for f in figures:
        if isinstance(f, Drawn):
            items.append((f.png, ""))
        elif isinstance(f, tuple):
            items.append((Path(f[0]), f[1]))
        else:
            items.append((Path(f), ""))
    placed: list[tuple[str, str, list[str]]] = []
    for png, caption in items:
        links = []
        for suffix in (".png", ".svg", ".csv"):
            src = png.with_suffix(suffix)
            if src.is_file():
                dst = out / src.name
                if src.resolve() != dst.resolve():
                    shutil.copyfile(src, dst)
                links.append(dst.name)
        if links:
            placed.append((png.name, caption or png.stem.replace("-", " "), links))
    if default_figures:
        for png, caption in _default_figures(exp, out):
            links = [p.name for p in (png, png.with_suffix(".svg"), png.with_suffix(".csv")) if p.is_file()]
            placed.append((png.name, caption, links))

    if outcomes is None:
        doc = exp.scenario if not single else {}
        outcomes = check_experiment(parse_expectations(doc.get("expect"), exp.name), exp) if doc else []

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    where = "run" if single else f"experiment of {len(exp.runs)} runs"
    parts.append(
        f'<p class="meta">ccarena {html.escape(__version__)} · {where} · {html.escape(str(home))}</p>'
    )
    if intro:
        parts.append(f"<p>{html.escape(intro)}</p>")
    if outcomes:
        parts += ["<h2>Expectations</h2>", _expectations_html(outcomes)]
    if single:
        res = exp.results(0)
        parts += ["<h2>Summary</h2>", _table(res.summary)]
        cols = [
            c
            for c in (
                "flow",
                "group",
                "cc",
                "rtt_ms",
                "start_s",
                "goodput_mbps",
                "retrans_rate",
                "srtt_mean_ms",
                "fct_s",
                "drops",
                "route",
            )
            if c in res.flows and not (c == "route" and len(res.links) < 2)
        ]
        parts += ["<h2>Flows</h2>", _table(res.flows[cols])]
        if len(res.links) > 1:  # a network: each link's utilization, delay, drops
            parts += ["<h2>Links</h2>", _table(res.links)]
    else:
        cols = [c for c in exp.runs.columns if c not in ("hash",)]
        parts += [f"<h2>Runs ({len(exp.runs)})</h2>", _table(exp.runs[cols])]
    parts.append("<h2>Figures</h2>")
    for name, caption, links in placed:
        alt = html.escape(caption)
        more = " · ".join(
            f'<a href="{html.escape(n)}">{html.escape(n.rsplit(".", 1)[1].upper())}</a>' for n in links
        )
        parts.append(
            f'<figure><img src="{html.escape(name)}" alt="{alt}">'
            f"<figcaption>{alt} ({more})</figcaption></figure>"
        )
    if not placed:
        parts.append('<p class="meta">no figures</p>')
    parts.append("<h2>Scenario</h2>")
    if single:
        scenario = exp.results(0).scenario
        parts.append(f"<pre>{html.escape(json.dumps(scenario, indent=2))}</pre>")
    else:
        parts.append(f"<pre>{html.escape(to_toml(exp.scenario))}</pre>")
    parts.append("</body></html>")
    (out / "index.html").write_text("\n".join(parts) + "\n", encoding="utf-8")
