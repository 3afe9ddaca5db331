//! Simulator throughput: `cargo bench -p ccarena-sim` runs fixed scenarios,
//! each in its own process (so peak memory is per scenario), and prints
//! simulated seconds per wall second, bottleneck packets per wall second,
//! events per wall second and peak resident memory. `cargo bench -p
//! ccarena-sim -- NAME` runs only the scenarios whose name contains NAME.
//! `--list` prints each scenario's index and name, `--one INDEX` runs one
//! (with `--setup-only`, only builds it): benches/instructions.py counts
//! their instructions under cachegrind.

use ccarena_sim::cc::CcConfig;
use ccarena_sim::scenario::normalize_json;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// The system allocator, counting the bytes live and their peak, so the
/// benchmark can say what the scenario, the flows' state and the run's
/// packets and results each hold.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new > l.size() {
                let now = LIVE.fetch_add(new - l.size(), Relaxed) + new - l.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// A dumbbell of `n` flows of `cc`, 20 ms, the buffer in BDPs.
fn dumbbell(cc: &str, n: u32, rate: &str, buffer: &str, dur: &str) -> serde_json::Value {
    let mut flow = json!({"cc": cc, "count": n});
    let mut bottleneck = json!({"rate": rate, "buffer": buffer});
    if cc == "dctcp" {
        // DCTCP needs a marking queue: RED's step marking, as the papers
        // and Linux deployments run it.
        flow["ecn"] = json!(true);
        bottleneck["qdisc"] = json!("red");
        bottleneck["ecn"] = json!(true);
    }
    if cc == "prague" {
        // Prague's queue: DualPI2's L queue.
        bottleneck["qdisc"] = json!("dualpi2");
    }
    json!({
        "name": format!("{n}x{cc}"),
        "duration": dur,
        "bottleneck": bottleneck,
        "path": {"rtt": "20ms"},
        "flows": [flow]
    })
}

/// The scenarios, each built only in the process that runs it (so its
/// peak memory is its own), in groups: flows, rates, buffers, algorithms,
/// networks. Durations give each about 2-16 million bottleneck packets.
type Build = Box<dyn Fn() -> serde_json::Value>;

fn scenarios() -> Vec<(String, Build)> {
    let mut v: Vec<(String, Build)> = Vec::new();
    let mut add = |name: String, b: Build| v.push((name, b));
    // Flows: CUBIC at 10 Gbit/s, 1 BDP, 3 s.
    for n in [1u32, 10, 100, 1000, 10000] {
        add(
            format!("flows: {n} cubic, 10 Gbps, 3 s"),
            Box::new(move || dumbbell("cubic", n, "10Gbps", "1BDP", "3s")),
        );
    }
    // Rates: 10 CUBIC flows, 1 BDP.
    for (rate, dur) in [
        ("100Mbps", "60s"),
        ("1Gbps", "30s"),
        ("10Gbps", "3s"),
        ("100Gbps", "2s"),
    ] {
        add(
            format!("rate: 10 cubic, {rate}, {dur}"),
            Box::new(move || dumbbell("cubic", 10, rate, "1BDP", dur)),
        );
    }
    // Buffers: 10 CUBIC flows at 1 Gbit/s.
    for buf in ["0.01BDP", "0.1BDP", "1BDP", "10BDP", "100BDP"] {
        add(
            format!("buffer: 10 cubic, 1 Gbps, {buf}, 10 s"),
            Box::new(move || dumbbell("cubic", 10, "1Gbps", buf, "10s")),
        );
    }
    // Algorithms: 10 flows at 1 Gbit/s, 1 BDP.
    // Every native algorithm (a Python controller is timed by benches/python_cc.py).
    for &cc in CcConfig::NAMES.iter().filter(|&&n| n != "python") {
        add(
            format!("cc: 10 {cc}, 1 Gbps, 10 s"),
            Box::new(move || dumbbell(cc, 10, "1Gbps", "1BDP", "10s")),
        );
    }
    // Prague's cost apart from its queue: over tail drop (no marks, so it
    // runs on losses) and BBRv3 in its L4S mode over DualPI2, each
    // algorithm on the other's queue.
    add(
        "cc: 10 prague on tail drop, 1 Gbps, 10 s".into(),
        Box::new(|| {
            let mut j = dumbbell("prague", 10, "1Gbps", "1BDP", "10s");
            j["bottleneck"]["qdisc"] = json!("taildrop");
            j
        }),
    );
    add(
        "cc: 10 bbr3 L4S on dualpi2, 1 Gbps, 10 s".into(),
        Box::new(|| {
            let mut j = dumbbell("bbr3", 10, "1Gbps", "1BDP", "10s");
            j["bottleneck"]["qdisc"] = json!("dualpi2");
            j["flows"][0]["ecn"] = json!(true);
            j["flows"][0]["cc_params"] = json!({"ect1": true, "ecn_max_rtt": "0s"});
            j
        }),
    );
    // Prague's bursts are 1/4096 s of its own rate (`prague_tso_segs`):
    // at 1 Gbit/s per flow they hold ten times the segments they hold at
    // 100 Mbit/s, so its events per packet depend on the flows' rates.
    for cc in ["prague", "bbr3"] {
        add(
            format!("cc: 10 {cc}, 10 Gbps, 3 s"),
            Box::new(move || dumbbell(cc, 10, "10Gbps", "1BDP", "3s")),
        );
    }
    add(
        "network: parking lot, 4 x 1 Gbps, 5 cubic, 30 s".into(),
        Box::new(parking_lot),
    );
    add(
        "network: 10 cubic, 1 Gbps trace link, 30 s".into(),
        Box::new(trace_link),
    );
    v
}

/// A 4-hop parking lot: a long CUBIC flow across four 1 Gbit/s links, a
/// cross flow on each; 20 ms for every flow. Its packets/s count packet-hops
/// (each link's departures).
fn parking_lot() -> serde_json::Value {
    let links: Vec<_> = (0..4)
        .map(|k| json!({"name": format!("h{k}"), "rate": "1Gbps", "buffer": "1BDP"}))
        .collect();
    let mut flows = vec![json!({"cc": "cubic", "rtt": "20ms", "route": ["h0", "h1", "h2", "h3"]})];
    for k in 0..4 {
        flows.push(json!({"cc": "cubic", "rtt": "20ms", "route": [format!("h{k}")]}));
    }
    json!({"name": "parking-lot", "duration": "30s", "links": links, "flows": flows})
}

/// A Mahimahi-format trace of about 1 Gbit/s (82 or 83 full-frame
/// opportunities every millisecond) driving the dumbbell's bottleneck.
fn trace_link() -> serde_json::Value {
    let mut ms = Vec::new();
    for t in 1..=1000u64 {
        let n = if t % 5 < 3 { 83 } else { 82 };
        ms.extend(std::iter::repeat_n(t, n));
    }
    json!({
        "name": "trace", "duration": "30s",
        "bottleneck": {"trace": ms, "buffer": "2000pkt"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": "cubic", "count": 10}]
    })
}

/// Peak resident set size of this process, from /proc (Linux), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Run scenario `idx` and print its figures on one line; `setup_only`:
/// build the world and stop (for counting what the run alone costs).
fn run_one(idx: usize, setup_only: bool) {
    let j = (scenarios()[idx].1)();
    let sc = match normalize_json(&j.to_string()) {
        Ok(sc) => sc,
        Err(e) => {
            println!("SKIP {e}");
            return;
        }
    };
    let flows = sc.flows.len();
    let scenario = LIVE.load(Relaxed);
    let t0 = Instant::now();
    let world = ccarena_sim::world::World::new(&sc);
    let built = LIVE.load(Relaxed);
    if setup_only {
        println!("SETUP {flows}");
        return;
    }
    PEAK.store(built, Relaxed);
    let r = world.run();
    let wall = t0.elapsed().as_secs_f64();
    let s = r.stats;
    let tables: usize = r
        .tables
        .iter()
        .flat_map(|t| &t.columns)
        .map(|c| c.data.len() * 8)
        .sum();
    println!(
        "OK {:.3} {:.1} {:.0} {:.0} {:.1} {} {:.0} {:.1} {:.1} {:.1} {:.1}",
        wall,
        s.sim_time_ns as f64 / 1e9 / wall,
        s.bottleneck_packets as f64 / wall,
        s.events as f64 / wall,
        peak_rss_mib(),
        s.bottleneck_packets,
        wall * 1e9 / s.bottleneck_packets as f64,
        // bytes of flow state per flow as built, in KiB
        (built - scenario) as f64 / flows as f64 / 1024.0,
        mib(scenario),
        mib(PEAK.load(Relaxed)),
        mib(tables),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        run_one(
            args[i + 1].parse().expect("scenario index"),
            args.iter().any(|a| a == "--setup-only"),
        );
        return;
    }
    if args.iter().any(|a| a == "--list") {
        // For benches/instructions.py: each scenario's index and name.
        for (i, (name, _)) in scenarios().iter().enumerate() {
            println!("{i}\t{name}");
        }
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let only: Option<String> = args.iter().skip(1).find(|a| !a.starts_with('-')).cloned();
    println!(
        "{:<44} {:>7} {:>8} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8}",
        "scenario",
        "wall s",
        "Mpkts",
        "ns/pkt",
        "ev/pkt",
        "peak MiB",
        "heap MiB",
        "tables",
        "KiB/flow"
    );
    for (i, (name, _)) in scenarios().iter().enumerate() {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let out = Command::new(&exe)
            .args(["--one", &i.to_string()])
            .output()
            .expect("run scenario");
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"OK") => {
                let num = |k: usize| f[k].parse::<f64>().unwrap_or(f64::NAN);
                let pkts = num(6);
                let events = num(4) * num(1);
                println!(
                    "{:<44} {:>7} {:>8.2} {:>7} {:>7.2} {:>8} {:>8} {:>8} {:>8}",
                    name,
                    f[1],
                    pkts / 1e6,
                    f[7],
                    events / pkts,
                    f[5],
                    f[10],
                    f[11],
                    f[8]
                )
            }
            _ => println!("{name:<44} skipped: {}", line.trim()),
        }
    }
}
