"""Scenario files: TOML loading, ``--set key.path=value`` overrides, validation
through the Rust core, and the content hash that names a run.

The schema itself is owned by Rust (``ccarena_sim::scenario``): Python only
loads the document, applies overrides, and hands it to ``_core.normalize``,
so a bad field gets the same message wherever it is used.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .controller import load_class
from .keys import (
    MAX_DEPTH,
    TOO_DEEP,
    Override,
    ScenarioError,
    ScenarioWarning,
    Segment,
    apply_override,
    format_path,
    keyword_override,
    kind_of,
    loads_toml,
    parse_key,
    parse_override,
    parse_value,
)
from .sections import parse_expectations, parse_sweep
from .traces import TraceError, resolve

__all__ = [
    "BACKENDS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NAME_BYTES",
    "PY_ONLY_KEYS",
    "Override",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "apply_override",
    "format_path",
    "keyword_override",
    "load",
    "parse_key",
    "parse_override",
    "parse_value",
    "read_toml",
]

#: Where a scenario can run: the simulator, or real Linux TCP in namespaces.
BACKENDS = ("sim", "linux")

#: Limits on what a scenario may be (issue 10, hostile input); the message
#: refusing each states it. A name names the results directory.
MAX_FILE_BYTES = 1 << 20
MAX_NAME_BYTES = 100
_INT_RANGE = range(-(2**63), 2**64)


# --------------------------------------------------------------------------- scenarios


def _check_controllers(normalized: dict[str, Any], source: str, ovs: Any) -> None:
    """A Python controller's class must import now (one line naming the
    field), not fail inside the run."""
    for f in normalized.get("flows", []):
        if f.get("cc") != "python":
            continue
        spec = (f.get("cc_params") or {}).get("class", "")
        where = f"flows[{f.get('group', 0)}].cc_params.class"
        try:
            load_class(spec)
        except Exception as e:  # the user's module: any error it raises on import
            blamed = _blame(where, ovs)
            raise ScenarioError(
                source, where, f"{spec!r}: {type(e).__name__}: {e}", blamed.origin if blamed else None
            ) from None


def _blame(error_path: str, overrides: Iterable[Override]) -> Override | None:
    """The last override that set the field the core complained about (or a
    field inside it, or the table around it)."""

    def within(a: str, b: str) -> bool:  # a is b or lies inside b
        return a == b or a.startswith(b + ".") or a.startswith(b + "[")

    found = None
    for ov in overrides:
        f = ov.field
        if error_path and (within(error_path, f) or within(f, error_path)):
            found = ov
    return found


#: Top-level tables that Python owns and strips before the core sees the
#: scenario: ``[sweep]`` (sweep.py) and ``[[expect]]`` (expect.py).
PY_ONLY_KEYS = ("sweep", "expect")

_JSON_POSITION = re.compile(r" at line \d+ column \d+$")


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class Scenario:
    """A validated, normalized scenario.

    ``raw`` is the document after overrides; ``normalized`` the core's
    normalized form (units resolved, flows expanded); ``hash`` the sha256 of
    its canonical JSON, which names the run directory. ``sweep`` and
    ``expect`` are the Python-side tables ``[sweep]`` and ``[[expect]]`` as
    written (``None`` when absent); they are not part of ``raw`` and do not
    change the hash. ``warnings``: the values the core accepted that make the
    run mean less than it seems (``ScenarioWarning``, one line each), which
    the command line prints before it runs; they change nothing.
    """

    source: str
    raw: dict[str, Any]
    normalized: dict[str, Any]
    core_json: str = field(repr=False)
    hash: str
    sweep: dict[str, Any] | None = field(default=None, compare=False)
    expect: list[Any] | None = field(default=None, compare=False)
    #: ``backend = "sim" | "linux"`` as the file says (None when it does not);
    #: kept in ``raw`` but not part of the normalized scenario or its hash.
    backend: str | None = None
    warnings: tuple[ScenarioWarning, ...] = field(default=(), compare=False)

    @property
    def document(self) -> dict[str, Any]:
        """The scenario as written, with its ``[sweep]`` and ``[[expect]]`` (a copy)."""
        doc = json.loads(json.dumps(self.raw))
        if self.sweep is not None:
            doc["sweep"] = json.loads(json.dumps(self.sweep))
        if self.expect is not None:
            doc["expect"] = json.loads(json.dumps(self.expect))
        return doc

    @property
    def short_hash(self) -> str:
        return self.hash[:12]

    @property
    def name(self) -> str:
        return str(self.normalized.get("name") or self.raw.get("name") or "scenario")

    @classmethod
    def load(cls, path: str | Path, overrides: Iterable[Override | str] = ()) -> Scenario:
        """Read a TOML file, apply overrides (``Override`` or ``--set`` text) and normalize."""
        doc = read_toml(path)
        # an unnamed scenario is named after its file, cut to the longest name
        doc.setdefault(
            "name", Path(path).stem.encode(errors="replace")[:MAX_NAME_BYTES].decode(errors="ignore")
        )  # a file name that is not UTF-8 has "?" for its bad bytes
        return cls.from_dict(doc, source=str(path), overrides=overrides)

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], source: str = "<dict>", overrides: Iterable[Override | str] = ()
    ) -> Scenario:
        """Validate a scenario given as a dict (as ``tomllib`` would load it)."""
        from . import _core

        _check_values(doc, source)
        raw = json.loads(json.dumps(doc, default=str))  # deep copy; TOML dates become strings
        ovs: list[Override] = []
        for o in overrides:
            if isinstance(o, str):
                try:
                    o = parse_override(o)
                except ValueError as e:
                    raise ScenarioError(source, f"--set {o}", str(e)) from None
            ovs.append(o)
            _check_values(o.value, source, o.path, o.origin)
            try:
                apply_override(raw, o)
            except ValueError as e:
                raise ScenarioError(source, o.field, str(e), o.origin) from None
        extras = {k: raw.pop(k) for k in PY_ONLY_KEYS if k in raw}
        sweep = extras.get("sweep")
        if sweep is not None and not isinstance(sweep, dict):
            raise ScenarioError(source, "sweep", f"must be a table, not {kind_of(sweep)}")
        expect = extras.get("expect")
        if isinstance(expect, dict):  # a single [expect] table
            expect = [expect]
        if expect is not None and not (isinstance(expect, list) and all(isinstance(e, dict) for e in expect)):
            raise ScenarioError(source, "expect", "must be an array of tables: [[expect]] metric = ...")
        parse_sweep(sweep, source)  # raise now, naming the field, not when the sweep starts
        parse_expectations(expect, source)
        backend = raw.get("backend")
        if backend is not None and backend not in BACKENDS:
            blamed = _blame("backend", ovs)
            raise ScenarioError(
                source,
                "backend",
                f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}",
                blamed.origin if blamed else None,
            )
        core_doc = {k: v for k, v in raw.items() if k != "backend"}
        _read_traces(core_doc, source, ovs)
        _read_profile(core_doc, source, ovs)
        try:
            core_json, core_warnings = _core.normalize(json.dumps(core_doc))
        except _core.ScenarioError as e:
            path = e.path
            if not path and "" in core_doc:  # a top-level key "": the core's path is empty
                path = '""'
            blamed = _blame(path, ovs)
            # serde_json appends a position in the JSON we built, which means
            # nothing to someone reading a TOML file.
            message = _JSON_POSITION.sub("", e.message)
            raise ScenarioError(source, path, message, blamed.origin if blamed else None) from None
        normalized = json.loads(core_json)
        size = len(normalized["name"].encode())
        if size > MAX_NAME_BYTES:
            blamed = _blame("name", ovs)
            raise ScenarioError(
                source,
                "name",
                f"{size} bytes long: a name names the results directory, so it is at most "
                f"{MAX_NAME_BYTES} bytes (UTF-8)",
                blamed.origin if blamed else None,
            )
        _check_controllers(normalized, source, ovs)
        warnings = []
        for path, message in core_warnings:
            blamed = _blame(path, ovs)
            warnings.append(ScenarioWarning(source, path, message, blamed.origin if blamed else None))
        digest = hashlib.sha256(_canonical(normalized).encode()).hexdigest()
        return cls(
            source=source,
            raw=raw,
            normalized=normalized,
            core_json=core_json,
            hash=digest,
            sweep=sweep,
            expect=expect,
            backend=backend,
            warnings=tuple(warnings),
        )


def _read_traces(doc: dict[str, Any], source: str, ovs: list[Override]) -> None:
    """Replace each link's ``trace = "FILE or shipped name"`` by the trace
    itself (``traces.resolve``), read relative to the scenario file's
    directory, so the core (which reads no files) gets its timestamps and
    the run's hash covers them."""
    src = Path(source)
    base = src.parent if src.is_file() else Path.cwd()
    # Copies: the scenario's raw form keeps the name as written (sweeps re-read it).
    tables: list[tuple[str, Any]] = []
    for key in ("bottleneck", "topology"):  # a topology's links share its fields
        if isinstance(doc.get(key), dict):
            doc[key] = dict(doc[key])
            tables.append((key, doc[key]))
    if isinstance(doc.get("links"), list):
        doc["links"] = [dict(x) if isinstance(x, dict) else x for x in doc["links"]]
        tables += [(f"links[{k}]", x) for k, x in enumerate(doc["links"])]
    for at, t in tables:
        if isinstance(t, dict) and isinstance(t.get("trace"), str):
            try:
                t["trace"] = resolve(t["trace"], base)
            except TraceError as e:
                field = f"{at}.trace"
                blamed = _blame(field, ovs)
                raise ScenarioError(source, field, str(e), blamed.origin if blamed else None) from None


def _read_profile(doc: dict[str, Any], source: str, ovs: list[Override]) -> None:
    """``[hosts] profile = "FILE or shipped name"``: the profile's turnaround
    table becomes ``[hosts] latency`` (``ccarena.profiles``), read relative
    to the scenario file's directory, so the run's hash covers the table."""
    hosts = doc.get("hosts")
    if not isinstance(hosts, dict) or "profile" not in hosts:
        return
    hosts = doc["hosts"] = dict(hosts)  # a copy: raw keeps the name as written
    name = hosts.pop("profile")
    field = "hosts.profile"
    blamed = _blame(field, ovs)

    def fail(message: str) -> ScenarioError:
        return ScenarioError(source, field, message, blamed.origin if blamed else None)

    if not isinstance(name, str):
        raise fail(f"expected a profile file or a shipped profile's name, not {kind_of(name)}")
    if "latency" in hosts:
        raise fail("give a profile or a latency table, not both (a profile is a latency table)")
    from .profiles import ProfileError, resolve

    src = Path(source)
    try:
        profile = resolve(name, src.parent if src.is_file() else Path.cwd())
    except ProfileError as e:
        raise fail(str(e)) from None
    hosts["latency"] = profile.latency()


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file as a dict; ``ScenarioError`` (one line) unless it is a
    regular UTF-8 file of at most ``MAX_FILE_BYTES`` whose values ccarena can
    take (``_check_values``)."""
    source = str(path)

    def refuse(message: str) -> ScenarioError:
        return ScenarioError(source, "", message)

    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise refuse("is a directory, not a scenario file")
        if not stat.S_ISREG(mode):
            raise refuse("is a device, pipe or socket, not a scenario file")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise refuse("no such file") from None
    except OSError as e:
        raise refuse(f"cannot read: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise refuse(f"larger than {MAX_FILE_BYTES >> 20} MiB, the most a scenario file may be")
    try:
        doc = loads_toml(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise refuse(f"cannot read: not UTF-8 ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise refuse(f"invalid TOML: {e}") from None
    except ValueError as e:  # nested too deep to parse
        raise refuse(str(e)) from None
    _check_values(doc, source)
    return doc


def _check_values(value: Any, source: str, at: tuple[Segment, ...] = (), override: str | None = None) -> None:
    """Refuse what no field takes and Python or the core would choke on: NaN
    and infinities, integers beyond 64 bits, nesting deeper than ``MAX_DEPTH``
    (also a cycle, in a dict from Python). ``at`` is where ``value`` sits in
    the scenario. Iterative, so a deep document cannot overflow the stack."""
    stack: list[tuple[tuple[Segment, ...], Any]] = [(at, value)]
    while stack:
        where, v = stack.pop()
        problem = None
        if isinstance(v, float) and not math.isfinite(v):
            problem = f"{v}: NaN and infinities are not allowed; expected a finite number"
        elif isinstance(v, int) and not isinstance(v, bool) and v not in _INT_RANGE:
            problem = "integer out of range: expected one that fits in 64 bits (-2^63 to 2^64-1)"
        elif isinstance(v, Mapping | list | tuple) and len(where) >= MAX_DEPTH:
            problem = TOO_DEEP
        elif isinstance(v, Mapping):
            stack.extend(((*where, str(k)), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, list | tuple):
            stack.extend(((*where, i), x) for i, x in reversed(list(enumerate(v))))
        if problem:
            raise ScenarioError(source, format_path(where), problem, override)


def load(path: str | Path, overrides: Iterable[Override | str] = ()) -> Scenario:
    """Shorthand for ``Scenario.load``."""
    return Scenario.load(path, overrides)
