//! The release schedule of the user-space bottleneck, free of sockets and
//! clocks so it can be tested: per-flow forward delays in front of the
//! simulator's network (`ccarena_sim::net::network`: each link a TBF shaper
//! or a delivery trace plus the scenario's qdisc, then its delay; each flow
//! its route: the dumbbell's one bottleneck, or a network of `[[links]]`),
//! and per-flow reverse delays on the ACK path, all simulator code driven
//! by wall-clock times passed in.
//!
//! Frames enter with the time they were read. [`Pipeline::advance`] then
//! runs every internal event (a frame reaching the bottleneck after its
//! forward delay, the shaper's next departure, an ACK leaving its reverse
//! delay) due up to a time, in time order, each at its own scheduled time,
//! not at the time the loop happens to run. A late loop therefore releases
//! late but never changes the schedule: the shaper's rate and the delays
//! stay exact, and the lateness is measured against the schedule.

use ccarena_sim::net::network::{Hop, Network, Propagated};
use ccarena_sim::net::path::{flow_paths, Path};
use ccarena_sim::packet::Packet;
use ccarena_sim::scenario::Scenario;
use ccarena_sim::units::{Dur, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A frame to send now or later: when it is due and its descriptor.
pub type Release = (Time, Packet);

/// A change the scenario schedules: a flow's RTT, or a link's rate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Rtt { flow: usize, rtt: Dur },
    Rate { link: usize, rate: Rate },
}

pub struct Pipeline {
    /// Forward (data) path of each flow, in front of its first link: its
    /// delay, random loss and jitter.
    fwd: Vec<Path>,
    /// Reverse (ACK) path of each flow.
    rev: Vec<Path>,
    /// The simulator's network: every link's queue and delay line, and each
    /// flow's route (`ccarena_sim::net::network`).
    pub net: Network,
    /// Heads of the delay lines: (exit time, insertion order, index; forward
    /// paths are 0..n, reverse paths n..2n, the links' lines 2n..).
    heads: BinaryHeap<Reverse<(Time, u64, usize)>>,
    order: u64,
    /// Scheduled steps in time order, and the next one to apply.
    steps: Vec<(Time, Step)>,
    next_step: usize,
    /// Each flow's sender host (CAKE's host isolation), RTT split and the
    /// delay of its route's links (added to its reverse path).
    hosts: Vec<u16>,
    splits: Vec<f64>,
    route_delays: Vec<Dur>,
    /// Links a packet entered at once (no delay after the previous link).
    kicked: Vec<usize>,
    /// Packets a path lost at random since the caller last looked (their
    /// frames are to be freed).
    pub lost: Vec<Packet>,
}

impl Pipeline {
    pub fn new(sc: &Scenario) -> Self {
        // The veths are the access links: the paths themselves do not serialize.
        let (fwd, mut rev): (Vec<Path>, Vec<Path>) = sc
            .flows
            .iter()
            .map(|f| flow_paths(f, sc.seed, Rate::INF))
            .unzip();
        // The simulator's network model: its links, as the simulator builds them.
        let mut net = Network::new(sc);
        for link in &mut net.links {
            link.queue.keep_dropped = true;
        }
        let route_delays: Vec<Dur> = (0..sc.flows.len())
            .map(|i| net.reverse_path_delay(i as u32))
            .collect();
        for (r, d) in rev.iter_mut().zip(&route_delays) {
            r.set_delay(r.delay() + *d);
        }
        let mut steps: Vec<(Time, Step)> = sc
            .flows
            .iter()
            .enumerate()
            .flat_map(|(i, f)| {
                f.rtt_schedule
                    .iter()
                    .map(move |&(t, rtt)| (t, Step::Rtt { flow: i, rtt }))
            })
            .collect();
        for (l, link) in net.links.iter().enumerate() {
            steps.extend(
                link.spec
                    .rate_schedule
                    .iter()
                    .map(|&(t, r)| (t, Step::Rate { link: l, rate: r })),
            );
        }
        // Stable: steps at one instant apply in the order the scenario lists them.
        steps.sort_by_key(|&(t, _)| t);
        Pipeline {
            fwd,
            rev,
            net,
            heads: BinaryHeap::new(),
            order: 0,
            steps,
            next_step: 0,
            hosts: sc.flows.iter().map(|f| f.host as u16).collect(),
            splits: sc.flows.iter().map(|f| f.rtt_split).collect(),
            route_delays,
            kicked: Vec::new(),
            lost: Vec::new(),
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
    pub fn arrive_fwd(&mut self, now: Time, mut pkt: Packet) {
        let i = pkt.flow as usize;
        // Hosts as the simulator sets them: the sender's, and one receiver host per flow.
        pkt.src_host = self.hosts[i];
        pkt.dst_host = i as u16;
        let before = self.fwd[i].len();
        if self.fwd[i].push(now, pkt) {
            let t = self.fwd[i].head_time().expect("just pushed");
            self.push_head(t, i);
        } else if self.fwd[i].len() == before {
            self.lost.push(pkt);
        }
    }

    /// A frame of flow `pkt.flow` from a receiver, read at `now`: into the
    /// first link of its reverse route (two-way traffic), else onto its
    /// reverse path.
    pub fn arrive_rev(&mut self, now: Time, pkt: Packet) {
        if let Some(&l) = self.net.reverse_route(pkt.flow).first() {
            // An idle link is served at the next `advance`, from now.
            let q = &mut self.net.links[l as usize].queue;
            q.enqueue(now, pkt);
            q.wake.get_or_insert(now);
            return;
        }
        self.onto_reverse_path(now, pkt);
    }

    fn onto_reverse_path(&mut self, now: Time, pkt: Packet) {
        let i = pkt.flow as usize;
        let before = self.rev[i].len();
        if self.rev[i].push(now, pkt) {
            let t = self.rev[i].head_time().expect("just pushed");
            let n = self.fwd.len();
            self.push_head(t, n + i);
        } else if self.rev[i].len() == before {
            self.lost.push(pkt);
        }
    }

    /// Data packets flow `i`'s forward path lost at random, and ACKs its reverse path lost.
    pub fn random_losses(&self, i: usize) -> (u64, u64) {
        (self.fwd[i].lost, self.rev[i].lost)
    }

    /// The earliest pending wake-up of a link's queue, and the link.
    fn next_wake(&self) -> Option<(Time, usize)> {
        self.net
            .links
            .iter()
            .enumerate()
            .filter_map(|(l, k)| k.queue.wake.map(|t| (t, l)))
            .min()
    }

    /// The time of the next internal event, if any.
    pub fn next_event(&self) -> Option<Time> {
        let h = self.heads.peek().map(|Reverse((t, _, _))| *t);
        let s = self.steps.get(self.next_step).map(|&(t, _)| t);
        let w = self.next_wake().map(|(t, _)| t);
        [h, w, s].into_iter().flatten().min()
    }

    fn apply_step(&mut self, t: Time, step: Step, to_receivers: &mut Vec<Release>) {
        match step {
            Step::Rtt { flow, rtt } => {
                // As the simulator: packets already on the path keep their delay.
                let fwd = rtt.mul_f64(self.splits[flow]);
                self.fwd[flow].set_delay(fwd);
                self.rev[flow].set_delay(rtt - fwd + self.route_delays[flow]);
            }
            Step::Rate { link, rate } => {
                let q = &mut self.net.links[link].queue;
                q.set_rate(t, rate);
                // A pending wake-up was computed at the old rate.
                q.wake = None;
                self.service(t, link, to_receivers);
            }
        }
    }

    /// Run every event due at or before `until`, in time order. Frames the
    /// last link of their route sends go to `to_receivers`, ACKs leaving
    /// their reverse delay to `to_senders`, each with its scheduled time.
    /// Frames a queue dropped are in its `dropped` afterwards
    /// (`take_dropped`).
    pub fn advance(
        &mut self,
        until: Time,
        to_receivers: &mut Vec<Release>,
        to_senders: &mut Vec<Release>,
    ) {
        let n = self.fwd.len();
        loop {
            let head = self.heads.peek().map(|Reverse((t, _, i))| (*t, *i));
            let wake = self.next_wake();
            // Scheduled steps first on a tie (the simulator queues them first).
            if let Some(&(t, step)) = self.steps.get(self.next_step) {
                let others = [head.map(|h| h.0), wake.map(|w| w.0)];
                if t <= until && others.into_iter().flatten().all(|o| t <= o) {
                    self.next_step += 1;
                    self.apply_step(t, step, to_receivers);
                    continue;
                }
            }
            // Delay-line exits first on a tie: a packet reaching a link at
            // the instant of a departure can leave with it, as in the
            // simulator, where the arrival event was scheduled earlier.
            let take_head = match (head, wake) {
                (Some((t, _)), Some((w, _))) => t <= w,
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
                    let l = self.net.first_hop(idx as u32) as usize;
                    while let Some(p) = self.fwd[idx].pop_due(t) {
                        self.net.links[l].queue.enqueue(t, p);
                    }
                    if let Some(h) = self.fwd[idx].head_time() {
                        self.push_head(h, idx);
                    }
                    if self.net.links[l].queue.wake.is_none() {
                        self.service(t, l, to_receivers);
                    }
                } else if idx < 2 * n {
                    let i = idx - n;
                    while let Some(p) = self.rev[i].pop_due(t) {
                        to_senders.push((t, p));
                    }
                    if let Some(h) = self.rev[i].head_time() {
                        self.push_head(h, idx);
                    }
                } else {
                    let l = idx - 2 * n;
                    while let Some(p) = self.net.links[l].line.pop_due(t) {
                        self.hop(t, l, p, to_receivers);
                    }
                    if let Some(h) = self.net.links[l].line.head_time() {
                        self.push_head(h, idx);
                    }
                    self.service_kicked(t, to_receivers);
                }
            } else {
                let Some((w, l)) = wake else { break };
                if w > until {
                    break;
                }
                self.net.links[l].queue.wake = None;
                self.service(w, l, to_receivers);
            }
        }
    }

    /// Link `l` sends what it may at `t`, then every link its packets
    /// entered at once.
    fn service(&mut self, t: Time, l: usize, to_receivers: &mut Vec<Release>) {
        self.service_one(t, l, to_receivers);
        self.service_kicked(t, to_receivers);
    }

    fn service_kicked(&mut self, t: Time, to_receivers: &mut Vec<Release>) {
        while let Some(m) = self.kicked.pop() {
            if self.net.links[m].queue.wake.is_none() {
                self.service_one(t, m, to_receivers);
            }
        }
    }

    fn service_one(&mut self, t: Time, l: usize, to_receivers: &mut Vec<Release>) {
        let mut out = Vec::new();
        let wake = self.net.links[l].queue.service(t, &mut out);
        self.net.links[l].queue.wake = wake;
        let n = self.fwd.len();
        for p in out {
            match self.net.links[l].propagate(t, p) {
                Propagated::Through(p) => self.hop(t, l, p, to_receivers),
                Propagated::OnLine(Some(h)) => self.push_head(h, 2 * n + l),
                Propagated::OnLine(None) => {}
                Propagated::Lost(p) => self.lost.push(p),
            }
        }
    }

    /// A packet done with link `l` goes on: to the next link of its route,
    /// or to its receiver.
    fn hop(&mut self, t: Time, l: usize, p: Packet, to_receivers: &mut Vec<Release>) {
        match self.net.next_hop(p.flow, l as u32) {
            Hop::ReversePath => self.onto_reverse_path(t, p),
            Hop::Receiver => to_receivers.push((t, p)),
            Hop::Link(m) => {
                self.net.links[m as usize].queue.enqueue(t, p);
                self.kicked.push(m as usize);
            }
        }
    }

    /// Frames the links' queues dropped since the last call (to be freed).
    pub fn take_dropped(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.lost.drain(..).collect();
        for link in &mut self.net.links {
            out.append(&mut link.queue.dropped);
        }
        out
    }

    /// Packets on the delay lines and in the links' queues.
    pub fn in_flight(&self) -> usize {
        self.fwd.iter().map(|p| p.len()).sum::<usize>()
            + self.rev.iter().map(|p| p.len()).sum::<usize>()
            + self
                .net
                .links
                .iter()
                .map(|l| l.queue.backlog_packets() as usize + l.line.len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_sim::scenario::normalize_json;
    use ccarena_sim::units::Bytes;

    fn scenario(rate: &str, buffer: &str, rtts: &[&str]) -> Scenario {
        scenario_with(
            rate,
            buffer,
            rtts,
            serde_json::json!({}),
            serde_json::json!({}),
        )
    }

    /// `flow_extra` is merged into every flow, `bn_extra` into the bottleneck.
    fn scenario_with(
        rate: &str,
        buffer: &str,
        rtts: &[&str],
        flow_extra: serde_json::Value,
        bn_extra: serde_json::Value,
    ) -> Scenario {
        let flows: Vec<_> = rtts
            .iter()
            .map(|r| {
                let mut f = serde_json::json!({"cc": "cubic", "rtt": r});
                for (k, v) in flow_extra.as_object().unwrap() {
                    f[k] = v.clone();
                }
                f
            })
            .collect();
        let mut bn = serde_json::json!({"rate": rate, "buffer": buffer});
        for (k, v) in bn_extra.as_object().unwrap() {
            bn[k] = v.clone();
        }
        normalize_json(
            &serde_json::json!({
                "name": "t", "duration": "100s",
                "bottleneck": bn,
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
        let dropped: Vec<u32> = p.take_dropped().iter().map(|d| d.tag).collect();
        // All ten reach the qdisc at the same instant: three fit, then the
        // shaper sends them one by one.
        assert_eq!(rx.len(), 3);
        assert_eq!(dropped, vec![3, 4, 5, 6, 7, 8, 9]);
        assert!(p.net.links[0].queue.max_backlog.1 <= 3);
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn random_loss_drops_about_its_share_and_reports_the_frames() {
        let sc = scenario_with(
            "1Gbps",
            "10000pkt",
            &["2ms"],
            serde_json::json!({"loss": "10%", "ack_loss": "5%"}),
            serde_json::json!({}),
        );
        let mut p = Pipeline::new(&sc);
        let n = 20_000u32;
        for i in 0..n {
            p.arrive_fwd(Time(i as u64 * 20_000), data(0, i));
            let mut a = Packet::ack(0, 0, &[]);
            a.tag = n + i;
            p.arrive_rev(Time(i as u64 * 20_000), a);
        }
        let (rx, tx) = run_until(&mut p, Time(10_000_000_000));
        let (lost_fwd, lost_rev) = p.random_losses(0);
        assert_eq!(rx.len() as u64 + lost_fwd, n as u64);
        assert_eq!(tx.len() as u64 + lost_rev, n as u64);
        assert_eq!(p.lost.len() as u64, lost_fwd + lost_rev);
        assert_eq!(p.fwd[0].lost_handshake + p.rev[0].lost_handshake, 0);
        let f = lost_fwd as f64 / n as f64;
        let r = lost_rev as f64 / n as f64;
        assert!((f - 0.10).abs() < 0.01, "{f}");
        assert!((r - 0.05).abs() < 0.01, "{r}");
        // The lost frames are the ones missing from the releases.
        let mut tags: Vec<u32> = rx.iter().chain(tx.iter()).map(|(_, p)| p.tag).collect();
        tags.extend(p.lost.iter().map(|p| p.tag));
        tags.sort_unstable();
        assert_eq!(tags, (0..2 * n).collect::<Vec<_>>());
    }

    #[test]
    fn jitter_adds_up_to_its_maximum_and_never_reorders() {
        let sc = scenario_with(
            "1Gbps",
            "10000pkt",
            &["20ms"],
            serde_json::json!({"jitter": {"model": "per_packet", "max": "5ms"}}),
            serde_json::json!({}),
        );
        let mut p = Pipeline::new(&sc);
        let n = 2_000u32;
        for i in 0..n {
            // Sparse enough (1 ms apart) that most packets keep their own draw.
            p.arrive_fwd(Time(i as u64 * 1_000_000), data(0, i));
        }
        let (rx, _) = run_until(&mut p, Time(100_000_000_000));
        assert_eq!(rx.len(), n as usize);
        let extra: Vec<u64> = rx
            .iter()
            .map(|(t, pkt)| t.0 - pkt.tag as u64 * 1_000_000 - 10_000_000)
            .collect();
        assert!(extra.iter().all(|&e| e <= 5_000_000 + 20_000));
        let mean = extra.iter().sum::<u64>() as f64 / n as f64;
        assert!(mean > 1_500_000.0 && mean < 4_000_000.0, "{mean}");
        assert!(rx.windows(2).all(|w| w[0].1.tag < w[1].1.tag));
    }

    #[test]
    fn schedules_change_the_rtt_and_the_rate() {
        let sc = scenario_with(
            "12Mbps",
            "100pkt",
            &["20ms"],
            serde_json::json!({"rtt_schedule": [["1s", "40ms"]]}),
            serde_json::json!({"rate_schedule": [["1s", "6Mbps"]]}),
        );
        let mut p = Pipeline::new(&sc);
        p.arrive_fwd(Time(0), data(0, 0));
        let (mut rx, _) = run_until(&mut p, Time(1_500_000_000));
        p.arrive_fwd(Time(2_000_000_000), data(0, 1));
        p.arrive_fwd(Time(2_000_000_000), data(0, 2));
        rx.extend(run_until(&mut p, Time(10_000_000_000)).0);
        assert_eq!(rx[0].0, Time(10_000_000));
        // After the steps: 20 ms forward, and 6 Mbps between back-to-back packets.
        assert_eq!(rx[1].0, Time(2_020_000_000));
        let tx = Rate(6_000_000).tx_time(Bytes(1514)).0;
        assert_eq!(rx[2].0 .0 - rx[1].0 .0, tx);
    }

    #[test]
    fn cake_sees_the_scenarios_hosts() {
        let sc = scenario("12Mbps", "100pkt", &["2ms", "2ms"]);
        let mut p = Pipeline::new(&sc);
        p.arrive_fwd(Time(0), data(1, 0));
        let (rx, _) = run_until(&mut p, Time(1_000_000_000));
        assert_eq!(rx[0].1.src_host, sc.flows[1].host as u16);
        assert_eq!(rx[0].1.dst_host, 1);
    }

    #[test]
    fn a_frame_crosses_every_link_of_its_route() {
        // Two 12 Mbit/s links, 1 ms of delay after the first; the flow's own
        // 2 ms split evenly. A frame: 1 ms to link a, out at once (full
        // tokens), 1 ms to link b, out at once: at the receiver at 2 ms. The
        // next, sent with it, waits a transmission time at link a. ACKs take
        // the own 1 ms plus the route's 1 ms back.
        let sc = normalize_json(
            &serde_json::json!({
                "duration": "10s",
                "links": [
                    {"name": "a", "rate": "12Mbps", "delay": "1ms", "buffer": "10pkt"},
                    {"name": "b", "rate": "12Mbps", "buffer": "10pkt"}
                ],
                "flows": [{"cc": "cubic", "rtt": "2ms", "route": ["a", "b"]}]
            })
            .to_string(),
        )
        .unwrap();
        let mut p = Pipeline::new(&sc);
        p.arrive_fwd(Time(0), data(0, 1));
        p.arrive_fwd(Time(0), data(0, 2));
        p.arrive_rev(Time(0), Packet::ack(0, 1, &[]));
        let (rx, tx) = run_until(&mut p, Time(1_000_000_000));
        let tx_time = Rate(12_000_000).tx_time(Bytes(1514)).0;
        let times: Vec<u64> = rx.iter().map(|r| r.0 .0).collect();
        assert_eq!(times, [2_000_000, 2_000_000 + tx_time]);
        assert_eq!(tx.len(), 1);
        assert_eq!(tx[0].0, Time(2_000_000));
        assert_eq!(p.net.links[0].queue.departures, 2);
        assert_eq!(p.net.links[1].queue.departures, 2);
        assert_eq!(p.in_flight(), 0);
    }
}
