//! End-to-end behaviour of BBRv1 and BBQ in the simulator. Each test says
//! where its expectation comes from.

mod common;

use ccarena_sim::world::Results;
use common::{assert_identical, sim, strs, transitions};
use serde_json::json;

fn lone_bbr1() -> Results {
    sim(json!({
        "duration": "35s",
        "bottleneck": {"rate": "100Mbps", "buffer": "8BDP"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "bbr1"}]
    }))
}

/// tcp_bbr.c: max_bw is a windowed max of delivery-rate samples, which on a
/// lone flow equal the bottleneck's payload rate (100 Mbps x 1448/1514);
/// min_rtt is the windowed min RTT, the propagation delay when the queue
/// drains (PROBE_RTT guarantees it does). In PROBE_RTT itself min_rtt is
/// briefly the queue-inflated sample that expired the filter
/// (`bbr_update_min_rtt`), so those samples are left out.
#[test]
fn lone_bbr1_estimates_bandwidth_and_min_rtt() {
    let r = lone_bbr1();
    let s = r.table("samples");
    let payload = 100.0 * 1448.0 / 1514.0;
    let modes = strs(s, "bbr_mode");
    let late = |col: &str| -> Vec<f64> {
        s.f64s("time_s")
            .iter()
            .zip(s.f64s(col))
            .zip(modes.iter())
            .filter(|((t, _), m)| **t > 5.0 && m.as_str() != "PROBE_RTT")
            .map(|((_, v), _)| *v)
            .collect()
    };
    for bw in late("bbr_max_bw_mbps") {
        assert!(
            (bw - payload).abs() / payload < 0.02,
            "max_bw {bw} vs {payload}"
        );
    }
    for m in late("bbr_min_rtt_ms") {
        assert!((m - 20.0).abs() < 1.0, "min_rtt {m}");
    }
    let util = r.table("summary").f64s("utilization")[0];
    assert!(util > 0.9, "utilization {util}");
}

/// tcp_bbr.c bbr_check_full_bw_reached: STARTUP ends after three counted
/// rounds without max_bw reaching 1.25x `full_bw`, the value at the count's
/// last reset; and bbr_check_drain: PROBE_BW once in-flight is down to one
/// BDP, within a few rounds more. Counted from the round where max_bw first
/// reaches the bottleneck rate (round 6 at every seed here), the exit comes
/// 3, 4 or 6 rounds later by seed (seeds 1-8: median 4). Seed 1's 6: its
/// round-6 max_bw sets `full_bw`, round 7's is 1.2484x that (under the
/// 1.25x), and round 9's creeps to 1.2519x (over it): the count restarts.
/// The kernel (Linux backend, this scenario, 4 runs,
/// 2026-11-26) left STARTUP 210-215 ms after max_bw reached the rate in
/// every run, as the simulator's 4-round seeds do (215 ms).
#[test]
fn bbr1_leaves_startup_three_rounds_after_the_pipe_is_full() {
    let mut afters = Vec::new();
    for seed in 1..=8 {
        let r = sim(json!({
            "duration": "2s",
            "seed": seed,
            "bottleneck": {"rate": "100Mbps", "buffer": "8BDP"},
            "path": {"rtt": "20ms"},
            "flows": [{"cc": "bbr1"}],
            "sample": {"interval": "5ms"}
        }));
        let s = r.table("samples");
        let (modes, rounds, bw) = (
            strs(s, "bbr_mode"),
            s.f64s("bbr_round_count"),
            s.f64s("bbr_max_bw_mbps"),
        );
        let payload = 100.0 * 1448.0 / 1514.0;
        let full = (0..s.rows())
            .find(|&i| bw[i] > 0.98 * payload)
            .expect("bw reaches the bottleneck rate");
        let drain = (0..s.rows()).find(|&i| modes[i] == "DRAIN").expect("DRAIN");
        let probe = (0..s.rows())
            .find(|&i| modes[i] == "PROBE_BW")
            .expect("PROBE_BW");
        assert!(
            rounds[full] <= 8.0,
            "seed {seed}: pipe full only at round {}",
            rounds[full]
        );
        let after = rounds[drain] - rounds[full];
        assert!(
            (2.0..=6.0).contains(&after),
            "seed {seed}: DRAIN {after} rounds after the pipe filled"
        );
        assert!(
            rounds[probe] - rounds[drain] <= 3.0,
            "seed {seed}: PROBE_BW {} rounds after DRAIN",
            rounds[probe] - rounds[drain]
        );
        afters.push(after);
    }
    afters.sort_by(f64::total_cmp);
    let median = afters[afters.len() / 2];
    assert!(
        (3.0..=4.0).contains(&median),
        "median DRAIN {median} rounds after the pipe filled ({afters:?})"
    );
}

/// tcp_bbr.c bbr_update_min_rtt: PROBE_RTT when the min_rtt estimate is
/// 10 s old, holding cwnd at 4 packets for max(200 ms, one round).
#[test]
fn bbr1_probes_rtt_every_10s_with_cwnd_4_for_200ms() {
    let r = lone_bbr1();
    let tr = transitions(&r, 0);
    let entries: Vec<f64> = tr
        .iter()
        .filter(|(_, _, to)| to == "PROBE_RTT")
        .map(|(t, _, _)| *t)
        .collect();
    assert!(entries.len() >= 3, "{tr:?}");
    for w in entries.windows(2) {
        let gap = w[1] - w[0];
        assert!((10.0..10.6).contains(&gap), "PROBE_RTT {gap} s apart");
    }
    for (k, (t, _, to)) in tr.iter().enumerate() {
        if to == "PROBE_RTT" {
            let exit = tr[k + 1].0;
            assert!(
                exit - t >= 0.2 && exit - t < 0.3,
                "PROBE_RTT lasted {}",
                exit - t
            );
        }
    }
    let s = r.table("samples");
    let modes = strs(s, "bbr_mode");
    let cwnd = s.f64s("cwnd_pkts");
    let in_probe_rtt: Vec<f64> = (0..s.rows())
        .filter(|&i| modes[i] == "PROBE_RTT")
        .map(|i| cwnd[i])
        .collect();
    assert!(!in_probe_rtt.is_empty());
    assert!(in_probe_rtt.iter().all(|&c| c <= 4.0), "{in_probe_rtt:?}");
}

/// tcp_bbr.c bbr_pacing_gain[]: in PROBE_BW the pacing gain is one of
/// 1.25, 0.75 and 1.0 (in Linux's Q8: 320/256, 192/256, 256/256).
#[test]
fn bbr1_probe_bw_gains_come_from_the_cycle() {
    let r = lone_bbr1();
    let s = r.table("samples");
    let modes = strs(s, "bbr_mode");
    let gains = s.f64s("bbr_pacing_gain");
    let mut seen = [false; 3];
    for i in 0..s.rows() {
        if modes[i] == "PROBE_BW" {
            let k = [1.25, 0.75, 1.0]
                .iter()
                .position(|g| (gains[i] - g).abs() < 1e-9);
            seen[k.unwrap_or_else(|| panic!("gain {} in PROBE_BW", gains[i]))] = true;
        }
    }
    assert!(seen[2], "cruise phases sampled");
}

fn shares(cc: &str) -> (f64, f64) {
    let r = sim(json!({
        "duration": "60s",
        "bottleneck": {"rate": "100Mbps", "buffer": "2MB"},
        "flows": [{"cc": cc, "rtt": "10ms"}, {"cc": cc, "rtt": "50ms"}]
    }));
    let g = r.table("flows").f64s("goodput_mbps");
    (g[0] / (g[0] + g[1]), g[1] / (g[0] + g[1]))
}

/// BBQ paper (Ma et al.) fig. 1 and experiments.md bbq/fig1: with a deep
/// buffer, BBRv1's cwnd cap of 2 x BDP lets the 50 ms flow keep more data
/// queued, so it takes most of the link; BBQ's shorter probes raise the
/// 10 ms flow's share (paper figs. 13-14).
#[test]
fn bbr1_favours_the_longer_rtt_and_bbq_corrects_it() {
    let (short_bbr, long_bbr) = shares("bbr1");
    assert!(
        long_bbr > 2.0 * short_bbr,
        "BBRv1 shares 10 ms {short_bbr:.2}, 50 ms {long_bbr:.2}"
    );
    let (short_bbq, _) = shares("bbq");
    assert!(
        short_bbq > short_bbr + 0.1,
        "BBQ gives the 10 ms flow {short_bbq:.2} vs BBRv1's {short_bbr:.2}"
    );
}

/// Determinism holds with BBR's random gain-cycle start.
#[test]
fn bbr_runs_are_deterministic() {
    let j = json!({
        "duration": "5s", "seed": 9,
        "bottleneck": {"rate": "50Mbps", "buffer": "1BDP"},
        "path": {"rtt": "30ms"},
        "flows": [{"cc": "bbr1", "count": 2}, {"cc": "bbq", "rtt": "60ms"}]
    });
    let (a, b) = (sim(j.clone()), sim(j));
    assert_identical(&a, &b, "");
}
