"""Delivery-opportunity traces for trace-driven links, in Mahimahi's format.

A link with ``trace = "..."`` (in ``[bottleneck]`` or a ``[[links]]`` entry)
sends at the trace's delivery opportunities instead of a fixed rate
(docs/conditions.md, "Trace-driven links"). The value names a file, relative
to the scenario file's directory (or the current directory for a scenario
given as a dict), or else one of the traces shipped here (``shipped()``;
``scripts/gen_traces.py`` made them). The loader reads the file and hands
the core its timestamps, so a run's hash covers the trace's content.

The format (``mm-link``): one line per opportunity, the millisecond (a
non-negative integer) at which the link may deliver one 1504-byte packet;
lines never decrease; the last one, the trace's length, is above zero; the
schedule repeats from it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MAX_TRACE_BYTES", "MAX_TRACE_LINES", "TraceError", "read_trace", "resolve", "shipped"]

HERE = Path(__file__).resolve().parent
#: Largest trace file read (a minute of a 1 Gbit/s link is ~5 million lines).
MAX_TRACE_BYTES = 64 * 1024 * 1024
MAX_TRACE_LINES = 5_000_000


class TraceError(ValueError):
    """A trace that cannot be used; ``str(e)`` says where and why in one line."""


def shipped() -> list[str]:
    """The names of the traces that come with ccarena."""
    return sorted(p.stem for p in HERE.glob("*.trace"))


def read_trace(path: str | Path) -> list[int]:
    """The timestamps (ms) of a Mahimahi trace file, checked as mm-link
    checks them; ``TraceError`` names the line that is wrong."""
    p = Path(path)
    try:
        if not p.is_file():
            raise TraceError(f"{p}: not a regular file")
        if p.stat().st_size > MAX_TRACE_BYTES:
            raise TraceError(f"{p}: larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB")
        text = p.read_bytes()
    except OSError as e:
        raise TraceError(f"{p}: {e.strerror or e}") from None
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    if len(lines) > MAX_TRACE_LINES:
        raise TraceError(f"{p}: {len(lines)} lines, at most {MAX_TRACE_LINES:,}")
    out: list[int] = []
    for n, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s.isdigit():
            shown = s[:20].decode(errors="replace")
            raise TraceError(f"{p}: line {n}: {shown!r} is not a millisecond (a non-negative integer)")
        ms = int(s)
        if out and ms < out[-1]:
            raise TraceError(f"{p}: line {n}: {ms} after {out[-1]}: timestamps must not decrease")
        out.append(ms)
    if not out:
        raise TraceError(f"{p}: no timestamps")
    if out[-1] == 0:
        raise TraceError(f"{p}: the trace must last a nonzero time (its last timestamp is 0)")
    return out


def resolve(value: str, base: Path) -> dict[str, object]:
    """``trace = value`` as the core takes it: ``{"name", "ms"}`` read from
    the file ``value`` (relative to ``base``) or from the shipped trace of
    that name."""
    p = Path(value)
    if not p.is_absolute():
        p = base / p
    if p.exists():
        return {"name": Path(value).name, "ms": read_trace(p)}
    if value in shipped():
        return {"name": value, "ms": read_trace(HERE / f"{value}.trace")}
    raise TraceError(
        f"no file {value!r} (relative to {base}) and no shipped trace of that name "
        f"(shipped: {', '.join(shipped())})"
    )
