//! The network a scenario describes, built once from the normalized
//! scenario: every queueing link (a token-bucket shaper and queue
//! discipline, `Bottleneck`, followed by a propagation delay line) and each
//! flow's route through them. No clock here: the simulator's world drives
//! it with its events.
//!
//! The dumbbell is the network of one link named "bottleneck" with no delay
//! after it: all its propagation sits in each flow's own paths (`net::path`).
//! In a network of `[[links]]`, a flow's own path carries its own share of
//! the RTT to its first link; each link's delay follows its queue; the ACKs
//! return on the flow's uncongested reverse path, whose delay adds the
//! route's link delays.

use super::bottleneck::Bottleneck;
use super::impair::LossConfig;
use super::path::{Impairments, Path};
use crate::metrics::hist::Histogram;
use crate::packet::{Kind, Packet};
use crate::rng::Rng;
use crate::scenario::{BottleneckSpec, Scenario};
use crate::units::{Bytes, Dur, Rate, Time};

/// One link: its queue, then its delay line (propagation, and the link's
/// random loss and jitter, if any).
pub struct Link {
    pub name: String,
    pub queue: Bottleneck,
    /// Packets that left the queue and are propagating to the next hop
    /// (unused without delay or impairments: they hop at once).
    pub line: Path,
    pub delay: Dur,
    /// Whether packets take the line (a delay, loss or jitter).
    has_line: bool,
    /// The link's rate, buffer and schedule as the scenario gives them.
    pub spec: BottleneckSpec,
}

/// Where a packet goes when it is done with a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// The next link's queue.
    Link(u32),
    /// The flow's receiver (the end of its route).
    Receiver,
    /// The flow's reverse path to its sender (the end of its reverse route).
    ReversePath,
}

/// The links' counters summed (largest backlog: the largest of any link).
#[derive(Clone, Debug, Default)]
pub struct LinkTotals {
    /// Every packet's sojourn in each queue it left.
    pub sojourn: Histogram,
    pub departures: u64,
    pub wire_bytes_out: u64,
    pub drops: u64,
    pub max_backlog: (u64, u32),
}

/// What became of a packet handed to a link's delay line.
pub enum Propagated {
    /// No line: it goes on at once.
    Through(Packet),
    /// Lost by the link's random loss (counted for its flow).
    Lost(Packet),
    /// On the line; `Some(t)`: it is the line's new head, due at `t`.
    OnLine(Option<Time>),
}

impl Link {
    /// Hand a packet that left this link's queue to its delay line.
    pub fn propagate(&mut self, now: Time, pkt: Packet) -> Propagated {
        if !self.has_line {
            return Propagated::Through(pkt);
        }
        let before = self.line.len();
        let head = self.line.push(now, pkt);
        if self.line.len() == before {
            let f = &mut self.queue.flows[pkt.flow as usize];
            match pkt.kind {
                Kind::Data => f.drops_random += 1,
                Kind::Ack => f.acks_dropped += 1,
                Kind::Syn | Kind::SynAck => f.drops_handshake += 1,
            }
            return Propagated::Lost(pkt);
        }
        Propagated::OnLine(head.then(|| self.line.head_time().expect("just pushed")))
    }
}

pub struct Network {
    pub links: Vec<Link>,
    /// Each flow's links, in order.
    routes: Routes,
    /// The links each flow's ACKs cross, in order (empty: an uncongested
    /// reverse path, the default).
    reverse_routes: Routes,
}

/// Every flow's list of links in one array (flow `f`'s are
/// `hops[start[f]..start[f + 1]]`): a packet's next hop reads 8 bytes of
/// `start` and 4 of `hops` where a vector per flow would cost a cache miss
/// on its own allocation, with 10,000 flows on every packet.
struct Routes {
    start: Vec<u32>,
    hops: Vec<u32>,
}

impl Routes {
    fn new<'a>(lists: impl Iterator<Item = &'a [u32]>) -> Routes {
        let mut r = Routes {
            start: vec![0],
            hops: Vec::new(),
        };
        for l in lists {
            r.hops.extend_from_slice(l);
            r.start.push(r.hops.len() as u32);
        }
        r
    }

    fn get(&self, flow: u32) -> &[u32] {
        let f = flow as usize;
        &self.hops[self.start[f] as usize..self.start[f + 1] as usize]
    }
}

impl Network {
    pub fn new(sc: &Scenario) -> Network {
        let n = sc.flows.len();
        let dumbbell = sc.bottleneck.is_some();
        let links = sc
            .queue_links()
            .iter()
            .map(|l| {
                let q = l.queue;
                // The dumbbell keeps the stream it always had.
                let stream = if dumbbell {
                    "bottleneck.qdisc".to_string()
                } else {
                    format!("links.{}.qdisc", l.name)
                };
                let mut queue = Bottleneck::new(
                    q.rate,
                    q.burst,
                    q.qdisc.build(),
                    Rng::stream(sc.seed, &stream),
                    n,
                );
                if let Some(t) = &q.trace {
                    queue = queue.with_trace(t);
                }
                if let Some(p) = &q.policer {
                    queue = queue.with_policer(p);
                }
                if q.overhead > Bytes(0) {
                    queue = queue.with_overhead(q.overhead.0);
                }
                let impaired = q.loss != LossConfig::None || q.jitter.is_some();
                let mut line = Path::new(Rate::INF, l.delay);
                if impaired {
                    line = line.with_impairments(Impairments::new(
                        &q.loss,
                        q.jitter.as_ref(),
                        Rng::stream(sc.seed, &format!("links.{}.line", l.name)),
                    ));
                }
                Link {
                    name: l.name.to_string(),
                    queue,
                    line,
                    delay: l.delay,
                    has_line: l.delay > Dur::ZERO || impaired,
                    spec: q.clone(),
                }
            })
            .collect();
        Network {
            links,
            routes: Routes::new((0..n).map(|i| sc.route(i))),
            reverse_routes: Routes::new(sc.flows.iter().map(|f| f.reverse_route.as_slice())),
        }
    }

    pub fn route(&self, flow: u32) -> &[u32] {
        self.routes.get(flow)
    }

    /// The link a flow's packets enter first.
    pub fn first_hop(&self, flow: u32) -> u32 {
        self.routes.get(flow)[0]
    }

    /// The links flow `flow`'s ACKs cross (empty: none).
    pub fn reverse_route(&self, flow: u32) -> &[u32] {
        self.reverse_routes.get(flow)
    }

    /// Where a packet of `flow` goes after `link`. A link is one-way and on
    /// at most one of the flow's two routes, so the link says the
    /// direction: on its route, the next link or the receiver; on its
    /// reverse route (ACKs), the next link or the flow's reverse path.
    pub fn next_hop(&self, flow: u32, link: u32) -> Hop {
        let r = self.routes.get(flow);
        if let Some(k) = r.iter().position(|&l| l == link) {
            return r.get(k + 1).map_or(Hop::Receiver, |&m| Hop::Link(m));
        }
        let rr = self.reverse_routes.get(flow);
        let k = rr
            .iter()
            .position(|&l| l == link)
            .expect("a link of the flow's route or reverse route");
        rr.get(k + 1).map_or(Hop::ReversePath, |&m| Hop::Link(m))
    }

    /// The propagation delay of a flow's links, one way.
    pub fn route_delay(&self, flow: u32) -> Dur {
        self.delay_of(self.route(flow))
    }

    /// What a flow's reverse path adds to its own delay: nothing when its
    /// ACKs cross links of their own (their delays are the links'), else
    /// the route's delay, as the uncongested way back over the same distance.
    pub fn reverse_path_delay(&self, flow: u32) -> Dur {
        if self.reverse_route(flow).is_empty() {
            self.route_delay(flow)
        } else {
            Dur::ZERO
        }
    }

    fn delay_of(&self, links: &[u32]) -> Dur {
        Dur(links.iter().map(|&l| self.links[l as usize].delay.0).sum())
    }

    /// What the links did over the run, together: the summary's link
    /// columns on both backends (the dumbbell's: its one bottleneck's).
    pub fn totals(&self) -> LinkTotals {
        let mut t = LinkTotals::default();
        for link in &self.links {
            let q = &link.queue;
            t.sojourn.merge(&q.sojourn);
            t.departures += q.departures;
            t.wire_bytes_out += q.wire_bytes_out;
            t.drops += q.drops;
            t.max_backlog = (
                t.max_backlog.0.max(q.max_backlog.0),
                t.max_backlog.1.max(q.max_backlog.1),
            );
        }
        t
    }

    /// The rate of the slowest link at the start (the summary's `rate_mbps`).
    pub fn slowest_rate(&self) -> Rate {
        Rate(self.links.iter().map(|l| l.spec.rate.0).min().unwrap_or(0))
    }
}
