"""Host profiles: how fast a machine's hosts answer, measured on it.

The simulator's hosts take a turnaround between a packet arriving and the
packet sent in answer (``[hosts] latency``, docs/model.md, "Host timing
noise"), drawn from a table of percentiles measured on a Linux machine by
the Linux backend's bottleneck. Machines differ (a median of 30 us on one,
74 us on another of the same kind), and a flow's share in a mixed-RTT cell
moves with them, so a table is a measurement of one machine: a *profile*.

A profile file (TOML) holds the table under ``[hosts]``, the way a scenario
writes it, and under ``[measured]`` where, when and how it was measured::

    [measured]
    utc = "2026-11-29T07:00:00Z"
    hostname = "..."; cpu_model = "..."; cpus = 2; kernel = "6.18.44"
    ccarena_commit = "..."
    method = "..."          # the scenario, runs and meter revision
    runs = 5; trustworthy_runs = 5
    sender_p50_us = [...]   # each run's median turnarounds, and its self-check
    receiver_p50_us = [...]
    lateness_p99_us = [...]

    [hosts]
    latency = { sender_us = [18 values], receiver_us = [18 values] }

``ccarena linux measure-host`` writes one for the machine it runs on. A
scenario names one with ``[hosts] profile = "FILE"`` (read relative to the
scenario file) or the name of one shipped in this directory
(``shipped()``); ``ccarena conformance --sim-hosts FILE`` judges the
simulator with one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT", "HERE", "Profile", "ProfileError", "load", "resolve", "shipped"]

HERE = Path(__file__).resolve().parent
#: The shipped profile whose table the core draws from by default
#: (``[hosts] latency = "measured"``; tests/test_profiles.py checks they are one).
DEFAULT = "vm-2vcpu-2026-11-26"


class ProfileError(ValueError):
    """A profile that cannot be used; the message says why."""


@dataclass(frozen=True)
class Profile:
    """A measured host profile: the turnaround table (us, at the core's
    percentiles) and where it came from."""

    name: str
    sender_us: tuple[float, ...]
    receiver_us: tuple[float, ...]
    measured: dict[str, Any] = field(default_factory=dict, compare=False)
    source: str = ""

    def latency(self) -> dict[str, list[float]]:
        """The ``[hosts] latency`` table a scenario takes."""
        return {"sender_us": list(self.sender_us), "receiver_us": list(self.receiver_us)}

    def describe(self) -> str:
        m = self.measured
        where = ", ".join(str(m[k]) for k in ("hostname", "cpu_model", "kernel") if m.get(k))
        when = str(m.get("utc", ""))[:10]
        return f"{self.name} ({where}{'; ' if where and when else ''}{when})"


def shipped() -> list[str]:
    """The names of the profiles shipped with ccarena."""
    return sorted(p.stem for p in HERE.glob("*.toml"))


def _table(values: Any, where: str) -> tuple[float, ...]:
    if not isinstance(values, list) or not values:
        raise ProfileError(f"{where}: expected a list of turnarounds in us")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ProfileError(f"{where}: {v!r} is not a turnaround in us")
        out.append(float(v))
    if out != sorted(out):
        raise ProfileError(f"{where}: the percentiles must not decrease")
    return tuple(out)


def load(path: str | Path) -> Profile:
    """Read a profile file; raises ``ProfileError`` (one line) on a bad one."""
    import tomllib

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ProfileError(f"{p}: cannot read: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ProfileError(f"{p}: invalid TOML: {e}") from None
    hosts = doc.get("hosts")
    latency = hosts.get("latency") if isinstance(hosts, dict) else None
    if not isinstance(latency, dict):
        raise ProfileError(f"{p}: hosts.latency: expected {{ sender_us = [...], receiver_us = [...] }}")
    sender = _table(latency.get("sender_us"), f"{p}: hosts.latency.sender_us")
    receiver = _table(latency.get("receiver_us"), f"{p}: hosts.latency.receiver_us")
    measured = doc.get("measured", {})
    if not isinstance(measured, dict):
        raise ProfileError(f"{p}: measured: expected a table")
    return Profile(p.stem, sender, receiver, dict(measured), str(p))


def resolve(name: str, base: Path | None = None) -> Profile:
    """A profile by file (relative to ``base``, the scenario file's
    directory) or by the name of a shipped one; raises ``ProfileError``."""
    p = Path(name)
    if base is not None and not p.is_absolute():
        p = base / p
    if p.is_file():
        return load(p)
    if "/" not in name and (HERE / f"{name}.toml").is_file():
        return load(HERE / f"{name}.toml")
    raise ProfileError(
        f"{name!r}: no such file, and not a shipped profile (shipped: {', '.join(shipped()) or 'none'})"
    )


def write(path: str | Path, profile: Profile, comment: str = "") -> Path:
    """Write ``profile`` as a profile file (TOML)."""
    import json

    def value(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list | tuple):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v) if isinstance(v, float) else str(v)

    lines = [f"# {line}".rstrip() for line in comment.splitlines()] if comment else []
    lines.append("[measured]")
    lines += [f"{k} = {value(v)}" for k, v in profile.measured.items()]
    lines += [
        "",
        "[hosts]",
        "latency = { sender_us = "
        + value([round(x, 1) for x in profile.sender_us])
        + ", receiver_us = "
        + value([round(x, 1) for x in profile.receiver_us])
        + " }",
        "",
    ]
    out = Path(path)
    out.write_text("\n".join(lines), encoding="utf-8")
    return out
