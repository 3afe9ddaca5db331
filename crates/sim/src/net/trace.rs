//! Trace-driven links in Mahimahi's format (`mm-link`; the rules are those
//! of `LinkQueue::rationalize` in mahimahi's `src/frontend/link_queue.cc`):
//!
//! - the trace lists, one per line, the millisecond at which the link may
//!   deliver one packet's worth of bytes (a delivery opportunity); equal
//!   timestamps are several opportunities in that millisecond;
//! - an opportunity carries one full-size packet's bytes (`PACKET_SIZE`);
//!   they go to the head packet, a packet leaves once it has received its
//!   size, and what is left of the opportunity goes to the next packet (so
//!   small packets share one, and a packet larger than what is left waits
//!   for the next);
//! - an opportunity that finds the queue empty is lost: an idle link does
//!   not bank them;
//! - after the last timestamp the schedule starts again, shifted by it.
//!
//! Here the bytes are those every link of this simulator counts, frames with
//! their 14-byte Ethernet header: an opportunity carries 1514 (a full-size
//! frame) where Mahimahi's carries 1504 (a full-size IP packet and its TUN
//! header), the same full-size packet. Packets smaller than that share an
//! opportunity by their frame sizes (an ACK takes 66 of 1514 bytes here, 56
//! of 1504 in Mahimahi), which keeps a link's bytes within its capacity.

use crate::packet::{Packet, LINK_FRAMING};
use crate::units::{Dur, Rate, Time};
use serde::{Deserialize, Serialize};

/// Bytes one delivery opportunity carries: a full-size frame (Mahimahi's
/// `PACKET_SIZE`, 1504, is the same packet counted with its TUN header).
pub const OPPORTUNITY_BYTES: u64 = 1500 + LINK_FRAMING as u64;
/// The unit of a trace link's capacity: one opportunity's bytes.
pub const OPPORTUNITY_FRAME: u64 = OPPORTUNITY_BYTES;
/// Upper bound on a trace's timestamps (a 10-minute trace at 1 Gbit/s).
pub const MAX_OPPORTUNITIES: usize = 50_000_000;

const NS_PER_MS: u64 = 1_000_000;

/// What an opportunity's bytes must cover for `pkt` to leave: its frame.
pub fn packet_cost(pkt: &Packet) -> u64 {
    pkt.wire_len() as u64
}

/// A delivery-opportunity trace as a normalized scenario holds it: where it
/// came from (a file or a shipped trace's name) and its timestamps, ms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSpec {
    pub name: String,
    pub ms: Vec<u64>,
}

impl TraceSpec {
    /// Mahimahi's checks: timestamps present, never decreasing, and a
    /// trace that lasts a nonzero time.
    pub fn validate(&self) -> Result<(), String> {
        if self.ms.is_empty() {
            return Err("no timestamps: a trace lists, one per line, the millisecond of each delivery opportunity".into());
        }
        if self.ms.len() > MAX_OPPORTUNITIES {
            return Err(format!(
                "{} timestamps: at most {MAX_OPPORTUNITIES}",
                self.ms.len()
            ));
        }
        if let Some(k) = self.ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!(
                "timestamps must not decrease (line {}: {} after {})",
                k + 2,
                self.ms[k + 1],
                self.ms[k]
            ));
        }
        let last = *self.ms.last().expect("not empty");
        if last == 0 {
            return Err("the trace must last a nonzero time (its last timestamp is 0)".into());
        }
        if last > 86_400_000 {
            return Err(format!("{last} ms: a trace lasts at most a day"));
        }
        Ok(())
    }

    /// How long one pass of the schedule lasts (its last timestamp).
    pub fn period(&self) -> Dur {
        Dur(self.ms.last().copied().unwrap_or(0) * NS_PER_MS)
    }

    /// Opportunities at times `t` with `from <= t < to` (ns since the start).
    pub fn opportunities(&self, from: u64, to: u64) -> u64 {
        self.before(to).saturating_sub(self.before(from))
    }

    /// Opportunities strictly before `t` ns. Pass c of the schedule has its
    /// opportunity k at c x period + ms[k].
    fn before(&self, t: u64) -> u64 {
        let p = self.period().0;
        if p == 0 {
            return 0;
        }
        let n = self.ms.len() as u64;
        // Every opportunity of passes before c0 is at or before c0 x p <= t - p < t.
        let c0 = (t / p).saturating_sub(1);
        let mut count = c0 * n;
        for c in c0..=c0 + 1 {
            let base = c * p;
            if base > t {
                break;
            }
            let rel = t - base;
            count += self.ms.partition_point(|&m| m * NS_PER_MS < rel) as u64;
        }
        count
    }

    /// The mean rate: a full frame per opportunity over one pass.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.ms.len() as u128 * OPPORTUNITY_FRAME as u128 * 8 * 1_000_000_000;
        Rate((bits / self.period().0.max(1) as u128) as u64)
    }
}

/// The link's position in its trace.
#[derive(Clone, Debug)]
pub struct TraceShaper {
    ms: Vec<u64>,
    period: u64,
    next: usize,
    /// Start of the current pass, ns.
    base: u64,
    /// Bytes the packet in transit still needs (0: none in transit).
    pub(crate) in_transit: u64,
}

impl TraceShaper {
    pub fn new(spec: &TraceSpec) -> TraceShaper {
        TraceShaper {
            ms: spec.ms.clone(),
            period: spec.period().0,
            next: 0,
            base: 0,
            in_transit: 0,
        }
    }

    /// When the next opportunity comes.
    pub fn next_time(&self) -> Time {
        Time(self.base + self.ms[self.next] * NS_PER_MS)
    }

    /// Use up the next opportunity (the schedule repeats after its last).
    pub fn advance(&mut self) {
        self.next += 1;
        if self.next == self.ms.len() {
            self.next = 0;
            self.base += self.period;
        }
    }

    /// The link was idle until `now`: every opportunity up to and including
    /// `now` is lost (Mahimahi settles the link before it queues an arrival).
    pub fn skip_through(&mut self, now: Time) {
        if now.0 >= self.base + self.period {
            self.base += (now.0 - self.base) / self.period * self.period;
            self.next = 0;
        }
        while self.next_time() <= now {
            self.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ms: &[u64]) -> TraceSpec {
        TraceSpec {
            name: "t".into(),
            ms: ms.to_vec(),
        }
    }

    #[test]
    fn opportunities_repeat_shifted_by_the_last_timestamp() {
        let s = spec(&[1, 1, 3, 10]);
        let mut sh = TraceShaper::new(&s);
        let mut times = vec![];
        for _ in 0..9 {
            times.push(sh.next_time().0 / NS_PER_MS);
            sh.advance();
        }
        assert_eq!(times, [1, 1, 3, 10, 11, 11, 13, 20, 21]);
        // Counting agrees with walking the schedule.
        for (from, to) in [
            (0, 1),
            (0, 2),
            (1, 11),
            (0, 25),
            (10, 10),
            (3, 21),
            (0, 1_000),
        ] {
            let walked = {
                let mut sh = TraceShaper::new(&s);
                let mut n = 0;
                while sh.next_time().0 < to * NS_PER_MS {
                    n += u64::from(sh.next_time().0 >= from * NS_PER_MS);
                    sh.advance();
                }
                n
            };
            assert_eq!(
                s.opportunities(from * NS_PER_MS, to * NS_PER_MS),
                walked,
                "[{from}, {to}) ms"
            );
        }
    }

    #[test]
    fn an_idle_link_loses_the_opportunities_it_did_not_use() {
        let mut sh = TraceShaper::new(&spec(&[1, 1, 3, 10]));
        sh.skip_through(Time(3 * NS_PER_MS));
        assert_eq!(sh.next_time(), Time(10 * NS_PER_MS));
        sh.skip_through(Time(55 * NS_PER_MS + 1));
        assert_eq!(sh.next_time(), Time(60 * NS_PER_MS));
    }

    #[test]
    fn bad_traces_are_refused_and_the_mean_rate_counts_full_frames() {
        assert!(spec(&[]).validate().is_err());
        assert!(spec(&[0, 0]).validate().unwrap_err().contains("nonzero"));
        assert!(spec(&[2, 1]).validate().unwrap_err().contains("line 2"));
        // One opportunity per ms: 1514 bytes per ms, 12.112 Mbit/s.
        let s = spec(&(1..=1000).collect::<Vec<_>>());
        s.validate().unwrap();
        assert_eq!(s.mean_rate(), Rate(12_112_000));
    }
}
