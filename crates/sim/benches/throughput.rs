//! Simulator throughput: `cargo bench -p ccarena-sim` runs fixed scenarios,
//! each in its own process (so peak memory is per scenario), and prints
//! simulated seconds per wall second, bottleneck packets per wall second,
//! events per wall second and peak resident memory.

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

fn dumbbell(cc: &str, n: u32, rate: &str, secs: u32) -> serde_json::Value {
    json!({
        "name": format!("{n}x{cc}"),
        "duration": format!("{secs}s"),
        "bottleneck": {"rate": rate, "buffer": "1BDP"},
        "path": {"rtt": "20ms"},
        "flows": [{"cc": cc, "count": n}]
    })
}

/// The scenarios, each built only in the process that runs it (so its
/// peak memory is its own).
type Build = fn() -> serde_json::Value;

fn scenarios() -> Vec<(&'static str, Build)> {
    vec![
        ("2 cubic, 100 Mbps, 20 ms, 1 BDP, 60 s", || {
            dumbbell("cubic", 2, "100Mbps", 60)
        }),
        ("10 cubic, 1 Gbps, 20 ms, 1 BDP, 30 s", || {
            dumbbell("cubic", 10, "1Gbps", 30)
        }),
        ("10 cubic, 1 Gbps, 20 ms, 1 BDP, 60 s", || {
            dumbbell("cubic", 10, "1Gbps", 60)
        }),
        ("10 bbr3, 1 Gbps, 20 ms, 1 BDP, 30 s", || {
            dumbbell("bbr3", 10, "1Gbps", 30)
        }),
        ("10 reno, 1 Gbps, 20 ms, 1 BDP, 30 s", || {
            dumbbell("reno", 10, "1Gbps", 30)
        }),
        ("100 cubic, 1 Gbps, 20 ms, 1 BDP, 30 s", || {
            dumbbell("cubic", 100, "1Gbps", 30)
        }),
        ("1000 cubic, 10 Gbps, 20 ms, 1 BDP, 10 s", || {
            dumbbell("cubic", 1000, "10Gbps", 10)
        }),
        ("10000 cubic, 10 Gbps, 20 ms, 1 BDP, 10 s", || {
            dumbbell("cubic", 10000, "10Gbps", 10)
        }),
        ("parking lot, 4 x 1 Gbps, 5 cubic, 30 s", parking_lot),
        ("10 cubic, 1 Gbps trace link, 20 ms, 30 s", trace_link),
    ]
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

fn run_one(idx: usize) {
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
        run_one(args[i + 1].parse().expect("scenario index"));
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{:<40} {:>7} {:>8} {:>12} {:>12} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9}",
        "scenario",
        "wall s",
        "sim s/s",
        "bneck pkt/s",
        "events/s",
        "ns/pkt",
        "peak MiB",
        "KiB/flow",
        "scen MiB",
        "heap MiB",
        "tabl MiB"
    );
    for (i, (name, _)) in scenarios().iter().enumerate() {
        let out = Command::new(&exe)
            .args(["--one", &i.to_string()])
            .output()
            .expect("run scenario");
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"OK") => println!(
                "{:<40} {:>7} {:>8} {:>12} {:>12} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9}",
                name, f[1], f[2], f[3], f[4], f[7], f[5], f[8], f[9], f[10], f[11]
            ),
            _ => println!("{name:<40} skipped: {}", line.trim()),
        }
    }
}
