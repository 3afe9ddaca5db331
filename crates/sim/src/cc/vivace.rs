//! PCC Vivace (Dong et al., "PCC Vivace: Online-Learning Congestion
//! Control", NSDI 2018): a rate-based sender that runs monitor intervals
//! (MIs) of about one RTT, scores each with the utility
//!
//!   u = x^t - b x dRTT/dT - c x L
//!
//! (x the MI's sending rate in Mbit/s, dRTT/dT the least-squares slope of
//! its RTT samples over their send times, L its loss rate; the paper's
//! t = 0.9, b = 900, c = 11.35), and climbs the utility's gradient. The
//! control loop follows the authors' code for the paper (PCC-Uspace,
//! branch NSDI-2018, `pcc-gradient/sender/app/pcc.h`, class `PCC`):
//! slow start doubling the rate per tracked MI until the utility falls;
//! probing in randomly ordered pairs of MIs at r(1 +- eps), eps =
//! max(5%, 0.5 Mbit/s); a step of theta0 x gradient scaled by the
//! confidence amplifier m(A) and clipped by the dynamic change boundary
//! omega = 0.05 + 0.06 K (`PCC::decide`); moving on in one direction while
//! increases stay above 10% of the rate (`onMonitorEnds`). Carried into
//! TCP as the authors' kernel module does (PCC-Kernel `tcp_pcc.c`): paced
//! at the MI's rate, cwnd = max(4, 2 x rate x srtt), MIs counted in new
//! segments and judged from the ACK stream. See docs/algorithms.md for
//! what differs from the UDT code and why.

use super::{
    AckOutcome, CaState, CcInit, CcParams, CcState, CongestionControl, Conn, LostPacket, RateSample,
};
use crate::rng::Rng;
use crate::units::{Dur, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Bits per Mbit (the paper's rates are Mbit/s).
const MBIT: f64 = 1e6;
/// An MI holds at least 10 segments (`CUDT::start_monitor`: 10 to 3000 packets).
const MI_MIN_SEGS: u32 = 10;
/// The centre rate's floor when probing starts (`kMinRateMbps` = 1.3).
const MIN_RATE_MBPS: f64 = 1.3;
/// The lowest rate sent at: 1.3 less its probing step (`setRate`).
const MIN_SEND_MBPS: f64 = MIN_RATE_MBPS - PROBE_MIN_MBPS;
/// Probing step: max(5%, 0.5 Mbit/s) of the centre rate (`getkDelta`).
const PROBE_EPS: f64 = 0.05;
const PROBE_MIN_MBPS: f64 = 0.5;
/// theta0: utility gradient to rate change (`main`: factor 1.0).
const THETA0: f64 = 1.0;
/// The change boundary omega = 0.05 + 0.06 K (`initial_boundary`, `boundary_increment`).
const OMEGA0: f64 = 0.05;
const OMEGA_STEP: f64 = 0.06;
/// Smallest rate change, Mbit/s (`PCC::decide`).
const MIN_CHANGE_MBPS: f64 = 0.5;
/// A move continues only while the step exceeds 10% of the rate (`onMonitorEnds`).
const MOVING_THRESHOLD: f64 = 0.1;
/// The swing buffer delays amplification for at most 2 decisions after a turn.
const MAX_SWING: u32 = 2;
/// Probe MIs' loss pooled when at most 1% (`onMonitorEnds`).
const POOL_LOSS: f64 = 0.01;
/// An MI losing over half its segments halves the rate (`onMonitorEnds`).
const EMERGENCY_LOSS: f64 = 0.5;
/// START forgives an MI up to 50 lost packets and RTT gradients under 0.2
/// (`onMonitorEnds`, `loss_ignore_count`; see `judge`).
const START_LOSS_ALLOWANCE: u32 = 50;
const START_GRADIENT_FLOOR: f64 = 0.2;
/// Segments SACKed past a hole before it is marked lost (RFC 6675).
const DUPTHRESH: i32 = 3;
/// The RTT gradient is truncated to multiples of 0.02 (`PCC::utility`).
const GRADIENT_QUANTUM: f64 = 0.02;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VivaceConfig {
    /// t: the throughput exponent (0 < t < 1).
    pub exponent: f64,
    /// b: the RTT-gradient coefficient; 0 gives Vivace-Loss.
    pub latency_coefficient: f64,
    /// c: the loss coefficient.
    pub loss_coefficient: f64,
}

impl Default for VivaceConfig {
    fn default() -> Self {
        VivaceConfig {
            exponent: 0.9,
            latency_coefficient: 900.0,
            loss_coefficient: 11.35,
        }
    }
}

impl CcParams for VivaceConfig {
    fn validate(&self) -> Result<(), String> {
        if !(self.exponent > 0.0 && self.exponent < 1.0) {
            return Err(format!(
                "exponent = {}: allowed strictly between 0 and 1",
                self.exponent
            ));
        }
        if !(0.0..=1e6).contains(&self.latency_coefficient) {
            return Err(format!(
                "latency_coefficient = {}: allowed 0 to 1000000",
                self.latency_coefficient
            ));
        }
        if !(self.loss_coefficient > 0.0 && self.loss_coefficient <= 1e6) {
            return Err(format!(
                "loss_coefficient = {}: allowed above 0, at most 1000000",
                self.loss_coefficient
            ));
        }
        Ok(())
    }
}

/// Least-squares sums of (send time, RTT) samples, both in seconds
/// relative to the MI's start.
#[derive(Clone, Copy, Debug, Default)]
struct Regression {
    n: f64,
    t: f64,
    r: f64,
    tt: f64,
    tr: f64,
}

impl Regression {
    fn add(&mut self, t: f64, r: f64) {
        self.n += 1.0;
        self.t += t;
        self.r += r;
        self.tt += t * t;
        self.tr += t * r;
    }
    /// The slope dRTT/dT; 0 with fewer than two distinct send times.
    fn slope(&self) -> f64 {
        let den = self.n * self.tt - self.t * self.t;
        if self.n < 2.0 || den <= 0.0 {
            return 0.0;
        }
        (self.n * self.tr - self.t * self.r) / den
    }
    fn mean_rtt(&self) -> Option<f64> {
        (self.n > 0.0).then(|| self.r / self.n)
    }
}

/// What the state machine uses an MI for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    /// Sent at the centre rate, not judged.
    Plain,
    /// START's MI whose utility decides the next doubling.
    Tracked,
    /// Probe `i` of the current probing round.
    Probe(usize),
    /// Sent at the centre rate after the probes: MOVING's first reference.
    Reference,
    /// MOVING's MI at the target rate.
    Target,
}

/// One monitor interval: new segments [seq_start, seq_end) sent from
/// `start` to `end` at `rate_mbps`, among `segs_out` transmissions
/// (retransmissions included, as the UDT code counts its packets).
#[derive(Clone, Debug)]
struct Mi {
    role: Role,
    /// The state machine's epoch when it started (a restart voids older MIs).
    epoch: u32,
    /// Emergency stops before it started.
    stops: u32,
    segs_out_start: u64,
    segs_out_end: u64,
    rate_mbps: f64,
    start: Time,
    end: Option<Time>,
    seq_start: u32,
    seq_end: u32,
    lost: u32,
    rtt: Regression,
}

/// A judged MI.
#[derive(Clone, Copy, Debug, Default)]
struct Judged {
    rate_mbps: f64,
    utility: f64,
    sent: u32,
    lost: u32,
    /// Throughput and RTT gradient, to recompute with a pooled loss rate.
    x: f64,
    gradient: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Start,
    /// Probes are generated at the next MI start.
    Search,
    Recording,
    Moving,
}

pub struct Vivace {
    cfg: VivaceConfig,
    mss: u32,
    rng: Rng,
    mode: Mode,
    epoch: u32,
    /// The centre rate r_base, Mbit/s (`base_rate_`).
    base_mbps: f64,
    /// The rate packets go at now.
    rate_mbps: f64,
    mis: VecDeque<Mi>,
    /// START: an MI is being tracked; the last tracked utility.
    tracking: bool,
    last_utility: f64,
    /// Probing: the probe rates of this round and their results.
    probes: Vec<f64>,
    probe_results: Vec<Option<Judged>>,
    next_probe: usize,
    /// MOVING: the reference and the target once judged (pending while
    /// an MI of that role and epoch is in `mis`).
    reference: Option<Judged>,
    target: Option<Judged>,
    moving_change: f64,
    /// `PCC::decide`'s counters: confidence amplifier A, boundary K, swing
    /// buffer S, previous change P, same-direction trend T.
    amplifier: f64,
    boundary: u32,
    swing: u32,
    prev_change: f64,
    trend: u32,
    /// START still forgives losses (see `judge`).
    start_forgiving: bool,
    /// Emergency stops so far: only MIs started after the last one count.
    stops: u32,
    /// The mean RTT of the latest judged MI (NSDI's `m_iRTT`), s.
    rtt_est: Option<f64>,
    cwnd: u32,
    last_utility_out: f64,
}

impl Vivace {
    pub fn new(cfg: &VivaceConfig, init: &CcInit) -> Self {
        // Ten segments per handshake RTT (the authors' later sender,
        // `PccSender`'s initial rate; the UDT code starts at 1.6 Mbit/s).
        let rtt = init.srtt.unwrap_or(Dur::from_ms(100)).secs_f64().max(1e-6);
        let start = (init.init_cwnd as f64 * init.mss as f64 * 8.0 / rtt / MBIT).max(0.1);
        let mut v = Vivace {
            cfg: cfg.clone(),
            mss: init.mss,
            rng: Rng::stream(init.seed, "vivace"),
            mode: Mode::Start,
            epoch: 0,
            base_mbps: start,
            rate_mbps: start,
            mis: VecDeque::new(),
            tracking: false,
            last_utility: f64::NEG_INFINITY,
            probes: Vec::new(),
            probe_results: Vec::new(),
            next_probe: 0,
            reference: None,
            target: None,
            moving_change: 0.0,
            amplifier: 0.0,
            boundary: 0,
            swing: 0,
            prev_change: 0.0,
            trend: 0,
            start_forgiving: true,
            stops: 0,
            rtt_est: init.srtt.map(|d| d.secs_f64()),
            cwnd: init.init_cwnd.max(4),
            last_utility_out: 0.0,
        };
        v.set_cwnd(init.srtt);
        v
    }

    /// u = x^t - b x q(dRTT/dT) - c x L (`PCC::utility`, the paper's constants).
    fn utility(&self, x: f64, gradient: f64, loss: f64) -> f64 {
        libm::pow(x, self.cfg.exponent)
            - self.cfg.latency_coefficient * x * quantize(gradient)
            - self.cfg.loss_coefficient * x * loss
    }

    /// cwnd = max(4, 2 x rate x srtt / mss) (PCC-Kernel `pcc_set_cwnd`).
    fn set_cwnd(&mut self, srtt: Option<Dur>) {
        let rtt = srtt.map_or(0.1, |d| d.secs_f64());
        let pkts = 2.0 * self.rate_mbps * MBIT * rtt / (8.0 * self.mss as f64);
        self.cwnd = (pkts.min(u32::MAX as f64 / 2.0) as u32).max(4);
    }

    /// The centre rate, and the rate sent at from now on (even mid-MI, as
    /// `onMonitorEnds` sets it), at least `MIN_SEND_MBPS`.
    fn set_base(&mut self, mbps: f64) {
        self.base_mbps = mbps;
        self.rate_mbps = mbps.max(MIN_SEND_MBPS);
    }

    /// An MI of this role started since the last restart and not yet judged.
    fn pending(&self, role: Role) -> bool {
        self.mis
            .iter()
            .any(|m| m.role == role && m.epoch == self.epoch)
    }

    /// The MI length: one RTT (the latest MI's mean RTT), at least 10 segments.
    fn mi_due(&self, mi: &Mi, now: Time, segs_out: u64) -> bool {
        let rtt = self.rtt_est.unwrap_or(0.1).min(0.3);
        segs_out - mi.segs_out_start >= MI_MIN_SEGS as u64 && now.since(mi.start).secs_f64() >= rtt
    }

    /// `onMonitorStart`: the rate and role of the MI starting now.
    fn start_mi(&mut self, now: Time, conn: &Conn) {
        let mut role = Role::Plain;
        match self.mode {
            Mode::Start => {
                if !self.tracking {
                    if self.last_utility > f64::NEG_INFINITY {
                        self.base_mbps *= 2.0;
                    }
                    self.tracking = true;
                    role = Role::Tracked;
                }
                // START's floor is its own (0.1 Mbit/s, `new`).
                self.rate_mbps = self.base_mbps;
            }
            Mode::Search => {
                self.base_mbps = self.base_mbps.max(MIN_RATE_MBPS);
                // One pair after a same-direction step, else two (`search`).
                let pairs = if self.trend >= 1 { 1 } else { 2 };
                let eps = PROBE_EPS.max(PROBE_MIN_MBPS / self.base_mbps);
                let (up, down) = (self.base_mbps * (1.0 + eps), self.base_mbps * (1.0 - eps));
                self.probes.clear();
                for _ in 0..pairs {
                    if self.rng.below(2) == 1 {
                        self.probes.extend([up, down]);
                    } else {
                        self.probes.extend([down, up]);
                    }
                }
                self.probe_results = vec![None; self.probes.len()];
                self.next_probe = 0;
                self.reference = None;
                self.mode = Mode::Recording;
                return self.start_mi(now, conn);
            }
            Mode::Recording => {
                if self.next_probe < self.probes.len() {
                    role = Role::Probe(self.next_probe);
                    self.rate_mbps = self.probes[self.next_probe];
                    self.next_probe += 1;
                } else {
                    // The latest MI at the centre rate is the reference.
                    role = Role::Reference;
                    self.rate_mbps = self.base_mbps;
                }
            }
            Mode::Moving => {
                self.rate_mbps = self.base_mbps;
                if self.target.is_none() && !self.pending(Role::Target) {
                    role = Role::Target;
                }
            }
        }
        // A newer reference replaces older ones.
        if role == Role::Reference {
            for m in self.mis.iter_mut() {
                if m.role == Role::Reference {
                    m.role = Role::Plain;
                }
            }
        }
        self.mis.push_back(Mi {
            role,
            epoch: self.epoch,
            stops: self.stops,
            segs_out_start: conn.data_segs_out,
            segs_out_end: conn.data_segs_out,
            rate_mbps: self.rate_mbps,
            start: now,
            end: None,
            seq_start: conn.snd_nxt,
            seq_end: conn.snd_nxt,
            lost: 0,
            rtt: Regression::default(),
        });
    }

    fn judge(&mut self, mi: &Mi) -> Judged {
        // x: the rate the MI achieved sending (`PCC::utility`), every
        // transmission counted; L: its new segments' first losses.
        let sent = mi.seq_end.wrapping_sub(mi.seq_start);
        let secs = mi
            .end
            .map_or(0.0, |e| e.since(mi.start).secs_f64())
            .max(1e-9);
        let x = (mi.segs_out_end - mi.segs_out_start) as f64 * self.mss as f64 * 8.0 / secs / MBIT;
        let mut lost = mi.lost.min(sent);
        let mut gradient = mi.rtt.slope();
        // START's forgiveness, as the authors' code for the paper runs it:
        // an MI with at most 50 losses counts as lossless and a gradient
        // under 0.2 as flat, so random loss and RTT noise do not end START
        // at a few packets per RTT. (The code meant 50 packets over all of
        // START, but never decrements the allowance on this branch; the
        // paper's results come from the code.) An MI losing more is
        // judged on its losses less 50, and ends the forgiveness.
        if mi.role == Role::Tracked && self.start_forgiving {
            if lost > START_LOSS_ALLOWANCE {
                self.start_forgiving = false;
            }
            lost = lost.saturating_sub(START_LOSS_ALLOWANCE);
            if gradient.abs() < START_GRADIENT_FLOOR {
                gradient = 0.0;
            }
        }
        let loss = if sent > 0 {
            lost as f64 / sent as f64
        } else {
            0.0
        };
        Judged {
            rate_mbps: mi.rate_mbps,
            utility: self.utility(x, gradient, loss),
            sent,
            lost,
            x,
            gradient,
        }
    }

    /// `onMonitorEnds` for one MI whose segments are all acknowledged.
    fn on_mi_judged(&mut self, mi: &Mi, j: Judged) {
        self.last_utility_out = j.utility;
        if let Some(r) = mi.rtt.mean_rtt() {
            self.rtt_est = Some(r);
        }
        // Emergency stop: over half of an MI lost halves the rate, once
        // per MI started after the last stop.
        if j.sent > 0 && j.lost as f64 > EMERGENCY_LOSS * j.sent as f64 && mi.stops == self.stops {
            self.set_base((self.base_mbps / 2.0).max(MIN_RATE_MBPS));
            self.stops += 1;
            self.restart_search();
            return;
        }
        if mi.epoch != self.epoch {
            return;
        }
        match (self.mode, mi.role) {
            (Mode::Start, Role::Tracked) => {
                self.tracking = false;
                if j.utility < self.last_utility {
                    self.set_base(self.base_mbps / 2.0);
                    self.restart_search();
                }
                self.last_utility = j.utility;
            }
            (Mode::Recording, Role::Probe(i)) => {
                self.probe_results[i] = Some(j);
                if self.probe_results.iter().all(Option::is_some) {
                    self.decide_probes();
                }
            }
            (Mode::Recording, Role::Reference) => self.reference = Some(j),
            (Mode::Moving, Role::Reference) => {
                self.reference = Some(j);
                self.moving_step();
            }
            (Mode::Moving, Role::Target) => {
                self.target = Some(j);
                self.moving_step();
            }
            _ => {}
        }
    }

    /// Back to probing at the current centre rate; pending MIs no longer
    /// count (a new epoch).
    fn restart_search(&mut self) {
        self.mode = Mode::Search;
        self.epoch += 1;
        self.tracking = false;
    }

    /// All probes judged: vote, then step or move (`onMonitorEnds`, RECORDING).
    fn decide_probes(&mut self) {
        let mut res: Vec<Judged> = self.probe_results.iter().map(|r| r.unwrap()).collect();
        // Pool the probes' loss when it is small: random loss then does not
        // decide the comparison.
        let (sent, lost) = res.iter().fold((0u64, 0u64), |a, r| {
            (a.0 + r.sent as u64, a.1 + r.lost as u64)
        });
        if sent > 0 && (lost as f64) <= POOL_LOSS * sent as f64 {
            let pooled = lost as f64 / sent as f64;
            for r in res.iter_mut() {
                r.utility = self.utility(r.x, r.gradient, pooled);
            }
        }
        let mut votes = 0i32;
        let (mut u_up, mut u_down, mut n) = (0.0, 0.0, 0.0);
        for pair in res.chunks(2) {
            let (a, b) = (pair[0], pair[1]);
            let (up, down) = if a.rate_mbps > b.rate_mbps {
                (a, b)
            } else {
                (b, a)
            };
            if up.utility > down.utility {
                votes += 1;
            } else if up.utility < down.utility {
                votes -= 1;
            }
            u_up += up.utility;
            u_down += down.utility;
            n += 1.0;
        }
        if votes == 0 {
            // Inconclusive: probe again, one pair.
            self.trend = 2;
            self.prev_change = 0.0;
            self.restart_search();
            return;
        }
        // Every pair probes the same two rates.
        let (r_down, r_up) = (
            self.probes[0].min(self.probes[1]),
            self.probes[0].max(self.probes[1]),
        );
        let change = self.decide(u_down / n, u_up / n, r_down, r_up);
        if change / self.base_mbps <= MOVING_THRESHOLD {
            self.set_base(self.base_mbps + change);
            self.restart_search();
        } else {
            // Move: the reference is the latest MI at the centre rate.
            let reference_rate = self.base_mbps;
            self.set_base(self.base_mbps + change);
            self.moving_change = change;
            self.mode = Mode::Moving;
            self.target = None;
            if self.reference.is_none() && !self.pending(Role::Reference) {
                // No MI at the centre rate yet: the winning probes stand in.
                self.reference = Some(Judged {
                    rate_mbps: reference_rate,
                    utility: (u_up + u_down) / (2.0 * n),
                    ..Judged::default()
                });
            }
        }
    }

    /// MOVING: once the reference and the target are judged (`onMonitorEnds`).
    fn moving_step(&mut self) {
        if self.pending(Role::Reference) {
            return;
        }
        let (Some(r), Some(t)) = (self.reference, self.target) else {
            return;
        };
        if (t.rate_mbps - r.rate_mbps).abs() < 1e-12 {
            self.restart_search();
            return;
        }
        let change = self.decide(r.utility, t.utility, r.rate_mbps, t.rate_mbps);
        if change * self.moving_change <= 0.0 {
            // The utility turned: step back and probe.
            self.set_base((self.base_mbps + change).max(MIN_RATE_MBPS));
            self.restart_search();
        } else if change / self.base_mbps <= MOVING_THRESHOLD {
            self.set_base(self.base_mbps + change);
            self.trend = 2;
            self.restart_search();
        } else {
            // Keep moving: the target becomes the reference.
            self.reference = Some(t);
            self.target = None;
            self.set_base(self.base_mbps + change);
            self.moving_change = change;
        }
    }

    /// `PCC::decide`: the step from two (utility, rate) points, amplified by
    /// the confidence amplifier, clipped by the change boundary, at least
    /// 0.5 Mbit/s.
    fn decide(&mut self, u1: f64, u2: f64, r1: f64, r2: f64) -> f64 {
        let gradient = (u2 - u1) / (r2 - r1);
        let mut change = THETA0 * gradient;
        let turned = change * self.prev_change < 0.0;
        if turned {
            self.amplifier = 0.0;
            self.boundary = 0;
            self.swing = (self.swing + 1).min(MAX_SWING);
        }
        change *= confidence_amplifier(self.amplifier);
        if turned {
            self.trend = 0;
        } else if change * self.prev_change > 0.0 {
            self.trend += 1;
            if self.swing == 0 {
                self.amplifier += if self.amplifier > 3.0 { 0.5 } else { 1.0 };
            } else {
                self.swing -= 1;
            }
        }
        let omega = OMEGA0 + OMEGA_STEP * self.boundary as f64;
        if change.abs() / self.base_mbps > omega {
            change = change.signum() * omega * self.base_mbps;
            self.boundary += 1;
        } else if self.boundary >= 1 {
            self.boundary -= 1;
        }
        if turned {
            self.amplifier = 0.0;
            self.boundary = 0;
        }
        if change != 0.0 && change.abs() < MIN_CHANGE_MBPS {
            change = change.signum() * MIN_CHANGE_MBPS;
        }
        self.prev_change = change;
        change
    }
}

/// m(A), continuous and piecewise linear (`PCC::decide`): 1, 2, 3, 4 for
/// A = 0..3, then slopes 2, 4 and 8.
fn confidence_amplifier(a: f64) -> f64 {
    if a < 3.0 {
        a + 1.0
    } else if a < 6.0 {
        2.0 * a - 2.0
    } else if a < 9.0 {
        4.0 * a - 14.0
    } else {
        8.0 * a - 50.0
    }
}

/// The RTT gradient truncated toward zero to a multiple of 0.02 (`PCC::utility`).
fn quantize(g: f64) -> f64 {
    (g / GRADIENT_QUANTUM).trunc() * GRADIENT_QUANTUM
}

impl CongestionControl for Vivace {
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        if self.mis.is_empty() {
            self.start_mi(now, conn);
        }
        // The RTT sample goes to the MI its packet was sent in.
        if rs.rtt_us >= 0 {
            let sent_at = Time(now.0.saturating_sub(rs.rtt_us as u64 * 1000));
            let rtt = rs.rtt_us as f64 * 1e-6;
            if let Some(mi) = self.mis.iter_mut().rev().find(|m| sent_at >= m.start) {
                let t = sent_at.since(mi.start).secs_f64();
                mi.rtt.add(t, rtt);
            }
        }
        // Judge an MI once each of its segments is delivered or known lost:
        // all cumulatively acknowledged, or DupThresh segments past its end
        // SACKed (then RACK has marked its holes lost: `tcp_rack_reo_wnd`
        // is zero with that many SACKed). The UDT code judges an MI when a
        // later MI's packet is acknowledged, its missing packets lost.
        while let Some(mi) = self.mis.front() {
            let done = mi.end.is_some()
                && ((conn.snd_una.wrapping_sub(mi.seq_end) as i32) >= 0
                    || (conn.highest_sack.wrapping_sub(mi.seq_end) as i32) >= DUPTHRESH);
            if !done {
                break;
            }
            let mi = self.mis.pop_front().unwrap();
            let j = self.judge(&mi);
            self.on_mi_judged(&mi, j);
        }
        // End the sending MI when due and start the next.
        let due = self
            .mis
            .back()
            .is_some_and(|m| self.mi_due(m, now, conn.data_segs_out));
        if due {
            let mi = self.mis.back_mut().unwrap();
            mi.end = Some(now);
            mi.seq_end = conn.snd_nxt;
            mi.segs_out_end = conn.data_segs_out;
            self.start_mi(now, conn);
        }
        self.set_cwnd(conn.srtt);
        AckOutcome::default()
    }

    fn on_packet_lost(&mut self, _now: Time, lost: &LostPacket, _conn: &Conn) {
        // A retransmission lost again was sent in a later MI, which counts
        // only its new segments: left out.
        if lost.retrans {
            return;
        }
        // The loss counts against the MI that first sent the segment (the
        // newest MI starting at or before it).
        if let Some(mi) = self
            .mis
            .iter_mut()
            .rev()
            .find(|m| lost.seq.wrapping_sub(m.seq_start) as i32 >= 0)
        {
            mi.lost += 1;
        }
    }

    fn on_state_change(&mut self, _now: Time, _from: CaState, to: CaState, conn: &Conn) {
        // A retransmission timeout: the MIs' statistics cannot be trusted
        // (PCC-Kernel's PCC_LOSS); halve the rate and probe again (the UDT
        // code's `onTimeout`).
        if to == CaState::Loss && self.mode != Mode::Search {
            self.set_base((self.base_mbps / 2.0).max(MIN_RATE_MBPS));
            self.mis.clear();
            self.restart_search();
            self.set_cwnd(conn.srtt);
        }
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }

    fn ssthresh(&self) -> u32 {
        u32::MAX
    }

    fn pacing_rate(&self) -> Rate {
        Rate((self.rate_mbps * MBIT) as u64)
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    fn phase(&self) -> &'static str {
        match self.mode {
            Mode::Start => "STARTING",
            Mode::Search | Mode::Recording => "PROBING",
            Mode::Moving => "MOVING",
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("vivace_rate_mbps", self.rate_mbps);
        out.num("vivace_base_rate_mbps", self.base_mbps);
        out.num("vivace_utility", self.last_utility_out);
        out.num("vivace_amplifier", self.amplifier);
        out.num("vivace_boundary", self.boundary as f64);
    }
}

/// The registry's entry for `cc = "vivace"` (`cc::Algorithm`).
impl crate::cc::Algorithm for VivaceConfig {
    const NAME: &'static str = "vivace";
    const REFERENCE: &'static str = "PCC Vivace: Dong et al., NSDI 2018; the authors' PCC-Uspace NSDI-2018 branch (pcc.h) and PCC-Kernel tcp_pcc.c (no mainline module)";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Vivace(Vivace::new(self, init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::init;

    fn vivace(base: f64) -> Vivace {
        let mut v = Vivace::new(
            &VivaceConfig::default(),
            &init(Time::ZERO, Some(Dur::from_ms(20))),
        );
        v.base_mbps = base;
        v
    }

    #[test]
    fn the_confidence_amplifier_is_continuous_and_steepens() {
        let m: Vec<f64> = [0.0, 1.0, 2.0, 3.0, 6.0, 9.0]
            .iter()
            .map(|&a| confidence_amplifier(a))
            .collect();
        assert_eq!(m, [1.0, 2.0, 3.0, 4.0, 10.0, 22.0]);
        for edge in [3.0, 6.0, 9.0] {
            let (below, at) = (
                confidence_amplifier(edge - 1e-9),
                confidence_amplifier(edge),
            );
            assert!((below - at).abs() < 1e-6, "jump at {edge}: {below} {at}");
        }
    }

    #[test]
    fn the_rtt_gradient_is_truncated_to_multiples_of_two_hundredths() {
        assert!(quantize(0.019).abs() < 1e-12);
        assert!((quantize(0.037) - 0.02).abs() < 1e-12);
        assert!((quantize(-0.05) + 0.04).abs() < 1e-12);
    }

    #[test]
    fn the_regression_recovers_a_linear_rtt_rise() {
        let mut r = Regression::default();
        for i in 0..20 {
            let t = i as f64 * 0.001;
            r.add(t, 0.020 + 0.05 * t);
        }
        assert!((r.slope() - 0.05).abs() < 1e-9, "{}", r.slope());
        let mut one = Regression::default();
        one.add(0.0, 0.02);
        assert_eq!(one.slope(), 0.0);
    }

    /// The step is theta0 x gradient, clipped to omega x rate with omega
    /// growing by 0.06 per clipped step, at least 0.5 Mbit/s; a turn resets
    /// the amplifier and the boundary.
    #[test]
    fn decide_clips_to_the_growing_boundary_and_resets_on_a_turn() {
        let mut v = vivace(100.0);
        // Utility +10 over 10 Mbit/s: gradient 1, step 1 Mbit/s (under 5%).
        assert!((v.decide(0.0, 10.0, 95.0, 105.0) - 1.0).abs() < 1e-12);
        assert_eq!((v.amplifier, v.boundary), (0.0, 0));
        // The same direction again: m(0) = 1 still applies, then A = 1.
        let step = v.decide(0.0, 1000.0, 95.0, 105.0);
        assert!((step - 5.0).abs() < 1e-9, "clipped to 5% of 100: {step}");
        assert_eq!((v.amplifier, v.boundary), (1.0, 1));
        // Next clip is at 0.05 + 0.06 = 11%, with m(1) = 2.
        let step = v.decide(0.0, 1000.0, 95.0, 105.0);
        assert!((step - 11.0).abs() < 1e-9, "{step}");
        assert_eq!(v.boundary, 2);
        // A turn: A and K back to 0, the swing buffer holds the next rise.
        let step = v.decide(10.0, 0.0, 95.0, 105.0);
        assert!((step + 1.0).abs() < 1e-12, "{step}");
        assert_eq!((v.amplifier, v.boundary, v.swing), (0.0, 0, 1));
        // A tiny gradient still moves 0.5 Mbit/s.
        let step = v.decide(0.0, -0.01, 95.0, 105.0);
        assert!((step + MIN_CHANGE_MBPS).abs() < 1e-12, "{step}");
    }

    /// Probing runs pairs at r(1 +- 5%) (at least 0.5 Mbit/s apart from r),
    /// each pair one up and one down in random order; two pairs, one after
    /// a step that kept the direction.
    #[test]
    fn probes_come_in_up_down_pairs() {
        let mut v = vivace(40.0);
        v.mode = Mode::Search;
        let k = crate::cc::classic::testkit::conn(10);
        v.start_mi(Time::ZERO, &k);
        assert_eq!(v.probes.len(), 4);
        for pair in v.probes.chunks(2) {
            let (lo, hi) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
            assert!(
                (lo - 38.0).abs() < 1e-9 && (hi - 42.0).abs() < 1e-9,
                "{pair:?}"
            );
        }
        v.trend = 1;
        v.mode = Mode::Search;
        v.base_mbps = 4.0;
        v.start_mi(Time::ZERO, &k);
        assert_eq!(v.probes.len(), 2);
        let (lo, hi) = (v.probes[0].min(v.probes[1]), v.probes[0].max(v.probes[1]));
        assert!(
            (lo - 3.5).abs() < 1e-9 && (hi - 4.5).abs() < 1e-9,
            "{:?}",
            v.probes
        );
    }

    /// u = x^0.9 - 900 x g - 11.35 x L: at 100 Mbit/s random loss lowers
    /// the utility's slope to zero near L = 0.9 / (11.35 x 100^0.1) = 5%.
    #[test]
    fn the_utility_turns_down_in_the_rate_near_five_percent_loss_at_100_mbps() {
        let v = vivace(100.0);
        let slope = |loss: f64| (v.utility(101.0, 0.0, loss) - v.utility(99.0, 0.0, loss)) / 2.0;
        assert!(slope(0.045) > 0.0 && slope(0.055) < 0.0);
        // A queue growing at 5% of the time costs 900 x 0.04 per Mbit/s.
        let u = v.utility(10.0, 0.05, 0.0);
        assert!((u - (libm::pow(10.0, 0.9) - 900.0 * 10.0 * 0.04)).abs() < 1e-9);
    }
}
