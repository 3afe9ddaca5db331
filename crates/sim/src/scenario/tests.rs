use super::*;
use crate::capture::{self, Direction, Point};

fn norm(j: serde_json::Value) -> Result<Scenario, ScenarioError> {
    normalize_json(&j.to_string())
}

fn base() -> serde_json::Value {
    serde_json::json!({
        "name": "t", "duration": "10s",
        "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "reno", "count": 2}, {"cc": "reno", "rtt": "50ms", "start": "1s"}]
    })
}

fn error_of(j: serde_json::Value) -> ScenarioError {
    norm(j).expect_err("should fail")
}

#[test]
fn capture_points_flows_and_sizes_are_checked() {
    let with = |c: serde_json::Value| {
        let mut j = base();
        j["capture"] = c;
        j
    };
    // Defaults: the senders' interface, every flow, both directions.
    let sc = norm(with(serde_json::json!({}))).unwrap();
    let c = sc.capture.as_ref().unwrap();
    assert_eq!(c.at, vec![Point::Sender]);
    assert!(c.flows.is_empty());
    assert_eq!(
        (c.packets, c.snaplen),
        (Direction::All, capture::DEFAULT_SNAPLEN)
    );
    let sc = norm(with(
        serde_json::json!({"at": ["bottleneck", "receiver"], "flows": [2]}),
    ))
    .unwrap();
    assert_eq!(
        sc.capture.unwrap().at,
        vec![Point::Link("bottleneck".into()), Point::Receiver]
    );
    // Without [capture] the normalized scenario (and its hash) is as before.
    assert!(!norm(base()).unwrap().to_json().contains("capture"));
    for (c, path, says) in [
        (
            serde_json::json!({"at": "router"}),
            "capture.at",
            "unknown point \"router\"",
        ),
        (serde_json::json!({"at": []}), "capture.at", "empty"),
        (
            serde_json::json!({"at": ["sender", "sender"]}),
            "capture.at",
            "twice",
        ),
        (
            serde_json::json!({"flows": [3]}),
            "capture.flows",
            "flows 0..2",
        ),
        (
            serde_json::json!({"flows": [1, 1]}),
            "capture.flows",
            "twice",
        ),
        (
            serde_json::json!({"packets": "syn"}),
            "capture.packets",
            "all, data, acks",
        ),
        (
            serde_json::json!({"snaplen": 40}),
            "capture.snaplen",
            "96..262144",
        ),
        (
            serde_json::json!({"max_packets": 0}),
            "capture.max_packets",
            "1..100000000",
        ),
        (
            serde_json::json!({"file": "x"}),
            "capture.file",
            "unknown field",
        ),
    ] {
        let e = error_of(with(c.clone()));
        assert_eq!(e.path, path, "{c}: {e}");
        assert!(e.message.contains(says), "{c}: {e}");
    }
}

#[test]
fn errors_keep_quotes_and_escape_control_characters() {
    let mut j = base();
    j["hosts"] = serde_json::json!({"tso_defer": "x"});
    let e = error_of(j);
    assert_eq!(e.path, "hosts.tso_defer");
    assert!(e.message.contains("string \"x\""), "{}", e.message);
    let mut j = base();
    j["flows"][0]["cc"] = serde_json::json!("cu\nbic\"");
    let e = error_of(j);
    assert!(e.message.contains("cu\\nbic"), "{}", e.message);
    assert!(!e.message.contains('\n'));
}

#[test]
fn flow_counts_cannot_overflow_or_blow_up() {
    let mut j = base();
    j["flows"] = serde_json::json!([{"cc": "reno", "count": 4, "size": "1MB",
                                     "repeat": {"count": 4611686018427387904u64}}]);
    let e = error_of(j);
    assert_eq!(e.path, "flows[0].repeat.count", "{e}");
    let mut j = base();
    j["flows"] = serde_json::json!([{"cc": "reno", "count": 999_999}]);
    let e = error_of(j);
    assert!(
        e.path == "flows[0].count" && e.message.contains("100000"),
        "{e}"
    );
    let mut j = base();
    j["flows"] = serde_json::json!([{"cc": "reno", "count": 10_000}]);
    assert_eq!(norm(j).unwrap().flows.len(), 10_000);
}

#[test]
fn path_defaults_are_checked_even_when_every_flow_overrides_them() {
    for (key, bad) in [
        ("rtt", serde_json::json!("garbage")),
        ("access_rate", serde_json::json!("-1Gbps")),
        ("loss", serde_json::json!("150%")),
        (
            "jitter",
            serde_json::json!({"model": "per_packet", "max": "-1ms"}),
        ),
    ] {
        let mut j = base();
        j["path"][key] = bad.clone();
        j["flows"] = serde_json::json!([{"cc": "reno", "rtt": "10ms", "access_rate": "1Gbps",
                                         "loss": "1%", "jitter": {"model": "per_packet", "max": "1ms"}}]);
        let e = error_of(j);
        assert_eq!(e.path, format!("path.{key}"), "{key} = {bad}: {e}");
    }
}

#[test]
fn cost_bounds_packets_by_the_capacity_and_counts_sample_rows() {
    let s = norm(base()).unwrap();
    let c = s.cost();
    // 100 Mbit/s for 10 s in 1514-byte frames, plus the starting bucket.
    assert!(
        (c.bottleneck_packets - (1e9 / 12112.0 + 1.0)).abs() < 1e-6,
        "{c:?}"
    );
    assert_eq!(c.queue_rows, 101.0);
    assert_eq!(c.sample_rows, 3.0 * 101.0);
    let mut j = base();
    j["sample"] = serde_json::json!({"interval": "1ns"});
    j["duration"] = serde_json::json!("100s");
    assert!(norm(j).unwrap().cost().sample_rows > 1e11);
}

#[test]
fn cost_counts_the_packets_onto_links_delay_lines() {
    // The dumbbell's bottleneck has no delay line.
    let d = norm(base()).unwrap().cost();
    assert_eq!(d.line_packets, 0.0);
    assert_eq!(d.events, d.bottleneck_packets * 4.0 + 3.0 * 16.0);
    // Two links of 100 Mbit/s: one with 5 ms after it, one with none.
    let j = serde_json::json!({
        "name": "t", "duration": "10s",
        "links": [{"name": "a", "rate": "100Mbps", "delay": "5ms"},
                  {"name": "b", "rate": "100Mbps"}],
        "flows": [{"cc": "reno", "rtt": "10ms", "route": ["a", "b"]}]
    });
    let c = norm(j).unwrap().cost();
    let one = 1e9 / 12112.0 + 1.0; // a link's capacity in full frames
    assert!((c.bottleneck_packets - 2.0 * one).abs() < 1e-6, "{c:?}");
    assert!((c.line_packets - one).abs() < 1e-6, "{c:?}");
    assert!((c.events - (8.0 * one + one + 16.0)).abs() < 1e-6, "{c:?}");
}

#[test]
fn burst_is_bounded_and_counted_in_the_run_capacity() {
    let mut j = base();
    j["bottleneck"]["burst"] = serde_json::json!(" 20 GiB ");
    let e = error_of(j);
    assert!(
        e.path == "bottleneck.burst" && e.message.contains("12500000 bytes"),
        "{e}"
    );
    let mut j = base();
    j["bottleneck"]["burst"] = serde_json::json!("100KB");
    let s = norm(j).unwrap();
    let rate_only = s
        .bottleneck
        .as_ref()
        .unwrap()
        .capacity_bits(0, s.duration.0);
    assert_eq!(s.run_capacity_bits(), rate_only + (100_000 * 8) as f64);
    let d = norm(base()).unwrap();
    let cap = d
        .bottleneck
        .as_ref()
        .unwrap()
        .capacity_bits(0, d.duration.0)
        + 1514.0 * 8.0;
    assert_eq!(d.run_capacity_bits(), cap);
}

#[test]
fn capacity_integrates_the_rate_schedule() {
    let mut j = base();
    j["bottleneck"]["rate_schedule"] = serde_json::json!([["2s", "10Mbps"], ["5s", "50Mbps"]]);
    let b = norm(j).unwrap().bottleneck.unwrap();
    let s = 1_000_000_000u64;
    assert_eq!(b.rate_at(0), 100_000_000);
    assert_eq!(b.rate_at(2 * s), 10_000_000);
    assert_eq!(b.capacity_bits(0, 2 * s), 200e6);
    // 1 s at 100, 3 s at 10, 2 s at 50 Mbit/s.
    assert_eq!(b.capacity_bits(s, 7 * s), 100e6 + 30e6 + 100e6);
    assert_eq!(b.capacity_bits(3 * s, 4 * s), 10e6);
    assert_eq!(b.capacity_bits(4 * s, 4 * s), 0.0);
}

#[test]
fn expands_counts_and_resolves_the_bdp() {
    let s = norm(base()).unwrap();
    assert_eq!(s.flows.len(), 3);
    assert_eq!(s.flows[2].group, 1);
    assert_eq!(s.flows[2].rtt, Dur(50_000_000));
    assert_eq!(s.flows[0].fwd_delay + s.flows[0].rev_delay, Dur(20_000_000));
    // BDP of the shortest RTT: 100 Mbps x 20 ms = 250 kB.
    assert_eq!(s.bottleneck.as_ref().unwrap().bdp, Bytes(250_000));
    assert_eq!(s.bottleneck.as_ref().unwrap().limit, Limit::Bytes(250_000));
    let back = Scenario::from_json(&s.to_json()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn bdp_multiples_never_fall_below_one_packet() {
    let mut j = base();
    j["bottleneck"]["buffer"] = "0.001BDP".into();
    assert_eq!(
        norm(j).unwrap().bottleneck.as_ref().unwrap().limit,
        Limit::Bytes(1514)
    );
}

#[test]
fn bdp_rtt_max_uses_the_longest_rtt() {
    let mut j = base();
    j["bottleneck"]["bdp_rtt"] = "max".into();
    assert_eq!(norm(j).unwrap().bottleneck.as_ref().unwrap().bdp.0, 625_000);
}

#[test]
fn each_bad_input_names_its_field() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "unknown field",
            serde_json::json!({"flows": [{"cc": "reno", "rtts": "1ms"}]}),
            "flows[0]",
        ),
        (
            "wrong type",
            serde_json::json!({"flows": [{"cc": "reno", "rtt": 20}]}),
            "flows[0].rtt",
        ),
        (
            "bad unit",
            serde_json::json!({"flows": [{"cc": "reno"}, {"cc": "reno", "rtt": "20 parsecs"}]}),
            "flows[1].rtt",
        ),
        (
            "zero rate",
            serde_json::json!({"bottleneck": {"rate": "0Mbps"}}),
            "bottleneck.rate",
        ),
        (
            "negative duration",
            serde_json::json!({"duration": "-1s"}),
            "duration",
        ),
        (
            "small buffer",
            serde_json::json!({"bottleneck": {"rate": "1Mbps", "buffer": "1000B"}}),
            "bottleneck.buffer",
        ),
        (
            "unknown cc",
            serde_json::json!({"flows": [{"cc": "cubic2"}]}),
            "flows[0].cc",
        ),
        (
            "count",
            serde_json::json!({"flows": [{"cc": "reno", "count": 0}]}),
            "flows[0].count",
        ),
        (
            "late start",
            serde_json::json!({"flows": [{"cc": "reno", "start": "10s"}]}),
            "flows[0].start",
        ),
        (
            "qdisc table for another qdisc",
            serde_json::json!({"bottleneck": {"rate": "1Mbps", "codel": {}}}),
            "bottleneck.codel",
        ),
        (
            "bad pacing",
            serde_json::json!({"flows": [{"cc": "reno", "pacing": "sometimes"}]}),
            "flows[0].pacing",
        ),
    ];
    for (what, patch, path) in cases {
        let mut j = base();
        for (k, v) in patch.as_object().unwrap() {
            if let (Some(dst), Some(src)) = (j[k].as_object_mut(), v.as_object()) {
                for (k2, v2) in src {
                    dst.insert(k2.clone(), v2.clone());
                }
            } else {
                j[k] = v.clone();
            }
        }
        let e = error_of(j);
        assert!(e.path.starts_with(path), "{what}: got {e}");
        assert!(!e.message.is_empty(), "{what}");
    }
    let mut j = base();
    j["flows"] = serde_json::json!([]);
    assert_eq!(error_of(j).path, "flows");
}

#[test]
fn pacing_accepts_a_mode_or_a_table() {
    let mut j = base();
    j["flows"][0]["pacing"] = serde_json::json!({"max_rate": "8.5Mbps"});
    j["flows"][1]["pacing"] = "none".into();
    let s = norm(j).unwrap();
    assert_eq!(
        s.flows[0].pacing,
        Pacing {
            mode: PacingMode::Fq,
            max_rate: Some(Rate(8_500_000))
        }
    );
    assert_eq!(s.flows[2].pacing.mode, PacingMode::None);
}

/// A link's fields as `[bottleneck]`, `[[links]]` and `[topology]` take
/// them, each with a value of the wrong type and the path its error names
/// (relative to the table).
fn wrong_types() -> Vec<(&'static str, serde_json::Value, &'static str)> {
    use serde_json::json;
    vec![
        ("rate", json!(0), "rate"),
        ("buffer", json!(1), "buffer"),
        ("bdp_rtt", json!(true), "bdp_rtt"),
        ("qdisc", json!(1), "qdisc"),
        ("ecn", json!("yes"), "ecn"),
        ("burst", json!([]), "burst"),
        ("rate_schedule", json!(5), "rate_schedule"),
        (
            "rate_schedule",
            json!([[1, "5Mbps"]]),
            "rate_schedule[0][0]",
        ),
        ("trace", json!(true), "trace"),
        ("policer", json!(5), "policer"),
        ("policer", json!({"rate": 5}), "policer.rate"),
        ("overhead", json!(38), "overhead"),
        ("loss", json!(true), "loss"),
        ("jitter", json!("1ms"), "jitter"),
        (
            "jitter",
            json!({"model": "slotted", "max": 1}),
            "jitter.max",
        ),
    ]
}

#[test]
fn a_wrong_type_in_a_link_names_the_field() {
    // Issue 39: the fields of [[links]] and [topology] were read through
    // serde's flatten, so their errors named only `links[0]` or `topology`.
    use serde_json::json;
    let link_only = [("name", json!(5), "name"), ("delay", json!(5), "delay")];
    for (field, value, path) in wrong_types().into_iter().chain(link_only) {
        let mut j = base();
        j.as_object_mut().unwrap().remove("bottleneck");
        let mut link = json!({"name": "a", "rate": "10Mbps"});
        link[field] = value.clone();
        j["links"] = json!([{"name": "z", "rate": "10Mbps"}, link]);
        for f in j["flows"].as_array_mut().unwrap() {
            f["route"] = json!(["z"]);
        }
        let e = error_of(j);
        assert_eq!(e.path, format!("links[1].{path}"), "{field} = {value}: {e}");
        let typed = ["invalid type", "data did not match"];
        assert!(
            typed.iter().any(|t| e.message.starts_with(t)),
            "{field}: {e}"
        );

        let mut j = base();
        j.as_object_mut().unwrap().remove("bottleneck");
        let mut topo = json!({"kind": "parking_lot", "hops": 2, "rate": "10Mbps"});
        topo[field] = value.clone();
        j["topology"] = topo;
        for f in j["flows"].as_array_mut().unwrap() {
            f["route"] = json!(["hop1"]);
        }
        let e = error_of(j);
        assert_eq!(e.path, format!("topology.{path}"), "{field} = {value}: {e}");
    }
    for (field, value, path) in wrong_types() {
        let mut j = base();
        j["bottleneck"][field] = value.clone();
        let e = error_of(j);
        assert_eq!(
            e.path,
            format!("bottleneck.{path}"),
            "{field} = {value}: {e}"
        );
    }
    // The same fields as the scenario's own: kind and hops of [topology].
    let mut j = base();
    j.as_object_mut().unwrap().remove("bottleneck");
    j["topology"] = json!({"kind": "parking_lot", "hops": "3", "rate": "10Mbps"});
    assert_eq!(error_of(j).path, "topology.hops");
}

/// `base()` with `patch` applied at dotted paths (`"bottleneck.buffer"`,
/// `"flows.0.size"`; a number indexes a list).
fn patched(patch: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let mut j = base();
    for (at, v) in patch {
        let mut node = &mut j;
        for key in at.split('.') {
            node = match key.parse::<usize>() {
                Ok(i) => &mut node[i],
                Err(_) => &mut node[key],
            };
        }
        *node = v.clone();
    }
    j
}

fn warnings_of(j: &serde_json::Value) -> Vec<ScenarioWarning> {
    normalize_json_with_warnings(&j.to_string())
        .expect("accepted")
        .1
}

#[test]
fn a_run_that_cannot_mean_anything_is_refused() {
    // Issue 39: each was accepted without a word.
    use serde_json::json;
    let network = |loss: serde_json::Value| {
        let mut j = base();
        j.as_object_mut().unwrap().remove("bottleneck");
        j["links"] = json!([{"name": "a", "rate": "10Mbps", "loss": loss}]);
        for f in j["flows"].as_array_mut().unwrap() {
            f["route"] = json!(["a"]);
        }
        j
    };
    let ge = |t: serde_json::Value| {
        let mut t = t;
        t["model"] = "gilbert_elliott".into();
        t
    };
    let cases: Vec<(&str, serde_json::Value, &str, &str)> = vec![
        // Every packet lost: nothing to measure.
        (
            "data loss",
            patched(&[("path.loss", json!("100%"))]),
            "path.loss",
            "loses every packet",
        ),
        (
            "loss rounding to 100%",
            patched(&[("path.loss", json!("99.99999999999%"))]),
            "path.loss",
            "loses every packet",
        ),
        (
            "ACK loss",
            patched(&[("flows.1.ack_loss", json!(1.0))]),
            "flows[1].ack_loss",
            "loses every packet",
        ),
        (
            "link loss",
            network(json!("100%")),
            "links[0].loss",
            "loses every packet",
        ),
        (
            "GE both states",
            patched(&[(
                "path.loss",
                ge(json!({"p": "5%", "r": "5%", "k": 0, "h": 0})),
            )]),
            "path.loss",
            "loses every packet",
        ),
        (
            "GE stuck in good",
            patched(&[("path.loss", ge(json!({"p": 0, "loss_good": "100%"})))]),
            "path.loss",
            "loses every packet",
        ),
        // Sizes past the 64-bit limit, which a cast capped.
        (
            "BDP buffer",
            patched(&[("bottleneck.buffer", json!("1e30BDP"))]),
            "bottleneck.buffer",
            "too large",
        ),
        (
            "packet buffer",
            patched(&[("bottleneck.buffer", json!("1e30pkt"))]),
            "bottleneck.buffer",
            "at most 4294967295 packets",
        ),
        (
            "BDP burst",
            patched(&[("bottleneck.burst", json!("1e30BDP"))]),
            "bottleneck.burst",
            "too large",
        ),
        (
            "policer burst",
            patched(&[(
                "bottleneck.policer",
                json!({"rate": "10Mbps", "burst": "1e30pkt"}),
            )]),
            "bottleneck.policer.burst",
            "too large",
        ),
        (
            "size in packets",
            patched(&[("flows.0.size", json!("1e30pkt"))]),
            "flows[0].size",
            "too large",
        ),
        (
            "rwnd in packets",
            patched(&[("flows.0.rwnd", json!("1e30pkt"))]),
            "flows[0].rwnd",
            "too large",
        ),
        (
            "chunks",
            patched(&[("flows.1.chunks", json!([["0s", "9e17B"], ["1s", "9e17B"]]))]),
            "flows[1].chunks",
            "too large",
        ),
        (
            "BDP",
            patched(&[
                ("bottleneck.rate", json!("999999Gbps")),
                ("bottleneck.bdp_rtt", json!("1e9s")),
            ]),
            "bottleneck.bdp_rtt",
            "too large",
        ),
        // Two steps at one instant: which holds?
        (
            "rate steps",
            patched(&[(
                "bottleneck.rate_schedule",
                json!([["1s", "5Mbps"], ["1s", "7Mbps"]]),
            )]),
            "bottleneck.rate_schedule[1][0]",
            "ambiguous",
        ),
        (
            "RTT steps",
            patched(&[(
                "flows.1.rtt_schedule",
                json!([["1s", "5ms"], ["1000ms", "7ms"]]),
            )]),
            "flows[1].rtt_schedule[1][0]",
            "ambiguous",
        ),
        (
            "steps back",
            patched(&[(
                "flows.1.rtt_schedule",
                json!([["1s", "5ms"], ["0.5s", "7ms"]]),
            )]),
            "flows[1].rtt_schedule[1][0]",
            "earlier than the step before it (1s)",
        ),
    ];
    for (what, j, path, says) in cases {
        let e = error_of(j);
        assert_eq!(e.path, path, "{what}: {e}");
        assert!(e.message.contains(says), "{what}: {e}");
    }
    // Just short of each limit is accepted.
    for j in [
        patched(&[("path.loss", json!("99.99%"))]),
        patched(&[("bottleneck.buffer", json!("4294967295pkt"))]),
        patched(&[("flows.0.size", json!("1e14pkt"))]),
        patched(&[(
            "bottleneck.rate_schedule",
            json!([["1s", "5Mbps"], ["1000000001ns", "7Mbps"]]),
        )]),
        patched(&[(
            "path.loss",
            json!({"model": "gilbert_elliott", "p": "5%", "k": 0, "h": "1%"}),
        )]),
    ] {
        norm(j).expect("accepted");
    }
}

#[test]
fn a_value_that_makes_a_run_mean_less_is_warned_about() {
    use serde_json::json;
    assert_eq!(warnings_of(&base()), vec![]);
    type Patch<'a> = Vec<(&'a str, serde_json::Value)>;
    let cases: Vec<(&str, Patch, &str, &str)> = vec![
        (
            "GE never leaves bad",
            vec![(
                "path.loss",
                json!({"model": "gilbert_elliott", "p": "1%", "r": 0, "h": "10%"}),
            )],
            "path.loss",
            "from then on 90% of packets are lost",
        ),
        (
            "link rate",
            vec![("bottleneck.rate", json!("1Kbps"))],
            "bottleneck.rate",
            "less than one frame (1514 bytes) in the run's 10s: beyond the 1514 bytes its bucket starts with nothing crosses this link; expected at least 1212bps",
        ),
        (
            "scheduled link rate",
            vec![
                ("bottleneck.rate", json!("1Kbps")),
                ("bottleneck.rate_schedule", json!([["5s", "1.1Kbps"]])),
            ],
            "bottleneck.rate_schedule",
            "less than one frame",
        ),
        (
            "access rate",
            vec![("path.access_rate", json!("1Kbps"))],
            "path.access_rate",
            "less than one frame (1514 bytes)",
        ),
        (
            "a flow's access rate",
            vec![("flows.1.access_rate", json!("1bps"))],
            "flows[1].access_rate",
            "less than one frame",
        ),
        (
            "pacing cap",
            vec![("flows.0.pacing", json!({"max_rate": "100bps"}))],
            "flows[0].pacing.max_rate",
            "less than one frame",
        ),
        (
            "policer",
            vec![("bottleneck.policer", json!({"rate": "1Kbps"}))],
            "bottleneck.policer.rate",
            "less than one frame",
        ),
        (
            "bdp_rtt = 0",
            vec![("bottleneck.bdp_rtt", json!("0ms"))],
            "bottleneck.bdp_rtt",
            "one packet (1514 bytes)",
        ),
        (
            "buffer below a packet",
            vec![("bottleneck.buffer", json!("0.001BDP"))],
            "bottleneck.buffer",
            "less than one packet",
        ),
        (
            "sample interval",
            vec![("sample", json!({"interval": "11s"}))],
            "sample.interval",
            "no sample is taken",
        ),
        (
            "jitter",
            vec![("path.jitter", json!({"model": "per_packet", "max": "100s"}))],
            "path.jitter.max",
            "longer than the run (10s)",
        ),
        (
            "ACK jitter",
            vec![(
                "flows.1.ack_jitter",
                json!({"model": "periodic", "max": "11s"}),
            )],
            "flows[1].ack_jitter.max",
            "longer than the run",
        ),
    ];
    for (what, patch, path, says) in cases {
        let j = patched(&patch);
        let w = warnings_of(&j);
        assert!(
            w.iter().any(|w| w.path == path && w.message.contains(says)),
            "{what}: {w:?}"
        );
        // A warning changes nothing in the scenario.
        let (sc, _) = normalize_json_with_warnings(&j.to_string()).unwrap();
        assert_eq!(sc, norm(j).unwrap(), "{what}");
    }
    // A [path] default read by several flows, or a [topology] link made
    // several times, is warned about once.
    let j = patched(&[(
        "path.loss",
        json!({"model": "gilbert_elliott", "p": "1%", "r": 0}),
    )]);
    assert_eq!(warnings_of(&j).len(), 1);
    // At the limits, no warning: a link of one frame in the run (1514
    // bytes in 10 s), a sample interval of the whole run.
    let j = patched(&[
        ("bottleneck.rate", json!("1212bps")),
        ("bottleneck.buffer", json!("1pkt")),
        ("sample", json!({"interval": "10s"})),
    ]);
    assert_eq!(warnings_of(&j), vec![]);
}
