//! FQ-PIE: per-flow PIE under FQ-CoDel's scheduler.

mod common;
use common::{samples_after, sim};
use serde_json::json;

fn shares(qdisc: &str) -> (Vec<f64>, Vec<f64>) {
    shares_with(qdisc, "2BDP")
}

/// The two long flows' shares of their goodput from 10 s on (the 50 ms
/// flow's CUBIC growth takes the first seconds), and each flow's mean
/// queueing delay over the run.
fn shares_with(qdisc: &str, buffer: &str) -> (Vec<f64>, Vec<f64>) {
    let r = sim(json!({
        "duration": "20s", "seed": 1,
        "bottleneck": {"rate": "50Mbps", "buffer": buffer, "qdisc": qdisc},
        "sample": {"interval": "100ms"},
        "flows": [{"cc": "cubic", "rtt": "10ms"}, {"cc": "cubic", "rtt": "50ms"}, {"cc": "cubic", "rtt": "50ms", "start": "5s", "size": "200KB"}]
    }));
    let g: Vec<f64> = (0..2)
        .map(|k| samples_after(&r, k, "goodput_mbps", 10.0).iter().sum())
        .collect();
    let f = r.table("flows");
    let q: Vec<f64> = f
        .f64s("srtt_mean_ms")
        .iter()
        .zip(f.f64s("rtt_ms"))
        .map(|(s, r)| s - r)
        .collect();
    (vec![g[0] / (g[0] + g[1]), g[1] / (g[0] + g[1])], q)
}

/// Per-flow queues: two CUBIC flows of 10 and 50 ms get near-equal shares
/// where a single PIE queue hands the short one most of the link, each
/// flow's own queue is held near PIE's 15 ms target, and a short flow
/// arriving later waits behind nobody's standing queue. (From 10 s, seeds
/// 1-3: FQ-PIE 0.51-0.52, one PIE queue 0.67-0.74.)
#[test]
fn flows_are_isolated_each_under_its_own_pie() {
    let (pie, pie_q) = shares("pie");
    let (fq, fq_q) = shares("fq_pie");
    assert!(pie[0] > 0.6, "pie: {pie:?}");
    assert!((fq[0] - 0.5).abs() < 0.1, "fq_pie: {fq:?}");
    assert!(
        (7.5..=22.5).contains(&fq_q[0]),
        "the 10 ms flow's queue {} ms",
        fq_q[0]
    );
    assert!(
        fq_q[2] < 0.5 * fq_q[0],
        "the latecomer's queueing {} ms",
        fq_q[2]
    );
    assert!(
        pie_q[2] > 10.0,
        "under one PIE queue the latecomer waits {} ms",
        pie_q[2]
    );
}

/// sch_fq at the bottleneck with Linux's limits (10000 packets in all,
/// 100 per flow): per-flow round robin without an AQM, so the 10 and 50 ms
/// CUBIC flows share evenly, each losing only from its own flow queue, and
/// the latecomer bypasses the standing queues. (With a total limit below
/// the flows' limits, the arriving packet is dropped whichever its flow, as
/// in Linux, and the short flow takes more: 0.73 with a 2 BDP buffer.)
#[test]
fn sch_fq_at_the_bottleneck_shares_per_flow() {
    let (fq, q) = shares_with("fq", "10000pkt");
    assert!((fq[0] - 0.5).abs() < 0.1, "fq: {fq:?}");
    assert!(
        q[2] < 0.5 * q[0],
        "the latecomer's queueing {} ms vs {} ms",
        q[2],
        q[0]
    );
}
