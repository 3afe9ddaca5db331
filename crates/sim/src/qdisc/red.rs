//! RED as Linux net/sched/sch_red.c with include/net/red.h, configured the
//! way iproute2's `tc qdisc add ... red` computes the kernel parameters
//! (tc/q_red.c, tc/tc_red.c).
//!
//! On every enqueue the average backlog is updated as an EWMA with weight
//! 2^-Wlog of the child queue's byte backlog (decayed through the Stab
//! table after an idle period); below `min` nothing happens, at or above
//! `max` every packet is hit (no "gentle" region), and in between a packet
//! is hit when max_P * (avg - min)/(max - min) >= R/count, R uniform and
//! redrawn after each hit, count the packets since the last hit (Floyd and
//! Jacobson's uniformisation, red.h `red_action`). Hit means CE-mark with
//! `ecn` (ECT packets) or drop. The child is a tail-drop FIFO of
//! `bottleneck.buffer` (bytes as bfifo; a buffer in packets stays a packet
//! limit). Adaptive RED adjusts max_P every 500 ms, driven from the
//! enqueue/dequeue calls (no timers): every period boundary passed since
//! the last call is processed first, at its own time.
//!
//! Parameters as tc derives them: `burst` defaults to (2 min + max)/(3 avpkt)
//! packets and sets Wlog (`tc_red_eval_ewma`); `probability` becomes
//! max_P = probability * 2^32 (TCA_RED_MAX_P) and Plog
//! (`tc_red_eval_P`); `bandwidth` (default: the bottleneck rate, where tc
//! falls back to 10 Mbit) and `avpkt` set the idle-decay table
//! (`tc_red_eval_idle_damping`). tc measures the packet time in psched
//! ticks of 64 ns (15.625 per microsecond on current kernels) while the
//! kernel indexes the table with idle microseconds; we reproduce tc's
//! table, so the decay is as fast as on Linux.

use super::fifo::Fifo;
use super::{
    check_range, param_bytes, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscEnv, QdiscParams,
};
use crate::packet::Packet;
use crate::units::{parse_rate, Bytes, Dur, FractionSpec, Time};
use serde::{Deserialize, Serialize};

/// red.h `RED_ONE_PERCENT`: 1% of 2^32, rounded.
const RED_ONE_PERCENT: u32 = (((1u64 << 32) + 50) / 100) as u32;
const MAX_P_MIN: u32 = RED_ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;
/// sch_red.c: the adaptive timer fires every HZ/2.
const ADAPT_PERIOD: Dur = Dur::from_ms(500);
/// tc_core.c `tick_in_usec` with the kernel's /proc/net/psched (1000/64).
const TICKS_PER_US: f64 = 15.625;

/// `[bottleneck.red]`: tc-red's options; sizes in bytes or packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedConfig {
    /// Average backlog where early marking starts (tc `min`); absent: max/3.
    pub min: Option<String>,
    /// Average backlog from which every packet is hit (tc `max`); absent:
    /// 3 min, or a quarter of the buffer when min is absent too.
    pub max: Option<String>,
    /// max_P, the hit probability reached at `max` (tc `probability`,
    /// default 0.02). Give this or `plog`, not both.
    pub probability: Option<FractionSpec>,
    /// Alternative to `probability`: max_P = (max - min) / 2^plog, as the
    /// kernel derives it when no explicit probability is passed.
    pub plog: Option<u8>,
    /// Burst (packets) the average should absorb; sets Wlog (tc `burst`).
    pub burst: Option<u32>,
    /// Average packet size for the burst and idle computations (tc `avpkt`).
    pub avpkt: String,
    /// Rate for the idle-decay table (tc `bandwidth`); absent: the bottleneck rate.
    pub bandwidth: Option<String>,
    /// Adaptive RED: move max_P every 500 ms to keep the average mid-band.
    pub adaptive: bool,
    /// Drop (never mark) at or above `max` even with ECN.
    pub harddrop: bool,
    /// CE-mark ECT packets instead of dropping; absent: `bottleneck.ecn`.
    pub ecn: Option<bool>,
    /// With ECN, enqueue Not-ECT packets that would have been dropped.
    pub nodrop: bool,
}

impl Default for RedConfig {
    /// tc/q_red.c defaults (avpkt is required there; tc-red(8) calls 1000 a good value).
    fn default() -> Self {
        RedConfig {
            min: None,
            max: None,
            probability: None,
            plog: None,
            burst: None,
            avpkt: "1000B".into(),
            bandwidth: None,
            adaptive: false,
            harddrop: false,
            ecn: None,
            nodrop: false,
        }
    }
}

impl QdiscParams for RedConfig {
    fn validate(&self) -> Result<(), String> {
        for (name, v) in [("min", &self.min), ("max", &self.max)] {
            if let Some(s) = v {
                let b = param_bytes(name, s, 1514)?;
                check_range(name, b, 0, u32::MAX as u64)?;
            }
        }
        if let Some(p) = &self.probability {
            let v = p.value().map_err(|e| format!("probability: {e}"))?;
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!(
                    "probability: {v} is outside the allowed range (0, 1]"
                ));
            }
            if self.plog.is_some() {
                return Err("plog: give either probability or plog, not both".into());
            }
        }
        if let Some(p) = self.plog {
            check_range("plog", p, 0, 31)?;
        }
        if let Some(b) = self.burst {
            check_range("burst", b, 1, u32::MAX)?;
        }
        let a = param_bytes("avpkt", &self.avpkt, 1514)?;
        check_range("avpkt", a, 1, 65535)?;
        if let Some(bw) = &self.bandwidth {
            let r = parse_rate(bw).map_err(|e| format!("bandwidth: {e}"))?;
            if r.0 == 0 {
                return Err("bandwidth: must be above 0bps".into());
            }
        }
        if self.nodrop && self.ecn == Some(false) {
            return Err("nodrop: only meaningful with ecn".into());
        }
        Ok(())
    }
}

/// What tc hands the kernel, computed once from the config and the bottleneck.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedSetup {
    pub config: RedConfig,
    /// The child FIFO's limit (`bottleneck.buffer`).
    pub limit: Limit,
    /// Thresholds in bytes.
    pub qth_min: u32,
    pub qth_max: u32,
    pub wlog: u8,
    pub plog: u8,
    /// max_P in Q0.32; 0 asks the kernel to derive it from plog.
    pub max_p: u32,
    pub scell_log: u8,
    /// avpkt (bytes) and bandwidth (bytes/s) that the Stab table is built from.
    pub avpkt: u32,
    pub bandwidth_bytes: u32,
    pub ecn: bool,
}

impl RedSetup {
    pub fn resolve(config: RedConfig, env: &QdiscEnv) -> Result<Self, String> {
        let mtu = env.mtu_wire;
        let limit_bytes = match env.limit {
            Limit::Bytes(b) => b,
            Limit::Packets(n) => n as u64 * mtu as u64,
        };
        let min = config
            .min
            .as_deref()
            .map(|s| param_bytes("min", s, mtu))
            .transpose()?;
        let max = config
            .max
            .as_deref()
            .map(|s| param_bytes("max", s, mtu))
            .transpose()?;
        // q_red.c: defaults after Floyd's REDparameters.txt.
        let qth_max = match (max, min) {
            (Some(m), _) => m,
            (None, Some(m)) => m * 3,
            (None, None) => limit_bytes / 4,
        };
        let qth_min = min.unwrap_or(qth_max / 3);
        check_range("max", qth_max, 0, u32::MAX as u64)?;
        check_range("min", qth_min, 0, u32::MAX as u64)?;
        let (qth_min, qth_max) = (qth_min as u32, qth_max as u32);
        if qth_max < qth_min {
            return Err(format!(
                "max: {qth_max} bytes is below min ({qth_min} bytes)"
            ));
        }
        let avpkt = param_bytes("avpkt", &config.avpkt, mtu)? as u32;
        if qth_min <= avpkt {
            // tc_red_eval_ewma: the average only reaches min after more than
            // one packet of avpkt bytes; tc fails ("failed to calculate EWMA").
            return Err(format!(
                "min: {qth_min} bytes must exceed avpkt ({avpkt} bytes) for RED's average to reach it; \
                 give a larger buffer, min, or a smaller avpkt"
            ));
        }
        let Some((lo, hi)) = burst_range(qth_min, qth_max, avpkt) else {
            return Err(format!(
                "max: {qth_max} bytes (min {qth_min} bytes, avpkt {avpkt} bytes) leaves no EWMA weight \
                 the kernel accepts; lower min and max or raise avpkt"
            ));
        };
        let burst = match config.burst {
            Some(b) if !(lo..=hi).contains(&b) => {
                return Err(format!(
                    "burst: {b} packets is outside what the kernel accepts for min = {qth_min} bytes, \
                     max = {qth_max} bytes and avpkt = {avpkt} bytes: {lo} to {hi}"
                ));
            }
            Some(b) => b,
            // tc's default, moved into the range the kernel accepts where tc's
            // own choice would be refused (`red_check_params`), as at large
            // buffers: a 1 BDP buffer at 10 Gbit/s otherwise fails.
            None => ((2 * qth_min as u64 + qth_max as u64) / (3 * avpkt as u64).max(1))
                .clamp(lo as u64, hi as u64) as u32,
        };
        let wlog = eval_ewma(qth_min, burst, avpkt).expect("burst within burst_range");
        let probability = match (&config.probability, config.plog) {
            (Some(p), _) => p.value().map_err(|e| format!("probability: {e}"))?,
            (None, Some(_)) => 0.0,
            (None, None) => 0.02,
        };
        let (plog, max_p) = match config.plog {
            Some(pl) => (pl, 0),
            None => {
                // q_red.c: max_P = probability * 2^32 (saturating at 1).
                let max_p = (probability * 4294967296.0) as u32;
                // Plog only matters when max_P is 0 (sch_red derives it then);
                // tc refuses a gap too wide for Plog < 32 even when it is
                // unused, as at a 1 GB buffer: there we keep max_P.
                let pl = match eval_p(qth_min, qth_max, probability) {
                    Some(pl) => pl,
                    None if max_p > 0 => 31,
                    None => {
                        return Err(format!(
                        "probability: {probability} is too small for the gap between min and max"
                    ))
                    }
                };
                (pl, max_p)
            }
        };
        let rate = match &config.bandwidth {
            Some(s) => parse_rate(s).map_err(|e| format!("bandwidth: {e}"))?,
            None => env.rate,
        };
        let bandwidth_bytes = rate.bytes_per_sec().clamp(1, u32::MAX as u64) as u32;
        let (scell_log, _) = idle_damping(wlog, avpkt, bandwidth_bytes);
        Ok(RedSetup {
            limit: env.limit,
            qth_min,
            qth_max,
            wlog,
            plog,
            max_p,
            scell_log,
            avpkt,
            bandwidth_bytes,
            ecn: env.ecn(config.ecn, false),
            config,
        })
    }
}

/// Index of the highest set bit, 1-based (Linux `fls`; 0 for 0).
fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// tc_red.c `tc_red_eval_ewma`: the smallest Wlog (1..31) whose EWMA
/// absorbs `burst` back-to-back packets of `avpkt` bytes starting from
/// `qmin`: burst + 1 - qmin/avpkt <= (1 - (1-W)^burst)/W.
fn eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Option<u8> {
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt as f64;
    if a < 1.0 {
        return None;
    }
    let mut w: f64 = 0.5;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

/// The bursts (packets) for which `tc_red_eval_ewma` finds a weight that
/// `red_check_params` accepts (`fls(max) + Wlog < 32`), as (lowest, highest);
/// None when there is none. The weight grows with the burst, so the range
/// is contiguous.
fn burst_range(qmin: u32, qmax: u32, avpkt: u32) -> Option<(u32, u32)> {
    let ok = |b: u32| eval_ewma(qmin, b, avpkt).is_some_and(|w| fls(qmax) + (w as u32) < 32);
    // Below qmin/avpkt the EWMA cannot reach min (a < 1); the first
    // admissible burst is at most a few above it.
    let first = (qmin / avpkt.max(1)).max(1);
    let lo = (first..first.saturating_add(64)).find(|&b| ok(b))?;
    let (mut good, mut bad) = (lo, u32::MAX);
    if ok(bad) {
        return Some((lo, bad));
    }
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some((lo, good))
}

/// tc_red.c `tc_red_eval_P`: Plog with probability/(qmax - qmin) * 2^Plog > 1.
fn eval_p(qmin: u32, qmax: u32, prob: f64) -> Option<u8> {
    let delta = qmax - qmin;
    if delta == 0 {
        return Some(0);
    }
    let mut p = prob / delta as f64;
    for i in 0..32u8 {
        if p > 1.0 {
            return Some(i);
        }
        p *= 2.0;
    }
    None
}

/// tc_red.c `tc_red_eval_idle_damping`: Scell_log and the table
/// Stab[t >> Scell_log] = -ln(1 - W) * t / xmit_time, capped at 31, where t
/// is what the kernel reads as idle microseconds and xmit_time is the time
/// of one avpkt at `bandwidth` in tc's 64 ns ticks.
fn idle_damping(wlog: u8, avpkt: u32, bytes_per_sec: u32) -> (u8, [u8; 256]) {
    // tc_calc_xmittime: microseconds truncated, then ticks truncated (at
    // least one tick here; tc divides by zero above ~8 Gbps with avpkt 1000).
    let us = (1e6 * (avpkt as f64 / bytes_per_sec as f64)) as u32;
    let xmit_time = ((us as f64 * TICKS_PER_US) as u32).max(1) as f64;
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit_time;
    let maxtime = 31.0 / lw;
    let mut clog = 0u8;
    while clog < 31 && maxtime / (1u64 << clog) as f64 >= 512.0 {
        clog += 1;
    }
    let mut stab = [0u8; 256];
    for (i, s) in stab.iter_mut().enumerate().take(255).skip(1) {
        // tc stores the double in a byte before capping it; x86 keeps the
        // low byte of the truncated integer.
        let v = (((i as u64) << clog) as f64 * lw) as i64 as u8;
        *s = v.min(31);
    }
    stab[255] = 31;
    (clog, stab)
}

/// red.h `struct red_parms`.
#[derive(Clone, Debug)]
struct RedParms {
    /// Thresholds scaled by 2^Wlog.
    qth_min: u64,
    qth_max: u64,
    max_p: u32,
    /// The divisor that turns a random u32 into qR (`max_P_reciprocal`).
    max_p_delta: u32,
    qth_delta: u32,
    target_min: u32,
    target_max: u32,
    wlog: u8,
    scell_log: u8,
    scell_max: u64,
    stab: Box<[u8; 256]>,
}

impl RedParms {
    /// red.h `red_set_parms`.
    fn new(s: &RedSetup) -> Self {
        let mut delta = s.qth_max as i64 - s.qth_min as i64;
        if delta <= 0 {
            delta = 1;
        }
        let delta = delta as u32;
        let max_p = if s.max_p == 0 {
            // max_P = (qth_max - qth_min) / 2^Plog, in u32 arithmetic.
            let maxp = if s.plog < 32 {
                u32::MAX >> s.plog
            } else {
                u32::MAX
            };
            maxp.wrapping_mul(delta)
        } else {
            s.max_p
        };
        let (scell_log, stab) = idle_damping(s.wlog, s.avpkt, s.bandwidth_bytes);
        debug_assert_eq!(scell_log, s.scell_log);
        RedParms {
            qth_min: (s.qth_min as u64) << s.wlog,
            qth_max: (s.qth_max as u64) << s.wlog,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            qth_delta: delta,
            target_min: s.qth_min + 2 * (delta / 5),
            target_max: s.qth_min + 3 * (delta / 5),
            wlog: s.wlog,
            scell_log,
            scell_max: 255u64 << scell_log,
            stab: Box::new(stab),
        }
    }
}

/// red.h `struct red_vars`.
#[derive(Clone, Debug)]
struct RedVars {
    /// Packets since the last hit (-1: below min, R not drawn yet).
    qcount: i32,
    /// R scaled so that a hit is due when (avg - min) * count >= qR.
    qr: u32,
    /// Average backlog in bytes, scaled by 2^Wlog.
    qavg: u64,
    /// Start of the current idle period, if the queue is idle.
    qidlestart: Option<Time>,
}

/// red.h's RED_DONT_MARK, RED_PROB_MARK, RED_HARD_MARK.
enum Action {
    Pass,
    Early,
    Forced,
}

pub struct Red {
    p: RedParms,
    v: RedVars,
    ecn: bool,
    harddrop: bool,
    nodrop: bool,
    next_adapt: Option<Time>,
    q: Fifo,
}

impl Red {
    pub fn new(s: &RedSetup) -> Self {
        Red {
            p: RedParms::new(s),
            // red_set_vars, then red_start_of_idle_period: the child is
            // empty when the qdisc is configured (at time 0).
            v: RedVars {
                qcount: -1,
                qr: 0,
                qavg: 0,
                qidlestart: Some(Time::ZERO),
            },
            ecn: s.ecn,
            harddrop: s.config.harddrop,
            nodrop: s.config.nodrop,
            next_adapt: s.config.adaptive.then_some(Time::ZERO + ADAPT_PERIOD),
            q: Fifo::new(s.limit),
        }
    }

    /// The average backlog in bytes.
    pub fn avg_bytes(&self) -> f64 {
        self.v.qavg as f64 / (1u64 << self.p.wlog) as f64
    }

    /// max_P as a fraction.
    pub fn max_p(&self) -> f64 {
        self.p.max_p as f64 / 4294967296.0
    }

    /// red.h `red_calc_qavg_from_idle_time`: (1-W)^m with m the number of
    /// avpkt times in the idle period, from the Stab table.
    fn qavg_after_idle(&self, now: Time, start: Time) -> u64 {
        let p = &self.p;
        let us_idle = now.since(start).us().min(p.scell_max);
        let shift = p.stab[((us_idle >> p.scell_log) & 255) as usize];
        if shift != 0 {
            self.v.qavg >> shift
        } else {
            // Linear start of the exponential: 1 - m W.
            let dec = self.v.qavg.wrapping_mul(us_idle) >> p.scell_log;
            if dec < self.v.qavg >> 1 {
                self.v.qavg - dec
            } else {
                self.v.qavg >> 1
            }
        }
    }

    /// red.h `red_calc_qavg`.
    fn calc_qavg(&self, now: Time, backlog: u64) -> u64 {
        match self.v.qidlestart {
            Some(start) => self.qavg_after_idle(now, start),
            // qavg*(1-W) + backlog*W, with the point at Wlog.
            None => self
                .v
                .qavg
                .wrapping_add(backlog.wrapping_sub(self.v.qavg >> self.p.wlog)),
        }
    }

    /// red.h `red_random`: a random u32 divided by max_P/(max - min).
    fn random(&self, ctx: &mut QdiscCtx) -> u32 {
        ctx.rng.next_u32() / self.p.max_p_delta
    }

    /// red.h `red_action` (with `red_mark_probability`).
    fn action(&mut self, qavg: u64, ctx: &mut QdiscCtx) -> Action {
        if qavg < self.p.qth_min {
            self.v.qcount = -1;
            Action::Pass
        } else if qavg >= self.p.qth_max {
            self.v.qcount = -1;
            Action::Forced
        } else {
            self.v.qcount += 1;
            if self.v.qcount != 0 {
                let excess = (qavg - self.p.qth_min) >> self.p.wlog;
                if excess.wrapping_mul(self.v.qcount as u64) >= self.v.qr as u64 {
                    self.v.qcount = 0;
                    self.v.qr = self.random(ctx);
                    return Action::Early;
                }
            } else {
                self.v.qr = self.random(ctx);
            }
            Action::Pass
        }
    }

    /// red.h `red_adaptative_algo`, run as the timer would at `at`.
    fn adapt(&mut self, at: Time) {
        let mut qavg = match self.v.qidlestart {
            Some(start) => self.qavg_after_idle(at, start),
            None => self.v.qavg,
        };
        qavg >>= self.p.wlog;
        let p = &mut self.p;
        if qavg > p.target_max as u64 && p.max_p <= MAX_P_MAX {
            p.max_p += MAX_P_MIN.min(p.max_p / 4);
        } else if qavg < p.target_min as u64 && p.max_p >= MAX_P_MIN {
            p.max_p = (p.max_p / 10) * 9;
        }
        p.max_p_delta =
            ((p.max_p as u64 + p.qth_delta as u64 / 2) / p.qth_delta as u64).max(1) as u32;
    }

    /// Run the adaptive timer for every period that ended by `now`.
    fn run_timer(&mut self, now: Time) {
        while let Some(t) = self.next_adapt.filter(|&t| t <= now) {
            self.adapt(t);
            self.next_adapt = Some(t + ADAPT_PERIOD);
        }
    }
}

impl Qdisc for Red {
    /// sch_red.c `red_enqueue`.
    fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx) {
        self.run_timer(now);
        self.v.qavg = self.calc_qavg(now, self.q.backlog_bytes().0);
        self.v.qidlestart = None;
        let hit = match self.action(self.v.qavg, ctx) {
            Action::Pass => false,
            Action::Early => !self.ecn || !(set_ce(&mut pkt, ctx) || self.nodrop),
            Action::Forced => self.harddrop || !self.ecn || !(set_ce(&mut pkt, ctx) || self.nodrop),
        };
        if hit {
            ctx.drop(pkt, DropCause::Aqm);
        } else if self.q.fits(&pkt) {
            self.q.push(pkt);
        } else {
            ctx.drop(pkt, DropCause::Overflow);
        }
    }

    /// sch_red.c `red_dequeue`: an empty child starts an idle period.
    fn dequeue(&mut self, now: Time, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.run_timer(now);
        let p = self.q.pop();
        if p.is_none() && self.v.qidlestart.is_none() {
            self.v.qidlestart = Some(now);
        }
        p
    }

    fn backlog_bytes(&self) -> Bytes {
        self.q.backlog_bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.q.backlog_packets()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testkit::{assert_same_seed_same_drops, drive, env, pkt, Bench, Source};
    use crate::qdisc::{parse_params, QdiscConfig};
    use crate::units::Rate;

    fn setup(params: serde_json::Value, limit: Limit) -> RedSetup {
        RedSetup::resolve(parse_params(&params).unwrap(), &env(limit)).unwrap()
    }

    #[test]
    fn bbq_fig4_settings_resolve_as_tc_computes_them() {
        // bbq/fig4: (max, min, p) = (0.5 MB, 0.17 MB, 2%) on a 100 Mbps
        // bottleneck with a 2 MB buffer. By hand from tc_red.c: burst =
        // (2*170000 + 500000)/(3*1000) = 280; Wlog = 7 because
        // 281 - 170 = 111 <= (1 - (1-2^-7)^280) * 2^7 = 113.8 but not for
        // 2^-6 (63.2); Plog = 24 (0.02/330000 * 2^24 > 1); one avpkt at
        // 12.5 MB/s is 80 us = 1250 ticks, so 31/lW = 4.94e6 and Scell_log = 14.
        let s = setup(
            serde_json::json!({"min": "0.17MB", "max": "0.5MB", "probability": 0.02}),
            Limit::Bytes(2_000_000),
        );
        assert_eq!((s.qth_min, s.qth_max), (170_000, 500_000));
        assert_eq!((s.wlog, s.plog, s.scell_log), (7, 24, 14));
        assert_eq!(s.max_p, 85_899_345);
        assert!(!s.ecn);
        for p in [
            serde_json::json!({"min": "0.17MB", "max": "0.5MB", "probability": "10%"}),
            serde_json::json!({"min": "0.17MB", "max": "0.33MB", "probability": 0.02}),
        ] {
            let c = QdiscConfig::parse("red", &p, &env(Limit::Bytes(2_000_000))).unwrap();
            assert_eq!(c.name(), "red");
            let _ = c.build();
        }
        // Stab: Stab[i] = trunc(i * 2^14 * lW) = trunc(0.1028 i).
        let (_, stab) = idle_damping(7, 1000, 12_500_000);
        assert_eq!(
            (stab[0], stab[9], stab[10], stab[100], stab[255]),
            (0, 0, 1, 10, 31)
        );
    }

    /// Issue 10: tc's defaults failed the kernel's own check at common
    /// settings (a 1 BDP buffer at 10 Gbit/s); the default burst now lands
    /// in the accepted range, and every buffer from 20 KB to 1 GB works
    /// (below, min = limit/12 no longer exceeds avpkt: a one-line refusal).
    #[test]
    fn defaults_work_at_any_buffer() {
        for limit in [
            20_000u64,
            100_000,
            1_000_000,
            25_000_000,
            250_000_000,
            1_000_000_000,
        ] {
            let s = setup(serde_json::Value::Null, Limit::Bytes(limit));
            assert!(fls(s.qth_max) + (s.wlog as u32) < 32, "limit {limit}");
        }
        let e = env(Limit::Bytes(10_000));
        let err = QdiscConfig::parse("red", &serde_json::Value::Null, &e).unwrap_err();
        assert!(err.starts_with("min:") && err.contains("avpkt"), "{err}");
        let s = setup(serde_json::json!({"burst": 110}), Limit::Bytes(1_200_000));
        assert_eq!(s.qth_min, 100_000);
        assert_eq!(s.wlog, eval_ewma(100_000, 110, 1000).unwrap());
    }

    #[test]
    fn a_burst_error_states_the_accepted_range() {
        let e = env(Limit::Bytes(2_000_000));
        let err = QdiscConfig::parse("red", &serde_json::json!({"burst": 1, "min": "0.17MB"}), &e)
            .unwrap_err();
        let (lo, hi) = burst_range(170_000, 510_000, 1000).unwrap();
        assert!(lo > 1 && hi >= lo, "{lo}..{hi}");
        assert!(err.contains(&format!("{lo} to {hi}")), "{err}");
        // Within the range: accepted.
        assert!(QdiscConfig::parse(
            "red",
            &serde_json::json!({"burst": lo, "min": "0.17MB"}),
            &e
        )
        .is_ok());
    }

    #[test]
    fn defaults_follow_tc() {
        // q_red.c: max = limit/4, min = max/3, probability 0.02.
        let s = setup(serde_json::Value::Null, Limit::Bytes(1_200_000));
        assert_eq!((s.qth_min, s.qth_max), (100_000, 300_000));
        assert_eq!(s.max_p, (0.02 * 4294967296.0) as u32);
        let s = setup(serde_json::json!({"min": "20pkt"}), Limit::Bytes(1_200_000));
        assert_eq!((s.qth_min, s.qth_max), (30_280, 90_840));
    }

    /// Hold the average at `k` full packets by keeping exactly k packets
    /// queued before each enqueue; count hits over `n` arrivals.
    fn hit_fraction(red: &RedSetup, k: u32, n: u32, ect: bool, seed: u64) -> (f64, Red) {
        let mut b = Bench::new(Red::new(red), seed);
        for i in 0..k {
            b.q.q.push(pkt(0, i));
        }
        b.q.v.qidlestart = None;
        b.q.v.qavg = ((k * 1514) as u64) << b.q.p.wlog;
        let t = Time(1_000_000);
        for i in 0..n {
            let mut p = pkt(0, k + i);
            if ect {
                p.ecn = Ecn::Ect0;
            }
            let before = b.events.len();
            b.enqueue(t, p);
            if b.q.backlog_packets() > k {
                b.dequeue(t);
            }
            assert!(b.events.len() <= before + 1);
        }
        assert_eq!(b.q.avg_bytes(), (k * 1514) as f64);
        let hits = b.marks() + b.aqm_drops();
        (hits as f64 / n as f64, b.q)
    }

    /// Mean and variance of the spacing N between hits, from red.h: after
    /// a hit qR = floor(U32 / d), d = floor(max_P / (max - min)), and the
    /// n-th packet after it is hit when n * (avg - min) >= qR. So
    /// P(N >= k) = P(qR > (k-1) a) = 1 - ((k-1) a + 1) d / 2^32 (clamped at
    /// 0), with a = avg - min in bytes. For pb = max_P (avg-min)/(max-min)
    /// N is about uniform on 1..1/pb, so the hit fraction 1/E[N] is about
    /// 2 pb / (1 + pb), twice the naive pb.
    fn spacing_moments(a: u64, d: u64) -> (f64, f64) {
        let tail = |k: u64| (1.0 - (((k - 1) * a + 1) * d) as f64 / 4294967296.0).max(0.0);
        let (mut m1, mut m2) = (0.0, 0.0);
        let mut k = 1;
        loop {
            let pk = tail(k) - tail(k + 1);
            if tail(k) == 0.0 {
                break;
            }
            m1 += k as f64 * pk;
            m2 += (k * k) as f64 * pk;
            k += 1;
        }
        (m1, m2 - m1 * m1)
    }

    #[test]
    fn hit_fraction_between_thresholds_follows_count_uniformised_max_p() {
        let s = setup(
            serde_json::json!({"min": "100000B", "max": "300000B", "probability": 0.1}),
            Limit::Bytes(10_000_000),
        );
        let d = (s.max_p / (s.qth_max - s.qth_min)) as u64;
        let mut marking = s.clone();
        marking.ecn = true;
        for (k, s) in [(80u32, &marking), (132, &s), (180, &marking)] {
            let n = 200_000;
            let (f, _) = hit_fraction(s, k, n, s.ecn, 7);
            let a = (k * 1514 - s.qth_min) as u64;
            let (mean, var) = spacing_moments(a, d);
            let pb = 0.1 * a as f64 / 200_000.0;
            let want = 1.0 / mean;
            // Renewal CLT: hits in n arrivals have variance n var / mean^3.
            let sd = (n as f64 * var / mean.powi(3)).sqrt() / n as f64;
            assert!(
                (f - want).abs() < 4.0 * sd,
                "k={k}: {f} vs {want} (sd {sd})"
            );
            assert!(
                (want - 2.0 * pb / (1.0 + pb)).abs() < 0.05 * want,
                "{want} {pb}"
            );
        }
    }

    #[test]
    fn nothing_below_min_and_everything_at_or_above_max() {
        // red.h `red_cmp_thresh`: no gentle region.
        let s = setup(
            serde_json::json!({"min": "100000B", "max": "200000B"}),
            Limit::Bytes(10_000_000),
        );
        let (f, _) = hit_fraction(&s, 60, 10_000, false, 1);
        assert_eq!(f, 0.0);
        let (f, _) = hit_fraction(&s, 133, 10_000, false, 1);
        assert_eq!(f, 1.0);
        // With ECN, ECT packets are marked rather than dropped above max...
        let mut e = s.clone();
        e.ecn = true;
        let (f, red) = hit_fraction(&e, 133, 10_000, true, 1);
        assert_eq!(f, 1.0);
        assert_eq!(red.backlog_packets(), 133);
        // ...unless harddrop.
        e.config.harddrop = true;
        let mut b = Bench::new(Red::new(&e), 1);
        for i in 0..133 {
            b.q.q.push(pkt(0, i));
        }
        b.q.v.qidlestart = None;
        b.q.v.qavg = ((133 * 1514) as u64) << b.q.p.wlog;
        b.enqueue(Time(1), crate::qdisc::testkit::ect(pkt(0, 999)));
        assert_eq!((b.aqm_drops(), b.marks()), (1, 0));
    }

    #[test]
    fn ecn_marks_ect_and_drops_not_ect() {
        // sch_red.c `red_enqueue`, RED_PROB_MARK with ECN: INET_ECN_set_ce
        // or, for a Not-ECT packet, drop.
        let mut s = setup(
            serde_json::json!({"min": "100000B", "max": "300000B", "probability": 0.1}),
            Limit::Bytes(10_000_000),
        );
        s.ecn = true;
        let (f, red) = hit_fraction(&s, 132, 20_000, false, 3);
        assert!(f > 0.05);
        assert_eq!(red.backlog_packets(), 132);
        let (f, _) = hit_fraction(&s, 132, 20_000, true, 3);
        assert!(f > 0.05);
    }

    #[test]
    fn average_decays_over_idle_time_through_the_stab_table() {
        // red.h `red_calc_qavg_from_idle_time`: after t us idle the average
        // is shifted right by Stab[t >> Scell_log]; at 100 Mbps with
        // avpkt 1000, Stab[i] = trunc(0.1028 i), Scell_log 14.
        let s = setup(
            serde_json::json!({"min": "0.17MB", "max": "0.5MB"}),
            Limit::Bytes(2_000_000),
        );
        let mut b = Bench::new(Red::new(&s), 1);
        for i in 0..200 {
            b.enqueue(Time(i), pkt(0, i as u32));
        }
        while b.dequeue(Time(1_000_000)).is_some() {}
        assert!(b.dequeue(Time(1_000_000)).is_none()); // idle from 1 ms
        let before = b.q.v.qavg;
        // 20 table cells of 16.384 ms later: Stab[20] = 2, a quarter left;
        // then one packet's own contribution (backlog 0) is nil.
        b.enqueue(Time(1_000_000 + 20 * 16_384_000 + 1000), pkt(0, 1000));
        assert_eq!(b.q.v.qavg, before >> 2);
    }

    #[test]
    fn adaptive_red_raises_max_p_while_the_average_sits_above_the_band() {
        // red.h `red_adaptative_algo` every 500 ms: avg above
        // min + 0.6 (max - min) => max_P += min(1%, max_P/4).
        let s = setup(
            serde_json::json!({"min": "100000B", "max": "300000B", "probability": 0.02, "adaptive": true, "ecn": true}),
            Limit::Bytes(10_000_000),
        );
        let mut b = Bench::new(Red::new(&s), 1);
        for i in 0..180 {
            b.q.q.push(pkt(0, i));
        }
        b.q.v.qidlestart = None;
        b.q.v.qavg = ((180 * 1514) as u64) << b.q.p.wlog;
        let p0 = b.q.max_p();
        b.enqueue(Time(499_999_999), crate::qdisc::testkit::ect(pkt(0, 900)));
        assert_eq!(b.q.max_p(), p0);
        b.dequeue(Time(500_000_000));
        assert!(
            (b.q.max_p() - (p0 + p0 / 4.0)).abs() < 1e-9,
            "{}",
            b.q.max_p()
        );
        b.dequeue(Time(1_600_000_000)); // two more periods
        let p3 = b.q.max_p();
        assert!(p3 > 0.034 && p3 < 0.041, "{p3}");
    }

    #[test]
    fn queue_never_exceeds_its_limit_under_overload() {
        // The child bfifo/pfifo of sch_red tail-drops at bottleneck.buffer.
        for limit in [Limit::Bytes(150_000), Limit::Packets(100)] {
            let mut b = Bench::new(Red::new(&setup(serde_json::Value::Null, limit)), 1);
            let src: Vec<Source> = (0..4).map(|f| Source::new(f, Dur::from_us(30))).collect();
            let out = drive(&mut b, &src, Rate(100_000_000), Time(500_000_000));
            match limit {
                Limit::Packets(n) => assert!(out.max_backlog_pkts <= n),
                Limit::Bytes(n) => assert!(out.max_backlog.0 <= n),
            }
            assert!(b.drops() > 1000);
        }
    }

    #[test]
    fn same_seed_gives_same_drops() {
        let s = setup(
            serde_json::json!({"min": "30000B", "max": "90000B", "probability": 0.1}),
            Limit::Bytes(300_000),
        );
        let run = |seed| {
            let mut b = Bench::new(Red::new(&s), seed);
            let src: Vec<Source> = (0..3).map(|f| Source::new(f, Dur::from_us(100))).collect();
            drive(&mut b, &src, Rate(100_000_000), Time(500_000_000));
            b.trail()
        };
        assert_same_seed_same_drops(run, 4, Some(5), 101);
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        let e = env(Limit::Bytes(2_000_000));
        let bad = [
            (serde_json::json!({"probability": 1.5}), "probability:"),
            (serde_json::json!({"probability": "150%"}), "probability:"),
            (serde_json::json!({"probability": 0}), "probability:"),
            (serde_json::json!({"min": "0.5MB", "max": "0.2MB"}), "max:"),
            (serde_json::json!({"min": "1BDP"}), "min:"),
            (serde_json::json!({"min": "-3MB"}), "min:"),
            (serde_json::json!({"burst": 2, "min": "0.17MB"}), "burst:"),
            (serde_json::json!({"avpkt": "0B"}), "avpkt:"),
            (serde_json::json!({"probability": 0.1, "plog": 20}), "plog:"),
            (serde_json::json!({"ecn": false, "nodrop": true}), "nodrop:"),
            (
                serde_json::json!({"maximum": "1MB"}),
                "unknown field `maximum`",
            ),
        ];
        for (p, name) in bad {
            let err = QdiscConfig::parse("red", &p, &e).unwrap_err();
            assert!(err.contains(name), "{p}: {err}");
        }
    }

    #[test]
    fn plog_derives_max_p_as_the_kernel_does() {
        // red.h `red_set_parms` with max_P = 0: (2^32-1 >> Plog) * (max - min).
        let s = setup(
            serde_json::json!({"min": "100000B", "max": "300000B", "plog": 24}),
            Limit::Bytes(10_000_000),
        );
        assert_eq!(s.max_p, 0);
        let red = Red::new(&s);
        assert_eq!(red.p.max_p, 255 * 200_000);
    }
}
