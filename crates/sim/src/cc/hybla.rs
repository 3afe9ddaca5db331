//! TCP Hybla (Caini and Firrincieli 2004), as Linux net/ipv4/tcp_hybla.c:
//! a long-RTT flow grows as a reference flow of RTT `rtt0` (25 ms) would,
//! by scaling with rho = RTT / rtt0: slow start adds 2^rho - 1 per ACK,
//! congestion avoidance rho^2 / cwnd. The window starts at rho packets
//! (`hybla_init` replaces the initial window) and is clamped at 65535.

use super::classic::{is_cwnd_limited, srtt_us_x8, Window, WindowRule};
use super::reno::RenoRule;
use super::{CaState, CcInit, CcParams, CcState, Conn};
use crate::units::{format_duration, Dur, Time};
use serde::{Deserialize, Serialize};

/// `hybla_fraction`: 2^(i/8) << 7 for the fractional part of rho.
const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HyblaConfig {
    /// The reference RTT (Linux `rtt0`, whole ms, 25 by default).
    #[serde(with = "crate::units::dur_text")]
    pub rtt0: Dur,
}

impl Default for HyblaConfig {
    fn default() -> Self {
        HyblaConfig {
            rtt0: Dur::from_ms(25),
        }
    }
}

impl CcParams for HyblaConfig {
    fn validate(&self) -> Result<(), String> {
        let ms = self.rtt0.ns() / 1_000_000;
        if !self.rtt0.ns().is_multiple_of(1_000_000) || !(1..=10_000).contains(&ms) {
            return Err(format!(
                "rtt0 = {} is out of range: allowed whole milliseconds from 1ms to 10s",
                format_duration(self.rtt0)
            ));
        }
        Ok(())
    }
}

/// `struct hybla`.
pub struct HyblaRule {
    rtt0_ms: u32,
    hybla_en: bool,
    snd_cwnd_cents: u32,
    rho: u32,
    rho2: u32,
    /// rho << 3.
    rho_3ls: u32,
    /// rho^2 << 7.
    rho2_7ls: u32,
    /// Smallest srtt seen, 1/8 us.
    minrtt_us: u32,
}

impl HyblaRule {
    pub fn new(cfg: &HyblaConfig) -> Self {
        HyblaRule {
            rtt0_ms: (cfg.rtt0.ns() / 1_000_000) as u32,
            hybla_en: true,
            snd_cwnd_cents: 0,
            rho: 0,
            rho2: 0,
            rho_3ls: 0,
            rho2_7ls: 0,
            minrtt_us: 0,
        }
    }

    /// `hybla_recalc_param` from srtt in 1/8 us: rho = max(srtt / rtt0, 1).
    fn recalc(&mut self, srtt_x8: u32) {
        self.rho_3ls = (srtt_x8 / (self.rtt0_ms * 1000)).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = (self.rho_3ls.wrapping_mul(self.rho_3ls)) << 1;
        self.rho2 = self.rho2_7ls >> 7;
    }
}

impl WindowRule for HyblaRule {
    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    /// `hybla_init`: rho from the handshake's srtt, and cwnd = rho.
    fn init(&mut self, w: &mut Window, init: &CcInit) {
        w.clamp = 65535;
        let srtt = init
            .srtt
            .map_or(0, |d| (d.ns() / 125).min(u32::MAX as u64) as u32);
        self.recalc(srtt);
        self.minrtt_us = srtt;
        w.cwnd = self.rho;
    }

    /// `hybla_state`: Hybla's growth only in Open, Reno's otherwise.
    fn set_state(
        &mut self,
        _now: Time,
        _from: CaState,
        to: CaState,
        _w: &mut Window,
        _conn: &Conn,
    ) {
        self.hybla_en = to == CaState::Open;
    }

    /// `hybla_cong_avoid`.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        let srtt = srtt_us_x8(conn);
        if srtt < self.minrtt_us {
            self.recalc(srtt);
            self.minrtt_us = srtt;
        }
        if !is_cwnd_limited(w, conn) {
            return;
        }
        if !self.hybla_en {
            RenoRule::linux().cong_avoid(now, w, acked, conn);
            return;
        }
        if self.rho == 0 {
            self.recalc(srtt);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let slow_start = w.in_slow_start();
        let increment = if slow_start {
            // 2^rho - 1 packets per ACK, << 7.
            let frac = FRACTIONS
                .get(rho_fractions as usize)
                .copied()
                .unwrap_or(128);
            (1u32 << self.rho.min(16))
                .wrapping_mul(frac)
                .wrapping_sub(128)
        } else {
            // rho^2 / cwnd per ACK, << 7.
            let inc = self.rho2_7ls / w.cwnd;
            if inc < 128 {
                w.cwnd_cnt += 1;
            }
            inc
        };
        let odd = increment % 128;
        w.cwnd += increment >> 7;
        self.snd_cwnd_cents += odd;
        while self.snd_cwnd_cents >= 128 {
            w.cwnd += 1;
            self.snd_cwnd_cents -= 128;
            w.cwnd_cnt = 0;
        }
        // Not grown for a whole window: one packet.
        if increment == 0 && odd == 0 && w.cwnd_cnt >= w.cwnd {
            w.cwnd += 1;
            w.cwnd_cnt = 0;
        }
        if slow_start {
            w.cwnd = w.cwnd.min(w.ssthresh);
        }
        w.cwnd = w.cwnd.min(w.clamp);
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("hybla_rho", self.rho_3ls as f64 / 8.0);
    }
}

/// The registry's entry for `cc = "hybla"` (`cc::Algorithm`).
impl crate::cc::Algorithm for HyblaConfig {
    const NAME: &'static str = "hybla";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_hybla.c; Caini and Firrincieli, IJSCN 2004";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Hybla(crate::cc::classic::Classic::new(HyblaRule::new(self), init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{conn, init, win};

    #[test]
    fn the_window_starts_at_rho_and_slow_start_adds_two_to_the_rho_minus_one() {
        // srtt 200 ms over rtt0 25 ms: rho = 8.
        let mut r = HyblaRule::new(&HyblaConfig::default());
        let mut w = win(10, u32::MAX);
        r.init(&mut w, &init(Time::ZERO, Some(Dur::from_ms(200))));
        assert_eq!((r.rho, w.cwnd, w.clamp), (8, 8, 65535));
        let mut c = conn(8);
        c.srtt = Some(Dur::from_ms(200));
        r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        assert_eq!(w.cwnd, 8 + 255);
        // A short RTT gives rho = 1 (Reno's growth) and a window of one.
        let mut r = HyblaRule::new(&HyblaConfig::default());
        let mut w = win(10, u32::MAX);
        r.init(&mut w, &init(Time::ZERO, Some(Dur::from_ms(10))));
        assert_eq!((r.rho, w.cwnd), (1, 1));
    }

    #[test]
    fn congestion_avoidance_adds_rho_squared_per_window() {
        let mut r = HyblaRule::new(&HyblaConfig::default());
        let mut w = win(100, 50);
        r.init(&mut w, &init(Time::ZERO, Some(Dur::from_ms(100))));
        assert_eq!(r.rho, 4);
        w.cwnd = 100;
        w.ssthresh = 50;
        let c = conn(100);
        for _ in 0..100 {
            r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        }
        // rho^2 = 16 packets per window of ACKs at cwnd 100; a little less
        // as cwnd grows within the window and increments truncate to 1/128.
        assert!((113..=116).contains(&w.cwnd), "{}", w.cwnd);
    }
}
