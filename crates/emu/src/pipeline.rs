//! The release schedule of the user-space bottleneck, free of sockets and
//! clocks so it can be tested: per-flow forward delays in front of the
//! simulator's bottleneck (`ccarena_sim::net::bottleneck`: TBF shaper plus
//! the scenario's qdisc), and per-flow reverse delays on the ACK path, all
//! simulator code driven by wall-clock times passed in.
//!
//! Frames enter with the time they were read. [`Pipeline::advance`] then
//! runs every internal event (a frame reaching the bottleneck after its
//! forward delay, the shaper's next departure, an ACK leaving its reverse
//! delay) due up to a time, in time order, each at its own scheduled time,
//! not at the time the loop happens to run. A late loop therefore releases
//! late but never changes the schedule: the shaper's rate and the delays
//! stay exact, and the lateness is measured against the schedule.

use ccarena_sim::net::bottleneck::Bottleneck;
use ccarena_sim::net::path::Path;
use ccarena_sim::packet::Packet;
use ccarena_sim::rng::Rng;
use ccarena_sim::scenario::Scenario;
use ccarena_sim::units::{Bytes, Dur, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A frame to send now or later: when it is due and its descriptor.
pub type Release = (Time, Packet);

pub struct Pipeline {
    /// Forward (data) delay of each flow, in front of the bottleneck.
    fwd: Vec<Path>,
    /// Reverse (ACK) delay of each flow.
    rev: Vec<Path>,
    pub bn: Bottleneck,
    /// Heads of the paths: (exit time, insertion order, path index; forward
    /// paths are 0..n, reverse paths n..2n).
    heads: BinaryHeap<Reverse<(Time, u64, usize)>>,
    order: u64,
}

impl Pipeline {
    pub fn new(sc: &Scenario) -> Self {
        let n = sc.flows.len();
        // The veths are the access links: the delay lines themselves do not serialize.
        let fwd = sc
            .flows
            .iter()
            .map(|f| Path::new(Rate::INF, Dur(f.fwd_delay_ns)))
            .collect();
        let rev = sc
            .flows
            .iter()
            .map(|f| Path::new(Rate::INF, Dur(f.rev_delay_ns)))
            .collect();
        let b = &sc.bottleneck;
        let mut bn = Bottleneck::new(
            Rate(b.rate_bps),
            Bytes(b.burst_bytes),
            b.qdisc.build(),
            Rng::stream(sc.seed, "bottleneck.qdisc"),
            n,
        );
        bn.keep_dropped = true;
        Pipeline {
            fwd,
            rev,
            bn,
            heads: BinaryHeap::new(),
            order: 0,
        }
    }

    pub fn flows(&self) -> usize {
        self.fwd.len()
    }

    fn push_head(&mut self, t: Time, idx: usize) {
        self.order += 1;
        self.heads.push(Reverse((t, self.order, idx)));
    }

    /// A frame of flow `pkt.flow` from a sender, read at `now`.
    pub fn arrive_fwd(&mut self, now: Time, pkt: Packet) {
        let i = pkt.flow as usize;
        if self.fwd[i].push(now, pkt) {
            let t = self.fwd[i].head_time().expect("just pushed");
            self.push_head(t, i);
        }
    }

    /// A frame of flow `pkt.flow` from a receiver, read at `now`.
    pub fn arrive_rev(&mut self, now: Time, pkt: Packet) {
        let i = pkt.flow as usize;
        if self.rev[i].push(now, pkt) {
            let t = self.rev[i].head_time().expect("just pushed");
            let n = self.fwd.len();
            self.push_head(t, n + i);
        }
    }

    /// The time of the next internal event, if any.
    pub fn next_event(&self) -> Option<Time> {
        let h = self.heads.peek().map(|Reverse((t, _, _))| *t);
        match (h, self.bn.wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run every event due at or before `until`, in time order. Frames the
    /// bottleneck sends go to `to_receivers`, ACKs leaving their reverse
    /// delay to `to_senders`, each with its scheduled time. Frames the qdisc
    /// dropped are in `self.bn.dropped` afterwards.
    pub fn advance(
        &mut self,
        until: Time,
        to_receivers: &mut Vec<Release>,
        to_senders: &mut Vec<Release>,
    ) {
        let n = self.fwd.len();
        let mut out = Vec::new();
        loop {
            let head = self.heads.peek().map(|Reverse((t, _, i))| (*t, *i));
            let wake = self.bn.wake;
            // Path exits first on a tie: a packet reaching the bottleneck
            // at the instant of a departure can leave with it, as in the
            // simulator, where the arrival event was scheduled earlier.
            let take_head = match (head, wake) {
                (Some((t, _)), Some(w)) => t <= w,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if take_head {
                let (t, idx) = head.expect("checked");
                if t > until {
                    break;
                }
                self.heads.pop();
                if idx < n {
                    while let Some(p) = self.fwd[idx].pop_due(t) {
                        self.bn.enqueue(t, p);
                    }
                    if let Some(h) = self.fwd[idx].head_time() {
                        self.push_head(h, idx);
                    }
                    if self.bn.wake.is_none() {
                        self.service(t, &mut out, to_receivers);
                    }
                } else {
                    let i = idx - n;
                    while let Some(p) = self.rev[i].pop_due(t) {
                        to_senders.push((t, p));
                    }
                    if let Some(h) = self.rev[i].head_time() {
                        self.push_head(h, idx);
                    }
                }
            } else {
                let Some(w) = wake else { break };
                if w > until {
                    break;
                }
                self.bn.wake = None;
                self.service(w, &mut out, to_receivers);
            }
        }
    }

    fn service(&mut self, t: Time, out: &mut Vec<Packet>, to_receivers: &mut Vec<Release>) {
        let wake = self.bn.service(t, out);
        to_receivers.extend(out.drain(..).map(|p| (t, p)));
        self.bn.wake = wake;
    }

    /// Packets on the delay lines and in the bottleneck.
    pub fn in_flight(&self) -> usize {
        self.fwd.iter().map(|p| p.len()).sum::<usize>()
            + self.rev.iter().map(|p| p.len()).sum::<usize>()
            + self.bn.backlog_packets() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_sim::scenario::normalize_json;

    fn scenario(rate: &str, buffer: &str, rtts: &[&str]) -> Scenario {
        let flows: Vec<_> = rtts
            .iter()
            .map(|r| serde_json::json!({"cc": "cubic", "rtt": r}))
            .collect();
        normalize_json(
            &serde_json::json!({
                "name": "t", "duration": "10s",
                "bottleneck": {"rate": rate, "buffer": buffer},
                "flows": flows,
            })
            .to_string(),
        )
        .unwrap()
    }

    fn data(flow: u32, tag: u32) -> Packet {
        let mut p = Packet::data(flow, tag, 1448);
        p.tag = tag;
        p
    }

    fn run_until(p: &mut Pipeline, until: Time) -> (Vec<Release>, Vec<Release>) {
        let (mut a, mut b) = (vec![], vec![]);
        p.advance(until, &mut a, &mut b);
        (a, b)
    }

    #[test]
    fn a_lone_packet_takes_its_forward_delay_then_its_transmission_time() {
        // 12 Mbps: a 1514-byte frame takes 1009.333 us; tokens start full
        // (one packet), so the first packet leaves as it arrives.
        let sc = scenario("12Mbps", "100pkt", &["20ms"]);
        let mut p = Pipeline::new(&sc);
        p.arrive_fwd(Time(1_000), data(0, 1));
        assert_eq!(p.next_event(), Some(Time(10_001_000)));
        let (rx, tx) = run_until(&mut p, Time(10_000_999));
        assert!(rx.is_empty() && tx.is_empty());
        let (rx, _) = run_until(&mut p, Time(10_001_000));
        assert_eq!(rx.len(), 1);
        assert_eq!(rx[0].0, Time(10_001_000));
        assert_eq!(rx[0].1.tag, 1);
    }

    #[test]
    fn back_to_back_packets_leave_at_the_shaped_rate() {
        let sc = scenario("12Mbps", "100pkt", &["2ms"]);
        let mut p = Pipeline::new(&sc);
        for i in 0..10 {
            p.arrive_fwd(Time(0), data(0, i));
        }
        let (rx, _) = run_until(&mut p, Time(1_000_000_000));
        assert_eq!(rx.len(), 10);
        let tx = Rate(12_000_000).tx_time(Bytes(1514)).0;
        for (k, (t, pkt)) in rx.iter().enumerate() {
            assert_eq!(pkt.tag, k as u32);
            assert_eq!(t.0, 1_000_000 + k as u64 * tx, "packet {k}");
        }
    }

    #[test]
    fn a_late_caller_gets_the_same_schedule() {
        let sc = scenario("12Mbps", "100pkt", &["2ms"]);
        let mut a = Pipeline::new(&sc);
        let mut b = Pipeline::new(&sc);
        for i in 0..5 {
            a.arrive_fwd(Time(0), data(0, i));
            b.arrive_fwd(Time(0), data(0, i));
        }
        // `a` is polled every 10 us, `b` once, 50 ms late.
        let mut ra = vec![];
        let mut t = 0;
        while t < 50_000_000 {
            let (rx, _) = run_until(&mut a, Time(t));
            ra.extend(rx);
            t += 10_000;
        }
        let (rb, _) = run_until(&mut b, Time(50_000_000));
        let times = |r: &[Release]| r.iter().map(|(t, _)| t.0).collect::<Vec<_>>();
        assert_eq!(times(&ra), times(&rb));
    }

    #[test]
    fn acks_take_their_own_flows_reverse_delay() {
        let sc = scenario("100Mbps", "1BDP", &["10ms", "40ms"]);
        let mut p = Pipeline::new(&sc);
        p.arrive_rev(Time(0), Packet::ack(1, 0, &[]));
        p.arrive_rev(Time(0), Packet::ack(0, 0, &[]));
        let (rx, tx) = run_until(&mut p, Time(1_000_000_000));
        assert!(rx.is_empty());
        assert_eq!(tx.len(), 2);
        assert_eq!((tx[0].0, tx[0].1.flow), (Time(5_000_000), 0));
        assert_eq!((tx[1].0, tx[1].1.flow), (Time(20_000_000), 1));
    }

    #[test]
    fn the_queue_limit_drops_and_reports_the_frames() {
        // 3 packets of buffer; 10 arrive at once.
        let sc = scenario("12Mbps", "3pkt", &["2ms"]);
        let mut p = Pipeline::new(&sc);
        for i in 0..10 {
            p.arrive_fwd(Time(0), data(0, i));
        }
        let (rx, _) = run_until(&mut p, Time(1_000_000_000));
        let dropped: Vec<u32> = p.bn.dropped.drain(..).map(|d| d.tag).collect();
        // All ten reach the qdisc at the same instant: three fit, then the
        // shaper sends them one by one.
        assert_eq!(rx.len(), 3);
        assert_eq!(dropped, vec![3, 4, 5, 6, 7, 8, 9]);
        assert!(p.bn.max_backlog.1 <= 3);
        assert_eq!(p.in_flight(), 0);
    }
}
