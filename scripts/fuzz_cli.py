#!/usr/bin/env python3
"""Fuzz ccarena's command line with hostile scenario input (issue 10).

Hypothesis mutates the example scenarios (``scenarios/*.toml``) and the
catalog's scenarios (their quick form, with the paper's findings as
``[[expect]]``), as parsed documents and as TOML text: keys deleted, unknown
keys added at every level, values replaced by junk of every TOML type
(control characters, markup, unicode, long strings, huge and negative
integers, NaN and infinities, dates, arrays, tables, deep nesting), bytes of
the text corrupted, ``--set`` overrides with bad keys and values, ``[sweep]``
tables with bad axes, empty lists and huge products, ``[[expect]]`` entries
with bad fields. Each mutant goes through ``ccarena validate`` in this
process (``cli.main``); a sample also through ``run``/``sweep`` with
``--out`` into a temporary directory, and another through a real
``python -m ccarena validate`` process.

The oracle, for every case: exit status 0 (accepted) or 2 (rejected); on 2,
stderr is exactly one non-empty line that starts with the file and names a
field (``ScenarioError.path``) unless the whole file is bad (not TOML, not
UTF-8, nested too deeply, too large, not a regular file), nothing on stdout
and nothing written (the ``--out`` directory is not created); never a Python
traceback, never another status, never more than ``--timeout`` seconds or
``--memory-mb`` of memory. Before that line, and as all of ``validate``'s
stderr on 0, only the scenario's warnings may come (``FILE: FIELD: warning:
...``, one line each, printed before a command runs).

    python3 scripts/fuzz_cli.py --cases 10000 --seed 1

prints a table: cases, rejected cleanly, accepted, failures by kind (and
writes each failing input under ``--keep DIR``). The exit status is 1 when a
case failed.

Issue 39 added what its audit found: dotted keys of up to 50,000 parts in
every key position and values holding as many dots (refused as nested too
deeply before tomllib builds them; a value's dots never), every field of a
link of a wrong type (the rejection must name that field), and values no
run can mean anything with (refused, naming the field) or that make it
mean less than it seems (a warning naming the field, the run accepted);
and ``--kill-trials``: a run killed by SIGKILL while it draws its figure,
then the next run into the same folder, after which no ``.NAME.tmp-*``
directory of the killed one may remain.

``tests/test_fuzz_cli.py`` runs a bounded slice of the same strategies and
replays ``tests/fuzz_corpus/``, the inputs that found bugs.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import io
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fuzz_corpus"

#: Seconds one case may take (in this process: validate, and run/sweep of a
#: cheap accepted scenario).
TIMEOUT_S = 10.0
#: Peak memory one case may add to this process.
MEMORY_GROWTH_MB = 1024

#: Characters a rejection may take besides the file's name (user text that
#: it quotes is cut in the middle).
MAX_LINE = 1100

#: Messages about the whole file, which name no field.
WHOLE_FILE = (
    "invalid TOML:",
    "cannot read:",
    "nested too deeply",
    "larger than",
    "is a directory",
    "is a device",
    "no such file",
)

# --------------------------------------------------------------------------- TOML text


class Raw(str):
    """A value written into the TOML text as is (``1e999``, a 5000-digit
    integer, ``0x10``, a date, an unterminated array ...)."""


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) < 0xE000:  # a surrogate: invalid TOML
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_string(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML for {type(v).__name__}")


def dumps(doc: dict[str, Any]) -> str:
    """A document as TOML: one ``"key" = value`` line per top-level key,
    tables and arrays inline."""
    return "".join(f"{toml_string(str(k))} = {toml_value(v)}\n" for k, v in doc.items())


# --------------------------------------------------------------------------- seeds


@dataclass(frozen=True)
class Seed:
    name: str
    doc: dict[str, Any]  # small: short durations, a few sweep points
    text: str  # the scenario as written (an example file), or dumps(doc)


RICH = {
    "name": "fuzz-base",
    "duration": "200ms",
    "seed": 7,
    "bottleneck": {
        "rate": "50Mbps",
        "buffer": "1BDP",
        "qdisc": "fq_codel",
        "rate_schedule": [["100ms", "20Mbps"]],
        "burst": "3pkt",
    },
    "path": {
        "rtt": "20ms",
        "rtt_split": 0.5,
        "loss": "0.1%",
        "jitter": {"model": "per_packet", "max": "1ms"},
    },
    "sample": {"interval": "50ms"},
    "hosts": {"latency": "measured"},
    "flows": [
        {"cc": "cubic", "count": 2, "start": "10ms", "size": "100KB", "repeat": {"gap": "10ms", "count": 3}},
        {
            "cc": "bbr1",
            "rtt": "50ms",
            "pacing": {"mode": "fq", "max_rate": "10Mbps"},
            "rtt_schedule": [["100ms", "80ms"]],
            "ecn": True,
            "init_cwnd": 20,
            "mss": 1000,
        },
        {"cc": "reno", "chunks": [["0s", "20KB"], ["100ms", "100KB"]], "rwnd": "64KB"},
    ],
    "sweep": {"bottleneck.buffer": ["0.5BDP", "2BDP"], "flows.0.cc": ["cubic", "reno"]},
    "expect": [
        {"metric": "utilization", "op": ">", "value": 0.0},
        {"metric": "share", "op": "<=", "value": 1, "flow": 0},
        {"metric": "goodput_mbps", "op": ">=", "value": 0, "scope": "group", "group": 2},
        {"metric": "jain", "op": "==", "value": 1, "tolerance": 1, "when": {"flows.0.cc": "reno"}},
    ],
}


def _shrink(doc: dict[str, Any], duration: str = "200ms") -> dict[str, Any]:
    """A copy that is cheap to validate and to run: a short duration, at
    most 20 flow tables of at most 10 flows each, the first two values of
    each sweep axis, one repeat."""
    d = copy.deepcopy(doc)
    d["duration"] = duration
    if isinstance(d.get("sample"), dict):
        d["sample"]["interval"] = "50ms"

    def few(flows: Any) -> None:
        if isinstance(flows, list):
            del flows[20:]
            for f in flows:
                for t in (f, f.get("repeat")) if isinstance(f, dict) else ():
                    if isinstance(t, dict) and isinstance(t.get("count"), int):
                        t["count"] = min(t["count"], 10)

    def trim(t: dict[str, Any]) -> None:
        for k, v in t.items():
            if k == "zip" and isinstance(v, list):
                for z in v:
                    if isinstance(z, dict):
                        trim(z)
            elif isinstance(v, list):
                del v[2:]
                if k == "flows":
                    for flows in v:
                        few(flows)
            elif isinstance(v, dict):
                trim(v)

    few(d.get("flows"))
    sw = d.get("sweep")
    if isinstance(sw, dict):
        sw.pop("repeats", None)
        trim(sw)
    return d


def _valid(doc: dict[str, Any], source: str) -> bool:
    from ccarena.cost import check
    from ccarena.scenario import Scenario, ScenarioError
    from ccarena.sweep import expand

    try:
        scn = Scenario.from_dict(doc, source=source)
        if scn.sweep:
            expand(scn)
        check(scn)
    except ScenarioError:
        return False
    return True


def seeds() -> list[Seed]:
    """The example scenarios, the catalog's (quick form) and one with
    every feature, each cheap to validate."""
    import tomllib

    from ccarena.catalog import REGISTRY

    out: list[Seed] = []

    def small(doc: dict[str, Any], name: str) -> dict[str, Any]:
        d = _shrink(doc)
        if not _valid(d, name):  # a flow starting after the short end, say
            d = _shrink(doc, str(doc.get("duration", "1s")))
        return d

    for p in sorted((REPO / "scenarios").glob("*.toml")):
        text = p.read_text(encoding="utf-8")
        out.append(Seed(p.stem, small(tomllib.loads(text), p.stem), text))
    for id_, entry in REGISTRY.items():
        doc = entry.build(True, **{k: None for k in entry.options})
        d = small(doc, id_)
        out.append(Seed(id_, d, dumps(d)))
    out.append(Seed("rich", copy.deepcopy(RICH), dumps(RICH)))
    return out


# --------------------------------------------------------------------------- junk

STRINGS = [
    "", " ", "\t", "\n", "\r\n", "\x00", "\x1b[31m", "\x7f", "[/bold]", "[red]x", "[bold]", "[link=x]y",
    "\\", '"', "'", "ñ€🙂", "\u202e", "\ufeff", "\u0085", "\u2028", "NaN", "nan", "inf", "-inf",
    "-5ms", "0s", "0ms", "1ns", "1e999Mbps", "1e30BDP", "0BDP", "-1BDP", "18446744073709551616s",
    "99999999999999999999GB", "1.5pkt", "0x10", "abc", "10Gbps", "100Tbps", "100%", "150%", "-1%",
    "20ms", "1s", "10Mbps", "1BDP", "cubic", "bbr1", "reno", "taildrop", "red", "fq_codel", "fq",
    "linux", "sim", "flows.0.cc", "flows[0].rtt", "jain", "share", "min", "max", "measured",
    "per_packet", "3pkt", "1MB", " 20 GiB ", "%s%n", "{0}", "$(id)", "../../etc/passwd", "/", ".",
]  # fmt: skip
INTS = [
    0, 1, -1, 2, 3, 10, 100, 1000, 65535, 99999, 100000, 100001, 2**31 - 1, 2**31, 2**32,
    2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, -(10**30),
]  # fmt: skip
FLOATS = [0.0, -0.0, 0.5, 1.5, -1.5, 1e308, -1e308, 5e-324, 1e-300, math.nan, math.inf, -math.inf]
RAWS = [
    Raw("9" * 5000), Raw("-" + "9" * 5000), Raw("1e999"), Raw("-1e999"), Raw("+nan"), Raw("-nan"),
    Raw("+inf"), Raw("0x7fffffffffffffff"), Raw("0xffffffffffffffffffff"), Raw("0o777"), Raw("0b101"),
    Raw("1_000"), Raw("1979-05-27T07:32:00Z"), Raw("1979-05-27"), Raw("07:32:00"),
    Raw("1979-05-27T00:32:00.999999-07:00"), Raw("'literal [/bold]'"), Raw('"""multi\nline"""'),
    Raw("'''raw\nmulti'''"), Raw("[]"), Raw("{}"), Raw("[[]]"), Raw("[{}]"), Raw("[1, 'a', 2.5]"),
    Raw("[" * 31 + "]" * 31), Raw("[" * 33 + "]" * 33), Raw("[" * 2000 + "]" * 2000),
    Raw("{a = " * 40 + "1" + "}" * 40), Raw("{a = " * 1500 + "1" + "}" * 1500),
    Raw(toml_string("x" * 100_000)), Raw(toml_string("é" * 3000)),
]  # fmt: skip
KNOWN_KEYS = [
    "name", "description", "duration", "seed", "bottleneck", "rate", "buffer", "qdisc", "flows", "cc",
    "rtt", "count", "start", "size", "sweep", "expect", "metric", "op", "value", "scope", "flow",
    "group", "when", "tolerance", "zip", "repeats", "path", "sample", "interval", "hosts", "latency",
    "backend", "label", "pacing", "mode", "max_rate", "ecn", "red", "jitter", "model", "max", "chunks",
    "repeat", "gap", "rwnd", "init_cwnd", "mss", "rate_schedule", "rtt_schedule", "burst", "bdp_rtt",
    "loss", "rtt_split", "model_version",
]  # fmt: skip
JUNK_KEYS = ["", " ", "a.b", "[0]", "flows.0", "flows[0].rtt", "\n", "[/bold]", "é", "x" * 300, "unknown_1"]

keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.sampled_from(JUNK_KEYS), st.text(max_size=12))
scalars = st.one_of(
    st.sampled_from(STRINGS),
    st.text(max_size=30),
    st.builds(
        lambda c, n: c * n, st.sampled_from(["9", "a", "é", "[", "\n", "🙂"]), st.sampled_from([300, 5000])
    ),
    st.sampled_from(INTS),
    st.integers(),
    st.sampled_from(FLOATS),
    st.floats(),
    st.booleans(),
    st.datetimes(timezones=st.none() | st.timezones()),
    st.dates(),
    st.times(),
    st.sampled_from(RAWS),
)
junk = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(keys, c, max_size=3), max_leaves=6
)


def deep(n: int, table: bool) -> Any:
    v: Any = 1
    for _ in range(n):
        v = {"a": v} if table else [v]
    return v


# --------------------------------------------------------------------------- documents


def _nodes(v: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _nodes(x, (*path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _nodes(x, (*path, i))


def _get(doc: Any, path: tuple) -> Any:
    for s in path:
        doc = doc[s]
    return doc


def _retype(v: Any) -> Any:
    if isinstance(v, dict):
        return list(v.values())
    if isinstance(v, list):
        return {str(i): x for i, x in enumerate(v)}
    if isinstance(v, str):
        return [v]
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | float):
        return str(v)
    return {"value": str(v)}


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` after 1-3 of: replace a value by junk, delete a key or an
    element, add an unknown key, change a value's type, duplicate an
    element, empty a container, nest deeply."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        nodes = list(_nodes(doc))
        path, node = nodes[draw(st.integers(0, len(nodes) - 1))]
        op = draw(st.sampled_from(["replace", "delete", "add", "retype", "duplicate", "empty", "deep"]))
        if op == "add" or not path:
            target = node if isinstance(node, dict) else doc
            target[draw(keys)] = draw(junk)
            continue
        parent = _get(doc, path[:-1])
        last = path[-1]
        if op == "replace":
            parent[last] = draw(junk)
        elif op == "delete":
            del parent[last]
        elif op == "retype":
            parent[last] = _retype(node)
        elif op == "duplicate" and isinstance(node, list) and node:
            node.append(copy.deepcopy(node[draw(st.integers(0, len(node) - 1))]))
        elif op == "empty":
            parent[last] = type(node)() if isinstance(node, dict | list | str) else None
            if parent[last] is None:
                del parent[last]
        else:
            parent[last] = deep(draw(st.sampled_from([31, 32, 33, 100])), draw(st.booleans()))
    return doc


def _dotted(path: tuple, brackets: bool) -> str:
    out = ""
    for s in path:
        if isinstance(s, int):
            out += f"[{s}]" if brackets else f".{s}"
        else:
            out += f".{s}" if out else str(s)
    return out


def _leaf_paths(doc: dict[str, Any]) -> list[tuple]:
    return [p for p, v in _nodes(doc) if p and p[0] not in ("sweep", "expect") and not isinstance(v, dict)]


BAD_KEYS = [
    "", ".", "..", "flows..0", "[0]", "flows[-1]", "flows[x]", "flows.-1.rtt", "flows.9999999999999999.rtt",
    "flows[" + "9" * 5000 + "]", "flows." + "9" * 5000, " flows.0.rtt", "flows.0.rtt ", "a=b",
    "flows.\u0661.rtt", "flows.²", "flows.0.rtt.x", "flows.0.rtt[0]", "name.x", "bottleneck.rate.value",
    "sweep", "sweep.x", "expect", "expect.0.metric", "expect[0].flow", "zip", "repeats", "[/bold]", "é",
    "\udcff", "x" * 3000, ".".join(["a"] * 40), "a" + "[0]" * 40, "backend", "duration", "seed", "flows",
    "bottleneck",
]  # fmt: skip
BAD_VALUES = [
    "", "=", "[", "{", '"', "'", "nan", "inf", "-inf", "1e999", "9" * 5000, "[" * 2000 + "]" * 2000,
    "{a = " * 1500 + "1" + "}" * 1500, "[" * 33 + "]" * 33, "[/bold]", "\udcff", "🙂", "-5ms", "0",
    "-1", str(2**64), "true", "[]", "{}", "[1, 'a']", '{rate = "0Mbps"}', "linux", "1979-05-27", "\x1b[31m",
    "x" * 5000, "bbr1", "10Mbps", "20ms", "1BDP", "5",
]  # fmt: skip


@st.composite
def overrides(draw: st.DrawFn, doc: dict[str, Any]) -> list[str]:
    """0-3 ``--set KEY=VALUE``: keys that exist (either spelling) or are
    malformed, values that are junk (as TOML text) or hostile text."""
    paths = _leaf_paths(doc) or [("name",)]
    out = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)):
            key = _dotted(draw(st.sampled_from(paths)), draw(st.booleans()))
        else:
            key = draw(st.sampled_from(BAD_KEYS) | st.text(max_size=10))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            value = draw(st.sampled_from(BAD_VALUES))
        elif kind == 1:
            value = toml_value(draw(junk))
        else:
            value = draw(st.text(max_size=20))
        out.append(
            f"{key}={value}" if draw(st.integers(0, 9)) else draw(st.sampled_from(["", key, "=", value]))
        )
    return out


def _axis_key(draw: st.DrawFn, doc: dict[str, Any]) -> str:
    if draw(st.integers(0, 3)):
        return _dotted(draw(st.sampled_from(_leaf_paths(doc) or [("seed",)])), draw(st.booleans()))
    return draw(
        st.sampled_from([*BAD_KEYS[:30], "name", "expect.0.value", "sweep.repeats"]) | st.text(max_size=8)
    )


@st.composite
def sweeps(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with a hostile ``[sweep]``: axes of bad keys and values, empty
    or non-list values, bad repeats, bad zips, huge products."""
    doc = copy.deepcopy(doc)
    sweep: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 3))):
        key = _axis_key(draw, doc)
        shape = draw(st.integers(0, 5))
        if shape == 0:
            sweep[key] = []
        elif shape == 1:
            sweep[key] = draw(junk)
        elif shape == 2:  # a nested spelling: [sweep.bottleneck] rate = [...]
            head, _, tail = key.partition(".")
            sweep[head] = {tail or "x": draw(st.lists(junk, min_size=1, max_size=3))}
        else:
            sweep[key] = draw(st.lists(junk, min_size=1, max_size=3))
    if draw(st.booleans()):
        sweep["repeats"] = draw(st.sampled_from([0, -1, 1, 2, 2**63, 10**30, True, 1.5, "2", [2], {}]) | junk)
    zshape = draw(st.integers(0, 5))
    names = list(sweep)
    if zshape == 1:
        sweep["zip"] = [names[:2], names[1:]] if names else [["x"]]
    elif zshape == 2:
        sweep["zip"] = {_axis_key(draw, doc): draw(st.lists(junk, max_size=3)) for _ in range(2)}
    elif zshape == 3:
        sweep["zip"] = draw(junk)
    elif zshape == 4:
        sweep["zip"] = [{_axis_key(draw, doc): ["1s", "2s"]}, {_axis_key(draw, doc): ["1s"]}]
    huge = draw(st.integers(0, 19))
    if huge < 2:  # last, so nothing shrinks it back under the limit (cost.MAX_POINTS)
        n = draw(st.sampled_from([400, 1000]))
        sweep = {"seed": list(range(n)), "bottleneck.rate": [f"{i + 1}Mbps" for i in range(n)]}
        if n == 400 and draw(st.booleans()):
            sweep["repeats"] = 1000
    elif huge == 2:  # more flows over the points than cost.MAX_SWEEP_FLOWS
        count, n = draw(st.sampled_from([(50_000, 41), (20_000, 101)]))
        doc["flows"] = [{"cc": "reno", "rtt": "10ms", "count": count}]
        sweep = {"seed": list(range(n))}
    doc["sweep"] = sweep if draw(st.integers(0, 9)) else draw(junk)
    return doc


METRICS = ["jain", "utilization", "goodput_mbps", "share", "count", "retrans_rate", "fct_s", "qdelay_p99_ms"]
BAD_METRICS = [
    "cc",
    "label",
    "flow",
    "group",
    "warp",
    "",
    "Jain",
    "jain ",
    "[/bold]",
    "flows.0.cc",
    "x" * 500,
]


@st.composite
def expectations(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with hostile ``[[expect]]`` entries: bad metric, op, value,
    scope, flow, group, when, tolerance, name, unknown fields."""
    doc = copy.deepcopy(doc)
    sweep = doc.get("sweep")
    sweep_keys = list(sweep) if isinstance(sweep, dict) and sweep else ["flows.0.cc"]
    entries: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        e: dict[str, Any] = {"metric": draw(st.sampled_from(METRICS)), "op": ">=", "value": 0}
        for _ in range(draw(st.integers(1, 3))):
            f = draw(
                st.sampled_from(
                    [
                        "metric",
                        "op",
                        "value",
                        "scope",
                        "flow",
                        "group",
                        "when",
                        "tolerance",
                        "name",
                        "unknown",
                        "delete",
                    ]
                )
            )
            if f == "metric":
                e[f] = draw(st.sampled_from(METRICS + BAD_METRICS) | junk)
            elif f == "op":
                e[f] = draw(
                    st.sampled_from([">=", ">", "<=", "<", "==", "!=", "=>", "=", "~", "", "in"]) | junk
                )
            elif f == "scope":
                e[f] = draw(st.sampled_from(["run", "flow", "group", "world", "", "RUN"]) | junk)
            elif f in ("flow", "group"):
                e[f] = draw(st.sampled_from([0, 1, 2, 3, 5, 1000, -1, 2**63, True, 0.0, "0"]) | junk)
                if draw(st.booleans()):
                    e["scope"] = f
            elif f == "when":
                e[f] = draw(
                    st.dictionaries(
                        st.sampled_from([*sweep_keys, "seed", "flows[0].cc", "", "a..b", "repeat"]) | keys,
                        junk,
                        max_size=2,
                    )
                    | junk
                )
            elif f == "unknown":
                e[draw(keys)] = draw(junk)
            elif f == "delete":
                e.pop(draw(st.sampled_from(["metric", "op", "value"])), None)
            else:
                e[f] = draw(junk)
        entries.append(e)
    shape = draw(st.integers(0, 9))
    doc["expect"] = entries if shape else draw(junk | st.just(entries[0]) | st.just([1, entries[0]]))
    return doc


CORRUPTIONS = [
    b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\r", b"\n", b"[", b"]", b"=", b'"', b"\\u", b"[[flows]]\n",
    b"[sweep]\n", b"[[expect]]\n", b"a.b.c = 1\n", b"\xef\xbb\xbf", b"{", b"#",
]  # fmt: skip


@st.composite
def corrupted(draw: st.DrawFn, text: str) -> bytes:
    """``text`` with 1-4 of its bytes flipped, replaced, deleted or
    duplicated, or lines cut and repeated."""
    data = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        n = len(data)
        i = draw(st.integers(0, max(n - 1, 0)))
        op = draw(st.integers(0, 6))
        if op == 0 and n:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:
            data[i:i] = draw(st.sampled_from(CORRUPTIONS) | st.binary(min_size=1, max_size=4))
        elif op == 2:
            del data[i : i + draw(st.integers(1, 20))]
        elif op == 3:
            del data[i:]
        else:
            lines = bytes(data).split(b"\n")
            j = draw(st.integers(0, len(lines) - 1))
            if op == 4:
                lines.insert(j, lines[draw(st.integers(0, len(lines) - 1))])
            elif op == 5:
                lines[j] = lines[j][: draw(st.integers(0, len(lines[j])))]
            else:
                lines.insert(j, lines[j] * 2)
            data = bytearray(b"\n".join(lines))
    return bytes(data)


FILE_NAMES = [
    "s.toml",
    "[bold]x[].toml",
    "[red]x[-].toml",
    "é 🙂.toml",
    "a b.toml",
    "x" * 150 + ".toml",
    "\udcff.toml",
    "s",
    ".toml",
]


@dataclass(frozen=True)
class Case:
    """One input: the file's bytes, its name, the ``--set`` overrides, and
    what its strategy knows it must give (``Expect``), if anything."""

    data: bytes
    sets: tuple[str, ...] = ()
    filename: str = "s.toml"
    origin: str = ""
    expect: Expect | None = None


@dataclass(frozen=True)
class Expect:
    """What a case must give beyond the oracle's rules: ``"refused"`` naming
    ``field`` (or a field inside it; no field: a dotted key refused as too
    deep before it is parsed), ``"warned"``: accepted with a warning naming
    it (or refused for another field's sake), or ``"read"``: not refused
    before it is parsed."""

    outcome: str
    field: str


def _case(
    seed: Seed,
    origin: str,
    doc: Any = None,
    data: bytes | None = None,
    sets: list[str] | None = None,
    filename: str = "s.toml",
    expect: Expect | None = None,
) -> Case:
    if data is None:
        data = dumps(doc if doc is not None else seed.doc).encode("utf-8")
    return Case(data, tuple(sets or ()), filename, f"{origin}:{seed.name}", expect)


# --------------------------------------------------------------------------- issue 39

Segment = str | int

#: Key positions a dotted key of ``n`` parts is tried in (``{k}`` is the key).
KEY_PLACES = ["{k} = 1\n", "[{k}]\nx = 1\n", "[[{k}]]\nx = 1\n", "x = {{ y = 1, {k} = 2 }}\n"]
#: Values whose dots are no key's (never refused as too deep).
DOTTED_VALUES = [
    'v = "{d}"\n', "v = '{d}'\n", 'v = """\n{d}\n"{d}"\n"""\n', "v = '''\n'{d}'\n'''\n", "# {d}\n",
    'v = ["{d}", {{ w = "{d}" }}]\n', 'v = """"{d}"""""\n', 'v = "\\"{d}\\""\n',
]  # fmt: skip


@st.composite
def long_keys(draw: st.DrawFn, text: str) -> tuple[bytes, Expect | None]:
    """``text`` with a dotted key of 31 to 50,000 parts where a key goes
    (tomllib took 40 s and 9.8 GB for 50,000), or with a value or a comment
    holding as many dots; its parts bare or quoted, spaced or not. More than
    ``MAX_DEPTH`` parts must be refused as nested too deeply; a value's dots
    never."""
    from ccarena.keys import MAX_DEPTH

    n = draw(st.sampled_from([31, 32, 33, 34, 100, 10_000, 50_000]))
    part = draw(st.sampled_from(["a", '"a"', "'a'", '"a.b"', "0"]))
    sep = draw(st.sampled_from([".", " . ", "\t.\t"]))
    dotted = sep.join([part] * n)
    if draw(st.booleans()):  # a value's dots: the scenario is read, then judged as usual
        line = draw(st.sampled_from(DOTTED_VALUES)).format(d=dotted.replace('"', "").replace("'", ""))
        expect = Expect("read", "")
    else:
        line = draw(st.sampled_from(KEY_PLACES)).format(k=dotted)
        expect = Expect("refused" if n > MAX_DEPTH else "read", "")
    head = draw(st.booleans())  # before the scenario, or after it (inside its last table)
    return ((line + text) if head else (text + "\n" + line)).encode("utf-8"), expect


#: Each field of a queueing link ([bottleneck], a [[links]] entry,
#: [topology]) with values of a wrong type; a rejection must name the field
#: (it named only links[0] or topology, issue 39).
LINK_WRONG_TYPES: dict[str, list[Any]] = {
    "rate": [0, True, ["10Mbps"], {}],
    "buffer": [1, False, []],
    "bdp_rtt": [0, True, {}],
    "qdisc": [1, [], {}],
    "ecn": ["yes", 1, []],
    "burst": [1, True, {}],
    "rate_schedule": [5, "1s", {}, [[1, "5Mbps"]], [["1s", 5]]],
    "trace": [True, 5, {}],
    "policer": [5, "10Mbps", [], {"rate": 5}, {"rate": "10Mbps", "burst": 5}],
    "overhead": [38, True, []],
    "loss": [True, [], {}],
    "jitter": ["1ms", 5, [], {"model": "slotted", "max": 1}],
}
#: ... and those only a [[links]] entry has.
LINKS_ONLY_WRONG_TYPES: dict[str, list[Any]] = {"name": [5, True, []], "delay": [5, True, {}]}


@st.composite
def wrong_link_types(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[dict[str, Any], Expect] | None:
    """``doc`` with one field of one of its links of a wrong type: a
    ``[[links]]`` entry, its ``[bottleneck]``, or that bottleneck written as
    ``[topology] kind = "dumbbell"``. None when ``doc`` has no link."""
    doc = copy.deepcopy(doc)
    where: list[tuple[Any, str, dict[str, list[Any]]]] = []
    if isinstance(doc.get("links"), list):
        links_fields = {**LINK_WRONG_TYPES, **LINKS_ONLY_WRONG_TYPES}
        where += [(x, f"links[{k}]", links_fields) for k, x in enumerate(doc["links"]) if isinstance(x, dict)]
    if isinstance(doc.get("bottleneck"), dict):
        if draw(st.booleans()):
            doc["topology"] = {"kind": "dumbbell", **doc.pop("bottleneck")}
            where.append((doc["topology"], "topology", LINK_WRONG_TYPES))
        else:
            where.append((doc["bottleneck"], "bottleneck", LINK_WRONG_TYPES))
    if not where:
        return None
    table, at, fields = draw(st.sampled_from(where))
    field_ = draw(st.sampled_from(sorted(fields)))
    table[field_] = draw(st.sampled_from(fields[field_]))
    return doc, Expect("refused", f"{at}.{field_}")


def _link_of(doc: dict[str, Any]) -> tuple[tuple[Segment, ...], dict[str, Any]] | None:
    """The path and table of ``doc``'s first link that is not trace-driven."""
    if isinstance(doc.get("bottleneck"), dict) and "trace" not in doc["bottleneck"]:
        return ("bottleneck",), doc["bottleneck"]
    for k, x in enumerate(doc.get("links") or []):
        if isinstance(x, dict) and "trace" not in x:
            return ("links", k), x
    return None


#: Values no run can mean anything with, refused naming the field (the
#: first path) since issue 39; ``LINK`` stands for a link's path, ``-``
#: for ``[[links]]`` only (the dumbbell's link has no loss of its own).
REFUSED: list[list[tuple[tuple[Segment, ...], Any]]] = [
    [(("path", "loss"), "100%")],
    [(("path", "ack_loss"), 1)],
    [(("flows", 0, "loss"), {"model": "gilbert_elliott", "p": "1%", "k": 0, "h": 0})],
    [(("flows", 0, "ack_loss"), "99.999999999999%")],
    [(("-", "loss"), "100%")],
    [(("LINK", "buffer"), "1e30BDP")],
    [(("LINK", "buffer"), "1e30pkt")],
    [(("LINK", "burst"), "1e30pkt")],
    [(("flows", 0, "rwnd"), "1e30pkt")],
    [(("LINK", "rate_schedule"), [["10ms", "5Mbps"], ["10ms", "7Mbps"]])],
    [(("flows", 0, "rtt_schedule"), [["10ms", "5ms"], ["10ms", "7ms"]])],
]
#: Values a run takes but that make it mean less than it seems: warned
#: about, naming the field (the first path).
WARNED: list[list[tuple[tuple[Segment, ...], Any]]] = [
    [(("flows", 0, "loss"), {"model": "gilbert_elliott", "p": "1%", "r": 0})],
    [
        (("LINK", "rate"), "1bps"),
        (("LINK", "burst"), "1pkt"),
        (("LINK", "buffer"), "1pkt"),
        (("LINK", "rate_schedule"), []),
    ],
    [(("LINK", "policer"), {"rate": "1bps"})],
    [(("flows", 0, "access_rate"), "1bps")],
    [(("flows", 0, "pacing"), {"max_rate": "1bps"})],
    [(("LINK", "bdp_rtt"), "0ms"), (("LINK", "buffer"), "1BDP")],
    [(("LINK", "buffer"), "0.000001BDP")],
    [(("sample", "interval"), "1000s")],
    [(("flows", 0, "jitter"), {"model": "per_packet", "max": "1000s"})],
    [(("flows", 0, "ack_jitter"), {"model": "periodic", "max": "1000s"})],
    [(("-", "jitter"), {"model": "slotted", "max": "1000s"})],
]


@st.composite
def meaningless(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[dict[str, Any], Expect] | None:
    """``doc`` with one value no run can mean anything with (refused) or
    one that makes it mean less than it seems (warned about), as the audit
    of issue 39 found 45 of them accepted without a word. None when ``doc``
    has no place for the value drawn."""
    from ccarena.keys import format_path

    doc = copy.deepcopy(doc)
    link = _link_of(doc)
    kinds = {"LINK"} if link is None or link[0][0] != "links" else {"LINK", "-"}
    if link is None:
        kinds = set()

    def fits(patch: list[tuple[tuple[Segment, ...], Any]]) -> bool:
        return all(p[0] in kinds or p[0] not in ("LINK", "-") for p, _ in patch)

    outcome = draw(st.sampled_from(["refused", "warned"]))
    patch = draw(st.sampled_from([x for x in (REFUSED if outcome == "refused" else WARNED) if fits(x)]))
    first = ""
    for path, value in patch:
        if path[0] in ("LINK", "-"):
            assert link is not None
            path = (*link[0], *path[1:])
        node: Any = doc
        for seg in path[:-1]:
            if isinstance(seg, int):
                ok = isinstance(node, list) and len(node) > seg
            else:
                ok = isinstance(node, dict) and isinstance(node.setdefault(seg, {}), dict | list)
            if not ok:
                return None
            node = node[seg]
        if not isinstance(node, dict):
            return None
        node[path[-1]] = copy.deepcopy(value)
        first = first or format_path(path)
    return doc, Expect(outcome, first)


def expected(o: Outcome, case: Case, source: str) -> Outcome:
    """Add to ``o.failures`` where ``o`` (a command's outcome) breaks what
    ``case.expect`` says."""
    e = case.expect
    if e is None or o.failures:
        return o
    path = o.error.path if o.status == 2 and o.error is not None else None

    def names(p: str | None) -> bool:
        return p is not None and (p == e.field or p.startswith((e.field + ".", e.field + "[")))

    warned = [w.split(": ", 2)[1] for w in leading_warnings(o.stderr, source, o.status == 2)[0]]
    early = "(a dotted key of " in o.stderr  # keys.loads_toml's refusal before tomllib
    if e.outcome == "refused" and o.status != 2:
        o.failures.append(f"accepted, not refused at {e.field or 'the file'}")
    elif e.outcome == "refused" and e.field and not names(path):
        o.failures.append(f"refused at {path}, not at {e.field}")
    elif e.outcome == "refused" and not e.field and not early:
        o.failures.append("a long dotted key not refused before it was parsed")
    elif e.outcome == "read" and early:
        o.failures.append("refused as a long dotted key, which it has not")
    elif e.outcome == "warned" and o.status == 2 and names(path):
        o.failures.append(f"refused at {path}, only to be warned about")
    elif e.outcome == "warned" and o.status == 0 and not any(names(w) for w in warned):
        o.failures.append(f"no warning at {e.field}")
    return o


#: The kinds of case, as often as they are drawn.
KINDS = [
    *("doc", "doc", "doc", "text", "text", "set", "sweep", "sweep", "expect", "expect", "mixed"),
    *("long key", "link type", "meaningless", "meaningless"),
]


def cases(seed_list: list[Seed]) -> st.SearchStrategy[Case]:
    """Every kind of hostile input, from the seeds."""

    @st.composite
    def one(draw: st.DrawFn) -> Case:
        s = draw(st.sampled_from(seed_list))
        kind = draw(st.sampled_from(KINDS))
        filename = draw(st.sampled_from(FILE_NAMES)) if draw(st.integers(0, 19)) == 0 else "s.toml"
        if kind == "long key":
            data, expect = draw(long_keys(s.text if draw(st.booleans()) else dumps(s.doc)))
            return _case(s, kind, data=data, filename=filename, expect=expect)
        if kind in ("link type", "meaningless"):
            made = draw(wrong_link_types(s.doc) if kind == "link type" else meaningless(s.doc))
            if made is not None:
                return _case(s, kind, made[0], filename=filename, expect=made[1])
            kind = "doc"
        if kind == "doc":
            return _case(s, kind, draw(mutated(s.doc)), filename=filename)
        if kind == "text":
            base = s.text if draw(st.booleans()) else dumps(draw(mutated(s.doc)))
            return _case(s, kind, data=draw(corrupted(base)), filename=filename)
        if kind == "set":
            return _case(s, kind, s.doc, sets=draw(overrides(s.doc)), filename=filename)
        if kind == "sweep":
            return _case(s, kind, draw(sweeps(s.doc)), filename=filename)
        if kind == "expect":
            return _case(s, kind, draw(expectations(s.doc)), filename=filename)
        doc = draw(mutated(draw(expectations(draw(sweeps(s.doc))))))
        return _case(s, kind, doc, sets=draw(overrides(doc)), filename=filename)

    return one()


# --------------------------------------------------------------------------- the oracle


@dataclass
class Outcome:
    """What one command did with one case."""

    command: str
    status: int | None
    stdout: str
    stderr: str
    seconds: float
    error: Any = None  # the ScenarioError the command raised, if any
    crash: str = ""  # a traceback that escaped main
    failures: list[str] = field(default_factory=list)  # kinds of failure


class _Timeout(BaseException):
    """Raised in this process by SIGALRM when a case runs too long."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


@contextlib.contextmanager
def spying() -> Iterator[list[Any]]:
    """Record the ``ScenarioError`` each command raises (``cli.main`` prints
    it as one line; the oracle also wants its field path)."""
    from ccarena import cli
    from ccarena.scenario import ScenarioError

    seen: list[Any] = []
    names = ("_cmd_validate", "_cmd_run", "_cmd_sweep")
    saved = {n: getattr(cli, n) for n in names}

    def spy(fn: Callable[..., int]) -> Callable[..., int]:
        def wrapped(*a: Any) -> int:
            try:
                return fn(*a)
            except ScenarioError as e:
                seen.append(e)
                raise

        return wrapped

    for n in names:
        setattr(cli, n, spy(saved[n]))
    try:
        yield seen
    finally:
        for n, fn in saved.items():
            setattr(cli, n, fn)


def call(argv: list[str], seen: list[Any], timeout: float = TIMEOUT_S) -> Outcome:
    """``cli.main(argv)`` in this process, its output captured."""
    from ccarena import cli

    out, err = io.StringIO(), io.StringIO()
    del seen[:]
    crash = ""
    status: int | None = None
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    t0 = time.perf_counter()
    failures = []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
    except SystemExit as e:  # argparse
        status = e.code if isinstance(e.code, int) else 2
    except _Timeout:
        failures.append("hang")
    except MemoryError:
        failures.append("memory")
    except BaseException:
        import traceback

        crash = traceback.format_exc()
        failures.append("traceback")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    seconds = time.perf_counter() - t0
    error = seen[-1] if seen else None
    return Outcome(argv[0], status, out.getvalue(), err.getvalue(), seconds, error, crash, failures)


def leading_warnings(stderr: str, source: str, keep_last: bool) -> tuple[list[str], str]:
    """The scenario's warnings a command printed before it ran (one line
    each, ``FILE: FIELD: warning: ...``) and the rest of ``stderr``; with
    ``keep_last`` the last line is never a warning (a rejection's line)."""
    lines = stderr.splitlines(keepends=True)
    n = 0
    while n < len(lines) - keep_last and _is_warning(lines[n], source):
        n += 1
    return lines[:n], "".join(lines[n:])


def _is_warning(line: str, source: str) -> bool:
    one_line = line.endswith("\n") and "\r" not in line
    return one_line and line.startswith(f"{source}: ") and ": warning: " in line


def judge(o: Outcome, source: str, out_dir: Path | None = None) -> Outcome:
    """Add to ``o.failures`` what breaks the rules (module docstring)."""
    f = o.failures
    if (o.crash or "Traceback (most recent call last)" in o.stderr) and "traceback" not in f:
        f.append("traceback")
    if o.status not in (0, 2) and not (o.status == 1 and o.command in ("run", "sweep")) and not f:
        f.append(f"exit {o.status}")
    warned, rest = leading_warnings(o.stderr, source, keep_last=o.status == 2)
    if any(len(w.strip()) - len(source) > MAX_LINE for w in warned):
        f.append("long line")
    if o.status == 2:
        line = rest.strip()
        if not line:
            f.append("no message")
        elif rest.count("\n") != 1 or not rest.endswith("\n") or "\r" in rest:
            f.append("not one line")
        elif not line.startswith(f"{source}: "):
            f.append("file not named")
        elif o.error is None or not (o.error.path or o.error.message.startswith(WHOLE_FILE)):
            f.append("field not named")
        elif len(line) - len(source) > MAX_LINE:
            f.append("long line")
        if o.stdout:
            f.append("stdout on rejection")
        if out_dir is not None and out_dir.exists():
            f.append("wrote on rejection")
    elif o.status == 0 and o.command == "validate" and rest:
        f.append("stderr on success")
    if o.seconds > TIMEOUT_S and "hang" not in f:
        f.append("hang")
    return o


def _write_case(case: Case, directory: Path) -> Path:
    path = directory / case.filename
    with open(os.fsencode(path), "wb") as fh:
        fh.write(case.data)
    return path


def _cheap(path: Path, sets: tuple[str, ...]) -> tuple[bool, bool]:
    """(cheap to run, has a sweep): at most 8 points, under a second together."""
    from ccarena.cost import estimate
    from ccarena.scenario import Scenario
    from ccarena.sweep import expand

    scn = Scenario.load(path, list(sets))
    points = [p.scenario for p in expand(scn)] if scn.sweep else [scn]
    wall = sum(estimate(p).wall_s for p in points) + estimate(scn).wall_s
    return len(points) <= 8 and wall < 1.0, bool(scn.sweep)


def _base_cheap(path: Path, sets: tuple[str, ...]) -> bool:
    """Whether ``run`` of a case ``validate`` rejected ends quickly: it is
    refused too, or its base scenario (``run`` runs no sweep point, and a
    case may be refused for its sweep alone: 41 points of 50,000 flows) is
    cheap, per-flow costs included and sample rows bounded (one such run
    was estimated at 4.2 s, ``Cost.run_s``, and took 22 s)."""
    from ccarena.cost import check, estimate
    from ccarena.scenario import Scenario, ScenarioError

    try:
        scn = Scenario.load(path, list(sets))
        check(scn)  # run refuses it before it simulates
    except ScenarioError:
        return True
    cost = estimate(scn)
    return cost.run_s < 1.0 and cost.sample_rows < 1e6


def check_case(case: Case, workdir: Path, seen: list[Any], also_run: bool = False) -> list[Outcome]:
    """Validate ``case`` (and, with ``also_run``, run or sweep it into an
    ``--out`` directory when it was rejected or is cheap); the judged
    outcomes."""
    d = Path(tempfile.mkdtemp(dir=workdir))
    try:
        path = _write_case(case, d)
        sets = [f"--set={s}" for s in case.sets]
        before = peak_mb()
        o = expected(judge(call(["validate", str(path), *sets], seen), str(path)), case, str(path))
        if peak_mb() - before > MEMORY_GROWTH_MB:
            o.failures.append("memory")
        outcomes = [o]
        if also_run and not o.failures:
            commands = ["run", "sweep"] if _base_cheap(path, case.sets) else ["sweep"]
            if o.status == 0:
                try:
                    cheap, swept = _cheap(path, case.sets)
                except Exception:  # validate said yes
                    cheap, swept = False, False
                commands = (["sweep"] if swept else ["run"]) if cheap else []
            for command in commands:
                out = d / f"out-{command}"
                extra = (
                    ["--backend", "sim", "--no-figure"]
                    if command == "run"
                    else ["--jobs", "1", "--no-progress"]
                )
                r = judge(call([command, str(path), *sets, "--out", str(out), *extra], seen), str(path), out)
                if r.status == 2:
                    expected(r, case, str(path))
                if r.status in (0, 1) and not out.exists() and not r.failures:
                    r.failures.append("accepted but wrote nothing")
                outcomes.append(r)
        return outcomes
    finally:
        _rmtree(d)


def _rmtree(d: Path) -> None:
    import shutil

    shutil.rmtree(os.fsencode(d), ignore_errors=True)


def subprocess_check(case: Case, workdir: Path, timeout: float = 60.0) -> Outcome:
    """``python -m ccarena validate`` as a real process (bytes argv, so a
    file name that is not UTF-8 stays so), limited to 4 GiB."""
    d = Path(tempfile.mkdtemp(dir=workdir))
    try:
        path = _write_case(case, d)
        argv = [sys.executable, "-m", "ccarena", "validate", os.fsencode(path)]
        argv += [os.fsencode(f"--set={s}") for s in case.sets]

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

        t0 = time.perf_counter()
        try:
            # stdout strict UTF-8, as under a UTF-8 locale other than C
            env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
            p = subprocess.run(argv, capture_output=True, timeout=timeout, preexec_fn=limit, cwd=d, env=env)
        except subprocess.TimeoutExpired:
            return Outcome("validate", None, "", "", timeout, failures=["hang"])
        o = Outcome(
            "validate",
            p.returncode,
            p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "backslashreplace"),
            time.perf_counter() - t0,
        )
        # no ScenarioError to look at: the line names the file and more than that
        source = str(path).encode("utf-8", "backslashreplace").decode()
        line = leading_warnings(o.stderr, source, keep_last=True)[1].strip()
        o.error = _ParsedError(line) if p.returncode == 2 else None
        return judge(o, source, None)
    finally:
        _rmtree(d)


#: A run that draws its figure: what the kill trial interrupts.
KILL_SCENARIO = """name = "kill-trial"
duration = "2s"
[bottleneck]
rate = "20Mbps"
[[flows]]
cc = "cubic"
rtt = "20ms"
count = 2
"""


def kill_trial(workdir: Path, timeout: float = 120.0) -> list[str]:
    """A run killed by SIGKILL while it draws its figure (every table is in
    its temporary directory, the manifest is not), then the next run into
    the same folder: the killed run must leave no directory, and once the
    next one is made no ``.NAME.tmp-*`` may remain beside them (the store
    removes a dead writer's temporaries, ``store.clean_stale_tmp``). The
    failures, by kind ("missed": the run ended before it was caught)."""
    from ccarena.store import MANIFEST_FILE, TABLES

    d = Path(tempfile.mkdtemp(dir=workdir))
    try:
        scenario = d / "s.toml"
        scenario.write_text(KILL_SCENARIO)
        runs = d / "runs"
        command = [sys.executable, "-m", "ccarena", "run", str(scenario), "--out"]
        p = subprocess.Popen([*command, str(runs / "a")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        killed = False
        while p.poll() is None and time.monotonic() < deadline and not killed:
            for tmp in runs.glob(".a.tmp-*") if runs.is_dir() else ():
                tables = all((tmp / f"{t}.parquet").is_file() for t in TABLES)
                if tables and not (tmp / MANIFEST_FILE).exists():
                    p.send_signal(signal.SIGKILL)
                    killed = True
                    break
            time.sleep(0.001)
        if p.poll() is None and not killed:
            p.kill()
            p.wait()
            return ["hang"]
        p.wait()
        if not killed:
            return ["missed"]
        failures = []
        if (runs / "a").exists():
            failures.append("killed run left its directory")
        if not list(runs.glob(".a.tmp-*")):
            failures.append("killed run left nothing to clean (not killed in its figure stage)")
        nxt = subprocess.run([*command, str(runs / "b"), "--no-figure"], capture_output=True, timeout=timeout)
        if nxt.returncode != 0:
            failures.append(f"next run exit {nxt.returncode}: {nxt.stderr.decode(errors='replace')[-500:]}")
        left = sorted(x.name for x in runs.iterdir() if ".tmp-" in x.name)
        if left:
            failures.append(f"temporary left after the next run: {', '.join(left)}")
        return failures
    finally:
        _rmtree(d)


class _ParsedError:
    """The parts of a rejection line from another process."""

    def __init__(self, line: str):
        rest = line.split(": ", 1)[1] if ": " in line else ""
        self.message = rest
        self.path = rest if rest and not rest.startswith(WHOLE_FILE) else ""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def can_run_in_subprocess(case: Case) -> bool:
    return not any("\x00" in s for s in case.sets)


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class CorpusEntry:
    """A kept input: ``tests/fuzz_corpus/<name>.toml``. A first line
    ``#! {json}`` gives the ``--set`` overrides (``"set"``), the file name
    (``"filename"``), the commands (``"commands"``, default validate), the
    exit status they must give (``"status"``, default 2), and the field the
    rejection must name (``"field"``) or a warning must (``"warns"``)."""

    name: str
    case: Case
    commands: tuple[str, ...]
    status: int


def corpus(directory: Path = CORPUS) -> list[CorpusEntry]:
    out = []
    for p in sorted(directory.glob("*.toml")):
        data = p.read_bytes()
        meta: dict[str, Any] = {}
        if data.startswith(b"#! "):
            meta = json.loads(data.split(b"\n", 1)[0][3:])
        expect = None
        if "field" in meta:  # the field the rejection must name
            expect = Expect("refused", meta["field"])
        elif "warns" in meta:  # the field a warning must name
            expect = Expect("warned", meta["warns"])
        origin = f"corpus:{p.name}"
        case = Case(data, tuple(meta.get("set", ())), meta.get("filename", "s.toml"), origin, expect)
        out.append(
            CorpusEntry(p.stem, case, tuple(meta.get("commands", ["validate"])), meta.get("status", 2))
        )
    return out


def replay(entry: CorpusEntry, workdir: Path, seen: list[Any]) -> list[Outcome]:
    """Each command of a corpus entry, judged; a wrong exit status is a failure too."""
    d = Path(tempfile.mkdtemp(dir=workdir))
    try:
        path = _write_case(entry.case, d)
        sets = [f"--set={s}" for s in entry.case.sets]
        outcomes = []
        for command in entry.commands:
            out = d / "out"
            extra = {"run": ["--backend", "sim", "--no-figure"], "sweep": ["--jobs", "1", "--no-progress"]}
            argv = [command, str(path), *sets]
            if command != "validate":
                argv += ["--out", str(out), *extra[command]]
            o = judge(call(argv, seen), str(path), out if command != "validate" else None)
            if o.status != entry.status and not o.failures:
                o.failures.append(f"exit {o.status}, not {entry.status}")
            expected(o, entry.case, str(path))
            outcomes.append(o)
            _rmtree(out)
        return outcomes
    finally:
        _rmtree(d)


# --------------------------------------------------------------------------- the driver


def fuzz(
    n: int,
    seed: int,
    keep: Path | None = None,
    run_every: int = 25,
    subprocess_every: int = 250,
    echo: Callable[[str], None] = print,
) -> Counter:
    """Run ``n`` cases; a Counter of outcomes (``rejected``, ``accepted``,
    ``failure: <kind>``) and of the samples run."""
    seed_list = seeds()
    counts: Counter = Counter()
    bad_seeds = [s.name for s in seed_list if not _valid(s.doc, s.name)]
    if bad_seeds:
        counts["failure: seed refused"] += len(bad_seeds)
        echo(f"seeds refused: {', '.join(bad_seeds)}")
    worst = {"seconds": 0.0, "line": 0}
    slowest = [""]
    with tempfile.TemporaryDirectory(prefix="ccarena-fuzz-") as tmp, spying() as seen:
        workdir = Path(tmp)
        i = 0

        @settings(
            max_examples=n,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @hypothesis_seed(seed)
        @given(cases(seed_list))
        def body(case: Case) -> None:
            nonlocal i
            i += 1
            outcomes = check_case(case, workdir, seen, also_run=i % run_every == 0)
            if (i % subprocess_every == 0 or "\udcff" in case.filename) and can_run_in_subprocess(case):
                outcomes.append(subprocess_check(case, workdir))
                counts["subprocess runs"] += 1
            for o in outcomes[1:]:
                counts[f"{o.command} runs"] += 1
            v = outcomes[0]
            counts["cases"] += 1
            if not any(o.failures for o in outcomes):
                counts["accepted" if v.status == 0 else "rejected cleanly"] += 1
            for o in outcomes:
                if o.seconds > worst["seconds"]:
                    worst["seconds"], slowest[0] = o.seconds, f"{o.command} of {case.origin}"
            if v.status == 2:
                worst["line"] = max(worst["line"], len(v.stderr.strip()))
            for o in outcomes:
                for kind in o.failures:
                    counts[f"failure: {kind}"] += 1
                    echo(
                        f"FAIL {kind} ({o.command}, {case.origin}, sets={list(case.sets)}): "
                        f"{(o.crash or o.stderr)[-2000:]!s}"
                    )
                    if keep is not None:
                        keep.mkdir(parents=True, exist_ok=True)
                        name = f"{kind.replace(' ', '-')}-{counts['cases']}"
                        (keep / f"{name}.toml").write_bytes(case.data)
                        (keep / f"{name}.json").write_text(
                            json.dumps(
                                {
                                    "set": list(case.sets),
                                    "filename": case.filename,
                                    "command": o.command,
                                    "origin": case.origin,
                                    "stderr": o.stderr,
                                    "crash": o.crash,
                                }
                            )
                        )
            if i % 1000 == 0:
                echo(f"... {i} cases")

        body()
    counts["slowest case ms"] = round(worst["seconds"] * 1000)
    echo(f"slowest: {slowest[0]} ({worst['seconds']:.1f} s)")
    counts["longest rejection line"] = worst["line"]
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=10_000, help="mutants to try (default 10,000)")
    p.add_argument("--seed", type=int, default=1, help="Hypothesis seed (default 1)")
    p.add_argument("--keep", type=Path, help="write each failing input here")
    p.add_argument("--memory-mb", type=int, default=6144, help="address-space limit of this process")
    p.add_argument("--run-every", type=int, default=25, help="also run/sweep every N-th case (default 25)")
    p.add_argument("--subprocess-every", type=int, default=250, help="also a real process every N-th case")
    p.add_argument(
        "--kill-trials",
        type=int,
        default=3,
        help="runs killed (SIGKILL) in their figure stage, each followed by another run (default 3)",
    )
    args = p.parse_args(argv)
    limit = args.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    t0 = time.perf_counter()
    counts = fuzz(args.cases, args.seed, args.keep, args.run_every, args.subprocess_every)
    wall = time.perf_counter() - t0
    corpus_failures = 0
    with tempfile.TemporaryDirectory(prefix="ccarena-corpus-") as tmp, spying() as seen:
        entries = corpus()
        for entry in entries:
            for o in replay(entry, Path(tmp), seen):
                for kind in o.failures:
                    corpus_failures += 1
                    print(f"FAIL corpus {entry.name} ({o.command}): {kind}: {o.stderr.strip() or o.crash}")
    with tempfile.TemporaryDirectory(prefix="ccarena-kill-") as tmp:
        for _ in range(args.kill_trials):
            for kind in kill_trial(Path(tmp)):
                if kind == "missed":  # the run ended before it was caught drawing
                    counts["kill trials missed"] += 1
                else:
                    counts[f"failure: kill trial: {kind}"] += 1
                    print(f"FAIL kill trial: {kind}")
    failures = {k: v for k, v in counts.items() if k.startswith("failure: ")}
    rows = [
        ("cases", counts["cases"]),
        ("rejected cleanly (exit 2, one line naming the field)", counts["rejected cleanly"]),
        ("accepted (validate exit 0)", counts["accepted"]),
        ("run/sweep samples (--out)", counts["run runs"] + counts["sweep runs"]),
        ("subprocess samples", counts["subprocess runs"]),
        ("slowest case (ms)", counts["slowest case ms"]),
        ("longest rejection line (chars)", counts["longest rejection line"]),
        ("failures", sum(failures.values())),
        *((f"  {k}", v) for k, v in sorted(failures.items())),
        (f"corpus replayed ({len(entries)} inputs), failures", corpus_failures),
        (f"kill trials ({args.kill_trials}), missed the figure stage", counts["kill trials missed"]),
        ("wall time (s)", f"{wall:.1f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"ccarena CLI fuzz, seed {args.seed}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>8}")
    return 1 if failures or corpus_failures else 0


if __name__ == "__main__":
    sys.exit(main())
