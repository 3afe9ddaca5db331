//! Scalable TCP (Kelly 2003), as Linux net/ipv4/tcp_scalable.c: one packet
//! of growth per min(cwnd, 100) ACKed packets (so 1% per RTT above 100
//! packets) and a cut of 1/8 on loss: a loss is recovered in a number of
//! RTTs that does not depend on the window.

use super::classic::{Window, WindowRule};
use super::{CcParams, Conn};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// `TCP_SCALABLE_AI_CNT`: above this window growth is 1/100 per ACK.
pub const AI_CNT: u32 = 100;
/// `TCP_SCALABLE_MD_SCALE`: the cut is cwnd >> 3.
const MD_SCALE: u32 = 3;

/// Scalable has no module parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScalableConfig {}

impl CcParams for ScalableConfig {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

pub struct ScalableRule;

impl WindowRule for ScalableRule {
    /// `tcp_scalable_ssthresh`: cwnd - cwnd/8, at least 2.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd - (w.cwnd >> MD_SCALE)).max(2)
    }

    /// `tcp_scalable_cong_avoid`.
    fn cong_avoid(&mut self, _now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        let Some(acked) = w.limited_slow_start(acked, conn) else {
            return;
        };
        let cnt = w.cwnd.min(AI_CNT);
        w.cong_avoid_ai(cnt, acked);
    }
}

/// The registry's entry for `cc = "scalable"` (`cc::Algorithm`).
impl crate::cc::Algorithm for ScalableConfig {
    const NAME: &'static str = "scalable";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_scalable.c; Kelly, CCR 2003";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Scalable(crate::cc::classic::Classic::new(ScalableRule, init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{conn, win};

    #[test]
    fn the_cut_is_an_eighth_and_growth_one_percent_per_ack_above_100() {
        let mut r = ScalableRule;
        let c = conn(1000);
        assert_eq!(r.ssthresh(Time::ZERO, &win(800, 10), &c), 700);
        assert_eq!(r.ssthresh(Time::ZERO, &win(3, 10), &c), 3);
        assert_eq!(r.ssthresh(Time::ZERO, &win(2, 10), &c), 2);
        // cwnd 1000: +1 per 100 ACKed packets, so +10 per window.
        let mut w = win(1000, 500);
        for _ in 0..1000 {
            r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        }
        assert_eq!(w.cwnd, 1010);
        // Below 100 packets it is Reno's +1 per window.
        let mut w = win(50, 20);
        for _ in 0..50 {
            r.cong_avoid(Time::ZERO, &mut w, 1, &c);
        }
        assert_eq!(w.cwnd, 51);
    }
}
