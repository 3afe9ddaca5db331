//! TCP Vegas (Brakmo and Peterson 1995), as Linux net/ipv4/tcp_vegas.c:
//! once per RTT, compare the window with what the minimum RTT of that RTT
//! says is queued (diff = cwnd (rtt - baseRTT) / baseRTT packets) and keep
//! between `alpha` and `beta` packets in the queue; leave slow start when
//! more than `gamma` are. Reno whenever fewer than three RTT samples came in
//! the last RTT, and outside Open. [`VegasState`] is shared with YeAH
//! (`tcp_vegas.h`).

use super::classic::{after, current_ssthresh, Window, WindowEvent, WindowRule};
use super::reno::RenoRule;
use super::{CaState, CcEvent, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// Vegas's module parameters (packets); defaults are Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VegasConfig {
    /// Below this many queued packets, grow by one per RTT.
    pub alpha: u32,
    /// Above this many, shrink by one per RTT.
    pub beta: u32,
    /// Above this many, leave slow start.
    pub gamma: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            alpha: 2,
            beta: 4,
            gamma: 1,
        }
    }
}

impl CcParams for VegasConfig {
    fn validate(&self) -> Result<(), String> {
        if self.alpha > self.beta || self.beta > 100_000 {
            return Err(format!(
                "alpha = {}, beta = {}: allowed 0 <= alpha <= beta <= 100000 packets",
                self.alpha, self.beta
            ));
        }
        if self.gamma > 100_000 {
            return Err(format!(
                "gamma = {} is out of range: allowed 0 to 100000 packets",
                self.gamma
            ));
        }
        Ok(())
    }
}

/// `struct vegas` (tcp_vegas.h).
#[derive(Clone, Debug)]
pub struct VegasState {
    /// Right edge of the current RTT (segments).
    pub beg_snd_nxt: u32,
    pub beg_snd_una: u32,
    pub beg_snd_cwnd: u32,
    pub doing_vegas_now: bool,
    /// RTT samples in the current RTT.
    pub cnt_rtt: u16,
    /// Their minimum, us (+1).
    pub min_rtt: u32,
    /// The minimum of all samples, us (+1).
    pub base_rtt: u32,
}

impl VegasState {
    /// `tcp_vegas_init` (nothing sent yet: snd_nxt is segment 0).
    pub fn new() -> Self {
        let mut v = VegasState {
            beg_snd_nxt: 0,
            beg_snd_una: 0,
            beg_snd_cwnd: 0,
            doing_vegas_now: false,
            cnt_rtt: 0,
            min_rtt: 0x7fff_ffff,
            base_rtt: 0x7fff_ffff,
        };
        v.enable(0);
        v
    }

    /// `vegas_enable`: start sampling at the next send window.
    pub fn enable(&mut self, snd_nxt: u32) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = 0x7fff_ffff;
    }

    /// `tcp_vegas_init`.
    fn restart(&mut self, snd_nxt: u32) {
        self.base_rtt = 0x7fff_ffff;
        self.enable(snd_nxt);
    }

    /// `tcp_vegas_pkts_acked`.
    pub fn pkts_acked(&mut self, rs: &RateSample) {
        if rs.rtt_us < 0 {
            return;
        }
        // Never zero.
        let vrtt = (rs.rtt_us as u32).wrapping_add(1);
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// `tcp_vegas_state`: sample in Open only.
    pub fn set_state(&mut self, to: CaState, conn: &Conn) {
        if to == CaState::Open {
            self.enable(conn.snd_nxt);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: after idle, forget everything (baseRTT too).
    pub fn cwnd_event(&mut self, ev: WindowEvent, conn: &Conn) {
        if matches!(
            ev,
            WindowEvent::Core(CcEvent::CwndRestart { .. } | CcEvent::TxStart)
        ) {
            self.restart(conn.snd_nxt);
        }
    }

    pub fn write_state(&self, out: &mut CcState) {
        let us = |v: u32| {
            if v >= 0x7fff_ffff {
                f64::NAN
            } else {
                v as f64 / 1000.0
            }
        };
        out.num("vegas_base_rtt_ms", us(self.base_rtt));
        out.num("vegas_min_rtt_ms", us(self.min_rtt));
        out.num("vegas_cnt_rtt", self.cnt_rtt as f64);
        out.num(
            "vegas_enabled",
            if self.doing_vegas_now { 1.0 } else { 0.0 },
        );
    }
}

impl Default for VegasState {
    fn default() -> Self {
        Self::new()
    }
}

pub struct VegasRule {
    alpha: u32,
    beta: u32,
    gamma: u32,
    pub v: VegasState,
    /// The last RTT's estimate of queued packets (reported only).
    diff: Option<u32>,
}

impl VegasRule {
    pub fn new(cfg: &VegasConfig) -> Self {
        VegasRule {
            alpha: cfg.alpha,
            beta: cfg.beta,
            gamma: cfg.gamma,
            v: VegasState::new(),
            diff: None,
        }
    }
}

impl WindowRule for VegasRule {
    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    /// `tcp_vegas_cong_avoid`. `ack` is snd_una after this ACK. The once-per-RTT
    /// step runs whether or not cwnd limits the sender, as in Linux.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        if !self.v.doing_vegas_now {
            RenoRule::linux().cong_avoid(now, w, acked, conn);
            return;
        }
        if after(conn.snd_una, self.v.beg_snd_nxt) {
            self.v.beg_snd_nxt = conn.snd_nxt;
            if self.v.cnt_rtt <= 2 {
                // Likely only delayed ACKs: no Vegas step this RTT.
                RenoRule::linux().cong_avoid(now, w, acked, conn);
            } else {
                let rtt = self.v.min_rtt;
                let base = self.v.base_rtt;
                let target = (w.cwnd as u64 * base as u64) / rtt as u64;
                // u32 arithmetic, as Linux (wraps only for windows and
                // queueing delays far beyond any scenario's).
                let diff = w.cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
                self.diff = Some(diff);
                if diff > self.gamma && w.in_slow_start() {
                    // Too fast: cwnd to the rate actually achieved, plus one.
                    w.cwnd = w.cwnd.min(target as u32 + 1);
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if w.in_slow_start() {
                    w.slow_start(acked);
                } else if diff > self.beta {
                    w.cwnd -= 1;
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if diff < self.alpha {
                    w.cwnd += 1;
                }
                if w.cwnd < 2 {
                    w.cwnd = 2;
                } else if w.cwnd > w.clamp {
                    w.cwnd = w.clamp;
                }
                w.ssthresh = current_ssthresh(w);
            }
            self.v.cnt_rtt = 0;
            self.v.min_rtt = 0x7fff_ffff;
        } else if w.in_slow_start() {
            w.slow_start(acked);
        }
    }

    fn pkts_acked(&mut self, _now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        self.v.pkts_acked(rs);
    }

    fn set_state(&mut self, _now: Time, _from: CaState, to: CaState, _w: &mut Window, conn: &Conn) {
        self.v.set_state(to, conn);
    }

    fn cwnd_event(&mut self, _now: Time, ev: WindowEvent, _w: &mut Window, conn: &Conn) {
        self.v.cwnd_event(ev, conn);
    }

    fn write_state(&self, out: &mut CcState) {
        self.v.write_state(out);
        out.num("vegas_diff_pkts", self.diff.map_or(f64::NAN, |d| d as f64));
    }
}

/// The registry's entry for `cc = "vegas"` (`cc::Algorithm`).
impl crate::cc::Algorithm for VegasConfig {
    const NAME: &'static str = "vegas";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_vegas.c; Brakmo and Peterson, JSAC 1995";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Vegas(crate::cc::classic::Classic::new(VegasRule::new(self), init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, win};

    /// One RTT of `n` ACKs with RTT `rtt_us`, then the ACK that ends it.
    fn rtt_of(r: &mut VegasRule, w: &mut Window, c: &mut Conn, n: u32, rtt_us: i64) {
        for _ in 0..n {
            r.pkts_acked(Time::ZERO, w, &ack(1, rtt_us), c, Rate::INF);
        }
        c.snd_una = r.v.beg_snd_nxt + 1;
        c.snd_nxt = c.snd_una + w.cwnd;
        r.cong_avoid(Time::ZERO, w, 1, c);
    }

    #[test]
    fn it_keeps_between_alpha_and_beta_packets_queued() {
        let mut r = VegasRule::new(&VegasConfig::default());
        let mut c = conn(100);
        let mut w = win(100, 50);
        // An RTT at the base RTT, 10 ms: nothing queued, grow.
        rtt_of(&mut r, &mut w, &mut c, 5, 9_999);
        assert_eq!((w.cwnd, r.diff), (101, Some(0)));
        // 1 packet queued (diff = 101 * 0.1 ms / 10 ms = 1): grow.
        rtt_of(&mut r, &mut w, &mut c, 5, 10_099);
        assert_eq!((w.cwnd, r.diff), (102, Some(1)));
        // 3 packets: hold.
        rtt_of(&mut r, &mut w, &mut c, 5, 10_299);
        assert_eq!((w.cwnd, r.diff), (102, Some(3)));
        // 10 packets: shrink; ssthresh stays at least 3/4 of cwnd.
        rtt_of(&mut r, &mut w, &mut c, 5, 10_999);
        assert_eq!((w.cwnd, r.diff), (101, Some(10)));
        assert_eq!(w.ssthresh, 76);
        // Two samples in an RTT are not enough: Reno's step instead.
        let before = w.cwnd_cnt;
        rtt_of(&mut r, &mut w, &mut c, 2, 20_000);
        assert_eq!((w.cwnd, w.cwnd_cnt), (101, before + 1));
    }

    #[test]
    fn slow_start_ends_at_the_rate_achieved_when_more_than_gamma_queue() {
        let mut r = VegasRule::new(&VegasConfig::default());
        let mut c = conn(64);
        let mut w = win(64, u32::MAX);
        // An RTT at the base RTT (10 ms): slow start goes on.
        rtt_of(&mut r, &mut w, &mut c, 5, 9_999);
        assert_eq!(w.cwnd, 65);
        // RTT 12.5 ms: target = 65 * 10 / 12.5 = 52, plus one.
        rtt_of(&mut r, &mut w, &mut c, 5, 12_499);
        assert_eq!(w.cwnd, 53);
        assert!(!w.in_slow_start());
    }
}
