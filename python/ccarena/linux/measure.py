"""``ccarena linux measure-host``: this machine's host profile.

The simulator's hosts answer after a turnaround drawn from a table measured
on a Linux machine (``[hosts] latency``, docs/model.md, "Host timing
noise"). This measures the table on the machine it runs on, as the shipped
one was measured: the Linux backend's bottleneck times, in every run, each
ACK it had due towards a sender against the data that ACK released, and
each data frame due towards a receiver against the ACK that covered it
(crates/emu/src/turnaround.rs). The scenario is two unpaced CUBIC flows of
10 and 50 ms at 50 Mbit/s (the flows whose shares move most with the hosts'
timing, docs/validation.md), 20 s, ``runs`` times; the profile is the mean
of the trustworthy runs' tables, percentile by percentile, and records
each run's medians and self-check beside where, when and with what it was
measured (``ccarena.profiles``)."""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..profiles import Profile, write
from ..scenario import Scenario
from ..stats import turnaround_median
from .host import ccarena_commit, host_info, utc_now

__all__ = ["SCENARIO", "measure_host"]

#: The scenario the profile is measured with (the shipped table's).
SCENARIO: dict[str, Any] = {
    "name": "measure-host",
    "duration": "20s",
    "bottleneck": {"rate": "50Mbps", "buffer": "1BDP"},
    "flows": [
        {"cc": "cubic", "rtt": "10ms", "pacing": "none"},
        {"cc": "cubic", "rtt": "50ms", "pacing": "none"},
    ],
}


def measure_host(
    runs: int = 5, *, progress: Callable[[str], None] | None = None, name: str | None = None
) -> tuple[Profile, list[dict[str, Any]]]:
    """Measure this machine's profile over ``runs`` kernel runs; returns it
    and each run's record (medians, trustworthy, self-check). Raises
    ``LinuxBackendError`` when no run was trustworthy."""
    from ..conformance.hosts import HostTable
    from ..errors import LinuxBackendError
    from .backend import execute

    say = progress or (lambda m: None)
    here = host_info()
    started = utc_now()
    tables: list[HostTable] = []
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ccarena-measure-host-") as d:
        for k in range(runs):
            say(f"run {k + 1} of {runs}")
            scn = Scenario.from_dict({**SCENARIO, "seed": k + 1})
            head = f"run {k + 1} of {runs}"

            def show(m: str, head: str = head) -> None:
                say(f"{head}: {m}")

            res = execute(scn, Path(d) / f"run{k}", progress=show)
            lx = res.meta["linux"]
            table = HostTable.of(lx.get("turnarounds"))
            check = lx.get("self_check", {})
            rec = {
                "trustworthy": bool(lx.get("trustworthy")) and table is not None,
                "sender_p50_us": turnaround_median(table.sender_us) if table else float("nan"),
                "receiver_p50_us": turnaround_median(table.receiver_us) if table else float("nan"),
                "lateness_p99_us": float(check.get("lateness_p99_us", float("nan"))),
                "meter": int((lx.get("turnarounds") or {}).get("meter", 1)),
            }
            records.append(rec)
            if rec["trustworthy"] and table is not None:
                tables.append(table)
    mean = HostTable.mean(tables)
    if mean is None:
        raise LinuxBackendError(
            f"none of the {runs} runs was trustworthy (the machine was busy: see docs/validation.md, "
            "'Self-checks'); measure again on a quiet machine"
        )
    medians = [r["sender_p50_us"] for r in records if r["trustworthy"]]
    measured: dict[str, Any] = {
        "utc": started,
        **{k: here[k] for k in ("hostname", "cpu_model", "cpus", "kernel", "machine")},
        "ccarena_commit": ccarena_commit(),
        "method": (
            "the Linux backend's turnaround meter (revision "
            f"{records[0]['meter']}) over {runs} runs of 20 s: CUBIC 10 ms and 50 ms, unpaced, "
            "50 Mbit/s, 1 BDP; the mean of the trustworthy runs' tables"
        ),
        "runs": runs,
        "trustworthy_runs": len(tables),
        "sender_p50_us": [round(r["sender_p50_us"], 1) for r in records],
        "receiver_p50_us": [round(r["receiver_p50_us"], 1) for r in records],
        "lateness_p99_us": [round(r["lateness_p99_us"], 1) for r in records],
        "trustworthy": [r["trustworthy"] for r in records],
        "run_speed_sd": round(statistics.stdev(medians) / statistics.mean(medians), 4)
        if len(medians) > 1
        else 0.0,
    }
    stem = name or f"{here['hostname']}-{started[:10]}"
    return Profile(stem, mean.sender_us, mean.receiver_us, measured), records


def write_profile(profile: Profile, path: str | Path) -> Path:
    """The profile as a file a scenario can name (``[hosts] profile``)."""
    return write(
        path,
        profile,
        "A host profile: how fast this machine's hosts answer, measured by `ccarena linux measure-host`.\n"
        'Use it with [hosts] profile = "<this file>", or ccarena conformance --sim-hosts <this file>.',
    )
