//! Scenarios: the file format (`raw`), validation, and the normalized form
//! the simulator runs, with every unit resolved and every flow expanded.
//!
//! One schema for both backends: Python hands the TOML over as JSON and gets
//! back either the normalized scenario or one error naming the field path.

pub mod hosts;
pub mod raw;

use crate::capture::{self, CaptureSpec, Direction, Point};
use crate::cc::CcConfig;
use crate::net::impair::{JitterConfig, LossConfig};
use crate::net::police::PolicerSpec;
use crate::net::trace::{TraceSpec, OPPORTUNITY_FRAME};
use crate::packet::{DEFAULT_MSS, IP_TCP_TS_HEADER, LINK_FRAMING};
use crate::qdisc::{Limit, QdiscConfig, QdiscEnv};
use crate::units::{self, Bytes, Dur, Rate, SizeSpec, Time};
pub use hosts::HostsSpec;
use raw::{RawBottleneck, RawCapture, RawFlow, RawLink, RawPath, RawScenario, UnitStr};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The estimated cost of one run (`Scenario::cost`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub bottleneck_packets: f64,
    pub events: f64,
    pub sample_rows: f64,
    pub queue_rows: f64,
    pub memory_bytes: f64,
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
/// 2: host timing noise (`net::host`).
/// 3: per-flow drops exclude SYNs; utilization over the scheduled capacity.
/// 4: TSO deferral (`tcp_tso_should_defer`, `[hosts] tso_defer`), SACK
///    compression (`tcp_comp_sack_*`, `[hosts] sack_compress`) and PSH at the
///    end of application writes, ACKed at once (`tcp::push`, `[hosts] push_acks`).
/// 5: a quick ACK for every segment that grows the receive window
///    (`tcp_grow_window`, DRS; `tcp::rcvbuf`, `[hosts] window_acks`).
/// 6: the window's room as in `tcp_data_queue`: an in-order segment grows
///    it charged to the buffer and before the out-of-order data it joins is
///    moved in; an out-of-order one before it is charged.
/// 7: PSH on the last segment of every multi-segment transmit (a GSO packet,
///    `__tcp_transmit_skb`), and a bulk writer that writes again only when a
///    third of its send buffer is free (`sk_stream_write_space`; `tcp::push`).
/// 8: host turnarounds re-measured on the Linux backend (`net::host`: means
///    73.6 and 74.1 us, were 55.4 and 57.6).
/// 9: CWR held until an ACK above high_seq and a loss during CWR entering
///    Recovery without a second reduction (`tcp_fastretrans_alert`); RTT
///    samples from echoed timestamps on ACKs of retransmitted data
///    (`tcp_ack_update_rtt`, `[hosts] timestamps`).
/// 10: retransmissions of an ECN flow sent Not-ECT (RFC 3168 6.1.5,
///    `tcp_ecn_send`) unless the algorithm keeps ECT (DCTCP; BBRv2/v3 with
///    their ECN logic on), so an AQM in its dropping state drops them.
/// 11: the reduction after a loss probe repaired a loss starts as every
///    other (`tcp_process_tlp_ack` -> `tcp_init_cwnd_reduction`): an ECN
///    flow flags CWR on its next new segment.
/// 12: the receiver's delayed-ACK timer as Linux runs it (`tcp/delack.rs`,
///    `[hosts] delack` and `hz`): the adaptive `icsk_ack.ato` on the
///    kernel's jiffies (250 Hz), the timer wheel's round-up by a tick, and
///    quick-ACK mode after a gap longer than the RTO, an old duplicate or a
///    Not-ECT segment of an ECN flow.
/// 13: quick-ACK mode at a flow's first data lasts half the advertised
///    window in segments, at most 16 (`tcp_incr_quickack`), not always 16:
///    a small `rwnd` or a large MSS ACKs fewer segments one by one.
/// 14: each run's hosts at a speed drawn from its seed (`[hosts]
///    run_speed`, `net::host::RunSpeed`): the turnaround table scaled by a
///    factor spread as the kernel's runs of one scenario are (sd 6.7%).
/// 15: a flow's `stop` ends the application's writes, and what it wrote
///    (TCP's send buffer, `tcp::push`'s writer) is still sent; before, the
///    flow sent nothing new after it.
/// 16: the receiver's RTT, which its window's DRS measures rounds by, from
///    timestamps as Linux 6.16+ keeps it (`[hosts] rcv_rtt_timestamps` on
///    by default; a smaller sample latches, a larger one moves it by 1/8),
///    not the handshake's: it sees the queue.
/// 17: TCP Prague as v0.7 in three more details (`cc/prague.rs`): in alpha
///    mode 0 the first CE mark halves the window, the pacing rate counts
///    MTU-sized packets, and `saw_ce` starts false in either alpha mode.
/// 18: the write queue's buffers sized when the application writes them
///    (`tcp_sendmsg_locked` at the size goal of that moment, half the
///    largest advertised window at most), which `tcp_tso_should_defer`
///    reads, instead of cuts at multiples of the current goal; and the
///    advertised window (`[hosts] advertised_window`) on by default.
/// 19: a flow's `rwnd` locks a receive buffer the kernel doubles
///    (`SO_RCVBUF`, socket(7)): the receiver's clamp is its window at the
///    scaling ratio, 1.25 x `rwnd`, the SYN-ACK's `rwnd` itself, and the
///    sender keeps within `rwnd`; out-of-order data takes the room above
///    `rwnd` first (before: the clamp was `rwnd`).
/// 20: the sender's timers as Linux's (`world::Armed`): an event that comes
///    before the sender's deadline (it moved later since it was queued)
///    re-arms and does nothing else, as `tcp_write_timer_handler` does when
///    it fires before `icsk_timeout`; before, it called the sender, whose
///    transmit could send or arm pacing at a moment Linux has no wake-up.
///    A deadline queues no event while one queued comes no later.
pub const MODEL_VERSION: u32 = 20;

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
        // Every link's packets (a packet crossing k links is counted k times).
        let packets = self.run_capacity_bits() / frame_bits;
        let nlinks = self.queue_links().len() as f64;
        let intervals = (self.duration.0 / self.sample_interval.0.max(1)) as f64 + 1.0;
        let flows = self.flows.len() as f64;
        let sample_rows = flows * intervals;
        Cost {
            bottleneck_packets: packets,
            // Measured: 3.3-3.5 events per bottleneck packet (data, ACK,
            // timers; `benches/throughput.rs`); 4 as the bound.
            events: packets * 4.0 + flows * 16.0,
            sample_rows,
            queue_rows: intervals * nlinks,
            // ~30 columns of 8 bytes per sample row, ~4 KB of state per flow.
            memory_bytes: sample_rows * 240.0 + intervals * nlinks * 80.0 + flows * 4096.0,
        }
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
    normalize(raw).map_err(ScenarioError::tidy)
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

/// Default access-link rate: fast enough that sender bursts stay bursts.
const DEFAULT_ACCESS_RATE: Rate = Rate(40_000_000_000);
const DEFAULT_SAMPLE_INTERVAL: Dur = Dur::from_ms(100);
const DEFAULT_INIT_CWND: u32 = 10;

pub fn normalize(mut raw: RawScenario) -> Result<Scenario, ScenarioError> {
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
        expand_flow(g, rf, &path, &net, duration, &mut flows)?;
    }

    let mtu_wire = largest_frame(&flows);
    let (bottleneck, links) = match raw.links {
        None => {
            let rtts: Vec<u64> = flows.iter().map(|f| f.rtt.0).collect();
            let rb = raw.bottleneck.unwrap_or_default();
            (
                Some(normalize_queue("bottleneck", &rb, &rtts, mtu_wire)?),
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
                let spec = normalize_queue(&prefix, &rl.queue, &rtts, mtu_wire)?;
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
    let hosts = hosts::normalize(raw.hosts.unwrap_or_default())?;

    let link_names: Vec<&str> = match &bottleneck {
        Some(_) => vec!["bottleneck"],
        None => links.iter().map(|l| l.name.as_str()).collect(),
    };
    let capture = match raw.capture {
        None => None,
        Some(rc) => Some(normalize_capture(rc, &link_names, flows.len())?),
    };

    Ok(Scenario {
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
    })
}

/// `[capture]`: points known and each given once, flows that exist, the
/// snap length and frame count within bounds.
fn normalize_capture(
    rc: RawCapture,
    links: &[&str],
    nflows: usize,
) -> Result<CaptureSpec, ScenarioError> {
    let names = rc
        .at
        .map_or_else(|| vec!["sender".to_string()], |a| a.into_vec());
    if names.is_empty() {
        return err(
            "capture.at",
            "an empty list: name at least one point (\"sender\", \"receiver\" or a link)",
        );
    }
    let mut at = Vec::with_capacity(names.len());
    for n in names {
        let point = match n.as_str() {
            "sender" | "receiver" if links.contains(&n.as_str()) => {
                return err(
                    "capture.at",
                    format!("{n:?} names both the {n}s' interface and a link: rename the link"),
                )
            }
            "sender" => Point::Sender,
            "receiver" => Point::Receiver,
            l if links.contains(&l) => Point::Link(n.clone()),
            _ => {
                return err(
                    "capture.at",
                    format!(
                        "unknown point {n:?}: expected \"sender\", \"receiver\" or a link ({})",
                        links.join(", ")
                    ),
                )
            }
        };
        if at.contains(&point) {
            return err("capture.at", format!("{n:?} is given twice"));
        }
        at.push(point);
    }
    let flows = rc.flows.unwrap_or_default();
    for (k, &i) in flows.iter().enumerate() {
        if i as usize >= nflows {
            return err(
                "capture.flows",
                format!(
                    "flow {i} does not exist: the scenario has flows 0..{}",
                    nflows.saturating_sub(1)
                ),
            );
        }
        if flows[..k].contains(&i) {
            return err("capture.flows", format!("flow {i} is given twice"));
        }
    }
    let packets = match rc.packets {
        None => Direction::default(),
        Some(s) => Direction::parse(&s).map_or_else(
            || {
                err(
                    "capture.packets",
                    format!(
                        "unknown value {s:?}: expected one of {}",
                        Direction::NAMES.join(", ")
                    ),
                )
            },
            Ok,
        )?,
    };
    let snaplen = rc.snaplen.unwrap_or(capture::DEFAULT_SNAPLEN);
    if !(capture::MIN_SNAPLEN..=capture::MAX_SNAPLEN).contains(&snaplen) {
        return err(
            "capture.snaplen",
            format!(
                "{snaplen}: bytes kept per frame, {}..{} (every header fits in {})",
                capture::MIN_SNAPLEN,
                capture::MAX_SNAPLEN,
                capture::MIN_SNAPLEN
            ),
        );
    }
    let max_packets = rc.max_packets.unwrap_or(capture::DEFAULT_MAX_PACKETS);
    if !(1..=capture::MAX_MAX_PACKETS).contains(&max_packets) {
        return err(
            "capture.max_packets",
            format!(
                "{max_packets}: frames per file, 1..{}",
                capture::MAX_MAX_PACKETS
            ),
        );
    }
    Ok(CaptureSpec {
        at,
        flows,
        packets,
        snaplen,
        max_packets,
    })
}

/// Normalize one queueing link (`[bottleneck]`, or `[[links]]` entry
/// `prefix`): rate, buffer (BDP multiples of the rate and `bdp_rtt`, by
/// default the smallest of `rtts`, the base RTTs of the flows that cross
/// it), queue discipline, burst and rate schedule. Errors name
/// `<prefix>.<field>`.
fn normalize_queue(
    prefix: &str,
    rb: &RawBottleneck,
    rtts: &[u64],
    mtu_wire: u32,
) -> Result<BottleneckSpec, ScenarioError> {
    let at = |field: &str| format!("{prefix}.{field}");
    let trace = match &rb.trace {
        None => None,
        Some(t) => {
            let spec = t.spec().map_err(|m| ScenarioError {
                path: at("trace"),
                message: m,
            })?;
            for (field, given) in [
                ("rate", rb.rate.is_some()),
                ("burst", rb.burst.is_some()),
                ("rate_schedule", rb.rate_schedule.is_some()),
            ] {
                if given {
                    return err(
                        at(field),
                        "a trace-driven link sends at its trace's delivery opportunities: remove this field or the trace",
                    );
                }
            }
            Some(spec)
        }
    };
    let rate =
        match (&rb.rate, &trace) {
            (_, Some(t)) => t.mean_rate(),
            (rate, None) => match rate {
                Some(r) => positive_rate_at(&at("rate"), r)?,
                None => return err(
                    at("rate"),
                    "missing: give the link's rate, e.g. rate = \"100Mbps\", or a delivery trace",
                ),
            },
        };
    let bdp_rtt = match rb.bdp_rtt.as_ref().map(|s| s.0.as_str()) {
        None | Some("min") => Dur(rtts.iter().copied().min().unwrap_or(0)),
        Some("max") => Dur(rtts.iter().copied().max().unwrap_or(0)),
        Some(s) => units::parse_duration(s).map_err(|m| ScenarioError {
            path: at("bdp_rtt"),
            message: format!("{m}, or \"min\" or \"max\""),
        })?,
    };
    let bdp = units::bdp(rate, bdp_rtt);
    let buffer_str = rb.buffer.clone().unwrap_or(UnitStr("1BDP".into()));
    let limit = resolve_buffer(&at("buffer"), &buffer_str.0, bdp, mtu_wire)?;
    let overhead_bytes = match &rb.overhead {
        None => 0,
        Some(o) => match units::parse_size(&o.0).or_else(|m| err(at("overhead"), m))? {
            SizeSpec::Bytes(n) if n <= 1_000 => n,
            _ => {
                return err(
                    at("overhead"),
                    format!("{:?}: 0 to 1000 bytes of framing per packet", o.0),
                )
            }
        },
    };
    // The bucket holds at least one full packet as the link counts it.
    let frame = mtu_wire as u64 + overhead_bytes;
    let burst_bytes = match &rb.burst {
        None => frame,
        Some(b) => match units::parse_size(&b.0).or_else(|m| err(at("burst"), m))? {
            SizeSpec::Bytes(n) => n,
            SizeSpec::Packets(p) => (p * mtu_wire as f64).round() as u64,
            SizeSpec::Bdp(k) => (k * bdp.0 as f64).round() as u64,
        },
    };
    if burst_bytes < frame {
        return err(
            at("burst"),
            format!("{burst_bytes} bytes is smaller than one packet ({frame} bytes)"),
        );
    }
    let ecn = rb.ecn.unwrap_or(false);
    // Impairments of a network's links; the dumbbell has its [path] ones.
    if prefix == "bottleneck" && (rb.loss.is_some() || rb.jitter.is_some()) {
        let field = if rb.loss.is_some() { "loss" } else { "jitter" };
        return err(
            at(field),
            "the dumbbell's loss and jitter are the flows' ([path] or [[flows]]); a [[links]] link may have its own",
        );
    }
    let loss = rb.loss.clone().unwrap_or(LossConfig::None);
    loss.validate().map_err(|m| ScenarioError {
        path: at("loss"),
        message: m,
    })?;
    if let Some(j) = &rb.jitter {
        j.validate().map_err(|m| ScenarioError {
            path: at("jitter"),
            message: m,
        })?;
    }
    let jitter = rb.jitter.clone();
    let policer = match &rb.policer {
        None => None,
        Some(p) => {
            let rate = positive_rate_at(&at("policer.rate"), &p.rate)?;
            // Default depth: 10 ms at the rate, at least one frame.
            let burst = match &p.burst {
                None => (rate.0 / 800).max(mtu_wire as u64),
                Some(b) => {
                    match units::parse_size(&b.0).or_else(|m| err(at("policer.burst"), m))? {
                        SizeSpec::Bytes(n) => n,
                        SizeSpec::Packets(k) => (k * mtu_wire as f64).round() as u64,
                        SizeSpec::Bdp(_) => {
                            return err(
                                at("policer.burst"),
                                "a policer's burst is bytes or packets",
                            )
                        }
                    }
                }
            };
            if burst < mtu_wire as u64 || burst > (rate.0 / 8).max(mtu_wire as u64) {
                return err(
                    at("policer.burst"),
                    format!(
                        "{burst} bytes: between one frame ({mtu_wire} bytes) and one second at the policer's rate"
                    ),
                );
            }
            Some(PolicerSpec {
                rate,
                burst: Bytes(burst),
            })
        }
    };
    let qdisc_name = rb.qdisc.clone().unwrap_or_else(|| "taildrop".into());
    let mut qdisc_params = serde_json::Value::Null;
    for (k, v) in &rb.qdisc_params {
        if !QdiscConfig::NAMES.contains(&k.as_str()) {
            return err(
                at(k),
                format!(
                    "unknown field; expected one of {}rate, buffer, bdp_rtt, qdisc, ecn, burst, rate_schedule, trace, policer, overhead, or a [{prefix}.<qdisc>] table ({})",
                    if prefix == "bottleneck" { "" } else { "name, delay, " },
                    QdiscConfig::NAMES.join(", ")
                ),
            );
        }
        if *k != qdisc_name {
            return err(
                at(k),
                format!("parameters for {k:?} but {prefix}.qdisc is {qdisc_name:?}"),
            );
        }
        if !v.is_object() {
            return err(at(k), "expected a table of parameters");
        }
        qdisc_params = v.clone();
    }
    let env = QdiscEnv {
        limit,
        rate,
        mtu_wire,
        ecn,
    };
    let qdisc = QdiscConfig::parse(&qdisc_name, &qdisc_params, &env).map_err(|m| {
        let path = if qdisc_params.is_null() {
            at("qdisc")
        } else {
            at(&qdisc_name)
        };
        ScenarioError { path, message: m }
    })?;

    let mut rate_schedule = Vec::new();
    for (k, (t, r)) in rb.rate_schedule.iter().flatten().enumerate() {
        let t = duration_at(&at(&format!("rate_schedule[{k}][0]")), t)?;
        let r = positive_rate_at(&at(&format!("rate_schedule[{k}][1]")), r)?;
        if rate_schedule
            .last()
            .is_some_and(|&(prev, _)| Time(t.0) < prev)
        {
            return err(
                at(&format!("rate_schedule[{k}][0]")),
                "times must not decrease",
            );
        }
        rate_schedule.push((Time(t.0), r));
    }

    // A bucket deeper than a second of transmission at the largest rate is
    // no longer a shaper (issue 10: 20 GiB on 100 Mbit/s gave utilization
    // 5571% and runs that did not end).
    let top_rate = Rate(
        rate_schedule
            .iter()
            .map(|&(_, r)| r.0)
            .fold(rate.0, u64::max),
    );
    let burst_max = (top_rate.0 / 8).max(frame);
    if burst_bytes > burst_max {
        return err(
            at("burst"),
            format!(
                "{burst_bytes} bytes is more than one second of transmission at {} ({burst_max} bytes)",
                units::format_rate(top_rate)
            ),
        );
    }

    Ok(BottleneckSpec {
        rate,
        buffer: buffer_str.0,
        limit,
        bdp,
        bdp_rtt,
        qdisc,
        ecn,
        burst: Bytes(burst_bytes),
        rate_schedule,
        trace,
        policer,
        overhead: Bytes(overhead_bytes),
        loss,
        jitter,
    })
}

/// Upper bound on a parking lot's hops.
const MAX_HOPS: i64 = 64;

/// Replace `[topology]` by what it stands for: the dumbbell's
/// `[bottleneck]`, or a parking lot's `[[links]]` hop1..hopN (each with the
/// topology's link fields). True when it made links.
fn expand_topology(raw: &mut RawScenario) -> Result<bool, ScenarioError> {
    let Some(t) = raw.topology.take() else {
        return Ok(false);
    };
    if raw.bottleneck.is_some() || raw.links.is_some() {
        return err(
            "topology",
            "give [topology] or [bottleneck] or [[links]], not two of them",
        );
    }
    if t.link.name.is_some() {
        return err(
            "topology.name",
            "a topology names its links itself (hop1, hop2, ...)",
        );
    }
    if let Some(d) = &t.link.delay {
        duration_at("topology.delay", d)?;
    }
    match t.kind.as_deref() {
        Some("dumbbell") => {
            if t.hops.is_some() || t.link.delay.is_some() {
                let field = if t.hops.is_some() { "hops" } else { "delay" };
                return err(
                    format!("topology.{field}"),
                    "the dumbbell has one link and its delays are the flows' own",
                );
            }
            raw.bottleneck = Some(t.link.queue);
            Ok(false)
        }
        Some("parking_lot") => {
            let hops = t.hops.unwrap_or(3);
            if !(1..=MAX_HOPS).contains(&hops) {
                return err(
                    "topology.hops",
                    format!("{hops} hops: a parking lot has 1..{MAX_HOPS}"),
                );
            }
            raw.links = Some(
                (1..=hops)
                    .map(|k| RawLink {
                        name: Some(format!("hop{k}")),
                        ..t.link.clone()
                    })
                    .collect(),
            );
            Ok(true)
        }
        Some(other) => err(
            "topology.kind",
            format!("unknown topology {other:?}; expected \"dumbbell\" or \"parking_lot\""),
        ),
        None => err("topology.kind", "missing: \"dumbbell\" or \"parking_lot\""),
    }
}

/// The names and delays of `[[links]]`, read before the flows (whose
/// routes name links and whose base RTTs include the links' delays).
struct LinkNames {
    names: Vec<String>,
    delays: Vec<Dur>,
}

/// Upper bound on `[[links]]` (a route is checked link by link per flow).
const MAX_LINKS: usize = 1_000;

impl LinkNames {
    fn read(links: Option<&[RawLink]>) -> Result<LinkNames, ScenarioError> {
        let mut net = LinkNames {
            names: vec![],
            delays: vec![],
        };
        let Some(links) = links else { return Ok(net) };
        if links.is_empty() {
            return err("links", "an empty list: give at least one [[links]] table");
        }
        if links.len() > MAX_LINKS {
            return err(
                "links",
                format!("{} links: at most {MAX_LINKS}", links.len()),
            );
        }
        for (k, l) in links.iter().enumerate() {
            let name = match &l.name {
                None => format!("link{k}"),
                Some(n) => {
                    let ok = !n.is_empty()
                        && n.len() <= 32
                        && n.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
                    if !ok {
                        return err(
                            format!("links[{k}].name"),
                            format!(
                                "{n:?}: a link's name is 1-32 letters, digits, '_', '-' or '.'"
                            ),
                        );
                    }
                    n.clone()
                }
            };
            if net.names.contains(&name) {
                return err(
                    format!("links[{k}].name"),
                    format!("{name:?} names two links"),
                );
            }
            let delay = match &l.delay {
                None => Dur::ZERO,
                Some(d) => duration_at(&format!("links[{k}].delay"), d)?,
            };
            net.names.push(name);
            net.delays.push(delay);
        }
        Ok(net)
    }

    /// A flow's `route` as link indices: every name a link, none twice.
    fn route(&self, at: &str, route: Option<&[String]>) -> Result<Vec<u32>, ScenarioError> {
        match (route, self.names.is_empty()) {
            (None, true) => Ok(vec![]),
            (Some(_), true) => err(
                at,
                "a route needs a network: define its links with [[links]] (the dumbbell's [bottleneck] has no route)",
            ),
            (None, false) => err(
                at,
                format!(
                    "missing: with [[links]], every flow names the links it crosses in order, e.g. route = [{:?}]",
                    self.names[0]
                ),
            ),
            (Some([]), false) => err(at, "an empty route: name at least one link"),
            (Some(names), false) => {
                let mut out: Vec<u32> = Vec::with_capacity(names.len());
                for (k, n) in names.iter().enumerate() {
                    let Some(l) = self.names.iter().position(|x| x == n) else {
                        return err(
                            format!("{at}[{k}]"),
                            format!("unknown link {n:?}; the links are {}", self.names.join(", ")),
                        );
                    };
                    if out.contains(&(l as u32)) {
                        return err(
                            format!("{at}[{k}]"),
                            format!("{n:?} is crossed twice"),
                        );
                    }
                    out.push(l as u32);
                }
                Ok(out)
            }
        }
    }
}

fn check_split(path: &str, s: f64) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&s) {
        return err(
            path,
            format!("{s} is outside 0..1 (the share of the RTT on the forward path)"),
        );
    }
    Ok(())
}

/// Resolve `buffer` to a queue limit. An explicit size below one packet is an
/// error; a BDP multiple is never less than one full-size packet.
fn resolve_buffer(path: &str, s: &str, bdp: Bytes, mtu_wire: u32) -> Result<Limit, ScenarioError> {
    match units::parse_size(s).or_else(|m| err(path, m))? {
        SizeSpec::Bytes(b) => {
            if b < mtu_wire as u64 {
                return err(
                    path,
                    format!("{s:?} is smaller than one packet ({mtu_wire} bytes on the wire)"),
                );
            }
            Ok(Limit::Bytes(b))
        }
        SizeSpec::Packets(p) => {
            if p < 1.0 || p.fract() != 0.0 {
                return err(
                    path,
                    format!("{s:?}: a packet limit must be a whole number of at least 1"),
                );
            }
            Ok(Limit::Packets(p as u32))
        }
        SizeSpec::Bdp(k) => {
            if k <= 0.0 {
                return err(path, format!("{s:?} must be greater than zero"));
            }
            Ok(Limit::Bytes(
                ((k * bdp.0 as f64).round() as u64).max(mtu_wire as u64),
            ))
        }
    }
}

fn expand_flow(
    g: usize,
    rf: &RawFlow,
    path: &RawPath,
    net: &LinkNames,
    duration: Dur,
    out: &mut Vec<FlowSpec>,
) -> Result<(), ScenarioError> {
    let at = |field: &str| format!("flows[{g}].{field}");
    let route = net.route(&at("route"), rf.route.as_deref())?;
    let reverse_route = match &rf.reverse_route {
        None => vec![],
        Some(r) => net.route(&at("reverse_route"), Some(r))?,
    };
    if let Some(k) = reverse_route.iter().position(|l| route.contains(l)) {
        return err(
            format!("flows[{g}].reverse_route[{k}]"),
            format!(
                "{:?} carries the flow's data: a link is one-way, its ACKs need another (e.g. \"{}-back\")",
                net.names[reverse_route[k] as usize], net.names[reverse_route[k] as usize]
            ),
        );
    }
    let delay_of = |links: &[u32]| Dur(links.iter().map(|&l| net.delays[l as usize].0).sum());
    // The links' own propagation delays, one way; the ACKs return over the
    // reverse route's links, or else an uncongested path of the same length.
    let route_delay = delay_of(&route);
    let back_delay = if reverse_route.is_empty() {
        route_delay
    } else {
        delay_of(&reverse_route)
    };
    let cc = match &rf.cc {
        Some(c) => c.clone(),
        None => {
            return err(
                at("cc"),
                format!("missing: choose one of {}", CcConfig::NAMES.join(", ")),
            )
        }
    };
    let params = rf.cc_params.clone().unwrap_or(serde_json::Value::Null);
    let cfg = CcConfig::parse(&cc, &params).map_err(|m| {
        let field = if m.starts_with("unknown congestion control") {
            "cc"
        } else {
            "cc_params"
        };
        ScenarioError {
            path: at(field),
            message: m,
        }
    })?;
    let count = rf.count.unwrap_or(1);
    if count < 1 {
        return err(
            at("count"),
            format!("{count} flows: count must be at least 1"),
        );
    }
    // On a route whose links have delays, `rtt` is what the flow adds to
    // them (its access links) and may be zero.
    let own_rtt = |field: &str, r: &UnitStr| {
        if route_delay + back_delay > Dur::ZERO {
            duration_at(field, r)
        } else {
            positive_duration_at(field, r)
        }
    };
    let rtt = match (&rf.rtt, &path.rtt) {
        (Some(r), _) => own_rtt(&at("rtt"), r)?,
        (None, Some(r)) => own_rtt("path.rtt", r)?,
        (None, None) if route_delay + back_delay > Dur::ZERO => Dur::ZERO,
        (None, None) => {
            return err(
                at("rtt"),
                "missing: give rtt here or a default under [path], e.g. rtt = \"20ms\"",
            )
        }
    };
    let base_rtt = rtt + route_delay + back_delay;
    let split = rf.rtt_split.or(path.rtt_split).unwrap_or(0.5);
    check_split(&at("rtt_split"), split)?;
    let access_rate = match (&rf.access_rate, &path.access_rate) {
        (Some(r), _) => positive_rate_at(&at("access_rate"), r)?,
        (None, Some(r)) => positive_rate_at("path.access_rate", r)?,
        (None, None) => DEFAULT_ACCESS_RATE,
    };
    let start = match &rf.start {
        Some(s) => duration_at(&at("start"), s)?,
        None => Dur::ZERO,
    };
    if start >= duration {
        return err(
            at("start"),
            format!("starts at {start}, not before the end of the run ({duration})"),
        );
    }
    let mss = rf.mss.unwrap_or(DEFAULT_MSS as i64);
    if !(88..=65_000).contains(&mss) {
        return err(at("mss"), format!("{mss} is outside 88..65000 bytes"));
    }
    let mss = mss as u32;
    let size = match &rf.size {
        None => None,
        Some(s) => match units::parse_size(&s.0).or_else(|m| err(at("size"), m))? {
            SizeSpec::Bytes(0) => return err(at("size"), "must be greater than zero"),
            SizeSpec::Bytes(b) => Some(b),
            SizeSpec::Packets(p) if p >= 1.0 => Some((p * mss as f64).round() as u64),
            _ => {
                return err(
                    at("size"),
                    format!("{:?}: give a size in bytes (e.g. \"1MB\") or packets", s.0),
                )
            }
        },
    };
    let rwnd = match &rf.rwnd {
        None => None,
        Some(s) => match units::parse_size(&s.0).or_else(|m| err(at("rwnd"), m))? {
            SizeSpec::Bytes(b) if b >= mss as u64 => Some(b),
            SizeSpec::Packets(p) if p >= 1.0 => Some((p * mss as f64).round() as u64),
            SizeSpec::Bdp(_) => return err(
                at("rwnd"),
                "a receive window is given in bytes or packets (BDP multiples apply to the buffer)",
            ),
            _ => {
                return err(
                    at("rwnd"),
                    format!("{:?} is smaller than one segment ({mss} bytes)", s.0),
                )
            }
        },
    };
    let mut chunks = Vec::new();
    if let Some(cs) = &rf.chunks {
        if rf.size.is_some() {
            return err(
                at("size"),
                "give either size or chunks (a flow's size is the sum of its chunks)",
            );
        }
        if cs.is_empty() {
            return err(
                at("chunks"),
                "an empty list: give at least one [offset, bytes] pair",
            );
        }
        let mut last = Dur::ZERO;
        for (k, (off, bytes)) in cs.iter().enumerate() {
            let off = duration_at(&format!("flows[{g}].chunks[{k}][0]"), off)?;
            if off < last {
                return err(
                    format!("flows[{g}].chunks[{k}][0]"),
                    "chunk offsets must not decrease",
                );
            }
            last = off;
            let b = match units::parse_size(&bytes.0)
                .or_else(|m| err(format!("flows[{g}].chunks[{k}][1]"), m))?
            {
                SizeSpec::Bytes(b) if b > 0 => b,
                _ => {
                    return err(
                        format!("flows[{g}].chunks[{k}][1]"),
                        "a chunk is a positive number of bytes, e.g. \"20KB\"",
                    )
                }
            };
            chunks.push((off, Bytes(b)));
        }
        if start + last >= duration {
            return err(
                at("chunks"),
                "the last chunk is written after the end of the run",
            );
        }
    }
    let size = if chunks.is_empty() {
        size
    } else {
        Some(chunks.iter().map(|c| c.1 .0).sum())
    };
    let repeat = match &rf.repeat {
        None => None,
        Some(r) => {
            if rf.size.is_none() {
                return err(
                    at("repeat"),
                    "successive flows need a size (e.g. size = \"1MB\")",
                );
            }
            let gap = match &r.gap {
                Some(gap) => duration_at(&at("repeat.gap"), gap)?,
                None => Dur::ZERO,
            };
            // Until the end: each flow lasts at least one RTT plus the gap.
            let bound = (duration - start).0 / gap.0.max(rtt.0).max(1) + 1;
            let n = match r.count {
                Some(c) if c < 1 => return err(at("repeat.count"), format!("{c}: at least 1")),
                Some(c) => c as u64,
                None => bound,
            };
            Some((gap, n))
        }
    };
    let pacing = parse_pacing(&at("pacing"), rf.pacing.as_ref())?;
    let init_cwnd = rf.init_cwnd.unwrap_or(DEFAULT_INIT_CWND as i64);
    if !(1..=10_000).contains(&init_cwnd) {
        return err(
            at("init_cwnd"),
            format!("{init_cwnd} is outside 1..10000 packets"),
        );
    }
    let pick = |own: &Option<LossConfig>,
                dflt: &Option<LossConfig>,
                field: &str|
     -> Result<LossConfig, ScenarioError> {
        let (l, p) = match (own, dflt) {
            (Some(l), _) => (l.clone(), at(field)),
            (None, Some(l)) => (l.clone(), format!("path.{field}")),
            (None, None) => return Ok(LossConfig::None),
        };
        l.validate().map_err(|m| ScenarioError {
            path: p,
            message: m,
        })?;
        Ok(l)
    };
    let loss = pick(&rf.loss, &path.loss, "loss")?;
    let ack_loss = pick(&rf.ack_loss, &path.ack_loss, "ack_loss")?;
    let pick_jitter = |own: &Option<JitterConfig>, dflt: &Option<JitterConfig>, field: &str| {
        let (j, p) = match (own, dflt) {
            (Some(j), _) => (j.clone(), at(field)),
            (None, Some(j)) => (j.clone(), format!("path.{field}")),
            (None, None) => return Ok(None),
        };
        j.validate().map_err(|m| ScenarioError {
            path: p,
            message: m,
        })?;
        Ok(Some(j))
    };
    let jitter = pick_jitter(&rf.jitter, &path.jitter, "jitter")?;
    let ack_jitter = pick_jitter(&rf.ack_jitter, &path.ack_jitter, "ack_jitter")?;
    let stop = match &rf.stop {
        None => None,
        Some(_) if size.is_some() || !chunks.is_empty() => {
            return err(
                at("stop"),
                "only a bulk flow stops at a time (this one has a size or chunks)",
            )
        }
        Some(t) => {
            let t = duration_at(&at("stop"), t)?;
            if t <= start {
                return err(
                    at("stop"),
                    format!("stops at {t}, not after its start ({start})"),
                );
            }
            Some(Time(t.0))
        }
    };
    let mut rtt_schedule = Vec::new();
    for (k, (t, r)) in rf.rtt_schedule.iter().flatten().enumerate() {
        let t = duration_at(&format!("flows[{g}].rtt_schedule[{k}][0]"), t)?;
        let r = positive_duration_at(&format!("flows[{g}].rtt_schedule[{k}][1]"), r)?;
        if rtt_schedule
            .last()
            .is_some_and(|&(prev, _)| Time(t.0) < prev)
        {
            return err(
                format!("flows[{g}].rtt_schedule[{k}][0]"),
                "times must not decrease",
            );
        }
        rtt_schedule.push((Time(t.0), r));
    }
    let host = match rf.host {
        Some(h) if !(0..=65_535).contains(&h) => {
            return err(at("host"), format!("{h} is outside 0..65535"))
        }
        h => h,
    };
    let fwd = rtt.mul_f64(split);
    let (gap, chain) = repeat.unwrap_or((Dur::ZERO, 1));
    // Checked: count x repeat.count may overflow u64 (issue 10: it wrapped
    // to 0 and validation then tried to allocate gigabytes).
    let total = (count as u64)
        .checked_mul(chain)
        .and_then(|n| n.checked_add(out.len() as u64));
    if total.is_none_or(|n| n > MAX_FLOWS as u64) {
        let field = if rf.repeat.as_ref().is_some_and(|r| r.count.is_some()) && chain > 1 {
            "repeat.count"
        } else {
            "count"
        };
        return err(
            at(field),
            format!("{count} x {chain} flows: the scenario would have more than {MAX_FLOWS} flows"),
        );
    }
    for _ in 0..count {
        for k in 0..chain {
            let id = out.len() as u32;
            let after = (k > 0).then(|| After { flow: id - 1, gap });
            out.push(FlowSpec {
                id,
                group: g as u32,
                label: rf.label.clone().unwrap_or_else(|| {
                    format!("{}-{}", cfg.name(), units::format_duration(base_rtt))
                }),
                cc: cfg.clone(),
                rtt: base_rtt,
                fwd_delay: fwd,
                rev_delay: rtt - fwd,
                access_rate,
                start: Time(start.0),
                size: size.map(Bytes),
                pacing: pacing.clone(),
                rwnd: rwnd.map(Bytes),
                // ECN on by default only where the algorithm needs it (Linux
                // `tcp_ca_needs_ecn`: DCTCP, Prague).
                ecn: rf.ecn.unwrap_or(cfg.needs_ecn()),
                mss,
                init_cwnd: init_cwnd as u32,
                host: host.map_or(id, |h| h as u32),
                after,
                chunks: chunks.clone(),
                loss: loss.clone(),
                ack_loss: ack_loss.clone(),
                jitter: jitter.clone(),
                ack_jitter: ack_jitter.clone(),
                rtt_schedule: rtt_schedule.clone(),
                rtt_split: split,
                stop,
                route: route.clone(),
                reverse_route: reverse_route.clone(),
            });
        }
    }
    Ok(())
}

fn pacing_mode(path: &str, s: &str) -> Result<PacingMode, ScenarioError> {
    match s {
        "fq" => Ok(PacingMode::Fq),
        "internal" => Ok(PacingMode::Internal),
        "none" => Ok(PacingMode::None),
        _ => err(
            path,
            format!("unknown pacing {s:?}; expected \"fq\", \"internal\" or \"none\""),
        ),
    }
}

fn parse_pacing(path: &str, v: Option<&serde_json::Value>) -> Result<Pacing, ScenarioError> {
    use serde_json::Value;
    let mut p = Pacing {
        mode: PacingMode::Fq,
        max_rate: None,
    };
    match v {
        None => {}
        Some(Value::String(s)) => p.mode = pacing_mode(path, s)?,
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let sub = format!("{path}.{k}");
                match (k.as_str(), v) {
                    ("mode", Value::String(s)) => p.mode = pacing_mode(&sub, s)?,
                    ("max_rate", Value::String(s)) => {
                        p.max_rate = Some(positive_rate_at(&sub, &UnitStr(s.clone()))?);
                    }
                    ("mode" | "max_rate", other) => {
                        return err(sub, format!("expected a quoted string, got {other}"));
                    }
                    _ => return err(sub, "unknown field; expected mode or max_rate"),
                }
            }
        }
        Some(other) => {
            return err(path, format!("expected \"fq\", \"internal\", \"none\" or a table {{ mode, max_rate }}, got {other}"))
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
