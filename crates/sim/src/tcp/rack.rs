//! RACK-TLP loss detection (RFC 8985), as Linux net/ipv4/tcp_recovery.c:
//! a packet is lost once a packet sent after it has been delivered and more
//! than the latest RTT plus a reordering window has passed since it was sent.
//!
//! Packets are kept in transmission order (`tsorted`); the scan stops at the
//! first packet that is not yet overdue, so each ACK costs only what it
//! marks. Entries are removed lazily: a packet that was since delivered or
//! retransmitted (its `tx_time` no longer matches) is skipped when reached.

use super::scoreboard::{seg, Scoreboard};
use crate::units::{Dur, Time};
use std::collections::VecDeque;

#[derive(Default)]
pub struct Rack {
    /// Send time of the most recently sent delivered packet (`rack.mstamp`).
    mstamp: Time,
    /// Its sequence number (`rack.end_seq`, as a segment index).
    end_seq: u32,
    /// RTT of the latest delivered packet (`rack.rtt_us`), ns.
    rtt: Dur,
    /// A delivery advanced the RACK state since the last detection.
    advanced: bool,
    /// Outstanding packets in transmission order: (seq, tx_time).
    tsorted: VecDeque<(u32, Time)>,
}

/// `tcp_rack_sent_after`.
fn sent_after(t1: Time, t2: Time, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// A packet was (re)transmitted at `t`.
    pub fn on_transmit(&mut self, seq: u32, t: Time) {
        self.tsorted.push_back((seq, t));
    }

    /// `tcp_rack_advance`, for each newly delivered packet.
    pub fn on_delivered(
        &mut self,
        now: Time,
        seq: u32,
        tx_time: Time,
        was_retrans: bool,
        min_rtt: Option<Dur>,
    ) {
        let rtt = now.since(tx_time);
        // An ACK faster than min RTT for a retransmitted packet probably
        // acknowledges the original: ambiguous, skip it.
        if was_retrans && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(tx_time, self.mstamp, seq, self.end_seq) {
            self.mstamp = tx_time;
            self.end_seq = seq;
        }
    }

    pub fn take_advanced(&mut self) -> bool {
        std::mem::take(&mut self.advanced)
    }

    /// Is the entry (seq, t) still an outstanding, not-lost transmission?
    fn live(sb: &Scoreboard, seq: u32, t: Time) -> bool {
        sb.contains(seq) && {
            let s = sb.get(seq);
            // Lost and not yet retransmitted: no longer in flight.
            s.tx_time == t && !s.has(seg::SACKED) && (!s.has(seg::LOST) || s.has(seg::RETRANS))
        }
    }

    /// Where the oldest outstanding packet's entry lies (what `prune`
    /// reads first; a prefetch hint, null when none).
    pub fn front_addr(&self) -> *const u8 {
        crate::hint::addr_of(self.tsorted.front())
    }

    /// Drop entries at the front that were since delivered or re-sent
    /// (called after each cumulative ACK, so the queue stays as long as the
    /// packets in flight).
    pub fn prune(&mut self, sb: &Scoreboard) {
        while let Some(&(seq, t)) = self.tsorted.front() {
            if Self::live(sb, seq, t) {
                break;
            }
            self.tsorted.pop_front();
        }
    }

    /// `tcp_rack_detect_loss`: mark overdue packets lost (through `mark`);
    /// returns when the next packet becomes overdue, if one is pending.
    pub fn detect_loss(
        &mut self,
        now: Time,
        reo_wnd: Dur,
        sb: &Scoreboard,
        mut mark: impl FnMut(u32),
    ) -> Option<Time> {
        while let Some(&(seq, t)) = self.tsorted.front() {
            if !Self::live(sb, seq, t) {
                self.tsorted.pop_front();
                continue;
            }
            if !sent_after(self.mstamp, t, self.end_seq, seq) {
                // Sent after the newest delivered packet: nothing to conclude.
                return None;
            }
            let deadline = t + self.rtt + reo_wnd;
            if deadline <= now {
                self.tsorted.pop_front();
                mark(seq);
            } else {
                return Some(deadline);
            }
        }
        None
    }

    /// The RTT RACK uses, for `tcp_timeout_mark_lost`.
    pub fn rtt(&self) -> Dur {
        self.rtt
    }

    /// Forget all entries (after an RTO marks everything lost).
    pub fn clear_queue(&mut self) {
        self.tsorted.clear();
    }

    pub fn queue_len(&self) -> usize {
        self.tsorted.len()
    }
}

/// `tcp_rack_reo_wnd`: no reordering window in recovery or once three
/// packets are SACKed (the DUPACK threshold), else min_rtt / 4 capped by srtt.
pub fn reo_wnd(in_recovery: bool, sacked_out: u32, min_rtt: Option<Dur>, srtt: Option<Dur>) -> Dur {
    const DUPTHRESH: u32 = 3;
    if in_recovery || sacked_out >= DUPTHRESH {
        return Dur::ZERO;
    }
    let quarter = min_rtt.map_or(Dur::ZERO, |m| Dur(m.0 / 4));
    match srtt {
        Some(s) => quarter.min(s),
        None => quarter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::scoreboard::{Seg, TxSnapshot};

    /// With cumulative ACKs only (no SACK, so no loss detection runs), the
    /// transmission queue stays as long as the packets in flight.
    #[test]
    fn queue_stays_bounded_by_packets_in_flight() {
        let mut rack = Rack::default();
        let mut sb = Scoreboard::default();
        for q in 0..100_000u32 {
            let t = Time(q as u64 * 1000);
            sb.push(Seg {
                tx_time: t,
                flags: 0,
                tx: TxSnapshot::default(),
            });
            rack.on_transmit(q, t);
            if q >= 50 {
                sb.pop_front();
                rack.prune(&sb);
            }
            assert!(
                rack.queue_len() <= 51,
                "{} entries at {q}",
                rack.queue_len()
            );
        }
    }
}
