//! Run a scenario given as JSON on stdin and print the summary and flows.
use ccarena_sim::metrics::table::{ColumnData, Table};
use std::io::Read;

fn print(t: &Table) {
    println!("== {} ({} rows)", t.name, t.rows());
    for c in &t.columns {
        let v: Vec<String> = match &c.data {
            ColumnData::F64(v) => v.iter().take(12).map(|x| format!("{x:.4}")).collect(),
            ColumnData::I64(v) => v.iter().take(12).map(|x| x.to_string()).collect(),
            ColumnData::Str(v) => v.iter().take(12).cloned().collect(),
        };
        println!("  {:<22} {}", c.name, v.join(" "));
    }
}

fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let t_norm = std::time::Instant::now();
    let sc = ccarena_sim::scenario::normalize_json(&s).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("normalize {:.3}s", t_norm.elapsed().as_secs_f64());
    let t0 = std::time::Instant::now();
    let r = ccarena_sim::world::run(&sc);
    let wall = t0.elapsed().as_secs_f64();
    print(r.table("summary"));
    print(r.table("flows"));
    eprintln!(
        "wall {:.3}s events {} bottleneck pkts {} -> {:.0} pkts/s, {:.2} sim s per wall s",
        wall,
        r.stats.events,
        r.stats.bottleneck_packets,
        r.stats.bottleneck_packets as f64 / wall,
        r.stats.sim_time_ns as f64 / 1e9 / wall
    );
}
