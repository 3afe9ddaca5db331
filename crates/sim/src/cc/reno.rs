//! Reno, as Linux `tcp_reno_ssthresh` and `tcp_reno_cong_avoid`
//! (net/ipv4/tcp_cong.c): halve on loss, one packet per RTT otherwise.

use super::classic::{Window, WindowRule};
use super::{CcParams, Conn};
use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenoConfig {
    /// HyStart++ (RFC 9406) in the initial slow start. Written into the
    /// normalized scenario only when on, so existing scenarios keep their hash.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hystart_plus_plus: bool,
}

impl CcParams for RenoConfig {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

pub struct RenoRule {
    /// Segments of window per segment of growth a round: 1, as Linux (2
    /// only in a deliberately wrong model, `mutant::Mutant::RenoAiDouble`).
    ai_div: u32,
}

impl RenoRule {
    /// `tcp_reno_cong_avoid` as the other algorithms call it.
    pub fn linux() -> Self {
        RenoRule { ai_div: 1 }
    }

    pub fn new(_cfg: &RenoConfig) -> Self {
        let double = crate::mutant::is(crate::mutant::Mutant::RenoAiDouble);
        RenoRule {
            ai_div: if double { 2 } else { 1 },
        }
    }
}

impl WindowRule for RenoRule {
    /// `tcp_reno_ssthresh`: max(cwnd / 2, 2).
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, _now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        let Some(acked) = w.limited_slow_start(acked, conn) else {
            return;
        };
        let cwnd = w.cwnd;
        w.cong_avoid_ai((cwnd / self.ai_div).max(1), acked);
    }
}

/// The registry's entry for `cc = "reno"` (`cc::Algorithm`).
impl crate::cc::Algorithm for RenoConfig {
    const NAME: &'static str = "reno";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_cong.c (tcp_reno_*); RFC 5681";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        if self.hystart_plus_plus {
            let h = crate::cc::hystart_pp::WithHystartPP {
                inner: RenoRule::new(self),
                h: Default::default(),
            };
            crate::cc::AnyCc::RenoPP(crate::cc::classic::Classic::new(h, init))
        } else {
            crate::cc::AnyCc::Reno(crate::cc::classic::Classic::new(RenoRule::new(self), init))
        }
    }
}
