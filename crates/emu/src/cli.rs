//! The `ccarena-bottleneck` command line, shared by the standalone binary
//! (`src/main.rs`) and the console script `pip install` puts beside
//! `ccarena` (`ccarena._core.bottleneck_cli`), so one install gives both
//! backends. Exit status 2 on bad arguments, 1 on a runtime failure.

use crate::engine::{Config, Engine};
use crate::sys;
use ccarena_sim::scenario::Scenario;
use std::path::PathBuf;

const USAGE: &str = "\
usage: ccarena-bottleneck --scenario FILE --if-senders IF --if-receivers IF
                          --t0-ns NS --out DIR [--port-base N] [--stop-after-s S]
                          [--spin-us US] [--batch-us US] [--no-realtime] [--cpu N]
                          [--trace]

Forwards frames between IF-senders and IF-receivers (AF_PACKET, bypassing
the kernel qdisc) through the normalized scenario's per-flow delays,
shaper and queue discipline. Flow i is the TCP connection to receiver port
PORT_BASE + i (default 35000). Time zero is CLOCK_MONOTONIC = T0_NS. Writes
DIR/ready once listening, DIR/queue.csv and DIR/flow_queue.csv every sample
interval, and DIR/stats.json (self-checks) when it stops: on SIGINT or
SIGTERM, or STOP_AFTER_S seconds after time zero (default: the scenario's
duration plus 30 s). --spin-us (busy-poll before a due time instead of
sleeping in ppoll) defaults to 0: spinning at SCHED_FIFO starves the CPU's
other threads (ksoftirqd among them) and the kernel then stops us for tens
of ms. --batch-us defaults to 0 below 1 Gbit/s and 50 above.
--cpu pins the process to one CPU. --trace writes DIR/frames.csv: every
frame of a flow as it arrives and as it is released (time in ns, event a|r,
side s|r, flow, TCP seq, ack, payload bytes, the time a released frame was
due), for measuring host timing.";

fn parse_args(args: &[String]) -> Result<Config, String> {
    let mut scenario: Option<PathBuf> = None;
    let (mut if_s, mut if_r, mut t0, mut out) = (None, None, None, None);
    let mut port_base: u16 = ccarena_sim::capture::PORT_BASE;
    let mut stop_after: Option<f64> = None;
    let mut spin_us: f64 = 0.0;
    let mut batch_us: Option<f64> = None;
    let mut realtime = true;
    let mut cpu: Option<usize> = None;
    let mut trace = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let num = |name: &str, v: String| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{name}: {v:?} is not a non-negative number"))
        };
        match a.as_str() {
            "--scenario" => scenario = Some(PathBuf::from(val(a)?)),
            "--if-senders" => if_s = Some(val(a)?),
            "--if-receivers" => if_r = Some(val(a)?),
            "--t0-ns" => {
                let v = val(a)?;
                t0 = Some(
                    v.parse::<u64>()
                        .map_err(|_| format!("--t0-ns: {v:?} is not an integer"))?,
                );
            }
            "--out" => out = Some(PathBuf::from(val(a)?)),
            "--port-base" => {
                let v = val(a)?;
                port_base = v
                    .parse()
                    .map_err(|_| format!("--port-base: {v:?} is not a port"))?;
            }
            "--stop-after-s" => stop_after = Some(num(a, val(a)?)?),
            "--spin-us" => spin_us = num(a, val(a)?)?,
            "--batch-us" => batch_us = Some(num(a, val(a)?)?),
            "--no-realtime" => realtime = false,
            "--trace" => trace = true,
            "--cpu" => {
                let v = val(a)?;
                cpu = Some(
                    v.parse()
                        .map_err(|_| format!("--cpu: {v:?} is not a CPU number"))?,
                );
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let scenario = scenario.ok_or("--scenario is required")?;
    let text =
        std::fs::read_to_string(&scenario).map_err(|e| format!("{}: {e}", scenario.display()))?;
    let sc = Scenario::from_json(&text).map_err(|e| format!("{}: {e}", scenario.display()))?;
    let n = sc.flows.len();
    if port_base as usize + n > 65535 {
        return Err(format!("--port-base {port_base}: no room for {n} flows"));
    }
    let batch = batch_us.unwrap_or(
        if sc
            .queue_links()
            .iter()
            .any(|l| l.queue.rate.0 > 1_000_000_000)
        {
            50.0
        } else {
            0.0
        },
    );
    let stop = stop_after.unwrap_or(sc.duration.secs_f64() + 30.0);
    Ok(Config {
        if_senders: if_s.ok_or("--if-senders is required")?,
        if_receivers: if_r.ok_or("--if-receivers is required")?,
        t0_ns: t0.ok_or("--t0-ns is required")?,
        out_dir: out.ok_or("--out is required")?,
        port_base,
        stop_after_ns: (stop * 1e9) as u64,
        spin_ns: (spin_us * 1e3) as u64,
        batch_ns: (batch * 1e3) as u64,
        realtime,
        cpu,
        trace,
        scenario: sc,
    })
}

/// Run the bottleneck with `args` (without the program name); returns the
/// exit status.
pub fn main(args: &[String]) -> u8 {
    let cfg = match parse_args(args) {
        Ok(c) => c,
        Err(m) if m.is_empty() => {
            println!("{USAGE}");
            return 0;
        }
        Err(m) => {
            eprintln!("ccarena-bottleneck: {m}\n{USAGE}");
            return 2;
        }
    };
    sys::install_signal_handlers();
    let mut engine = match Engine::new(cfg) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ccarena-bottleneck: cannot start: {e}");
            return 1;
        }
    };
    match engine.run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ccarena-bottleneck: {e}");
            1
        }
    }
}
