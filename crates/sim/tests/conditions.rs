//! End-to-end behaviour of queue disciplines, ECN and path impairments in
//! the simulator. Each test says where its expectation comes from.

mod common;

use ccarena_sim::world::Results;
use common::{assert_identical, sim};
use serde_json::{json, Value};

fn summary(r: &Results, col: &str) -> f64 {
    r.table("summary").f64s(col)[0]
}

/// NetEm's Bernoulli loss drops each packet independently with p: the
/// measured rate is within 3 standard deviations of p.
#[test]
fn bernoulli_loss_rate_matches_its_parameter() {
    let r = sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "50Mbps", "buffer": "2BDP"},
        "flows": [{"cc": "bbr1", "rtt": "20ms", "loss": "1%"}]
    }));
    let f = r.table("flows");
    let (lost, sent) = (
        f.i64s("drops_random")[0] as f64,
        f.i64s("segs_sent")[0] as f64,
    );
    let p = 0.01;
    let sigma = (p * (1.0 - p) / sent).sqrt();
    assert!(
        (lost / sent - p).abs() < 3.0 * sigma,
        "measured {} over {sent} packets",
        lost / sent
    );
}

/// Gilbert-Elliott (NetEm gemodel) with p = 1%, r = 20%: stationary loss
/// rate p / (p + r) = 4.76% (h = 0, k = 1). Losses come in bursts, so the
/// tolerance uses the chain's variance inflation (1 + (1-p-r)) / (1 - (1-p-r)).
#[test]
fn gilbert_elliott_loss_rate_matches_its_stationary_rate() {
    let r = sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "50Mbps", "buffer": "2BDP"},
        "flows": [{"cc": "bbr1", "rtt": "20ms",
                   "loss": {"model": "gilbert_elliott", "p": "1%", "r": "20%"}}]
    }));
    let f = r.table("flows");
    let (lost, sent) = (
        f.i64s("drops_random")[0] as f64,
        f.i64s("segs_sent")[0] as f64,
    );
    let pi = 0.01 / 0.21;
    let rho: f64 = 1.0 - 0.01 - 0.20;
    let sigma = (pi * (1.0 - pi) / sent * (1.0 + rho) / (1.0 - rho)).sqrt();
    assert!(
        (lost / sent - pi).abs() < 3.0 * sigma,
        "measured {} vs {pi}",
        lost / sent
    );
}

/// Neither jitter model reorders (experiments.md): a flow whose window
/// never overflows the buffer retransmits nothing, although RACK would
/// flag any reordering beyond a quarter RTT as loss.
#[test]
fn jitter_never_reorders_and_adds_its_mean_delay() {
    for model in ["per_packet", "slotted"] {
        let r = sim(json!({
            "duration": "10s",
            "bottleneck": {"rate": "100Mbps", "buffer": "4BDP"},
            "flows": [{"cc": "cubic", "rtt": "20ms", "rwnd": "100KB",
                       "jitter": {"model": model, "max": "10ms"}}]
        }));
        let f = r.table("flows");
        assert_eq!(f.i64s("segs_retrans")[0], 0, "{model}");
        let srtt = f.f64s("srtt_mean_ms")[0];
        // Extra delay lies in [0, J = 10 ms] for every packet; because a
        // packet never overtakes the one ahead, a dense stream's delays sit
        // toward J (the distributions themselves are tested in net::impair).
        assert!(
            srtt > 20.5 && srtt < 20.0 + 10.0 + 1.0,
            "{model}: srtt {srtt}"
        );
    }
}

fn two_cubic(qdisc: &str, params: Value, ecn: bool) -> Results {
    sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "50Mbps", "buffer": "100BDP", "qdisc": qdisc, qdisc: params},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic", "count": 2, "ecn": ecn}]
    }))
}

/// CoDel and FQ-CoDel keep the standing queue near their 5 ms target
/// (RFC 8289, RFC 8290) while tail drop lets loss-based TCP fill a
/// 100-BDP buffer (bufferbloat).
#[test]
fn aqm_keeps_queueing_delay_near_target_where_tail_drop_bloats() {
    let taildrop = sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "50Mbps", "buffer": "100BDP"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic", "count": 2}]
    }));
    assert!(
        summary(&taildrop, "qdelay_p95_ms") > 100.0,
        "tail drop p95 {}",
        summary(&taildrop, "qdelay_p95_ms")
    );
    for q in ["codel", "fq_codel"] {
        let r = two_cubic(q, json!({}), false);
        let p95 = summary(&r, "qdelay_p95_ms");
        assert!(p95 < 15.0, "{q}: p95 queueing delay {p95} ms");
        assert!(
            summary(&r, "utilization") > 0.85,
            "{q}: utilization {}",
            summary(&r, "utilization")
        );
    }
}

/// RFC 3168 with FQ-CoDel (ECN on by default there): CUBIC reacts to CE
/// marks instead of losses, so the AQM marks where it would drop (no AQM
/// drops at all) and almost nothing is retransmitted.
#[test]
fn ecn_cubic_through_fq_codel_is_marked_not_dropped() {
    let r = two_cubic("fq_codel", json!({}), true);
    let f = r.table("flows");
    let marks: i64 = f.i64s("marks").iter().sum();
    let retrans: i64 = f.i64s("segs_retrans").iter().sum();
    let sent: i64 = f.i64s("segs_sent").iter().sum();
    let aqm_drops: i64 = f.i64s("drops_aqm").iter().sum();
    assert!(
        marks > 0 && aqm_drops == 0,
        "marks {marks}, AQM drops {aqm_drops}"
    );
    assert!(
        (retrans as f64) < 0.001 * sent as f64,
        "retransmitted {retrans} of {sent}"
    );
}

/// FQ-CoDel's DRR++ serves a sparse flow ahead of bulk queues (RFC 8290
/// §1.3): a thin flow's packets see almost no queueing next to a bulk flow.
#[test]
fn fq_codel_sparse_flow_sees_almost_no_queue() {
    let r = sim(json!({
        "duration": "10s",
        "bottleneck": {"rate": "20Mbps", "buffer": "100BDP", "qdisc": "fq_codel"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic"},
                  {"cc": "cubic", "pacing": {"max_rate": "500Kbps"}, "start": "1s"}]
    }));
    let srtt = r.table("flows").f64s("srtt_mean_ms");
    assert!(srtt[0] > 23.0, "bulk flow queues: {}", srtt[0]);
    // The sparse flow waits for at most the bulk packet in service and its
    // own burst: under 3 packet times (1514 B at 20 Mbit/s: 0.61 ms) above
    // the 20 ms path (over seeds 21.4-21.7 ms, the bulk flow 25 ms).
    let pkt_ms = 1514.0 * 8.0 / 20e6 * 1e3;
    assert!(
        srtt[1] < 20.0 + 3.0 * pkt_ms,
        "sparse flow srtt {}",
        srtt[1]
    );
}

/// Per-flow queues isolate BBR's in-flight cap from RTT: a 10 ms and a
/// 50 ms BBRv1 flow share FQ-CoDel fairly (bbrv2-eval fig14, FQ-CoDel).
#[test]
fn fq_codel_makes_bbr1_rtt_fair() {
    let r = sim(json!({
        "duration": "30s",
        "bottleneck": {"rate": "100Mbps", "buffer": "2MB", "qdisc": "fq_codel"},
        "flows": [{"cc": "bbr1", "rtt": "10ms"}, {"cc": "bbr1", "rtt": "50ms"}]
    }));
    let jain = summary(&r, "jain");
    assert!(jain > 0.95, "Jain {jain}");
}

/// CAKE's triple-isolate mode (sch_cake.c) shares per host first: one flow
/// on host 0 gets as much as four flows on host 1 together.
#[test]
fn cake_shares_per_host_first() {
    let r = sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "50Mbps", "buffer": "2BDP", "qdisc": "cake"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic", "host": 0}, {"cc": "cubic", "count": 4, "host": 1}]
    }));
    let g = r.table("flows").f64s("goodput_mbps").to_vec();
    let host1: f64 = g[1..].iter().sum();
    assert!(
        (g[0] / host1 - 1.0).abs() < 0.15,
        "host 0 {:.1} vs host 1 {host1:.1} Mbit/s",
        g[0]
    );
}

/// BBR does not treat random loss as congestion (Cardwell et al. 2016):
/// it keeps the link busy at 1% loss, where loss-based CUBIC collapses
/// (Mathis: throughput ~ MSS / (RTT sqrt(p))).
#[test]
fn bbr1_keeps_utilization_under_random_loss_where_cubic_collapses() {
    let util = |cc: &str| {
        let r = sim(json!({
            "duration": "20s",
            "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
            "path": {"rtt": "50ms", "loss": "1%"},
            "flows": [{"cc": cc}]
        }));
        summary(&r, "utilization")
    };
    let (bbr, cubic) = (util("bbr1"), util("cubic"));
    assert!(bbr > 0.9 * 1448.0 / 1514.0, "BBRv1 utilization {bbr}");
    assert!(cubic < 0.3, "CUBIC utilization {cubic}");
}

/// The bottleneck rate follows its schedule: goodput halves with the rate.
#[test]
fn rate_schedule_changes_the_bottleneck_rate() {
    let r = sim(json!({
        "duration": "20s",
        "bottleneck": {"rate": "100Mbps", "buffer": "1BDP", "rate_schedule": [["10s", "50Mbps"]]},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "bbr1"}]
    }));
    let s = r.table("samples");
    let mean = |lo: f64, hi: f64| {
        let v: Vec<f64> = s
            .f64s("time_s")
            .iter()
            .zip(s.f64s("goodput_mbps"))
            .filter(|(t, _)| **t > lo && **t <= hi)
            .map(|(_, g)| *g)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (before, after) = (mean(3.0, 10.0), mean(14.0, 20.0));
    assert!(
        before > 85.0 && after < 50.0 && after > 40.0,
        "before {before}, after {after}"
    );
}

/// Utilization divides by the capacity integrated over the rate schedule
/// (issue 10: it divided by the initial rate, up to 24x above 1): a rate
/// that grows 10-fold still gives utilization <= 1, and the bytes the wire
/// carried over that capacity, interval by interval as over the run.
#[test]
fn utilization_under_a_rate_schedule_is_over_the_integrated_capacity() {
    let r = sim(json!({
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "buffer": "1BDP",
                       "rate_schedule": [["2s", "100Mbps"], ["6s", "30Mbps"]]},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic"}, {"cc": "bbr1"}]
    }));
    let sum = r.table("summary");
    let (u, w) = (sum.f64s("utilization")[0], sum.f64s("wire_utilization")[0]);
    // Capacity: 2 s x 10 + 4 s x 100 + 4 s x 30 Mbit = 540 Mbit.
    assert!(
        u > 0.7 && u <= 1.0 && w <= 1.0 + 1e-9 && w >= u,
        "utilization {u}, wire {w}"
    );
    let q = r.table("queue");
    let per: Vec<f64> = q.f64s("wire_utilization").to_vec();
    let times = q.f64s("time_s");
    let cap = |t: f64| {
        if t <= 2.0 {
            10.0
        } else if t <= 6.0 {
            100.0
        } else {
            30.0
        }
    };
    // A packet counts in the interval it finishes in: at most 1 + two
    // frames' worth of the interval's capacity (the token bucket's burst).
    for (&u, &t) in per.iter().zip(times) {
        let slack = 2.0 * 1514.0 * 8.0 / (cap(t) * 1e6 * 0.1);
        assert!(u <= 1.0 + slack, "interval ending {t} s: utilization {u}");
    }
    // The run's wire utilization is the bits of the intervals over the
    // run's capacity: 540 Mbit plus the one-frame bucket it starts with.
    let weighted: f64 = per
        .iter()
        .zip(times)
        .map(|(u, &t)| u * cap(t) * 0.1)
        .sum::<f64>()
        / (540.0 + 1514.0 * 8.0 / 1e6);
    assert!(
        (weighted - w).abs() < 1e-6,
        "weighted {weighted} vs summary {w}"
    );
}

/// A flow's RTT follows its schedule (bbq/fig7's latency inflation).
#[test]
fn rtt_schedule_changes_the_flow_rtt() {
    let r = sim(json!({
        "duration": "8s",
        "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
        "flows": [{"cc": "cubic", "rtt": "10ms", "rwnd": "50KB", "rtt_schedule": [["4s", "40ms"]]}]
    }));
    let s = r.table("samples");
    let srtt_at = |t0: f64| {
        let i = s
            .f64s("time_s")
            .iter()
            .position(|t| (*t - t0).abs() < 1e-9)
            .unwrap();
        s.f64s("srtt_ms")[i]
    };
    assert!(
        srtt_at(3.5) < 12.0 && srtt_at(7.5) > 38.0,
        "{} {}",
        srtt_at(3.5),
        srtt_at(7.5)
    );
}

/// Determinism holds with every discipline and impairment.
#[test]
fn every_discipline_and_impairment_is_deterministic() {
    for q in ["taildrop", "red", "codel", "fq_codel", "cake", "pie"] {
        let j = json!({
            "duration": "3s", "seed": 5,
            "bottleneck": {"rate": "30Mbps", "buffer": "1BDP", "qdisc": q, "ecn": true},
            "path": {"rtt": "20ms", "loss": "0.5%", "jitter": {"model": "slotted", "max": "2ms"}},
            "flows": [{"cc": "cubic", "count": 2, "ecn": true}, {"cc": "bbr1", "rtt": "40ms"}]
        });
        let (a, b) = (sim(j.clone()), sim(j));
        assert_identical(&a, &b, &format!("{q}: "));
    }
}
