#!/usr/bin/env python3
"""Signal trials on the Linux backend: does an interrupted run leave
nothing behind, and does a live run survive another's ``linux cleanup``?

Each trial starts ``ccarena run S --backend linux`` (20 s scenario), waits
until the run is building its namespaces or under way (the moment varies
with the trial number), then:

- ``SIGINT``, ``SIGTERM``, ``SIGHUP``: one signal; exit must be 128 + signal;
- ``SIGINT-ignored``: the run was started with SIGINT ignored (as a shell
  starts ``cmd &`` in a script); ``kill -INT`` must still end it (130);
- ``SIGINTx2``: a second SIGINT 0-0.1 s after the first (during clean-up);
- ``SIGKILL``: no clean-up is possible; ``ccarena linux cleanup`` must then
  remove everything;
- ``live``: ``ccarena linux cleanup`` while the run is under way must leave
  it alone (the run exits 0 with its results).

After each trial nothing of the run may be left: no namespace, process,
work directory (``ccarena-linux-<prefix>-*``), lock file or ``--out``
directory. Needs root and the bottleneck binary. ``--trials 20`` is the
acceptance count of issue 10; tests/test_linux.py runs one of each.

    sudo python scripts/signal_trials.py --trials 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from ccarena.linux import netns

KINDS = ("SIGINT", "SIGINT-ignored", "SIGINTx2", "SIGTERM", "SIGHUP", "SIGKILL", "live")
SCENARIO = """name = "signal-trial"
duration = "{duration}"
[bottleneck]
rate = "20Mbps"
buffer = "1BDP"
[[flows]]
cc = "cubic"
rtt = "20ms"
"""


def namespaces(prefixes: Iterable[str] | None = None) -> set[str]:
    """ccarena's namespaces on this machine; with ``prefixes``, only theirs."""
    want = None if prefixes is None else set(prefixes)
    out = set()
    for ns in netns.list_namespaces():
        m = netns.NAME_RE.match(ns)
        if m and (want is None or m["prefix"] in want):
            out.add(ns)
    return out


def processes(prefixes: Iterable[str] | None = None) -> list[str]:
    """Command lines of running bottlenecks and traffic generators (the
    bridge testbed's delay hop, iperf3 driver and iperf3s too); with
    ``prefixes``, only those of these runs (their work directory, in every
    such command line, is named after the prefix)."""
    want = None if prefixes is None else list(prefixes)
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        ours = "ccarena-bottleneck --scenario" in cmd or "linux/gen.py" in cmd or "linux/iperfdrv.py" in cmd
        ours = ours or ("iperf3" in cmd and netns.WORKDIR_HEAD in cmd)
        if state == "Z" or not ours:
            continue
        if want is None or any(f"{netns.WORKDIR_HEAD}{p}-" in cmd for p in want):
            out.append(cmd)
    return out


def workdirs(prefixes: Iterable[str] | None = None) -> set[str]:
    heads = [netns.WORKDIR_HEAD] if prefixes is None else [f"{netns.WORKDIR_HEAD}{p}-" for p in prefixes]
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(tuple(heads))}


def locks(prefixes: Iterable[str] | None = None, pid: int | None = None) -> set[str]:
    """Lock files; with ``prefixes``, only theirs, and with ``pid`` also the
    temporary file a lock is made in (``.<pid>-<hex>.tmp``)."""
    d = netns.lock_dir()
    if not d.is_dir():
        return set()
    want = None if prefixes is None else {f"{p}.lock" for p in prefixes}
    tmp = None if pid is None else f".{pid}-"
    return {
        p.name
        for p in d.iterdir()
        if want is None or p.name in want or (tmp is not None and p.name.startswith(tmp))
    }


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _traffic(cmd: str) -> bool:
    """A traffic sender's command line (either testbed's)."""
    return "gen.py sender" in cmd or ("iperf3" in cmd and " -c " in cmd)


def trial(kind: str, i: int, tmp: Path, testbed: str | None = None) -> dict:
    """One trial (on ``testbed``, or the default one); returns what happened
    and what was left behind."""
    if kind not in KINDS:
        raise ValueError(kind)
    scn = tmp / f"s{i}.toml"
    scn.write_text(SCENARIO.format(duration="4s" if kind == "live" else "20s"))
    out = tmp / f"r-{kind}-{i}"
    cmd = [
        sys.executable,
        "-m",
        "ccarena",
        "run",
        str(scn),
        "--backend",
        "linux",
        "--out",
        str(out),
        "--no-figure",
        *(["--testbed", testbed] if testbed else []),
    ]
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_ignore_sigint if kind == "SIGINT-ignored" else None,
    )
    # Everything judged below is this run's alone, by the prefixes whose
    # lock it holds (its lock file names its pid; it is made before
    # anything else), so other runs live on the machine are left out.
    mine: set[str] = set()
    # When: even trials while the namespaces are being built, odd ones
    # 0-1.2 s into the traffic.
    building = kind != "live" and i % 2 == 0
    t_start = time.monotonic()
    deadline = t_start + 30
    started = False
    while time.monotonic() < deadline and p.poll() is None:
        mine.update(netns.prefixes_of(p.pid))
        new = namespaces(mine)
        if new and (building or any(_traffic(c) for c in processes(mine))):
            started = True  # (the first namespace may be preflight's short-lived probe)
            break
        time.sleep(0.005 if building else 0.05)
    if not building:
        time.sleep(0.3 * ((i // 2) % 5))
    res: dict = {"kind": kind, "trial": i, "testbed": testbed, "started": started, "building": building}
    res["signalled_after_s"] = round(time.monotonic() - t_start, 3)
    if kind == "live":
        cp = subprocess.run(
            [sys.executable, "-m", "ccarena", "linux", "cleanup"], capture_output=True, text=True
        )
        res["cleanup_out"] = cp.stdout.strip()
        res["survived"] = bool(namespaces(mine))
    elif kind == "SIGKILL":
        p.kill()
    else:
        sig = {"SIGINT": signal.SIGINT, "SIGINT-ignored": signal.SIGINT, "SIGINTx2": signal.SIGINT}.get(
            kind, getattr(signal, kind, None)
        )
        p.send_signal(sig)
        if kind == "SIGINTx2":
            time.sleep(0.1 * (i % 3) / 2)  # 0, 0.05 or 0.1 s
            p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        res["hung"] = True
    # A run that could not clean up (SIGKILL) still holds its lock files,
    # which name its pid: each prefix it made is found.
    mine.update(netns.prefixes_of(p.pid))
    res["status"] = p.returncode
    res["stderr"] = err.decode(errors="replace").strip().splitlines()[-6:] if err else []
    if kind == "SIGKILL":
        cp = subprocess.run(
            [sys.executable, "-m", "ccarena", "linux", "cleanup"], capture_output=True, text=True
        )
        res["cleanup_out"] = cp.stdout.strip()
    time.sleep(0.1)
    res["prefixes"] = sorted(mine)
    res["left_namespaces"] = sorted(namespaces(mine))
    res["left_processes"] = processes(mine)
    res["left_workdirs"] = sorted(workdirs(mine))
    res["left_locks"] = sorted(locks(mine, p.pid))
    res["out_exists"] = out.exists()
    expected = {"SIGKILL": -9, "live": 0, "SIGINTx2": 130, "SIGINT-ignored": 130}.get(kind)
    if expected is None:
        expected = 128 + int(getattr(signal, kind))
    res["expected_status"] = expected
    clean = not (res["left_namespaces"] or res["left_processes"] or res["left_workdirs"] or res["left_locks"])
    if kind == "live":
        res["ok"] = res["survived"] and p.returncode == 0 and res["out_exists"] and clean
    else:
        res["ok"] = res["started"] and p.returncode == expected and clean and not res["out_exists"]
    res["ok"] = res["ok"] and bool(mine)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20, help="trials per kind (default 20)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS))
    ap.add_argument("--json", help="write every trial's record to this file")
    ap.add_argument("--testbed", help="the kernel testbed (ccarena run --testbed; default: the default one)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("signal_trials.py: must run as root", file=sys.stderr)
        return 2
    kinds = a.kinds.split(",")
    records = []
    with tempfile.TemporaryDirectory(prefix="signal-trials-") as t:
        for kind in kinds:
            ok = 0
            for i in range(a.trials):
                r = trial(kind, i, Path(t), a.testbed)
                records.append(r)
                ok += r["ok"]
                if not r["ok"]:
                    print(f"  {kind} #{i}: FAILED {json.dumps(r)}", flush=True)
            print(f"{kind:15s} {ok}/{a.trials} clean", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=1))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
