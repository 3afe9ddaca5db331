//! Tail drop: Linux `bfifo` (byte limit) and `pfifo` (packet limit),
//! net/sched/sch_fifo.c. A packet is accepted while the backlog including it
//! stays within the limit.

use super::{DropCause, Limit, Qdisc, QdiscCtx};
use crate::packet::Packet;
use crate::units::{Bytes, Time};
use std::collections::VecDeque;

pub struct Fifo {
    limit: Limit,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    pub fn new(limit: Limit) -> Self {
        Fifo {
            limit,
            q: VecDeque::with_capacity(1024),
            bytes: 0,
        }
    }

    /// Would `pkt` fit (`bfifo_enqueue`: backlog + len <= limit; `pfifo_enqueue`: qlen < limit)?
    pub fn fits(&self, pkt: &Packet) -> bool {
        match self.limit {
            Limit::Bytes(b) => self.bytes + pkt.wire_len() as u64 <= b,
            Limit::Packets(n) => (self.q.len() as u32) < n,
        }
    }

    pub fn push(&mut self, pkt: Packet) {
        self.bytes += pkt.wire_len() as u64;
        self.q.push_back(pkt);
    }

    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.wire_len() as u64;
        Some(p)
    }

    pub fn peek(&self) -> Option<&Packet> {
        self.q.front()
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

impl Qdisc for Fifo {
    fn enqueue(&mut self, _now: Time, pkt: Packet, ctx: &mut QdiscCtx) {
        if self.fits(&pkt) {
            self.push(pkt);
        } else {
            ctx.drop(pkt, DropCause::Overflow);
        }
    }

    fn dequeue(&mut self, _now: Time, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.pop()
    }

    fn backlog_bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    fn backlog_packets(&self) -> u32 {
        self.q.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::QdiscEvent;
    use crate::rng::Rng;

    #[test]
    fn byte_limit_drops_what_does_not_fit() {
        let mut q = Fifo::new(Limit::Bytes(3000));
        let mut ev = Vec::new();
        let mut rng = Rng::stream(0, "q");
        let mut ctx = QdiscCtx {
            events: &mut ev,
            rng: &mut rng,
        };
        for i in 0..3 {
            q.enqueue(Time(0), Packet::data(0, i, 1448), &mut ctx);
        }
        // 1514 + 1514 > 3000: only one full packet fits.
        assert_eq!(q.backlog_packets(), 1);
        assert_eq!(ev.len(), 2);
        assert!(matches!(
            ev[0],
            QdiscEvent::Drop {
                cause: DropCause::Overflow,
                ..
            }
        ));
    }

    #[test]
    fn packet_limit_counts_packets() {
        let mut q = Fifo::new(Limit::Packets(2));
        let mut ev = Vec::new();
        let mut rng = Rng::stream(0, "q");
        let mut ctx = QdiscCtx {
            events: &mut ev,
            rng: &mut rng,
        };
        for i in 0..3 {
            q.enqueue(Time(0), Packet::data(0, i, 100), &mut ctx);
        }
        assert_eq!(q.backlog_packets(), 2);
        assert_eq!(q.dequeue(Time(1), &mut ctx).unwrap().seq, 0);
        assert_eq!(q.backlog_bytes(), Bytes(166));
    }
}
