//! Invariants over random valid scenarios (issue 10, item 7): a seeded
//! generator draws scenarios across algorithms, queue disciplines, buffers,
//! rates, rate schedules, path impairments, sized, late and repeated flows;
//! every one must run and hold the results' own definitions:
//!
//! - no NaN where a value is defined (goodput, retransmission rate, the
//!   summary's utilization, Jain's index when any flow delivered);
//! - utilization <= 1 and wire utilization <= 1 (over the integrated
//!   capacity), per interval within two frames;
//! - the largest backlog within the queue's limit (tail drop, plus the one
//!   packet waiting for tokens beside it);
//! - per-flow conservation: data segments sent = received + dropped + in
//!   the network (networks of links, trace-driven links and policers among
//!   the scenarios);
//! - determinism: the same scenario and seed give the same bits, with or
//!   without a capture at every point, whose files hold every data
//!   segment sent and received;
//! - every table holds the columns `metrics::schema` defines, in order.
//!
//! `CCARENA_INVARIANT_CASES` sets the number of scenarios (default 150;
//! 1,000 take about 6 s in release) and `CCARENA_INVARIANT_SEED` the
//! generator's seed (default 2026); `make test` runs the default.

mod common;
use ccarena_sim::capture::pcapng::read_pcapng;
use ccarena_sim::capture::{CaptureSpec, Direction, Point, PORT_BASE};
use ccarena_sim::cc::CcConfig;
use ccarena_sim::metrics::schema::TABLES;
use ccarena_sim::qdisc::Limit;
use ccarena_sim::rng::Rng;
use ccarena_sim::scenario::normalize_json;
use ccarena_sim::world::run;
use common::assert_identical;
use serde_json::{json, Value};

fn pick<'a, T>(rng: &mut Rng, xs: &'a [T]) -> &'a T {
    &xs[rng.below(xs.len() as u32) as usize]
}

/// One random valid scenario (a few simulated seconds, at most ~100 Mbit/s
/// so the suite stays fast).
fn scenario(rng: &mut Rng, k: u64) -> Value {
    let rate = *pick(rng, &[2, 5, 10, 20, 50, 100]);
    let qdisc = *pick(
        rng,
        &[
            "taildrop", "taildrop", "red", "codel", "fq_codel", "pie", "cake",
        ],
    );
    // RED needs min (a twelfth of the buffer by default) above avpkt.
    let buffer = if qdisc == "red" {
        "200KB"
    } else {
        *pick(rng, &["0.25BDP", "1BDP", "4BDP", "30pkt", "200KB"])
    };
    let mut bottleneck = json!({"rate": format!("{rate}Mbps"), "buffer": buffer, "qdisc": qdisc});
    if rng.chance(0.25) {
        let r2 = *pick(rng, &[1, 10, 40, 100]);
        bottleneck["rate_schedule"] = json!([["1s", format!("{r2}Mbps")]]);
    }
    if rng.chance(0.2) {
        bottleneck["burst"] = json!(*pick(rng, &["3pkt", "10KB"]));
    }
    if rng.chance(0.2) {
        bottleneck["ecn"] = json!(true);
    }
    // A third of the scenarios are networks: 2-4 links in a row, each flow
    // group crossing a run of them.
    let nlinks = if rng.chance(0.33) {
        2 + rng.below(3)
    } else {
        0
    };
    let mut links = vec![];
    for k in 0..nlinks {
        let mut l = bottleneck.clone();
        l["name"] = json!(format!("l{k}"));
        l["rate"] = json!(format!("{}Mbps", *pick(rng, &[5, 10, 20, 50])));
        l["delay"] = json!(format!("{}ms", *pick(rng, &[0, 1, 5, 10])));
        if rng.chance(0.15) {
            l["loss"] = json!(*pick(rng, &["0.5%", "2%"]));
        }
        if rng.chance(0.15) {
            let model = *pick(rng, &["per_packet", "slotted", "periodic"]);
            l["jitter"] = json!({"model": model, "max": "3ms"});
        }
        links.push(l);
    }
    // Some links follow a random delivery trace (Mahimahi's format) instead.
    let tables = if nlinks == 0 {
        std::slice::from_mut(&mut bottleneck)
    } else {
        links.as_mut_slice()
    };
    for l in tables.iter_mut() {
        if rng.chance(0.15) {
            let period = 100 + rng.below(900) as u64;
            let n = 1 + rng.below(4 * period as u32) as u64;
            let mut ms: Vec<u64> = (0..n)
                .map(|_| rng.below(period as u32 + 1) as u64)
                .collect();
            ms.push(period);
            ms.sort_unstable();
            let o = l.as_object_mut().unwrap();
            for k in ["rate", "burst", "rate_schedule"] {
                o.remove(k);
            }
            o.insert("trace".into(), json!(ms));
        }
        if rng.chance(0.1) {
            l["overhead"] = json!(*pick(rng, &["8B", "38B", "200B"]));
        }
        if rng.chance(0.1) {
            let r = *pick(rng, &[1, 5, 20]);
            l["policer"] =
                json!({"rate": format!("{r}Mbps"), "burst": *pick(rng, &["2pkt", "30KB"])});
        }
    }
    let groups = 1 + rng.below(4);
    let mut flows = vec![];
    for _ in 0..groups {
        // Every native algorithm (a Python controller needs the bindings).
        let native: Vec<&str> = CcConfig::NAMES
            .iter()
            .copied()
            .filter(|&n| n != "python")
            .collect();
        let cc = *pick(rng, &native);
        let mut f = json!({
            "cc": cc,
            "rtt": format!("{}ms", *pick(rng, &[2, 10, 20, 50, 120])),
            "count": 1 + rng.below(3),
        });
        if rng.chance(0.3) {
            f["start"] = json!(format!("{}ms", rng.below(1500)));
        }
        if rng.chance(0.3) {
            f["size"] = json!(*pick(rng, &["20KB", "300KB", "2MB"]));
            if rng.chance(0.3) {
                f["repeat"] = json!({"gap": "50ms"});
            }
        }
        if rng.chance(0.2) {
            f["loss"] = json!(*pick(rng, &["0.1%", "1%"]));
        }
        if rng.chance(0.15) {
            f["jitter"] = json!({"model": "per_packet", "max": "2ms"});
        }
        if rng.chance(0.3) {
            f["pacing"] = json!(*pick(rng, &["none", "fq"]));
        }
        if nlinks > 0 {
            let a = rng.below(nlinks);
            let b = a + rng.below(nlinks - a);
            f["route"] = json!((a..=b).map(|k| format!("l{k}")).collect::<Vec<_>>());
            // Two-way traffic: ACKs back over links the data does not cross.
            let others: Vec<u32> = (0..nlinks).filter(|&k| k < a || k > b).collect();
            if !others.is_empty() && rng.chance(0.4) {
                let back = *pick(rng, &others);
                f["reverse_route"] = json!([format!("l{back}")]);
            }
        }
        flows.push(f);
    }
    let mut sc = json!({
        "name": format!("invariant-{k}"),
        "duration": format!("{}ms", 1500 + rng.below(1500)),
        "seed": rng.next_u64() >> 1,
        "flows": flows,
    });
    if nlinks > 0 {
        sc["links"] = json!(links);
    } else {
        sc["bottleneck"] = bottleneck;
    }
    sc
}

fn check(j: &Value) {
    let text = j.to_string();
    let sc = normalize_json(&text)
        .unwrap_or_else(|e| panic!("generated an invalid scenario: {e}\n{text}"));
    let r = run(&sc);
    let ctx = |what: &str| format!("{what}\nscenario: {text}");
    assert_eq!(r.tables.len(), TABLES.len());
    for (t, def) in r.tables.iter().zip(TABLES) {
        def.check(t).unwrap_or_else(|e| panic!("{}", ctx(&e)));
    }

    let f = r.table("flows");
    let delivered_any = f.i64s("bytes").iter().any(|&b| b > 0);
    for i in 0..f.rows() {
        let (sent, got) = (
            f.i64s("segs_sent")[i],
            f.i64s("segs_received")[i] + f.i64s("drops")[i] + f.i64s("segs_in_network")[i],
        );
        assert_eq!(sent, got, "{}", ctx(&format!("flow {i}: conservation")));
        for col in ["goodput_mbps", "retrans_rate"] {
            assert!(
                !f.f64s(col)[i].is_nan(),
                "{}",
                ctx(&format!("flow {i}: {col} is NaN"))
            );
        }
    }

    let s = r.table("summary");
    let (u, w) = (s.f64s("utilization")[0], s.f64s("wire_utilization")[0]);
    assert!(
        (0.0..=1.0).contains(&u),
        "{}",
        ctx(&format!("utilization {u}"))
    );
    assert!(
        (0.0..=1.0 + 1e-9).contains(&w),
        "{}",
        ctx(&format!("wire utilization {w}"))
    );
    let jain = s.f64s("jain")[0];
    if delivered_any {
        assert!(
            jain > 0.0 && jain <= 1.0 + 1e-12,
            "{}",
            ctx(&format!("Jain {jain}"))
        );
    }

    // Per link: each interval's wire utilization within its capacity, the
    // largest backlog of a tail-drop queue within its limit.
    let links = sc.queue_links();
    let q = r.table("queue");
    let frame = 1514.0 * 8.0;
    let names = q.strs("link");
    assert_eq!(
        q.rows() % links.len(),
        0,
        "{}",
        ctx("a queue row per link and interval")
    );
    for (k, (t, &qu)) in q
        .f64s("time_s")
        .iter()
        .zip(q.f64s("wire_utilization"))
        .enumerate()
    {
        let b = links
            .iter()
            .find(|l| l.name == names[k])
            .unwrap_or_else(|| panic!("{}", ctx(&format!("unknown link {}", names[k]))))
            .queue;
        let interval_ns = sc.sample_interval.0;
        let end = (t * 1e9).round() as u64;
        let cap = b.capacity_bits(end.saturating_sub(interval_ns), end);
        if cap == 0.0 {
            continue; // a trace link without an opportunity in the interval
        }
        // Departures at an interval's edge may fall on either side of the
        // sample: a bucket and two frames, or for a trace link every
        // opportunity of one instant.
        let edge = match &b.trace {
            None => b.burst.0 as f64 * 8.0 + 2.0 * frame,
            Some(t) => {
                let most =
                    t.ms.chunk_by(|a, b| a == b)
                        .map(|c| c.len())
                        .max()
                        .unwrap_or(1);
                2.0 * most as f64 * frame
            }
        };
        let slack = edge / cap;
        assert!(
            qu <= 1.0 + slack,
            "{}",
            ctx(&format!(
                "link {} interval ending {t} s: utilization {qu}",
                names[k]
            ))
        );
    }
    let lt = r.table("links");
    assert_eq!(lt.rows(), links.len());
    for (k, l) in links.iter().enumerate() {
        let u = lt.f64s("utilization")[k];
        assert!(
            u.is_nan() || u <= 1.0 + 1e-9,
            "{}",
            ctx(&format!("link {} utilization {u}", l.name))
        );
        if l.queue.qdisc.name() != "taildrop" {
            continue;
        }
        let (mb, mp) = (
            lt.i64s("max_backlog_bytes")[k] as u64,
            lt.i64s("max_backlog_pkts")[k] as u64,
        );
        match l.queue.limit {
            Limit::Bytes(lim) => {
                assert!(
                    mb <= lim,
                    "{}",
                    ctx(&format!("{}: backlog {mb} B > {lim} B", l.name))
                )
            }
            Limit::Packets(lim) => {
                assert!(
                    mp <= lim as u64,
                    "{}",
                    ctx(&format!("{}: backlog {mp} pkts > {lim}", l.name))
                )
            }
        }
    }

    // Determinism, and a capture changes nothing: the second run captures
    // at the senders, the receivers and every link, and its files hold
    // every data segment the flows table says was sent and received.
    let mut captured = sc.clone();
    let mut at = vec![Point::Sender, Point::Receiver];
    at.extend(
        sc.queue_links()
            .iter()
            .map(|l| Point::Link(l.name.to_string())),
    );
    captured.capture = Some(CaptureSpec {
        at,
        flows: vec![],
        packets: Direction::Data,
        snaplen: 96,
        max_packets: u64::MAX,
    });
    let r2 = run(&captured);
    assert_identical(&r, &r2, &ctx("determinism, and with [capture]: "));
    let per_flow = |bytes: &[u8]| {
        let mut n = vec![0i64; sc.flows.len()];
        for fr in read_pcapng(bytes).unwrap().into_iter().map(|f| f.data) {
            let ip_total = u16::from_be_bytes([fr[16], fr[17]]) as usize;
            let payload = ip_total - 20 - usize::from(fr[34 + 12] >> 4) * 4;
            let port = u16::from_be_bytes([fr[36], fr[37]]);
            if payload > 0 {
                n[usize::from(port - PORT_BASE)] += 1;
            }
        }
        // Rows only for flows that started (a successive flow may not).
        f.i64s("flow")
            .iter()
            .map(|&i| n[i as usize])
            .collect::<Vec<_>>()
    };
    assert_eq!(
        per_flow(&r2.captures[0].bytes),
        f.i64s("segs_sent"),
        "{}",
        ctx("sender capture vs segs_sent")
    );
    assert_eq!(
        per_flow(&r2.captures[1].bytes),
        f.i64s("segs_received"),
        "{}",
        ctx("receiver capture vs segs_received")
    );
}

#[test]
fn random_scenarios_hold_the_results_definitions() {
    let n: u64 = std::env::var("CCARENA_INVARIANT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let seed: u64 = std::env::var("CCARENA_INVARIANT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026);
    let mut rng = Rng::stream(seed, "invariants");
    for k in 0..n {
        check(&scenario(&mut rng, k));
    }
}
