//! A one-way path: a serializing link (the sender's access link, or the ACK
//! path's) followed by a propagation delay, with optional random loss (where
//! the papers' NetEm sat, before the bottleneck) and jitter that never
//! reorders. Packets leave in the order they entered, so the path schedules
//! only its head packet: one pending event per path, however many packets
//! it carries.

use super::host::HostNoise;
use super::impair::{Jitter, JitterConfig, LossConfig, LossModel};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::scenario::FlowSpec;
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
    /// Boxed: most paths have none, and its size would sit between the
    /// fields every packet reads.
    imp: Option<Box<Impairments>>,
    /// The hosts' turnaround added to each packet (the simulator's ACK paths).
    host: Option<HostNoise>,
    /// Data segments and ACKs this path lost at random (what `segs_sent`
    /// and the ACK counts are made of, so conservation holds per flow).
    pub lost: u64,
    /// SYNs and SYN-ACKs it lost (the handshake is not in `segs_sent`).
    pub lost_handshake: u64,
    /// When the serializer finishes the packet it is sending.
    ser_free: Time,
    /// Exit time of the packet that entered last (exits never reorder).
    last_exit: Time,
    q: VecDeque<(Time, Packet)>,
}

/// The forward (data) and reverse (ACK) paths of flow `f` as the scenario
/// describes them: its own delays, loss and jitter, each direction with its
/// own random stream (`flow<id>.fwd`, `flow<id>.rev`, from the run's
/// `seed`). `access` is the rate of the serializing link in front of the
/// delay (the flow's access link in the simulator; `Rate::INF` where real
/// links serialize, as in the Linux backend's bottleneck).
pub fn flow_paths(f: &FlowSpec, seed: u64, access: Rate) -> (Path, Path) {
    let imp = |loss: &LossConfig, jitter: &Option<JitterConfig>, name: &str| {
        Impairments::new(
            loss,
            jitter.as_ref(),
            Rng::stream(seed, &format!("flow{}.{name}", f.id)),
        )
    };
    (
        Path::new(access, f.fwd_delay).with_impairments(imp(&f.loss, &f.jitter, "fwd")),
        Path::new(access, f.rev_delay).with_impairments(imp(&f.ack_loss, &f.ack_jitter, "rev")),
    )
}

impl Impairments {
    /// A path's loss and jitter as the (validated) scenario gives them,
    /// drawing from `rng`.
    pub fn new(loss: &LossConfig, jitter: Option<&JitterConfig>, rng: Rng) -> Impairments {
        Impairments {
            loss: loss.build().expect("validated"),
            jitter: jitter.map_or(Jitter::None, |j| j.build().expect("validated")),
            rng,
        }
    }
}

impl Path {
    pub fn new(rate: Rate, delay: Dur) -> Self {
        Path {
            rate,
            delay,
            imp: None,
            host: None,
            lost: 0,
            lost_handshake: 0,
            ser_free: Time::ZERO,
            last_exit: Time::ZERO,
            q: VecDeque::new(),
        }
    }

    pub fn with_impairments(mut self, imp: Impairments) -> Self {
        let trivial = matches!(imp.loss, LossModel::None) && matches!(imp.jitter, Jitter::None);
        self.imp = (!trivial).then(|| Box::new(imp));
        self
    }

    /// Add the hosts' turnaround (`net::host`) to every packet's exit.
    pub fn with_host_noise(mut self, noise: HostNoise) -> Self {
        self.host = Some(noise);
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
        let done = start + self.rate.tx_time(Bytes(pkt.wire_len() as u64));
        self.ser_free = done;
        let delay = match &mut self.host {
            None => self.delay,
            Some(h) => self.delay + h.ack_turnaround(),
        };
        let exit = match &mut self.imp {
            None => (done + delay).max(self.last_exit),
            Some(imp) => {
                if imp.loss.lost(&mut imp.rng) {
                    if pkt.is_handshake() {
                        self.lost_handshake += 1;
                    } else {
                        self.lost += 1;
                    }
                    return false;
                }
                imp.jitter
                    .exit_time(done, done + delay, self.last_exit, &mut imp.rng)
            }
        };
        self.last_exit = exit;
        self.q.push_back((exit, pkt));
        self.q.len() == 1
    }

    /// Where the head packet lies (a prefetch hint; null when empty).
    pub fn head_addr(&self) -> *const u8 {
        crate::hint::addr_of(self.q.front())
    }

    /// Where the next packet pushed will lie, about (a prefetch hint; null
    /// when empty).
    pub fn tail_addr(&self) -> *const u8 {
        self.q.back().map_or(std::ptr::null(), |e| {
            (e as *const (Time, Packet)).wrapping_add(1).cast()
        })
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
