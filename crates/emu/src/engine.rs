//! The forwarding loop: read frames from both interfaces, classify them,
//! run the [`Pipeline`] against CLOCK_MONOTONIC, send each frame when it is
//! due, sample the queue, and write the self-check statistics at the end.

use crate::frame::{self, TcpFrame, WindowClamps};
use crate::pipeline::{Pipeline, Release};
use crate::sys::{self, PacketSocket};
use crate::turnaround::TurnaroundMeter;
use ccarena_sim::metrics::collect::RunningStats;
use ccarena_sim::metrics::hist::Histogram;
use ccarena_sim::metrics::schema::QUEUE;
use ccarena_sim::net::bottleneck::FlowQueueStats;
use ccarena_sim::net::network::Network;
use ccarena_sim::packet::Kind;
use ccarena_sim::scenario::Scenario;
use ccarena_sim::units::Time;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Largest frame we expect: with TSO/GSO/GRO off on the veths a frame is at
/// most the MTU plus the Ethernet header. Larger ones mean offloads are on.
pub const MAX_FRAME: usize = 2048;

pub struct Config {
    pub scenario: Scenario,
    /// The router's interface towards the senders (data arrives here, ACKs leave here).
    pub if_senders: String,
    /// The router's interface towards the receivers.
    pub if_receivers: String,
    /// Flow `i` is the TCP connection to receiver port `port_base + i`.
    pub port_base: u16,
    /// CLOCK_MONOTONIC (ns) of the run's time zero.
    pub t0_ns: u64,
    /// Stop by itself this long after time zero, even if nobody says so.
    pub stop_after_ns: u64,
    pub out_dir: PathBuf,
    /// Busy-poll the last `spin_ns` before a due time instead of sleeping.
    pub spin_ns: u64,
    /// Release frames due within this horizon together (0 = each at its time).
    pub batch_ns: u64,
    /// Ask for SCHED_FIFO.
    pub realtime: bool,
    /// Run only on this CPU.
    pub cpu: Option<usize>,
    /// Write every flow frame's arrival and release to `out_dir/frames.csv`.
    pub trace: bool,
}

/// One line of `frames.csv`: `side` 0 is the senders' interface.
/// `due` is when a released frame was scheduled (its arrival time for an arrival).
fn trace_line(
    w: &mut impl Write,
    t: Time,
    ev: char,
    side: usize,
    flow: u32,
    f: &TcpFrame,
    due: Time,
) -> io::Result<()> {
    let s = if side == SENDERS { 's' } else { 'r' };
    writeln!(
        w,
        "{},{ev},{s},{flow},{},{},{},{}",
        t.0, f.seq, f.ack, f.payload, due.0
    )
}

/// Frames waiting in the pipeline, by slot (`Packet::tag`).
#[derive(Default)]
pub struct FrameStore {
    bufs: Vec<Vec<u8>>,
    free: Vec<u32>,
    pub live: usize,
    pub peak: usize,
}

impl FrameStore {
    pub fn put(&mut self, data: &[u8]) -> u32 {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        if let Some(i) = self.free.pop() {
            let b = &mut self.bufs[i as usize];
            b.clear();
            b.extend_from_slice(data);
            i
        } else {
            self.bufs.push(data.to_vec());
            (self.bufs.len() - 1) as u32
        }
    }
    pub fn get_mut(&mut self, tag: u32) -> &mut Vec<u8> {
        &mut self.bufs[tag as usize]
    }
    pub fn release(&mut self, tag: u32) {
        self.live -= 1;
        self.free.push(tag);
    }
}

/// Which flow a TCP frame belongs to, from the receiver's port: the
/// destination port of frames from the senders, the source port of frames
/// from the receivers.
pub fn classify(t: &TcpFrame, from_senders: bool, port_base: u16, nflows: usize) -> Option<u32> {
    let port = if from_senders { t.dport } else { t.sport };
    let i = port.checked_sub(port_base)? as usize;
    (i < nflows).then_some(i as u32)
}

#[derive(Default)]
struct Counters {
    frames_fwd: u64,
    frames_rev: u64,
    frames_other: u64,
    oversize: u64,
    sent: u64,
    send_nobuf: u64,
    rx_packets: [u64; 2],
    rx_sock_drops: [u64; 2],
    flow_fwd_frames: Vec<u64>,
    flow_rev_frames: Vec<u64>,
    /// Gaps between pure ACKs released to each flow's sender, and the last
    /// release (the simulator's `ack_interval_*`, measured here).
    ack_gaps: Vec<RunningStats>,
    last_ack: Vec<Option<u64>>,
    loops: u64,
    sleeps: u64,
    late_over_1ms: u64,
}

struct Sampler {
    interval: u64,
    next: u64,
    end: u64,
    queue: BufWriter<File>,
    flowq: BufWriter<File>,
}

impl Sampler {
    fn new(cfg: &Config) -> io::Result<Sampler> {
        let mut queue = BufWriter::new(File::create(cfg.out_dir.join("queue.csv"))?);
        writeln!(queue, "{}", QUEUE.csv_header())?;
        queue.flush()?;
        let mut flowq = BufWriter::new(File::create(cfg.out_dir.join("flow_queue.csv"))?);
        writeln!(
            flowq,
            "time_s,flow,queue_backlog_bytes,drops_overflow,drops_aqm,drops_policer,drops_random,acks_lost,marks"
        )?;
        flowq.flush()?;
        Ok(Sampler {
            interval: cfg.scenario.sample_interval.0,
            next: cfg.scenario.sample_interval.0,
            end: cfg.scenario.duration.0,
            queue,
            flowq,
        })
    }

    fn due(&self) -> Option<u64> {
        (self.next <= self.end).then_some(self.next)
    }

    fn sample(&mut self, p: &mut Pipeline) -> io::Result<()> {
        let t = self.next as f64 / 1e9;
        let from = self.next.saturating_sub(self.interval);
        // A row per link, as the simulator samples its network.
        for link in &mut p.net.links {
            let capacity = link.spec.capacity_bits(from, self.next);
            let row = link.queue.interval_row(&link.name, t, capacity);
            writeln!(self.queue, "{}", row.csv_line())?;
        }
        for i in 0..p.flows() {
            let f = flow_counts(&p.net, i);
            let (rand, acks) = p.random_losses(i);
            writeln!(
                self.flowq,
                "{t},{i},{},{},{},{},{rand},{acks},{}",
                f.backlog_bytes, f.drops_overflow, f.drops_aqm, f.drops_policer, f.marks
            )?;
        }
        self.queue.flush()?;
        self.flowq.flush()?;
        self.next += self.interval;
        Ok(())
    }
}

/// A number for JSON: NaN as null.
fn nan_null(v: f64) -> serde_json::Value {
    if v.is_nan() {
        serde_json::Value::Null
    } else {
        v.into()
    }
}

/// Flow `i`'s counters summed over the links of its route.
fn flow_counts(net: &Network, i: usize) -> FlowQueueStats {
    let mut sum = FlowQueueStats::default();
    for &l in net.route(i as u32) {
        let f = &net.links[l as usize].queue.flows[i];
        sum.backlog_bytes += f.backlog_bytes;
        sum.drops_overflow += f.drops_overflow;
        sum.drops_aqm += f.drops_aqm;
        sum.drops_policer += f.drops_policer;
        sum.drops_random += f.drops_random;
        sum.marks += f.marks;
    }
    // ACKs the links of its reverse route dropped (two-way traffic).
    for &l in net.reverse_route(i as u32) {
        sum.acks_dropped += net.links[l as usize].queue.flows[i].acks_dropped;
    }
    sum
}

pub struct Engine {
    cfg: Config,
    socks: [PacketSocket; 2],
    pipe: Pipeline,
    store: FrameStore,
    lateness: Histogram,
    late_max: u64,
    /// When the latest release was due.
    late_max_at: Time,
    c: Counters,
    rt: bool,
    mlocked: bool,
    pinned: Option<bool>,
    start_tx_dropped: [u64; 2],
    trace: Option<BufWriter<File>>,
    turnarounds: TurnaroundMeter,
    /// Flows' `rwnd` on their receivers' windows (`frame::WindowClamps`).
    windows: WindowClamps,
}

const SENDERS: usize = 0;
const RECEIVERS: usize = 1;

impl Engine {
    pub fn new(cfg: Config) -> io::Result<Engine> {
        std::fs::create_dir_all(&cfg.out_dir)?;
        let buf = 8 << 20;
        let socks = [
            PacketSocket::open(&cfg.if_senders, buf)?,
            PacketSocket::open(&cfg.if_receivers, buf)?,
        ];
        let pinned = cfg.cpu.map(sys::pin_to_cpu);
        let rt = cfg.realtime && sys::realtime(50);
        let mlocked = sys::lock_memory();
        let pipe = Pipeline::new(&cfg.scenario);
        let n = pipe.flows();
        let start_tx_dropped = [
            sys::if_counter(&cfg.if_senders, "tx_dropped").unwrap_or(0),
            sys::if_counter(&cfg.if_receivers, "tx_dropped").unwrap_or(0),
        ];
        let trace = if cfg.trace {
            let mut w =
                BufWriter::with_capacity(1 << 20, File::create(cfg.out_dir.join("frames.csv"))?);
            writeln!(w, "t_ns,ev,side,flow,seq,ack,payload,due_ns")?;
            Some(w)
        } else {
            None
        };
        Ok(Engine {
            trace,
            windows: WindowClamps::new(
                cfg.scenario
                    .flows
                    .iter()
                    .map(|f| f.rwnd.map(|b| b.0))
                    .collect(),
            ),
            turnarounds: TurnaroundMeter::new(
                cfg.scenario
                    .flows
                    .iter()
                    .map(|f| f.sender_paces())
                    .collect(),
            ),
            cfg,
            socks,
            pipe,
            store: FrameStore::default(),
            lateness: Histogram::default(),
            late_max: 0,
            late_max_at: Time::ZERO,
            c: Counters {
                flow_fwd_frames: vec![0; n],
                flow_rev_frames: vec![0; n],
                ack_gaps: vec![RunningStats::default(); n],
                last_ack: vec![None; n],
                ..Default::default()
            },
            rt,
            mlocked,
            pinned,
            start_tx_dropped,
        })
    }

    fn now(&self) -> Time {
        Time(sys::monotonic_ns().saturating_sub(self.cfg.t0_ns))
    }

    /// Read what is waiting on interface `side`, up to `max` frames.
    fn drain(&mut self, side: usize, max: usize, buf: &mut [u8; MAX_FRAME]) -> io::Result<usize> {
        let mut got = 0;
        let now = self.now();
        let n = self.pipe.flows();
        while got < max {
            let Some(len) = self.socks[side].recv(buf)? else {
                break;
            };
            got += 1;
            if len > MAX_FRAME {
                // Cut short: an offload (GRO) merged segments. Counted; dropped.
                self.c.oversize += 1;
                continue;
            }
            let data = &mut buf[..len];
            let flow = frame::parse(data)
                .and_then(|t| classify(&t, side == SENDERS, self.cfg.port_base, n).map(|f| (t, f)));
            match flow {
                Some((t, f)) => {
                    if side == SENDERS {
                        self.windows.from_sender(f as usize, t.kind(), data);
                    } else {
                        self.windows.from_receiver(f as usize, t.kind(), data);
                    }
                    let data = &*data;
                    if let Some(w) = &mut self.trace {
                        trace_line(w, now, 'a', side, f, &t, now)?;
                    }
                    let tag = self.store.put(data);
                    let pkt = t.to_packet(f, tag);
                    self.turnarounds.arrived(side == SENDERS, &pkt, now.0);
                    if side == SENDERS {
                        self.c.frames_fwd += 1;
                        self.c.flow_fwd_frames[f as usize] += 1;
                        self.pipe.arrive_fwd(now, pkt);
                    } else {
                        self.c.frames_rev += 1;
                        self.c.flow_rev_frames[f as usize] += 1;
                        self.pipe.arrive_rev(now, pkt);
                    }
                }
                None => {
                    // Not one of the run's flows (ARP, say): across untouched, at once.
                    self.c.frames_other += 1;
                    if !self.socks[1 - side].send(data)? {
                        self.c.send_nobuf += 1;
                    }
                }
            }
        }
        Ok(got)
    }

    fn release(&mut self, side: usize, rel: &mut Vec<Release>) -> io::Result<()> {
        if rel.is_empty() {
            return Ok(());
        }
        for (due, pkt) in rel.drain(..) {
            let tag = pkt.tag;
            let frame = self.store.get_mut(tag);
            if side == RECEIVERS {
                // A qdisc may have marked it CE.
                if let Some(orig) = frame::parse(frame) {
                    if orig.ecn != pkt.ecn {
                        frame::set_ecn(frame, pkt.ecn);
                    }
                }
            }
            let ok = self.socks[side].send(frame)?;
            let sent_at = Time(sys::monotonic_ns().saturating_sub(self.cfg.t0_ns));
            if side == SENDERS && pkt.kind == Kind::Ack {
                let f = pkt.flow as usize;
                if let Some(prev) = self.c.last_ack[f] {
                    self.c.ack_gaps[f].add(sent_at.0.saturating_sub(prev) as f64);
                }
                self.c.last_ack[f] = Some(sent_at.0);
            }
            if let Some(w) = &mut self.trace {
                if let Some(t) = frame::parse(frame) {
                    trace_line(w, sent_at, 'r', side, pkt.flow, &t, due)?;
                }
            }
            self.turnarounds.released(side == SENDERS, &pkt, due.0);
            self.store.release(tag);
            if ok {
                self.c.sent += 1;
            } else {
                self.c.send_nobuf += 1;
            }
            let late = sent_at.0.saturating_sub(due.0);
            self.lateness.record(late);
            if late > self.late_max {
                self.late_max = late;
                self.late_max_at = due;
            }
            if late > 1_000_000 {
                self.c.late_over_1ms += 1;
            }
        }
        Ok(())
    }

    /// Free the frames of packets the qdisc dropped or a path lost.
    fn free_dropped(&mut self) {
        for p in self.pipe.take_dropped() {
            self.store.release(p.tag);
        }
    }

    /// Run until told to stop (SIGINT/SIGTERM) or `stop_after` passes.
    pub fn run(&mut self) -> io::Result<()> {
        let mut sampler = Sampler::new(&self.cfg)?;
        let mut buf = Box::new([0u8; MAX_FRAME]);
        let mut to_rx: Vec<Release> = Vec::with_capacity(256);
        let mut to_tx: Vec<Release> = Vec::with_capacity(256);
        let fds = [self.socks[0].fd(), self.socks[1].fd()];
        let wall0 = sys::monotonic_ns();
        let cpu0 = sys::cpu_times();
        std::fs::write(self.cfg.out_dir.join("ready"), b"ready\n")?;
        loop {
            if sys::STOP.load(Ordering::SeqCst) {
                break;
            }
            self.c.loops += 1;
            self.drain(SENDERS, 256, &mut buf)?;
            self.drain(RECEIVERS, 256, &mut buf)?;
            let now = self.now();
            if now.0 >= self.cfg.stop_after_ns {
                break;
            }
            // A sampling instant that has passed: run the schedule up to it
            // first, so the sample shows the queue as it was then.
            while let Some(t) = sampler.due().filter(|&t| t <= now.0) {
                self.pipe.advance(Time(t), &mut to_rx, &mut to_tx);
                self.free_dropped();
                self.release(RECEIVERS, &mut to_rx)?;
                self.release(SENDERS, &mut to_tx)?;
                sampler.sample(&mut self.pipe)?;
            }
            self.pipe
                .advance(Time(now.0 + self.cfg.batch_ns), &mut to_rx, &mut to_tx);
            self.free_dropped();
            self.release(RECEIVERS, &mut to_rx)?;
            self.release(SENDERS, &mut to_tx)?;
            // Wait for the next due time (or a frame).
            let next = [
                self.pipe.next_event().map(|t| t.0),
                sampler.due(),
                Some(self.cfg.stop_after_ns),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(u64::MAX);
            let now = self.now().0;
            let target = next.saturating_sub(self.cfg.batch_ns);
            if target > now + self.cfg.spin_ns {
                self.c.sleeps += 1;
                sys::wait_readable(&fds, target - now - self.cfg.spin_ns);
            }
            // Within the spin window: loop straight back (busy poll).
        }
        let wall = (sys::monotonic_ns() - wall0) as f64 / 1e9;
        let cpu1 = sys::cpu_times();
        self.write_stats(wall, (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1))
    }

    fn write_stats(&mut self, wall_s: f64, cpu: (f64, f64)) -> io::Result<()> {
        if let Some(w) = &mut self.trace {
            w.flush()?;
        }
        for side in 0..2 {
            let (p, d) = self.socks[side].stats()?;
            self.c.rx_packets[side] += p;
            self.c.rx_sock_drops[side] += d;
        }
        let tx_dropped = [
            sys::if_counter(&self.cfg.if_senders, "tx_dropped")
                .unwrap_or(0)
                .saturating_sub(self.start_tx_dropped[0]),
            sys::if_counter(&self.cfg.if_receivers, "tx_dropped")
                .unwrap_or(0)
                .saturating_sub(self.start_tx_dropped[1]),
        ];
        let net = &self.pipe.net;
        let us = |v: f64| {
            if v.is_nan() {
                serde_json::Value::Null
            } else {
                (v / 1e3).into()
            }
        };
        let flows: Vec<_> = (0..self.pipe.flows())
            .map(|i| {
                let f = flow_counts(net, i);
                let (rand, acks) = self.pipe.random_losses(i);
                serde_json::json!({
                    "flow": i,
                    "drops": f.drops_overflow + f.drops_aqm + f.drops_policer + rand + f.drops_random,
                    "drops_overflow": f.drops_overflow,
                    "drops_policer": f.drops_policer,
                    "drops_aqm": f.drops_aqm,
                    "drops_random": rand + f.drops_random,
                    "acks_lost": acks + f.acks_dropped,
                    "marks": f.marks,
                    "frames_fwd": self.c.flow_fwd_frames[i],
                    "frames_rev": self.c.flow_rev_frames[i],
                    "ack_interval_mean_us": nan_null(self.c.ack_gaps[i].mean() / 1e3),
                    "ack_interval_cv": nan_null(self.c.ack_gaps[i].cv()),
                })
            })
            .collect();
        let h = &self.lateness;
        // The run's totals over its links, as the simulator's summary
        // (`Network::totals`), and each link's own.
        let totals = net.totals();
        let mut links = Vec::with_capacity(net.links.len());
        for link in &net.links {
            let q = &link.queue;
            let qd = q.sojourn.qdelay_ms();
            links.push(serde_json::json!({
                "link": link.name,
                "departures": q.departures,
                "wire_bytes_out": q.wire_bytes_out,
                "drops": q.drops,
                "max_backlog_bytes": q.max_backlog.0,
                "max_backlog_pkts": q.max_backlog.1,
                "qdelay_mean_ms": nan_null(qd[0]),
                "qdelay_p50_ms": nan_null(qd[1]),
                "qdelay_p95_ms": nan_null(qd[2]),
                "qdelay_p99_ms": nan_null(qd[3]),
            }));
        }
        let qd = totals.sojourn.qdelay_ms();
        let s = &totals.sojourn;
        let doc = serde_json::json!({
            "wall_s": wall_s,
            "cpu_user_s": cpu.0,
            "cpu_sys_s": cpu.1,
            "cpu_load": (cpu.0 + cpu.1) / wall_s.max(1e-9),
            "sched_fifo": self.rt,
            "mlockall": self.mlocked,
            "cpu": self.cfg.cpu,
            "pinned": self.pinned,
            "spin_us": self.cfg.spin_ns as f64 / 1e3,
            "batch_us": self.cfg.batch_ns as f64 / 1e3,
            "loops": self.c.loops,
            "sleeps": self.c.sleeps,
            "frames_fwd": self.c.frames_fwd,
            "frames_rev": self.c.frames_rev,
            "frames_other": self.c.frames_other,
            "windows_clamped": self.windows.clamped,
            "frames_oversize": self.c.oversize,
            "frames_sent": self.c.sent,
            "send_nobuf_drops": self.c.send_nobuf,
            "rx_socket_drops": self.c.rx_sock_drops[0] + self.c.rx_sock_drops[1],
            "veth_tx_drops": tx_dropped[0] + tx_dropped[1],
            "frames_in_pipeline_at_end": self.store.live,
            "frames_in_pipeline_peak": self.store.peak,
            // The hosts' turnarounds at the simulator's percentiles (`turnaround`).
            "turnarounds": self.turnarounds.table(),
            "lateness_us": {
                "count": h.count(),
                "p50": us(h.quantile(0.50)),
                "p99": us(h.quantile(0.99)),
                "p999": us(h.quantile(0.999)),
                "max": self.late_max as f64 / 1e3,
                "max_at_s": self.late_max_at.secs_f64(),
                "over_1ms": self.c.late_over_1ms,
                "mean": us(h.mean()),
            },
            "bottleneck": {
                "departures": totals.departures,
                "wire_bytes_out": totals.wire_bytes_out,
                "drops": totals.drops,
                "max_backlog_bytes": totals.max_backlog.0,
                "max_backlog_pkts": totals.max_backlog.1,
                "qdelay_mean_ms": nan_null(qd[0]),
                "qdelay_p50_ms": nan_null(qd[1]),
                "qdelay_p95_ms": nan_null(qd[2]),
                "qdelay_p99_ms": nan_null(qd[3]),
                "sojourn_count": s.count(),
            },
            "links": links,
            "flows": flows,
        });
        let tmp = self.cfg.out_dir.join("stats.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_string_pretty(&doc).expect("json") + "\n",
        )?;
        std::fs::rename(&tmp, self.cfg.out_dir.join("stats.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::tcp_frame;

    #[test]
    fn flows_are_found_by_the_receivers_port() {
        let data = frame::parse(&tcp_frame(40001, 6002, 0x10, 100, 0)).unwrap();
        assert_eq!(classify(&data, true, 6000, 3), Some(2));
        assert_eq!(classify(&data, true, 6000, 2), None);
        assert_eq!(classify(&data, true, 6003, 3), None);
        let ack = frame::parse(&tcp_frame(6001, 40001, 0x10, 0, 0)).unwrap();
        assert_eq!(classify(&ack, false, 6000, 3), Some(1));
        assert_eq!(classify(&ack, true, 6000, 3), None);
    }

    #[test]
    fn frame_store_reuses_slots() {
        let mut s = FrameStore::default();
        let a = s.put(&[1, 2, 3]);
        let b = s.put(&[4]);
        assert_ne!(a, b);
        s.release(a);
        let c = s.put(&[5, 6]);
        assert_eq!(c, a);
        assert_eq!(s.get_mut(c).as_slice(), &[5, 6]);
        assert_eq!((s.live, s.peak), (2, 2));
    }
}
