"""The grammar every part of ccarena shares for a scenario document: the
one-line ``ScenarioError``, dotted keys (``flows.0.rtt``), values as
``--set`` writes them, and overrides applied to the document.

It imports nothing of ccarena, so the scenario (``scenario.py``) and the
grammar of its Python-only sections (``sections.py``) build on it without
a circle.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "TOO_DEEP",
    "Override",
    "ScenarioError",
    "ScenarioWarning",
    "Segment",
    "apply_override",
    "clip",
    "format_path",
    "keyword_override",
    "kind_of",
    "loads_toml",
    "parse_key",
    "parse_override",
    "parse_value",
]

Segment = str | int

#: How deep tables and arrays may nest (issue 10, hostile input).
MAX_DEPTH = 32
TOO_DEEP = f"nested too deeply: tables and arrays go at most {MAX_DEPTH} levels deep"


class ScenarioError(ValueError):
    """A scenario cannot be used as given.

    ``str(e)`` is one line: ``"<source>: <field path>: <message>"``, with the
    override named when the bad field came from one. Attributes: ``source``
    (the file, or ``"<dict>"``), ``path`` (e.g. ``"flows[1].rtt"``; empty when
    the problem is the whole file), ``message`` and ``override`` (the override
    as the user wrote it, or ``None``).
    """

    def __init__(self, source: str, path: str, message: str, override: str | None = None):
        self.source = source
        self.path = path
        self.message = message
        self.override = override
        super().__init__(str(self))

    def __str__(self) -> str:
        return _line(self.source, self.path, self.message, self.override)


@dataclass(frozen=True)
class ScenarioWarning:
    """A value a run accepts but that makes it mean less than it seems (a
    link that carries less than one frame in the run, a sample interval
    longer than the run; the core's ``ScenarioWarning``). ``str(w)`` is one
    line, ``"<source>: <field path>: warning: <message>"``; the attributes
    are those of ``ScenarioError``."""

    source: str
    path: str
    message: str
    override: str | None = None

    def __str__(self) -> str:
        return _line(self.source, self.path, f"warning: {self.message}", self.override)


def _line(source: str, path: str, message: str, override: str | None) -> str:
    parts = [source]
    if path:
        parts.append(clip(path, 200))
    msg = clip(message, 600)
    if override:
        msg += f" (set by {clip(override, 200)})"
    parts.append(msg)
    return " ".join(": ".join(parts).split())  # one line, whatever the core or the user wrote


def clip(text: str, limit: int) -> str:
    """``text``, its middle cut when it is longer than ``limit`` (as the
    core cuts a long value it quotes): a 100 kB value makes a readable line.
    Never cut where the cut and its note would be no shorter than the text."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = f"{text[:half]} … ({len(text) - 2 * half} characters) … {text[-half:]}"
    return cut if len(cut) < len(text) else text


_KEY_PART = re.compile(r"^(?P<name>[^.\[\]]*)(?P<idx>(?:\[\d+\])*)$")


def parse_key(key: str) -> tuple[Segment, ...]:
    """Split a dotted key into segments: ``"flows.0.rtt"`` and ``"flows[0].rtt"``
    both give ``("flows", 0, "rtt")``. Raises ``ValueError`` on a malformed key."""
    if not key or key.strip() != key:
        raise ValueError(f"malformed key {key!r}")
    segments: list[Segment] = []
    for part in key.split("."):
        m = _KEY_PART.match(part)
        if m is None or (not m["name"] and not m["idx"]) or (not m["name"] and not segments):
            raise ValueError(f"malformed key {key!r}: use dotted names and indices, like flows.0.rtt")
        name = m["name"]
        if name:
            segments.append(int(name) if name.isdigit() else name)
        segments.extend(int(i) for i in re.findall(r"\[(\d+)\]", m["idx"]))
    return tuple(segments)


def format_path(segments: Iterable[Segment]) -> str:
    """The field path as the core writes it: ``("flows", 0, "rtt")`` -> ``"flows[0].rtt"``."""
    out = ""
    for s in segments:
        if isinstance(s, int):
            out += f"[{s}]"
        else:
            out += f".{s}" if out else (s or '""')  # a top-level key "" is named, not an empty path
    return out


def parse_value(text: str) -> Any:
    """A TOML value when ``text`` parses as one (``3``, ``true``, ``0.5``,
    ``"x"``, ``[1, 2]``, ``{max_rate = "8Mbps"}``), else the text as a string
    (so ``100Mbps`` and ``cubic`` need no quotes)."""
    try:
        return loads_toml(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


#: A run of digits longer than any int Python reads from text
#: (``sys.get_int_max_str_digits``, at least 640).
_LONG_DIGITS = re.compile(r"\d[\d_]{600,}")


#: A part of a dotted key: bare, or a basic or literal string on one line.
_PART = r"""(?:[A-Za-z0-9_-]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|'[^'\n]*+')"""

#: A document read up to a dotted key of more than ``MAX_DEPTH`` parts
#: (its first dot), or to its end: one match, in C. Strings and comments
#: are read whole, so dots in them are never a key's; outside them only a
#: key chains parts with dots (a float or a time has one at most), so a run
#: of dots is read whole when it is short enough, and the match stops at
#: the first dot of a longer one: at a line's start, in a ``[table]`` or
#: ``[[array]]`` header and in an inline table alike. Multi-line strings
#: come before one-line ones (their quotes open an empty string), and their
#: closing run of quotes may hold one or two of their own. Where the match
#: stops at anything else (an unterminated string), tomllib has the say.
_UP_TO_LONG_KEY = re.compile(
    r"(?:[^\"'#.]++"
    r'|"""(?:[^"\\]++|\\[\s\S]|"{1,2}+(?!"))*+"{3,5}+'
    r"|'''(?:[^']++|'{1,2}+(?!'))*+'{3,5}+"
    r'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
    r"|'[^'\n]*+'"
    r"|#[^\n]*+"
    rf"|\.[ \t]*+{_PART}(?:[ \t]*+\.[ \t]*+{_PART}){{0,{MAX_DEPTH - 2}}}+(?![ \t]*+\.[ \t]*+{_PART})"
    rf"|\.(?![ \t]*+{_PART})"
    r")*+"
)
_PARTS = re.compile(rf"[ \t]*+\.[ \t]*+{_PART}")


def _check_key_depth(text: str) -> None:
    """Refuse a dotted key of more than ``MAX_DEPTH`` parts before
    ``tomllib`` reads it: the tables it stands for would be too deep anyway
    (``scenario._check_values``), and tomllib takes time and memory
    quadratic in its parts to build them (issue 39: 50,000 parts in 100 kB
    took 40 s and 9.8 GB). A text of fewer dots than that has none; a
    1 MiB one takes 1-16 ms here where tomllib takes 5-2,000 (74 ms for a
    megabyte of dots, which tomllib refuses at once)."""
    if text.count(".") < MAX_DEPTH:
        return
    stop = _UP_TO_LONG_KEY.match(text)
    end = stop.end() if stop else 0
    if end < len(text) and text[end] == ".":
        line = text.count("\n", 0, end) + 1
        dots = 0
        while m := _PARTS.match(text, end):
            dots, end = dots + 1, m.end()
        raise ValueError(f"{TOO_DEEP} (a dotted key of {dots + 1:,} parts, line {line})")


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` without its crashes on hostile input: an integer too
    long for Python to read is read as 2**64 (which ``_check_values`` refuses,
    naming the field), and a document too deep for the parser's recursion,
    or with a dotted key of more than ``MAX_DEPTH`` parts, raises
    ``ValueError``."""
    _check_key_depth(text)
    try:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise
        except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
            return tomllib.loads(_LONG_DIGITS.sub(str(2**64), text))
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


@dataclass(frozen=True)
class Override:
    """One override: where, what, and how the user wrote it (for messages)."""

    path: tuple[Segment, ...]
    value: Any
    origin: str

    @property
    def field(self) -> str:
        return format_path(self.path)


def parse_override(text: str) -> Override:
    """Parse ``--set`` text ``KEY=VALUE``; raises ``ValueError`` if malformed."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ValueError("expected KEY=VALUE, e.g. --set flows.0.rtt=50ms")
    return Override(parse_key(key.strip()), parse_value(value.strip()), f"--set {text}")


def keyword_override(name: str, value: Any) -> Override:
    """A keyword-argument override of ``ccarena.run``: ``__`` stands for a dot
    (``bottleneck__rate="50Mbps"``, ``flows__0__rtt="10ms"``); the value is
    used as given, not parsed."""
    return Override(parse_key(name.replace("__", ".")), value, f"{name}={value!r}")


def kind_of(v: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list"}
    return names.get(type(v), f"a {type(v).__name__}")


def apply_override(doc: dict[str, Any], ov: Override) -> None:
    """Set ``ov.value`` at ``ov.path`` in ``doc`` (in place). Missing tables
    are created; list indices must exist. Raises ``ValueError`` naming the
    problem."""
    node: Any = doc
    for depth, seg in enumerate(ov.path):
        last = depth == len(ov.path) - 1
        here = format_path(ov.path[:depth]) or "the top level"
        if isinstance(seg, int):
            if not isinstance(node, list):
                raise ValueError(f"{here} is not a list, so it has no index [{seg}]")
            if seg >= len(node):
                n = len(node)
                raise ValueError(
                    f"index {seg} is out of range: {here} has {n} entr{'y' if n == 1 else 'ies'}"
                )
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{here} is {kind_of(node)}, not a table, so it has no field {seg!r}")
            if not last and seg not in node:
                if isinstance(ov.path[depth + 1], int):
                    raise ValueError(
                        f"{format_path(ov.path[: depth + 1])} is not set, so it cannot be indexed"
                    )
                node[seg] = {}
        if last:
            # a copy: a later override inside this value (``bottleneck`` then
            # ``bottleneck.buffer``) must not change the value the sweep records;
            # as JSON, like the document (a TOML date becomes a string)
            node[seg] = json.loads(json.dumps(ov.value, default=str))
        else:
            node = node[seg]
