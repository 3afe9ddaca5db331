"""The papers' findings, each as its paper states it, and how each is checked
on an experiment's runs.

A finding (``Finding``) is the paper's claim in its own terms: which
quantity, which direction, how large, under which setup; where the paper
says it (``cite``: "bbrv3-insights, Sec. IV-B, Fig. 8") and what it reports
(``paper``: its number, or a reading of its figure, paraphrased). Its check
is one of

- ``Threshold(q, op, value)``: a quantity against a natural limit (a fair
  share, the link's rate, one RTTmin) where the paper gives a direction;
- ``Band(q, lo, hi)``: a quantity the paper gives a number for, inside a
  band whose width is justified in ``why`` (the paper's spread, its
  repetitions, the resolution of its axis);
- ``Compare(a, op, b, margin)``: a comparative claim as a comparison, A's
  value against B's, with the size of the difference the paper reports;
- ``Each(check, over)``: the same check at every one of several points.

A quantity (``Quantity``) is computed from the tables of the runs at one
point of the id's sweep (``at``: swept key -> value, as ``[[expect]]``'s
``when`` writes it): one value per repetition (its mean and spread are what
is compared), or one value pooled over the repetitions. It declares the
values it can physically take (``domain``), so that a check that cannot
fail on any table (``FCT > 0``) is caught: ``Check.can_fail`` says whether
some value in the domain fails it, and tests/test_findings.py asserts it
for every finding.

Where the kernel here has the algorithms (reno, cubic, bbr v1), ``kernel``
says what part of the claim the Linux backend can show."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..lazy import lazy
from ..sweep import matches

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..results import Results
else:
    np = lazy("numpy")
    pd = lazy("pandas")

__all__ = [
    "FINDINGS",
    "Band",
    "Compare",
    "Each",
    "Finding",
    "Point",
    "Quantity",
    "Threshold",
    "Verdict",
    "add",
    "evaluate",
    "of_id",
]

#: Swept key -> value, as the run labels write them (``{"flows.0.cc": "bbr3"}``).
Point = Mapping[str, Any]

OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


class Runs:
    """The runs of an experiment at one point: their rows of ``exp.runs``,
    each run's results (read on demand) and its repetition number."""

    def __init__(self, exp: Any, at: Point):
        self.exp = exp
        self.at = dict(at)
        keys = list(exp.keys)
        self.rows = [i for i in range(len(exp.runs)) if matches(at, {k: exp.runs[k].iloc[i] for k in keys})]

    def __len__(self) -> int:
        return len(self.rows)

    def results(self) -> list[Results]:
        return [self.exp.results(i) for i in self.rows]

    def table(self, name: str) -> pd.DataFrame:
        """Table ``name`` of these runs stacked, with ``run`` and ``repeat``."""
        frame = getattr(self.exp, name)
        runs = set(self.exp.runs["run"].iloc[self.rows].astype(str))
        return frame[frame["run"].astype(str).isin(runs)]


@dataclass(frozen=True)
class Quantity:
    """A number computed from the runs at a point: ``per_run(results)`` gives
    one value per run (averaged over the repetitions), or ``pooled(runs)``
    one value from all of them together (a percentile of every queue sample
    of 30 runs, as a paper's CDF pools them). ``domain``: the values it can
    physically take (a check must fail for some of them)."""

    text: str
    per_run: Callable[[Results], float] | None = None
    pooled: Callable[[Runs], float] | None = None
    domain: tuple[float, float] = (-math.inf, math.inf)
    unit: str = ""

    def values(self, runs: Runs) -> list[float]:
        if not len(runs):
            return []
        if self.pooled is not None:
            return [float(self.pooled(runs))]
        assert self.per_run is not None
        return [float(self.per_run(r)) for r in runs.results()]


@dataclass(frozen=True)
class Measured:
    """What a quantity gave at a point: the mean over repetitions, their
    spread (min, max) and how many."""

    mean: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Measured:
        v = [x for x in values if x is not None and math.isfinite(x)]
        if not v:
            return cls(math.nan, math.nan, math.nan, 0)
        return cls(float(np.mean(v)), min(v), max(v), len(v))

    def text(self, unit: str = "") -> str:
        if self.n == 0:
            return "—"
        u = f" {unit}" if unit else ""
        if self.n == 1 or self.low == self.high:
            return f"{self.mean:.3g}{u}" + (f" (n={self.n})" if self.n > 1 else "")
        return f"{self.mean:.3g}{u} ({self.low:.3g}-{self.high:.3g}, n={self.n})"


@dataclass(frozen=True)
class Threshold:
    q: Quantity
    at: Point
    op: str
    value: float

    def judge(self, exp: Any) -> tuple[bool | None, str]:
        m = Measured.of(self.q.values(Runs(exp, self.at)))
        if m.n == 0:
            return None, "no run at this point"
        return OPS[self.op](m.mean, self.value), m.text(self.q.unit)

    def describe(self) -> str:
        return f"{self.q.text} {self.op} {self.value:g}{_at(self.at)}"

    def can_fail(self) -> bool:
        lo, hi = self.q.domain
        return any(not OPS[self.op](x, self.value) for x in _probe(lo, hi))


@dataclass(frozen=True)
class Band:
    q: Quantity
    at: Point
    lo: float
    hi: float
    why: str = ""

    def judge(self, exp: Any) -> tuple[bool | None, str]:
        m = Measured.of(self.q.values(Runs(exp, self.at)))
        if m.n == 0:
            return None, "no run at this point"
        return self.lo <= m.mean <= self.hi, m.text(self.q.unit)

    def describe(self) -> str:
        return f"{self.q.text} in [{self.lo:g}, {self.hi:g}]{_at(self.at)}"

    def can_fail(self) -> bool:
        lo, hi = self.q.domain
        return lo < self.lo or hi > self.hi


@dataclass(frozen=True)
class Compare:
    """A's mean against B's: ``a - b op margin`` (``ratio=False``) or
    ``a / b op margin`` (``ratio=True``)."""

    a: Quantity
    at_a: Point
    op: str
    b: Quantity
    at_b: Point
    margin: float = 0.0
    ratio: bool = False

    def judge(self, exp: Any) -> tuple[bool | None, str]:
        ma = Measured.of(self.a.values(Runs(exp, self.at_a)))
        mb = Measured.of(self.b.values(Runs(exp, self.at_b)))
        if ma.n == 0 or mb.n == 0:
            return None, "no run at one of the points"
        if self.ratio and mb.mean == 0:
            return None, f"{ma.text(self.a.unit)} vs {mb.text(self.b.unit)} (a ratio to 0)"
        lhs = ma.mean / mb.mean if self.ratio else ma.mean - mb.mean
        if math.isnan(lhs):
            return None, f"{ma.text(self.a.unit)} vs {mb.text(self.b.unit)}"
        return OPS[self.op](lhs, self.margin), f"{ma.text(self.a.unit)} vs {mb.text(self.b.unit)}"

    def describe(self) -> str:
        rel = "/" if self.ratio else "-"
        return (
            f"[{self.a.text}{_at(self.at_a)}] {rel} [{self.b.text}{_at(self.at_b)}] {self.op} {self.margin:g}"
        )

    def can_fail(self) -> bool:
        # A comparison of two quantities of overlapping domains can go either way.
        (alo, ahi), (blo, bhi) = self.a.domain, self.b.domain
        if self.ratio:
            return True
        return any(not OPS[self.op](x - y, self.margin) for x in _probe(alo, ahi) for y in _probe(blo, bhi))


@dataclass(frozen=True)
class Each:
    """``make(point)`` holds at every point of ``over``."""

    make: Callable[[Point], Any]
    over: tuple[Point, ...]

    def checks(self) -> list[Any]:
        return [self.make(p) for p in self.over]

    def judge(self, exp: Any) -> tuple[bool | None, str]:
        results = [(c, *c.judge(exp)) for c in self.checks()]
        judged = [r for r in results if r[1] is not None]
        if not judged:
            return None, "no run at these points"
        holds = all(r[1] for r in judged)
        shown = [r for r in judged if not r[1]] or judged
        return holds, "; ".join(f"{_at_short(r[0])}{r[2]}" for r in shown[:4])

    def describe(self) -> str:
        return f"at each of {len(self.over)} points: {self.checks()[0].describe()}"

    def can_fail(self) -> bool:
        return any(c.can_fail() for c in self.checks())


Check = Threshold | Band | Compare | Each


def _probe(lo: float, hi: float) -> list[float]:
    """Values spread over a domain, its ends included where finite."""
    a = lo if math.isfinite(lo) else -1e12
    b = hi if math.isfinite(hi) else 1e12
    return [a, b, (a + b) / 2, a + (b - a) * 1e-6, b - (b - a) * 1e-6]


def _at(at: Point) -> str:
    return (" at " + ", ".join(f"{k}={v}" for k, v in at.items())) if at else ""


def _at_short(c: Any) -> str:
    at = getattr(c, "at", None) or getattr(c, "at_a", None) or {}
    return (", ".join(f"{v}" for v in at.values()) + ": ") if at else ""


@dataclass(frozen=True)
class Finding:
    """One of a paper's findings for one catalog id (see the module)."""

    id: str
    cite: str
    claim: str
    paper: str
    check: Check
    #: What of the claim the kernel here (reno, cubic, bbr v1) can show.
    kernel: str = "none"
    why: str = ""


@dataclass(frozen=True)
class Verdict:
    finding: Finding
    #: None: not checked (no run at its points)
    holds: bool | None
    measured: str
    detail: dict[str, Any] = field(default_factory=dict)


#: catalog id -> its findings, in the paper's order.
FINDINGS: dict[str, list[Finding]] = {}


def add(*findings: Finding) -> None:
    for f in findings:
        FINDINGS.setdefault(f.id, []).append(f)


def of_id(id: str) -> list[Finding]:
    return list(FINDINGS.get(id, []))


def evaluate(id: str, exp: Any) -> list[Verdict]:
    """Each finding of ``id`` checked on the experiment ``exp``."""
    out = []
    for f in of_id(id):
        holds, measured = f.check.judge(exp)
        out.append(Verdict(f, holds, measured))
    return out
