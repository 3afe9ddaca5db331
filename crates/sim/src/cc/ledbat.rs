//! LEDBAT++ (draft-irtf-iccrg-ledbat-plus-plus-01, on RFC 6817's LEDBAT):
//! a less-than-best-effort sender that keeps the queueing delay it sees
//! (RTT minus the base RTT) under a 60 ms target. Below target it grows by
//! GAIN packets per RTT, GAIN = 1 / min(16, ceil(2 x target / base RTT))
//! (section 4.2); above it the window changes by GAIN - W x (delay /
//! target - 1) per RTT, at most -W/2 (section 4.3, the multiplicative
//! decrease).
//! Slow start grows by GAIN per ACKed packet and ends when the queueing
//! delay passes 3/4 of the target (section 4.1). Periodic slowdowns
//! (section 4.4): 2 RTTs after the initial slow start, ssthresh = cwnd,
//! cwnd = 2 packets for 2 RTTs, then slow start back to ssthresh; the next
//! one 9 x that slowdown's duration later, so the base RTT is re-measured
//! with empty queues at a cost of at most 10% of the link. Base RTT: the
//! minimum of 10 one-minute minima (RFC 6817 section 2.4.2); current RTT:
//! the minimum of the last 4 samples. Loss: halve (at least 2), through
//! the machinery's recovery.
//!
//! The window is kept in 2^-20 packets (integer arithmetic: the same bits
//! everywhere). The ramp after a slowdown is GAIN-scaled slow start (as
//! Apple's XNU implementation of draft -01 does; the draft leaves it open).

use super::classic::{is_cwnd_limited, Window, WindowRule};
use super::{CaState, CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::{format_duration, Dur, Rate, Time};
use serde::{Deserialize, Serialize};

/// 2^-20 packet units.
const FRAC: i64 = 1 << 20;
/// RFC 6817 BASE_HISTORY: one-minute minima kept.
const BASE_HISTORY: usize = 10;
/// RFC 6817 CURRENT_FILTER.
const CURRENT_FILTER: usize = 4;
/// MIN_CWND = INIT_CWND = 2 (RFC 6817).
const MIN_CWND: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedbatConfig {
    /// Queueing delay target (section 4.5: 60 ms).
    #[serde(with = "crate::units::dur_text")]
    pub target: Dur,
    /// The GAIN formula's cap (section 4.2: 16; "MAY experiment").
    pub gain_cap: u32,
    /// Periodic slowdowns (section 4.4).
    pub slowdowns: bool,
}

impl Default for LedbatConfig {
    fn default() -> Self {
        LedbatConfig {
            target: Dur::from_ms(60),
            gain_cap: 16,
            slowdowns: true,
        }
    }
}

impl CcParams for LedbatConfig {
    fn validate(&self) -> Result<(), String> {
        if self.target < Dur::from_ms(1) || self.target > Dur::from_secs(10) {
            return Err(format!(
                "target = {} is out of range: allowed 1ms to 10s",
                format_duration(self.target)
            ));
        }
        if !(1..=1024).contains(&self.gain_cap) {
            return Err(format!("gain_cap = {}: allowed 1 to 1024", self.gain_cap));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Slowdown {
    /// Not scheduled yet (initial slow start) or waiting for `at`.
    Idle,
    /// cwnd held at 2 until `until`.
    Frozen { until: Time, started: Time },
    /// Slow start back to ssthresh, begun at `started`.
    Ramp { started: Time },
}

pub struct LedbatRule {
    target_us: i64,
    gain_cap: i64,
    slowdowns: bool,
    /// cwnd in 2^-20 packets (the fraction the integer cwnd drops).
    wf: i64,
    /// One-minute minima of the RTT, us; the last is the current minute's.
    base_hist: Vec<u32>,
    base_minute: u64,
    current: [u32; CURRENT_FILTER],
    current_n: usize,
    initial_ss: bool,
    slowdown: Slowdown,
    next_slowdown: Option<Time>,
}

impl LedbatRule {
    pub fn new(cfg: &LedbatConfig) -> Self {
        LedbatRule {
            target_us: cfg.target.us() as i64,
            gain_cap: cfg.gain_cap as i64,
            slowdowns: cfg.slowdowns,
            wf: MIN_CWND as i64 * FRAC,
            base_hist: Vec::new(),
            base_minute: 0,
            current: [u32::MAX; CURRENT_FILTER],
            current_n: 0,
            initial_ss: true,
            slowdown: Slowdown::Idle,
            next_slowdown: None,
        }
    }

    fn base_us(&self) -> Option<u32> {
        self.base_hist.iter().copied().min()
    }

    fn current_us(&self) -> Option<u32> {
        (self.current_n > 0).then(|| {
            self.current[..self.current_n.min(CURRENT_FILTER)]
                .iter()
                .copied()
                .min()
                .unwrap()
        })
    }

    fn qdelay_us(&self) -> Option<i64> {
        Some(self.current_us()? as i64 - self.base_us()? as i64)
    }

    /// GAIN in 2^-20: 1 / min(cap, ceil(2 target / base)).
    fn gain(&self) -> i64 {
        let base = self.base_us().unwrap_or(u32::MAX).max(1) as i64;
        let div = ((2 * self.target_us + base - 1) / base).clamp(1, self.gain_cap);
        FRAC / div
    }

    fn sync(&self, w: &mut Window) {
        w.cwnd = ((self.wf / FRAC) as u32).max(MIN_CWND).min(w.clamp);
    }

    fn srtt(conn: &Conn) -> Dur {
        conn.srtt.unwrap_or(Dur::from_ms(100))
    }
}

impl WindowRule for LedbatRule {
    /// RFC 6817: halve on loss, at least MIN_CWND.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd >> 1).max(MIN_CWND)
    }

    /// INIT_CWND = 2.
    fn init(&mut self, w: &mut Window, _init: &CcInit) {
        w.cwnd = MIN_CWND;
    }

    /// The RTT filters: base (10 one-minute minima) and current (last 4).
    fn pkts_acked(&mut self, now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        if rs.rtt_us < 0 {
            return;
        }
        let rtt = rs.rtt_us.min(u32::MAX as i64) as u32;
        let minute = now.0 / 60_000_000_000;
        if self.base_hist.is_empty() || minute != self.base_minute {
            self.base_minute = minute;
            if self.base_hist.len() == BASE_HISTORY {
                self.base_hist.remove(0);
            }
            self.base_hist.push(rtt);
        } else {
            let last = self.base_hist.last_mut().expect("non-empty");
            *last = (*last).min(rtt);
        }
        self.current[self.current_n % CURRENT_FILTER] = rtt;
        self.current_n += 1;
    }

    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        // The machinery (recovery) may have set cwnd: follow it.
        if (self.wf / FRAC) as u32 != w.cwnd {
            self.wf = w.cwnd as i64 * FRAC;
        }
        let srtt = Self::srtt(conn);
        match self.slowdown {
            Slowdown::Frozen { until, started } => {
                if now < until {
                    return;
                }
                self.slowdown = Slowdown::Ramp { started };
            }
            Slowdown::Idle if self.slowdowns => {
                if let Some(at) = self.next_slowdown {
                    if now >= at {
                        // Section 4.4: remember the window, hold 2 packets for 2 RTTs.
                        w.ssthresh = w.cwnd;
                        self.wf = MIN_CWND as i64 * FRAC;
                        self.sync(w);
                        self.slowdown = Slowdown::Frozen {
                            until: now + srtt + srtt,
                            started: now,
                        };
                        self.next_slowdown = None;
                        return;
                    }
                }
            }
            _ => {}
        }
        if !is_cwnd_limited(w, conn) {
            return;
        }
        let gain = self.gain();
        let q = self.qdelay_us();
        if w.in_slow_start() {
            // Section 4.1: GAIN-scaled slow start; the initial one ends at 3/4 target.
            if self.initial_ss && q.is_some_and(|q| 4 * q > 3 * self.target_us) {
                w.ssthresh = w.cwnd;
            } else {
                self.wf += gain * acked as i64;
                self.wf = self.wf.min(w.ssthresh as i64 * FRAC);
                self.sync(w);
            }
            if !w.in_slow_start() {
                if self.initial_ss {
                    self.initial_ss = false;
                    self.next_slowdown = Some(now + srtt + srtt);
                } else if let Slowdown::Ramp { started } = self.slowdown {
                    // Back at ssthresh: the next slowdown 9 durations later.
                    self.slowdown = Slowdown::Idle;
                    self.next_slowdown = Some(now + Dur(9 * now.since(started).0));
                }
            }
            return;
        }
        let w_pkts = (self.wf / FRAC).max(1);
        let per_rtt = match q {
            Some(q) if q >= self.target_us => {
                // GAIN - W (q / target - 1), at least -W/2, per RTT.
                let dec = self.wf * (q - self.target_us) / self.target_us;
                (gain - dec).max(-self.wf / 2)
            }
            _ => gain,
        };
        self.wf += per_rtt * acked as i64 / w_pkts;
        self.wf = self.wf.max(MIN_CWND as i64 * FRAC);
        self.sync(w);
    }

    fn set_state(
        &mut self,
        _now: Time,
        _from: CaState,
        to: CaState,
        _w: &mut Window,
        _conn: &Conn,
    ) {
        if to >= CaState::Cwr {
            // A loss ends the initial slow start too (the delay exit applies to it only).
            self.initial_ss = false;
        }
    }

    fn phase(&self, w: &Window) -> &'static str {
        match self.slowdown {
            Slowdown::Frozen { .. } => "SLOWDOWN",
            Slowdown::Ramp { .. } => "SLOW_START",
            _ if w.in_slow_start() => "SLOW_START",
            _ => "CONG_AVOID",
        }
    }

    fn write_state(&self, out: &mut CcState) {
        let ms = |v: Option<u32>| v.map_or(f64::NAN, |u| u as f64 / 1000.0);
        out.num("ledbat_base_rtt_ms", ms(self.base_us()));
        out.num(
            "ledbat_qdelay_ms",
            self.qdelay_us().map_or(f64::NAN, |q| q as f64 / 1000.0),
        );
        out.num("ledbat_gain", self.gain() as f64 / FRAC as f64);
    }
}

/// The registry's entry for `cc = "ledbat_pp"` (`cc::Algorithm`).
impl crate::cc::Algorithm for LedbatConfig {
    const NAME: &'static str = "ledbat_pp";
    const REFERENCE: &'static str =
        "LEDBAT++: draft-irtf-iccrg-ledbat-plus-plus-01 on RFC 6817 (less than best effort)";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::LedbatPP(crate::cc::classic::Classic::new(
            LedbatRule::new(self),
            init,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, win};

    #[test]
    fn the_gain_follows_the_base_rtt() {
        let mut r = LedbatRule::new(&LedbatConfig::default());
        let mut w = win(10, 5);
        let c = conn(10);
        for (base_ms, div) in [(20, 6), (60, 2), (150, 1), (5, 16)] {
            r.base_hist.clear();
            r.pkts_acked(Time::ZERO, &mut w, &ack(1, base_ms * 1000), &c, Rate::INF);
            assert_eq!(r.gain(), FRAC / div, "base {base_ms} ms");
        }
    }

    #[test]
    fn above_target_the_window_falls_by_at_most_half_per_rtt() {
        let mut r = LedbatRule::new(&LedbatConfig::default());
        let mut w = win(100, 50);
        r.wf = 100 * FRAC;
        let c = conn(100);
        // Base 40 ms (gain 1/3); current 40 + 120 ms: twice the target above.
        r.pkts_acked(Time::ZERO, &mut w, &ack(1, 40_000), &c, Rate::INF);
        for _ in 0..4 {
            r.pkts_acked(Time::ZERO, &mut w, &ack(1, 160_000), &c, Rate::INF);
        }
        for _ in 0..100 {
            r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        }
        // -W/2 per RTT (the bound), half a packet per ACK over a window of ACKs.
        assert!((48..=51).contains(&w.cwnd), "{}", w.cwnd);
        // Below target: + GAIN (1/3) per RTT.
        for _ in 0..4 {
            r.pkts_acked(Time::ZERO, &mut w, &ack(1, 41_000), &c, Rate::INF);
        }
        w.ssthresh = 2; // in avoidance
        let before = r.wf;
        let n = w.cwnd;
        for _ in 0..n {
            r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        }
        let grew = r.wf - before;
        assert!((grew - FRAC / 3).abs() < FRAC / 100, "{grew}");
    }
}
