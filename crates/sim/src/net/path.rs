//! A one-way path: a serializing link (the sender's access link, or the ACK
//! path's) followed by a propagation delay, with optional random loss (where
//! the papers' NetEm sat, before the bottleneck) and jitter that never
//! reorders. Packets leave in the order they entered, so the path schedules
//! only its head packet: one pending event per path, however many packets
//! it carries.

use super::impair::{Jitter, LossModel};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::units::{Bytes, Dur, Rate, Time};
use std::collections::VecDeque;

/// Random impairments of a path, with their own random stream.
pub struct Impairments {
    pub loss: LossModel,
    pub jitter: Jitter,
    pub rng: Rng,
}

pub struct Path {
    rate: Rate,
    delay: Dur,
    imp: Option<Impairments>,
    /// Packets this path lost at random.
    pub lost: u64,
    /// When the serializer finishes the packet it is sending.
    ser_free: Time,
    /// Exit time of the packet that entered last (exits never reorder).
    last_exit: Time,
    q: VecDeque<(Time, Packet)>,
}

impl Path {
    pub fn new(rate: Rate, delay: Dur) -> Self {
        Path {
            rate,
            delay,
            imp: None,
            lost: 0,
            ser_free: Time::ZERO,
            last_exit: Time::ZERO,
            q: VecDeque::new(),
        }
    }

    pub fn with_impairments(mut self, imp: Impairments) -> Self {
        let trivial = matches!(imp.loss, LossModel::None) && matches!(imp.jitter, Jitter::None);
        self.imp = (!trivial).then_some(imp);
        self
    }

    pub fn delay(&self) -> Dur {
        self.delay
    }

    pub fn set_delay(&mut self, d: Dur) {
        self.delay = d;
    }

    /// Put a packet on the path at `now`; true if it is now the head (the
    /// caller must schedule an event at `head_time()`). A packet lost at
    /// random leaves no trace but the `lost` count.
    pub fn push(&mut self, now: Time, pkt: Packet) -> bool {
        let start = self.ser_free.max(now);
        let done = start + self.rate.tx_time(Bytes(pkt.wire_len as u64));
        self.ser_free = done;
        let exit = match &mut self.imp {
            None => (done + self.delay).max(self.last_exit),
            Some(imp) => {
                if imp.loss.lost(&mut imp.rng) {
                    self.lost += 1;
                    return false;
                }
                imp.jitter
                    .exit_time(done, done + self.delay, self.last_exit, &mut imp.rng)
            }
        };
        self.last_exit = exit;
        self.q.push_back((exit, pkt));
        self.q.len() == 1
    }

    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|&(t, _)| t)
    }

    /// The head packet, if it has arrived by `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<Packet> {
        match self.q.front() {
            Some(&(t, _)) if t <= now => self.q.pop_front().map(|(_, p)| p),
            _ => None,
        }
    }

    /// Give back queue memory beyond what the packets on the path need.
    pub fn shrink(&mut self) {
        self.q.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Packet> {
        self.q.iter().map(|(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_then_delays_in_order() {
        // 1 Gbps: a 1514-byte packet takes 12.112 us; plus 10 ms of delay.
        let mut p = Path::new(Rate(1_000_000_000), Dur::from_ms(10));
        assert!(p.push(Time(0), Packet::data(0, 0, 1448)));
        assert!(!p.push(Time(0), Packet::data(0, 1, 1448)));
        assert_eq!(p.head_time(), Some(Time(12_112 + 10_000_000)));
        assert!(p.pop_due(Time(10_000_000)).is_none());
        assert_eq!(p.pop_due(Time(10_012_112)).unwrap().seq, 0);
        assert_eq!(p.head_time(), Some(Time(2 * 12_112 + 10_000_000)));
    }
}
