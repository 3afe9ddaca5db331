"""The Linux backend end to end: real kernel TCP in network namespaces
through ccarena-bottleneck. Marked ``linux``; skipped unless root with
network namespaces and the bottleneck binary (``cargo build --release -p
ccarena-emu``). The whole set takes about a minute."""

from __future__ import annotations

import bisect
import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ccarena import Results, Scenario, run
from ccarena.conformance import HostTable
from ccarena.linux import backend as lb
from ccarena.linux import netns
from ccarena.traces import HERE as TRACES
from ccarena.traces import read_trace
from conftest import linux_unavailable

REPO = Path(__file__).resolve().parent.parent


_SKIP = linux_unavailable()
pytestmark = [pytest.mark.linux, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

ONE_CUBIC: dict[str, Any] = {
    "name": "linux-one-cubic",
    "duration": "5s",
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "cubic", "rtt": "20ms"}],
}


def _load_signal_trials():
    """scripts/signal_trials.py: the trials, and what counts as a run's leftovers."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "signal_trials.py"
    spec = importlib.util.spec_from_file_location("signal_trials", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_SIGNAL_TRIALS = _load_signal_trials()


def _ours() -> list[str]:
    """The namespaces of the runs this test process made (other runs may be
    live on the machine meanwhile: they are not this test's business)."""
    return sorted(_SIGNAL_TRIALS.namespaces(netns.owned_here()))


def _our_processes() -> list[str]:
    """Command lines of running bottlenecks and generators of this process's runs."""
    return _SIGNAL_TRIALS.processes(netns.owned_here())


def _accurate_or_skip(res: Results) -> None:
    """Accuracy is only promised for runs the self-checks pass: on a machine
    busy with other work the bottleneck releases late and says so."""
    lx = res.meta["linux"]
    if not lx["trustworthy"]:
        pytest.skip("run marked untrustworthy by its self-checks: " + "; ".join(lx["warnings"]))


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One scenario on both backends (the compare command's path)."""
    from ccarena.compare import compare

    root = tmp_path_factory.mktemp("results")
    before = set(_ours())
    comp = compare(Scenario.from_dict(ONE_CUBIC), ["sim", "linux"], root=root)
    return comp, before


def test_flow_gets_the_configured_rtt(compared):
    comp, _ = compared
    lx = comp.results["linux"]
    _accurate_or_skip(lx)
    # min RTT (tcpi_min_rtt; the SYN's RTT included): the configured 20 ms
    # plus a few tens of microseconds of a small packet's transmission time.
    min_rtt = float(lx.flows["min_rtt_ms"].iloc[0])
    assert abs(min_rtt - 20.0) < 0.5, min_rtt


def test_flow_gets_the_configured_rate(compared):
    comp, _ = compared
    lx = comp.results["linux"]
    _accurate_or_skip(lx)
    s = lx.samples[lx.samples.time_s > 1.0]
    # Receiver-side payload rate in steady state: 20 Mbit/s of frames carry
    # 1448 of every 1514 bytes as payload.
    expected = 20.0 * 1448 / 1514
    got = float(s["goodput_mbps"].mean())
    assert abs(got - expected) / expected < 0.02, (got, expected)


def test_queue_never_exceeds_its_limit(compared):
    comp, _ = compared
    lx = comp.results["linux"]
    limit = lx.scenario["bottleneck"]["limit"]["bytes"]
    assert int(lx.summary["max_backlog_bytes"].iloc[0]) <= limit
    # The sampled backlog counts the packet waiting for tokens beside the qdisc.
    assert int(lx.queue["backlog_bytes"].max()) <= limit + 1514
    assert int(lx.summary["drops"].iloc[0]) > 0  # 1 BDP with CUBIC: the limit was reached


def test_linux_run_is_recorded_like_a_sim_run(compared):
    comp, _ = compared
    lx, sim = comp.results["linux"], comp.results["sim"]
    assert lx.meta["backend"] == "linux" and sim.meta["backend"] == "sim"
    assert lx.meta["kernel"] == os.uname().release
    for table in ("summary", "flows", "samples", "queue"):
        missing = set(sim.table(table).columns) - set(lx.table(table).columns)
        # Only what the simulator alone can count.
        assert missing <= {"cubic_wmax_pkts", "cubic_k_ms", "cubic_origin_pkts", "cubic_epoch_start_s",
                           "cubic_delay_min_ms", "cubic_cnt_pkts", "cubic_tcp_cwnd_pkts",
                           "hystart_found"}, (table, missing)  # fmt: skip
    assert bool(lx.summary["trustworthy"].iloc[0]) in (True, False)
    for col in ("lateness_p99_us", "bottleneck_cpu_load", "sender_cpu_load", "receiver_cpu_load"):
        assert not math.isnan(float(lx.summary[col].iloc[0])), col
    again = Results.load(lx.path)
    assert again.meta["linux"]["self_check"]["lateness_p50_us"] is not None


def test_a_linux_run_measures_its_hosts_turnarounds(compared):
    """The bottleneck's turnaround meter: the simulator's [hosts] table
    (18 percentiles a side, non-decreasing) of this run's hosts, which the
    simulator accepts as its own table."""
    from ccarena._core import host_percentiles

    comp, _ = compared
    lx = comp.results["linux"]
    t = lx.meta["linux"]["turnarounds"]
    # ONE_CUBIC's sender paces (sch_fq): only the receiver side is measured.
    assert t["sender_us"] is None and t["sender_n"] == 0
    r = t["receiver_us"]
    assert len(r) == len(host_percentiles()) and t["receiver_n"] > 1000
    assert all(a <= b for a, b in itertools.pairwise(r))
    assert 1.0 < float(lx.summary["host_receiver_p50_us"].iloc[0]) < 1000.0
    assert float(lx.summary["host_receiver_p50_us"].iloc[0]) == r[host_percentiles().index(50.0)]
    sim = Scenario.from_dict(
        {**ONE_CUBIC, "duration": "1s", "hosts": {"latency": {"sender_us": r, "receiver_us": r}}}
    )
    assert sim.normalized["hosts"]["latency"]["table"]["receiver_ns"][0] == round(r[0] * 1e3)


def test_compare_writes_table_and_figure(compared):
    comp, _ = compared
    assert comp.csv_path is not None and comp.csv_path.is_file()
    assert comp.figure_path is not None and comp.figure_path.stat().st_size > 10_000
    row = comp.flows.iloc[0]
    assert abs(row["diff_linux_share"]) < 1e-9  # one flow: all of it, on both
    tables = comp.rich_tables()
    assert len(tables) == 2
    _accurate_or_skip(comp.results["linux"])
    # The two backends agree closely on one CUBIC flow.
    assert abs(row["linux_goodput_mbps"] - row["sim_goodput_mbps"]) < 0.5


def test_cleanup_after_success(compared):
    _, before = compared
    assert set(_ours()) <= before
    assert _our_processes() == []


def test_two_algorithms_are_told_apart(tmp_path):
    doc = {
        "name": "linux-mixed",
        "duration": "3s",
        "bottleneck": {"rate": "20Mbps", "buffer": "2BDP"},
        "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "bbr1", "rtt": "40ms", "start": "0.5s"}],
    }
    res = lb.execute(Scenario.from_dict(doc), tmp_path / "run")
    f = res.flows
    assert list(f["cc_kernel"]) == ["cubic", "bbr"]
    # It starts behind CUBIC's standing queue: never below its 40 ms, and
    # at most the buffer's 40 ms of queueing above.
    assert 39.9 < float(f["min_rtt_ms"].iloc[1]) < 80.5
    bbr = res.samples[(res.samples.flow == 1) & (res.samples.time_s > 1.0)]
    assert (bbr["bbr_mode"] != "").all()
    assert bbr["bbr_bw_mbps"].max() > 1.0
    # Flow 1 sent nothing before its start.
    early = res.samples[(res.samples.flow == 1) & (res.samples.time_s <= 0.5)]
    assert (early["delivered_bytes"] == 0).all()
    assert _our_processes() == []


def test_cleanup_after_failure(tmp_path, monkeypatch):
    fake = tmp_path / "fake-bottleneck"
    fake.write_text("#!/bin/sh\necho broken on purpose >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv(lb.BOTTLENECK_ENV, str(fake))
    before = set(_ours())
    with pytest.raises(lb.LinuxBackendError, match="bottleneck"):
        lb.execute(Scenario.from_dict(ONE_CUBIC), tmp_path / "run")
    assert set(_ours()) <= before
    assert _our_processes() == []
    assert not (tmp_path / "run").exists()


# (kind, trial number): even numbers signal while the namespaces are being
# built, odd ones while traffic flows (scripts/signal_trials.py runs 20 of each).
_TRIALS = [
    (k, 1) for k in ("SIGINT", "SIGINT-ignored", "SIGINTx2", "SIGTERM", "SIGHUP", "SIGKILL", "live")
] + [
    ("SIGINT", 0),
    ("SIGINTx2", 0),
    ("SIGKILL", 0),
]


@pytest.mark.parametrize(("kind", "i"), _TRIALS, ids=[f"{k}-{i}" for k, i in _TRIALS])
def test_signals_leave_nothing_behind(tmp_path, kind, i):
    """Issue 10: whatever the signal (even with SIGINT inherited ignored, or a
    second one during the clean-up) a run exits 128 + signal and leaves no
    namespace, process, work directory, lock or output; after SIGKILL,
    ``ccarena linux cleanup`` removes it all; a live run survives another's
    ``cleanup``."""
    r = _SIGNAL_TRIALS.trial(kind, i, tmp_path)
    assert r["ok"], json.dumps(r)  # a string: printed whole, not cut like a dict


def test_cleanup_leaves_a_live_owner_alone():
    """A namespace whose prefix is locked by a live owner (this process) is
    not touched; once the lock is released, it is removed."""
    owner = netns.Owner()
    name = f"{owner.prefix}-rtr"
    try:
        netns.run(["ip", "netns", "add", name])
        done = netns.cleanup()
        assert name in netns.list_namespaces()
        assert owner.prefix in done.live
        owner.release()
        done = netns.cleanup()
        assert name in done.namespaces and name not in netns.list_namespaces()
        assert not (netns.lock_dir() / f"{owner.prefix}.lock").exists()
    finally:
        owner.release()
        netns.run(["ip", "netns", "del", name], check=False)


def test_cleanup_command_removes_leftovers():
    prefix = netns.new_prefix()
    name = f"{prefix}-rtr"
    netns.run(["ip", "netns", "add", name])
    sleeper = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "60"])
    try:
        time.sleep(0.2)
        from ccarena import cli

        assert cli.main(["linux", "cleanup"]) == 0
        assert name not in netns.list_namespaces()
        # Killed, not left to sleep its 60 s (the clean-up reaps it, so its
        # status is not ours to read).
        sleeper.wait(timeout=5)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        netns.run(["ip", "netns", "del", name], check=False)


def _nobody_can_run_python() -> bool:
    cp = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            "import ccarena",
        ],
        capture_output=True,
        cwd="/",
    )
    return cp.returncode == 0


@pytest.mark.parametrize("command", ["run", "compare"])
def test_non_root_fails_with_a_clear_message(write_scenario, command):
    """Issue 39: not as root, ``run --backend linux`` died with a
    PermissionError traceback on the lock directory, and ``compare`` wrote
    the simulator's run first. Now: one line, exit 2, nothing made (not even
    the lock directory), nothing written."""
    import shutil
    import tempfile

    # A directory nobody can read (pytest's own tmp_path is private to root).
    shared = Path(tempfile.mkdtemp(prefix="ccarena-nonroot-"))
    os.chmod(shared, 0o777)
    path = shared / "s.toml"
    path.write_bytes(write_scenario(ONE_CUBIC).read_bytes())
    os.chmod(path, 0o644)
    target = shared / "r"
    args = ["run", str(path), "--backend", "linux", "--out", str(target)]
    if command == "compare":
        args = ["compare", str(path), "--out", str(target)]
    cmd = [sys.executable, "-m", "ccarena", *args]
    home = shared / "home"
    home.mkdir()
    os.chmod(home, 0o777)
    locks = shared / "locks"  # where this run's lock directory would go
    env = dict(os.environ, HOME=str(home), MPLCONFIGDIR=str(home), **{netns.LOCKS_ENV: str(locks)})
    if _nobody_can_run_python():
        cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd]
    else:
        # The interpreter is not readable by nobody here (e.g. under /root):
        # the documented test-only switch makes the backend see a non-root user.
        env[lb.FAKE_NONROOT_ENV] = "1"
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(shared))
        assert cp.returncode == 2, cp.stderr
        assert "must run as root" in cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
        assert not locks.exists()
        assert not target.exists()
        assert not (shared / "results").exists()
    finally:
        shutil.rmtree(shared)


def test_unsupported_algorithm_is_refused_before_anything_is_built(tmp_path):
    doc = json.loads(json.dumps(ONE_CUBIC))
    doc["flows"][0]["cc"] = "bbq"
    before = netns.owned_here()
    with pytest.raises(lb.LinuxUnsupported, match="bbq"):
        lb.execute(Scenario.from_dict(doc), tmp_path / "r")
    # No run was begun: only preflight's probe (removed at once) owned a prefix.
    assert len(netns.owned_here()) <= len(before) + 1
    assert set(_ours()) == set()


def test_a_second_kernel_run_of_a_scenario_keeps_the_first(tmp_path, write_scenario, capsys, monkeypatch):
    """Issue 39: kernel runs were stored by the scenario's hash, so a second
    ``run --backend linux`` (or ``compare``) replaced the first, which cannot
    be made again. Each now has its own directory, records where and when
    it ran, and the later run names the earlier ones; ``--out`` at a kernel
    run is refused."""
    from ccarena import cli

    monkeypatch.chdir(tmp_path)
    path = write_scenario({**ONE_CUBIC, "duration": "1s"})
    assert cli.main(["run", str(path), "--backend", "linux", "--no-figure"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(path), "--no-figure"]) == 0
    out = capsys.readouterr().out
    home = tmp_path / "results" / ONE_CUBIC["name"]
    kernel = sorted(p for p in home.iterdir() if "-linux-" in p.name)
    assert len(kernel) == 2, sorted(p.name for p in home.iterdir())
    assert "earlier kernel runs of this scenario (1" in out and kernel[0].name in out
    metas = [json.loads((k / "scenario.json").read_text()) for k in kernel]
    assert metas[0]["hash"] == metas[1]["hash"]
    for m in metas:
        lx = m["linux"]
        assert lx["host"]["cpus"] >= 1 and lx["host"]["kernel"] and lx["host"]["cpu_model"]
        assert lx["started_utc"].endswith("Z") and lx["ccarena_commit"]
    # Its comparison sits beside it, named after it.
    assert (home / kernel[1].name.replace("-linux-", "-compare-") / "compare_flows.csv").is_file()
    # A kernel run is never the target of another run.
    before = sorted(p.name for p in kernel[0].iterdir())
    err = capsys.readouterr().err
    assert cli.main(["run", str(path), "--backend", "linux", "--out", str(kernel[0]), "--no-figure"]) == 2
    err = capsys.readouterr().err
    assert "kernel run" in err and len(err.strip().splitlines()) == 1
    assert cli.main(["run", str(path), "--out", str(kernel[0]), "--no-figure"]) == 2
    assert sorted(p.name for p in kernel[0].iterdir()) == before


def test_backend_field_in_the_scenario_selects_linux(tmp_path, write_scenario, capsys):
    from ccarena import cli

    doc = {**ONE_CUBIC, "duration": "2s", "backend": "linux"}
    path = write_scenario(doc)
    code = cli.main(["run", str(path), "--out", str(tmp_path / "r"), "--no-figure"])
    out, err = capsys.readouterr()
    assert code == 0, err
    res = Results.load(tmp_path / "r")
    assert res.meta["backend"] == "linux"
    assert "release lateness" in out


def test_configured_loss_appears_in_retransmissions(tmp_path):
    doc = {
        "name": "linux-loss",
        "duration": "4s",
        "bottleneck": {"rate": "20Mbps", "buffer": "4BDP"},
        "flows": [{"cc": "cubic", "rtt": "20ms", "loss": "2%"}],
    }
    res = lb.execute(Scenario.from_dict(doc), tmp_path / "run")
    f = res.flows.iloc[0]
    sent = int(f["segs_sent"])
    # The bottleneck's path drew about 2% of the data frames...
    assert 0.012 < int(f["drops_random"]) / sent < 0.03, f
    # ... and the kernel's TCP retransmitted them (the buffer is too large to overflow).
    assert int(f["drops_overflow"]) == 0
    assert 0.012 < float(f["retrans_rate"]) < 0.035, f
    # The kernel's own counters for the run (linux.tcpext): it entered SACK
    # recovery for those losses and fast-retransmitted (or probed) them.
    ext = res.meta["linux"]["tcpext"]
    assert ext.get("TCPSackRecovery", 0) >= 1, ext
    assert ext.get("TCPFastRetrans", 0) + ext.get("TCPLossProbes", 0) > 0, ext
    assert _our_processes() == []


def test_configured_jitter_appears_in_the_rtt(tmp_path):
    # A paced 2 Mbit/s flow on a 20 Mbit/s link builds no queue: its RTT
    # above the base is the jitter (up to 10 ms, never reordering).
    doc = {
        "name": "linux-jitter",
        "duration": "4s",
        "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
        "flows": [
            {
                "cc": "cubic",
                "rtt": "20ms",
                "pacing": {"max_rate": "2Mbps"},
                "jitter": {"model": "per_packet", "max": "10ms"},
            }
        ],
    }
    res = lb.execute(Scenario.from_dict(doc), tmp_path / "run")
    _accurate_or_skip(res)
    f = res.flows.iloc[0]
    # Min RTT: the 20 ms base, one 1514-byte frame at 20 Mbit/s (0.6 ms),
    # the smallest of a few hundred uniform draws and host latency: it
    # measured 20.6-21.1 ms here; 22 ms leaves room for a busy host.
    assert 19.9 < float(f["min_rtt_ms"]) < 22.0
    extra = float(f["srtt_mean_ms"]) - 20.0
    assert 2.0 < extra < 11.0, extra
    assert float(res.summary["qdelay_p95_ms"].iloc[0]) < 2.0


def test_utilization_under_a_rate_schedule_is_over_the_integrated_capacity(tmp_path):
    """Issue 10: utilization divided by the initial rate (up to 24x above 1
    when the rate grows). Both backends divide by the capacity integrated
    over the schedule (the core's ``capacity_bits``)."""
    doc = {
        "name": "linux-rate-schedule",
        "duration": "6s",
        "bottleneck": {"rate": "5Mbps", "buffer": "1BDP", "rate_schedule": [["2s", "40Mbps"]]},
        "flows": [{"cc": "cubic", "rtt": "20ms"}],
    }
    res = lb.execute(Scenario.from_dict(doc), tmp_path / "run")
    s = res.summary.iloc[0]
    assert 0.6 < float(s["utilization"]) <= 1.0, s
    assert float(s["utilization"]) < float(s["wire_utilization"]) <= 1.02, s
    # Per interval too, within a frame or two of quantization.
    assert (res.queue["wire_utilization"] <= 1.1).all(), res.queue["wire_utilization"].max()


def test_a_trace_driven_bottleneck_runs_on_the_kernel(tmp_path):
    # The emulator builds the simulator's network, trace-driven link
    # included: one opportunity per millisecond (12.112 Mbit/s of frames).
    # A bulk CUBIC flow keeps the queue standing, so the kernel's payload
    # rate is the trace's: 1448 of every 1514 bytes.
    from ccarena.linux import execute

    scn = Scenario.from_dict(
        {
            "duration": "6s",
            "bottleneck": {"trace": "constant-12mbps", "buffer": "60pkt"},
            "flows": [{"cc": "cubic", "rtt": "20ms"}],
        }
    )
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    assert lx.links["rate_mbps"].tolist() == [12.112]
    s = lx.samples[lx.samples.time_s > 2.0]
    expected = 12.112 * 1448 / 1514
    got = float(s["goodput_mbps"].mean())
    assert abs(got - expected) / expected < 0.02, (got, expected)


def test_a_parking_lot_runs_on_the_kernel(tmp_path):
    # The emulator runs every link of a network between the namespaces: a
    # long Reno flow across two 20 Mbit/s links (5 ms each), a cross flow on
    # each. The kernel's long flow gets the least, the links fill, the base
    # RTT includes the links' delays both ways, and the simulator, given the
    # kernel run's own host timing, agrees on who gets what.
    # The long flow's share of link a is a noisy quantity (measured on a
    # 2-vCPU VM: 8 kernel runs 0.209-0.273, one CI run 0.311; simulator
    # seeds with a run's host timing 0.19-0.32, their mean of 8 within 0.06
    # of the run). One kernel run against one seed at the defaults (0.186
    # for seed 1; the defaults' 10 seeds 0.17-0.22, mean 0.20) was flaky:
    # host timing moves the share, a mixed-RTT quantity (docs/validation.md).
    from ccarena.linux import execute

    doc = {
        "duration": "12s",
        "links": [
            {"name": "a", "rate": "20Mbps", "delay": "5ms"},
            {"name": "b", "rate": "20Mbps", "delay": "5ms"},
        ],
        "flows": [
            {"cc": "reno", "rtt": "10ms", "route": ["a", "b"]},
            {"cc": "reno", "rtt": "10ms", "route": ["a"]},
            {"cc": "reno", "rtt": "10ms", "route": ["b"]},
        ],
    }
    scn = Scenario.from_dict(doc)
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    assert lx.links["link"].tolist() == ["a", "b"]
    assert lx.flows["route"].tolist() == ["a>b", "a", "b"]
    assert sorted(set(lx.queue["link"])) == ["a", "b"]
    util = lx.links["utilization"]
    assert ((util > 0.85) & (util <= 1.0)).all(), util.tolist()
    # The RTT holds both links' delays (30 ms for the long flow, 20 with one
    # link). The kernel's own minimum can sit a little under the path (a
    # CI-like run measured 29.912 ms; not traced: a paced flow's samples
    # timed from its packets' departure times is a candidate); a missing
    # link's 10 ms is far outside.
    min_rtt = lx.flows["min_rtt_ms"].tolist()
    assert 29.0 <= min_rtt[0] < 31.5 and 19.0 <= min_rtt[1] < 21.5, min_rtt
    g = lx.flows["goodput_mbps"].tolist()
    assert g[0] < min(g[1], g[2]), g
    hosts = HostTable.of(lx.meta["linux"].get("turnarounds"))

    def share(r: Results) -> float:  # the long flow's share of link a
        g = r.flows["goodput_mbps"]
        return float(g[0] / (g[0] + g[1]))

    shares = []
    for seed in range(1, 9):
        d = {**doc, "seed": seed}
        sim = run(Scenario.from_dict(d if hosts is None else hosts.onto(d)), out=tmp_path / f"sim{seed}")
        # The simulator routes the long flow over both links as the kernel
        # run did (a long flow on link a only gets ~0.32 of it).
        assert 30.0 <= float(sim.flows["min_rtt_ms"][0]) < 31.5, sim.flows["min_rtt_ms"].tolist()
        shares.append(share(sim))
    mean = sum(shares) / len(shares)
    # 0.1 is four standard deviations of the difference measured above.
    assert abs(mean - share(lx)) < 0.1, (shares, share(lx))


def test_a_policer_on_the_kernel_agrees_with_the_simulator(tmp_path):
    # The emulator polices as the simulator does (net::police): kernel BBR
    # through a 10 Mbit/s policer on a 100 Mbit/s link gets about the
    # policer's rate, its losses are the policer's drops, the queue stays
    # empty, and the simulator's BBRv1 agrees (measured 9.40 vs 9.50 Mbit/s
    # over 20 s, retransmissions 7.3% vs 6.6%).
    from ccarena.linux import execute

    scn = Scenario.from_dict(
        {
            "duration": "12s",
            "bottleneck": {
                "rate": "100Mbps",
                "buffer": "1BDP",
                "policer": {"rate": "10Mbps", "burst": "20KB"},
            },
            "flows": [{"cc": "bbr1", "rtt": "40ms"}],
        }
    )
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    sim = run(scn, out=tmp_path / "sim")
    f = lx.flows.iloc[0]
    assert f["drops_policer"] > 0 and f["drops_overflow"] == 0
    assert lx.summary["qdelay_p95_ms"][0] < 1.0
    g_lx, g_sim = float(f["goodput_mbps"]), float(sim.flows["goodput_mbps"][0])
    assert 7.0 < g_lx < 10.0 and abs(g_lx - g_sim) / g_sim < 0.1, (g_lx, g_sim)


def test_a_receive_window_limits_the_kernel_as_the_simulator(tmp_path):
    # rwnd = 100,000 B on a 20 ms path at 100 Mbit/s: about 100,000 B a
    # round trip, 39 Mbit/s. Linux 6.18 advertises 1.24x a buffer locked to
    # it (measured: 124,200 B, 46.9 Mbit/s); the bottleneck clamps the
    # advertised windows to the rwnd (gen.REVISION 3), and the kernel then
    # gets what the simulator's fixed window gives (measured 38.13 and
    # 38.12 Mbit/s).
    from ccarena.linux import execute

    scn = Scenario.from_dict(
        {
            "duration": "5s",
            "bottleneck": {"rate": "100Mbps", "buffer": "4BDP"},
            "flows": [{"cc": "cubic", "rtt": "20ms", "rwnd": "100000B"}],
        }
    )
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    sim = run(scn, out=tmp_path / "sim")
    assert lx.meta["linux"]["windows_clamped"] > 0
    assert lx.meta["linux"]["generator"] == 3
    g_lx, g_sim = float(lx.flows["goodput_mbps"][0]), float(sim.flows["goodput_mbps"][0])
    window_rate = 100_000 * 8 / 20e-3 / 1e6  # 40 Mbit/s: never above it
    assert g_lx < window_rate and abs(g_lx - g_sim) / g_sim < 0.05, (g_lx, g_sim)


def test_a_max_rate_paces_the_kernel_as_sch_fq_would(tmp_path):
    # sch_fq's maxrate counts whole frames; the kernel's internal pacing,
    # which stands in for it, counts payload, so the backend gives it
    # 1448/1514 of the rate (generator revision 4). Measured at 20 Mbit/s:
    # 18.96 Mbit/s of goodput on the kernel, 18.97 in the simulator (19.82
    # on the kernel before).
    from ccarena.linux import execute

    scn = Scenario.from_dict(
        {
            "duration": "5s",
            "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
            "flows": [{"cc": "cubic", "rtt": "20ms", "pacing": {"max_rate": "20Mbps"}}],
        }
    )
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    sim = run(scn, out=tmp_path / "sim")
    assert lx.meta["linux"]["generator"] == 4
    g_lx, g_sim = float(lx.flows["goodput_mbps"][0]), float(sim.flows["goodput_mbps"][0])
    assert abs(g_lx - g_sim) / g_sim < 0.015, (g_lx, g_sim)


def test_a_stopped_flow_leaves_on_the_kernel_as_in_the_simulator(tmp_path):
    # flows[0].stop = 3 s: its sender stops writing and shuts down once
    # what it wrote is sent (generator revision 5; before, the kernel's
    # flow ran to the end). Measured: the flow completes at 3.16-3.32 s on
    # the kernel (five runs), 3.41 s in the simulator; the two flows'
    # goodput before the stop splits differently from run to run (flow 0:
    # 44.4 and 50.4 Mbit/s over the run in two kernel runs, 45.4 in the
    # simulator), so what is compared is the flow's end and the link after.
    #
    # Once flow 0 has left, flow 1 has the link alone, so it delivers all
    # its window carries: min(link, inflight x MSS / min RTT). How much
    # that is depends on where flow 1 is in CUBIC's cycle when flow 0
    # leaves: a loss just before leaves it 0.7 of a share-sized window,
    # which then takes seconds to grow back (one CI run on the kernel:
    # 79.1 Mbit/s after 4.5 s; five runs here: 94.3-95.7). Still sharing,
    # it would deliver about half of that (the simulator without the stop:
    # 55.3 Mbit/s against 90.5 its window carries).
    from ccarena.linux import execute

    scn = Scenario.from_dict(
        {
            "duration": "6s",
            "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
            "flows": [{"cc": "cubic", "rtt": "20ms", "stop": "3s"}, {"cc": "cubic", "rtt": "20ms"}],
        }
    )
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    sim = run(scn, out=tmp_path / "sim")
    assert lx.meta["linux"]["generator"] == 5
    fct, fct_sim = float(lx.flows["fct_s"][0]), float(sim.flows["fct_s"][0])
    assert 3.0 < fct < 4.0 and 3.0 < fct_sim < 4.0, (fct, fct_sim)
    for res in (lx, sim):
        smp = res.samples
        late = smp[smp.time_s > 4.5]
        assert late[late.flow == 0].goodput_mbps.fillna(0).sum() == 0  # no rows, or idle
        one = late[late.flow == 1]
        carried = (one.inflight_pkts * 1448 * 8 / (one.min_rtt_ms * 1e3)).clip(upper=100 * 1448 / 1514)
        alone = one.goodput_mbps.mean()
        # Alone, the ratio was 0.98-1.0 in four kernel runs (the simulator
        # 1.0) and 0.93 in a CI-like one whose window was regrowing after a
        # loss (a sample's inflight is at its interval's end, its goodput
        # over the interval, and the min RTT is below the data's RTT); still
        # sharing, 0.61 (the simulator without the stop).
        assert alone > 0.85 * carried.mean(), (res.meta["backend"], alone, carried.mean())
        before = smp[(smp.flow == 1) & (smp.time_s > 1) & (smp.time_s < 3)].goodput_mbps.mean()
        assert alone > before, (alone, before)
    # Before the stop the two flows fill the link on both backends (95.64
    # Mbit/s of payload in every run measured). The flows' whole-run
    # goodputs are not compared: flow 1's after the departure depends on
    # its CUBIC phase, as above (the kernel's sums over five runs: 111.4 to
    # 115.8 Mbit/s; the simulator's 113.3).
    both = [r.samples[(r.samples.time_s > 1) & (r.samples.time_s <= 3)] for r in (lx, sim)]
    total = [float(s.groupby("time_s").goodput_mbps.sum().mean()) for s in both]
    assert abs(total[0] - total[1]) / total[1] < 0.02, total


def test_flows_that_differ_in_ecn_and_initial_window_keep_their_own(tmp_path):
    # Both are route attributes (and ECN a host-wide sysctl) in Linux; such
    # flows get a route each, chosen by destination port (generator
    # revision 6). Before, every flow took the largest initial window and
    # ECN if any flow asked for it.
    from ccarena.linux import execute

    # Initial windows 4 and 10, 300 KB each on 50 ms, one after the other:
    # FCTs measured 0.377 and 0.317 s on the kernel, 0.376 and 0.315 in the
    # simulator.
    scn = Scenario.from_dict(
        {
            "duration": "3s",
            "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
            "flows": [
                {"cc": "cubic", "rtt": "50ms", "init_cwnd": 4, "size": "300KB"},
                {"cc": "cubic", "rtt": "50ms", "size": "300KB", "start": "1.5s"},
            ],
        }
    )
    lx = execute(scn, tmp_path / "init")
    _accurate_or_skip(lx)
    sim = run(scn, out=tmp_path / "init-sim")
    assert lx.meta["linux"]["generator"] == 6
    fct, fct_sim = lx.flows["fct_s"].astype(float), sim.flows["fct_s"].astype(float)
    assert fct[0] > 1.1 * fct[1], list(fct)
    assert all(abs(fct - fct_sim) / fct_sim < 0.03), (list(fct), list(fct_sim))
    # An ECN flow beside one without, through CoDel with ECN: the first is
    # marked and never dropped, the second dropped and never marked, as in
    # the simulator (measured: 18 marks; 19 drops).
    scn = Scenario.from_dict(
        {
            "duration": "8s",
            "bottleneck": {"rate": "20Mbps", "buffer": "4BDP", "qdisc": "codel", "ecn": True},
            "flows": [{"cc": "cubic", "rtt": "20ms", "ecn": True}, {"cc": "cubic", "rtt": "20ms"}],
        }
    )
    lx = execute(scn, tmp_path / "ecn")
    _accurate_or_skip(lx)
    f = lx.flows
    assert f["marks"][0] > 0 and f["drops"][0] == 0, f[["marks", "drops"]]
    assert f["marks"][1] == 0 and f["drops"][1] > 0, f[["marks", "drops"]]


def test_two_way_traffic_on_the_kernel(tmp_path):
    # Two CUBIC flows in opposite directions over two 20 Mbit/s links, each
    # flow's ACKs behind the other's data: a flow's RTT is its base RTT plus
    # the queue its data waits in plus the queue its ACKs wait in, on the
    # kernel as in the simulator. Judged within each backend, in steady
    # state (after slow start), from the queue tables of the same seconds.
    # (How high both queues stand is the CUBIC flows' phase: 14 kernel runs
    # here gave 15.1-24.4 ms of summed queueing, srtt 35.1-47.6 ms; 10
    # simulator seeds 15.0-16.6 ms, 35.2-37.0; one kernel run against one
    # seed is not a comparison of the two, docs/validation.md, "Two-way
    # traffic". This test was flaky while it compared them within 10%.)
    from ccarena.linux import execute

    doc = {
        "duration": "14s",
        "links": [
            {"name": "down", "rate": "20Mbps", "buffer": "1BDP"},
            {"name": "up", "rate": "20Mbps", "buffer": "1BDP"},
        ],
        "flows": [
            {"cc": "cubic", "rtt": "20ms", "route": ["down"], "reverse_route": ["up"]},
            {"cc": "cubic", "rtt": "20ms", "route": ["up"], "reverse_route": ["down"]},
        ],
    }
    scn = Scenario.from_dict(doc)
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    hosts = HostTable.of(lx.meta["linux"].get("turnarounds"))
    sim = run(Scenario.from_dict(doc if hosts is None else hosts.onto(doc)), out=tmp_path / "sim")

    def steady(r: Results) -> tuple[float, float, float]:
        """Flow 0's mean srtt and each link's mean sojourn, after 4 s."""
        s, q = r.samples, r.queue
        srtt = float(s[(s.flow == 0) & (s.time_s > 4.0)]["srtt_ms"].mean())
        sojourn = q[q.time_s > 4.0].groupby("link")["sojourn_mean_ms"].mean()
        return srtt, float(sojourn["down"]), float(sojourn["up"])

    for name, r in (("kernel", lx), ("simulator", sim)):
        srtt, down, up = steady(r)
        # Both links hold a standing queue (each carries one flow's data) ...
        assert down > 3.0 and up > 3.0, (name, down, up)
        # ... and flow 0's RTT holds both: its data's and its ACKs'.
        # Measured: within 0.5 ms on both backends (14 kernel runs, 10 seeds).
        assert abs(srtt - (20.0 + down + up)) < 1.5, (name, srtt, down, up)
    # ACK compression at the sender, measured alike: two-way traffic spreads
    # the ACK gaps on both backends (CV 0.39-0.41 kernel, 0.51-0.66
    # simulated with model 5; one flow alone 0.16 on both). The size differs
    # and is an open disagreement (docs/validation.md, "ACK compression
    # under model 5": 0.34 kernel against 0.45 simulated after 4 s; model 4
    # gave 0.41), so this guards that compression appears, not its size.
    cv_lx, cv_sim = float(lx.flows["ack_interval_cv"][0]), float(sim.flows["ack_interval_cv"][0])
    assert cv_lx > 0.25 and cv_sim > 0.25, (cv_lx, cv_sim)


def test_the_issue_network_runs_on_the_kernel(tmp_path):
    # The issue's network on real kernel TCP: a 3-hop parking lot with a
    # cellular trace on hop2 and two-way traffic on hop3. Over 30 s the two
    # backends agreed within 0.3 Mbit/s per flow (the long flow 0.97
    # simulated, 1.04 kernel; the cellular hop's cross flow 8.45 and 8.37).
    from ccarena.linux import execute

    secs = 12
    scn = Scenario.load(REPO / "scenarios" / "parking-lot-cellular.toml", overrides=[f"duration={secs}s"])
    lx = execute(scn, tmp_path / "lx")
    _accurate_or_skip(lx)
    assert lx.links["link"].tolist() == ["hop1", "hop2", "hop3", "hop3-back"]
    assert (lx.links["utilization"] <= 1.0).all()
    g = lx.flows.set_index("label")["goodput_mbps"]
    # The long flow crosses every congested hop, the cellular one among them.
    assert g["long"] < min(g["cross1"], g["cross2"], g["cross3"], g["upload"]), g.to_dict()
    # The hop2 cross flow gets what the trace leaves. The trace's mean over
    # its whole 30 s (9.9 Mbit/s) is not the bound: its first 12 s offer 11.05
    # Mbit/s of 1514-byte frames (the 10.07 Mbit/s a CI run measured was above
    # 9.9 and inside this). What crosses hop2 (cross2 and the long flow's
    # payload) cannot exceed what the trace delivered in the run.
    ms = read_trace(TRACES / "cellular-walk.trace")
    cap = bisect.bisect_right(ms, secs * 1000) * 1514 * 8 / secs / 1e6
    # Hop2 is used (what crosses it near the trace's capacity) and the cross
    # flow takes most of it: what the long flow leaves (a CI run: cross2
    # 8.61 and long 1.88 Mbit/s of 11.05; 30 s runs 8.4 and 1.0).
    assert g["cross2"] + g["long"] <= cap, (cap, g.to_dict())
    assert 0.85 * cap < g["cross2"] + g["long"] and g["cross2"] > 0.8 * (cap - g["long"]), (cap, g.to_dict())
    assert cap < g["cross1"], (cap, g.to_dict())
