//! `[hosts] latency`: the hosts' turnaround tables (`net::host`).

mod common;

use ccarena_sim::net::host::Turnarounds;
use ccarena_sim::world::Results;
use common::{assert_identical, sim};
use serde_json::json;

fn us(t: &[u64; 18], shift_us: f64) -> Vec<f64> {
    t.iter().map(|&ns| ns as f64 / 1e3 + shift_us).collect()
}

/// One window-limited CUBIC flow (its rwnd below the BDP: no queue, no loss),
/// so its srtt is the path's RTT plus the hosts' turnarounds.
fn lone(latency: serde_json::Value, seed: u64) -> Results {
    sim(json!({
        "duration": "4s", "seed": seed,
        "bottleneck": {"rate": "100Mbps", "buffer": "4BDP"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic", "rwnd": "100KB"}],
        "hosts": {"latency": latency}
    }))
}

#[test]
fn a_table_equal_to_the_shipped_one_gives_the_same_bits() {
    let m = Turnarounds::MEASURED;
    let table = json!({"sender_us": us(&m.sender_ns, 0.0), "receiver_us": us(&m.receiver_ns, 0.0)});
    for seed in [1, 2] {
        assert_identical(
            &lone(json!("measured"), seed),
            &lone(table.clone(), seed),
            "shipped table written out: ",
        );
    }
}

#[test]
fn a_table_shifted_by_half_a_millisecond_per_side_adds_a_millisecond_to_srtt() {
    // Each ACK waits one receiver and one sender turnaround: +0.5 ms each.
    let m = Turnarounds::MEASURED;
    let shifted =
        json!({"sender_us": us(&m.sender_ns, 500.0), "receiver_us": us(&m.receiver_ns, 500.0)});
    let srtt = |r: &Results| r.table("flows").f64s("srtt_mean_ms")[0];
    let (a, b) = (lone(json!("measured"), 1), lone(shifted, 1));
    let d = srtt(&b) - srtt(&a);
    assert!(
        (d - 1.0).abs() < 0.05,
        "srtt {} -> {} ms",
        srtt(&a),
        srtt(&b)
    );
    // Ideal hosts: the srtt is the path's 20 ms plus serialization.
    let none = lone(json!("none"), 1);
    assert!(srtt(&none) < srtt(&a) - 0.1 && srtt(&none) > 20.0);
}
