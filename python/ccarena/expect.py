"""Expectations: checks on a run's results, written in the scenario (like
transperf's).

```toml
[[expect]]
metric = "jain"          # a column of summary.parquet (scope "run") or flows.parquet ("flow", "group")
op = ">="                # >=  >  <=  <  ==  !=
value = 0.9
# scope = "run"          # "run" (default) | "flow" | "group"
# flow = 0               # scope "flow": only this flow (default: every flow must pass)
# group = 1              # scope "group": only this group (default: every group must pass)
# beside = 0             # scopes "flow"/"group": only the flows that started while flow 0 ran
# when = { "flows.0.cc" = "bbr1" }   # in a sweep: only the points with these swept values
# tolerance = 0.01       # for == and !=: |actual - value| <= tolerance counts as equal
```

Scopes. ``run``: the one row of ``summary.parquet``. ``flow``: each row of
``flows.parquet`` (or the one with ``flow = N``). ``group``: the flows of one
``[[flows]]`` entry taken together (its ``group`` column): goodput, byte,
segment, drop, mark and RTO counts are summed (``goodput_mbps``, ``bytes``,
``bytes_acked``, ``segs_sent``, ``segs_retrans``, ``segs_in_network``,
``segs_received``, ``drops``, ``marks``, ``rto_count``); every other numeric
column is averaged over the group's flows; ``retrans_rate`` is recomputed as
summed ``segs_retrans`` / summed ``segs_sent``. Flow and group scopes also
have ``share``: the flow's (group's) goodput over the sum of all flows'
goodputs, and ``count``: the number of flows. ``beside = N`` keeps only the
flows that started before flow N finished (its start plus its FCT; a bulk
flow runs to the end), and flow N itself: the flows that competed with it,
as a succession of short flows beside one large flow is measured
(`flows_beside`); shares are then of the kept flows' goodputs.

An expectation holds for a run when every selected row satisfies it; in a
sweep it is checked on every run (of the points that ``when`` selects). A NaN
value (e.g. FCT of a bulk flow) fails. ``run``, ``sweep`` and ``reproduce``
print a pass/fail table and exit with status 1 when one fails.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cost import MAX_POINTS
from .keys import ScenarioError, clip
from .schema import numeric_columns
from .sections import Expectation, parse_expectations, parse_sweep
from .sweep import iter_points, matches

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Check",
    "Expectation",
    "Outcome",
    "check_all",
    "check_expectations",
    "check_experiment",
    "flow_shape",
    "flows_beside",
    "group_table",
    "metrics",
    "parse_expectations",
]

SUMMED = (
    "goodput_mbps",
    "bytes",
    "bytes_acked",
    "segs_sent",
    "segs_retrans",
    "segs_in_network",
    "segs_received",
    "drops",
    "marks",
    "rto_count",
)


def metrics(scope: str) -> list[str]:
    """What an expectation of ``scope`` can check: the numeric columns of the
    table it reads as the core writes them (``results.numeric_columns``),
    with what ``check_run`` adds (``share``; ``count`` of a group)."""
    if scope == "run":
        return numeric_columns("summary")
    flows = numeric_columns("flows")
    if scope == "flow":
        return [*flows, "share"]
    return ["group", "count", *(c for c in flows if c not in ("flow", "group")), "share"]


def flow_shape(normalized: Mapping[str, Any]) -> tuple[int, int]:
    """(flows, groups) of a normalized scenario."""
    flows = normalized.get("flows") or []
    return len(flows), 1 + max((int(f.get("group", 0)) for f in flows), default=-1)


def check_expectations(
    expectations: list[Expectation],
    scn: Any,
    shapes: Iterable[tuple[int, int]] | None = None,
) -> None:
    """Refuse, before anything runs, what no run of ``scn`` can satisfy: a
    metric that is not a column of its scope, a flow or group that neither
    ``scn`` nor a point of its sweep has, a ``when`` key that is not swept.
    ``shapes``: ``flow_shape`` of each sweep point when the caller has them
    (else they are built only if an index is beyond ``scn``'s own). Raises
    ``ScenarioError`` naming ``expect[i].<field>`` and what is allowed."""
    source = scn.source
    spec = parse_sweep(scn.sweep, source)
    own = flow_shape(scn.normalized)
    most: tuple[int, int] | None = own
    widened = not scn.sweep

    def widen() -> tuple[int, int] | None:
        """The most flows and groups of any point (None: not known, as the
        sweep is too large or refused on its own, which it then says)."""
        if shapes is not None:
            seen = list(shapes)
        elif spec.size > MAX_POINTS:
            return None
        else:
            try:
                seen = [flow_shape(p.scenario.normalized) for p in iter_points(scn)]
            except ScenarioError:
                return None
        return max([own[0], *(f for f, _ in seen)]), max([own[1], *(g for _, g in seen)])

    for i, e in enumerate(expectations):
        where = f"expect[{i}]"
        allowed = metrics(e.scope)
        if e.metric not in allowed:
            raise ScenarioError(
                source,
                f"{where}.metric",
                f"no metric {clip(e.metric, 60)!r} for scope {e.scope!r}; "
                f"expected one of {', '.join(allowed)}",
            )
        for k, j, index in (("flow", 0, e.flow), ("group", 1, e.group), ("beside", 0, e.beside)):
            if index is None or most is None:
                continue
            if index >= most[j] and not widened:
                widened = True
                most = widen()
                if most is None:
                    continue
            n = most[j]
            if index >= n:
                what = "the largest point of its sweep has" if scn.sweep else "the scenario has"
                noun = "group(s) ([[flows]] entries)" if k == "group" else "flow(s)"
                raise ScenarioError(
                    source,
                    f"{where}.{k}",
                    f"no {'group' if k == 'group' else 'flow'} {index}: {what} {n} {noun}"
                    + (f", numbered 0 to {n - 1}" if n else ""),
                )
        for key in e.when:
            if key not in spec.keys:
                swept = (
                    f"expected a swept key: {', '.join(spec.keys)}" if spec.keys else "there is no [sweep]"
                )
                raise ScenarioError(
                    source, f"{where}.when", f"{clip(key, 60)!r} is not swept, so it selects no run; {swept}"
                )


def _is_numeric(column: pd.Series) -> bool:
    """Integers, unsigned integers or floats (booleans are not metrics)."""
    return column.dtype.kind in "iuf"


def group_table(flows: pd.DataFrame) -> pd.DataFrame:
    """Flows aggregated per ``group`` (see the module docstring), with ``share`` and ``count``."""
    if "group" not in flows or flows.empty:
        import pandas as pd  # here only: `validate` parses expectations without pandas

        return pd.DataFrame(columns=["group", "count", "share"])
    numeric = [c for c in flows.columns if c != "group" and _is_numeric(flows[c])]
    g = flows.groupby("group", sort=True)
    agg = {c: ("sum" if c in SUMMED else "mean") for c in numeric if c != "flow"}
    out = g.agg(agg)
    out.insert(0, "count", g.size())
    if {"segs_retrans", "segs_sent"} <= set(out.columns):
        sent = out["segs_sent"].where(out["segs_sent"] > 0)
        out["retrans_rate"] = (out["segs_retrans"] / sent).fillna(0.0)
    for c in ("cc", "label"):
        if c in flows:
            out[c] = g[c].first()
    out = out.reset_index()
    return _with_share(out)


def _with_share(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    if "goodput_mbps" in frame:
        total = float(frame["goodput_mbps"].sum())
        frame["share"] = frame["goodput_mbps"] / total if total > 0 else float("nan")
    return frame


@dataclass
class Check:
    """One expectation on one run: what was measured, whether it held."""

    passed: bool
    actual: float | None
    detail: str = ""


@dataclass
class Outcome:
    """One expectation over the runs it applies to."""

    expectation: Expectation
    checks: list[tuple[str, Check]]  # (point label, check)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for _, c in self.checks)

    @property
    def failures(self) -> list[tuple[str, Check]]:
        return [(p, c) for p, c in self.checks if not c.passed]

    def worst(self) -> tuple[str, Check] | None:
        """The check furthest on the wrong side (or the closest to failing)."""
        if not self.checks:
            return None
        e = self.expectation
        sign = -1.0 if e.op in (">=", ">") else 1.0

        def badness(pc: tuple[str, Check]) -> float:
            a = pc[1].actual
            if a is None or (isinstance(a, float) and math.isnan(a)):
                return math.inf
            if e.op in ("==", "!="):
                return abs(a - e.value) * (1 if e.op == "==" else -1)
            return sign * (a - e.value)

        return max(self.checks, key=badness)


def flows_beside(flows: pd.DataFrame, flow: int, by: str | None = None) -> pd.DataFrame:
    """The rows of ``flows`` that started before flow ``flow`` finished (its
    ``start_s`` + ``fct_s``; without an FCT it ran to the end), and that flow
    itself; empty if there is no such flow. ``by`` names the column that
    tells several runs' flows apart (``run``): each run against its own
    flow ``flow``."""
    mine = flows[flows["flow"] == flow]
    end = mine["start_s"] + mine["fct_s"].fillna(math.inf)
    if by is None:
        limit: Any = float(end.iloc[0]) if len(end) else -math.inf
    else:
        limit = flows[by].map(dict(zip(mine[by], end, strict=True)))  # NaN: no such flow
    return flows[(flows["flow"] == flow) | (flows["start_s"] < limit)]


def check_run(e: Expectation, summary: pd.DataFrame, flows: pd.DataFrame) -> Check:
    """Check one expectation against one run's summary and flows tables."""
    if e.beside is not None:  # parsed only with scope "flow" or "group"
        flows = flows_beside(flows, e.beside)
        if flows.empty:
            return Check(False, None, f"no flow {e.beside}")
    if e.scope == "run":
        frame, what = summary, "summary"
    elif e.scope == "flow":
        frame, what = _with_share(flows), "flows"
        if e.flow is not None:
            frame = frame[frame["flow"] == e.flow]
            if frame.empty:
                return Check(False, None, f"no flow {e.flow}")
    else:
        frame, what = group_table(flows), "groups"
        if e.group is not None:
            frame = frame[frame["group"] == e.group]
            if frame.empty:
                return Check(False, None, f"no group {e.group}")
    if e.metric not in frame.columns or not _is_numeric(frame[e.metric]):
        # (a stored experiment's [[expect]] may name a text column: "cc")
        cols = [c for c in frame.columns if _is_numeric(frame[c])]
        return Check(False, None, f"no metric {e.metric!r} in {what}; have: {', '.join(cols)}")
    values = [float(v) for v in frame[e.metric]]
    if not values:
        return Check(False, None, "no rows")
    results = [(v, e.holds(v)) for v in values]
    failing = [v for v, ok in results if not ok]
    if failing:
        return Check(False, failing[0], f"{len(failing)} of {len(values)} fail" if len(values) > 1 else "")
    # all pass: report the one closest to the limit
    closest = min(values, key=lambda v: abs(v - e.value))
    return Check(True, closest, f"all {len(values)}" if len(values) > 1 else "")


def check_all(
    expectations: list[Expectation], runs: Iterable[tuple[str, Mapping[str, Any], pd.DataFrame, pd.DataFrame]]
) -> list[Outcome]:
    """Check ``expectations`` over runs given as (label, swept values,
    summary, flows)."""
    runs = list(runs)
    outcomes = []
    for e in expectations:
        checks = []
        for label, values, summary, flows in runs:
            if e.when and not matches(e.when, values):
                continue
            checks.append((label, check_run(e, summary, flows)))
        outcomes.append(Outcome(e, checks))
    return outcomes


def check_experiment(expectations: list[Expectation], exp: Any) -> list[Outcome]:
    """Check expectations on every run of an ``Experiment``."""
    if not expectations:
        return []
    import pyarrow.parquet as pq

    runs = []
    cache: dict[str, pd.DataFrame] = {}
    for i in range(len(exp.runs)):
        row = exp.runs.iloc[i]
        values = {k: row[k] for k in exp.keys}
        run = str(row["run"])
        if run not in cache:
            cache[run] = pq.read_table(exp.path / run / "flows.parquet").to_pandas()
        # a whole swept workload (bbrv3-insights/fig14) is 400 kB of JSON
        label = " ".join(f"{k}={clip(str(v), 40)}" for k, v in values.items())
        label = (label + f" repeat={row['repeat']}").strip() if len(exp.runs) > 1 else "run"
        runs.append((label, values, exp.runs.iloc[[i]], cache[run]))
    return check_all(expectations, runs)
