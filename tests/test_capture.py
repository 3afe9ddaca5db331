"""Packet captures (``[capture]``) read by the real client, tshark: every file
opens without a warning, and tshark's own TCP analysis agrees with ccarena's
tables for the same run (segments, retransmissions, RTTs, ECN marks), on the
simulator and on the Linux backend alike."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ccarena import Scenario, run
from conftest import linux_unavailable

PORT_BASE = 35000
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None, reason="tshark not installed (Debian: apt-get install tshark)"
)

LOSSY: dict[str, Any] = {
    "name": "capture-lossy",
    "duration": "4s",
    "bottleneck": {"rate": "20Mbps", "buffer": "0.5BDP"},
    "flows": [{"cc": "cubic", "rtt": "40ms"}, {"cc": "reno", "rtt": "20ms", "start": "1s"}],
    "capture": {"at": ["sender", "receiver", "bottleneck"]},
}

FIELDS = [
    "frame.time_epoch",
    "ip.dst",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.len",
    "tcp.analysis.retransmission",
    "tcp.analysis.fast_retransmission",
    "tcp.analysis.out_of_order",
    "tcp.analysis.spurious_retransmission",
    "tcp.analysis.ack_rtt",
    "ip.dsfield.ecn",
    "tcp.flags.ece",
]


def tshark_frames(path: Path) -> pd.DataFrame:
    """One row per frame with tshark's fields; fails on anything tshark
    says on stderr beyond its notice about running as root, and on any
    malformed frame."""
    cp = subprocess.run(
        [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=,", "-E", "occurrence=f",
         *[a for f in FIELDS for a in ("-e", f)]],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    complaints = [ln for ln in cp.stderr.splitlines() if ln.strip() and "Running as user" not in ln]
    assert cp.returncode == 0 and not complaints, (path, cp.returncode, complaints)
    malformed = subprocess.run(
        [TSHARK, "-r", str(path), "-Y", "_ws.malformed || _ws.expert.severity == error"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert malformed.strip() == "", malformed[:500]
    rows = [ln.split(",") for ln in cp.stdout.splitlines()]
    df = pd.DataFrame(rows, columns=[f.split(".")[-1] for f in FIELDS])
    df["len"] = df["len"].astype(int)
    df["data"] = df["dst"].str.endswith(".2")
    df["flow"] = [
        int(d if data else s) - PORT_BASE for d, s, data in zip(df.dstport, df.srcport, df.data, strict=True)
    ]
    # A retransmission, as README states it: tshark files one that leaves
    # within the handshake's RTT of the newest data as out-of-order, and
    # marks a fast retransmission as a retransmission too.
    df["again"] = (df[["retransmission", "out_of_order"]] != "").any(axis=1)
    assert ((df.fast_retransmission == "") | (df.retransmission != "")).all()
    # tshark's spurious retransmission: data an ACK seen at that point had
    # already covered; counted as a retransmission on the kernel only.
    df["spurious"] = df.spurious_retransmission != ""
    return df


def agree_with_tables(res, sender: pd.DataFrame, receiver: pd.DataFrame | None) -> None:
    """tshark at the senders (and the receivers) against the flows table.
    The simulator's counts are those of the whole capture; the kernel's
    were read (tcp_info) at a moment the run records, while the capture goes
    on until the socket closes: there they must lie between the capture's
    counts 5 ms before and 5 ms after that moment."""
    flows = res.flows
    read_at = res.meta.get("linux", {}).get("counts_read_s")
    for _, f in flows.iterrows():
        i = int(f.flow)
        data = sender[(sender.flow == i) & sender.data & (sender.len > 0)]
        acks = sender[(sender.flow == i) & ~sender.data & (sender.ack_rtt != "")]
        # At the sender's own interface nothing is reordered: every segment
        # tshark finds below the highest one sent is a retransmission. The
        # simulator's sender hands a segment to its link as it sends it, so
        # none is spurious and README's filter counts them exactly.
        if read_at is None:
            assert len(data) == f.segs_sent, (i, len(data), f.segs_sent)
            assert not data.spurious.any(), i
            assert int(data.again.sum()) == f.segs_retrans, (i, int(data.again.sum()), f.segs_retrans)
        else:
            t = data.time_epoch.astype(float)
            before, after = data[t <= read_at[str(i)] - 0.005], data[t <= read_at[str(i)] + 0.005]
            assert len(before) <= f.segs_sent <= len(after), (i, len(before), f.segs_sent, len(after))
            again = lambda d: int((d.again | d.spurious).sum())  # noqa: E731
            assert again(before) <= f.segs_retrans <= again(after), (i, f.segs_retrans)
        rtt = acks.ack_rtt.astype(float) * 1e3
        # tshark times an ACK from the segment it covers: the smallest is
        # the flow's min RTT as the sender measured it (tcp_info's on Linux,
        # which starts from the SYN's RTT: within 0.2 ms there), unless an
        # ACK of retransmitted data gave a timestamp sample, which is whole
        # milliseconds and so up to 1 ms below it (`tcp_ack_update_rtt`;
        # both backends since model 9).
        assert rtt.min() - 1.0 < f.min_rtt_ms < rtt.min() + 0.2, (i, rtt.min(), f.min_rtt_ms)
        # Its mean against the mean smoothed RTT: the same samples, one
        # averaged over ACKs, the other over time through the EWMA.
        assert abs(rtt.mean() - f.srtt_mean_ms) / f.srtt_mean_ms < 0.1, (i, rtt.mean(), f.srtt_mean_ms)
        if receiver is not None:
            got = receiver[(receiver.flow == i) & receiver.data & (receiver.len > 0)]
            assert len(got) == f.segs_received, (i, len(got), f.segs_received)


@needs_tshark
def test_simulated_captures_open_in_tshark_and_agree_with_the_tables(tmp_path):
    res = run(Scenario.from_dict(LOSSY), out=tmp_path / "run")
    assert set(res.captures) == {"sender", "receiver", "bottleneck"}
    meta = {c["point"]: c for c in res.meta["captures"]}
    frames = {p: tshark_frames(path) for p, path in res.captures.items()}
    for p, df in frames.items():
        assert len(df) == meta[p]["frames"] > 0 and meta[p]["skipped"] == 0
    assert (res.flows.segs_retrans > 0).all(), "the scenario loses packets"
    agree_with_tables(res, frames["sender"], frames["receiver"])
    # In the dumbbell every packet that leaves the bottleneck reaches its
    # receiver at once, and only data crosses it.
    bn, rcv = frames["bottleneck"], frames["receiver"]
    assert bn.data.all()
    assert list(bn.time_epoch) == list(rcv[rcv.data].time_epoch)


@needs_tshark
def test_ce_marks_and_their_echo_are_in_the_headers(tmp_path):
    doc = {
        "name": "capture-ecn",
        "duration": "3s",
        "bottleneck": {"rate": "20Mbps", "buffer": "2BDP", "qdisc": "codel", "ecn": True},
        "flows": [{"cc": "cubic", "rtt": "20ms", "ecn": True}],
        "capture": {"at": ["receiver", "sender"]},
    }
    res = run(Scenario.from_dict(doc), out=tmp_path / "run")
    rcv, snd = tshark_frames(res.captures["receiver"]), tshark_frames(res.captures["sender"])
    marks = int(res.flows.marks.iloc[0])
    assert marks > 0
    # CE (3) on exactly the marked segments; ECT(0) (2) on every other one.
    data = rcv[rcv.data & (rcv.len > 0)]
    assert int((data.ecn == "3").sum()) == marks
    assert int((data.ecn == "2").sum()) == len(data) - marks
    # Each mark is echoed (ECE) until the sender's CWR.
    assert (snd[~snd.data].ece == "1").sum() >= marks


def test_capture_files_are_part_of_the_run_directory(tmp_path):
    """Same bits from the same scenario; a rerun replaces its own files; a
    file of the user's in capture/ is never replaced."""
    doc = copy.deepcopy(LOSSY)
    doc["capture"] = {"at": "sender", "packets": "data", "max_packets": 500}
    a = run(Scenario.from_dict(doc), out=tmp_path / "a")
    b = run(Scenario.from_dict(doc), out=tmp_path / "b")
    assert a.captures["sender"].read_bytes() == b.captures["sender"].read_bytes()
    meta = a.meta["captures"][0]
    assert meta["frames"] == 500 and meta["skipped"] > 0
    run(Scenario.from_dict(doc), out=tmp_path / "a")  # replaces its own run
    (tmp_path / "a" / "capture" / "notes.txt").write_text("mine")
    from ccarena.errors import StoreError

    with pytest.raises(StoreError):
        run(Scenario.from_dict(doc), out=tmp_path / "a")
    assert (tmp_path / "a" / "capture" / "notes.txt").read_text() == "mine"
    # Without [capture], nothing of the kind, and the hash of the scenario
    # is what it was before captures existed (no "capture" key).
    plain = copy.deepcopy(LOSSY)
    del plain["capture"]
    assert "capture" not in Scenario.from_dict(plain).normalized


def test_a_bad_capture_field_is_one_line_and_exit_2(tmp_path, write_scenario):
    doc = copy.deepcopy(LOSSY)
    doc["capture"] = {"at": ["sender", "router"]}
    path = write_scenario(doc)
    out = tmp_path / "out"
    cp = subprocess.run(
        [sys.executable, "-m", "ccarena", "run", str(path), "--out", str(out)], capture_output=True, text=True
    )
    assert cp.returncode == 2
    lines = cp.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "capture.at" in lines[0] and "router" in lines[0] and "bottleneck" in lines[0]
    ), lines
    assert not out.exists()


def _linux_why_not() -> str | None:
    if TSHARK is None or shutil.which("tcpdump") is None:
        return "needs tshark and tcpdump"
    return linux_unavailable()


@pytest.mark.linux
def test_linux_captures_open_side_by_side_and_agree_with_the_kernel(tmp_path):
    why = _linux_why_not()
    if why:
        pytest.skip(why)
    res = run(Scenario.from_dict(LOSSY), out=tmp_path / "linux", backend="linux")
    sim = run(Scenario.from_dict(LOSSY), out=tmp_path / "sim")
    meta = {c["point"]: c for c in res.meta["captures"]}
    assert set(meta) == {"sender", "receiver", "bottleneck"}
    frames = {p: tshark_frames(path) for p, path in res.captures.items()}
    if any(m["dropped_by_kernel"] for m in meta.values()):
        pytest.skip(f"tcpdump lost frames on this machine: {json.dumps(meta)}")
    # No skip for a run the self-checks distrust: the capture and tcp_info
    # watch the same real connection, however well the bottleneck kept time.
    # The kernel's own counts (tcp_info) against tshark's analysis of what
    # tcpdump saw.
    agree_with_tables(res, frames["sender"], None)
    # Side by side: the same addresses and ports for the same flows, times
    # from each run's start.
    sim_snd = tshark_frames(sim.captures["sender"])
    for df in (frames["sender"], sim_snd):
        first = df.iloc[0]
        assert (first.dst, first.dstport) == ("10.201.0.2", str(PORT_BASE))
        assert float(first.time_epoch) < 1.0
    assert frames["bottleneck"].data.all()
