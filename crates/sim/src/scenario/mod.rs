//! Scenarios: the file format (`raw`), validation, and the normalized form
//! the simulator runs, with every unit resolved and every flow expanded.
//!
//! One schema for both backends: Python hands the TOML over as JSON and gets
//! back either the normalized scenario or one error naming the field path.
//!
//! This file holds the normalized types and `normalize`, which reads the
//! sections in order: `topology` (the `[topology]` shorthand, and the names
//! and delays of `[[links]]`, which routes and base RTTs need), `flow`
//! (each `[[flows]]` entry expanded), `queue` (each queueing link),
//! `hosts` and `pcap` (`[capture]`).

pub mod hosts;
pub mod raw;

mod flow;
mod pcap;
mod queue;
#[cfg(test)]
mod tests;
mod topology;

use flow::{check_split, expand_flow};
use pcap::normalize_capture;
use queue::normalize_queue;
use topology::{expand_topology, LinkNames};

use crate::capture::CaptureSpec;
use crate::cc::CcConfig;
use crate::net::impair::{JitterConfig, LossConfig};
use crate::net::police::PolicerSpec;
use crate::net::trace::{TraceSpec, OPPORTUNITY_FRAME};
use crate::packet::{IP_TCP_TS_HEADER, LINK_FRAMING};
use crate::qdisc::{Limit, QdiscConfig};
use crate::units::{self, Bytes, Dur, Rate, Time};
pub use hosts::HostsSpec;
use raw::{RawScenario, UnitStr};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The estimated cost of one run (`Scenario::cost`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cost {
    /// Packets out of every link's queue (a packet crossing k links counts
    /// k times), at most each link's capacity in full frames.
    pub bottleneck_packets: f64,
    /// Of those, the packets that then take a link's delay line (a link
    /// with a delay, loss or jitter after its queue): each is an event of
    /// its own when it reaches the next hop.
    pub line_packets: f64,
    pub events: f64,
    pub sample_rows: f64,
    pub queue_rows: f64,
    /// The most full-size packets the network can hold at once (each
    /// link's buffer and bandwidth-delay product): what the packets in
    /// flight take in memory (`cost.py` prices it).
    pub packets_held: f64,
    /// The result tables' size before compression (about what their
    /// Parquet files take at most).
    pub table_bytes: f64,
}

/// A bad scenario: where (`flows[1].rtt`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// One short line whatever the user wrote: control characters escaped,
    /// and an echoed value of thousands of characters cut in the middle
    /// (the fuzzer found a 5,000-digit algorithm name printed in full).
    fn tidy(self) -> ScenarioError {
        fn short(s: &str, max: usize) -> String {
            // Control characters escaped, everything else (quotes too) as written.
            let mut clean = String::with_capacity(s.len());
            for c in s.chars() {
                if c.is_control() {
                    clean.extend(c.escape_debug());
                } else {
                    clean.push(c);
                }
            }
            let n = clean.chars().count();
            if n <= max {
                return clean;
            }
            let head: String = clean.chars().take(max * 2 / 3).collect();
            let tail: String = clean.chars().skip(n - max / 3).collect();
            format!(
                "{head} … ({} characters) … {tail}",
                n - head.chars().count() - max / 3
            )
        }
        ScenarioError {
            path: short(&self.path, 120),
            message: short(&self.message, 300),
        }
    }
}

/// A value a scenario may give but that makes its run mean less than it
/// seems (issue 39): a link that carries less than one frame in the run, a
/// loss chain that never leaves its bad state, a sample interval longer
/// than the run. `normalize_with_warnings` returns them beside the
/// normalized scenario, which they never change; the command line prints
/// each as `FILE: PATH: warning: MESSAGE`. What no run could mean anything
/// with (every packet lost, a size past the 64-bit limit, two schedule
/// steps at one instant) is a `ScenarioError` instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioWarning {
    pub path: String,
    pub message: String,
}

/// The warnings of one normalization, in the order found, each once (a
/// `[path]` default or a `[topology]` link is read once per flow or hop).
#[derive(Default)]
pub(crate) struct Warnings(Vec<ScenarioWarning>);

impl Warnings {
    pub(crate) fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        // As short and clean as an error's line.
        let e = ScenarioError {
            path: path.into(),
            message: message.into(),
        }
        .tidy();
        let w = ScenarioWarning {
            path: e.path,
            message: e.message,
        };
        if !self.0.contains(&w) {
            self.0.push(w);
        }
    }
}

/// The largest size a scenario may give, in bytes (as `units::parse_size`
/// takes them): a size computed from packets or BDP multiples beyond it is
/// refused, not capped at the 64-bit limit by a float's cast (issue 39:
/// `buffer = "1e30BDP"` became 18446744073709551615 bytes without a word).
fn scaled_bytes(path: &str, written: &str, k: f64, unit: u64) -> Result<u64, ScenarioError> {
    let b = k * unit as f64;
    if b.is_nan() || b >= units::MAX_SIZE_BYTES {
        return err(
            path,
            format!(
                "{written:?} is {b:.3e} bytes: too large (at most {:.0e})",
                units::MAX_SIZE_BYTES
            ),
        );
    }
    Ok(b.round() as u64)
}

/// A schedule's step at `t` after one at `prev`: times must increase, and
/// two steps at one instant are refused as ambiguous (issue 39: which
/// `what` holds from then on?).
fn check_step(path: &str, t: Time, prev: Time, what: &str) -> Result<(), ScenarioError> {
    if t > prev {
        return Ok(());
    }
    let t = Dur(t.0);
    let message = if t == Dur(prev.0) {
        format!("two steps at {t}: which {what} holds from then on is ambiguous; expected times that increase")
    } else {
        format!(
            "{t} is earlier than the step before it ({}); expected times that increase",
            Dur(prev.0)
        )
    };
    err(path, message)
}

/// Warn when jitter `j` (at `path`) can hold a packet longer than the run.
fn warn_long_jitter(
    path: &str,
    j: &JitterConfig,
    duration: Dur,
    warn: &mut Warnings,
) -> Result<(), ScenarioError> {
    let max = units::parse_duration(&j.max).or_else(|m| err(path, format!("max: {m}")))?;
    if max > duration {
        warn.add(
            format!("{path}.max"),
            format!(
                "{} is longer than the run ({duration}): a packet held that long arrives after the run ends; expected at most the run's duration",
                units::format_duration(max)
            ),
        );
    }
    Ok(())
}

/// Warn when a rate (at `path`) carries less than one `frame` in the run:
/// a sender's or a policer's, whose link gets next to nothing through.
fn warn_slow_rate(path: &str, rate: Rate, frame: u64, duration: Dur, warn: &mut Warnings) {
    if rate.bytes_in(duration).0 < frame {
        warn.add(
            path,
            format!(
                "{} carries less than one frame ({frame} bytes) in the run's {duration}: next to nothing gets through; expected at least {}",
                units::format_rate(rate),
                units::format_rate(one_frame_rate(frame, duration))
            ),
        );
    }
}

/// The smallest rate that carries `frame` bytes in `duration` (rounded up).
fn one_frame_rate(frame: u64, duration: Dur) -> Rate {
    let bits = frame as u128 * 8 * units::NS_PER_S as u128;
    Rate(
        bits.div_ceil(duration.0.max(1) as u128)
            .min(u64::MAX as u128) as u64,
    )
}

fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        path: path.into(),
        message: message.into(),
    })
}

/// How a flow's packets are paced (design: `pacing = "fq" | "internal" | "none"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacingMode {
    /// sch_fq on the sender honours the EDT stamps TCP puts on every packet.
    Fq,
    /// TCP's own pacing timer, used only by algorithms that ask for pacing (BBR).
    Internal,
    /// No pacing at all.
    None,
}

impl PacingMode {
    /// Whether a sender in this mode paces, given whether its algorithm
    /// asks for pacing (`SK_PACING_NEEDED`): sch_fq paces every flow at the
    /// rate TCP sets, TCP's own timer only the flows that ask
    /// (`tcp_needs_internal_pacing`).
    pub fn paces(self, cc_wants_pacing: impl FnOnce() -> bool) -> bool {
        match self {
            PacingMode::Fq => true,
            PacingMode::Internal => cc_wants_pacing(),
            PacingMode::None => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    pub mode: PacingMode,
    /// sch_fq `maxrate`: a per-flow cap on top of the TCP pacing rate.
    #[serde(rename = "max_rate_bps")]
    pub max_rate: Option<Rate>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BottleneckSpec {
    #[serde(rename = "rate_bps")]
    pub rate: Rate,
    /// `buffer` as written ("1BDP", "2MB", "100pkt").
    pub buffer: String,
    /// The queue limit it resolved to.
    pub limit: Limit,
    /// The BDP used for BDP multiples, and the RTT that defined it.
    #[serde(rename = "bdp_bytes")]
    pub bdp: Bytes,
    #[serde(rename = "bdp_rtt_ns")]
    pub bdp_rtt: Dur,
    pub qdisc: QdiscConfig,
    pub ecn: bool,
    /// Token-bucket depth (TBF `burst`).
    #[serde(rename = "burst_bytes")]
    pub burst: Bytes,
    /// (time, rate) steps: from each time on, the bottleneck rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<(Time, Rate)>,
    /// A delivery-opportunity trace (Mahimahi's format, `net::trace`) that
    /// drives the link instead of `rate_bps`, which is then its mean rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
    /// A token-bucket policer at the link's ingress (`net::police`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policer: Option<PolicerSpec>,
    /// Bytes of link-layer framing added to every packet in the link's
    /// time (`overhead`), not in its wire bytes.
    #[serde(default, skip_serializing_if = "is_zero", rename = "overhead_bytes")]
    pub overhead: Bytes,
    /// Random loss and jitter on the link after its queue (networks).
    #[serde(default, skip_serializing_if = "is_no_loss")]
    pub loss: LossConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterConfig>,
}

fn is_zero(n: &Bytes) -> bool {
    n.0 == 0
}

/// A queueing link as the simulator and the emulator build it (see
/// `Scenario::queue_links`).
#[derive(Clone, Copy, Debug)]
pub struct LinkRef<'a> {
    pub name: &'a str,
    /// Propagation delay after the queue, to the next link or the receiver.
    pub delay: Dur,
    pub queue: &'a BottleneckSpec,
}

impl BottleneckSpec {
    /// Bits it can send in a run of `duration_ns`: the rate integrated over
    /// the schedule plus the bucket it starts with.
    pub fn run_capacity_bits(&self, duration_ns: u64) -> f64 {
        match &self.trace {
            // A trace link has no bucket: its opportunities are all it
            // sends, those at the run's last instant included (the run
            // handles every event up to and at its end).
            Some(_) => self.capacity_bits(0, duration_ns + 1),
            None => self.capacity_bits(0, duration_ns) + (self.burst.0 * 8) as f64,
        }
    }

    /// The rate in force at time `t_ns` (the last schedule step at or
    /// before it, else `rate_bps`).
    pub fn rate_at(&self, t_ns: u64) -> u64 {
        self.rate_schedule
            .iter()
            .take_while(|&&(t, _)| t.0 <= t_ns)
            .last()
            .map_or(self.rate.0, |&(_, r)| r.0)
    }

    /// Bits the bottleneck can carry in `[from_ns, to_ns)`: its rate
    /// integrated over the rate schedule (the denominator of every
    /// utilization, so a schedule never makes it exceed 1).
    pub fn capacity_bits(&self, from_ns: u64, to_ns: u64) -> f64 {
        if to_ns <= from_ns {
            return 0.0;
        }
        if let Some(t) = &self.trace {
            // A full frame per delivery opportunity in the interval.
            return (t.opportunities(from_ns, to_ns) * OPPORTUNITY_FRAME * 8) as f64;
        }
        let mut bits = 0.0;
        let mut t = from_ns;
        let mut rate = self.rate_at(from_ns);
        for &(Time(at), Rate(r)) in self.rate_schedule.iter().filter(|&&(at, _)| at.0 > from_ns) {
            if at >= to_ns {
                break;
            }
            bits += rate as f64 * ((at - t) as f64 / 1e9);
            t = at;
            rate = r;
        }
        bits + rate as f64 * ((to_ns - t) as f64 / 1e9)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Index of this flow in the run (0..).
    pub id: u32,
    /// Index of the `[[flows]]` entry it was expanded from.
    pub group: u32,
    pub label: String,
    /// The algorithm and its parameters with every default filled in
    /// (fields `cc` and `cc_params` of the normalized scenario).
    #[serde(flatten)]
    pub cc: CcConfig,
    /// Base RTT: total propagation delay, forward plus reverse.
    #[serde(rename = "rtt_ns")]
    pub rtt: Dur,
    #[serde(rename = "fwd_delay_ns")]
    pub fwd_delay: Dur,
    #[serde(rename = "rev_delay_ns")]
    pub rev_delay: Dur,
    #[serde(rename = "access_rate_bps")]
    pub access_rate: Rate,
    #[serde(rename = "start_ns")]
    pub start: Time,
    /// Bytes to send; `None` = bulk until the end.
    #[serde(rename = "size_bytes")]
    pub size: Option<Bytes>,
    pub pacing: Pacing,
    /// Receive window; `None` = unlimited.
    #[serde(rename = "rwnd_bytes")]
    pub rwnd: Option<Bytes>,
    pub ecn: bool,
    pub mss: u32,
    pub init_cwnd: u32,
    /// Sender host (CAKE's per-host isolation; flows of one host are dealt to it).
    pub host: u32,
    /// Start `gap_ns` after flow `flow` completes, instead of at `start_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
    /// Application writes (offset from the start, bytes); empty unless a trace replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<(Dur, Bytes)>,
    /// Random loss on the data path (before the bottleneck) and on the ACK path.
    #[serde(default, skip_serializing_if = "is_no_loss")]
    pub loss: LossConfig,
    #[serde(default, skip_serializing_if = "is_no_loss")]
    pub ack_loss: LossConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_jitter: Option<JitterConfig>,
    /// (time, rtt) steps: from each time on, the flow's RTT (split as rtt_split).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtt_schedule: Vec<(Time, Dur)>,
    pub rtt_split: f64,
    /// The application stops writing at this time (bulk flows).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "stop_ns")]
    pub stop: Option<Time>,
    /// The links it crosses in order (indices into `Scenario::links`);
    /// empty in the dumbbell, whose one link every flow crosses. `rtt_ns`
    /// includes the route's delays both ways; `fwd_delay_ns` and
    /// `rev_delay_ns` are the flow's own part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<u32>,
    /// The links its ACKs cross in order (two-way traffic: they queue
    /// behind other flows' data); empty: an uncongested reverse path whose
    /// delay adds the route's. With one, `rtt_ns` is the own RTT plus the
    /// route's and the reverse route's delays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reverse_route: Vec<u32>,
}

impl FlowSpec {
    /// Whether this flow's sender paces its packets (`PacingMode::paces`
    /// with what its algorithm asks for).
    pub fn sender_paces(&self) -> bool {
        let init = crate::cc::signals::CcInit {
            now: Time::ZERO,
            mss: self.mss,
            init_cwnd: self.init_cwnd,
            srtt: None,
            seed: 0,
            ecn_enabled: self.ecn,
        };
        self.pacing
            .mode
            .paces(|| crate::cc::CongestionControl::wants_pacing(&self.cc.build(&init, self.id)))
    }
}

/// One link of a network: a queue (shaper and queue discipline, as the
/// dumbbell's bottleneck) followed by a propagation delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    pub name: String,
    #[serde(rename = "delay_ns")]
    pub delay: Dur,
    #[serde(flatten)]
    pub queue: BottleneckSpec,
}

fn is_no_loss(l: &LossConfig) -> bool {
    *l == LossConfig::None
}

/// A successive flow's dependency: it starts `gap_ns` after `flow` completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    pub flow: u32,
    #[serde(rename = "gap_ns")]
    pub gap: Dur,
}

/// Upper bound on the flows one scenario may expand to (10x the 10,000
/// flows the simulator is built to run; each flow's spec costs memory
/// before anything runs).
const MAX_FLOWS: usize = 100_000;

/// The version of the simulation model: raised with every change that
/// alters results (not with refactors that keep every bit). It is part of
/// the normalized scenario, so of every run's hash: after an upgrade that
/// changes the model, cached runs are run again instead of served as new.
/// What each version changed: CHANGELOG.md, "Model versions".
pub const MODEL_VERSION: u32 = 21;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// `MODEL_VERSION` of the simulator that normalized it (1 if absent).
    #[serde(default = "model_v1")]
    pub model: u32,
    pub name: String,
    pub description: String,
    #[serde(rename = "duration_ns")]
    pub duration: Dur,
    pub seed: u64,
    /// The dumbbell's one queueing link; `None` when `links` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<BottleneckSpec>,
    /// A network's links (`[[links]]`), crossed by each flow's `route`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    #[serde(rename = "sample_interval_ns")]
    pub sample_interval: Dur,
    /// The end hosts' answer timing (`net::host`); the simulator applies
    /// it, the Linux backend has real hosts.
    #[serde(default)]
    pub hosts: HostsSpec,
    /// Packet captures (`[capture]`, `capture`); they never change results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureSpec>,
}

/// The largest frame any flow sends (its full segment on the wire).
fn largest_frame(flows: &[FlowSpec]) -> u32 {
    flows
        .iter()
        .map(|f| f.mss + IP_TCP_TS_HEADER + LINK_FRAMING)
        .max()
        .unwrap_or(1514)
}

impl Scenario {
    pub fn duration(&self) -> Dur {
        self.duration
    }

    /// Every queueing link, in order: the dumbbell's bottleneck (named
    /// "bottleneck", no delay after it) or the network's `[[links]]`.
    pub fn queue_links(&self) -> Vec<LinkRef<'_>> {
        match &self.bottleneck {
            Some(b) => vec![LinkRef {
                name: "bottleneck",
                delay: Dur::ZERO,
                queue: b,
            }],
            None => self
                .links
                .iter()
                .map(|l| LinkRef {
                    name: &l.name,
                    delay: l.delay,
                    queue: &l.queue,
                })
                .collect(),
        }
    }

    /// The links flow `i` crosses, as indices into `queue_links()`.
    pub fn route(&self, i: usize) -> &[u32] {
        if self.bottleneck.is_some() {
            &[0]
        } else {
            &self.flows[i].route
        }
    }

    /// What a link can send over the whole run, in bits: the token bucket's
    /// envelope, its rate integrated over the schedule plus the bucket it
    /// starts with (`burst`; one frame by default, the frame a link of that
    /// rate is still sending at the end). Summed over the links, the
    /// denominator of the run's utilization, which therefore never exceeds 1.
    pub fn run_capacity_bits(&self) -> f64 {
        self.queue_links()
            .iter()
            .map(|l| l.queue.run_capacity_bits(self.duration.0))
            .sum()
    }

    /// What running this scenario will cost, estimated before it runs
    /// (`Cost`): an upper bound on the bottleneck's packets (it can carry
    /// no more than its capacity in full frames), the events they cause,
    /// the rows of the sampled tables and the memory those take.
    pub fn cost(&self) -> Cost {
        let frame_bits = largest_frame(&self.flows) as f64 * 8.0;
        let links = self.queue_links();
        // Every link's packets (a packet crossing k links is counted k times).
        let packets = self.run_capacity_bits() / frame_bits;
        // A link with a delay (or loss, jitter) after its queue puts what it
        // sends on its delay line, whose arrival at the next hop is one more
        // event a packet (`Ev::LinkOut`); the dumbbell's bottleneck has none
        // (its delays are the flows' own paths). A 32-hop parking lot of
        // 1 Gbit/s links, 5 ms each: 3.35 events a packet, 2.36 with the
        // same delays in the flows' paths instead.
        let line_packets: f64 = links
            .iter()
            .filter(|l| {
                l.delay > Dur::ZERO || l.queue.loss != LossConfig::None || l.queue.jitter.is_some()
            })
            .map(|l| l.queue.run_capacity_bits(self.duration.0) / frame_bits)
            .sum();
        let nlinks = links.len() as f64;
        let intervals = (self.duration.0 / self.sample_interval.0.max(1)) as f64 + 1.0;
        let flows = self.flows.len() as f64;
        let sample_rows = flows * intervals;
        Cost {
            bottleneck_packets: packets,
            line_packets,
            // Measured: 2.1-3.8 events per bottleneck packet (data, ACK,
            // timers; `benches/throughput.rs`); 4 as the bound, and one
            // more for each packet onto a delay line.
            events: packets * 4.0 + line_packets + flows * 16.0,
            sample_rows,
            queue_rows: intervals * nlinks,
            packets_held: self.packets_held(),
            // ~30 columns of 8 bytes per sample row, ~10 per queue row,
            // ~35 per flows row.
            table_bytes: sample_rows * 240.0 + intervals * nlinks * 80.0 + flows * 300.0,
        }
    }

    /// The most full-size packets the network can hold at once: each link's
    /// buffer and its bandwidth-delay product at the longest RTT of the
    /// flows through it (its rate schedule's highest rate).
    fn packets_held(&self) -> f64 {
        let frame = largest_frame(&self.flows) as f64;
        let max_rtt = self
            .flows
            .iter()
            .map(|f| f.rtt.secs_f64())
            .fold(0.0, f64::max);
        self.queue_links()
            .iter()
            .map(|l| {
                let q = l.queue;
                let rate = q
                    .rate_schedule
                    .iter()
                    .map(|&(_, r)| r.bps() as f64)
                    .fold(q.rate.bps() as f64, f64::max);
                let buffer = match q.limit {
                    Limit::Bytes(b) => b as f64,
                    Limit::Packets(n) => n as f64 * frame,
                };
                (buffer + rate / 8.0 * (max_rtt + l.delay.secs_f64())) / frame
            })
            .sum()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenario serializes")
    }

    /// Read a normalized scenario back (e.g. scenario.json), checking it again.
    pub fn from_json(s: &str) -> Result<Scenario, ScenarioError> {
        let sc: Scenario = serde_path_to_error::deserialize(
            &mut serde_json::Deserializer::from_str(s),
        )
        .map_err(|e| ScenarioError {
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        })?;
        // Exactly one network: the dumbbell's bottleneck, or links that every
        // flow's route names.
        match (&sc.bottleneck, sc.links.len()) {
            (Some(_), 0) => {
                if let Some(i) = sc.flows.iter().position(|f| !f.route.is_empty()) {
                    return err(format!("flows[{i}].route"), "a dumbbell flow has no route");
                }
            }
            (None, n) if n > 0 => {
                for (i, f) in sc.flows.iter().enumerate() {
                    let bad = |r: &[u32]| r.iter().any(|&l| l as usize >= n);
                    if f.route.is_empty() || bad(&f.route) || bad(&f.reverse_route) {
                        return err(
                            format!("flows[{i}].route"),
                            format!("must name links 0..{n}"),
                        );
                    }
                }
            }
            _ => return err("links", "give either bottleneck or links"),
        }
        Ok(sc)
    }
}

fn model_v1() -> u32 {
    1
}

/// Normalize a scenario given as JSON (the TOML file as a dict).
pub fn normalize_json(input: &str) -> Result<Scenario, ScenarioError> {
    normalize_json_with_warnings(input).map(|(sc, _)| sc)
}

/// `normalize_json`, and the warnings of the scenario (`ScenarioWarning`).
pub fn normalize_json_with_warnings(
    input: &str,
) -> Result<(Scenario, Vec<ScenarioWarning>), ScenarioError> {
    let raw: RawScenario =
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(input))
            .map_err(|e| {
                let path = e.path().to_string();
                ScenarioError {
                    path: if path == "." { String::new() } else { path },
                    message: e.into_inner().to_string(),
                }
            })
            .map_err(ScenarioError::tidy)?;
    normalize_with_warnings(raw).map_err(ScenarioError::tidy)
}

fn duration_at(path: &str, v: &UnitStr) -> Result<Dur, ScenarioError> {
    units::parse_duration(&v.0).or_else(|m| err(path, m))
}

fn positive_duration_at(path: &str, v: &UnitStr) -> Result<Dur, ScenarioError> {
    let d = duration_at(path, v)?;
    if d == Dur::ZERO {
        return err(path, format!("{:?} must be greater than zero", v.0));
    }
    Ok(d)
}

fn positive_rate_at(path: &str, v: &UnitStr) -> Result<Rate, ScenarioError> {
    let r = units::parse_rate(&v.0).or_else(|m| err(path, m))?;
    if r.0 == 0 {
        return err(path, format!("{:?} must be greater than zero", v.0));
    }
    Ok(r)
}

const DEFAULT_SAMPLE_INTERVAL: Dur = Dur::from_ms(100);

pub fn normalize(raw: RawScenario) -> Result<Scenario, ScenarioError> {
    normalize_with_warnings(raw).map(|(sc, _)| sc)
}

/// `normalize`, and the warnings of the scenario (`ScenarioWarning`).
pub fn normalize_with_warnings(
    mut raw: RawScenario,
) -> Result<(Scenario, Vec<ScenarioWarning>), ScenarioError> {
    let mut warn = Warnings::default();
    // `[topology]` is a shorthand: the links it stands for, their errors
    // named `topology.<field>`.
    let topology = expand_topology(&mut raw)?;
    let name = raw.name.unwrap_or_else(|| "scenario".into());
    let duration = match &raw.duration {
        Some(d) => positive_duration_at("duration", d)?,
        None => {
            return err(
                "duration",
                "missing: give the simulated duration, e.g. duration = \"30s\"",
            )
        }
    };
    let seed = raw.seed.unwrap_or(1);
    let path = raw.path.unwrap_or_default();
    // Every [path] default is checked even where each flow overrides it
    // (issue 10: a garbage path.rtt was never read when every flow set its own).
    if let Some(s) = path.rtt_split {
        check_split("path.rtt_split", s)?;
    }
    if let Some(r) = &path.rtt {
        positive_duration_at("path.rtt", r)?;
    }
    if let Some(r) = &path.access_rate {
        positive_rate_at("path.access_rate", r)?;
    }
    for (field, l) in [("path.loss", &path.loss), ("path.ack_loss", &path.ack_loss)] {
        if let Some(l) = l {
            l.validate().map_err(|m| ScenarioError {
                path: field.into(),
                message: m,
            })?;
        }
    }
    for (field, j) in [
        ("path.jitter", &path.jitter),
        ("path.ack_jitter", &path.ack_jitter),
    ] {
        if let Some(j) = j {
            j.validate().map_err(|m| ScenarioError {
                path: field.into(),
                message: m,
            })?;
        }
    }
    let raw_flows = match raw.flows {
        Some(f) if !f.is_empty() => f,
        _ => {
            return err(
                "flows",
                "no flows: add at least one [[flows]] table with a cc, e.g. cc = \"cubic\"",
            )
        }
    };

    let net = LinkNames::read(raw.links.as_deref())?;
    let mut flows = Vec::new();
    for (g, rf) in raw_flows.iter().enumerate() {
        expand_flow(g, rf, &path, &net, duration, &mut flows, &mut warn)?;
    }

    let mtu_wire = largest_frame(&flows);
    let (bottleneck, links) = match raw.links {
        None => {
            let rtts: Vec<u64> = flows.iter().map(|f| f.rtt.0).collect();
            let rb = raw.bottleneck.unwrap_or_default();
            (
                Some(normalize_queue(
                    "bottleneck",
                    &rb,
                    &rtts,
                    mtu_wire,
                    duration,
                    &mut warn,
                )?),
                vec![],
            )
        }
        Some(raw_links) => {
            if raw.bottleneck.is_some() {
                return err(
                    "links",
                    "give either [bottleneck] (the dumbbell) or [[links]] (a network), not both",
                );
            }
            let mut links = Vec::with_capacity(raw_links.len());
            for (k, rl) in raw_links.iter().enumerate() {
                let on: Vec<u64> = flows
                    .iter()
                    .filter(|f| f.route.contains(&(k as u32)))
                    .map(|f| f.rtt.0)
                    .collect();
                let rtts = if on.is_empty() {
                    flows.iter().map(|f| f.rtt.0).collect()
                } else {
                    on
                };
                let prefix = if topology {
                    "topology".to_string()
                } else {
                    format!("links[{k}]")
                };
                let spec =
                    normalize_queue(&prefix, &rl.queue, &rtts, mtu_wire, duration, &mut warn)?;
                links.push(LinkSpec {
                    name: net.names[k].clone(),
                    delay: net.delays[k],
                    queue: spec,
                });
            }
            (None, links)
        }
    };

    let sample_interval = match raw.sample.and_then(|s| s.interval) {
        Some(i) => positive_duration_at("sample.interval", &i)?,
        None => DEFAULT_SAMPLE_INTERVAL,
    };
    if sample_interval > duration {
        // The first sample falls after the end (`world`: at one interval).
        warn.add(
            "sample.interval",
            format!(
                "{} is longer than the run ({duration}): no sample is taken, so the samples and queue tables are empty; expected at most the run's duration",
                units::format_duration(sample_interval)
            ),
        );
    }
    let hosts = hosts::normalize(raw.hosts.unwrap_or_default())?;

    let link_names: Vec<&str> = match &bottleneck {
        Some(_) => vec!["bottleneck"],
        None => links.iter().map(|l| l.name.as_str()).collect(),
    };
    let capture = match raw.capture {
        None => None,
        Some(rc) => Some(normalize_capture(rc, &link_names, flows.len())?),
    };

    let scenario = Scenario {
        model: MODEL_VERSION,
        name,
        description: raw.description.unwrap_or_default(),
        duration,
        seed,
        bottleneck,
        links,
        flows,
        sample_interval,
        hosts,
        capture,
    };
    Ok((scenario, warn.0))
}
