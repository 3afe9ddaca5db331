//! Golden results: a handful of small scenarios whose complete result
//! tables (every column of every table, bit for bit) and capture files are
//! checked in as digests, `tests/golden/<name>.txt`. A change that alters a
//! single bit of any of them, a speed-up meant to change nothing above all,
//! fails here and names the columns that moved.
//!
//! Between them the scenarios run every native congestion control (with
//! HyStart++ as an option), every queue discipline with and without ECN,
//! L4S (Prague, BBRv3's L4S mode and classic ECN over DualPI2), random,
//! Gilbert-Elliott and jitter impairments, staggered and sized flows, RTT
//! and rate steps, a network with two-way traffic, 600 flows, and a
//! capture. (A Python controller is guarded by its own tests.)
//!
//! A deliberate model change (with its own `MODEL_VERSION`) re-blesses the
//! digests: `CCARENA_BLESS_GOLDEN=1 cargo test -p ccarena-sim --test golden`,
//! and the commit says why the bits moved.

mod common;

use ccarena_sim::metrics::table::ColumnData;
use ccarena_sim::scenario::MODEL_VERSION;
use common::sim;
use serde_json::{json, Value};
use std::fmt::Write as _;

fn scenarios() -> Vec<(&'static str, Value)> {
    vec![
        (
            "mixed-algorithms",
            json!({
                "duration": "4s", "seed": 3,
                "bottleneck": {"rate": "40Mbps", "buffer": "1BDP"},
                "path": {"rtt": "20ms"},
                "flows": [
                    {"cc": "cubic", "rtt": "10ms"},
                    {"cc": "reno", "rtt": "30ms", "pacing": "none"},
                    {"cc": "bbr1", "rtt": "40ms"},
                    {"cc": "bbr3", "rtt": "20ms", "start": "1s"},
                    {"cc": "bbq", "rtt": "15ms", "start": "1.5s"},
                    {"cc": "bbr2", "rtt": "25ms", "size": "300KB", "start": "0.5s"}
                ]
            }),
        ),
        (
            "ecn-red-dctcp",
            json!({
                "duration": "3s", "seed": 1,
                "bottleneck": {"rate": "30Mbps", "buffer": "2BDP", "qdisc": "red", "ecn": true},
                "path": {"rtt": "20ms"},
                "flows": [{"cc": "dctcp", "ecn": true}, {"cc": "cubic", "ecn": true, "count": 2}]
            }),
        ),
        (
            "fq-codel-impaired",
            json!({
                "duration": "3s", "seed": 7,
                "bottleneck": {"rate": "25Mbps", "buffer": "4BDP", "qdisc": "fq_codel", "ecn": true},
                "path": {"rtt": "30ms", "loss": {"model": "gilbert_elliott", "p": "1%", "r": "20%"},
                         "jitter": {"model": "slotted", "max": "2ms"}},
                "flows": [{"cc": "cubic", "ecn": true}, {"cc": "bbr3"}, {"cc": "reno", "size": "200KB", "start": "1s"}]
            }),
        ),
        (
            "cake-pie-steps",
            json!({
                "duration": "3s", "seed": 2,
                "bottleneck": {"rate": "20Mbps", "buffer": "1BDP", "qdisc": "cake",
                               "rate_schedule": [["1.5s", "10Mbps"]]},
                "path": {"rtt": "20ms", "loss": "0.2%"},
                "flows": [{"cc": "cubic", "rtt_schedule": [["1s", "60ms"]]}, {"cc": "bbr1", "count": 2}]
            }),
        ),
        (
            "pie-codel-network",
            json!({
                "duration": "3s", "seed": 4,
                "links": [
                    {"name": "up", "rate": "20Mbps", "buffer": "1BDP", "qdisc": "pie"},
                    {"name": "down", "rate": "15Mbps", "buffer": "1BDP", "qdisc": "codel"}
                ],
                "flows": [
                    {"cc": "cubic", "rtt": "20ms", "route": ["up", "down"]},
                    {"cc": "bbr3", "rtt": "30ms", "route": ["up"], "reverse_route": ["down"]},
                    {"cc": "reno", "rtt": "20ms", "route": ["down"], "ack_jitter": {"model": "periodic", "max": "4ms"}}
                ]
            }),
        ),
        (
            // Enough flows for the event loop to prefetch their state
            // (`world::PREFETCH_ABOVE`); the digests were blessed with
            // prefetching off.
            "many-flows",
            json!({
                "duration": "2s", "seed": 6,
                "bottleneck": {"rate": "1Gbps", "buffer": "1BDP", "qdisc": "fq_codel"},
                "path": {"rtt": "20ms", "loss": "0.1%"},
                "flows": [
                    {"cc": "cubic", "count": 300},
                    {"cc": "bbr3", "count": 150, "rtt": "40ms", "start": "0.2s"},
                    {"cc": "reno", "count": 150, "size": "100KB", "start": "0.5s"}
                ]
            }),
        ),
        (
            // L4S: Prague (AccECN), BBRv3 in its L4S mode and classic ECN
            // CUBIC beside Not-ECT Reno over DualPI2, the step AQM only
            // behind two queued L packets.
            "l4s-dualpi2",
            json!({
                "duration": "3s", "seed": 11,
                "bottleneck": {"rate": "50Mbps", "buffer": "2BDP", "qdisc": "dualpi2",
                               "ecn": true, "dualpi2": {"min_qlen_step": 2}},
                "path": {"rtt": "20ms"},
                "flows": [
                    {"cc": "prague", "ecn": true, "count": 2},
                    {"cc": "bbr3", "ecn": true, "rtt": "30ms", "start": "0.4s",
                     "cc_params": {"ect1": true, "ecn_max_rtt": "0s"}},
                    {"cc": "cubic", "ecn": true, "rtt": "40ms"},
                    {"cc": "reno", "size": "300KB", "start": "1s"}
                ]
            }),
        ),
        (
            // The algorithms beyond the papers' seven, with HyStart++, over
            // FQ-PIE with a random loss.
            "more-algorithms-fq-pie",
            json!({
                "duration": "3s", "seed": 12,
                "bottleneck": {"rate": "60Mbps", "buffer": "1BDP", "qdisc": "fq_pie"},
                "path": {"rtt": "25ms", "loss": "0.05%"},
                "flows": [
                    {"cc": "vegas"}, {"cc": "westwood"}, {"cc": "htcp"},
                    {"cc": "illinois"}, {"cc": "bic"}, {"cc": "scalable"},
                    {"cc": "hybla", "rtt": "60ms"}, {"cc": "yeah"},
                    {"cc": "ledbat_pp", "start": "0.5s"},
                    {"cc": "cubic", "cc_params": {"hystart_plus_plus": true}},
                    {"cc": "reno", "cc_params": {"hystart_plus_plus": true}, "start": "0.2s"}
                ]
            }),
        ),
        (
            // Copa and PCC Vivace (their own pacing) with CUBIC, behind
            // sch_fq as the bottleneck's discipline.
            "copa-vivace-fq",
            json!({
                "duration": "3s", "seed": 13,
                "bottleneck": {"rate": "40Mbps", "buffer": "2BDP", "qdisc": "fq"},
                "path": {"rtt": "20ms"},
                "flows": [
                    {"cc": "copa"}, {"cc": "vivace", "rtt": "30ms"},
                    {"cc": "cubic", "start": "0.5s"}
                ]
            }),
        ),
        (
            "capture",
            json!({
                "duration": "1s", "seed": 9,
                "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
                "path": {"rtt": "20ms", "loss": "1%"},
                "flows": [{"cc": "cubic"}, {"cc": "reno", "start": "0.3s"}],
                "capture": {"at": ["sender", "receiver", "bottleneck"]}
            }),
        ),
    ]
}

/// FNV-1a, 64 bits (stable across platforms and releases).
fn fnv(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One line per column (`table.column rows digest`) and per capture file.
fn digest(j: &Value) -> String {
    let r = sim(j.clone());
    let mut s = format!("model {MODEL_VERSION}\n");
    for t in &r.tables {
        for c in &t.columns {
            let h = match &c.data {
                ColumnData::F64(v) => fnv(v.iter().flat_map(|x| x.to_bits().to_le_bytes())),
                ColumnData::I64(v) => fnv(v.iter().flat_map(|x| x.to_le_bytes())),
                ColumnData::Str(v) => fnv(v.iter().flat_map(|x| x.bytes().chain([0]))),
            };
            writeln!(s, "{}.{} {} {h:016x}", t.name, c.name, c.data.len()).unwrap();
        }
    }
    for c in &r.captures {
        let h = fnv(c.bytes.iter().copied());
        writeln!(s, "capture/{} {} {h:016x}", c.name, c.frames).unwrap();
    }
    s
}

#[test]
fn results_match_the_golden_digests() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("CCARENA_BLESS_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (name, j) in scenarios() {
        let got = digest(&j);
        let path = dir.join(format!("{name}.txt"));
        if bless {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (bless with CCARENA_BLESS_GOLDEN=1)",
                path.display()
            )
        });
        if got != want {
            let moved: Vec<&str> = got
                .lines()
                .zip(want.lines())
                .filter(|(g, w)| g != w)
                .map(|(g, _)| g.split(' ').next().unwrap_or(g))
                .collect();
            failures.push(format!(
                "{name}: {} of {} lines differ ({}{})",
                moved.len(),
                want.lines().count(),
                moved.iter().take(8).copied().collect::<Vec<_>>().join(", "),
                if got.lines().count() != want.lines().count() {
                    "; the columns themselves changed"
                } else {
                    ""
                }
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "results moved from the golden digests (a model change re-blesses them \
         with CCARENA_BLESS_GOLDEN=1 and says why):\n{}",
        failures.join("\n")
    );
}

/// The digest sees a single bit: a seed changes it.
#[test]
fn the_digest_sees_a_changed_run() {
    let (_, mut j) = scenarios().swap_remove(1);
    let a = digest(&j);
    j["seed"] = json!(2);
    assert_ne!(a, digest(&j));
}
