//! L4S end to end: TCP Prague (ECT(1), scalable response to CE marks) and
//! classic flows over DualPI2's coupled queues.

mod common;
use ccarena_sim::world::Results;
use common::{samples_after, sim};
use serde_json::json;

fn dualpi2(flows: serde_json::Value) -> Results {
    sim(json!({
        "duration": "20s", "seed": 1,
        "bottleneck": {"rate": "100Mbps", "buffer": "4BDP", "qdisc": "dualpi2"},
        "path": {"rtt": "20ms"},
        "flows": flows
    }))
}

/// Per flow: (cc, goodput, queueing delay = mean srtt - base RTT).
fn per_flow(r: &Results) -> Vec<(String, f64, f64)> {
    let f = r.table("flows");
    let (g, s, rt) = (
        f.f64s("goodput_mbps"),
        f.f64s("srtt_mean_ms"),
        f.f64s("rtt_ms"),
    );
    let cc = common::strs(f, "cc");
    (0..f.rows())
        .map(|i| (cc[i].clone(), g[i], s[i] - rt[i]))
        .collect()
}

/// The L4S scenario: Prague and CUBIC over DualPI2 at 100 Mbit/s.
/// Prague's queue stays near DualPI2's 1 ms step, CUBIC's near the 15 ms
/// target, and the link stays full.
#[test]
fn prague_and_cubic_share_dualpi2_each_at_its_own_delay() {
    let r = dualpi2(json!([{"cc": "prague"}, {"cc": "cubic"}]));
    let f = per_flow(&r);
    let (prague, cubic) = (&f[0], &f[1]);
    assert!(prague.2 < 2.0, "L4S queueing delay {} ms", prague.2);
    assert!(
        (7.5..=20.0).contains(&cubic.2),
        "classic queueing delay {} ms",
        cubic.2
    );
    assert!(r.table("summary").f64s("utilization")[0] > 0.9);
    // Prague is marked, not dropped, beyond its slow start; CUBIC is not marked (Not-ECT).
    let marks = r.table("flows").i64s("marks");
    assert!(marks[0] > 1000 && marks[1] == 0, "{marks:?}");
}

/// DualPI2's coupling (k = 2) aims at window fairness between a scalable
/// and a classic flow (tc-dualpi2(8): "both Reno/Cubic can be used in
/// parallel with Prague, maintaining window fairness"; RFC 9332 section 2.1
/// derives k from the two controls' steady-state windows at equal RTTs).
/// The rates then differ by the ratio of the RTTs, the classic flow's
/// holding the classic queue.
/// Measured from 10 s to 40 s (seeds 1-3, model 18): windows 1.4-1.5x
/// CUBIC's, RTTs 20.5 against 34 ms, rates 2.3-2.4x. Prague's window is 3.0/alpha, not
/// DCTCP's idealized 2/alpha: it cuts once per CWR episode and at most
/// every 25 ms (`prague_enter_cwr`), about every 2.4 rounds here, and grows
/// (20.5/25)^2 of a packet a round, which predicts 3.2/alpha.
#[test]
fn prague_and_cubic_windows_are_within_a_factor_of_two_and_rates_follow_the_rtts() {
    for seed in 1..=3 {
        let r = sim(json!({
            "duration": "40s", "seed": seed,
            "bottleneck": {"rate": "100Mbps", "buffer": "4BDP", "qdisc": "dualpi2"},
            "path": {"rtt": "20ms"},
            "sample": {"interval": "10ms"},
            "flows": [{"cc": "prague"}, {"cc": "cubic"}]
        }));
        let mean = |k: i64, col: &str| {
            let v = samples_after(&r, k, col, 10.0);
            v.iter().sum::<f64>() / v.len() as f64
        };
        let windows = mean(0, "cwnd_pkts") / mean(1, "cwnd_pkts");
        assert!(
            (0.5..=2.0).contains(&windows),
            "seed {seed}: prague / cubic windows {windows}"
        );
        // Each flow's rate is its window over its RTT: the rate ratio is
        // the window ratio times the RTT ratio (within the sampling's noise).
        let rtts = mean(1, "srtt_ms") / mean(0, "srtt_ms");
        let rates = mean(0, "goodput_mbps") / mean(1, "goodput_mbps");
        assert!(rtts > 1.4, "seed {seed}: cubic's RTT / prague's {rtts}");
        assert!(
            (rates / (windows * rtts) - 1.0).abs() < 0.1,
            "seed {seed}: rates {rates}, windows {windows} x RTTs {rtts}"
        );
    }
}

/// Alone, Prague holds the L queue at the step threshold without loss.
#[test]
fn prague_alone_keeps_about_a_millisecond_of_queue() {
    let r = dualpi2(json!([{"cc": "prague"}]));
    let (_, g, q) = per_flow(&r)[0].clone();
    assert!((0.3..=2.0).contains(&q), "{q} ms");
    assert!(g > 90.0, "{g} Mbit/s");
    assert_eq!(r.table("flows").i64s("drops")[0], 0);
}

/// Classification is by codepoint: DCTCP sends ECT(0), lands in the classic
/// queue and, answering p'^2 marks with its gentle alpha/2, starves CUBIC
/// there: why L4S senders use ECT(1) (RFC 9331 section 5.1).
#[test]
fn an_ect0_scalable_flow_lands_in_the_classic_queue() {
    let f = per_flow(&dualpi2(json!([{"cc": "dctcp"}, {"cc": "cubic"}])));
    assert!(f[0].2 > 5.0, "dctcp's queueing delay {} ms", f[0].2);
    assert!(
        f[0].1 > 3.0 * f[1].1,
        "dctcp {} vs cubic {}",
        f[0].1,
        f[1].1
    );
}

/// BBRv3's L4S mode (`ect1`, with its ECN logic at any RTT): its packets
/// take DualPI2's L queue and its ecn_thresh response to the 1 ms step holds
/// its queueing delay under 2 ms (1.6 alone) where, sending ECT(0), it sits
/// in the classic queue at about the PI2 target and starves CUBIC.
#[test]
fn bbr3_in_l4s_mode_keeps_the_l_queue_short() {
    let run = |params: serde_json::Value| {
        dualpi2(json!([{"cc": "bbr3", "ecn": true, "cc_params": params}, {"cc": "cubic"}]))
    };
    let classic = per_flow(&run(json!({"ecn_max_rtt": "0s"})));
    let l4s = per_flow(&run(json!({"ect1": true, "ecn_max_rtt": "0s"})));
    assert!(classic[0].2 > 10.0, "ECT(0): {} ms", classic[0].2);
    assert!(l4s[0].2 < 2.0, "ECT(1): {} ms", l4s[0].2);
    assert!(
        l4s[1].1 > 2.0 * classic[1].1,
        "cubic beside it: {} vs {} Mbit/s",
        l4s[1].1,
        classic[1].1
    );
}
