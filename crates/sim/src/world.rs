//! Builds the dumbbell from a normalized scenario, runs the event loop and
//! returns the result tables. The only owner of the clock.
//!
//! Data path of flow i: sender -> forward path (access link at
//! `access_rate`, then the forward share of the RTT) -> bottleneck
//! (shaper + qdisc) -> receiver. ACK path: receiver -> reverse path (same
//! access rate, the reverse share of the RTT) -> sender. The bottleneck
//! hands packets to the receiver the moment its tokens allow (see
//! net::bottleneck), so all propagation delay sits in the two paths.

use crate::app::{App, Chunks};
use crate::cc::CongestionControl;
use crate::metrics::collect::{jain, DynColumns};
use crate::metrics::table::Table;
use crate::net::bottleneck::Bottleneck;
use crate::net::host::{HostLatency, HostNoise};
use crate::net::path::{flow_paths, Path};
use crate::packet::{Kind, Packet};
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::sched::EventQueue;
use crate::tcp::receiver::{AckOptions, EcnEcho, Receiver};
use crate::tcp::sender::{Sender, SenderConfig};
use crate::units::{Bytes, Dur, Rate, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Start(u32),
    /// The head of flow i's forward path reaches the bottleneck.
    Fwd(u32),
    /// The head of flow i's reverse path reaches the sender.
    Rev(u32),
    Bottleneck,
    SenderTimer(u32),
    /// Flow i's receiver: its delayed-ACK or compressed-SACK timer.
    RecvTimer(u32),
    /// Flow i's application writes its next chunk.
    AppWrite(u32),
    /// Flow i's RTT takes step k of its schedule.
    RttStep(u32, u32),
    /// The bottleneck rate takes step k of its schedule.
    RateStep(u32),
    /// Flow i's application stops writing.
    Stop(u32),
    Sample,
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
    timer_at: Option<Time>,
    recv_timer_at: Option<Time>,
    /// Receiver-side bytes at the previous sample, for interval goodput.
    last_bytes: u64,
    /// Data packets that reached the receiver.
    data_received: u64,
    started: bool,
    /// The successive flow that starts after this one completes, and its gap.
    successor: Option<(u32, Dur)>,
}

struct SampleCols {
    time: Vec<f64>,
    flow: Vec<i64>,
    group: Vec<i64>,
    goodput: Vec<f64>,
    delivered: Vec<i64>,
    cwnd: Vec<f64>,
    inflight: Vec<f64>,
    srtt: Vec<f64>,
    min_rtt: Vec<f64>,
    pacing: Vec<f64>,
    delivery: Vec<f64>,
    retrans: Vec<i64>,
    backlog: Vec<i64>,
    cc: DynColumns,
}

struct QueueCols {
    time: Vec<f64>,
    bytes: Vec<i64>,
    pkts: Vec<i64>,
    soj_mean: Vec<f64>,
    soj_max: Vec<f64>,
    drops: Vec<i64>,
    drops_overflow: Vec<i64>,
    drops_aqm: Vec<i64>,
    marks: Vec<i64>,
    wire_util: Vec<f64>,
}

pub struct World<'a> {
    sc: &'a Scenario,
    q: EventQueue<Ev>,
    flows: Vec<FlowRt>,
    bn: Bottleneck,
    out: Vec<Packet>,
    end: Time,
    samples: SampleCols,
    queue: QueueCols,
    /// Bottleneck wire bytes sent up to the previous sample.
    last_wire_bytes: u64,
}

fn ms(d: Option<Dur>) -> f64 {
    d.map_or(f64::NAN, |d| d.ms_f64())
}

impl<'a> World<'a> {
    pub fn new(sc: &'a Scenario) -> World<'a> {
        let n = sc.flows.len();
        let mut flows = Vec::with_capacity(n);
        for (i, f) in sc.flows.iter().enumerate() {
            let app = if !f.chunks.is_empty() {
                App::Chunks(Chunks::new(
                    f.chunks.iter().map(|&(o, b)| (Dur(o), b)).collect(),
                    f.mss,
                ))
            } else {
                match f.size_bytes {
                    Some(b) => App::Sized { bytes: b },
                    None => App::Bulk,
                }
            };
            let cfg = SenderConfig {
                flow: f.id,
                mss: f.mss,
                init_cwnd: f.init_cwnd,
                pacing: f.pacing.clone(),
                rwnd_segs: f.rwnd_bytes.map(|b| ((b / f.mss as u64) as u32).max(1)),
                ecn: f.ecn,
                cc_seed: Rng::stream(sc.seed, &format!("flow{i}.cc")).next_u64(),
                tso_defer: sc.hosts.tso_defer,
                push_marks: sc.hosts.push_acks,
            };
            let (fwd, mut rev) = flow_paths(sc, i, Rate(f.access_rate_bps));
            if sc.hosts.latency == HostLatency::Measured {
                rev = rev.with_host_noise(HostNoise::new(Rng::stream(
                    sc.seed,
                    &format!("flow{i}.host"),
                )));
            }
            let echo = match f.cc.as_str() {
                "dctcp" | "bbr2" | "bbr3" => EcnEcho::Accurate,
                _ => EcnEcho::Rfc3168,
            };
            flows.push(FlowRt {
                sender: Sender::new(cfg, sc.cc_config(i), app.clone()),
                receiver: Receiver::new(
                    f.id,
                    echo,
                    AckOptions {
                        sack_compress: sc.hosts.sack_compress,
                        push_acks: sc.hosts.push_acks,
                    },
                ),
                fwd,
                rev,
                app,
                mss: f.mss,
                start: Time(f.start_ns),
                timer_at: None,
                recv_timer_at: None,
                last_bytes: 0,
                data_received: 0,
                started: false,
                successor: None,
            });
        }
        for f in &sc.flows {
            if let Some(a) = f.after {
                flows[a.flow as usize].successor = Some((f.id, Dur(a.gap_ns)));
            }
        }
        let b = &sc.bottleneck;
        let bn = Bottleneck::new(
            Rate(b.rate_bps),
            Bytes(b.burst_bytes),
            b.qdisc.build(),
            Rng::stream(sc.seed, "bottleneck.qdisc"),
            n,
        );
        let mut q = EventQueue::new();
        for f in sc.flows.iter().filter(|f| f.after.is_none()) {
            q.push(Time(f.start_ns), Ev::Start(f.id));
        }
        for f in &sc.flows {
            for (k, &(t, _)) in f.rtt_schedule.iter().enumerate() {
                q.push(Time(t), Ev::RttStep(f.id, k as u32));
            }
        }
        for f in &sc.flows {
            if let Some(t) = f.stop_ns {
                q.push(Time(t), Ev::Stop(f.id));
            }
        }
        for (k, &(t, _)) in sc.bottleneck.rate_schedule.iter().enumerate() {
            q.push(Time(t), Ev::RateStep(k as u32));
        }
        q.push(Time(sc.sample_interval_ns), Ev::Sample);
        World {
            sc,
            q,
            flows,
            bn,
            out: Vec::with_capacity(64),
            end: Time(sc.duration_ns),
            samples: SampleCols {
                time: vec![],
                flow: vec![],
                group: vec![],
                goodput: vec![],
                delivered: vec![],
                cwnd: vec![],
                inflight: vec![],
                srtt: vec![],
                min_rtt: vec![],
                pacing: vec![],
                delivery: vec![],
                retrans: vec![],
                backlog: vec![],
                cc: DynColumns::default(),
            },
            queue: QueueCols {
                time: vec![],
                bytes: vec![],
                pkts: vec![],
                soj_mean: vec![],
                soj_max: vec![],
                drops: vec![],
                drops_overflow: vec![],
                drops_aqm: vec![],
                marks: vec![],
                wire_util: vec![],
            },
            last_wire_bytes: 0,
        }
    }

    /// Run to the end of the scenario and build the result tables.
    pub fn run(mut self) -> Results {
        while let Some(t) = self.q.peek_time() {
            if t > self.end {
                break;
            }
            let (now, ev) = self.q.pop().expect("peeked");
            self.handle(now, ev);
        }
        let stats = RunStats {
            events: self.q.processed(),
            bottleneck_packets: self.bn.departures,
            sim_time_ns: self.end.0,
        };
        Results {
            tables: self.finish(),
            stats,
        }
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
                let f = &mut self.flows[i as usize];
                while let Some(p) = f.fwd.pop_due(now) {
                    self.bn.enqueue(now, p);
                }
                if let Some(t) = self.flows[i as usize].fwd.head_time() {
                    self.q.push(t, Ev::Fwd(i));
                }
                if self.bn.wake.is_none() {
                    self.service_bottleneck(now);
                }
            }
            Ev::Bottleneck => {
                if self.bn.wake == Some(now) {
                    self.bn.wake = None;
                    self.service_bottleneck(now);
                }
            }
            Ev::Rev(i) => {
                let mut out = std::mem::take(&mut self.out);
                loop {
                    let f = &mut self.flows[i as usize];
                    let Some(p) = f.rev.pop_due(now) else { break };
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
                let f = &mut self.flows[i as usize];
                if f.timer_at != Some(now) {
                    return; // superseded by an earlier deadline
                }
                f.timer_at = None;
                let mut out = std::mem::take(&mut self.out);
                f.sender.on_timer(now, &mut out);
                self.send_forward(now, i, &mut out);
                self.out = out;
                self.arm_sender(i);
            }
            Ev::RecvTimer(i) => {
                let f = &mut self.flows[i as usize];
                if f.recv_timer_at != Some(now) {
                    return;
                }
                f.recv_timer_at = None;
                if let Some(ack) = f.receiver.on_timer(now) {
                    self.send_reverse(now, i, ack);
                }
                self.arm_receiver(i);
            }
            Ev::RttStep(i, k) => {
                let spec = &self.sc.flows[i as usize];
                let rtt = Dur(spec.rtt_schedule[k as usize].1);
                let fwd = rtt.mul_f64(spec.rtt_split);
                let f = &mut self.flows[i as usize];
                f.fwd.set_delay(fwd);
                f.rev.set_delay(rtt - fwd);
            }
            Ev::Stop(i) => {
                self.flows[i as usize].sender.stop_app(now);
                self.check_completion(now, i);
            }
            Ev::RateStep(k) => {
                let rate = Rate(self.sc.bottleneck.rate_schedule[k as usize].1);
                self.bn.set_rate(now, rate);
                // A pending wake-up was computed at the old rate: recompute.
                self.bn.wake = None;
                self.service_bottleneck(now);
            }
            Ev::Sample => {
                self.sample(now);
                let next = now + Dur(self.sc.sample_interval_ns);
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
        let src_host = self.sc.flows[i as usize].host as u16;
        for mut p in out.drain(..) {
            p.src_host = src_host;
            p.dst_host = i as u16;
            if f.fwd.push(now, p) {
                let t = f.fwd.head_time().expect("just pushed");
                self.q.push(t, Ev::Fwd(i));
            }
        }
    }

    fn send_reverse(&mut self, now: Time, i: u32, p: Packet) {
        let f = &mut self.flows[i as usize];
        if f.rev.push(now, p) {
            let t = f.rev.head_time().expect("just pushed");
            self.q.push(t, Ev::Rev(i));
        }
    }

    /// Keep one pending timer event per sender, at its earliest deadline.
    fn arm_sender(&mut self, i: u32) {
        let f = &mut self.flows[i as usize];
        if let Some(t) = f.sender.next_deadline() {
            if f.timer_at.is_none_or(|at| t < at) {
                f.timer_at = Some(t);
                self.q.push(t, Ev::SenderTimer(i));
            }
        }
    }

    fn arm_receiver(&mut self, i: u32) {
        let f = &mut self.flows[i as usize];
        if let Some(t) = f.receiver.deadline() {
            if f.recv_timer_at.is_none_or(|at| t < at) {
                f.recv_timer_at = Some(t);
                self.q.push(t, Ev::RecvTimer(i));
            }
        }
    }

    fn service_bottleneck(&mut self, now: Time) {
        let mut out = std::mem::take(&mut self.out);
        let wake = self.bn.service(now, &mut out);
        for p in out.drain(..) {
            self.deliver(now, p);
        }
        self.out = out;
        if let Some(t) = wake {
            self.bn.wake = Some(t);
            self.q.push(t, Ev::Bottleneck);
        }
    }

    /// A packet leaves the bottleneck and reaches its receiver.
    fn deliver(&mut self, now: Time, p: Packet) {
        let i = p.flow;
        let f = &mut self.flows[i as usize];
        match p.kind {
            Kind::Syn => {
                f.receiver.on_syn(now);
                let reply = Packet::control(i, Kind::SynAck);
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
        let interval = Dur(self.sc.sample_interval_ns).secs_f64();
        let s = &mut self.samples;
        let since = now - Dur(self.sc.sample_interval_ns);
        for (i, f) in self.flows.iter_mut().enumerate() {
            // Only flows active during the interval have a row.
            if !f.started || f.sender.stats.completed_at.is_some_and(|t| t <= since) {
                continue;
            }
            let bytes = f.app.bytes_in(f.receiver.rcv_nxt(), f.mss);
            let snap = f.sender.sample();
            s.time.push(now.secs_f64());
            s.flow.push(i as i64);
            s.group.push(self.sc.flows[i].group as i64);
            s.goodput
                .push((bytes - f.last_bytes) as f64 * 8.0 / interval / 1e6);
            s.delivered.push(bytes as i64);
            s.cwnd.push(snap.cwnd as f64);
            s.inflight.push(snap.in_flight as f64);
            s.srtt.push(ms(snap.srtt));
            s.min_rtt.push(ms(snap.min_rtt));
            s.pacing.push(if snap.pacing_rate.is_inf() {
                f64::NAN
            } else {
                snap.pacing_rate.mbps_f64()
            });
            s.delivery.push(snap.delivery_rate.mbps_f64());
            s.retrans.push(snap.segs_retrans as i64);
            s.backlog.push(self.bn.flows[i].backlog_bytes as i64);
            let cc = f.sender.cc();
            s.cc.push_row(|st| {
                if let Some(cc) = cc {
                    cc.write_state(st);
                }
            });
            f.last_bytes = bytes;
        }
        let (sum, max, n) = std::mem::take(&mut self.bn.interval_sojourn);
        let q = &mut self.queue;
        q.time.push(now.secs_f64());
        q.bytes.push(self.bn.backlog_bytes() as i64);
        q.pkts.push(self.bn.backlog_packets() as i64);
        q.soj_mean.push(if n == 0 {
            f64::NAN
        } else {
            sum as f64 / n as f64 / 1e6
        });
        q.soj_max
            .push(if n == 0 { f64::NAN } else { max as f64 / 1e6 });
        q.drops.push(self.bn.drops as i64);
        let (mut of, mut aqm, mut marks) = (0, 0, 0);
        for fq in &self.bn.flows {
            of += fq.drops_overflow;
            aqm += fq.drops_aqm;
            marks += fq.marks;
        }
        q.drops_overflow.push(of as i64);
        q.drops_aqm.push(aqm as i64);
        q.marks.push(marks as i64);
        let sent = self.bn.wire_bytes_out - self.last_wire_bytes;
        self.last_wire_bytes = self.bn.wire_bytes_out;
        q.wire_util
            .push(sent as f64 * 8.0 / self.sc.bottleneck.capacity_bits(since.0, now.0));
    }

    fn finish(self) -> Vec<Table> {
        let sc = self.sc;
        let end = self.end;
        let rate = Rate(sc.bottleneck.rate_bps);
        let mut flows = Table::new("flows");
        let n = self.flows.len();
        let mut c_flow = Vec::with_capacity(n);
        let mut c_group = Vec::with_capacity(n);
        let mut c_label = Vec::with_capacity(n);
        let mut c_cc = Vec::with_capacity(n);
        let mut c_rtt = Vec::with_capacity(n);
        let mut c_start = Vec::with_capacity(n);
        let mut c_end = Vec::with_capacity(n);
        let mut c_size = Vec::with_capacity(n);
        let mut c_bytes = Vec::with_capacity(n);
        let mut c_acked = Vec::with_capacity(n);
        let mut c_goodput = Vec::with_capacity(n);
        let mut c_sent = Vec::with_capacity(n);
        let mut c_retx = Vec::with_capacity(n);
        let mut c_retx_rate = Vec::with_capacity(n);
        let mut c_srtt = Vec::with_capacity(n);
        let mut c_min_rtt = Vec::with_capacity(n);
        let mut c_fct = Vec::with_capacity(n);
        let mut c_drops = Vec::with_capacity(n);
        let mut c_marks = Vec::with_capacity(n);
        let mut c_rtos = Vec::with_capacity(n);
        let mut c_in_net = Vec::with_capacity(n);
        let mut c_received = Vec::with_capacity(n);
        let mut c_host = Vec::with_capacity(n);
        let mut c_drop_of = Vec::with_capacity(n);
        let mut c_drop_aqm = Vec::with_capacity(n);
        let mut c_drop_rand = Vec::with_capacity(n);
        let mut c_ack_lost = Vec::with_capacity(n);
        let (mut total_bytes, mut total_sent, mut total_retx) = (0u64, 0u64, 0u64);
        let (mut srtt_sum, mut srtt_n) = (0.0, 0u64);
        let mut goodputs = Vec::with_capacity(n);
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
            let q = &self.bn.flows[i];
            // Data packets still travelling: on the forward path or in the bottleneck.
            let on_path = f.fwd.iter().filter(|p| p.kind == Kind::Data).count() as u64;
            c_flow.push(i as i64);
            c_group.push(spec.group as i64);
            c_label.push(spec.label.clone());
            c_cc.push(spec.cc.clone());
            c_rtt.push(spec.rtt_ns as f64 / 1e6);
            c_start.push(f.start.secs_f64());
            c_end.push(fin.secs_f64());
            c_size.push(spec.size_bytes.map_or(-1, |b| b as i64));
            c_bytes.push(bytes as i64);
            c_acked.push(snap.bytes_acked as i64);
            c_goodput.push(goodput);
            c_sent.push(st.segs_sent as i64);
            c_retx.push(st.segs_retrans as i64);
            c_retx_rate.push(if st.segs_sent > 0 {
                st.segs_retrans as f64 / st.segs_sent as f64
            } else {
                0.0
            });
            c_srtt.push(if st.srtt_n > 0 {
                st.srtt_sum_us / st.srtt_n as f64 / 1e3
            } else {
                f64::NAN
            });
            c_min_rtt.push(ms(snap.min_rtt));
            c_fct.push(done.map_or(f64::NAN, |t| t.since(f.start).secs_f64()));
            c_drops.push((q.drops_overflow + q.drops_aqm + f.fwd.lost) as i64);
            c_drop_of.push(q.drops_overflow as i64);
            c_drop_aqm.push(q.drops_aqm as i64);
            c_drop_rand.push(f.fwd.lost as i64);
            c_ack_lost.push(f.rev.lost as i64);
            c_marks.push(q.marks as i64);
            c_rtos.push(st.rto_count as i64);
            c_in_net.push((on_path + q.backlog_data_pkts) as i64);
            c_received.push(f.data_received as i64);
            c_host.push(spec.host as i64);
            total_bytes += bytes;
            total_sent += st.segs_sent;
            total_retx += st.segs_retrans;
            srtt_sum += st.srtt_sum_us;
            srtt_n += st.srtt_n;
            goodputs.push(goodput);
        }
        flows.i64("flow", c_flow);
        flows.i64("group", c_group);
        flows.str("label", c_label);
        flows.str("cc", c_cc);
        flows.f64("rtt_ms", c_rtt);
        flows.f64("start_s", c_start);
        flows.f64("end_s", c_end);
        flows.i64("size_bytes", c_size);
        flows.i64("bytes", c_bytes);
        flows.i64("bytes_acked", c_acked);
        flows.f64("goodput_mbps", c_goodput);
        flows.i64("segs_sent", c_sent);
        flows.i64("segs_retrans", c_retx);
        flows.f64("retrans_rate", c_retx_rate);
        flows.f64("srtt_mean_ms", c_srtt);
        flows.f64("min_rtt_ms", c_min_rtt);
        flows.f64("fct_s", c_fct);
        flows.i64("drops", c_drops);
        flows.i64("drops_overflow", c_drop_of);
        flows.i64("drops_aqm", c_drop_aqm);
        flows.i64("drops_random", c_drop_rand);
        flows.i64("acks_lost", c_ack_lost);
        flows.i64("marks", c_marks);
        flows.i64("rto_count", c_rtos);
        flows.i64("segs_in_network", c_in_net);
        flows.i64("segs_received", c_received);
        flows.i64("host", c_host);

        let dur = end.secs_f64();
        let capacity_bits = sc.run_capacity_bits();
        let mut summary = Table::new("summary");
        summary.f64("duration_s", vec![dur]);
        summary.f64("rate_mbps", vec![rate.mbps_f64()]);
        summary.i64("flows", vec![goodputs.len() as i64]);
        summary.f64(
            "utilization",
            vec![total_bytes as f64 * 8.0 / capacity_bits],
        );
        summary.f64(
            "wire_utilization",
            vec![self.bn.wire_bytes_out as f64 * 8.0 / capacity_bits],
        );
        summary.f64("jain", vec![jain(&goodputs)]);
        summary.f64(
            "retrans_rate",
            vec![if total_sent > 0 {
                total_retx as f64 / total_sent as f64
            } else {
                0.0
            }],
        );
        summary.f64(
            "mean_rtt_ms",
            vec![if srtt_n > 0 {
                srtt_sum / srtt_n as f64 / 1e3
            } else {
                f64::NAN
            }],
        );
        let h = &self.bn.sojourn;
        summary.f64("qdelay_mean_ms", vec![h.mean() / 1e6]);
        summary.f64("qdelay_p50_ms", vec![h.quantile(0.50) / 1e6]);
        summary.f64("qdelay_p95_ms", vec![h.quantile(0.95) / 1e6]);
        summary.f64("qdelay_p99_ms", vec![h.quantile(0.99) / 1e6]);
        summary.i64("drops", vec![self.bn.drops as i64]);
        summary.i64("bottleneck_pkts", vec![self.bn.departures as i64]);
        summary.i64("max_backlog_bytes", vec![self.bn.max_backlog.0 as i64]);
        summary.i64("max_backlog_pkts", vec![self.bn.max_backlog.1 as i64]);

        let s = self.samples;
        let mut samples = Table::new("samples");
        samples.f64("time_s", s.time);
        samples.i64("flow", s.flow);
        samples.i64("group", s.group);
        samples.f64("goodput_mbps", s.goodput);
        samples.i64("delivered_bytes", s.delivered);
        samples.f64("cwnd_pkts", s.cwnd);
        samples.f64("inflight_pkts", s.inflight);
        samples.f64("srtt_ms", s.srtt);
        samples.f64("min_rtt_ms", s.min_rtt);
        samples.f64("pacing_rate_mbps", s.pacing);
        samples.f64("delivery_rate_mbps", s.delivery);
        samples.i64("retrans_segs", s.retrans);
        samples.i64("queue_backlog_bytes", s.backlog);
        s.cc.append_to(&mut samples);

        let q = self.queue;
        let mut queue = Table::new("queue");
        queue.f64("time_s", q.time);
        queue.i64("backlog_bytes", q.bytes);
        queue.i64("backlog_pkts", q.pkts);
        queue.f64("sojourn_mean_ms", q.soj_mean);
        queue.f64("sojourn_max_ms", q.soj_max);
        queue.i64("drops", q.drops);
        queue.i64("drops_overflow", q.drops_overflow);
        queue.i64("drops_aqm", q.drops_aqm);
        queue.i64("marks", q.marks);
        queue.f64("wire_utilization", q.wire_util);

        let mut transitions = Table::new("transitions");
        let (mut t_time, mut t_flow, mut t_from, mut t_to) = (vec![], vec![], vec![], vec![]);
        for (i, f) in self.flows.iter().enumerate() {
            for &(t, from, to) in &f.sender.transitions {
                t_time.push(t.secs_f64());
                t_flow.push(i as i64);
                t_from.push(from.to_string());
                t_to.push(to.to_string());
            }
        }
        transitions.f64("time_s", t_time);
        transitions.i64("flow", t_flow);
        transitions.str("from", t_from);
        transitions.str("to", t_to);

        vec![summary, flows, samples, queue, transitions]
    }
}

/// Run a normalized scenario to completion.
pub fn run(sc: &Scenario) -> Results {
    World::new(sc).run()
}
