//! A seeded mutation fuzzer over the scenario normalizer (issue 10, item 1):
//! valid scenarios from the example files and a generator are mutated
//! (values replaced by junk of every type and size, keys deleted, unknown
//! keys added, deep nesting) and handed to `normalize_json`. Whatever the
//! input, the normalizer must not panic, and a rejection must be one line
//! naming the field. Accepted inputs must stay within the bounds that keep
//! a run's set-up finite (at most 100,000 flows).
//!
//! `CCARENA_FUZZ_CASES` sets the number of mutants (default 3,000; 20,000
//! take a few seconds in release), `CCARENA_FUZZ_SEED` the seed. The
//! inputs that found bugs are kept in `REGRESSIONS` and always run.

use ccarena_sim::rng::Rng;
use ccarena_sim::scenario::normalize_json;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Inputs that once crashed, hung or were accepted wrongly (issue 10).
const REGRESSIONS: &[&str] = &[
    // count x repeat.count overflowed u64 to 0, then allocated gigabytes.
    r#"{"duration":"10s","bottleneck":{"rate":"10Mbps"},"flows":[{"cc":"reno","rtt":"10ms","count":4,"size":"1MB","repeat":{"count":4611686018427387904}}]}"#,
    r#"{"duration":"10s","bottleneck":{"rate":"10Mbps"},"flows":[{"cc":"reno","rtt":"10ms","count":999999}]}"#,
    // A 20 GiB bucket on 100 Mbit/s: utilization 5571% and runs that never ended.
    r#"{"duration":"10s","bottleneck":{"rate":"100Mbps","burst":" 20 GiB "},"flows":[{"cc":"reno","rtt":"10ms"}]}"#,
    // A garbage path.rtt was never read when every flow set its own.
    r#"{"duration":"10s","bottleneck":{"rate":"10Mbps"},"path":{"rtt":"garbage"},"flows":[{"cc":"reno","rtt":"10ms"}]}"#,
    // RED's own defaults failed the kernel's check at 10 Gbit/s, 1 BDP.
    r#"{"duration":"10s","bottleneck":{"rate":"10Gbps","buffer":"1BDP","qdisc":"red"},"flows":[{"cc":"cubic","rtt":"20ms"}]}"#,
];

/// Inputs that must be accepted (the regressions above that are valid).
const MUST_ACCEPT: &[usize] = &[4];

fn base_scenarios() -> Vec<Value> {
    let mut out = vec![];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&p).expect("readable example");
                let v: toml::Value = toml::from_str(&text).expect("example parses");
                out.push(serde_json::to_value(v).expect("toml as json"));
            }
        }
    }
    out.push(json!({
        "name": "fuzz-base", "duration": "5s", "seed": 7,
        "bottleneck": {"rate": "50Mbps", "buffer": "1BDP", "qdisc": "fq_codel",
                       "rate_schedule": [["2s", "20Mbps"]], "burst": "3pkt"},
        "path": {"rtt": "20ms", "rtt_split": 0.5, "loss": "0.1%",
                 "jitter": {"model": "per_packet", "max": "1ms"}},
        "sample": {"interval": "100ms"},
        "hosts": {"latency": "measured"},
        "flows": [
            {"cc": "cubic", "count": 2, "start": "1s", "size": "1MB", "repeat": {"gap": "10ms", "count": 3}},
            {"cc": "bbr1", "rtt": "50ms", "pacing": {"mode": "fq", "max_rate": "10Mbps"},
             "rtt_schedule": [["1s", "80ms"]], "ecn": true, "init_cwnd": 20, "mss": 1000},
            {"cc": "reno", "chunks": [["0s", "20KB"], ["1s", "100KB"]], "rwnd": "64KB"}
        ]
    }));
    out
}

fn junk(rng: &mut Rng) -> Value {
    let long = "9".repeat(5000);
    let deep = (0..64).fold(json!(1), |v, _| json!([v]));
    let choices: Vec<Value> = vec![
        json!(-1),
        json!(0),
        json!(1),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(-1e308),
        json!(0.5),
        json!(-0.0),
        json!(""),
        json!(" "),
        json!("NaN"),
        json!("inf"),
        json!("-inf"),
        json!("-5ms"),
        json!("0s"),
        json!("1e999Mbps"),
        json!("1e30BDP"),
        json!("0BDP"),
        json!("18446744073709551616s"),
        json!("99999999999999999999GB"),
        json!("1.5pkt"),
        json!("0x10"),
        json!("abc"),
        json!("10Gbps"),
        json!("100%"),
        json!("150%"),
        json!("ñ€🙂"),
        json!(long),
        json!(true),
        json!(null),
        json!([]),
        json!({}),
        json!([["1s"]]),
        json!([["-1s", "10Mbps"]]),
        json!({"model": "nope"}),
        deep,
    ];
    choices[rng.below(choices.len() as u32) as usize].clone()
}

/// Replace, delete or add at a random place in `v`.
fn mutate(v: &mut Value, rng: &mut Rng, depth: u32) {
    match v {
        Value::Object(m) if !m.is_empty() && (depth < 4 && rng.chance(0.7)) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len() as u32) as usize];
            mutate(m.get_mut(k).expect("key"), rng, depth + 1)
        }
        Value::Array(a) if !a.is_empty() && (depth < 4 && rng.chance(0.7)) => {
            let i = rng.below(a.len() as u32) as usize;
            mutate(&mut a[i], rng, depth + 1)
        }
        Value::Object(m) if rng.chance(0.3) => {
            if rng.chance(0.5) && !m.is_empty() {
                let keys: Vec<String> = m.keys().cloned().collect();
                m.remove(&keys[rng.below(keys.len() as u32) as usize]);
            } else {
                m.insert(format!("unknown_{}", rng.below(100)), junk(rng));
            }
        }
        _ => *v = junk(rng),
    }
}

/// Normalize one input; panics (test failure) on a crash or a bad error.
fn check(input: &str) -> bool {
    let out = catch_unwind(AssertUnwindSafe(|| normalize_json(input)));
    match out {
        Err(_) => panic!("normalize panicked on: {input}"),
        Ok(Ok(sc)) => {
            assert!(
                sc.flows.len() <= 100_000,
                "{} flows accepted: {input}",
                sc.flows.len()
            );
            true
        }
        Ok(Err(e)) => {
            let line = e.to_string();
            // A field is named unless the document itself is not a table.
            let table = input.trim_start().starts_with('{');
            assert!(
                !table || !e.path.is_empty(),
                "error without a field: {line}\ninput: {input}"
            );
            assert!(
                !e.message.trim().is_empty(),
                "empty message for {}: {input}",
                e.path
            );
            assert!(
                !line.contains('\n'),
                "multi-line error: {line:?}\ninput: {input}"
            );
            assert!(
                line.len() < 600,
                "error too long ({} chars): {line}",
                line.len()
            );
            false
        }
    }
}

#[test]
fn regressions_stay_fixed() {
    for (i, input) in REGRESSIONS.iter().enumerate() {
        let accepted = check(input);
        assert_eq!(
            accepted,
            MUST_ACCEPT.contains(&i),
            "regression {i}: {input}"
        );
    }
}

#[test]
fn mutated_scenarios_never_crash_and_errors_are_one_line() {
    let n: u64 = std::env::var("CCARENA_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let seed: u64 = std::env::var("CCARENA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026);
    let bases = base_scenarios();
    assert!(bases.len() > 3, "the example scenarios were not found");
    let mut rng = Rng::stream(seed, "fuzz");
    let (mut accepted, mut rejected) = (0u64, 0u64);
    for _ in 0..n {
        let mut v = bases[rng.below(bases.len() as u32) as usize].clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut v, &mut rng, 0);
        }
        if check(&v.to_string()) {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    // The mutants must mostly be bad, or the fuzzer tests little.
    assert!(
        rejected > accepted,
        "{rejected} rejected, {accepted} accepted"
    );
}
