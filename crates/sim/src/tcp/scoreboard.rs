//! The retransmission queue: one record per segment sent and not yet
//! cumulatively ACKed, indexed by sequence number, and the set of SACKed
//! ranges above snd_una. Every per-ACK operation costs in proportion to what
//! the ACK newly covers, never to the number of packets in flight.

use crate::units::Time;
use std::collections::VecDeque;

pub mod seg {
    /// SACKed by the receiver (`TCPCB_SACKED_ACKED`).
    pub const SACKED: u8 = 1;
    /// Marked lost (`TCPCB_LOST`).
    pub const LOST: u8 = 2;
    /// A retransmission is in flight (`TCPCB_SACKED_RETRANS`).
    pub const RETRANS: u8 = 4;
    /// Retransmitted at least once (`TCPCB_EVER_RETRANS`).
    pub const EVER_RETRANS: u8 = 8;
    /// The delivery-rate snapshot is still valid (`tx.delivered_mstamp != 0`).
    pub const SNAPSHOT: u8 = 16;
    /// Ends an application write: sent (and re-sent) with PSH (`TCPHDR_PSH`).
    pub const PSH: u8 = 32;
}

/// What `tcp_rate_skb_sent` records in a packet when it is sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxSnapshot {
    pub delivered: u64,
    pub delivered_ce: u64,
    pub delivered_mstamp: Time,
    pub first_tx_mstamp: Time,
    /// `tp->lost` at send time (BBRv3 tree).
    pub lost: u64,
    /// Packets in flight just after this one was sent (BBRv3 tree).
    pub in_flight: u32,
    pub is_app_limited: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct Seg {
    /// Time of the latest transmission.
    pub tx_time: Time,
    pub flags: u8,
    pub tx: TxSnapshot,
}

impl Seg {
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// Segments `snd_una..snd_nxt`, in sequence order.
#[derive(Default)]
pub struct Scoreboard {
    base: u32,
    segs: VecDeque<Seg>,
}

impl Scoreboard {
    /// Where the oldest entry lies (a prefetch hint, null when none).
    pub fn front_addr(&self) -> *const u8 {
        crate::hint::addr_of(self.segs.front())
    }

    pub fn base(&self) -> u32 {
        self.base
    }
    pub fn end(&self) -> u32 {
        self.base + self.segs.len() as u32
    }
    pub fn len(&self) -> u32 {
        self.segs.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn contains(&self, seq: u32) -> bool {
        seq >= self.base && seq < self.end()
    }
    pub fn get(&self, seq: u32) -> &Seg {
        &self.segs[(seq - self.base) as usize]
    }
    pub fn get_mut(&mut self, seq: u32) -> &mut Seg {
        &mut self.segs[(seq - self.base) as usize]
    }
    pub fn push(&mut self, s: Seg) {
        self.segs.push_back(s);
    }
    /// Remove the head segment (cumulatively ACKed).
    pub fn pop_front(&mut self) -> Option<Seg> {
        let s = self.segs.pop_front()?;
        self.base += 1;
        Some(s)
    }
    pub fn front(&self) -> Option<&Seg> {
        self.segs.front()
    }
    pub fn back_seq(&self) -> Option<u32> {
        (!self.segs.is_empty()).then(|| self.end() - 1)
    }
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut Seg)> {
        let base = self.base;
        self.segs
            .iter_mut()
            .enumerate()
            .map(move |(i, s)| (base + i as u32, s))
    }
}

/// Disjoint SACKed ranges `[start, end)`, sorted, all above snd_una.
#[derive(Default, Debug)]
pub struct SackRanges {
    r: Vec<(u32, u32)>,
}

impl SackRanges {
    /// Add `[start, end)`; push the parts not covered before onto `fresh`.
    pub fn add(&mut self, start: u32, end: u32, fresh: &mut Vec<(u32, u32)>) {
        if start >= end {
            return;
        }
        // First range that ends at or after `start` (could touch or overlap).
        let i = self.r.partition_point(|&(_, e)| e < start);
        let mut cur = start;
        let mut j = i;
        let mut new_start = start;
        let mut new_end = end;
        while j < self.r.len() && self.r[j].0 <= end {
            let (s, e) = self.r[j];
            if s > cur {
                fresh.push((cur, s.min(end)));
            }
            cur = cur.max(e);
            new_start = new_start.min(s);
            new_end = new_end.max(e);
            j += 1;
        }
        if cur < end {
            fresh.push((cur, end));
        }
        self.r.splice(i..j, std::iter::once((new_start, new_end)));
    }

    /// Forget everything below `una`.
    pub fn trim_below(&mut self, una: u32) {
        let k = self.r.partition_point(|&(_, e)| e <= una);
        self.r.drain(..k);
        if let Some(first) = self.r.first_mut() {
            first.0 = first.0.max(una);
        }
    }

    pub fn clear(&mut self) {
        self.r.clear();
    }

    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.r
    }

    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_ranges_report_only_new_coverage() {
        let mut s = SackRanges::default();
        let mut fresh = Vec::new();
        s.add(10, 20, &mut fresh);
        assert_eq!(fresh, vec![(10, 20)]);
        fresh.clear();
        s.add(15, 25, &mut fresh);
        assert_eq!(fresh, vec![(20, 25)]);
        fresh.clear();
        s.add(30, 40, &mut fresh);
        s.add(5, 45, &mut fresh);
        assert_eq!(fresh, vec![(30, 40), (5, 10), (25, 30), (40, 45)]);
        assert_eq!(s.ranges(), &[(5, 45)]);
        fresh.clear();
        s.add(5, 45, &mut fresh);
        assert!(fresh.is_empty());
    }

    #[test]
    fn adjacent_ranges_merge_and_trim() {
        let mut s = SackRanges::default();
        let mut fresh = Vec::new();
        s.add(10, 20, &mut fresh);
        s.add(20, 30, &mut fresh);
        s.add(40, 50, &mut fresh);
        assert_eq!(s.ranges(), &[(10, 30), (40, 50)]);
        s.trim_below(25);
        assert_eq!(s.ranges(), &[(25, 30), (40, 50)]);
        s.trim_below(45);
        assert_eq!(s.ranges(), &[(45, 50)]);
    }
}
