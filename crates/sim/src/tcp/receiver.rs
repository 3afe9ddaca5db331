//! The receiving side of a flow: cumulative ACK, SACK blocks (most recent
//! first, RFC 2018 and Linux `tcp_sack_new_ofo_skb`), delayed ACKs as Linux
//! does them (`__tcp_ack_snd_check`: quick-ACK mode for the first segments,
//! an ACK per two full segments, an immediate ACK while data is out of order
//! or when a hole fills, a 40 ms delayed-ACK timer otherwise), and the
//! RFC 3168 ECN echo.

use crate::packet::{flags, Ecn, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::units::{Dur, Time};

/// How the receiver reports CE marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnEcho {
    /// RFC 3168: ECE on every ACK from the first CE until the sender's CWR.
    Rfc3168,
    /// DCTCP-style (`tcp_dctcp.c` `dctcp_ece_ack_update`): ECE mirrors the CE
    /// bit of the latest data; when it flips, the data before the flip is
    /// ACKed at once with the old state. BBRv2/v3 expect this
    /// (`bbr_precise_ece_ack`).
    Accurate,
}

/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN` / `TCP_ATO_MIN` (HZ/25).
pub const DELACK_TIMEOUT: Dur = Dur::from_ms(40);

pub struct Receiver {
    flow: u32,
    echo: EcnEcho,
    /// Next segment expected (`rcv_nxt`).
    rcv_nxt: u32,
    /// Out-of-order ranges received above rcv_nxt, sorted, disjoint.
    ooo: Vec<(u32, u32)>,
    /// Start of recently changed ooo ranges, most recent first (SACK order).
    recent: Vec<u32>,
    /// Full segments received since the last ACK.
    unacked: u32,
    /// Remaining quick ACKs (`icsk_ack.quick`).
    quick: u32,
    started: bool,
    /// Pending delayed-ACK deadline.
    pub delack_at: Option<Time>,
    /// RFC 3168: echo ECE until the sender's CWR arrives.
    ece: bool,
    /// Segments received in total (duplicates included).
    pub segs_received: u64,
}

impl Receiver {
    pub fn new(flow: u32, echo: EcnEcho) -> Self {
        Receiver {
            flow,
            echo,
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            unacked: 0,
            quick: 0,
            started: false,
            delack_at: None,
            ece: false,
            segs_received: 0,
        }
    }

    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    /// A data segment arrived; returns the ACKs to send now (at most two:
    /// an accurate-ECN echo may first ACK the data before a CE flip).
    pub fn on_data(&mut self, now: Time, pkt: &Packet) -> [Option<Packet>; 2] {
        self.segs_received += 1;
        if !self.started {
            // First data: initialise the delayed-ACK engine in quick-ACK mode
            // (`tcp_event_data_recv` -> `tcp_incr_quickack`).
            self.started = true;
            self.quick = MAX_QUICKACKS;
        }
        let ce = pkt.ecn == Ecn::Ce;
        let mut flip_ack = None;
        match self.echo {
            EcnEcho::Rfc3168 => {
                if pkt.has_flag(flags::CWR) {
                    self.ece = false;
                }
                if ce {
                    if !self.ece {
                        // First CE: ACK quickly (`tcp_ecn_check_ce` enters quick-ACK mode).
                        self.quick = self.quick.max(2);
                    }
                    self.ece = true;
                }
            }
            EcnEcho::Accurate => {
                if ce != self.ece {
                    if self.unacked > 0 {
                        flip_ack = Some(self.make_ack());
                    }
                    self.ece = ce;
                    self.quick = self.quick.max(2);
                }
            }
        }
        let seq = pkt.seq;
        let mut immediate = false;
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            let had_ooo = !self.ooo.is_empty();
            // Pull in any out-of-order range that is now contiguous.
            if let Some(&(s, e)) = self.ooo.first() {
                if s <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(e);
                    self.ooo.remove(0);
                }
            }
            if had_ooo {
                // RFC 5681 4.2: ACK at once while holes exist or when one fills.
                immediate = true;
                self.recent.retain(|&s| s > self.rcv_nxt);
            }
            self.unacked += 1;
        } else if seq > self.rcv_nxt {
            self.insert_ooo(seq);
            immediate = true;
        } else {
            // Old duplicate: ACK at once (Linux sends a D-SACK; not modelled).
            immediate = true;
        }
        if immediate || self.unacked >= 2 || self.quick > 0 {
            return [flip_ack, Some(self.make_ack())];
        }
        if self.delack_at.is_none() {
            self.delack_at = Some(now + DELACK_TIMEOUT);
        }
        [flip_ack, None]
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack_timer(&mut self, now: Time) -> Option<Packet> {
        match self.delack_at {
            Some(t) if t <= now => {
                self.delack_at = None;
                (self.unacked > 0).then(|| self.make_ack())
            }
            _ => None,
        }
    }

    fn insert_ooo(&mut self, seq: u32) {
        let i = self.ooo.partition_point(|&(_, e)| e < seq);
        if i < self.ooo.len() && self.ooo[i].0 <= seq && seq < self.ooo[i].1 {
            // Duplicate of an out-of-order segment.
        } else if i < self.ooo.len() && self.ooo[i].1 == seq {
            self.ooo[i].1 = seq + 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == seq + 1 {
                self.ooo[i].1 = self.ooo[i + 1].1;
                let gone = self.ooo.remove(i + 1).0;
                self.recent.retain(|&s| s != gone);
            }
        } else if i < self.ooo.len() && self.ooo[i].0 == seq + 1 {
            let old = self.ooo[i].0;
            self.ooo[i].0 = seq;
            self.recent.retain(|&s| s != old);
        } else {
            self.ooo.insert(i, (seq, seq + 1));
        }
        let start = self.ooo[i].0;
        self.recent.retain(|&s| s != start);
        self.recent.insert(0, start);
        self.recent.truncate(8);
    }

    fn make_ack(&mut self) -> Packet {
        self.unacked = 0;
        self.delack_at = None;
        self.quick = self.quick.saturating_sub(1);
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        for &start in &self.recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            if let Ok(i) = self.ooo.binary_search_by(|&(s, _)| s.cmp(&start)) {
                blocks[n] = SackBlock {
                    start: self.ooo[i].0,
                    end: self.ooo[i].1,
                };
                n += 1;
            }
        }
        let mut ack = Packet::ack(self.flow, self.rcv_nxt, &blocks[..n]);
        if self.ece {
            ack.flags |= flags::ECE;
        }
        ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u32) -> Packet {
        Packet::data(0, seq, 1448)
    }

    #[test]
    fn acks_every_second_segment_after_quick_acks() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168);
        let mut acks = 0;
        for s in 0..16 {
            acks += r.on_data(Time(s as u64), &data(s))[1].is_some() as u32;
        }
        assert_eq!(
            acks, 16,
            "quick-ACK mode ACKs each of the first 16 segments"
        );
        let mut acks = 0;
        for s in 16..36 {
            acks += r.on_data(Time(s as u64), &data(s))[1].is_some() as u32;
        }
        assert_eq!(acks, 10);
    }

    #[test]
    fn odd_segment_waits_for_the_delayed_ack_timer() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168);
        r.quick = 0;
        r.started = true;
        assert!(r.on_data(Time(0), &data(0))[1].is_none());
        assert_eq!(r.delack_at, Some(Time(0) + DELACK_TIMEOUT));
        assert!(r.on_delack_timer(Time(1)).is_none());
        let ack = r.on_delack_timer(Time(0) + DELACK_TIMEOUT).unwrap();
        assert_eq!(ack.seq, 1);
    }

    #[test]
    fn holes_produce_sack_blocks_most_recent_first() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168);
        r.on_data(Time(0), &data(0));
        let a = r.on_data(Time(1), &data(2))[1].unwrap();
        assert_eq!(a.seq, 1);
        assert_eq!(a.sacks(), &[SackBlock { start: 2, end: 3 }]);
        r.on_data(Time(2), &data(3));
        let a = r.on_data(Time(3), &data(6))[1].unwrap();
        assert_eq!(
            a.sacks(),
            &[
                SackBlock { start: 6, end: 7 },
                SackBlock { start: 2, end: 4 }
            ]
        );
        // Filling the first hole advances the cumulative ACK past 2..4.
        let a = r.on_data(Time(4), &data(1))[1].unwrap();
        assert_eq!(a.seq, 4);
        assert_eq!(a.sacks(), &[SackBlock { start: 6, end: 7 }]);
    }

    #[test]
    fn accurate_echo_mirrors_ce_and_acks_at_each_flip() {
        let mut r = Receiver::new(0, EcnEcho::Accurate);
        r.quick = 0;
        r.started = true;
        let [a, b] = r.on_data(Time(0), &data(0));
        assert!(
            a.is_none() && b.is_none(),
            "one segment waits for the delayed ACK"
        );
        let mut p = data(1);
        p.ecn = Ecn::Ce;
        let [flip, ack] = r.on_data(Time(1), &p);
        // The flip ACKs segment 0 without ECE, then segment 1 with it.
        let flip = flip.unwrap();
        assert_eq!((flip.seq, flip.has_flag(flags::ECE)), (1, false));
        let ack = ack.unwrap();
        assert_eq!((ack.seq, ack.has_flag(flags::ECE)), (2, true));
        // No CWR needed: the next unmarked packet clears ECE.
        let [_, ack] = r.on_data(Time(2), &data(2));
        assert!(!ack.unwrap().has_flag(flags::ECE));
    }

    #[test]
    fn ce_is_echoed_until_cwr() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168);
        let mut p = data(0);
        p.ecn = Ecn::Ce;
        let a = r.on_data(Time(0), &p)[1].unwrap();
        assert!(a.has_flag(flags::ECE));
        let a = r.on_data(Time(1), &data(1))[1].unwrap();
        assert!(a.has_flag(flags::ECE));
        let mut p = data(2);
        p.flags |= flags::CWR;
        let a = r.on_data(Time(2), &p)[1].unwrap();
        assert!(!a.has_flag(flags::ECE));
    }
}
