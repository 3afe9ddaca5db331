//! sch_cake.c's ACK filter: `cake_ack_filter` and `cake_tcph_sack_compare`.

use super::Cake;
use crate::packet::{flags, Kind, Packet};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckFilterMode {
    None,
    Conservative,
    Aggressive,
}

/// `before()` / `after()` on sequence numbers (here segment numbers).
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
fn seq_after(a: u32, b: u32) -> bool {
    seq_before(b, a)
}

/// ACKs and SYN-ACKs travel against the data.
fn reverse_direction(k: Kind) -> bool {
    matches!(k, Kind::Ack | Kind::SynAck)
}

/// `cake_tcph_sack_compare`: is `b`'s SACK information at least `a`'s?
/// -1: `a` has something `b` lacks (or a D-SACK), 0: the same, 1: `b` has more.
fn sack_compare(a: &Packet, b: &Packet) -> i32 {
    let (sa, sb) = (a.sacks(), b.sacks());
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for x in sa {
        if seq_before(x.start, a.seq) {
            return -1; // D-SACK: always keep
        }
        bytes_a = bytes_a.wrapping_add(x.end.wrapping_sub(x.start));
        let mut found = false;
        for y in sb {
            if first {
                bytes_b = bytes_b.wrapping_add(y.end.wrapping_sub(y.start));
            }
            if !seq_after(y.start, x.start) && !seq_before(y.end, x.end) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    if bytes_b > bytes_a {
        1
    } else {
        0
    }
}

impl Cake {
    /// `cake_ack_filter`: after `pkt` joined the tail of queue `q`, find an
    /// older pure ACK of the same connection and direction that it makes
    /// redundant: no more cumulative ACK, SACK blocks covered by the new
    /// one's, same ECE/CWR flags as the other eligible ACKs. Conservative
    /// mode drops the oldest eligible ACK only once two are found;
    /// aggressive mode also drops a single eligible ACK sitting right in
    /// front of the new one with the same ECE/CWR. Returns its position.
    pub(super) fn ack_filter(q: &VecDeque<Packet>, aggressive: bool) -> Option<usize> {
        let n = q.len();
        if n < 2 {
            return None;
        }
        let t = &q[n - 1];
        // The trigger needs ACK without SYN; in our model only pure ACKs
        // can share a 5-tuple with other pure ACKs (data flows the other way).
        if t.kind != Kind::Ack {
            return None;
        }
        let ecn_bits = |p: &Packet| p.flags & (flags::ECE | flags::CWR);
        let mut elig: Option<usize> = None;
        let mut elig_flags = 0;
        let mut num_found = 0;
        for (i, c) in q.iter().enumerate().take(n - 1) {
            let same_tuple = c.flow == t.flow
                && c.src_host == t.src_host
                && c.dst_host == t.dst_host
                && reverse_direction(c.kind);
            if !same_tuple {
                continue;
            }
            // An ECE/CWR change ends the run of droppable ACKs before it.
            if elig.is_some() && ecn_bits(c) != elig_flags {
                elig = None;
                num_found -= 1;
            }
            // Only pure ACKs (no SYN, no data), not acking beyond the trigger.
            if c.kind != Kind::Ack || c.payload != 0 || seq_after(c.seq, t.seq) {
                continue;
            }
            let sack = sack_compare(c, t);
            if sack < 0 || (c.seq == t.seq && sack == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(i);
                elig_flags = ecn_bits(c);
            }
            num_found += 1;
            if num_found > 1 {
                return elig;
            }
        }
        match elig {
            Some(i) if aggressive && i == n - 2 && elig_flags == ecn_bits(t) => Some(i),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SackBlock;
    use crate::qdisc::cake::hash::CAKE_QUEUES;
    use crate::qdisc::cake::tests::cake;
    use crate::qdisc::testkit::{pkt, Bench};
    use crate::qdisc::{Limit, Qdisc};
    use crate::units::{Bytes, Time};

    fn ack(flow: u32, cum: u32, sack: &[SackBlock]) -> Packet {
        let mut a = Packet::ack(flow, cum, sack);
        a.src_host = 5;
        a.dst_host = 6;
        a
    }

    fn queued(b: &Bench<Cake>) -> Vec<u32> {
        let t = &b.q.tins[0];
        (0..CAKE_QUEUES)
            .flat_map(|i| t.flows[i].q.iter().map(|p| p.seq))
            .collect()
    }

    #[test]
    fn conservative_ack_filter_drops_the_oldest_of_two_redundant_acks() {
        // cake_ack_filter: drop only once two eligible ACKs are queued.
        let mut b = Bench::new(
            cake(
                serde_json::json!({"ack_filter": "conservative"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        b.enqueue(Time(0), ack(3, 1, &[]));
        b.enqueue(Time(0), ack(3, 2, &[]));
        assert_eq!(b.drops(), 0);
        b.enqueue(Time(0), ack(3, 3, &[]));
        assert_eq!(queued(&b), vec![2, 3]);
        b.enqueue(Time(0), ack(3, 4, &[]));
        assert_eq!(queued(&b), vec![3, 4]);
        assert_eq!(b.aqm_drops(), 2);
        assert_eq!(b.q.backlog_packets(), 2);
        assert_eq!(b.q.backlog_bytes(), Bytes(2 * 66));
    }

    #[test]
    fn aggressive_ack_filter_drops_a_single_redundant_ack_in_front() {
        let mut b = Bench::new(
            cake(
                serde_json::json!({"ack_filter": "aggressive"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        b.enqueue(Time(0), ack(3, 1, &[]));
        b.enqueue(Time(0), ack(3, 2, &[]));
        assert_eq!(queued(&b), vec![2]);
        // A data packet of the same flow never triggers the filter.
        b.enqueue(Time(0), pkt(3, 9));
        assert_eq!(b.drops(), 1);
    }

    #[test]
    fn ack_filter_keeps_acks_with_information_the_new_one_lacks() {
        // cake_tcph_sack_compare: an older ACK whose SACK blocks the new one
        // does not cover, a D-SACK, or a change of ECE/CWR is kept.
        let blk = |s, e| SackBlock { start: s, end: e };
        let conservative = || {
            Bench::new(
                cake(
                    serde_json::json!({"ack_filter": "aggressive"}),
                    Limit::Bytes(1_000_000),
                ),
                1,
            )
        };
        // Same cumulative ACK, new SACK covers and extends the old: drop.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 9)]));
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 10)]));
        assert_eq!(b.drops(), 1);
        // New SACK block elsewhere: the old one says something new: keep.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 9)]));
        b.enqueue(Time(0), ack(3, 5, &[blk(11, 12)]));
        assert_eq!(b.drops(), 0);
        // D-SACK (block below the cumulative ACK): keep.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(2, 3)]));
        b.enqueue(Time(0), ack(3, 6, &[blk(2, 3)]));
        assert_eq!(b.drops(), 0);
        // ECE differs between the two: keep.
        let mut b = conservative();
        let mut a = ack(3, 5, &[]);
        a.flags = flags::ECE;
        b.enqueue(Time(0), a);
        b.enqueue(Time(0), ack(3, 6, &[]));
        assert_eq!(b.drops(), 0);
        // An ACK of another connection is never a candidate.
        let mut b = conservative();
        b.enqueue(Time(0), ack(4, 5, &[]));
        b.enqueue(Time(0), ack(3, 6, &[]));
        assert_eq!(b.drops(), 0);
    }
}
