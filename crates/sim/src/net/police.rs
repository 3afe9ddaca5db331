//! A token-bucket policer at a link's ingress: what conforms enters the
//! link's queue, what exceeds is dropped, never queued (Linux `act_police`,
//! `tcf_police_act` in net/sched/act_police.c, with `conform-exceed
//! pass/drop`; the policers of ISPs and transperf's `policer`). The kernel
//! keeps tokens as transmission time at the rate; here they are kept
//! exactly, in bit-nanoseconds (bits x 1e9: the rate refills `rate` of them
//! per nanosecond), at most `burst` worth: a packet conforms when the
//! tokens, refilled since the last conforming packet and capped at the
//! burst, cover its bits; only a conforming packet spends tokens (the
//! kernel leaves its state alone on exceed).

use crate::packet::Packet;
use crate::units::{Bytes, Rate, Time};
use serde::{Deserialize, Serialize};

/// A policer as a normalized scenario holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicerSpec {
    #[serde(rename = "rate_bps")]
    pub rate: Rate,
    /// The bucket's depth.
    #[serde(rename = "burst_bytes")]
    pub burst: Bytes,
}

#[derive(Clone, Debug)]
pub struct Policer {
    rate: u128,
    /// Bucket depth and tokens, in bit-nanoseconds.
    burst: u128,
    toks: u128,
    t_c: Time,
}

const NS: u128 = 1_000_000_000;

impl Policer {
    /// The bucket starts full (`tcf_police_init`: `tcfp_toks = burst`).
    pub fn new(spec: &PolicerSpec) -> Policer {
        let burst = spec.burst.0 as u128 * 8 * NS;
        Policer {
            rate: spec.rate.0 as u128,
            burst,
            toks: burst,
            t_c: Time::ZERO,
        }
    }

    /// Does `pkt`, arriving at `now`, conform? If so it spends its tokens.
    pub fn admit(&mut self, now: Time, pkt: &Packet) -> bool {
        let refill = now.since(self.t_c).0 as u128 * self.rate;
        let toks = (self.toks + refill).min(self.burst);
        let cost = pkt.wire_len() as u128 * 8 * NS;
        if toks < cost {
            return false;
        }
        self.toks = toks - cost;
        self.t_c = now;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_does() {
        // 12 Mbit/s (a 1514-byte frame per 1009.333 us), 3 frames of burst.
        let mut p = Policer::new(&PolicerSpec {
            rate: Rate(12_000_000),
            burst: Bytes(3 * 1514),
        });
        let pkt = Packet::data(0, 0, 1448);
        let passed = (0..10).filter(|_| p.admit(Time::ZERO, &pkt)).count();
        assert_eq!(passed, 3, "the bucket starts full, then drops");
        // A frame's worth of tokens after one transmission time, not before
        // (1009333.33 ns: not at 1009333, at 1009334).
        let tx = Rate(12_000_000).tx_time(Bytes(1514));
        assert!(!p.admit(Time(tx.0 - 1), &pkt));
        assert!(p.admit(Time(tx.0), &pkt));
        // An exceeding packet spends nothing: after a long idle time the
        // bucket is full again, never more.
        let later = Time(10_000_000_000);
        let passed = (0..10).filter(|_| p.admit(later, &pkt)).count();
        assert_eq!(passed, 3);
    }
}
