//! Builds the network from a normalized scenario (`net::network`), runs the
//! event loop and returns the result tables. The only owner of the clock.
//!
//! Data path of flow i: sender -> forward path (access link at
//! `access_rate`, then the forward share of its own RTT) -> each link of its
//! route (shaper + qdisc, then the link's delay) -> receiver. ACK path:
//! receiver -> reverse path (same access rate, the reverse share of its own
//! RTT plus its links' delays) -> sender. In the dumbbell the one link,
//! "bottleneck", hands packets to the receiver the moment its tokens allow
//! (see net::bottleneck), so all propagation delay sits in the two paths.

use crate::app::{App, Chunks};
use crate::capture::{Capture, CaptureFile, CaptureSpec, NoCapture, Taps};
use crate::cc::CongestionControl;
use crate::hint::{addr, lines_of, prefetch};
use crate::metrics::collect::{jain, DynColumns};
use crate::metrics::schema::{
    FlowCols, FlowRow, LinkCols, LinkRow, QueueCols, SampleCols, SampleRow, SummaryCols,
    SummaryRow, TransitionCols, TransitionRow,
};
use crate::metrics::stream::Sink;
use crate::metrics::table::Table;
use crate::net::host::HostNoise;
use crate::net::network::{Hop, Network, Propagated};
use crate::net::path::{flow_paths, Path};
use crate::packet::{Kind, Packet};
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::sched::EventQueue;
use crate::tcp::delack::Jiffies;
use crate::tcp::receiver::{AckOptions, EcnEcho, Receiver};
use crate::tcp::sender::{Sender, SenderConfig};
use crate::units::{Dur, Time};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Start(u32),
    /// The head of flow i's forward path reaches its first link.
    Fwd(u32),
    /// The head of flow i's reverse path reaches the sender.
    Rev(u32),
    /// Link l's queue may send (its tokens are there).
    Link(u32),
    /// The head of link l's delay line reaches the next hop.
    LinkOut(u32),
    SenderTimer(u32),
    /// Flow i's receiver: its delayed-ACK or compressed-SACK timer.
    RecvTimer(u32),
    /// Flow i's application writes its next chunk.
    AppWrite(u32),
    /// Flow i's RTT takes step k of its schedule.
    RttStep(u32, u32),
    /// Link l's rate takes step k of its schedule.
    RateStep(u32, u32),
    /// Flow i's application stops writing.
    Stop(u32),
    Sample,
}

/// Flow state (bytes of [`FlowRt`]) above which the event loop prefetches
/// the next events' flows (`World::prefetch`). Measured (2026-11-28, whole
/// bench processes, medians of 11 A/B pairs): CUBIC at 10 Gbit/s, 10,000
/// flows 0.76x and 1,000 0.88x with its first form, a further 0.92-0.94x
/// and 0.975x with the RACK and write-queue entries; forced on, 10 and 100
/// flows, whose state the caches hold, took 1.02-1.03x per packet, so below
/// 1 MiB (about 480 flows) it is off. It changes no result.
const PREFETCH_ABOVE: usize = 1 << 20;

/// The two stages of `World::prefetch`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The flow's own fields (two events ahead).
    Fields,
    /// The heap memory those fields point to (one event ahead).
    Heap,
}

/// Counters of a run, for benchmarks (not written to result files).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    pub bottleneck_packets: u64,
    pub sim_time_ns: u64,
}

pub struct Results {
    pub tables: Vec<Table>,
    pub stats: RunStats,
    /// The `[capture]` files, one per point (none without `[capture]`).
    pub captures: Vec<CaptureFile>,
}

impl Results {
    pub fn table(&self, name: &str) -> &Table {
        self.tables
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no table {name}"))
    }
}

struct FlowRt {
    sender: Sender,
    receiver: Receiver,
    fwd: Path,
    rev: Path,
    app: App,
    mss: u32,
    start: Time,
    /// Receiver-side bytes at the previous sample, for interval goodput.
    last_bytes: u64,
    /// Data packets that reached the receiver.
    data_received: u64,
    started: bool,
    /// The successive flow that starts after this one completes, and its gap.
    successor: Option<(u32, Dur)>,
    /// What its reverse path adds to its own delay (`Network::reverse_path_delay`).
    route_delay: Dur,
    /// Its sender's host (`FlowSpec::host`), stamped on every data packet
    /// for per-host queueing: kept here, beside the state a send touches,
    /// not read from the scenario's flow spec on each send.
    src_host: u16,
}

/// A flow's timer events. The sender's timers work as Linux's do: its
/// deadline (`next_deadline`, the earliest of the RTO or loss-probe timer,
/// the RACK reordering timer and the pacing timer) can move either way, and
/// the sender is called only when the deadline is reached. An event that
/// fires before the deadline (it moved later since) re-arms for the new
/// deadline and touches nothing else, as `tcp_write_timer_handler` re-arms
/// a timer that fired before `icsk_timeout` (model version 20; before,
/// such an event called the sender, whose transmit could then send or arm
/// pacing at a moment Linux has no wake-up). A later deadline never queues
/// an event while one already queued comes no later, so a flow's loss-probe
/// deadline, pushed back by every send, queues one event per probe time,
/// not one per packet. The receiver's delayed-ACK timer keeps one event
/// per earlier deadline. Kept apart from [`FlowRt`] so that such events are
/// handled without touching the flow's state: 40 bytes a flow, where
/// 10,000 flows' state far exceeds the caches.
#[derive(Clone, Copy)]
struct Armed {
    /// The sender's deadline ([`Time::NEVER`]: none).
    sender: Time,
    /// The times of the sender's events in the queue, earliest first
    /// (NEVER: a free place); beyond three, the latest ones are not kept
    /// here (they fire, and find what any early event finds).
    queued: [Time; 3],
    /// The deadline of the receiver's event in the queue (NEVER: none).
    receiver: Time,
}

impl Armed {
    const NONE: Armed = Armed {
        sender: Time::NEVER,
        queued: [Time::NEVER; 3],
        receiver: Time::NEVER,
    };

    /// Make sure an event comes for the sender's deadline `t`: true if one
    /// must be queued at `t` (and it is counted as queued), false if one
    /// queued already comes no later (it fires first, and re-arms).
    fn need_sender_event(&mut self, t: Time) -> bool {
        self.sender = t;
        if t == Time::NEVER || self.queued[0] <= t {
            return false;
        }
        // `t` is earlier than every queued time: first place.
        self.queued = [t, self.queued[0], self.queued[1]];
        true
    }

    /// The sender's event at `now` has left the queue.
    fn sender_event_fired(&mut self, now: Time) {
        if self.queued[0] == now {
            self.queued = [self.queued[1], self.queued[2], Time::NEVER];
        }
    }
}

/// One run: the scenario, the clock, the flows and the network; `T` its
/// capture taps (`NoCapture` unless the scenario has `[capture]`).
pub struct World<'a, T: Taps = NoCapture> {
    sc: &'a Scenario,
    q: EventQueue<Ev>,
    flows: Vec<FlowRt>,
    /// Each flow's pending timer deadlines (one owner: the event loop).
    armed: Vec<Armed>,
    /// Prefetch the next events' flow state (the flows' state exceeds
    /// [`PREFETCH_ABOVE`]).
    prefetching: bool,
    net: Network,
    /// Links a packet entered at once (no delay after the previous link),
    /// to be serviced once the link that sent it is done.
    kicked: Vec<u32>,
    out: Vec<Packet>,
    end: Time,
    samples: SampleCols,
    /// `[capture]`'s taps.
    capture: T,
    /// Each sample row's algorithm state columns (beside `samples`).
    cc_state: DynColumns,
    queue: QueueCols,
    /// The flows' congestion-control state changes, gathered from their
    /// senders at every sample (rows by sample interval, then flow, then
    /// time).
    transitions: TransitionCols,
    /// Where `samples`, `queue` and `transitions` go in batches of
    /// `batch_rows` rows (`stream_to`); None keeps every row.
    sink: Option<Box<dyn Sink + 'a>>,
    batch_rows: usize,
}

fn ms(d: Option<Dur>) -> f64 {
    d.map_or(f64::NAN, |d| d.ms_f64())
}

impl<'a> World<'a, NoCapture> {
    /// A run without captures (`sc.capture` is ignored: `run` honours it).
    pub fn new(sc: &'a Scenario) -> World<'a, NoCapture> {
        World::with_taps(sc, NoCapture)
    }
}

impl<'a> World<'a, Capture> {
    /// A run that writes `spec`'s capture files.
    pub fn capturing(sc: &'a Scenario, spec: &CaptureSpec) -> World<'a, Capture> {
        let links: Vec<&str> = sc.queue_links().iter().map(|l| l.name).collect();
        let fl: Vec<(u32, bool)> = sc.flows.iter().map(|f| (f.mss, f.ecn)).collect();
        let comment = format!(
            "scenario {:?}, seed {}, model {}: simulated time from the run's start",
            sc.name, sc.seed, sc.model
        );
        World::with_taps(sc, Capture::new(spec, &links, &fl, &comment))
    }
}

impl<'a, T: Taps> World<'a, T> {
    fn with_taps(sc: &'a Scenario, capture: T) -> World<'a, T> {
        let n = sc.flows.len();
        let net = Network::new(sc);
        let mut flows = Vec::with_capacity(n);
        // One copy of the hosts' table, shared by every flow's ACK path, at
        // this run's host speed (`[hosts] run_speed`, `net::host::RunSpeed`).
        let speed = sc.hosts.run_speed.factor(sc.seed);
        let turnarounds = sc
            .hosts
            .latency
            .turnarounds()
            .map(|t| Arc::new(t.scaled(speed)));
        // One kernel's jiffies for every host (`tcp/delack.rs`), at a phase
        // drawn from the seed.
        let jiffies = sc
            .hosts
            .delack
            .then(|| Jiffies::seeded(sc.hosts.hz, &mut Rng::stream(sc.seed, "jiffies")));
        for (i, f) in sc.flows.iter().enumerate() {
            let app = if !f.chunks.is_empty() {
                App::Chunks(Chunks::new(
                    f.chunks.iter().map(|&(o, b)| (o, b.0)).collect(),
                    f.mss,
                ))
            } else {
                match f.size {
                    Some(b) => App::Sized { bytes: b.0 },
                    None => App::Bulk,
                }
            };
            let cfg = SenderConfig {
                flow: f.id,
                mss: f.mss,
                init_cwnd: f.init_cwnd,
                pacing: f.pacing.clone(),
                rwnd_segs: f.rwnd.map(|b| ((b.0 / f.mss as u64) as u32).max(1)),
                ecn: f.ecn,
                cc_seed: Rng::stream(sc.seed, &format!("flow{i}.cc")).next_u64(),
                tso_defer: sc.hosts.tso_defer,
                push_marks: sc.hosts.push_acks,
                timestamps: sc.hosts.timestamps,
            };
            let (fwd, mut rev) = flow_paths(f, sc.seed, f.access_rate);
            let route_delay = net.reverse_path_delay(i as u32);
            if route_delay > Dur::ZERO {
                rev.set_delay(rev.delay() + route_delay);
            }
            if let Some(t) = &turnarounds {
                rev = rev.with_host_noise(HostNoise::new(
                    Rng::stream(sc.seed, &format!("flow{i}.host")),
                    Arc::clone(t),
                ));
            }
            let echo = if f.cc.ecn().accurate_feedback {
                EcnEcho::Accurate
            } else {
                EcnEcho::Rfc3168
            };
            flows.push(FlowRt {
                sender: Sender::new(cfg, f.cc.clone(), app.clone()),
                receiver: Receiver::new(
                    f.id,
                    echo,
                    AckOptions {
                        sack_compress: sc.hosts.sack_compress,
                        push_acks: sc.hosts.push_acks,
                        window_acks: sc.hosts.window_acks,
                        delack: jiffies,
                        advertise: sc.hosts.advertised_window,
                        rcv_rtt_ts: sc.hosts.rcv_rtt_timestamps,
                        delay_acks: !crate::mutant::is(crate::mutant::Mutant::NoDelack),
                        sack: !crate::mutant::is(crate::mutant::Mutant::NoSack),
                    },
                    f.mss,
                    f.rwnd.map(|b| b.0),
                ),
                fwd,
                rev,
                app,
                mss: f.mss,
                start: f.start,
                last_bytes: 0,
                data_received: 0,
                started: false,
                successor: None,
                route_delay,
                src_host: f.host as u16,
            });
        }
        for f in &sc.flows {
            if let Some(a) = f.after {
                flows[a.flow as usize].successor = Some((f.id, a.gap));
            }
        }
        let mut q = EventQueue::new();
        for f in sc.flows.iter().filter(|f| f.after.is_none()) {
            q.push(f.start, Ev::Start(f.id));
        }
        for f in &sc.flows {
            for (k, &(t, _)) in f.rtt_schedule.iter().enumerate() {
                q.push(t, Ev::RttStep(f.id, k as u32));
            }
        }
        for f in &sc.flows {
            if let Some(t) = f.stop {
                q.push(t, Ev::Stop(f.id));
            }
        }
        for (l, link) in net.links.iter().enumerate() {
            for (k, &(t, _)) in link.spec.rate_schedule.iter().enumerate() {
                q.push(t, Ev::RateStep(l as u32, k as u32));
            }
        }
        q.push(Time(sc.sample_interval.0), Ev::Sample);
        World {
            sc,
            q,
            armed: vec![Armed::NONE; n],
            prefetching: n * std::mem::size_of::<FlowRt>() > PREFETCH_ABOVE,
            flows,
            net,
            kicked: Vec::new(),
            out: Vec::with_capacity(64),
            end: Time(sc.duration.0),
            samples: SampleCols::default(),
            capture,
            cc_state: DynColumns::default(),
            queue: QueueCols::default(),
            transitions: TransitionCols::default(),
            sink: None,
            batch_rows: usize::MAX,
        }
    }

    /// Hand the tables that grow with simulated time (`samples`, `queue`,
    /// `transitions`) to `sink` in batches of `batch_rows` rows as the run
    /// goes (`metrics::stream`); the results then hold only the others.
    /// Batching does not touch the simulation, nor the rows: joined, the
    /// batches are the tables a run without a sink returns.
    pub fn stream_to(&mut self, sink: Box<dyn Sink + 'a>, batch_rows: usize) {
        self.sink = Some(sink);
        self.batch_rows = batch_rows.max(1);
        self.samples = SampleCols::with_capacity(self.batch_room());
    }

    /// Run to the end of the scenario and build the result tables.
    pub fn run(self) -> Results {
        self.run_with_progress(u64::MAX, |_| true)
            .expect("never stopped")
    }

    /// Run as `run`, calling `progress` with the simulated time every
    /// `every` events; `progress` returning false stops the run, which then
    /// produces nothing (None). The calls do not touch the simulation: a
    /// run that completes has the same bits whatever `every` is.
    pub fn run_with_progress(
        mut self,
        every: u64,
        mut progress: impl FnMut(Time) -> bool,
    ) -> Option<Results> {
        let every = every.max(1);
        let mut until_call = every;
        while let Some((now, ev)) = self.next_event(self.end) {
            self.handle(now, ev);
            until_call -= 1;
            if until_call == 0 {
                until_call = every;
                if !progress(now) {
                    return None;
                }
            }
        }
        Some(self.into_results())
    }

    /// Run the events due up to `until` (at most to the scenario's end), for
    /// a caller that steps the simulation (a learning agent between its
    /// actions). Returns false once the scenario's end is reached. Stepping
    /// does not touch the simulation: the same scenario stepped at any
    /// times, or run in one go, gives the same bits.
    pub fn advance(&mut self, until: Time) -> bool {
        let until = until.min(self.end);
        while let Some((now, ev)) = self.next_event(until) {
            self.handle(now, ev);
        }
        until < self.end && self.q.peek_time().is_some_and(|t| t <= self.end)
    }

    /// The next event due by `until`, taken from the queue; with many
    /// flows, the two after it have their state prefetched.
    fn next_event(&mut self, until: Time) -> Option<(Time, Ev)> {
        if self.q.peek_time()? > until {
            return None;
        }
        let next = self.q.pop();
        if self.prefetching {
            if let Some(&ev) = self.q.peek_ahead(1) {
                self.prefetch(ev, Stage::Fields);
            }
            if let Some(&ev) = self.q.peek_ahead(0) {
                self.prefetch(ev, Stage::Heap);
            }
        }
        next
    }

    /// The result tables, once `advance` has reached the scenario's end
    /// (the tables describe the scenario's whole duration).
    pub fn into_results(self) -> Results {
        let stats = RunStats {
            events: self.q.processed(),
            bottleneck_packets: self.net.links.iter().map(|l| l.queue.departures).sum(),
            sim_time_ns: self.end.0,
        };
        let (tables, captures) = self.finish();
        Results {
            tables,
            stats,
            captures,
        }
    }

    /// Prefetch what event `ev` will read first (`hint`), in two stages
    /// for memory reached through a pointer: [`Stage::Fields`] two events
    /// ahead asks for the flow's own fields, [`Stage::Heap`] one event
    /// ahead reads those fields (arrived by then) and asks for the heap
    /// memory they point to. A Link event reads the flow of the packet its
    /// link holds ready to leave, whose receiver it will call.
    fn prefetch(&self, ev: Ev, stage: Stage) {
        let heap = stage == Stage::Heap;
        match ev {
            Ev::Fwd(i) => {
                let f = &self.flows[i as usize];
                if heap {
                    prefetch(f.fwd.head_addr(), 2);
                } else {
                    prefetch(addr(&f.fwd), 2);
                }
            }
            Ev::Rev(i) => {
                let f = &self.flows[i as usize];
                if heap {
                    prefetch(f.rev.head_addr(), 2);
                    self.prefetch_sender_heap(i);
                } else {
                    self.prefetch_sender(i);
                    prefetch(addr(&f.rev), 2);
                }
            }
            Ev::SenderTimer(i) => {
                if heap {
                    self.prefetch_sender_heap(i);
                } else {
                    self.prefetch_sender(i);
                }
            }
            Ev::RecvTimer(i) if !heap => prefetch(addr(&self.armed[i as usize]), 1),
            Ev::Link(l) => {
                if let Some(i) = self.net.links[l as usize].queue.held_flow() {
                    let f = &self.flows[i as usize];
                    if heap {
                        prefetch(f.rev.tail_addr(), 2);
                    } else {
                        prefetch(addr(&f.receiver), lines_of::<Receiver>());
                        prefetch(addr(&f.rev), 2);
                        prefetch(addr(&f.app), 3);
                        prefetch(addr(&self.armed[i as usize]), 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// What any sender event reads first: its deadline, the sender, and
    /// the forward path it sends on.
    fn prefetch_sender(&self, i: u32) {
        let f = &self.flows[i as usize];
        prefetch(addr(&self.armed[i as usize]), 1);
        prefetch(addr(&f.sender), lines_of::<Sender>());
        prefetch(addr(&f.fwd), 2);
    }

    /// What any sender event reads next through pointers: the sender's
    /// first entries on the heap and the slot its next packet takes.
    fn prefetch_sender_heap(&self, i: u32) {
        let f = &self.flows[i as usize];
        for a in f.sender.heap_addrs() {
            prefetch(a, 1);
        }
        prefetch(f.fwd.tail_addr(), 2);
    }

    fn handle(&mut self, now: Time, ev: Ev) {
        match ev {
            Ev::Start(i) => {
                let mut out = std::mem::take(&mut self.out);
                let f = &mut self.flows[i as usize];
                f.start = now;
                f.started = true;
                f.sender.start(now, &mut out);
                if let Some(t) = f.app.next_write(now, now) {
                    self.q.push(t, Ev::AppWrite(i));
                }
                self.send_forward(now, i, &mut out);
                self.out = out;
                self.arm_sender(i);
            }
            Ev::Fwd(i) => {
                let l = self.net.first_hop(i);
                let f = &mut self.flows[i as usize];
                let link = &mut self.net.links[l as usize].queue;
                while let Some(p) = f.fwd.pop_due(now) {
                    link.enqueue(now, p);
                }
                if let Some(t) = self.flows[i as usize].fwd.head_time() {
                    self.q.push(t, Ev::Fwd(i));
                }
                if self.net.links[l as usize].queue.wake.is_none() {
                    self.service_link(now, l);
                }
            }
            Ev::Link(l) => {
                let link = &mut self.net.links[l as usize].queue;
                if link.wake == Some(now) {
                    link.wake = None;
                    self.service_link(now, l);
                }
            }
            Ev::LinkOut(l) => {
                while let Some(p) = self.net.links[l as usize].line.pop_due(now) {
                    self.hop(now, l, p);
                }
                if let Some(t) = self.net.links[l as usize].line.head_time() {
                    self.q.push(t, Ev::LinkOut(l));
                }
                self.service_kicked(now);
            }
            Ev::Rev(i) => {
                let mut out = std::mem::take(&mut self.out);
                loop {
                    let f = &mut self.flows[i as usize];
                    let Some(p) = f.rev.pop_due(now) else { break };
                    self.capture.sender_receives(now, &p, &f.app);
                    f.sender.on_packet(now, &p, &mut out);
                }
                if let Some(t) = self.flows[i as usize].rev.head_time() {
                    self.q.push(t, Ev::Rev(i));
                }
                self.send_forward(now, i, &mut out);
                self.out = out;
                self.arm_sender(i);
                self.check_completion(now, i);
            }
            Ev::AppWrite(i) => {
                let mut out = std::mem::take(&mut self.out);
                let f = &mut self.flows[i as usize];
                f.sender.on_app_write(now, &mut out);
                if let Some(t) = f.app.next_write(now, f.start) {
                    self.q.push(t, Ev::AppWrite(i));
                }
                self.send_forward(now, i, &mut out);
                self.out = out;
                self.arm_sender(i);
            }
            Ev::SenderTimer(i) => {
                let a = &mut self.armed[i as usize];
                a.sender_event_fired(now);
                if a.sender != now {
                    // Before the deadline, which moved later since: re-arm.
                    let t = a.sender;
                    self.queue_sender_event(i, t);
                    return;
                }
                a.sender = Time::NEVER;
                let f = &mut self.flows[i as usize];
                let mut out = std::mem::take(&mut self.out);
                f.sender.on_timer(now, &mut out);
                self.send_forward(now, i, &mut out);
                self.out = out;
                self.arm_sender(i);
            }
            Ev::RecvTimer(i) => {
                let armed = &mut self.armed[i as usize].receiver;
                if *armed != now {
                    return;
                }
                *armed = Time::NEVER;
                let f = &mut self.flows[i as usize];
                if let Some(ack) = f.receiver.on_timer(now) {
                    self.send_reverse(now, i, ack);
                }
                self.arm_receiver(i);
            }
            Ev::RttStep(i, k) => {
                let spec = &self.sc.flows[i as usize];
                let rtt = spec.rtt_schedule[k as usize].1;
                let fwd = rtt.mul_f64(spec.rtt_split);
                let f = &mut self.flows[i as usize];
                f.fwd.set_delay(fwd);
                f.rev.set_delay(rtt - fwd + f.route_delay);
            }
            Ev::Stop(i) => {
                self.flows[i as usize].sender.stop_app(now);
                self.check_completion(now, i);
            }
            Ev::RateStep(l, k) => {
                let link = &mut self.net.links[l as usize];
                let rate = link.spec.rate_schedule[k as usize].1;
                link.queue.set_rate(now, rate);
                // A pending wake-up was computed at the old rate: recompute.
                link.queue.wake = None;
                self.service_link(now, l);
            }
            Ev::Sample => {
                self.sample(now);
                let next = now + self.sc.sample_interval;
                if next <= self.end {
                    self.q.push(next, Ev::Sample);
                }
            }
        }
    }

    /// When a flow completes, start its successor after the gap.
    fn check_completion(&mut self, now: Time, i: u32) {
        let f = &mut self.flows[i as usize];
        if f.sender.is_done() {
            if let Some((next, gap)) = f.successor.take() {
                self.q.push(now + gap, Ev::Start(next));
            }
            f.fwd.shrink();
            f.rev.shrink();
        }
    }

    fn send_forward(&mut self, now: Time, i: u32, out: &mut Vec<Packet>) {
        let f = &mut self.flows[i as usize];
        // Hosts for per-host queueing (CAKE): the sender's host, and one
        // receiver host per flow (ids folded into 16 bits).
        let src_host = f.src_host;
        for mut p in out.drain(..) {
            p.src_host = src_host;
            p.dst_host = i as u16;
            self.capture.sender_sends(now, &mut p, &f.app);
            if f.fwd.push(now, p) {
                let t = f.fwd.head_time().expect("just pushed");
                self.q.push(t, Ev::Fwd(i));
            }
        }
    }

    fn send_reverse(&mut self, now: Time, i: u32, mut p: Packet) {
        let f = &self.flows[i as usize];
        self.capture
            .receiver_sends(now, &mut p, &f.receiver, &f.app);
        // Two-way traffic: ACKs that cross links queue there first.
        if let Some(&l) = self.net.reverse_route(i).first() {
            self.net.links[l as usize].queue.enqueue(now, p);
            if self.net.links[l as usize].queue.wake.is_none() {
                self.service_link(now, l);
            }
            return;
        }
        self.onto_reverse_path(now, i, p);
    }

    /// An ACK takes flow `i`'s reverse path to its sender.
    fn onto_reverse_path(&mut self, now: Time, i: u32, p: Packet) {
        let f = &mut self.flows[i as usize];
        if f.rev.push(now, p) {
            let t = f.rev.head_time().expect("just pushed");
            self.q.push(t, Ev::Rev(i));
        }
    }

    /// Make sure an event comes for the sender's deadline, as it is after
    /// whatever touched the sender.
    fn arm_sender(&mut self, i: u32) {
        let t = self.flows[i as usize].sender.next_deadline();
        self.queue_sender_event(i, t);
    }

    /// Queue a sender event at its deadline `t` unless one queued comes no
    /// later (`Armed::need_sender_event`).
    fn queue_sender_event(&mut self, i: u32, t: Time) {
        if self.armed[i as usize].need_sender_event(t) {
            self.q.push(t, Ev::SenderTimer(i));
        }
    }

    fn arm_receiver(&mut self, i: u32) {
        if let Some(t) = self.flows[i as usize].receiver.deadline() {
            let armed = &mut self.armed[i as usize].receiver;
            if t < *armed {
                *armed = t;
                self.q.push(t, Ev::RecvTimer(i));
            }
        }
    }

    /// Let link `l` send what its tokens allow now, then every link its
    /// packets entered at once.
    fn service_link(&mut self, now: Time, l: u32) {
        self.service_one(now, l);
        self.service_kicked(now);
    }

    fn service_kicked(&mut self, now: Time) {
        while let Some(m) = self.kicked.pop() {
            if self.net.links[m as usize].queue.wake.is_none() {
                self.service_one(now, m);
            }
        }
    }

    fn service_one(&mut self, now: Time, l: u32) {
        let mut out = std::mem::take(&mut self.out);
        let link = &mut self.net.links[l as usize];
        let wake = link.queue.service(now, &mut out);
        if self.capture.at_links() {
            for p in &out {
                self.capture
                    .link_sends(now, l, p, &self.flows[p.flow as usize].app);
            }
        }
        for p in out.drain(..) {
            match self.net.links[l as usize].propagate(now, p) {
                Propagated::Through(p) => self.hop(now, l, p),
                Propagated::OnLine(Some(t)) => self.q.push(t, Ev::LinkOut(l)),
                Propagated::OnLine(None) | Propagated::Lost(_) => {}
            }
        }
        self.out = out;
        if let Some(t) = wake {
            self.net.links[l as usize].queue.wake = Some(t);
            self.q.push(t, Ev::Link(l));
        }
    }

    /// A packet done with link `l` (its queue and its delay) goes on: to the
    /// next link of its route, or to its receiver.
    fn hop(&mut self, now: Time, l: u32, p: Packet) {
        match self.net.next_hop(p.flow, l) {
            Hop::ReversePath => self.onto_reverse_path(now, p.flow, p),
            Hop::Receiver => self.deliver(now, p),
            Hop::Link(m) => {
                self.net.links[m as usize].queue.enqueue(now, p);
                self.kicked.push(m);
            }
        }
    }

    /// A packet leaves the bottleneck and reaches its receiver.
    fn deliver(&mut self, now: Time, p: Packet) {
        let i = p.flow;
        let f = &mut self.flows[i as usize];
        self.capture.receiver_receives(now, &p, &f.app);
        match p.kind {
            Kind::Syn => {
                let reply = f.receiver.on_syn(now);
                self.send_reverse(now, i, reply);
            }
            Kind::Data => {
                f.data_received += 1;
                for ack in f.receiver.on_data(now, &p).into_iter().flatten() {
                    self.send_reverse(now, i, ack);
                }
                self.arm_receiver(i);
            }
            Kind::SynAck | Kind::Ack => {}
        }
    }

    fn sample(&mut self, now: Time) {
        let interval = self.sc.sample_interval.secs_f64();
        let since = now - self.sc.sample_interval;
        for (i, f) in self.flows.iter_mut().enumerate() {
            // Only flows active during the interval have a row.
            if !f.started || f.sender.stats.completed_at.is_some_and(|t| t <= since) {
                continue;
            }
            let bytes = f.app.bytes_in(f.receiver.rcv_nxt(), f.mss);
            let snap = f.sender.sample();
            self.samples.push(SampleRow {
                time_s: now.secs_f64(),
                flow: i as i64,
                group: self.sc.flows[i].group as i64,
                goodput_mbps: (bytes - f.last_bytes) as f64 * 8.0 / interval / 1e6,
                delivered_bytes: bytes as i64,
                cwnd_pkts: snap.cwnd as f64,
                inflight_pkts: snap.in_flight as f64,
                srtt_ms: ms(snap.srtt),
                min_rtt_ms: ms(snap.min_rtt),
                pacing_rate_mbps: if snap.pacing_rate.is_inf() {
                    f64::NAN
                } else {
                    snap.pacing_rate.mbps_f64()
                },
                delivery_rate_mbps: snap.delivery_rate.mbps_f64(),
                retrans_segs: snap.segs_retrans as i64,
                queue_backlog_bytes: self
                    .net
                    .route(i as u32)
                    .iter()
                    .map(|&l| self.net.links[l as usize].queue.flows[i].backlog_bytes)
                    .sum::<u64>() as i64,
            });
            let cc = f.sender.cc();
            self.cc_state.push_row(|st| {
                if let Some(cc) = cc {
                    cc.write_state(st);
                }
            });
            f.last_bytes = bytes;
        }
        for link in &mut self.net.links {
            let capacity = link.spec.capacity_bits(since.0, now.0);
            self.queue.push(
                link.queue
                    .interval_row(&link.name, now.secs_f64(), capacity),
            );
        }
        self.gather_transitions();
        self.flush(false);
    }

    /// Move the senders' state changes since the last call into
    /// `transitions`.
    fn gather_transitions(&mut self) {
        for (i, f) in self.flows.iter_mut().enumerate() {
            for (t, from, to) in f.sender.transitions.drain(..) {
                self.transitions.push(TransitionRow {
                    time_s: t.secs_f64(),
                    flow: i as i64,
                    from: from.to_string(),
                    to: to.to_string(),
                });
            }
        }
    }

    /// With a sink, hand it `samples` once it has `batch_rows` rows or more
    /// (a batch leaves at a sample, so it can hold up to one interval's rows
    /// more), and `queue` and `transitions` with it (a link's rows or the
    /// state changes, fewer a sample than the flows', would otherwise fill
    /// their batches over a long run, and the run's memory would grow until
    /// they did) or when one of them has `batch_rows` rows itself; at the
    /// run's end (`at_end`), every one whatever its rows.
    fn flush(&mut self, at_end: bool) {
        let samples_go = at_end || self.samples.len() >= self.batch_rows;
        // The next batch's room at once: grown by doubling, its columns
        // would reach twice a batch.
        let room = if at_end { 0 } else { self.batch_room() };
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if samples_go {
            let mut t =
                std::mem::replace(&mut self.samples, SampleCols::with_capacity(room)).into_table();
            self.cc_state.take_into(&mut t, room);
            sink.put(t);
        }
        if samples_go || self.queue.len() >= self.batch_rows {
            sink.put(std::mem::take(&mut self.queue).into_table());
        }
        if samples_go || self.transitions.len() >= self.batch_rows {
            sink.put(std::mem::take(&mut self.transitions).into_table());
        }
    }

    /// Rows a batch of `samples` can reach: a batch and one interval's
    /// rows (at most 2^20 + flows, whatever `batch_rows`).
    fn batch_room(&self) -> usize {
        self.batch_rows.min(1 << 20) + self.flows.len()
    }

    /// The result tables, and the capture files.
    fn finish(mut self) -> (Vec<Table>, Vec<CaptureFile>) {
        let sc = self.sc;
        let end = self.end;
        let links = &self.net.links;
        // Data segments of each flow propagating on a link's delay line.
        let mut on_lines = vec![0u64; self.flows.len()];
        for link in links {
            for p in link.line.iter().filter(|p| p.kind == Kind::Data) {
                on_lines[p.flow as usize] += 1;
            }
        }
        // Payload delivered by the flows crossing each link.
        let mut link_bytes = vec![0u64; links.len()];
        let mut flows = FlowCols::with_capacity(self.flows.len());
        let (mut total_sent, mut total_retx) = (0u64, 0u64);
        let (mut srtt_sum, mut srtt_n) = (0.0, 0u64);
        let mut goodputs = Vec::with_capacity(self.flows.len());
        for (i, f) in self.flows.iter().enumerate() {
            if !f.started {
                continue; // a successive flow whose turn never came
            }
            let spec = &sc.flows[i];
            let st = &f.sender.stats;
            let snap = f.sender.sample();
            let done = st.completed_at;
            let fin = done.unwrap_or(end);
            let active = fin.since(f.start).secs_f64();
            let bytes = f.app.bytes_in(f.receiver.rcv_nxt(), f.mss);
            let goodput = if active > 0.0 {
                bytes as f64 * 8.0 / active / 1e6
            } else {
                f64::NAN
            };
            // The flow's counts at every link it crosses.
            let route = self.net.route(i as u32);
            let (mut overflow, mut aqm, mut policer, mut marks, mut queued) = (0, 0, 0, 0, 0);
            let mut line_lost = 0;
            let acks_dropped: u64 = self
                .net
                .reverse_route(i as u32)
                .iter()
                .map(|&l| links[l as usize].queue.flows[i].acks_dropped)
                .sum();
            for &l in route {
                let q = &links[l as usize].queue.flows[i];
                overflow += q.drops_overflow;
                aqm += q.drops_aqm;
                policer += q.drops_policer;
                line_lost += q.drops_random;
                marks += q.marks;
                queued += q.backlog_data_pkts;
                link_bytes[l as usize] += bytes;
            }
            // Data packets still travelling: on the forward path, in a link's
            // queue or on its delay line.
            let on_path = f.fwd.iter().filter(|p| p.kind == Kind::Data).count() as u64;
            let names: Vec<&str> = route
                .iter()
                .map(|&l| links[l as usize].name.as_str())
                .collect();
            flows.push(FlowRow {
                flow: i as i64,
                group: spec.group as i64,
                label: spec.label.clone(),
                cc: spec.cc.name().to_string(),
                rtt_ms: spec.rtt.ms_f64(),
                start_s: f.start.secs_f64(),
                end_s: fin.secs_f64(),
                size_bytes: spec.size.map_or(-1, |b| b.0 as i64),
                bytes: bytes as i64,
                bytes_acked: snap.bytes_acked as i64,
                goodput_mbps: goodput,
                segs_sent: st.segs_sent as i64,
                segs_retrans: st.segs_retrans as i64,
                retrans_rate: if st.segs_sent > 0 {
                    st.segs_retrans as f64 / st.segs_sent as f64
                } else {
                    0.0
                },
                srtt_mean_ms: if st.srtt_n > 0 {
                    st.srtt_sum_us / st.srtt_n as f64 / 1e3
                } else {
                    f64::NAN
                },
                min_rtt_ms: ms(snap.min_rtt),
                fct_s: done.map_or(f64::NAN, |t| t.since(f.start).secs_f64()),
                drops: (overflow + aqm + policer + f.fwd.lost + line_lost) as i64,
                drops_overflow: overflow as i64,
                drops_aqm: aqm as i64,
                drops_policer: policer as i64,
                drops_random: (f.fwd.lost + line_lost) as i64,
                acks_lost: (f.rev.lost + acks_dropped) as i64,
                marks: marks as i64,
                rto_count: st.rto_count as i64,
                segs_in_network: (on_path + queued + on_lines[i]) as i64,
                segs_received: f.data_received as i64,
                host: spec.host as i64,
                route: names.join(">"),
                ack_interval_mean_us: st.ack_gaps.mean() / 1e3,
                ack_interval_cv: st.ack_gaps.cv(),
            });
            total_sent += st.segs_sent;
            total_retx += st.segs_retrans;
            srtt_sum += st.srtt_sum_us;
            srtt_n += st.srtt_n;
            goodputs.push(goodput);
        }

        // Per link, and the run's totals over its links (the dumbbell's one
        // link gives the same numbers as before there were networks).
        let mut link_rows = LinkCols::with_capacity(links.len());
        let totals = self.net.totals();
        let mut payload_bits = 0u64;
        for (l, link) in links.iter().enumerate() {
            let q = &link.queue;
            let capacity = link.spec.run_capacity_bits(end.0);
            let qd = q.sojourn.qdelay_ms();
            link_rows.push(LinkRow {
                link: link.name.clone(),
                rate_mbps: link.spec.rate.mbps_f64(),
                delay_ms: link.delay.ms_f64(),
                flows: (0..self.flows.len())
                    .filter(|&i| {
                        self.flows[i].started && self.net.route(i as u32).contains(&(l as u32))
                    })
                    .count() as i64,
                utilization: link_bytes[l] as f64 * 8.0 / capacity,
                wire_utilization: q.wire_bytes_out as f64 * 8.0 / capacity,
                qdelay_mean_ms: qd[0],
                qdelay_p50_ms: qd[1],
                qdelay_p95_ms: qd[2],
                qdelay_p99_ms: qd[3],
                drops: q.drops as i64,
                packets: q.departures as i64,
                max_backlog_bytes: q.max_backlog.0 as i64,
                max_backlog_pkts: q.max_backlog.1 as i64,
            });
            payload_bits += link_bytes[l] * 8;
        }
        let capacity_bits = sc.run_capacity_bits();
        let qd = totals.sojourn.qdelay_ms();
        let mut summary = SummaryCols::with_capacity(1);
        summary.push(SummaryRow {
            duration_s: end.secs_f64(),
            rate_mbps: self.net.slowest_rate().mbps_f64(),
            flows: goodputs.len() as i64,
            utilization: payload_bits as f64 / capacity_bits,
            wire_utilization: totals.wire_bytes_out as f64 * 8.0 / capacity_bits,
            jain: jain(&goodputs),
            retrans_rate: if total_sent > 0 {
                total_retx as f64 / total_sent as f64
            } else {
                0.0
            },
            mean_rtt_ms: if srtt_n > 0 {
                srtt_sum / srtt_n as f64 / 1e3
            } else {
                f64::NAN
            },
            qdelay_mean_ms: qd[0],
            qdelay_p50_ms: qd[1],
            qdelay_p95_ms: qd[2],
            qdelay_p99_ms: qd[3],
            drops: totals.drops as i64,
            bottleneck_pkts: totals.departures as i64,
            max_backlog_bytes: totals.max_backlog.0 as i64,
            max_backlog_pkts: totals.max_backlog.1 as i64,
        });

        let mut tables = vec![summary.into_table(), flows.into_table()];
        self.gather_transitions();
        if self.sink.is_some() {
            self.flush(true);
        } else {
            let mut samples = std::mem::take(&mut self.samples).into_table();
            self.cc_state.take_into(&mut samples, 0);
            tables.push(samples);
            tables.push(std::mem::take(&mut self.queue).into_table());
            tables.push(std::mem::take(&mut self.transitions).into_table());
        }
        tables.push(link_rows.into_table());
        (tables, self.capture.finish())
    }
}

/// Run a normalized scenario to completion (with its captures, if it asks
/// for any).
pub fn run(sc: &Scenario) -> Results {
    run_with_progress(sc, u64::MAX, |_| true).expect("never stopped")
}

/// Run a normalized scenario, calling `progress` with the simulated time
/// every `every` events; None if `progress` stopped it.
pub fn run_with_progress(
    sc: &Scenario,
    every: u64,
    progress: impl FnMut(Time) -> bool,
) -> Option<Results> {
    run_streaming(sc, every, progress, None)
}

/// `run_with_progress`, the growing tables handed to `sink` in batches of
/// about `batch_rows` rows (`World::stream_to`) when there is one.
pub fn run_streaming<'a>(
    sc: &'a Scenario,
    every: u64,
    progress: impl FnMut(Time) -> bool,
    sink: Option<(Box<dyn Sink + 'a>, usize)>,
) -> Option<Results> {
    fn go<'a, T: Taps>(
        mut w: World<'a, T>,
        every: u64,
        progress: impl FnMut(Time) -> bool,
        sink: Option<(Box<dyn Sink + 'a>, usize)>,
    ) -> Option<Results> {
        if let Some((s, rows)) = sink {
            w.stream_to(s, rows);
        }
        w.run_with_progress(every, progress)
    }
    match &sc.capture {
        Some(spec) => go(World::capturing(sc, spec), every, progress, sink),
        None => go(World::new(sc), every, progress, sink),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefetching (`World::prefetch`) changes when memory arrives, never
    /// a result: a run with it forced on gives the same tables, bit for bit
    /// (their debug forms print each float exactly), as one with it off.
    #[test]
    fn prefetching_changes_no_bit() {
        let sc = crate::scenario::normalize_json(
            &serde_json::json!({
                "duration": "2s", "seed": 5,
                "bottleneck": {"rate": "100Mbps", "buffer": "1BDP"},
                "path": {"rtt": "20ms", "loss": "0.5%"},
                "flows": [
                    {"cc": "cubic", "count": 6},
                    {"cc": "bbr3", "count": 3, "start": "0.3s"},
                    {"cc": "reno", "count": 3, "size": "200KB"}
                ]
            })
            .to_string(),
        )
        .expect("valid scenario");
        let tables = |on: bool| {
            let mut w = World::new(&sc);
            w.prefetching = on;
            let r = w.run();
            assert!(r.stats.bottleneck_packets > 10_000);
            format!("{:?}", r.tables)
        };
        assert_eq!(tables(true), tables(false));
    }

    /// Streaming (`stream_to`) hands the growing tables over in batches of
    /// about `batch_rows` rows; joined (`stream::join`), they are the
    /// tables of a run that kept every row, bit for bit, though `samples`
    /// gains the later algorithms' state columns after its first batches
    /// left. The other tables are the same.
    #[test]
    fn batches_joined_are_the_whole_tables() {
        use crate::metrics::stream::{join, Sink};
        use std::cell::RefCell;
        use std::rc::Rc;

        struct Keep(Rc<RefCell<Vec<Table>>>);
        impl Sink for Keep {
            fn put(&mut self, batch: Table) {
                self.0.borrow_mut().push(batch);
            }
        }
        let sc = crate::scenario::normalize_json(
            &serde_json::json!({
                "duration": "3s", "seed": 2,
                "bottleneck": {"rate": "50Mbps", "buffer": "1BDP"},
                "path": {"rtt": "20ms", "loss": "0.2%"},
                "sample": {"interval": "50ms"},
                "flows": [
                    {"cc": "cubic", "count": 2},
                    {"cc": "bbr3", "start": "1s"},
                    {"cc": "bbr1", "start": "2s", "size": "300KB"}
                ]
            })
            .to_string(),
        )
        .expect("valid scenario");
        let whole = World::new(&sc).run();
        let got = Rc::new(RefCell::new(Vec::new()));
        let mut w = World::new(&sc);
        w.stream_to(Box::new(Keep(got.clone())), 7);
        let streamed = w.run();
        let batches = got.take();
        for name in ["samples", "queue", "transitions"] {
            let mine: Vec<Table> = batches.iter().filter(|b| b.name == name).cloned().collect();
            assert!(mine.len() > 3, "{name}: {} batches", mine.len());
            // A batch leaves at the first sample with 7 rows gathered: at
            // most 6 + one interval's rows (4 flows, 1 link).
            if name != "transitions" {
                assert!(mine.iter().all(|b| b.rows() <= 6 + 4), "{name}");
            }
            assert!(streamed.tables.iter().all(|t| t.name != name));
            let joined = join(mine).expect("batches");
            assert_eq!(
                format!("{joined:?}"),
                format!("{:?}", whole.table(name)),
                "{name}"
            );
        }
        let cols = |b: &Table| b.columns.len();
        let samples: Vec<&Table> = batches.iter().filter(|b| b.name == "samples").collect();
        assert!(cols(samples[0]) < cols(samples[samples.len() - 1]));
        for t in &streamed.tables {
            assert_eq!(format!("{t:?}"), format!("{:?}", whole.table(&t.name)));
        }
    }

    /// A deadline pushed back queues nothing while an earlier event is
    /// queued; that event, firing before the deadline, asks for one at the
    /// deadline; an earlier deadline is queued at once.
    #[test]
    fn sender_events_follow_the_deadline_as_linux_rearms() {
        let mut a = Armed::NONE;
        assert!(a.need_sender_event(Time(10)));
        // Sends push the loss probe back: no new events.
        assert!(!a.need_sender_event(Time(20)));
        assert!(!a.need_sender_event(Time(30)));
        // A pacing wait before it: queued.
        assert!(a.need_sender_event(Time(5)));
        assert_eq!(a.queued, [Time(5), Time(10), Time::NEVER]);
        a.sender_event_fired(Time(5));
        // After the send, the deadline is the loss probe at 40: the event
        // at 10 comes first.
        assert!(!a.need_sender_event(Time(40)));
        a.sender_event_fired(Time(10));
        assert_eq!(a.queued, [Time::NEVER; 3]);
        // Fired early (10 < 40): it re-arms at the deadline.
        assert!(a.need_sender_event(Time(40)));
        // No deadline: nothing queued.
        a.sender_event_fired(Time(40));
        assert!(!a.need_sender_event(Time::NEVER));
        // More than three queued: the latest is no longer kept.
        for t in [50, 40, 30, 20] {
            assert!(a.need_sender_event(Time(t)));
        }
        assert_eq!(a.queued, [Time(20), Time(30), Time(40)]);
    }
}
