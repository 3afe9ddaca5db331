"""The second kernel testbed, ``bridge-tbf`` (python/ccarena/linux/bridge.py):
host namespaces joined by Linux bridges and a router whose egress is the
kernel's tbf with a bfifo, a pure delay hop, iperf3. Marked ``linux``;
skipped unless root with network namespaces, the delay hop's binary and
iperf3. About a minute and a half."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ccarena import Results, Scenario
from ccarena.conformance import KernelRun, KernelRuns, kernel_hash, run_dir
from ccarena.linux import backend as lb
from ccarena.linux import bridge, netns
from ccarena.linux.testbeds import DEFAULT_TESTBED
from conftest import linux_unavailable

REPO = Path(__file__).resolve().parent.parent
TESTBED = "bridge-tbf"


def _why_not() -> str | None:
    why = linux_unavailable()
    if why is None and shutil.which("iperf3") is None:
        why = "needs iperf3 (apt-get install iperf3)"
    return why


_SKIP = _why_not()

ONE_CUBIC: dict[str, Any] = {
    "name": "tb2-one-cubic",
    "duration": "5s",
    "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
    "flows": [{"cc": "cubic", "rtt": "20ms"}],
}
#: 20 Mbit/s of frames carry 1448 of every 1514 bytes as payload.
PAYLOAD_MBPS = 20.0 * 1448 / 1514


def _load_signal_trials():
    import importlib.util

    path = REPO / "scripts" / "signal_trials.py"
    spec = importlib.util.spec_from_file_location("signal_trials", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_SIGNAL_TRIALS = _load_signal_trials()


def _ours() -> list[str]:
    return sorted(_SIGNAL_TRIALS.namespaces(netns.owned_here()))


def _our_processes() -> list[str]:
    return _SIGNAL_TRIALS.processes(netns.owned_here())


def _trusted_or_skip(res: Results) -> None:
    lx = res.meta["linux"]
    if not lx["trustworthy"]:
        pytest.skip("run marked untrustworthy by its self-checks: " + "; ".join(lx["warnings"]))


def _run(doc: dict[str, Any], path: Path) -> Results:
    return lb.execute(Scenario.from_dict(doc), path, testbed=TESTBED)


@pytest.fixture(scope="module")
def one_cubic(tmp_path_factory):
    if _SKIP is not None:
        pytest.skip(_SKIP)
    return _run(ONE_CUBIC, tmp_path_factory.mktemp("tb2") / "run")


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
def test_one_cubic_flow_gets_the_link_and_the_delay(one_cubic):
    res = one_cubic
    lx = res.meta["linux"]
    assert lx["testbed"] == TESTBED and res.meta["backend"] == "linux"
    assert lx["host"]["cpus"] >= 1 and lx["started_utc"] and "ccarena_commit" in lx
    assert list(res.flows["cc_kernel"]) == ["cubic"]
    _trusted_or_skip(res)
    s = res.samples[res.samples.time_s > 1.0]
    got = float(s["goodput_mbps"].mean())
    assert abs(got - PAYLOAD_MBPS) / PAYLOAD_MBPS < 0.05, (got, PAYLOAD_MBPS)
    # The queue holds at most the buffer: 1 BDP, 20 ms at the rate.
    buffer_ms = 50_000 * 8 / 20e6 * 1e3
    srtt = float(res.flows["srtt_mean_ms"].iloc[0])
    assert 20.0 <= srtt <= 20.0 + buffer_ms + 2.0, srtt
    assert 20.0 <= float(res.flows["min_rtt_ms"].iloc[0]) < 20.5
    # The delay hop neither queued nor dropped.
    assert lx["delay_hop"]["bottleneck"]["drops"] == 0
    assert lx["self_check"]["delay_hop_queue_max_us"] <= bridge.BRIDGE_THRESHOLDS["delay_hop_queue_max_us"]


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
def test_the_tbf_drops_with_a_small_buffer_and_its_drops_are_the_flows(one_cubic):
    res = one_cubic
    root = next(q for q in res.meta["linux"]["tc"] if q["kind"] == "tbf")
    child = next(q for q in res.meta["linux"]["tc"] if q["kind"] == "bfifo")
    assert child["options"]["limit"] == 50_000
    assert root["drops"] > 0  # CUBIC fills 1 BDP
    # Every frame the sender sent that its receiver never got was one the tbf dropped.
    fr = res.meta["linux"]["frames"][0]
    assert fr["data_sent"] - fr["data_received"] == root["drops"] == int(res.flows["drops"].iloc[0])
    assert fr["acks_sent"] == fr["acks_received"]
    assert 0 < int(res.summary["drops"].iloc[0]) <= root["drops"]
    assert int(res.queue["backlog_bytes"].max()) <= 50_000


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
def test_the_tbf_does_not_drop_with_a_huge_buffer(tmp_path):
    doc = {**ONE_CUBIC, "duration": "3s", "bottleneck": {"rate": "20Mbps", "buffer": "100BDP"}}
    res = _run(doc, tmp_path / "run")
    root = next(q for q in res.meta["linux"]["tc"] if q["kind"] == "tbf")
    assert root["drops"] == 0
    assert int(res.summary["drops"].iloc[0]) == 0 and int(res.flows["drops"].iloc[0]) == 0
    assert float(res.flows["goodput_mbps"].iloc[0]) > 0.5 * PAYLOAD_MBPS


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
def test_two_flows_of_different_rtts_both_get_data(tmp_path):
    doc = {
        "name": "tb2-two-rtts",
        "duration": "4s",
        "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
        "flows": [
            {"cc": "cubic", "rtt": "10ms", "pacing": "none"},
            {"cc": "reno", "rtt": "40ms", "start": "0.5s"},
        ],
    }
    res = _run(doc, tmp_path / "run")
    f = res.flows
    assert list(f["cc_kernel"]) == ["cubic", "reno"]
    assert (f["goodput_mbps"] > 1.0).all(), f["goodput_mbps"].tolist()
    assert (f["bytes"] > 0).all()
    # Each flow's own delay: its RTT, never less. The first flow starts on an
    # empty queue (within 1 ms of its RTT); the second starts into the first
    # one's standing queue, which need not drain while it runs, so its
    # minimum may hold up to the buffer's drain time (25 kB at 20 Mbit/s:
    # 10 ms) more.
    for i, rtt, queue_ms in ((0, 10.0, 0.0), (1, 40.0, 10.0)):
        assert rtt <= float(f["min_rtt_ms"].iloc[i]) < rtt + queue_ms + 1.0, (i, f["min_rtt_ms"].tolist())
    # The later flow sent nothing before its start; its data began after it.
    late = res.samples[(res.samples.flow == 1) & (res.samples.time_s <= 0.5)]
    assert (late["delivered_bytes"] == 0).all()
    times = res.meta["linux"]["flow_times"]["1"]
    assert 0.5 <= times["launched_s"] < times["syn_s"] < times["established_s"] < 1.0
    assert _our_processes() == []


# (kind, trial): even trials signal while the namespaces are being built,
# odd ones while the traffic flows (scripts/signal_trials.py --testbed bridge-tbf).
_TRIALS = [("SIGINT", 0), ("SIGINT", 1), ("SIGTERM", 1), ("SIGKILL", 1)]


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
@pytest.mark.parametrize(("kind", "i"), _TRIALS, ids=[f"{k}-{i}" for k, i in _TRIALS])
def test_a_signal_leaves_nothing_behind(tmp_path, kind, i):
    """A signal ends the run with 128 + signal and leaves no namespace,
    process (delay hop, driver, iperf3), work directory, lock or output;
    after SIGKILL, ``ccarena linux cleanup`` removes it all."""
    r = _SIGNAL_TRIALS.trial(kind, i, tmp_path, TESTBED)
    assert r["ok"], json.dumps(r)


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bottleneck": {"rate": "20Mbps", "buffer": "1BDP", "qdisc": "fq_codel"}}, "bottleneck.qdisc"),
        ({"flows": [{"cc": "cubic", "rtt": "20ms", "size": "1MB"}]}, "flows[0].size"),
        ({"flows": [{"cc": "cubic", "rtt": "20ms", "stop": "2s"}]}, "flows[0].stop"),
        ({"flows": [{"cc": "cubic", "rtt": "20ms", "loss": "1%"}]}, "flows[0].loss"),
        ({"flows": [{"cc": "cubic", "rtt": "20ms", "rwnd": "100KB"}]}, "flows[0].rwnd"),
        (
            {"flows": [{"cc": "cubic", "rtt": "20ms", "jitter": {"model": "slotted", "max": "2ms"}}]},
            "flows[0].jitter",
        ),
        ({"capture": {"at": ["sender"]}}, "[capture]"),
    ],
)
def test_a_bad_field_is_refused_before_anything_is_built(tmp_path, change, field):
    before = netns.owned_here()
    with pytest.raises(lb.LinuxUnsupported) as e:
        _run({**ONE_CUBIC, **change}, tmp_path / "run")
    msg = str(e.value)
    assert field in msg and TESTBED in msg and "\n" not in msg, msg
    assert netns.owned_here() == before  # not even the probe namespace
    assert not (tmp_path / "run").exists()


@pytest.mark.linux
@pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")
def test_the_command_line_refuses_in_one_line(write_scenario):
    doc = {**ONE_CUBIC, "flows": [{"cc": "cubic", "rtt": "20ms", "size": "1MB"}]}
    path = write_scenario(doc)
    cp = subprocess.run(
        [sys.executable, "-m", "ccarena", "run", str(path), "--backend", "linux", "--testbed", TESTBED],
        capture_output=True,
        text=True,
    )
    assert cp.returncode == 2, cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1 and "flows[0].size" in cp.stderr, cp.stderr


def test_a_kernel_run_is_identified_with_its_testbed(tmp_path):
    """conformance: the testbed is part of a kernel run's identity and
    directory, the default testbed's unchanged (recorded runs keep theirs)."""
    scn = Scenario.from_dict(ONE_CUBIC)
    default, other = kernel_hash(scn), kernel_hash(scn, TESTBED)
    assert default == kernel_hash(scn, DEFAULT_TESTBED) and default != other
    assert run_dir(tmp_path, scn, "linux").name == default[:16] + "-linux"
    assert run_dir(tmp_path, scn, "linux", TESTBED).name == other[:16] + "-linux-bridge-tbf"
    assert KernelRuns(tmp_path, testbed=TESTBED).get(scn) is None
    assert KernelRun(True, None).testbed == DEFAULT_TESTBED  # type: ignore[arg-type]
