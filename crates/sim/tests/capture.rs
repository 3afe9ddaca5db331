//! Packet captures (`[capture]`): they never change a run's results, and
//! what they hold is what the result tables count (every segment a sender
//! sent, every one its receiver got, every retransmission, the minimum
//! RTT), in files that are the same bits for the same scenario.

mod common;
use ccarena_sim::capture::pcapng::read_pcapng;
use ccarena_sim::capture::PORT_BASE;
use ccarena_sim::world::Results;
use common::{assert_identical, sim};
use serde_json::{json, Value};

/// Two loss-based flows sharing a half-BDP tail-drop queue (losses and
/// recoveries), the second from 1 s.
fn lossy() -> Value {
    json!({
        "duration": "4s",
        "bottleneck": {"rate": "20Mbps", "buffer": "0.5BDP"},
        "flows": [
            {"cc": "cubic", "rtt": "40ms"},
            {"cc": "reno", "rtt": "20ms", "start": "1s"},
        ],
    })
}

fn with_capture(mut j: Value, capture: Value) -> Value {
    j["capture"] = capture;
    j
}

/// One frame's TCP fields: (flow, data?, seq, ack, payload, time ns).
#[derive(Debug, Clone, Copy)]
struct Seg {
    flow: u32,
    data: bool,
    seq: u32,
    ack: u32,
    payload: u32,
    ts: u64,
}

fn segments(bytes: &[u8]) -> Vec<Seg> {
    let be16 = |b: &[u8], o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
    let be32 = |b: &[u8], o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
    read_pcapng(bytes)
        .unwrap()
        .into_iter()
        .map(|fr| {
            let (ts, f) = (fr.ts_ns, fr.data);
            assert_eq!(be16(&f, 12), 0x0800, "IPv4");
            let ip_total = u32::from(be16(&f, 16));
            let tcp = 34;
            let (sport, dport) = (be16(&f, tcp), be16(&f, tcp + 2));
            let hdr = u32::from(f[tcp + 12] >> 4) * 4;
            let payload = ip_total - 20 - hdr;
            // Data goes to the receivers' address, 10.201.k.2.
            let data = f[33] == 2;
            let port = if data { dport } else { sport };
            Seg {
                flow: u32::from(port - PORT_BASE),
                data,
                seq: be32(&f, tcp + 4),
                ack: be32(&f, tcp + 8),
                payload,
                ts,
            }
        })
        .collect()
}

fn col(r: &Results, table: &str, name: &str) -> Vec<i64> {
    r.table(table).i64s(name).to_vec()
}

#[test]
fn a_capture_never_changes_the_results() {
    let plain = sim(lossy());
    let all = json!({"at": ["sender", "receiver", "bottleneck"]});
    let captured = sim(with_capture(lossy(), all.clone()));
    assert_identical(&plain, &captured, "with and without [capture]: ");
    assert_eq!(captured.captures.len(), 3);
    assert!(plain.captures.is_empty());
    // A network whose ACKs cross a link of their own (two-way routes).
    let net = json!({
        "duration": "3s",
        "links": [
            {"name": "up", "rate": "30Mbps", "buffer": "1BDP", "delay": "5ms"},
            {"name": "down", "rate": "10Mbps", "buffer": "1BDP", "delay": "5ms"},
        ],
        "flows": [
            {"cc": "cubic", "rtt": "20ms", "route": ["up"], "reverse_route": ["down"]},
            {"cc": "bbr1", "rtt": "30ms", "route": ["down"], "reverse_route": ["up"]},
        ],
    });
    let a = sim(net.clone());
    let b = sim(with_capture(
        net,
        json!({"at": ["sender", "up", "down", "receiver"]}),
    ));
    assert_identical(&a, &b, "a network with and without [capture]: ");
    // The ACKs that cross "down" are in its capture beside its data.
    let down = segments(&b.captures[2].bytes);
    assert!(down.iter().any(|s| s.data) && down.iter().any(|s| !s.data));
}

#[test]
fn the_sender_sees_every_segment_and_retransmission_the_tables_count() {
    let r = sim(with_capture(lossy(), json!({"at": "sender"})));
    let segs = segments(&r.captures[0].bytes);
    let (sent, retx) = (
        col(&r, "flows", "segs_sent"),
        col(&r, "flows", "segs_retrans"),
    );
    for flow in 0..2u32 {
        let data: Vec<&Seg> = segs
            .iter()
            .filter(|s| s.flow == flow && s.data && s.payload > 0)
            .collect();
        assert_eq!(
            data.len() as i64,
            sent[flow as usize],
            "flow {flow}: data frames vs segs_sent"
        );
        // A segment that does not advance the highest sequence sent is a
        // retransmission (the sender's own interface never reorders).
        let mut high: Option<u32> = None;
        let mut again = 0;
        for s in &data {
            let end = s.seq.wrapping_add(s.payload);
            match high {
                Some(h) if (end.wrapping_sub(h) as i32) <= 0 => again += 1,
                _ => high = Some(end),
            }
        }
        assert!(retx[flow as usize] > 0, "the scenario loses packets");
        assert_eq!(again, retx[flow as usize], "flow {flow}: retransmissions");
    }
    // Times never go backwards in a file.
    assert!(segs.windows(2).all(|w| w[0].ts <= w[1].ts));
}

/// An ACK's flow, cumulative ACK and SACK blocks (left, right edges).
type AckSacks = (u32, u32, Vec<(u32, u32)>);

/// The SACK blocks of each ACK in a capture.
fn sacks(bytes: &[u8]) -> Vec<AckSacks> {
    let be32 = |b: &[u8], o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    for fr in read_pcapng(bytes).unwrap() {
        let f = fr.data;
        if f[33] == 2 {
            continue; // data, to the receiver
        }
        let (tcp, hdr) = (34, usize::from(f[34 + 12] >> 4) * 4);
        let mut blocks = Vec::new();
        let mut o = tcp + 20;
        while o < tcp + hdr {
            match f[o] {
                0 => break,
                1 => o += 1,
                kind => {
                    let len = usize::from(f[o + 1]);
                    if kind == 5 {
                        for k in (o + 2..o + len).step_by(8) {
                            blocks.push((be32(&f, k), be32(&f, k + 4)));
                        }
                    }
                    o += len;
                }
            }
        }
        let port = u16::from_be_bytes([f[34], f[35]]);
        out.push((u32::from(port - PORT_BASE), be32(&f, tcp + 8), blocks));
    }
    out
}

#[test]
fn sack_blocks_name_bytes_the_receiver_holds_above_its_cumulative_ack() {
    let r = sim(with_capture(lossy(), json!({"at": "sender"})));
    let segs = segments(&r.captures[0].bytes);
    let mut seen = 0;
    for (flow, ack, blocks) in sacks(&r.captures[0].bytes) {
        // The first data byte of the flow (its SYN's sequence number + 1).
        let first = segs
            .iter()
            .find(|s| s.flow == flow && s.data && s.payload > 0)
            .unwrap()
            .seq;
        let rel = |x: u32| x.wrapping_sub(first);
        for (l, rgt) in blocks {
            seen += 1;
            assert!(
                rel(l) > rel(ack) && rel(rgt) > rel(l),
                "flow {flow}: block {l}-{rgt} at ack {ack}"
            );
            // Whole segments: both edges on the 1448-byte grid.
            assert_eq!((rel(l) % 1448, rel(rgt) % 1448), (0, 0));
        }
    }
    assert!(seen > 0, "losses give SACK blocks");
}

#[test]
fn what_the_sender_sent_is_received_dropped_or_still_travelling() {
    let r = sim(with_capture(
        lossy(),
        json!({"at": ["sender", "receiver"], "packets": "data"}),
    ));
    let at_sender = segments(&r.captures[0].bytes);
    let at_receiver = segments(&r.captures[1].bytes);
    assert!(
        at_sender.iter().chain(&at_receiver).all(|s| s.data),
        "packets = \"data\""
    );
    let received = col(&r, "flows", "segs_received");
    let drops = col(&r, "flows", "drops");
    let travelling = col(&r, "flows", "segs_in_network");
    for flow in 0..2usize {
        let n = |v: &[Seg]| {
            v.iter()
                .filter(|s| s.flow as usize == flow && s.payload > 0)
                .count() as i64
        };
        assert_eq!(
            n(&at_receiver),
            received[flow],
            "flow {flow}: frames at the receiver"
        );
        assert_eq!(
            n(&at_sender),
            received[flow] + drops[flow] + travelling[flow],
            "flow {flow}: conservation"
        );
    }
    // The receiver's cumulative ACKs count the bytes it delivered.
    let full = sim(with_capture(
        lossy(),
        json!({"at": "receiver", "flows": [0]}),
    ));
    let segs = segments(&full.captures[0].bytes);
    assert!(segs.iter().all(|s| s.flow == 0), "flows = [0]");
    let first_ack = segs.iter().find(|s| !s.data).unwrap().ack;
    let last_ack = segs.iter().rev().find(|s| !s.data).unwrap().ack;
    let delivered = col(&full, "flows", "bytes")[0];
    // The SYN-ACK acknowledges the SYN (ISN + 1), where data starts; at
    // the end, at most the one segment a delayed ACK holds is unACKed.
    let unacked = delivered - i64::from(last_ack.wrapping_sub(first_ack));
    assert!(
        (0..=1448).contains(&unacked),
        "{unacked} bytes delivered but not ACKed"
    );
}

#[test]
fn the_same_scenario_gives_the_same_capture_bits_and_max_packets_stops_writing() {
    let cap = json!({"at": ["sender", "bottleneck"], "snaplen": 200});
    let a = sim(with_capture(lossy(), cap.clone()));
    let b = sim(with_capture(lossy(), cap));
    for (x, y) in a.captures.iter().zip(&b.captures) {
        assert_eq!(x.bytes, y.bytes, "{}", x.name);
    }
    let cut = sim(with_capture(
        lossy(),
        json!({"at": "sender", "snaplen": 200, "max_packets": 1000}),
    ));
    let c = &cut.captures[0];
    assert_eq!((c.frames, segments(&c.bytes).len()), (1000, 1000));
    assert_eq!(c.frames + c.skipped, a.captures[0].frames);
    // The first 1,000 frames are those of the full capture.
    let full = read_pcapng(&a.captures[0].bytes).unwrap();
    let first = read_pcapng(&c.bytes).unwrap();
    assert_eq!(first[999], full[999]);
}

/// `[hosts] delack` and `hz`: the delayed-ACK timer on one kernel's jiffies
/// (`tcp/delack.rs`). A flow whose window is three segments on a 100 ms path
/// sends each round a PSH-ended pair (ACKed at once) and a lone segment,
/// whose ACK waits for the timer. Seen at the receiver: every such hold is
/// longer than 40 ms (the timer wheel rounds an expiry up by a tick) and at
/// most the handshake's RTT plus a tick (ato doubles after each fired timer,
/// bounded by the RTT), the holds grow past 44 ms, and every timer ACK leaves
/// on a tick of one phase; with `delack = false` each waits exactly 40 ms.
#[test]
fn timer_acks_leave_on_the_kernels_ticks() {
    for (hosts, tick_ms) in [
        (json!({"latency": "none"}), Some(4u64)),
        (json!({"latency": "none", "hz": 1000}), Some(1)),
        (json!({"latency": "none", "delack": false}), None),
    ] {
        let r = sim(json!({
            "duration": "8s", "seed": 3,
            "bottleneck": {"rate": "10Mbps", "buffer": "4BDP"},
            "flows": [{"cc": "reno", "rtt": "100ms", "rwnd": "4344B"}],
            "hosts": hosts,
            "capture": {"at": "receiver"},
        }));
        let segs = segments(&r.captures[0].bytes);
        let mut arrived = std::collections::HashMap::new();
        let mut last_ack = None;
        let mut holds = Vec::new();
        for s in &segs {
            if s.data && s.payload > 0 {
                arrived.entry(s.seq.wrapping_add(s.payload)).or_insert(s.ts);
            } else if !s.data {
                if last_ack.is_some_and(|a: u32| s.ack.wrapping_sub(a) == 1448) {
                    let hold = s.ts - arrived[&s.ack];
                    if hold > 20_000_000 {
                        holds.push((hold, s.ts));
                    }
                }
                last_ack = Some(s.ack);
            }
        }
        assert!(holds.len() >= 10, "{} timer ACKs", holds.len());
        match tick_ms {
            None => assert!(holds.iter().all(|&(h, _)| h == 40_000_000), "{holds:?}"),
            Some(tick) => {
                let tick = tick * 1_000_000;
                let phase = holds[0].1 % tick;
                for &(h, t) in &holds {
                    assert!(h > 40_000_000 && h <= 100_000_000 + tick, "hold {h} ns");
                    assert_eq!(t % tick, phase, "a timer ACK off the {tick} ns tick");
                }
                assert!(holds.iter().any(|&(h, _)| h > 44_000_000), "{holds:?}");
            }
        }
    }
}
