//! Test helpers shared by the disciplines' tests: a context holder and a
//! tiny deterministic driver that feeds periodic sources into a qdisc and
//! drains it with a link of fixed rate.

#![allow(dead_code)] // each helper serves some of the disciplines' tests

use super::{DropCause, Limit, Qdisc, QdiscCtx, QdiscEnv, QdiscEvent};
use crate::packet::{Ecn, Packet, DEFAULT_MSS};
use crate::rng::Rng;
use crate::units::{Bytes, Dur, Rate, Time};
use std::collections::BTreeMap;

/// The environment of a 100 Mbps bottleneck with Ethernet framing.
pub fn env(limit: Limit) -> QdiscEnv {
    QdiscEnv {
        limit,
        rate: Rate(100_000_000),
        mtu_wire: 1514,
        ecn: false,
    }
}

/// A qdisc with its event list and random stream.
pub struct Bench<Q: Qdisc> {
    pub q: Q,
    pub events: Vec<QdiscEvent>,
    pub rng: Rng,
}

impl<Q: Qdisc> Bench<Q> {
    pub fn new(q: Q, seed: u64) -> Self {
        Bench {
            q,
            events: Vec::new(),
            rng: Rng::stream(seed, "qdisc"),
        }
    }

    pub fn enqueue(&mut self, now: Time, mut pkt: Packet) {
        pkt.enqueued = now;
        let mut ctx = QdiscCtx {
            events: &mut self.events,
            rng: &mut self.rng,
        };
        self.q.enqueue(now, pkt, &mut ctx);
    }

    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let mut ctx = QdiscCtx {
            events: &mut self.events,
            rng: &mut self.rng,
        };
        self.q.dequeue(now, &mut ctx)
    }

    pub fn drops(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, QdiscEvent::Drop { .. }))
            .count()
    }

    pub fn aqm_drops(&self) -> usize {
        self.events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    QdiscEvent::Drop {
                        cause: DropCause::Aqm,
                        ..
                    }
                )
            })
            .count()
    }

    pub fn marks(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, QdiscEvent::Mark { .. }))
            .count()
    }
}

impl<Q: Qdisc> Bench<Q> {
    /// Every drop and mark so far as (flow, seq), a mark as (flow,
    /// `u32::MAX`): the fingerprint of a run for determinism tests.
    pub fn trail(&self) -> Vec<(u32, u32)> {
        self.events
            .iter()
            .map(|e| match e {
                QdiscEvent::Drop { pkt, .. } => (pkt.flow, pkt.seq),
                QdiscEvent::Mark { flow } => (*flow, u32::MAX),
            })
            .collect()
    }
}

/// Determinism: `run(seed)` drives a fresh qdisc and returns its
/// [`Bench::trail`]. Two runs with `seed` give the same trail of at least
/// `min_events`; where the discipline draws random numbers, `other_seed`
/// gives another trail.
pub fn assert_same_seed_same_drops(
    run: impl Fn(u64) -> Vec<(u32, u32)>,
    seed: u64,
    other_seed: Option<u64>,
    min_events: usize,
) {
    let a = run(seed);
    assert!(a.len() >= min_events, "{} events", a.len());
    assert_eq!(a, run(seed));
    if let Some(other) = other_seed {
        assert_ne!(a, run(other));
    }
}

/// A full-size data packet of `flow` between two hosts.
pub fn pkt(flow: u32, seq: u32) -> Packet {
    Packet::data(flow, seq, DEFAULT_MSS)
}

pub fn ect(mut p: Packet) -> Packet {
    p.ecn = Ecn::Ect0;
    p
}

/// A periodic source: one packet every `every`, from `start` on.
#[derive(Clone, Copy, Debug)]
pub struct Source {
    pub flow: u32,
    pub src_host: u16,
    pub dst_host: u16,
    pub every: Dur,
    pub start: Time,
    pub payload: u32,
    pub ecn: Ecn,
}

impl Source {
    pub fn new(flow: u32, every: Dur) -> Self {
        Source {
            flow,
            src_host: 0,
            dst_host: 0,
            every,
            start: Time::ZERO,
            payload: DEFAULT_MSS,
            ecn: Ecn::NotEct,
        }
    }
}

/// What a driven run measured, per flow.
#[derive(Default, Debug)]
pub struct Outcome {
    pub delivered_bytes: BTreeMap<u32, u64>,
    pub delivered_pkts: BTreeMap<u32, u64>,
    /// (flow, sojourn) of every delivered packet, in departure order.
    pub sojourns: Vec<(u32, Dur)>,
    pub drops: BTreeMap<u32, u64>,
    pub marks: BTreeMap<u32, u64>,
    /// Largest backlog seen right after an enqueue.
    pub max_backlog: Bytes,
    pub max_backlog_pkts: u32,
}

impl Outcome {
    pub fn bytes(&self, flow: u32) -> u64 {
        self.delivered_bytes.get(&flow).copied().unwrap_or(0)
    }
    pub fn sojourns_of(&self, flow: u32) -> Vec<Dur> {
        self.sojourns
            .iter()
            .filter(|(f, _)| *f == flow)
            .map(|&(_, d)| d)
            .collect()
    }
}

/// Feed `sources` into the qdisc and drain it with a link of `rate` until
/// `end`. The link asks for a packet whenever it is idle, and again when a
/// packet arrives at an idle link; a packet takes its serialization time.
pub fn drive<Q: Qdisc>(b: &mut Bench<Q>, sources: &[Source], rate: Rate, end: Time) -> Outcome {
    let mut out = Outcome::default();
    let mut next: Vec<Time> = sources.iter().map(|s| s.start).collect();
    let mut seq: Vec<u32> = vec![0; sources.len()];
    let mut link_free = Time::ZERO;
    loop {
        // Next arrival (lowest index first on ties).
        let (ai, at) = next
            .iter()
            .enumerate()
            .min_by_key(|&(i, t)| (*t, i))
            .map(|(i, t)| (i, *t))
            .expect("at least one source");
        let busy = b.q.backlog_packets() > 0;
        // The link acts first when it frees up no later than the next arrival.
        if busy && link_free <= at {
            let now = link_free;
            if now >= end {
                break;
            }
            let before = b.events.len();
            let got = b.dequeue(now);
            tally_events(&b.events[before..], &mut out);
            match got {
                Some(p) => {
                    *out.delivered_bytes.entry(p.flow).or_default() += p.wire_len() as u64;
                    *out.delivered_pkts.entry(p.flow).or_default() += 1;
                    out.sojourns.push((p.flow, now.since(p.enqueued)));
                    link_free = now + rate.tx_time(Bytes(p.wire_len() as u64));
                }
                None => {
                    // Held back: ask again when the qdisc says, or at the next arrival.
                    link_free = match b.q.next_ready() {
                        Some(t) if t > now => t.min(at.max(now + Dur(1))),
                        _ => at.max(now + Dur(1)),
                    };
                }
            }
            continue;
        }
        if at >= end {
            break;
        }
        let s = sources[ai];
        let mut p = Packet::data(s.flow, seq[ai], s.payload);
        p.src_host = s.src_host;
        p.dst_host = s.dst_host;
        p.ecn = s.ecn;
        seq[ai] += 1;
        next[ai] = at + s.every;
        let before = b.events.len();
        b.enqueue(at, p);
        tally_events(&b.events[before..], &mut out);
        out.max_backlog = out.max_backlog.max(b.q.backlog_bytes());
        out.max_backlog_pkts = out.max_backlog_pkts.max(b.q.backlog_packets());
        if link_free < at {
            link_free = at;
        }
    }
    out
}

fn tally_events(evs: &[QdiscEvent], out: &mut Outcome) {
    for e in evs {
        match e {
            QdiscEvent::Drop { pkt, .. } => *out.drops.entry(pkt.flow).or_default() += 1,
            QdiscEvent::Mark { flow } => *out.marks.entry(*flow).or_default() += 1,
        }
    }
}

/// Mean of durations in seconds.
pub fn mean_secs(v: &[Dur]) -> f64 {
    v.iter().map(|d| d.secs_f64()).sum::<f64>() / v.len().max(1) as f64
}
