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
//!   the network;
//! - determinism: the same scenario and seed give the same bits;
//! - every table holds the columns `metrics::schema` defines, in order.
//!
//! `CCARENA_INVARIANT_CASES` sets the number of scenarios (default 150;
//! 1,000 take about 6 s in release) and `CCARENA_INVARIANT_SEED` the
//! generator's seed (default 2026); `make test` runs the default.

mod common;
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
    let groups = 1 + rng.below(4);
    let mut flows = vec![];
    for _ in 0..groups {
        let cc = *pick(rng, CcConfig::NAMES);
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
        flows.push(f);
    }
    json!({
        "name": format!("invariant-{k}"),
        "duration": format!("{}ms", 1500 + rng.below(1500)),
        "seed": rng.next_u64() >> 1,
        "bottleneck": bottleneck,
        "flows": flows,
    })
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

    let q = r.table("queue");
    let b = &sc.bottleneck;
    let frame = 1514.0 * 8.0;
    for (t, &qu) in q.f64s("time_s").iter().zip(q.f64s("wire_utilization")) {
        let interval_ns = sc.sample_interval_ns;
        let end = (t * 1e9).round() as u64;
        let cap = b.capacity_bits(end.saturating_sub(interval_ns), end);
        let slack = (b.burst_bytes as f64 * 8.0 + 2.0 * frame) / cap;
        assert!(
            qu <= 1.0 + slack,
            "{}",
            ctx(&format!("interval ending {t} s: utilization {qu}"))
        );
    }

    if sc.bottleneck.qdisc.name() == "taildrop" {
        let (mb, mp) = (
            s.i64s("max_backlog_bytes")[0] as u64,
            s.i64s("max_backlog_pkts")[0] as u64,
        );
        match sc.bottleneck.limit {
            Limit::Bytes(lim) => {
                assert!(mb <= lim, "{}", ctx(&format!("backlog {mb} B > {lim} B")))
            }
            Limit::Packets(lim) => {
                assert!(
                    mp <= lim as u64,
                    "{}",
                    ctx(&format!("backlog {mp} pkts > {lim}"))
                )
            }
        }
    }

    assert_identical(&r, &run(&sc), &ctx("determinism: "));
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
