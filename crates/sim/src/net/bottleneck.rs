//! The bottleneck router's egress: a token-bucket shaper (Linux `sch_tbf`:
//! tokens counted in nanoseconds of transmission time, at most `burst`
//! worth) in front of a queue discipline. A packet leaves once its tokens
//! are there; with a one-packet burst that is exactly a link of the shaped
//! rate. Like TBF (`qdisc_peek_dequeued`), the head packet is taken from the
//! queue discipline before its tokens are available and waits beside it;
//! it is reported as part of the backlog.

use crate::metrics::hist::Histogram;
use crate::metrics::schema::QueueRow;
use crate::net::police::{Policer, PolicerSpec};
use crate::net::trace::{packet_cost, TraceShaper, TraceSpec, OPPORTUNITY_BYTES};
use crate::packet::{Kind, Packet};
use crate::qdisc::{AnyQdisc, DropCause, Qdisc, QdiscCtx, QdiscEvent};
use crate::rng::Rng;
use crate::units::{Bytes, Dur, Rate, Time};

/// Per-flow counters kept at the bottleneck.
#[derive(Clone, Debug, Default)]
pub struct FlowQueueStats {
    /// Bytes of this flow in the queue now.
    pub backlog_bytes: u64,
    /// Packets of this flow in the queue now (waiting-for-tokens packet included).
    pub backlog_pkts: u64,
    /// Data segments of this flow in the queue now (no SYN), for conservation.
    pub backlog_data_pkts: u64,
    /// Data segments dropped; a dropped SYN counts in `drops_handshake`
    /// only, as the handshake is not in `segs_sent` (issue 10).
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    /// Data segments a policer at the link's ingress dropped.
    pub drops_policer: u64,
    /// Pure ACKs this link dropped (a flow whose ACKs cross it: two-way
    /// traffic), in its queue or by its random loss.
    pub acks_dropped: u64,
    /// Data segments the link's random loss (`loss`, after its queue) lost.
    pub drops_random: u64,
    pub drops_handshake: u64,
    pub marks: u64,
}

pub struct Bottleneck {
    rate: Rate,
    /// TBF `buffer`: the bucket depth as transmission time.
    bucket: Dur,
    tokens: Dur,
    t_c: Time,
    qdisc: AnyQdisc,
    rng: Rng,
    events: Vec<QdiscEvent>,
    held: Option<Packet>,
    /// Pending wake-up, if one is scheduled.
    pub wake: Option<Time>,
    pub flows: Vec<FlowQueueStats>,
    /// Packets and wire bytes that left through the bottleneck.
    pub departures: u64,
    pub wire_bytes_out: u64,
    pub drops: u64,
    /// Sojourn times of departed packets, ns.
    pub sojourn: Histogram,
    /// Sojourn of packets departed since the last sample: sum, max, count.
    interval_sojourn: (u64, u64, u64),
    /// `wire_bytes_out` at the last sample.
    wire_bytes_sampled: u64,
    /// Largest backlog seen, bytes and packets (for the queue-limit invariant).
    pub max_backlog: (u64, u32),
    /// When set, dropped packets are kept in `dropped` for the caller (the
    /// user-space bottleneck frees their frames); the simulator leaves it off.
    pub keep_dropped: bool,
    pub dropped: Vec<Packet>,
    /// A trace-driven link (`net::trace`) sends at its trace's delivery
    /// opportunities instead of the token bucket's rate.
    trace: Option<TraceShaper>,
    /// A policer at the link's ingress (`net::police`).
    policer: Option<Policer>,
    /// Bytes added to every packet's length in the link's time (framing of
    /// the link layer: Linux `tc ... overhead`, CAKE's `overhead`).
    overhead: u64,
}

impl Bottleneck {
    pub fn new(rate: Rate, burst: Bytes, qdisc: AnyQdisc, rng: Rng, nflows: usize) -> Self {
        let bucket = rate.tx_time(burst);
        Bottleneck {
            rate,
            bucket,
            tokens: bucket,
            t_c: Time::ZERO,
            qdisc,
            rng,
            events: Vec::new(),
            held: None,
            wake: None,
            flows: vec![FlowQueueStats::default(); nflows],
            departures: 0,
            wire_bytes_out: 0,
            drops: 0,
            sojourn: Histogram::default(),
            interval_sojourn: (0, 0, 0),
            wire_bytes_sampled: 0,
            max_backlog: (0, 0),
            keep_dropped: false,
            dropped: Vec::new(),
            trace: None,
            policer: None,
            overhead: 0,
        }
    }

    /// Count `bytes` more per packet in the link's transmission time (and a
    /// trace link's opportunities), not in its wire bytes.
    pub fn with_overhead(mut self, bytes: u64) -> Self {
        self.overhead = bytes;
        self
    }

    /// Police arrivals at the link's ingress: what exceeds is dropped.
    pub fn with_policer(mut self, spec: &PolicerSpec) -> Self {
        self.policer = Some(Policer::new(spec));
        self
    }

    /// Send at the delivery opportunities of `trace` (Mahimahi's link)
    /// instead of the token bucket.
    pub fn with_trace(mut self, trace: &TraceSpec) -> Self {
        self.trace = Some(TraceShaper::new(trace));
        self
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    pub fn set_rate(&mut self, now: Time, rate: Rate) {
        // Settle tokens at the old rate, then convert bucket and tokens to
        // the new rate keeping their bytes: a link whose rate changes does
        // not gain credit by the change (kept as time, the tokens of a slow
        // link became many more bytes on a fast one, and the bottleneck
        // sent above its capacity).
        let burst_bytes = self.rate.bytes_in(self.bucket);
        self.refill(now);
        let token_bytes = self.rate.bytes_in(self.tokens);
        self.rate = rate;
        self.bucket = rate.tx_time(burst_bytes);
        self.tokens = rate.tx_time(token_bytes).min(self.bucket);
    }

    fn refill(&mut self, now: Time) {
        self.tokens = (self.tokens + now.since(self.t_c)).min(self.bucket);
        self.t_c = now;
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.qdisc.backlog_bytes().0 + self.held.map_or(0, |p| p.wire_len() as u64)
    }

    pub fn backlog_packets(&self) -> u32 {
        self.qdisc.backlog_packets() + self.held.is_some() as u32
    }

    /// The queue table's row for the interval ending now (`time_s`), whose
    /// capacity is `capacity_bits` (the scheduled rate integrated over the
    /// interval), and a new interval begun. Both backends sample through
    /// this, so their queue tables mean the same.
    pub fn interval_row(&mut self, link: &str, time_s: f64, capacity_bits: f64) -> QueueRow {
        let (sum, max, n) = std::mem::take(&mut self.interval_sojourn);
        let sent = self.wire_bytes_out - self.wire_bytes_sampled;
        self.wire_bytes_sampled = self.wire_bytes_out;
        let (mut drops_overflow, mut drops_aqm, mut drops_policer, mut marks) = (0, 0, 0, 0);
        for f in &self.flows {
            drops_overflow += f.drops_overflow;
            drops_aqm += f.drops_aqm;
            drops_policer += f.drops_policer;
            marks += f.marks;
        }
        QueueRow {
            time_s,
            link: link.to_string(),
            backlog_bytes: self.backlog_bytes() as i64,
            backlog_pkts: self.backlog_packets() as i64,
            sojourn_mean_ms: if n == 0 {
                f64::NAN
            } else {
                sum as f64 / n as f64 / 1e6
            },
            sojourn_max_ms: if n == 0 { f64::NAN } else { max as f64 / 1e6 },
            drops: self.drops as i64,
            drops_overflow: drops_overflow as i64,
            drops_aqm: drops_aqm as i64,
            drops_policer: drops_policer as i64,
            marks: marks as i64,
            wire_utilization: sent as f64 * 8.0 / capacity_bits,
        }
    }

    /// Take what the qdisc reported during an enqueue or a dequeue.
    #[inline]
    fn drain_events(&mut self) {
        // Most enqueues and dequeues report nothing: no call for them.
        if !self.events.is_empty() {
            self.account_events();
        }
    }

    /// Count the drops and marks the qdisc reported against their flows.
    #[inline(never)]
    fn account_events(&mut self) {
        for ev in self.events.drain(..) {
            match ev {
                QdiscEvent::Drop { pkt, cause } => {
                    let f = &mut self.flows[pkt.flow as usize];
                    f.backlog_bytes -= pkt.wire_len() as u64;
                    f.backlog_pkts -= 1;
                    match pkt.kind {
                        Kind::Syn | Kind::SynAck => f.drops_handshake += 1,
                        Kind::Ack => f.acks_dropped += 1,
                        Kind::Data => {
                            f.backlog_data_pkts -= 1;
                            match cause {
                                DropCause::Overflow => f.drops_overflow += 1,
                                DropCause::Aqm => f.drops_aqm += 1,
                            }
                        }
                    }
                    self.drops += 1;
                    if self.keep_dropped {
                        self.dropped.push(pkt);
                    }
                }
                QdiscEvent::Mark { flow } => self.flows[flow as usize].marks += 1,
            }
        }
    }

    /// A packet arrives at the router.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet) {
        pkt.enqueued = now;
        if let Some(p) = &mut self.policer {
            if !p.admit(now, &pkt) {
                let f = &mut self.flows[pkt.flow as usize];
                match pkt.kind {
                    Kind::Syn | Kind::SynAck => f.drops_handshake += 1,
                    Kind::Ack => f.acks_dropped += 1,
                    Kind::Data => f.drops_policer += 1,
                }
                self.drops += 1;
                if self.keep_dropped {
                    self.dropped.push(pkt);
                }
                return;
            }
        }
        if let Some(tr) = &mut self.trace {
            if self.held.is_none() && self.qdisc.backlog_packets() == 0 {
                tr.skip_through(now);
            }
        }
        let f = &mut self.flows[pkt.flow as usize];
        f.backlog_bytes += pkt.wire_len() as u64;
        f.backlog_pkts += 1;
        f.backlog_data_pkts += u64::from(pkt.kind == Kind::Data);
        let mut ctx = QdiscCtx {
            events: &mut self.events,
            rng: &mut self.rng,
        };
        self.qdisc.enqueue(now, pkt, &mut ctx);
        self.drain_events();
        let b = (self.qdisc.backlog_bytes().0, self.qdisc.backlog_packets());
        self.max_backlog = (self.max_backlog.0.max(b.0), self.max_backlog.1.max(b.1));
    }

    /// Send what the tokens allow at `now` into `out`; returns when to
    /// call again (None when the queue is empty).
    pub fn service(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        if self.trace.is_some() {
            return self.service_trace(now, out);
        }
        loop {
            if self.held.is_none() {
                self.dequeue_held(now);
            }
            let wire = self.held.as_ref()?.wire_len();
            self.refill(now);
            let cost = self.rate.tx_time(Bytes(wire as u64 + self.overhead));
            if self.tokens < cost {
                return Some(now + (cost - self.tokens));
            }
            self.tokens -= cost;
            let pkt = self.held.take().expect("held");
            self.depart(now, &pkt);
            out.push(pkt);
        }
    }

    /// A trace-driven link: use every opportunity due by `now`
    /// (`LinkQueue::rationalize`, see `net::trace`); returns the next one
    /// while packets wait.
    fn service_trace(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        let mut tr = self.trace.take().expect("a trace link");
        while tr.next_time() <= now {
            let t = tr.next_time();
            tr.advance();
            let mut left = OPPORTUNITY_BYTES;
            while left > 0 {
                if self.held.is_none() {
                    let Some(p) = self.dequeue_held(t) else { break };
                    tr.in_transit = packet_cost(&p) + self.overhead;
                }
                if tr.in_transit > left {
                    tr.in_transit -= left;
                    break;
                }
                left -= tr.in_transit;
                tr.in_transit = 0;
                let pkt = self.held.take().expect("in transit");
                self.depart(t, &pkt);
                out.push(pkt);
            }
        }
        let next = tr.next_time();
        self.trace = Some(tr);
        (self.held.is_some() || self.qdisc.backlog_packets() > 0).then_some(next)
    }

    /// The flow of the packet waiting to leave, if any (a prefetch hint).
    pub fn held_flow(&self) -> Option<u32> {
        self.held.as_ref().map(|p| p.flow)
    }

    /// Take the qdisc's next packet as the one waiting to leave (TBF's
    /// `qdisc_peek_dequeued`; see the module comment).
    fn dequeue_held(&mut self, now: Time) -> Option<Packet> {
        let mut ctx = QdiscCtx {
            events: &mut self.events,
            rng: &mut self.rng,
        };
        self.held = self.qdisc.dequeue(now, &mut ctx);
        self.drain_events();
        self.held
    }

    fn depart(&mut self, now: Time, pkt: &Packet) {
        let f = &mut self.flows[pkt.flow as usize];
        f.backlog_bytes -= pkt.wire_len() as u64;
        f.backlog_pkts -= 1;
        f.backlog_data_pkts -= u64::from(pkt.kind == Kind::Data);
        self.departures += 1;
        self.wire_bytes_out += pkt.wire_len() as u64;
        let s = now.since(pkt.enqueued).0;
        self.sojourn.record(s);
        let (sum, max, n) = self.interval_sojourn;
        self.interval_sojourn = (sum + s, max.max(s), n + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{fifo::Fifo, Limit};

    const MS: u64 = 1_000_000;

    fn trace_link(ms: &[u64]) -> Bottleneck {
        let spec = TraceSpec {
            name: "t".into(),
            ms: ms.to_vec(),
        };
        Bottleneck::new(
            Rate(1),
            Bytes(1514),
            AnyQdisc::TailDrop(Fifo::new(Limit::Packets(1000))),
            Rng::stream(1, "t"),
            1,
        )
        .with_trace(&spec)
    }

    /// Drive the link as the simulator does (service at each wake-up) until
    /// `until`; the departure times in ms.
    fn run(b: &mut Bottleneck, from: Time, until: Time) -> Vec<(u64, u32)> {
        let mut out = vec![];
        let mut t = Some(from);
        while let Some(now) = t.filter(|&t| t <= until) {
            let mut sent = vec![];
            t = b.service(now, &mut sent);
            out.extend(sent.iter().map(|p| (now.0 / MS, p.wire_len())));
        }
        out
    }

    #[test]
    fn a_trace_link_sends_a_full_frame_at_each_opportunity() {
        let mut b = trace_link(&[1, 1, 3, 10]);
        for k in 0..5 {
            b.enqueue(Time::ZERO, Packet::data(0, k, 1448));
        }
        let sent = run(&mut b, Time::ZERO, Time(100 * MS));
        let times: Vec<u64> = sent.iter().map(|&(t, _)| t).collect();
        assert_eq!(times, [1, 1, 3, 10, 11], "the schedule repeats after 10 ms");
    }

    #[test]
    fn small_packets_share_an_opportunity_and_a_packet_may_span_two() {
        let mut b = trace_link(&[1, 2]);
        // A full frame takes all of the first opportunity; 30 ACK-sized
        // packets (66 of its 1514 bytes each) fill 22 of the second and the
        // rest wait: the 23rd takes the last 62 bytes and 4 of the third.
        b.enqueue(Time::ZERO, Packet::data(0, 0, 1448));
        for k in 0..30 {
            b.enqueue(Time::ZERO, Packet::ack(0, k, &[]));
        }
        let sent = run(&mut b, Time::ZERO, Time(100 * MS));
        let at = |ms| sent.iter().filter(|&&(t, _)| t == ms).count();
        assert_eq!((at(1), at(2), at(3)), (1, 22, 8), "{sent:?}");
    }

    #[test]
    fn an_idle_link_does_not_bank_opportunities() {
        let mut b = trace_link(&[1, 1, 3, 10]);
        // Idle until 4 ms: the opportunities at 1, 1 and 3 ms are gone.
        b.enqueue(Time(4 * MS), Packet::data(0, 0, 1448));
        assert_eq!(run(&mut b, Time(4 * MS), Time(100 * MS)), [(10, 1514)]);
        // Arriving at an idle link at an opportunity's instant misses it
        // (Mahimahi settles the link before it queues the arrival).
        b.enqueue(Time(11 * MS), Packet::data(0, 1, 1448));
        assert_eq!(run(&mut b, Time(11 * MS), Time(100 * MS)), [(13, 1514)]);
    }
}
