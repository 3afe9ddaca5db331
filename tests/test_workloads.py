"""Workloads: pcap/pcapng reading, chunk splitting, the three replay modes,
scenario generation. The captures are written here with dpkt's writers."""

from __future__ import annotations

import socket
import tomllib
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
import pytest

from ccarena import workloads as wl

EPOCH = 1_591_747_200  # 2020-06-10, the MAWI trace's day
MS = 1_000_000  # ns


def eth_frame(src, dst, sport, dport, payload, *, proto="tcp", tcp_opts=12, v6=False, flags=dpkt.tcp.TH_ACK):
    """An Ethernet frame of one TCP (header 20 + ``tcp_opts`` bytes) or UDP packet with ``payload`` bytes."""
    if proto == "tcp":
        l4 = dpkt.tcp.TCP(sport=sport, dport=dport, flags=flags, data=b"\xab" * payload)
        if tcp_opts:
            l4.opts = b"\x01\x01\x08\x0a" + b"\x00" * (tcp_opts - 4)  # NOP NOP timestamps
            l4.off = (20 + tcp_opts) // 4
        nxt = dpkt.ip.IP_PROTO_TCP
    else:
        l4 = dpkt.udp.UDP(sport=sport, dport=dport, data=b"\xcd" * payload)
        l4.ulen = 8 + payload
        nxt = dpkt.ip.IP_PROTO_UDP
    if v6:
        ip = dpkt.ip6.IP6(
            src=socket.inet_pton(socket.AF_INET6, src),
            dst=socket.inet_pton(socket.AF_INET6, dst),
            nxt=nxt,
            hlim=64,
            data=l4,
        )
        ip.plen = len(bytes(l4))
        etype = dpkt.ethernet.ETH_TYPE_IP6
    else:
        ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=nxt, data=l4)
        etype = dpkt.ethernet.ETH_TYPE_IP
    eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=etype, data=ip)
    return bytes(eth)


A = ("10.0.0.1", "10.0.0.2", 40000, 80)
A_REV = ("10.0.0.2", "10.0.0.1", 80, 40000)
B6 = ("2001:db8::1", "2001:db8::2", 5555, 443)
C_UDP = ("10.0.0.3", "10.0.0.4", 53, 5353)
D_ACKS = ("10.0.0.9", "10.0.0.8", 1234, 22)

# (time from the capture's start in us, flow, payload, extra): flow A's data pauses are exactly 100 ms
# (splits), 99.999 ms (does not) and 250 ms (splits)
PACKETS = [
    (0, A, 0, {"flags": dpkt.tcp.TH_SYN}),
    (5_000, A_REV, 0, {"flags": dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK}),
    (10_000, A, 1000, {}),
    (15_000, A_REV, 200, {}),
    (20_000, A, 1000, {}),
    (30_000, D_ACKS, 0, {}),
    (50_000, B6, 1448, {"v6": True}),
    (60_000, B6, 1448, {"v6": True}),
    (70_000, B6, 1448, {"v6": True}),
    (80_000, C_UDP, 100, {"proto": "udp"}),
    (120_000, A, 1448, {}),  # 100 ms after the previous data packet of A: new chunk
    (130_000, D_ACKS, 0, {}),
    (219_999, A, 500, {}),  # 99.999 ms later: same chunk
    (469_999, A, 300, {}),  # 250 ms later: new chunk
    (500_000, A_REV, 0, {}),
]

ARP = (
    bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\xff" * 6, type=dpkt.ethernet.ETH_TYPE_ARP))
    + b"\x00" * 28
)


def write_capture(path: Path, fmt: str = "pcap", snaplen: int | None = None, nano: bool = False, base=EPOCH):
    with open(path, "wb") as f:
        if fmt == "pcap":
            w = dpkt.pcap.Writer(f, snaplen=snaplen or 65535, nano=nano)
        else:
            w = dpkt.pcapng.Writer(f, snaplen=snaplen or 65535)
        first = True
        for us, (src, dst, sp, dp), payload, extra in PACKETS:
            buf = eth_frame(src, dst, sp, dp, payload, **extra)
            if snaplen:
                buf = buf[:snaplen]
            w.writepkt(buf, ts=base + us / 1e6)
            if first:
                w.writepkt(ARP, ts=base + 0.001)
                first = False
    return path


def flow_row(trace, key, proto="tcp"):
    src, dst, sp, dp = key
    f = trace.flows
    rows = f[(f.src == src) & (f.dst == dst) & (f.sport == sp) & (f.dport == dp) & (f.proto == proto)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# ----------------------------------------------------------------------------- pcap reading


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("snaplen", [None, 96, 68])  # 68: just the TCP data offset of the IPv6 packets
def test_read_capture_flows(tmp_path, fmt, snaplen):
    trace = wl.read_pcap(write_capture(tmp_path / f"c.{fmt}", fmt, snaplen))
    assert len(trace.flows) == 5
    assert trace.stats["packets"] == len(PACKETS) + 1
    assert trace.stats["not_ip"] == 1
    assert trace.stats["used"] == len(PACKETS)
    assert trace.stats["truncated"] == (0 if snaplen is None else sum(p[2] > 0 for p in PACKETS))
    assert abs(trace.epoch_s - EPOCH) < 1e-6
    assert trace.duration_ns == 500 * MS

    a = flow_row(trace, A)
    assert (a.start_ns, a.end_ns, a.packets, a.data_packets) == (0, 469_999_000, 6, 5)
    assert a.bytes == 1000 + 1000 + 1448 + 500 + 300  # from the IP length, whatever was captured
    assert a.chunks == 3
    rev = flow_row(trace, A_REV)
    assert (rev.start_ns, rev.end_ns, rev.bytes, rev.packets, rev.chunks) == (5 * MS, 500 * MS, 200, 3, 1)
    b = flow_row(trace, B6)
    assert (b.start_ns, b.bytes, b.chunks) == (50 * MS, 3 * 1448, 1)
    c = flow_row(trace, C_UDP, "udp")
    assert (c.start_ns, c.bytes, c.packets) == (80 * MS, 100, 1)
    d = flow_row(trace, D_ACKS)
    assert (d.bytes, d.packets, d.chunks) == (0, 2, 0)
    assert list(trace.flows.flow) == list(range(5))  # ids in order of first packet

    ch = trace.chunks[trace.chunks.flow == a.flow]
    assert ch[["start_ns", "end_ns", "bytes", "packets"]].values.tolist() == [
        [10 * MS, 20 * MS, 2000, 2],
        [120 * MS, 219_999_000, 1948, 2],
        [469_999_000, 469_999_000, 300, 1],
    ]
    # every flow's chunks sum to its bytes
    per_flow = trace.chunks.groupby("flow").bytes.sum()
    with_data = trace.flows[trace.flows.bytes > 0].set_index("flow").bytes
    pd.testing.assert_series_equal(per_flow, with_data, check_names=False)


def test_read_tcp_only_and_duration(tmp_path):
    p = write_capture(tmp_path / "c.pcap")
    trace = wl.read_pcap(p, protocols=("tcp",))
    assert set(trace.flows.proto) == {"tcp"} and len(trace.flows) == 4
    assert trace.stats["other_proto"] == 1
    first = wl.read_pcap(p, duration_s=0.1)  # packets at t < 100 ms only
    assert flow_row(first, A).bytes == 2000
    assert first.stats["packets"] == sum(p[0] < 100_000 for p in PACKETS) + 1
    with pytest.raises(ValueError, match="protocol"):
        wl.read_pcap(p, protocols=("sctp",))


def test_idle_timeout_starts_a_new_flow(tmp_path):
    trace = wl.read_pcap(write_capture(tmp_path / "c.pcap"), idle_timeout_s=0.2)
    a = trace.flows[(trace.flows.src == A[0]) & (trace.flows.sport == A[2])]
    assert a.bytes.tolist() == [1000 + 1000 + 1448 + 500, 300]  # 250 ms of silence >= 200 ms
    assert a.start_ns.tolist() == [0, 469_999_000]


def test_chunk_threshold_is_inclusive_at_nanoseconds(tmp_path):
    """A pause equal to the threshold splits; one nanosecond shorter does not."""
    p = tmp_path / "ns.pcap"
    with open(p, "wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for t_ns in (0, 100_000_000, 199_999_999, 300_000_000):
            w.writepkt(eth_frame(*A, 100), ts=1000 + t_ns / 1e9)
    trace = wl.read_pcap(p)
    assert trace.chunks.start_ns.tolist() == [0, 100_000_000, 300_000_000]
    assert trace.chunks.bytes.tolist() == [100, 200, 100]
    # the same pauses at threshold 99.999999 ms: every pause splits
    assert len(wl.read_pcap(p, threshold_s=0.099_999_999).chunks) == 4


def test_vlan_and_unsupported_link(tmp_path):
    p = tmp_path / "vlan.pcap"
    frame = eth_frame(*A, 700)
    tagged = frame[:12] + b"\x81\x00\x00\x07" + frame[12:]
    with open(p, "wb") as f:
        w = dpkt.pcap.Writer(f)
        w.writepkt(tagged, ts=EPOCH)
    assert wl.read_pcap(p).flows.bytes.tolist() == [700]
    short = tmp_path / "short.pcap"
    with open(short, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=60)
        w.writepkt(eth_frame(*B6, 1000, v6=True)[:60], ts=EPOCH)  # IPv6 header, no TCP data offset
    t = wl.read_pcap(short)
    assert len(t.flows) == 0 and t.stats["short"] == 1
    q = tmp_path / "odd.pcap"
    with open(q, "wb") as f:
        dpkt.pcap.Writer(f, linktype=147).writepkt(b"\x00" * 40, ts=EPOCH)
    with pytest.raises(ValueError, match="link type 147"):
        wl.read_pcap(q)


def test_raw_ip_linktype(tmp_path):
    p = tmp_path / "raw.pcap"
    with open(p, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW)
        w.writepkt(eth_frame(*A, 321)[14:], ts=EPOCH)
        w.writepkt(eth_frame(*B6, 123, v6=True)[14:], ts=EPOCH + 1)
    assert wl.read_pcap(p).flows.bytes.tolist() == [321, 123]


# ----------------------------------------------------------------------------- chunks


@pytest.fixture
def trace(tmp_path):
    return wl.read_pcap(write_capture(tmp_path / "c.pcap"))


def test_split_at_coarser_thresholds(trace):
    a = flow_row(trace, A).flow
    # 0.2 s: the 100 ms pause no longer splits, the 250 ms one does
    c = trace.split(0.2)
    assert c[c.flow == a][["start_ns", "bytes"]].values.tolist() == [[10 * MS, 3948], [469_999_000, 300]]
    c = trace.split(0.25)  # a pause equal to the threshold splits
    assert c[c.flow == a].bytes.tolist() == [3948, 300]
    c = trace.split(0.250_001)
    assert c[c.flow == a].bytes.tolist() == [4248]
    # never split: one chunk per flow with data
    never = trace.split(None)
    assert never[never.flow == a][["start_ns", "end_ns", "bytes"]].values.tolist() == [
        [10 * MS, 469_999_000, 4248]
    ]
    assert len(never) == (trace.flows.bytes > 0).sum()
    assert trace.split(float("inf")).equals(never)
    pd.testing.assert_frame_equal(trace.split(0.1), trace.chunks)
    with pytest.raises(ValueError, match="finer"):
        trace.split(0.05)


def test_merge_chunks_equals_splitting_packets_again(tmp_path):
    p = write_capture(tmp_path / "c.pcap")
    fine = wl.read_pcap(p, threshold_s=0.01)
    for thr in (0.1, 0.3):
        coarse = wl.read_pcap(p, threshold_s=thr)
        pd.testing.assert_frame_equal(fine.split(thr), coarse.chunks)


def test_size_cdf_by_flow_and_byte():
    by_flow = wl.size_cdf([6, 1, 2, 1], by="flow")
    assert by_flow.size_bytes.tolist() == [1, 2, 6]
    assert np.allclose(by_flow.cdf, [0.5, 0.75, 1.0])
    by_byte = wl.size_cdf([6, 1, 2, 1], by="byte")
    assert np.allclose(by_byte.cdf, [0.2, 0.4, 1.0])


def test_trace_window(trace):
    w = trace.window(0.3, start_s=0.1)
    a = flow_row(w, A)
    assert a.start_ns == 20 * MS  # its first chunk in the window (the flow began before it)
    assert a.bytes == 1948 and a.chunks == 1
    assert w.duration_ns == 300 * MS
    assert set(w.flows.proto) == {"tcp"}  # the UDP flow (80 ms) is outside


# ----------------------------------------------------------------------------- the three modes


def test_collapsed(trace):
    w = wl.collapsed(trace)
    assert w.mode == "collapsed" and w.chunks is None
    assert len(w) == 4  # the ACK-only flow has nothing to send
    assert w.flows.start_ns.tolist() == [0, 5 * MS, 50 * MS, 80 * MS]
    a = w.flows[w.flows.trace_flow == flow_row(trace, A).flow].iloc[0]
    assert (a.start_ns, a.size_bytes) == (0, 4248)
    assert w.total_bytes == 4248 + 200 + 3 * 1448 + 100
    assert w.duration_ns == 500 * MS
    assert w.mean_rate_bps == pytest.approx(w.total_bytes * 8 / 0.5)


def test_replay(trace):
    w = wl.replay(trace)
    assert w.mode == "replay" and w.meta["threshold_s"] == 0.1
    i = int(np.flatnonzero(w.flows.trace_flow == flow_row(trace, A).flow)[0])
    ch = w.chunks[w.chunks.flow == i]
    assert ch[["offset_ns", "bytes"]].values.tolist() == [
        [10 * MS, 2000],
        [120 * MS, 1948],
        [469_999_000, 300],
    ]
    assert (w.chunks.groupby("flow").bytes.sum().to_numpy() == w.flows.size_bytes.to_numpy()).all()
    rev = int(np.flatnonzero(w.flows.trace_flow == flow_row(trace, A_REV).flow)[0])
    assert w.chunks[w.chunks.flow == rev][["offset_ns", "bytes"]].values.tolist() == [[10 * MS, 200]]
    never = wl.replay(trace, threshold_s=float("inf"))
    assert len(never.chunks) == len(never)


def test_synthetic_draws_from_collapsed(trace):
    col = wl.collapsed(trace)
    s1 = wl.synthetic(col, seed=3)
    s2 = wl.synthetic(col, seed=3)
    pd.testing.assert_frame_equal(s1.flows, s2.flows)
    assert len(s1) == len(col) and s1.mode == "synthetic"
    assert set(s1.flows.size_bytes) <= set(col.flows.size_bytes)
    gaps = set(np.diff(np.sort(col.flows.start_ns)))
    assert set(np.diff(np.r_[0, s1.flows.start_ns])) <= gaps
    long = wl.synthetic(col, seed=4, duration_s=60)
    assert long.duration_ns == 60_000_000_000 and long.flows.start_ns.max() < 60e9
    mean_gap = np.diff(np.sort(col.flows.start_ns)).mean()
    assert len(long) == pytest.approx(60e9 / mean_gap, rel=0.2)
    # sizes and gaps independent: the same sizes multiset drawn with another seed differs in order
    assert not wl.synthetic(col, seed=5).flows.equals(s1.flows)


def test_workload_window_filter_scale(tmp_path):
    w = wl.trace_like(20, seed=2)
    win = w.window(5, start_s=10)
    assert win.flows.start_ns.between(0, 5e9 - 1).all() and win.duration_ns == 5_000_000_000
    assert len(win) == ((w.flows.start_ns >= 10e9) & (w.flows.start_ns < 15e9)).sum()
    small = w.filter(max_size=18_200)
    assert (small.flows.size_bytes <= 18_200).all() and len(small) > 0.85 * len(w)
    fast = w.scale_rate(2.0)
    assert fast.mean_rate_bps == pytest.approx(2 * w.mean_rate_bps, rel=1e-6)
    assert fast.flows.size_bytes.equals(w.flows.size_bytes)
    assert w.to_rate(3e9).mean_rate_bps == pytest.approx(3e9, rel=1e-6)
    w.save(tmp_path / "w")
    back = wl.Workload.load(tmp_path / "w")
    pd.testing.assert_frame_equal(back.flows, w.flows)
    assert (back.mode, back.duration_ns, back.meta) == (w.mode, w.duration_ns, w.meta)


def test_replay_window_keeps_chunks_consistent(trace):
    w = wl.replay(trace).window(0.06)  # flows starting before 60 ms
    assert len(w) == 3
    assert w.chunks.flow.max() == 2
    assert (w.chunks.groupby("flow").bytes.sum().to_numpy() == w.flows.size_bytes.to_numpy()).all()


# ----------------------------------------------------------------------------- scenario entries


def test_scenario_flows_collapsed_round_robin(trace):
    w = wl.collapsed(trace)
    entries = wl.scenario_flows(w, cc="bbr3", senders=2)
    assert len(entries) == len(w)
    assert [e["host"] for e in entries] == [0, 1, 0, 1]
    e0 = entries[0]
    assert set(e0) == {"cc", "start", "size", "host"}
    assert e0["cc"] == "bbr3" and e0["start"] == "0ns" and e0["size"].endswith("B")
    starts = [int(e["start"][:-2]) for e in entries]
    assert starts == sorted(starts) and starts == w.flows.start_ns.tolist()
    assert [int(e["size"][:-1]) for e in entries] == w.flows.size_bytes.tolist()
    assert "host" not in wl.scenario_flows(w, senders=0)[0]
    assert wl.scenario_flows(w, senders=1, rtt="20ms")[3] == {
        "cc": "cubic",
        "start": entries[3]["start"],
        "size": entries[3]["size"],
        "host": 0,
        "rtt": "20ms",
    }


def test_scenario_flows_replay(trace):
    w = wl.replay(trace)
    entries = wl.scenario_flows(w, "cubic", senders=3)
    i = int(np.flatnonzero(w.flows.trace_flow == flow_row(trace, A).flow)[0])
    assert entries[i]["chunks"] == [
        ["10000000ns", "2000B"],
        ["120000000ns", "1948B"],
        ["469999000ns", "300B"],
    ]
    assert "size" not in entries[i]
    assert [e["host"] for e in entries] == [0, 1, 2, 0]
    assert "chunks" not in wl.scenario_flows(w, replay_chunks=False)[0]
    with pytest.raises(ValueError, match="no chunks"):
        wl.scenario_flows(wl.collapsed(trace), replay_chunks=True)


def test_successive_flow_entry():
    e = wl.successive_flow("cubic", "1MB", gap="100ms", count=20, start="0.5s")
    assert e == {"cc": "cubic", "start": "0.5s", "size": "1MB", "repeat": {"gap": "100ms", "count": 20}}
    assert "count" not in wl.successive_flow("bbr1", "100KB")["repeat"]


def test_workload_scenario_toml_roundtrip(trace, tmp_path):
    doc = wl.workload_scenario(wl.replay(trace), cc="bbr3", rate="3Gbps", rtt="20ms", buffer="2BDP")
    assert doc["duration"] == "5500000000ns"  # 0.5 s of trace + 5 s to drain
    p = wl.write_toml(doc, tmp_path / "s.toml")
    assert tomllib.loads(p.read_text()) == doc


def test_generated_flows_validate_in_the_core(trace):
    """The sizes and times as written ("<n>B", "<n>ns") pass the core's validation, exactly."""
    from ccarena import Scenario

    w = wl.collapsed(trace)
    scn = Scenario.from_dict(wl.workload_scenario(w, senders=2, rate="100Mbps"))
    got = [(f["start_ns"], f["size_bytes"], f["host"]) for f in scn.normalized["flows"]]
    want = zip(w.flows.start_ns.tolist(), w.flows.size_bytes.tolist(), [0, 1, 0, 1], strict=True)
    assert got == list(want)
    rep = Scenario.from_dict(wl.workload_scenario(wl.replay(trace), senders=2, rate="100Mbps"))
    assert rep.normalized["flows"][0]["chunks"] == [[10 * MS, 2000], [120 * MS, 1948], [469_999_000, 300]]


def test_scenario_end_leaves_out_late_flows_and_chunks(trace):
    w = wl.replay(trace)
    doc = wl.workload_scenario(w, duration_s=0.3)
    assert len(doc["flows"]) == 4
    assert doc["flows"][0]["chunks"] == [["10000000ns", "2000B"], ["120000000ns", "1948B"]]
    doc = wl.workload_scenario(w, duration_s=0.06)  # only flows with a chunk before 60 ms
    assert [e["start"] for e in doc["flows"]] == ["0ns", "5000000ns", "50000000ns"]
    assert wl.scenario_flows(wl.collapsed(trace), end_ns=50 * MS)[-1]["start"] == "5000000ns"


def test_replay_runs_in_the_simulator(trace, tmp_path):
    """Replay through the core: every flow delivers its chunks; the first flow
    completes one RTT after its last chunk is written; flows alternate hosts."""
    import ccarena

    w = wl.replay(trace)
    doc = wl.workload_scenario(w, cc="cubic", rate="100Mbps", rtt="20ms", senders=2, drain_s=1.0)
    r = ccarena.run(doc, out=tmp_path / "run")
    f = r.flows.sort_values("flow").reset_index(drop=True)
    assert f.size_bytes.tolist() == w.flows.size_bytes.tolist()
    assert (f.bytes == f.size_bytes).all() and f.fct_s.notna().all()
    assert f.host.tolist() == [0, 1, 0, 1]
    assert f.fct_s[0] >= 0.469_999 + 0.020 - 1e-9  # written at 469.999 ms, ACKed one RTT later
    assert f.fct_s[2] < 0.1  # B6's one chunk of 3 segments


def test_successive_flows_run_in_the_simulator(tmp_path):
    import ccarena

    doc = {
        "name": "succ",
        "duration": "3s",
        "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
        "path": {"rtt": "20ms"},
        "flows": [wl.successive_flow("cubic", "100KB", gap="100ms", count=4, start="0.5s")],
    }
    f = ccarena.run(doc, out=tmp_path / "run").flows.sort_values("start_s")
    assert len(f) == 4 and f.fct_s.notna().all()
    ends = (f.start_s + f.fct_s).to_numpy()
    assert f.start_s.to_numpy()[1:] == pytest.approx(ends[:-1] + 0.1, abs=1e-6)
