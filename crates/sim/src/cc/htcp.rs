//! H-TCP (Leith and Shorten, PFLDnet 2004), as Linux net/ipv4/tcp_htcp.c:
//! the additive increase grows with the time since the last congestion
//! event (alpha = 1 + 10 (t - 1 s) + ((t - 1 s) / 2)^2 past the first
//! second, scaled by the RTT so flows of different RTTs grow alike), and
//! the decrease follows the queueing: beta = minRTT / maxRTT in [0.5, 0.8],
//! back to 0.5 when the achieved throughput moved by more than 20%.

use super::classic::{is_cwnd_limited, jiffies, usecs_to_jiffies, Window, WindowRule, HZ};
use super::{CaState, CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// `ALPHA_BASE`: 1.0 << 7.
const ALPHA_BASE: u32 = 1 << 7;
/// `BETA_MIN`, `BETA_MAX`: 0.5 and 0.8, << 7.
const BETA_MIN: u8 = 1 << 6;
const BETA_MAX: u8 = 102;

/// H-TCP's module parameters; defaults are Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HtcpConfig {
    /// Scale alpha by RTT / 100 ms (clamped to 0.5..10).
    pub use_rtt_scaling: bool,
    /// Reset beta to 0.5 when the throughput changed by more than 20%.
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpConfig {
    fn default() -> Self {
        HtcpConfig {
            use_rtt_scaling: true,
            use_bandwidth_switch: true,
        }
    }
}

impl CcParams for HtcpConfig {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `between(seq1, seq2, seq3)` of include/net/tcp.h: seq2 <= seq1 <= seq3, wrapping.
fn between(s1: u32, s2: u32, s3: u32) -> bool {
    s3.wrapping_sub(s2) >= s1.wrapping_sub(s2)
}

/// `struct htcp`; times in jiffies, RTTs in jiffies.
pub struct HtcpRule {
    use_rtt_scaling: bool,
    use_bandwidth_switch: bool,
    /// << 7.
    alpha: u32,
    /// << 7.
    beta: u8,
    modeswitch: bool,
    pkts_acked: u16,
    packetcount: u32,
    min_rtt: u32,
    max_rtt: u32,
    last_cong: u32,
    undo_last_cong: u32,
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    lasttime: u32,
}

impl HtcpRule {
    /// `htcp_init`.
    pub fn new(cfg: &HtcpConfig, init: &CcInit) -> Self {
        HtcpRule {
            use_rtt_scaling: cfg.use_rtt_scaling,
            use_bandwidth_switch: cfg.use_bandwidth_switch,
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            modeswitch: false,
            pkts_acked: 1,
            packetcount: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_cong: jiffies(init.now),
            undo_last_cong: 0,
            min_b: 0,
            max_b: 0,
            old_max_b: 0,
            bi: 0,
            lasttime: 0,
        }
    }

    fn cong_time(&self, now: Time) -> u32 {
        jiffies(now).wrapping_sub(self.last_cong)
    }

    /// `htcp_reset`: a congestion event starts now (the undo fields are
    /// kept as Linux keeps them; the simulator has no undo).
    fn reset(&mut self, now: Time) {
        self.undo_last_cong = self.last_cong;
        self.last_cong = jiffies(now);
    }

    /// `measure_rtt`, srtt being the ACK's RTT sample in jiffies.
    fn measure_rtt(&mut self, srtt: u32, prior: CaState) {
        if self.min_rtt > srtt || self.min_rtt == 0 {
            self.min_rtt = srtt;
        }
        if prior == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            // 20 ms: msecs_to_jiffies(20).
            if self.max_rtt < srtt && srtt <= self.max_rtt + 20 {
                self.max_rtt = srtt;
            }
        }
    }

    /// `htcp_beta_update`.
    fn beta_update(&mut self, min_rtt: u32, max_rtt: u32) {
        if self.use_bandwidth_switch {
            let (max_b, old) = (self.max_b, self.old_max_b);
            self.old_max_b = self.max_b;
            if !between(
                5u32.wrapping_mul(max_b),
                4u32.wrapping_mul(old),
                6u32.wrapping_mul(old),
            ) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        // 10 ms: msecs_to_jiffies(10).
        if self.modeswitch && min_rtt > 10 && max_rtt != 0 {
            self.beta = ((min_rtt << 7) / max_rtt).clamp(BETA_MIN as u32, BETA_MAX as u32) as u8;
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// `htcp_alpha_update`.
    fn alpha_update(&mut self, now: Time) {
        let min_rtt = self.min_rtt;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(now);
        if diff > HZ {
            diff -= HZ;
            factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / HZ)) / HZ;
        }
        if self.use_rtt_scaling && min_rtt != 0 {
            let scale = ((HZ << 3) / (10 * min_rtt)).clamp(1 << 2, 10 << 3);
            factor = (factor << 3) / scale;
            if factor == 0 {
                factor = 1;
            }
        }
        self.alpha = 2 * factor * ((1 << 7) - self.beta as u32);
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    /// `htcp_param_update`: at a congestion event.
    fn param_update(&mut self, now: Time) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt);
        self.alpha_update(now);
        // Slowly fading memory of maxRTT.
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt + ((max_rtt - min_rtt) * 95) / 100;
        }
    }
}

impl WindowRule for HtcpRule {
    /// `htcp_recalc_ssthresh`.
    fn ssthresh(&mut self, now: Time, w: &Window, _conn: &Conn) -> u32 {
        self.param_update(now);
        ((w.cwnd as u64 * self.beta as u64) >> 7).max(2) as u32
    }

    /// `htcp_cong_avoid`: cwnd += alpha / cwnd per ACKed packet.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        if !is_cwnd_limited(w, conn) {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
        } else {
            if (w.cwnd_cnt.wrapping_mul(self.alpha)) >> 7 >= w.cwnd {
                if w.cwnd < w.clamp {
                    w.cwnd += 1;
                }
                w.cwnd_cnt = 0;
                self.alpha_update(now);
            } else {
                w.cwnd_cnt += self.pkts_acked as u32;
            }
            self.pkts_acked = 1;
        }
    }

    /// `measure_achieved_throughput`.
    fn pkts_acked(&mut self, now: Time, w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        let prior = rs.prior_ca_state;
        let jif = jiffies(now);
        if prior == CaState::Open {
            self.pkts_acked = rs.pkts_acked.min(u16::MAX as u32) as u16;
        }
        if rs.rtt_us > 0 {
            self.measure_rtt(
                usecs_to_jiffies(rs.rtt_us.min(u32::MAX as i64) as u32),
                prior,
            );
        }
        if !self.use_bandwidth_switch {
            return;
        }
        if !matches!(prior, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = jif;
            return;
        }
        self.packetcount = self.packetcount.wrapping_add(rs.pkts_acked);
        let a = if self.alpha >> 7 != 0 {
            self.alpha >> 7
        } else {
            1
        };
        if self.packetcount >= w.cwnd.wrapping_sub(a)
            && jif.wrapping_sub(self.lasttime) >= self.min_rtt
            && self.min_rtt > 0
        {
            let cur_bi = self.packetcount.wrapping_mul(HZ) / jif.wrapping_sub(self.lasttime);
            if self.cong_time(now) / self.min_rtt <= 3 {
                // Just after a backoff.
                self.min_b = cur_bi;
                self.max_b = cur_bi;
                self.bi = cur_bi;
            } else {
                self.bi = (3u32.wrapping_mul(self.bi).wrapping_add(cur_bi)) / 4;
                if self.bi > self.max_b {
                    self.max_b = self.bi;
                }
                if self.min_b > self.max_b {
                    self.min_b = self.max_b;
                }
            }
            self.packetcount = 0;
            self.lasttime = jif;
        }
    }

    /// `htcp_state`.
    fn set_state(&mut self, now: Time, _from: CaState, to: CaState, _w: &mut Window, _conn: &Conn) {
        match to {
            CaState::Open => {
                if self.undo_last_cong != 0 {
                    self.last_cong = jiffies(now);
                    self.undo_last_cong = 0;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(now),
            CaState::Disorder => {}
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("htcp_alpha", self.alpha as f64 / 128.0);
        out.num("htcp_beta", self.beta as f64 / 128.0);
        out.num("htcp_min_rtt_ms", self.min_rtt as f64);
        out.num("htcp_max_rtt_ms", self.max_rtt as f64);
    }
}

/// The registry's entry for `cc = "htcp"` (`cc::Algorithm`).
impl crate::cc::Algorithm for HtcpConfig {
    const NAME: &'static str = "htcp";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_htcp.c; Leith and Shorten, PFLDnet 2004";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Htcp(crate::cc::classic::Classic::new(
            HtcpRule::new(self, init),
            init,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{conn, init, win};
    use crate::units::Dur;

    fn rule() -> HtcpRule {
        HtcpRule::new(&HtcpConfig::default(), &init(Time::ZERO, None))
    }

    #[test]
    fn alpha_grows_with_the_time_since_the_last_congestion_event() {
        let mut r = rule();
        r.min_rtt = 100; // 100 ms: RTT scaling 1.0
                         // Within the first second: Reno's alpha, 2 (1 - beta) = 1 with beta = 0.5.
        r.alpha_update(Time::ZERO + Dur::from_ms(500));
        assert_eq!(r.alpha, 128);
        // 3 s: Delta = 2 s, 1 + 10 x 2 + (2/2)^2 = 22.
        r.alpha_update(Time::ZERO + Dur::from_ms(3000));
        assert_eq!(r.alpha, 2 * 22 * 64);
        // RTT scaling: 20 ms grows a fifth as fast per RTT (0.2 = 8/40).
        r.min_rtt = 20;
        r.alpha_update(Time::ZERO + Dur::from_ms(3000));
        assert_eq!(r.alpha, 2 * ((22 << 3) / 40) * 64);
    }

    #[test]
    fn beta_is_min_over_max_rtt_within_half_and_four_fifths() {
        let mut r = rule();
        r.use_bandwidth_switch = false;
        let c = conn(100);
        let w = win(1000, 500);
        // The first event only switches the adaptive mode on.
        r.min_rtt = 100;
        r.max_rtt = 140;
        assert_eq!(r.ssthresh(Time::ZERO, &w, &c), 500);
        r.max_rtt = 140;
        assert_eq!(
            r.ssthresh(Time::ZERO, &w, &c),
            (1000 * ((100 << 7) / 140)) >> 7
        );
        // A deep queue: beta floors at 0.5; none: caps at 0.8.
        r.max_rtt = 400;
        assert_eq!(r.ssthresh(Time::ZERO, &w, &c), 500);
        r.max_rtt = 101;
        assert_eq!(r.ssthresh(Time::ZERO, &w, &c), (1000 * 102) >> 7);
    }
}
