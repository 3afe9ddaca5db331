//! TCP Illinois (Liu, Basar and Srikant, VALUETOOLS 2006), as Linux
//! net/ipv4/tcp_illinois.c: loss decides the direction, delay the size.
//! Once per RTT the average queueing delay da (against the largest seen,
//! dm) sets the additive increase alpha, from 10 packets per RTT while
//! delay is low down to 0.3 near dm, and the decrease beta, from 1/8 to 1/2.
//! Reno's 1 and 1/2 below `win_thresh` packets.

use super::classic::{after, is_cwnd_limited, Window, WindowRule};
use super::{CaState, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// ~0.3, 10.0 and 1.0 packets per RTT, << 7.
const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
const ALPHA_BASE: u32 = ALPHA_SCALE;
/// RTT samples are capped so the alpha arithmetic cannot wrap (~3.3 s).
const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// 0.125 and 0.5, << 6.
const BETA_MIN: u32 = BETA_SCALE / 8;
const BETA_MAX: u32 = BETA_SCALE / 2;
const BETA_BASE: u32 = BETA_MAX;

/// Illinois's module parameters; defaults are Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IllinoisConfig {
    /// Reno's alpha and beta below this window, packets.
    pub win_thresh: u32,
    /// Low-delay RTTs before alpha may return to its maximum.
    pub theta: u32,
}

impl Default for IllinoisConfig {
    fn default() -> Self {
        IllinoisConfig {
            win_thresh: 15,
            theta: 5,
        }
    }
}

impl CcParams for IllinoisConfig {
    fn validate(&self) -> Result<(), String> {
        if self.theta > 255 {
            return Err(format!(
                "theta = {} is out of range: allowed 0 to 255",
                self.theta
            ));
        }
        Ok(())
    }
}

/// `struct illinois`; RTTs in us.
pub struct IllinoisRule {
    win_thresh: u32,
    theta: u32,
    sum_rtt: u64,
    cnt_rtt: u16,
    base_rtt: u32,
    max_rtt: u32,
    end_seq: u32,
    alpha: u32,
    beta: u32,
    acked: u16,
    rtt_above: bool,
    rtt_low: u8,
}

impl IllinoisRule {
    /// `tcp_illinois_init` (nothing sent yet: snd_nxt is segment 0).
    pub fn new(cfg: &IllinoisConfig) -> Self {
        IllinoisRule {
            win_thresh: cfg.win_thresh,
            theta: cfg.theta,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: 0x7fff_ffff,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// `rtt_reset`.
    fn rtt_reset(&mut self, snd_nxt: u32) {
        self.end_seq = snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// `alpha`: additive increase from the average (da) and largest (dm)
    /// queueing delay; a convex curve from ALPHA_MAX down to ALPHA_MIN.
    fn alpha_for(&mut self, da: u32, dm: u32) -> u32 {
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            // Five good RTTs before alpha jumps back to its maximum.
            self.rtt_low = self.rtt_low.wrapping_add(1);
            if (self.rtt_low as u32) < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        let (dm, da) = (dm - d1, da - d1);
        (dm * ALPHA_MAX) / (dm + (da * (ALPHA_MAX - ALPHA_MIN)) / ALPHA_MIN)
    }

    /// `beta`: 1/8 up to da = dm/10, 1/2 from 8 dm/10, linear between.
    fn beta_for(da: u32, dm: u32) -> u32 {
        let d2 = dm / 10;
        if da <= d2 {
            return BETA_MIN;
        }
        let d3 = (8 * dm) / 10;
        if da >= d3 || d3 <= d2 {
            return BETA_MAX;
        }
        (BETA_MIN * d3)
            .wrapping_sub(BETA_MAX * d2)
            .wrapping_add((BETA_MAX - BETA_MIN) * da)
            / (d3 - d2)
    }

    /// `update_params`, once per RTT.
    fn update_params(&mut self, w: &Window, snd_nxt: u32) {
        if w.cwnd < self.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_rtt - self.base_rtt;
            let da = (self.sum_rtt / self.cnt_rtt as u64) as u32 - self.base_rtt;
            self.alpha = self.alpha_for(da, dm);
            self.beta = Self::beta_for(da, dm);
        }
        self.rtt_reset(snd_nxt);
    }
}

impl WindowRule for IllinoisRule {
    /// `tcp_illinois_ssthresh`: cwnd - beta cwnd.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        let decr = ((w.cwnd as u64 * self.beta as u64) >> BETA_SHIFT) as u32;
        (w.cwnd - decr).max(2)
    }

    /// `tcp_illinois_cong_avoid`: the per-RTT update runs whether or not
    /// cwnd limits the sender; cwnd += alpha / cwnd per ACKed packet.
    fn cong_avoid(&mut self, _now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        if after(conn.snd_una, self.end_seq) {
            self.update_params(w, conn.snd_nxt);
        }
        if !is_cwnd_limited(w, conn) {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
        } else {
            w.cwnd_cnt += self.acked as u32;
            self.acked = 1;
            let delta = w.cwnd_cnt.wrapping_mul(self.alpha) >> ALPHA_SHIFT;
            if delta >= w.cwnd {
                w.cwnd = (w.cwnd + delta / w.cwnd).min(w.clamp);
                w.cwnd_cnt = 0;
            }
        }
    }

    /// `tcp_illinois_acked`.
    fn pkts_acked(&mut self, _now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        self.acked = rs.pkts_acked.min(u16::MAX as u32) as u16;
        if rs.rtt_us < 0 {
            return;
        }
        let rtt = (rs.rtt_us as u64).min(RTT_MAX as u64) as u32;
        self.base_rtt = self.base_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt as u64;
    }

    /// `tcp_illinois_state`: an RTO goes back to Reno's parameters.
    fn set_state(&mut self, _now: Time, _from: CaState, to: CaState, _w: &mut Window, conn: &Conn) {
        if to == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(conn.snd_nxt);
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("illinois_alpha", self.alpha as f64 / ALPHA_SCALE as f64);
        out.num("illinois_beta", self.beta as f64 / BETA_SCALE as f64);
        out.num(
            "illinois_base_rtt_ms",
            if self.base_rtt >= 0x7fff_ffff {
                f64::NAN
            } else {
                self.base_rtt as f64 / 1000.0
            },
        );
        out.num("illinois_max_rtt_ms", self.max_rtt as f64 / 1000.0);
    }
}

/// The registry's entry for `cc = "illinois"` (`cc::Algorithm`).
impl crate::cc::Algorithm for IllinoisConfig {
    const NAME: &'static str = "illinois";
    const REFERENCE: &'static str =
        "Linux net/ipv4/tcp_illinois.c; Liu, Basar and Srikant, VALUETOOLS 2006";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Illinois(crate::cc::classic::Classic::new(
            IllinoisRule::new(self),
            init,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_ten_at_low_delay_and_falls_toward_three_tenths() {
        let mut r = IllinoisRule::new(&IllinoisConfig::default());
        assert_eq!(r.alpha_for(0, 10_000), ALPHA_MAX);
        // At da = dm: dm' / (dm' + dm' (amax - amin) / amin) = amin (up to rounding).
        let a = r.alpha_for(10_000, 10_000);
        assert!((ALPHA_MIN - 1..=ALPHA_MIN + 1).contains(&a), "{a}");
        // In between: convex, below the straight line.
        let mid = r.alpha_for(5_000, 10_000);
        assert!(
            mid > ALPHA_MIN && mid < (ALPHA_MAX + ALPHA_MIN) / 2,
            "{mid}"
        );
        // Once delay has been high, five low-delay RTTs before alpha max again.
        r.alpha = mid;
        for _ in 0..4 {
            assert_eq!(r.alpha_for(0, 10_000), mid);
        }
        assert_eq!(r.alpha_for(0, 10_000), ALPHA_MAX);
    }

    #[test]
    fn beta_is_an_eighth_at_low_delay_and_a_half_near_the_maximum() {
        assert_eq!(IllinoisRule::beta_for(500, 10_000), BETA_MIN);
        assert_eq!(IllinoisRule::beta_for(9_000, 10_000), BETA_MAX);
        // Linear between d2 = 1000 and d3 = 8000: at 4500, halfway.
        assert_eq!(
            IllinoisRule::beta_for(4_500, 10_000),
            (BETA_MIN + BETA_MAX) / 2
        );
    }
}
