//! BIC (Xu, Harfoush and Rhee, INFOCOM 2004), as Linux net/ipv4/tcp_bic.c:
//! after a loss, a binary search between the window of the loss (Wmax) and
//! the reduced window, jumps capped at `max_increment` packets per RTT, then
//! a slow probe past Wmax. Reno below `low_window` packets.

use super::classic::{jiffies, Window, WindowRule, HZ};
use super::{CaState, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_B`: the binary search goes to (max + min) / B.
const BICTCP_B: u32 = 4;
/// `ACK_RATIO_SHIFT`: the delayed-ACK ratio is kept << 4.
const ACK_RATIO_SHIFT: u32 = 4;

/// BIC's module parameters; defaults are Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BicConfig {
    pub fast_convergence: bool,
    /// Largest growth per RTT in the binary search, packets.
    pub max_increment: u32,
    /// Reno below this window, packets.
    pub low_window: u32,
    /// Multiplicative decrease factor (Linux `beta`/1024, 819/1024 by default).
    pub beta: f64,
    /// Growth near Wmax: one packet per `smooth_part`/4 windows... of ACKs.
    pub smooth_part: u32,
}

impl Default for BicConfig {
    fn default() -> Self {
        BicConfig {
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            beta: 819.0 / 1024.0,
            smooth_part: 20,
        }
    }
}

impl BicConfig {
    fn beta_int(&self) -> u32 {
        (self.beta * BETA_SCALE as f64).round() as u32
    }
}

impl CcParams for BicConfig {
    fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0 && (1..BETA_SCALE).contains(&self.beta_int())) {
            return Err(format!(
                "beta = {} is out of range: allowed 0 < beta < 1 (in 1/1024 steps)",
                self.beta
            ));
        }
        if !(1..=1_000_000).contains(&self.max_increment) {
            return Err(format!(
                "max_increment = {} is out of range: allowed 1 to 1000000 packets",
                self.max_increment
            ));
        }
        if !(1..=1000).contains(&self.smooth_part) {
            return Err(format!(
                "smooth_part = {} is out of range: allowed 1 to 1000",
                self.smooth_part
            ));
        }
        Ok(())
    }
}

/// `struct bictcp` and the module parameters.
pub struct BicRule {
    fast_convergence: bool,
    max_increment: u32,
    low_window: u32,
    beta: u32,
    smooth_part: u32,
    /// ACKed packets per +1 cwnd.
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    epoch_start: u32,
    /// Packets per ACK, << ACK_RATIO_SHIFT.
    delayed_ack: u32,
}

impl BicRule {
    /// `bictcp_init`.
    pub fn new(cfg: &BicConfig) -> Self {
        let mut r = BicRule {
            fast_convergence: cfg.fast_convergence,
            max_increment: cfg.max_increment,
            low_window: cfg.low_window,
            beta: cfg.beta_int(),
            smooth_part: cfg.smooth_part,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: 0,
            delayed_ack: 0,
        };
        r.reset();
        r
    }

    /// `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.epoch_start = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    /// `bictcp_update`: `cnt` from where cwnd stands against Wmax.
    fn update(&mut self, now: Time, cwnd: u32) {
        let jif = jiffies(now);
        if self.last_cwnd == cwnd && (jif.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = jif;
        if self.epoch_start == 0 {
            self.epoch_start = jif;
        }
        if cwnd <= self.low_window {
            self.cnt = cwnd;
            return;
        }
        let (maxi, smooth) = (self.max_increment, self.smooth_part);
        self.cnt = if cwnd < self.last_max_cwnd {
            // Binary search increase toward Wmax.
            let dist = (self.last_max_cwnd - cwnd) / BICTCP_B;
            if dist > maxi {
                cwnd / maxi
            } else if dist <= 1 {
                cwnd.wrapping_mul(smooth) / BICTCP_B
            } else {
                cwnd / dist
            }
        } else if cwnd < self.last_max_cwnd + BICTCP_B {
            // Just past Wmax: slow.
            cwnd.wrapping_mul(smooth) / BICTCP_B
        } else if cwnd < self.last_max_cwnd + maxi * (BICTCP_B - 1) {
            // Max probing: growth accelerates away from Wmax.
            cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - self.last_max_cwnd)
        } else {
            cwnd / maxi
        };
        // No loss yet (or link utilization very low): at least 5% per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack;
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }
}

impl WindowRule for BicRule {
    /// `bictcp_recalc_ssthresh`.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        let cwnd = w.cwnd;
        self.epoch_start = 0;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            ((cwnd as u64 * (BETA_SCALE + self.beta) as u64) / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        if cwnd <= self.low_window {
            (cwnd >> 1).max(2)
        } else {
            (((cwnd as u64 * self.beta as u64) / BETA_SCALE as u64) as u32).max(2)
        }
    }

    /// `bictcp_cong_avoid`.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        let Some(acked) = w.limited_slow_start(acked, conn) else {
            return;
        };
        self.update(now, w.cwnd);
        w.cong_avoid_ai(self.cnt, acked);
    }

    /// `bictcp_acked`: the delayed-ACK ratio, (15 ratio + sample) / 16, in Open.
    fn pkts_acked(&mut self, _now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        if rs.prior_ca_state == CaState::Open {
            self.delayed_ack = self
                .delayed_ack
                .wrapping_add(rs.pkts_acked)
                .wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        }
    }

    /// `bictcp_state`: an RTO forgets Wmax.
    fn set_state(
        &mut self,
        _now: Time,
        _from: CaState,
        to: CaState,
        _w: &mut Window,
        _conn: &Conn,
    ) {
        if to == CaState::Loss {
            self.reset();
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("bic_wmax_pkts", self.last_max_cwnd as f64);
        out.num("bic_cnt_pkts", self.cnt as f64);
    }
}

/// The registry's entry for `cc = "bic"` (`cc::Algorithm`).
impl crate::cc::Algorithm for BicConfig {
    const NAME: &'static str = "bic";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_bic.c; Xu, Harfoush and Rhee, INFOCOM 2004";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Bic(crate::cc::classic::Classic::new(BicRule::new(self), init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{conn, win};
    use crate::units::Dur;

    /// cnt at cwnd with Wmax, one ACK per packet (delayed_ack = 1 << 4).
    fn cnt_at(cwnd: u32, wmax: u32) -> u32 {
        let mut r = BicRule::new(&BicConfig::default());
        r.delayed_ack = 1 << ACK_RATIO_SHIFT;
        r.last_max_cwnd = wmax;
        r.update(Time::ZERO + Dur::from_secs(1), cwnd);
        r.cnt
    }

    #[test]
    fn the_binary_search_jumps_far_below_wmax_and_creeps_near_it() {
        // Far below Wmax: capped at max_increment (16) packets per RTT.
        assert_eq!(cnt_at(400, 1000), 400 / 16);
        // (Wmax - cwnd)/4 = 10 packets: cwnd/10 ACKs per packet.
        assert_eq!(cnt_at(960, 1000), 96);
        // Within 4 packets of Wmax: cwnd * 20 / 4 ACKs per packet.
        assert_eq!(cnt_at(998, 1000), 998 * 20 / 4);
        // Past Wmax, then max probing, then linear again.
        assert_eq!(cnt_at(1002, 1000), 1002 * 20 / 4);
        assert_eq!(cnt_at(1010, 1000), 1010 * 3 / 10);
        assert_eq!(cnt_at(2000, 1000), 2000 / 16);
        // Reno below low_window.
        assert_eq!(cnt_at(10, 1000), 10);
    }

    #[test]
    fn ssthresh_keeps_beta_and_fast_convergence_lowers_wmax() {
        let mut r = BicRule::new(&BicConfig::default());
        let c = conn(100);
        assert_eq!(
            r.ssthresh(Time::ZERO, &win(1000, 2000), &c),
            1000 * 819 / 1024
        );
        assert_eq!(r.last_max_cwnd, 1000);
        // A loss below the last Wmax: Wmax = cwnd (1 + beta) / 2.
        assert_eq!(
            r.ssthresh(Time::ZERO, &win(800, 2000), &c),
            800 * 819 / 1024
        );
        assert_eq!(r.last_max_cwnd, 800 * (1024 + 819) / 2048);
        assert_eq!(r.ssthresh(Time::ZERO, &win(10, 20), &c), 5);
    }

    #[test]
    fn the_delayed_ack_ratio_follows_acks_in_open_only() {
        let mut r = BicRule::new(&BicConfig::default());
        let mut w = win(100, 50);
        let c = conn(100);
        let mut rs = crate::cc::classic::testkit::ack(1, 1000);
        for _ in 0..200 {
            r.pkts_acked(Time::ZERO, &mut w, &rs, &c, Rate::INF);
        }
        // From 2 packets per ACK toward 1: (2 << 4) decays to 1 << 4 (+15/16 rounding).
        assert!(
            r.delayed_ack <= (1 << ACK_RATIO_SHIFT) + 15,
            "{}",
            r.delayed_ack
        );
        let before = r.delayed_ack;
        rs.pkts_acked = 4;
        rs.prior_ca_state = CaState::Recovery;
        r.pkts_acked(Time::ZERO, &mut w, &rs, &c, Rate::INF);
        assert_eq!(r.delayed_ack, before);
    }
}
