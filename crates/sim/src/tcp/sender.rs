//! The sending side of a flow, modelled on Linux TCP: handshake, transmit
//! loop (`tcp_write_xmit` with TSO sizing and the cwnd/rwnd tests),
//! EDT pacing (`tcp_update_skb_after_send`, sch_fq `maxrate`), ACK
//! processing (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`), RACK-TLP,
//! the recovery state machine (`tcp_fastretrans_alert`), RTO and the
//! delivery-rate sample handed to the congestion control on every ACK.
//!
//! Sans-IO: every call takes `now` and appends packets to send to `out`;
//! the caller asks `next_deadline()` when to call `on_timer`.

use super::push::PushMarks;
use super::rack::{self, Rack};
use super::rate::{DeliveryState, SampleRef};
use super::rtt::{seq_after, ts_clock, ts_sample_us, RttEstimator, RTO_MAX, RTO_MIN, TIMEOUT_INIT};
use super::scoreboard::{seg, SackRanges, Scoreboard, Seg};
use crate::app::App;
use crate::cc::{
    AnyCc, CaState, CcConfig, CcEvent, CcInit, CongestionControl, Conn, LostPacket, TsoPolicy,
};
use crate::metrics::collect::RunningStats;
use crate::packet::{flags, Kind, Packet};
use crate::scenario::Pacing;
use crate::units::{Dur, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `GSO_MAX_SIZE`: the largest TSO super-packet, bytes.
const GSO_MAX_SIZE: u64 = 65_536;
/// sysctl `tcp_tso_rtt_log`.
const TSO_RTT_LOG: u32 = 9;
/// Default `sk_pacing_shift`: about 1 ms of data per TSO burst.
const PACING_SHIFT: u32 = 10;
/// `TCP_TIMEOUT_MIN` (2 jiffies at HZ=1000), added to the TLP timeout.
const TIMEOUT_MIN: Dur = Dur::from_ms(2);
/// Linux does not pace the first 10 data segments of a connection.
const UNPACED_SEGS: u64 = 10;
/// Segments per socket buffer in the write queue (`tcp_xmit_size_goal`):
/// `GSO_MAX_SIZE` less the header room, bounded by half the largest window
/// (`tcp_bound_to_half_wnd`): a fixed `rwnd` or the largest advertised one,
/// `max_wnd` (0 before any). The application's writes fill buffers of this
/// size (`tcp::push`).
fn size_goal(mss: u32, rwnd_segs: Option<u32>, max_wnd: u32) -> u32 {
    let mss = u64::from(mss);
    let mut bytes = GSO_MAX_SIZE - 1 - MAX_TCP_HEADER;
    let advertised = (max_wnd > 0).then_some(max_wnd);
    if let Some(w) = rwnd_segs.into_iter().chain(advertised).min() {
        bytes = bytes.min((u64::from(w) * mss / 2).max(mss));
    }
    ((bytes / mss) as u32).max(1)
}

/// `MAX_TCP_HEADER` on x86-64 (`L1_CACHE_ALIGN(128 + MAX_HEADER)`): what
/// `sk_dst_gso_max_size` keeps back from `GSO_MAX_SIZE` for headers.
const MAX_TCP_HEADER: u64 = 320;
/// sysctl `tcp_tso_win_divisor`: a deferred burst goes once a third of the
/// window is free.
const TSO_WIN_DIVISOR: u64 = 3;
/// `tcp_tso_should_defer` defers only within 1 ms of the last transmission
/// and when the next ACK is due within min(srtt/2, 1 ms).
const TSO_DEFER_WINDOW: Dur = Dur::from_ms(1);

/// Why the transmit loop stops before a TSO burst (`tcp_tso_should_defer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Defer {
    Send,
    /// Waiting for the cwnd to open (counts as cwnd-limited).
    Cwnd,
    /// Waiting for the receive window, or for the application's next write.
    Other,
}

#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub flow: u32,
    pub mss: u32,
    pub init_cwnd: u32,
    pub pacing: Pacing,
    /// Receive window in segments (`None` = unlimited).
    pub rwnd_segs: Option<u32>,
    pub ecn: bool,
    /// Seed for the congestion control's random stream.
    pub cc_seed: u64,
    /// Hold partial TSO bursts back for the next ACK (`tcp_tso_should_defer`).
    pub tso_defer: bool,
    /// Mark PSH at the end of each application write and multi-segment
    /// burst (`tcp/push.rs`).
    pub push_marks: bool,
    /// Take an RTT sample from the echoed timestamp when an ACK of new data
    /// has no timed one (`tcp_ack_update_rtt`).
    pub timestamps: bool,
}

/// Counters for the flow summary.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments transmitted, retransmissions included.
    pub segs_sent: u64,
    pub segs_retrans: u64,
    /// srtt summed over ACKs that updated it, for the mean.
    pub srtt_sum_us: f64,
    pub srtt_n: u64,
    pub rto_count: u64,
    pub established_at: Option<Time>,
    pub completed_at: Option<Time>,
    /// Gaps between ACK arrivals, ns (a measurement only: ACK compression).
    pub ack_gaps: RunningStats,
    pub last_ack_at: Option<Time>,
}

/// Per-sample view of the sender for samples.parquet.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderSample {
    pub cwnd: u32,
    pub in_flight: u32,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    pub pacing_rate: Rate,
    pub delivery_rate: Rate,
    pub segs_retrans: u64,
    pub bytes_acked: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerKind {
    Rto,
    LossProbe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    SynSent { at: Time, tries: u32 },
    Established,
    Done,
}

pub struct Sender {
    cfg: SenderConfig,
    /// Read once, when the connection is established (boxed: cold).
    cc_cfg: Box<CcConfig>,
    cc: Option<AnyCc>,
    app: App,
    total_segs: Option<u32>,
    phase: Phase,
    /// When the connection was opened (the SYN), for the application's clock.
    start: Time,
    /// Time of the last data transmission (`icsk_lsndtime`).
    lsndtime: Time,
    // Sequence space, in segments.
    snd_una: u32,
    snd_nxt: u32,
    /// The receiver's advertised right edge (`snd_una + snd_wnd`), from
    /// the SYN-ACK, then the latest ACK; `None` without advertised windows
    /// (`[hosts] advertised_window`).
    adv_end: Option<u32>,
    /// The largest window advertised so far, segments (`max_window`); 0
    /// before any.
    max_wnd: u32,
    /// `ts_recent`: the TSval of the latest ACK (or the SYN-ACK), low 16
    /// bits, echoed as every data segment's TSecr (`Packet::ts_other`).
    ts_recent: u16,
    sb: Scoreboard,
    sacked: SackRanges,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// Lost segments waiting for retransmission, lowest first (lazy: checked when popped).
    retx: BinaryHeap<Reverse<u32>>,
    rack: Rack,
    rtt: RttEstimator,
    rate: DeliveryState,
    /// `tp->lost`.
    lost_total: u64,
    ca_state: CaState,
    high_seq: u32,
    sent_since_state_change: u32,
    /// Set the CWR flag on the next data segment (`TCP_ECN_QUEUE_CWR`).
    queue_cwr: bool,
    // cwnd validation (`tcp_cwnd_validate`).
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u32,
    // Pacing.
    /// Earliest departure time of the next packet (`tcp_wstamp_ns`).
    wstamp: Time,
    /// sch_fq's per-flow `time_next_packet` under `maxrate`.
    fq_next: Time,
    data_segs_out: u64,
    // Timers.
    xmit_timer: Option<(Time, TimerKind)>,
    reo_timer: Option<Time>,
    pacing_timer: Option<Time>,
    tlp_high_seq: Option<u32>,
    tlp_retrans: bool,
    /// The tail packet the probe retransmitted was sent app-limited
    /// (`tp->tlp_orig_data_app_limited`).
    tlp_orig_app_limited: bool,
    // Scratch buffers reused across ACKs.
    fresh: Vec<(u32, u32)>,
    lost_now: Vec<u32>,
    /// Where the application's writes end (PSH).
    push: PushMarks,
    /// State-machine transitions reported by the CC: (time, from, to).
    pub transitions: Vec<(Time, &'static str, &'static str)>,
    last_phase: &'static str,
    pub stats: SenderStats,
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc_cfg: CcConfig, app: App) -> Sender {
        let total_segs = app.total_segments(cfg.mss);
        let push = PushMarks::new(cfg.push_marks);
        Sender {
            cfg,
            cc_cfg: Box::new(cc_cfg),
            cc: None,
            app,
            total_segs,
            phase: Phase::Idle,
            start: Time::ZERO,
            lsndtime: Time::ZERO,
            snd_una: 0,
            snd_nxt: 0,
            adv_end: None,
            max_wnd: 0,
            ts_recent: 0,
            sb: Scoreboard::default(),
            sacked: SackRanges::default(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            retx: BinaryHeap::new(),
            rack: Rack::default(),
            rtt: RttEstimator::default(),
            rate: DeliveryState::default(),
            lost_total: 0,
            ca_state: CaState::Open,
            high_seq: 0,
            sent_since_state_change: 0,
            queue_cwr: false,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            wstamp: Time::ZERO,
            fq_next: Time::ZERO,
            data_segs_out: 0,
            xmit_timer: None,
            reo_timer: None,
            pacing_timer: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            tlp_orig_app_limited: false,
            fresh: Vec::new(),
            lost_now: Vec::new(),
            push,
            transitions: Vec::new(),
            last_phase: "",
            stats: SenderStats::default(),
        }
    }

    pub fn flow(&self) -> u32 {
        self.cfg.flow
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    pub fn cc(&self) -> Option<&AnyCc> {
        self.cc.as_ref()
    }

    /// `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - self.sacked_out - self.lost_out + self.retrans_out
    }

    fn packets_out(&self) -> u32 {
        self.snd_nxt - self.snd_una
    }

    pub fn sample(&self) -> SenderSample {
        SenderSample {
            cwnd: self.cc.as_ref().map_or(self.cfg.init_cwnd, |c| c.cwnd()),
            in_flight: self.in_flight(),
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            pacing_rate: self.cc.as_ref().map_or(Rate::INF, |c| c.pacing_rate()),
            delivery_rate: self.rate.delivery_rate(self.cfg.mss),
            segs_retrans: self.stats.segs_retrans,
            bytes_acked: self.app.bytes_in(self.snd_una, self.cfg.mss),
        }
    }

    /// When `on_timer` must next be called ([`Time::NEVER`]: no timer is
    /// armed): the earliest of the armed timers, without branches on which
    /// are armed, as it is asked after every event that touches the sender.
    pub fn next_deadline(&self) -> Time {
        let syn = match self.phase {
            Phase::SynSent { at, tries } => {
                at + Dur((TIMEOUT_INIT.0 << tries.min(6)).min(RTO_MAX.0))
            }
            _ => Time::NEVER,
        };
        syn.min(self.xmit_timer.map_or(Time::NEVER, |(t, _)| t))
            .min(self.reo_timer.unwrap_or(Time::NEVER))
            .min(self.pacing_timer.unwrap_or(Time::NEVER))
    }

    /// Where the heap memory an ACK or a send reads first lies: the oldest
    /// segment's scoreboard and RACK entries, the write queue's oldest
    /// mark and buffer (prefetch hints; null for none).
    pub fn heap_addrs(&self) -> [*const u8; 4] {
        let [mark, buf] = self.push.front_addrs();
        [self.sb.front_addr(), self.rack.front_addr(), mark, buf]
    }

    /// Open the connection: send the SYN.
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::SynSent { at: now, tries: 0 };
        self.start = now;
        out.push(self.stamp(Packet::control(self.cfg.flow, Kind::Syn)));
    }

    fn stamp(&self, mut p: Packet) -> Packet {
        p.flow = self.cfg.flow;
        p
    }

    fn conn(&self) -> Conn {
        Conn {
            mss: self.cfg.mss,
            init_cwnd: self.cfg.init_cwnd,
            in_flight: self.in_flight(),
            packets_out: self.packets_out(),
            delivered: self.rate.delivered,
            delivered_ce: self.rate.delivered_ce,
            lost: self.lost_total,
            delivered_mstamp: self.rate.delivered_mstamp,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            ca_state: self.ca_state,
            is_cwnd_limited: self.is_cwnd_limited,
            max_packets_out: self.max_packets_out,
            app_limited: self.rate.app_limited != 0,
            next_departure: self.wstamp,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            ecn_enabled: self.cfg.ecn,
            paced: self.is_paced(),
            sent_since_state_change: self.sent_since_state_change,
            data_segs_out: self.data_segs_out,
            highest_sack: self
                .sacked
                .ranges()
                .last()
                .map_or(self.snd_una, |r| r.1.max(self.snd_una)),
        }
    }

    fn is_paced(&self) -> bool {
        let cc = &self.cc;
        (self.cfg.pacing.mode).paces(|| cc.as_ref().is_some_and(|c| c.wants_pacing()))
    }

    fn note_phase(&mut self, now: Time) {
        if let Some(cc) = &self.cc {
            let p = cc.phase();
            // Usually the same static string: a pointer comparison per ACK.
            if !std::ptr::eq(p, self.last_phase) {
                if p != self.last_phase {
                    self.transitions.push((now, self.last_phase, p));
                }
                self.last_phase = p;
            }
        }
    }

    // ------------------------------------------------------------------
    // Incoming packets

    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>) {
        match (pkt.kind, self.phase) {
            (Kind::SynAck, Phase::SynSent { at, tries }) => {
                self.take_echo_and_window(pkt);
                // Karn: only an unretransmitted SYN gives an RTT sample.
                if tries == 0 {
                    let rtt_us = now.since(at).us().max(1);
                    self.rtt.sample(rtt_us, 0, 0);
                    self.rtt.update_min_rtt(now, rtt_us, false);
                }
                self.establish(now, out);
            }
            (Kind::Ack, Phase::Established) => {
                if let Some(prev) = self.stats.last_ack_at {
                    self.stats.ack_gaps.add(now.since(prev).0 as f64);
                }
                self.stats.last_ack_at = Some(now);
                self.on_ack(now, pkt, out)
            }
            _ => {}
        }
    }

    fn establish(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::Established;
        self.stats.established_at = Some(now);
        let init = CcInit {
            now,
            mss: self.cfg.mss,
            init_cwnd: self.cfg.init_cwnd,
            srtt: self.rtt.srtt(),
            seed: self.cfg.cc_seed,
            ecn_enabled: self.cfg.ecn,
        };
        self.cc = Some(self.cc_cfg.build(&init, self.cfg.flow));
        self.note_phase(now);
        self.transmit(now, out);
    }

    fn on_ack(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>) {
        let ack = pkt.seq;
        if ack < self.snd_una || ack > self.snd_nxt {
            return; // old or impossible ACK
        }
        self.take_echo_and_window(pkt);
        let prior_in_flight = self.in_flight();
        let prior_delivered = self.rate.delivered;
        let prior_lost = self.lost_total;
        let prior_una = self.snd_una;
        let prior_ca_state = self.ca_state;
        let ece = self.cfg.ecn && pkt.has_flag(flags::ECE);
        let min_rtt = self.rtt.min_rtt();
        let mut sref = SampleRef::default();
        // RTT samples of this ACK (tcp_clean_rtx_queue / tcp_sacktag).
        let mut first_ackt: Option<Time> = None;
        let mut last_ackt: Option<Time> = None;
        let mut first_sackt: Option<Time> = None;
        let mut last_sackt: Option<Time> = None;
        let mut retrans_data_acked = false;
        let mut newly_sacked = false;

        // 1. SACK blocks (tcp_sacktag_write_queue).
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        for b in pkt.sacks() {
            let s = b.start.max(ack);
            let e = b.end.min(self.snd_nxt);
            if s < e {
                self.sacked.add(s, e, &mut fresh);
            }
        }
        for &(s, e) in &fresh {
            for q in s..e {
                let sg = self.sb.get_mut(q);
                if sg.has(seg::SACKED) {
                    continue;
                }
                newly_sacked = true;
                let was_retrans = sg.has(seg::RETRANS);
                if sg.has(seg::LOST) {
                    sg.flags &= !seg::LOST;
                    self.lost_out -= 1;
                }
                if was_retrans {
                    sg.flags &= !seg::RETRANS;
                    self.retrans_out -= 1;
                }
                sg.flags |= seg::SACKED;
                self.sacked_out += 1;
                let tx_time = sg.tx_time;
                let ever = sg.has(seg::EVER_RETRANS);
                if !ever {
                    first_sackt = Some(first_sackt.map_or(tx_time, |t: Time| t.min(tx_time)));
                    last_sackt = Some(last_sackt.map_or(tx_time, |t: Time| t.max(tx_time)));
                }
                self.rate.on_delivered(&mut sref, q, sg, true, ece);
                self.rack.on_delivered(now, q, tx_time, ever, min_rtt);
            }
        }
        self.fresh = fresh;

        // 2. Cumulative ACK (tcp_clean_rtx_queue).
        while self.snd_una < ack {
            let q = self.snd_una;
            let mut sg = self
                .sb
                .pop_front()
                .expect("scoreboard covers snd_una..snd_nxt");
            self.snd_una += 1;
            if sg.has(seg::SACKED) {
                self.sacked_out -= 1;
                continue;
            }
            if sg.has(seg::LOST) {
                self.lost_out -= 1;
            }
            if sg.has(seg::RETRANS) {
                self.retrans_out -= 1;
            }
            let ever = sg.has(seg::EVER_RETRANS);
            if ever {
                retrans_data_acked = true;
            } else {
                first_ackt.get_or_insert(sg.tx_time);
                last_ackt = Some(sg.tx_time);
            }
            self.rate.on_delivered(&mut sref, q, &mut sg, false, ece);
            self.rack.on_delivered(now, q, sg.tx_time, ever, min_rtt);
        }
        let una_advanced = self.snd_una > prior_una;
        if una_advanced {
            self.sacked.trim_below(self.snd_una);
            self.rack.prune(&self.sb);
        }

        // 3. RTT (tcp_ack_update_rtt): Karn's rule for cumulative ACKs.
        let mut seq_rtt = first_ackt
            .filter(|_| !retrans_data_acked)
            .map(|t| now.since(t).us() as i64);
        let mut ca_rtt: i64 = last_ackt
            .filter(|_| !retrans_data_acked)
            .map_or(-1, |t| now.since(t).us() as i64);
        if let (Some(f), Some(l)) = (first_sackt, last_sackt) {
            if seq_rtt.is_none() {
                seq_rtt = Some(now.since(f).us() as i64);
            }
            ca_rtt = now.since(l).us() as i64;
        }
        // The RTTM rule: an ACK of new data with no timed sample uses the
        // echoed timestamp, ms-grained, for srtt, min_rtt and the rate
        // sample alike (`tcp_ack_update_rtt`). It keeps srtt moving through
        // a recovery (the kernel's min_rtt shows its whole-ms values).
        if seq_rtt.is_none() && una_advanced && self.cfg.timestamps {
            if let Some(us) = ts_sample_us(now, pkt.ts) {
                seq_rtt = Some(us as i64);
                ca_rtt = us as i64;
            }
        }
        if let Some(m) = seq_rtt {
            self.rtt.update_min_rtt(now, ca_rtt.max(1) as u64, false);
            self.rtt.sample(m.max(1) as u64, self.snd_una, self.snd_nxt);
        }
        if let Some(s) = self.rtt.srtt() {
            self.stats.srtt_sum_us += s.us() as f64;
            self.stats.srtt_n += 1;
        }

        // 4. TLP episode (tcp_process_tlp_ack), simplified: no D-SACK.
        if let Some(h) = self.tlp_high_seq {
            if ack >= h {
                if self.tlp_retrans && seq_after(ack, h) {
                    // The probe repaired a loss: tell the CC (BBRv3 tree),
                    // then one cwnd reduction.
                    let conn = self.conn();
                    let ev = CcEvent::TlpRecovery {
                        orig_app_limited: self.tlp_orig_app_limited,
                    };
                    if let Some(cc) = self.cc.as_mut() {
                        cc.on_event(now, ev, &conn);
                    }
                    // `tcp_init_cwnd_reduction` (an ECN flow's CWR flag too),
                    // then CWR ended at once.
                    self.start_reduction();
                    self.set_state(now, CaState::Cwr);
                    self.set_state(now, CaState::Open);
                }
                self.tlp_high_seq = None;
            }
        }

        // 5. Loss detection and recovery state (tcp_fastretrans_alert).
        let dubious = !una_advanced || newly_sacked || ece || self.ca_state != CaState::Open;
        if dubious {
            self.rack_detect(now);
            self.update_recovery_state(now, ece);
        }

        // 6. Rate sample and congestion control (tcp_rate_gen, tcp_cong_control).
        let newly_delivered = (self.rate.delivered - prior_delivered) as u32;
        let newly_lost = (self.lost_total - prior_lost) as u32;
        let mut rs = self.rate.generate(
            now,
            &sref,
            newly_delivered,
            newly_lost,
            prior_in_flight,
            ca_rtt,
            self.rtt.min_rtt_us(),
            self.lost_total,
        );
        rs.is_ece = ece;
        rs.snd_una_advanced = una_advanced;
        rs.pkts_acked = self.snd_una - prior_una;
        rs.prior_ca_state = prior_ca_state;
        rs.slow_path = !una_advanced || ece || !pkt.sacks().is_empty();
        let conn = self.conn();
        let cc = self.cc.as_mut().expect("established");
        let outcome = cc.on_ack(now, &rs, &conn);
        if outcome.mark_app_limited {
            self.rate.mark_app_limited(self.in_flight());
        }
        self.note_phase(now);

        // 7. Timers (tcp_set_xmit_timer).
        if una_advanced {
            if self.packets_out() == 0 {
                self.xmit_timer = None;
            } else if !self.schedule_loss_probe(now, true) {
                self.rearm_rto(now);
            }
        }

        // 8. Completion of a finite transfer.
        if let Some(total) = self.total_segs {
            if self.snd_una >= total {
                self.finish(now);
                return;
            }
        }
        self.transmit(now, out);
    }

    fn finish(&mut self, now: Time) {
        self.phase = Phase::Done;
        self.stats.completed_at = Some(now);
        self.xmit_timer = None;
        self.reo_timer = None;
        self.pacing_timer = None;
        // A finished flow keeps only its counters: give back the buffers,
        // so memory follows the flows in progress, not the flows so far.
        self.sb = Scoreboard::default();
        self.sacked = SackRanges::default();
        self.retx = BinaryHeap::new();
        self.rack = Rack::default();
        self.fresh = Vec::new();
        self.lost_now = Vec::new();
    }

    /// `tcp_rack_mark_lost`.
    fn rack_detect(&mut self, now: Time) {
        if !self.rack.take_advanced() {
            return;
        }
        self.run_rack(now);
    }

    fn run_rack(&mut self, now: Time) {
        let reo = rack::reo_wnd(
            self.ca_state >= CaState::Recovery,
            self.sacked_out,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        let mut lost = std::mem::take(&mut self.lost_now);
        lost.clear();
        let next = self.rack.detect_loss(now, reo, &self.sb, |q| lost.push(q));
        for &q in &lost {
            self.mark_lost(now, q);
        }
        self.lost_now = lost;
        // `tcp_rack_mark_lost` arms the reordering timer (+ TCP_TIMEOUT_MIN).
        self.reo_timer = next.map(|t| t + TIMEOUT_MIN);
    }

    /// `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, now: Time, q: u32) {
        let sg = self.sb.get_mut(q);
        if sg.has(seg::SACKED) {
            return;
        }
        let again = sg.has(seg::LOST);
        if again {
            if !sg.has(seg::RETRANS) {
                return;
            }
            // A retransmission lost again.
            sg.flags &= !seg::RETRANS;
            self.retrans_out -= 1;
        } else {
            sg.flags |= seg::LOST;
            self.lost_out += 1;
        }
        let lp = LostPacket {
            pcount: 1,
            tx_in_flight: sg.tx.in_flight,
            tx_delivered: sg.tx.delivered,
            tx_lost: sg.tx.lost,
            is_app_limited: sg.tx.is_app_limited,
            has_tx_snapshot: sg.has(seg::SNAPSHOT),
            seq: q,
            retrans: again,
        };
        self.lost_total += 1;
        self.retx.push(Reverse(q));
        let conn = self.conn();
        if let Some(cc) = self.cc.as_mut() {
            cc.on_packet_lost(now, &lp, &conn);
        }
    }

    fn set_state(&mut self, now: Time, to: CaState) {
        let from = self.ca_state;
        if from == to {
            return;
        }
        self.ca_state = to;
        self.sent_since_state_change = 0;
        let conn = self.conn();
        if let Some(cc) = self.cc.as_mut() {
            cc.on_state_change(now, from, to, &conn);
        }
        self.note_phase(now);
    }

    /// Recovery entry and exit (`tcp_fastretrans_alert`, `tcp_try_to_open`).
    fn update_recovery_state(&mut self, now: Time, ece: bool) {
        let recovered = !seq_after(self.high_seq, self.snd_una);
        match self.ca_state {
            // CWR is held until something *above* high_seq is ACKed, so
            // that the CWR flag has reached the receiver
            // (`tcp_fastretrans_alert`, "D. Check state exit conditions"):
            // the ACK of exactly high_seq was sent before the receiver saw
            // CWR and still echoes ECE, which must not reduce again.
            CaState::Cwr if seq_after(self.snd_una, self.high_seq) => {
                self.set_state(now, CaState::Open);
            }
            CaState::Recovery | CaState::Loss if recovered => {
                self.set_state(now, CaState::Open);
            }
            _ => {}
        }
        // "E. Process state", default branch: Open, Disorder and CWR.
        if matches!(
            self.ca_state,
            CaState::Open | CaState::Disorder | CaState::Cwr
        ) {
            if self.lost_out > 0 {
                // A loss found during an ECN reduction enters Recovery too.
                self.enter_recovery(now);
            } else if ece {
                // `tcp_try_to_open` -> `tcp_enter_cwr`: one reduction per
                // window of data; ignored while one is under way.
                if self.ca_state != CaState::Cwr {
                    self.start_reduction();
                    self.set_state(now, CaState::Cwr);
                }
            } else if self.ca_state != CaState::Cwr {
                let s = if self.sacked_out > 0 || self.retrans_out > 0 {
                    CaState::Disorder
                } else {
                    CaState::Open
                };
                self.set_state(now, s);
            }
        }
    }

    /// `tcp_init_cwnd_reduction`'s share of the sender: the reduction lasts
    /// until high_seq is ACKed, and an ECN flow flags CWR on its next new
    /// segment (`tcp_ecn_queue_cwr`).
    fn start_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.queue_cwr = self.cfg.ecn;
    }

    /// `tcp_enter_recovery`: a new reduction unless one is under way (CWR),
    /// whose high_seq and ssthresh Recovery keeps (the congestion control
    /// starts no reduction from CWR either).
    fn enter_recovery(&mut self, now: Time) {
        if self.ca_state != CaState::Cwr {
            self.start_reduction();
        }
        self.set_state(now, CaState::Recovery);
    }

    // ------------------------------------------------------------------
    // Timers

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if let Phase::SynSent { at, tries } = self.phase {
            if now >= at + Dur((TIMEOUT_INIT.0 << tries.min(6)).min(RTO_MAX.0)) {
                self.phase = Phase::SynSent {
                    at: now,
                    tries: tries + 1,
                };
                out.push(self.stamp(Packet::control(self.cfg.flow, Kind::Syn)));
            }
            return;
        }
        if self.phase != Phase::Established {
            return;
        }
        if self.reo_timer.is_some_and(|t| t <= now) {
            // `tcp_rack_reo_timeout`.
            self.reo_timer = None;
            let before = self.lost_out;
            self.run_rack(now);
            if self.lost_out > before && self.ca_state < CaState::Recovery {
                self.enter_recovery(now);
            }
        }
        if let Some((t, kind)) = self.xmit_timer {
            if t <= now {
                self.xmit_timer = None;
                match kind {
                    TimerKind::Rto => self.on_rto(now),
                    TimerKind::LossProbe => self.send_loss_probe(now, out),
                }
            }
        }
        if self.pacing_timer.is_some_and(|t| t <= now) {
            self.pacing_timer = None;
        }
        self.transmit(now, out);
    }

    /// `tcp_retransmit_timer` -> `tcp_enter_loss`.
    fn on_rto(&mut self, now: Time) {
        if self.packets_out() == 0 {
            return;
        }
        self.stats.rto_count += 1;
        // `tcp_timeout_mark_lost`: the head, and every packet whose RACK
        // timer would have expired.
        let rack_rtt = self.rack.rtt();
        let head = self.snd_una;
        let mut to_mark = std::mem::take(&mut self.lost_now);
        to_mark.clear();
        for (q, sg) in self.sb.iter_mut() {
            if sg.has(seg::SACKED) {
                continue;
            }
            if q != head && sg.tx_time + rack_rtt > now {
                continue;
            }
            to_mark.push(q);
        }
        for &q in &to_mark {
            self.mark_lost(now, q);
        }
        self.lost_now = to_mark;
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.queue_cwr = self.cfg.ecn;
        // Re-enter Loss on a repeated timeout so the CC sees each one.
        if self.ca_state == CaState::Loss {
            self.ca_state = CaState::Recovery;
        }
        self.set_state(now, CaState::Loss);
        self.rtt.backoff();
        self.xmit_timer = Some((now + self.rtt.rto(), TimerKind::Rto));
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tlp_high_seq.is_none() {
            if self.new_data_ready(now) > 0 {
                self.send_new(now, 1, out);
                self.tlp_retrans = false;
                self.tlp_high_seq = Some(self.snd_nxt);
            } else if let Some(q) = self.sb.back_seq() {
                if !self.sb.get(q).has(seg::SACKED) {
                    self.tlp_orig_app_limited = self.sb.get(q).tx.is_app_limited;
                    self.retransmit(now, q, out);
                    self.tlp_retrans = true;
                    self.tlp_high_seq = Some(self.snd_nxt);
                }
            }
        }
        self.rearm_rto(now);
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self, now: Time) {
        if self.packets_out() == 0 {
            self.xmit_timer = None;
            return;
        }
        let mut at = now + self.rtt.rto();
        if let Some((_, TimerKind::LossProbe)) = self.xmit_timer {
            at = self.rto_from_head(now).max(now + Dur(1_000));
        }
        self.xmit_timer = Some((at, TimerKind::Rto));
    }

    /// When the RTO would fire, counted from the oldest outstanding packet.
    fn rto_from_head(&self, now: Time) -> Time {
        match self.sb.front() {
            Some(s) => s.tx_time + self.rtt.rto(),
            None => now + self.rtt.rto(),
        }
    }

    /// `tcp_schedule_loss_probe`.
    fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if self.packets_out() == 0 || !matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = match self.rtt.srtt() {
            Some(s) => {
                let extra = if self.packets_out() == 1 {
                    RTO_MIN
                } else {
                    TIMEOUT_MIN
                };
                Dur(2 * s.0) + extra
            }
            None => TIMEOUT_INIT,
        };
        let rto_delta = if advancing_rto {
            self.rtt.rto()
        } else {
            self.rto_from_head(now).since(now)
        };
        if rto_delta > Dur::ZERO {
            timeout = timeout.min(rto_delta);
        }
        self.xmit_timer = Some((now + timeout, TimerKind::LossProbe));
        true
    }

    // ------------------------------------------------------------------
    // Transmission

    fn segments_written(&self, now: Time) -> u32 {
        self.total_segs
            .unwrap_or(u32::MAX)
            .min(self.app.segments_written(now, self.start, self.cfg.mss))
    }

    /// The application stops writing: what it has written is all there is
    /// (what TCP sent and what waits in its send buffer, `tcp::push`'s
    /// writer; without that model, `push_acks = false`, what was sent),
    /// and the flow completes once it is delivered. On the Linux backend
    /// the sender stops writing and shuts its side down.
    pub fn stop_app(&mut self, now: Time) {
        if self.total_segs.is_none() {
            self.total_segs = Some(self.snd_nxt.max(self.push.written()));
            if self.phase == Phase::Established && self.snd_una >= self.snd_nxt {
                self.finish(now);
            }
        }
    }

    /// The application wrote more data (a new chunk).
    pub fn on_app_write(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.transmit(now, out);
    }

    /// Segments the application has written and TCP has not yet sent.
    fn new_data_ready(&self, now: Time) -> u32 {
        let written = self.segments_written(now);
        written.saturating_sub(self.snd_nxt).min(self.send_window())
    }

    /// What the SYN-ACK and every ACK carry for the sender: the TSval it
    /// echoes as its data's TSecr (`tcp_replace_ts_recent`: segments come
    /// in order, each at the left edge) and the receiver's window
    /// (`tcp_ack_update_window`: its right edge never moves left and ACKs
    /// arrive in order, so the latest edge is the largest).
    fn take_echo_and_window(&mut self, pkt: &Packet) {
        self.ts_recent = pkt.ts_other;
        if let Some(end) = pkt.wnd_end() {
            self.adv_end = Some(self.adv_end.map_or(end, |e| e.max(end)));
            self.max_wnd = self.max_wnd.max(u32::from(pkt.wnd));
        }
    }

    /// `tcp_wnd_end`: the last segment the receive window allows, the
    /// advertised right edge and a fixed `rwnd` beyond `snd_una`, whichever
    /// is first; unlimited with neither.
    fn wnd_end(&self) -> u32 {
        let fixed = self
            .cfg
            .rwnd_segs
            .map_or(u32::MAX, |w| self.snd_una.saturating_add(w));
        fixed.min(self.adv_end.unwrap_or(u32::MAX))
    }

    /// New segments the receive window still allows (`tcp_snd_wnd_test`).
    fn send_window(&self) -> u32 {
        self.wnd_end().saturating_sub(self.snd_nxt)
    }

    /// The window the receiver offers, in segments (`snd_wnd`).
    fn snd_wnd(&self) -> u32 {
        self.wnd_end().saturating_sub(self.snd_una)
    }

    /// The earliest time the next packet may leave (EDT and fq maxrate).
    fn departure_gate(&self) -> Time {
        let mut t = Time::ZERO;
        if self.is_paced() && self.data_segs_out >= UNPACED_SEGS {
            t = self.wstamp;
        }
        if self.cfg.pacing.max_rate.is_some() {
            t = t.max(self.fq_next);
        }
        t
    }

    /// `tcp_tso_segs`: the burst size in segments.
    fn tso_segs(&self) -> u32 {
        let cc = self.cc.as_ref().expect("established");
        match cc.tso_policy() {
            TsoPolicy::Fixed(n) => n.max(1),
            TsoPolicy::Autosize { min_segs } => {
                // `tcp_tso_autosize`: ~1 ms of data at the pacing rate, plus a
                // bonus for short RTTs, capped at GSO_MAX_SIZE.
                let rate = cc.pacing_rate();
                let mut bytes = if rate.is_inf() {
                    GSO_MAX_SIZE
                } else {
                    rate.bytes_per_sec() >> PACING_SHIFT
                };
                let r = self.rtt.min_rtt_us() >> TSO_RTT_LOG;
                if r < 32 {
                    bytes += GSO_MAX_SIZE >> r;
                }
                let bytes = bytes.min(GSO_MAX_SIZE);
                ((bytes / self.cfg.mss as u64) as u32).max(min_segs)
            }
        }
    }

    /// Segments per socket buffer in the write queue now (`size_goal`).
    fn size_goal(&self) -> u32 {
        size_goal(self.cfg.mss, self.cfg.rwnd_segs, self.max_wnd)
    }

    /// `tcp_tso_should_defer` (tcp_output.c, Linux 6.1): with less than a full
    /// TSO burst allowed, wait for the next ACK to send a bigger one, when
    /// that ACK is due soon and the sender wrote within the last ms. The
    /// next buffer in the write queue runs from `snd_nxt` to the next
    /// `size_goal` boundary or the end of what the application wrote.
    fn tso_should_defer(&self, now: Time, cwnd: u32, in_flight: u32, max_segs: u32) -> Defer {
        // The tests that need no look at the write queue first: on the
        // per-ACK path most bursts leave here.
        if !self.cfg.tso_defer || self.ca_state >= CaState::Recovery {
            return Defer::Send;
        }
        // Only within 1 ms of the last transmission (`tcp_wstamp_ns`).
        if now > self.wstamp + TSO_DEFER_WINDOW {
            return Defer::Send;
        }
        let cong_win = cwnd - in_flight;
        let send_win = self.send_window();
        let limit = cong_win.min(send_win);
        // A full-sized burst can go.
        if limit >= max_segs {
            return Defer::Send;
        }
        let written = self.segments_written(now);
        // The head buffer as the application's writes sized it; without
        // the writer model, cut at multiples of the current goal.
        let (skb_segs, is_tail) = match self.push.head_buffer(self.snd_nxt) {
            Some((end, tail)) => (end.min(written) - self.snd_nxt, tail),
            None => {
                let goal = self.size_goal();
                let skb_end = (self.snd_nxt / goal + 1).saturating_mul(goal);
                (written.min(skb_end) - self.snd_nxt, written <= skb_end)
            }
        };
        // One segment goes through the Nagle test instead, which never
        // holds a full-sized segment.
        if skb_segs <= 1 {
            return Defer::Send;
        }
        // A buffer in the middle of the queue gets no more data.
        if !is_tail && limit >= skb_segs {
            return Defer::Send;
        }
        // A third of the window is free (`tcp_tso_win_divisor`).
        if limit as u64 * TSO_WIN_DIVISOR >= self.snd_wnd().min(cwnd) as u64 {
            return Defer::Send;
        }
        // The next ACK is the oldest outstanding segment's, one srtt after
        // it left; if it is due later than min(srtt/2, 1 ms), send now.
        let Some(head) = self.sb.front() else {
            return Defer::Send;
        };
        let srtt = self.rtt.srtt().unwrap_or(Dur::ZERO);
        let expected_ack = head.tx_time + srtt;
        let threshold = Dur((srtt.0 / 2).min(TSO_DEFER_WINDOW.0));
        if expected_ack > now + threshold {
            return Defer::Send;
        }
        if cong_win < send_win {
            if cong_win <= skb_segs {
                return Defer::Cwnd;
            }
        } else if send_win <= skb_segs {
            return Defer::Other;
        }
        // The last buffer of a finished transfer carries the FIN: no more
        // data will come, so it goes.
        if is_tail && self.total_segs == Some(written) {
            return Defer::Send;
        }
        Defer::Other
    }

    /// `tcp_write_xmit` preceded by `tcp_xmit_retransmit_queue`.
    fn transmit(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.phase != Phase::Established {
            return;
        }
        let mut sent_any = false;
        let mut cwnd_limited = false;
        // `tcp_write_xmit` sizes its bursts once per call.
        let max_segs = self.tso_segs();
        let written = self.segments_written(now);
        let cwnd = self.cc.as_ref().expect("established").cwnd();
        // The goal is asked only when the application writes.
        let (mss, rwnd, max_wnd) = (self.cfg.mss, self.cfg.rwnd_segs, self.max_wnd);
        self.push
            .refill(self.snd_una, self.snd_nxt, cwnd, written, || {
                size_goal(mss, rwnd, max_wnd)
            });
        loop {
            let gate = self.departure_gate();
            if gate > now {
                self.pacing_timer = Some(gate);
                break;
            }
            let cwnd = self.cc.as_ref().expect("established").cwnd();
            let in_flight = self.in_flight();
            if let Some(q) = self.next_retransmit() {
                if in_flight >= cwnd {
                    cwnd_limited = true;
                    break;
                }
                self.retx.pop();
                self.retransmit(now, q, out);
                sent_any = true;
                continue;
            }
            let ready = self.new_data_ready(now);
            if ready == 0 {
                break;
            }
            if in_flight >= cwnd {
                cwnd_limited = true;
                break;
            }
            match self.tso_should_defer(now, cwnd, in_flight, max_segs) {
                Defer::Send => {}
                Defer::Cwnd => {
                    cwnd_limited = true;
                    break;
                }
                Defer::Other => break,
            }
            // `tcp_cwnd_test`: at most half the cwnd per burst.
            let quota = (cwnd - in_flight).min((cwnd >> 1).max(1));
            let n = quota.min(max_segs).min(ready);
            self.send_new(now, n, out);
            sent_any = true;
        }
        if sent_any || cwnd_limited {
            self.cwnd_validate(
                cwnd_limited || self.in_flight() >= self.cc.as_ref().map_or(0, |c| c.cwnd()),
            );
        }
        if sent_any {
            if self.xmit_timer.is_none()
                || matches!(self.xmit_timer, Some((_, TimerKind::LossProbe)))
            {
                self.rearm_rto(now);
            }
            self.schedule_loss_probe(now, false);
        }
        self.check_app_limited(now);
    }

    /// `tcp_rate_check_app_limited`: nothing to send although cwnd allows.
    fn check_app_limited(&mut self, now: Time) {
        let cwnd = self.cc.as_ref().map_or(0, |c| c.cwnd());
        let written = self.segments_written(now);
        if self.snd_nxt >= written && self.in_flight() < cwnd && self.lost_out <= self.retrans_out {
            self.rate.mark_app_limited(self.in_flight());
        }
    }

    /// `tcp_cwnd_validate`.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let packets_out = self.packets_out();
        if !seq_after(self.cwnd_usage_seq, self.snd_una)
            || is_cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    fn next_retransmit(&mut self) -> Option<u32> {
        while let Some(&Reverse(q)) = self.retx.peek() {
            let valid = self.sb.contains(q) && {
                let s = self.sb.get(q);
                s.has(seg::LOST) && !s.has(seg::RETRANS) && !s.has(seg::SACKED)
            };
            if valid {
                return Some(q);
            }
            self.retx.pop();
        }
        None
    }

    /// Account one transmission of `len` payload bytes for pacing
    /// (`tcp_update_skb_after_send`) and fq `maxrate`.
    fn pace(&mut self, now: Time, payload: u64, wire: u64) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let rate = self.cc.as_ref().map_or(Rate::INF, |c| c.pacing_rate());
        if self.is_paced() && !rate.is_inf() && rate.0 > 0 && self.data_segs_out >= UNPACED_SEGS {
            let len_ns = crate::units::div128(
                payload as u128 * 1_000_000_000,
                rate.bytes_per_sec().max(1) as u128,
            ) as u64;
            let credit = self.wstamp.since(prior).0;
            self.wstamp += Dur(len_ns - (len_ns / 2).min(credit));
        }
        if let Some(max) = self.cfg.pacing.max_rate {
            // sch_fq: time_next_packet = now + len / maxrate, minus lateness (capped at half).
            let mut len_ns = max.tx_time(crate::units::Bytes(wire)).0.min(1_000_000_000);
            if self.fq_next > Time::ZERO {
                len_ns -= (len_ns / 2).min(now.since(self.fq_next).0);
            }
            self.fq_next = now + Dur(len_ns);
        }
    }

    /// A data segment; `new`: not sent before. `tcp_ecn_send`: an ECN
    /// flow's new data is ECT and carries a queued CWR; a retransmission
    /// goes Not-ECT (RFC 3168 6.1.5) unless the algorithm keeps ECT on every
    /// packet (`EcnUse::ect_permanent`), and never carries CWR.
    fn data_packet(&mut self, now: Time, q: u32, new: bool) -> Packet {
        let mut p = Packet::data(self.cfg.flow, q, self.app.payload(q, self.cfg.mss));
        p.ts = ts_clock(now);
        p.ts_other = self.ts_recent;
        if self.cfg.ecn {
            let ecn = self.cc_cfg.ecn();
            let ect = ecn.ect;
            if new {
                p.ecn = ect;
                if self.queue_cwr {
                    p.flags |= flags::CWR;
                    self.queue_cwr = false;
                }
            } else if ecn.ect_permanent {
                p.ecn = ect;
            }
        }
        p
    }

    fn send_new(&mut self, now: Time, n: u32, out: &mut Vec<Packet>) {
        if self.in_flight() == 0 {
            let conn = self.conn();
            if let Some(cc) = self.cc.as_mut() {
                cc.on_event(now, CcEvent::TxStart, &conn);
            }
        }
        // `tcp_event_data_sent`: restart cwnd after an idle period longer
        // than the RTO (sysctl tcp_slow_start_after_idle = 1).
        let idle = now.since(self.lsndtime);
        if self.packets_out() == 0 && self.data_segs_out > 0 && idle > self.rtt.rto() {
            let conn = self.conn();
            let rto = self.rtt.rto();
            if let Some(cc) = self.cc.as_mut() {
                cc.on_event(now, CcEvent::CwndRestart { idle, rto }, &conn);
            }
        }
        self.lsndtime = now;
        let mut payload = 0u64;
        let mut wire = 0u64;
        for k in 0..n {
            let q = self.snd_nxt;
            let packets_out = self.packets_out();
            let tx = self
                .rate
                .on_send(now, packets_out, self.in_flight() + 1, self.lost_total);
            // The end of a write, or of a multi-segment burst (a GSO
            // packet: `__tcp_transmit_skb` forces PSH on it; tcp/push.rs).
            let psh = self.push.take(q) | (self.cfg.push_marks && n > 1 && k + 1 == n);
            self.sb.push(Seg {
                tx_time: now,
                flags: seg::SNAPSHOT | if psh { seg::PSH } else { 0 },
                tx,
            });
            self.snd_nxt += 1;
            self.rack.on_transmit(q, now);
            let mut p = self.data_packet(now, q, true);
            if psh {
                p.flags |= flags::PSH;
            }
            payload += p.payload as u64;
            wire += p.wire_len() as u64;
            out.push(p);
        }
        self.stats.segs_sent += n as u64;
        self.sent_since_state_change += n;
        self.pace(now, payload, wire);
        self.data_segs_out += n as u64;
    }

    fn retransmit(&mut self, now: Time, q: u32, out: &mut Vec<Packet>) {
        let packets_out = self.packets_out();
        let in_flight_after = self.in_flight() + 1;
        let tx = self
            .rate
            .on_send(now, packets_out, in_flight_after, self.lost_total);
        let sg = self.sb.get_mut(q);
        // A probe may re-send a packet whose retransmission is still in
        // flight: it is then counted in `retrans_out` once, as in Linux.
        if !sg.has(seg::RETRANS) {
            self.retrans_out += 1;
        }
        sg.flags |= seg::RETRANS | seg::EVER_RETRANS | seg::SNAPSHOT;
        if q == self.snd_una {
            // `tcp_xmit_retransmit_queue`: re-sending the head restarts the
            // RTO from now (replacing a pending loss probe).
            self.xmit_timer = Some((now + self.rtt.rto(), TimerKind::Rto));
        }
        sg.tx_time = now;
        sg.tx = tx;
        self.rack.on_transmit(q, now);
        let psh = self.sb.get(q).has(seg::PSH);
        let mut p = self.data_packet(now, q, false);
        p.flags |= flags::RETRANS;
        if psh {
            p.flags |= flags::PSH;
        }
        let (payload, wire) = (p.payload as u64, p.wire_len() as u64);
        out.push(p);
        self.stats.segs_sent += 1;
        self.stats.segs_retrans += 1;
        self.sent_since_state_change += 1;
        self.pace(now, payload, wire);
        self.data_segs_out += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::cubic::CubicConfig;
    use crate::packet::SackBlock;
    use crate::scenario::PacingMode;

    const MSS: u32 = 1448;

    fn sender(tso_defer: bool, app: App) -> Sender {
        sender_with(tso_defer, app, false)
    }

    fn sender_with(tso_defer: bool, app: App, ecn: bool) -> Sender {
        let cfg = SenderConfig {
            flow: 0,
            mss: MSS,
            init_cwnd: 10,
            pacing: Pacing {
                mode: PacingMode::None,
                max_rate: None,
            },
            rwnd_segs: None,
            ecn,
            cc_seed: 1,
            tso_defer,
            push_marks: false,
            timestamps: true,
        };
        Sender::new(cfg, CcConfig::Cubic(CubicConfig::default()), app)
    }

    /// A sender in the middle of an ACK clock: its cwnd grown in slow start
    /// on a 1 ms path, then the flight in the network re-timed as if sent
    /// evenly over the last srtt, the last one 50 us ago. Returns the time.
    fn clocked(tso_defer: bool, app: App) -> (Sender, Time) {
        clocked_with(sender(tso_defer, app))
    }

    fn clocked_with(mut s: Sender) -> (Sender, Time) {
        let mut out = Vec::new();
        s.start(Time::ZERO, &mut out);
        let mut now = Time(1_000_000);
        s.on_packet(now, &Packet::control(0, Kind::SynAck), &mut out);
        while s.cc().unwrap().cwnd() < 200 {
            now += Dur::from_ms(1);
            let nxt = s.snd_nxt;
            out.clear();
            s.on_packet(now, &Packet::ack(0, nxt, &[]), &mut out);
        }
        let srtt = s.rtt.srtt().expect("sampled");
        let n = s.packets_out() as u64;
        let now = now + srtt;
        for (k, q) in (s.snd_una..s.snd_nxt).enumerate() {
            let t = now - srtt + Dur(srtt.0 * (k as u64 + 1) / n);
            s.sb.get_mut(q).tx_time = t;
            // RACK's time-ordered queue too (the old entries go stale).
            s.rack.on_transmit(q, t);
        }
        s.wstamp = now - Dur::from_us(50);
        (s, now)
    }

    /// Segments sent in answer to one ACK of `acked` more segments at `now`.
    fn answer(s: &mut Sender, now: Time, acked: u32) -> u32 {
        let mut out = Vec::new();
        let ack = s.snd_una + acked;
        s.on_packet(now, &Packet::ack(0, ack, &[]), &mut out);
        out.len() as u32
    }

    #[test]
    fn a_partial_burst_waits_for_the_acks_that_make_it_full() {
        let (mut s, now) = clocked(true, App::Bulk);
        let max_segs = s.tso_segs();
        assert!(
            max_segs >= 8,
            "the test needs bursts of at least 8, got {max_segs}"
        );
        // Each ACK of one segment frees two in slow start: held back until
        // a full burst fits, which then goes at once.
        let mut answers = Vec::new();
        for k in 0..max_segs {
            answers.push(answer(&mut s, now + Dur::from_us(10 * k as u64), 1));
        }
        let first = answers.iter().position(|&n| n > 0).expect("a burst went");
        assert!(first > 0, "the first ACK is held back: {answers:?}");
        assert!(answers[..first].iter().all(|&n| n == 0));
        assert_eq!(answers[first], max_segs, "a full burst: {answers:?}");
        assert!(
            2 * (first as u32 + 1) >= max_segs,
            "not before it is full: {answers:?}"
        );
    }

    #[test]
    fn an_ack_more_than_1_ms_after_the_last_send_is_answered_at_once() {
        let (mut s, now) = clocked(true, App::Bulk);
        s.wstamp = now - Dur::from_us(1_001);
        assert_eq!(
            answer(&mut s, now, 1),
            2,
            "no deferral 1 ms after the last send"
        );
    }

    #[test]
    fn an_ack_not_expected_soon_does_not_hold_the_burst() {
        // The oldest segment in flight left just now: its ACK is an srtt
        // away, more than min(srtt/2, 1 ms).
        let (mut s, now) = clocked(true, App::Bulk);
        for q in s.snd_una..s.snd_nxt {
            s.sb.get_mut(q).tx_time = now - Dur::from_us(10);
        }
        assert_eq!(answer(&mut s, now, 1), 2);
    }

    #[test]
    fn without_tso_deferral_every_ack_is_answered() {
        let (mut s, now) = clocked(false, App::Bulk);
        assert_eq!(answer(&mut s, now, 1), 2);
    }

    #[test]
    fn the_last_buffer_of_a_transfer_is_not_held_back() {
        // The application wrote its last 3 segments (the FIN goes with them)
        // and the window has room for 4: they go without waiting for more.
        let (s0, _) = clocked(true, App::Bulk);
        let total = s0.snd_nxt + 3;
        let bytes = total as u64 * MSS as u64;
        let (mut s, now) = clocked(true, App::Sized { bytes });
        assert_eq!(s.snd_nxt, s0.snd_nxt, "same history");
        assert_eq!(answer(&mut s, now, 2), 3);
        // The same 3 segments with more to come later wait for it.
        let later = App::Chunks(crate::app::Chunks::new(
            vec![(Dur::ZERO, bytes), (Dur::from_ms(100_000), bytes)],
            MSS,
        ));
        let (mut s, now) = clocked(true, later);
        assert_eq!(s.snd_nxt, s0.snd_nxt, "same history");
        assert_eq!(answer(&mut s, now, 2), 0);
        // A window smaller than the last buffer holds it back too (cwnd-limited
        // before the FIN test, as in Linux).
        let (mut s, now) = clocked(true, App::Sized { bytes });
        assert_eq!(answer(&mut s, now, 1), 0);
    }

    #[test]
    fn no_deferral_in_recovery() {
        let mut sent = [0; 2];
        for (k, defer) in [true, false].into_iter().enumerate() {
            let (mut s, now) = clocked(defer, App::Bulk);
            s.ca_state = CaState::Recovery;
            s.high_seq = s.snd_nxt;
            sent[k] = answer(&mut s, now, 1);
        }
        assert!(sent[1] > 0, "the window allows sending");
        assert_eq!(sent[0], sent[1], "deferral does not apply in recovery");
    }

    /// An ACK of `ack`, with ECE if `ece`, and SACK blocks.
    fn ack_at(s: &mut Sender, now: Time, ack: u32, ece: bool, sack: &[SackBlock]) {
        let mut p = Packet::ack(0, ack, sack);
        if ece {
            p.flags |= flags::ECE;
        }
        s.on_packet(now, &p, &mut Vec::new());
    }

    #[test]
    fn cwr_is_held_until_an_ack_above_high_seq() {
        // `tcp_fastretrans_alert`: the ACK of exactly high_seq was sent
        // before the receiver saw the CWR flag and still carries ECE; it
        // must not start a second reduction (the simulator's did until
        // model 9: two CWR flags per CE mark).
        let (mut s, now) = clocked_with(sender_with(false, App::Bulk, true));
        let (una, cwnd) = (s.snd_una, s.cc().unwrap().cwnd());
        ack_at(&mut s, now, una + 2, true, &[]);
        assert_eq!(s.ca_state, CaState::Cwr);
        let high = s.high_seq;
        let ssthresh = s.cc().unwrap().ssthresh();
        assert!(ssthresh < cwnd, "one reduction: {ssthresh} of {cwnd}");
        let mut t = now;
        let mut a = una + 2;
        while a < high {
            a = (a + 2).min(high);
            t += Dur::from_us(100);
            ack_at(&mut s, t, a, true, &[]);
            assert_eq!(s.ca_state, CaState::Cwr, "ack {a} of high_seq {high}");
        }
        assert_eq!(s.cc().unwrap().ssthresh(), ssthresh, "no second reduction");
        // Past high_seq the reduction ends, at ssthresh.
        ack_at(&mut s, t + Dur::from_us(100), high + 1, false, &[]);
        assert_eq!(s.ca_state, CaState::Open);
        assert_eq!(s.cc().unwrap().cwnd(), ssthresh);
    }

    #[test]
    fn a_loss_during_cwr_enters_recovery_without_a_second_reduction() {
        // `tcp_fastretrans_alert` "E": CWR is in the default branch, so a
        // proven loss enters Recovery; `tcp_enter_recovery` starts no new
        // reduction while one is under way (high_seq and ssthresh stay).
        let (mut s, now) = clocked_with(sender_with(false, App::Bulk, true));
        let una = s.snd_una;
        ack_at(&mut s, now, una + 2, true, &[]);
        let (high, ssthresh) = (s.high_seq, s.cc().unwrap().ssthresh());
        // Segment una+2 lost: the rest of the flight SACKed an srtt later,
        // the last of it sent most of an srtt after the hole (past any
        // reordering window).
        let t = now + s.rtt.srtt().unwrap();
        let sack = [SackBlock {
            start: una + 3,
            end: high,
        }];
        ack_at(&mut s, t, una + 2, false, &sack);
        assert!(s.lost_out > 0, "the hole is marked lost");
        assert_eq!(s.ca_state, CaState::Recovery);
        assert_eq!(s.high_seq, high);
        assert_eq!(s.cc().unwrap().ssthresh(), ssthresh);
    }

    #[test]
    fn an_ack_of_a_retransmission_samples_rtt_from_its_timestamp() {
        // `tcp_ack_update_rtt`: Karn's rule leaves the ACK that covers a
        // retransmission without a timed sample; the TSecr it echoes (the
        // retransmission's TSval, ms-grained) gives one. Without
        // timestamps srtt stays where it was.
        let mut srtts = Vec::new();
        for timestamps in [true, false] {
            let mut s = sender(false, App::Bulk);
            s.cfg.timestamps = timestamps;
            let (mut s, now) = clocked_with(s);
            let (una, nxt) = (s.snd_una, s.snd_nxt);
            let t = now + s.rtt.srtt().unwrap();
            let sack = [SackBlock {
                start: una + 1,
                end: nxt,
            }];
            let mut out = Vec::new();
            let mut p = Packet::ack(0, una, &sack);
            p.ts = ts_clock(now);
            s.on_packet(t, &p, &mut out);
            assert_eq!(s.ca_state, CaState::Recovery);
            let rtx = out.iter().find(|p| p.seq == una).expect("the hole re-sent");
            let before = s.rtt.srtt().unwrap();
            // The receiver echoes the retransmission's TSval 30 ms later.
            let mut a = Packet::ack(0, nxt, &[]);
            a.ts = rtx.ts;
            s.on_packet(t + Dur::from_ms(30), &a, &mut Vec::new());
            srtts.push((before, s.rtt.srtt().unwrap()));
        }
        let (before, with) = srtts[0];
        // srtt = 7/8 srtt + 1/8 x 30 ms (1 ms-grained).
        let expect = (before.0 * 7 + 30_000_000) / 8;
        assert!(
            with.0.abs_diff(expect) <= 1_000_000 / 8 + 1_000,
            "{with:?} vs {expect}"
        );
        assert_eq!(srtts[1].0, srtts[1].1, "no sample without timestamps");
    }

    #[test]
    fn an_ecn_flow_retransmits_not_ect_unless_its_algorithm_keeps_ect() {
        // `tcp_ecn_send`: only new data is ECT (RFC 3168 6.1.5); DCTCP
        // (`TCP_CONG_NEEDS_ECN`) keeps ECT on retransmissions too.
        use crate::cc::dctcp::DctcpConfig;
        for (cc, ect) in [
            (CcConfig::Cubic(CubicConfig::default()), false),
            (CcConfig::Dctcp(DctcpConfig::default()), true),
        ] {
            let mut s = sender_with(false, App::Bulk, true);
            s.cc_cfg = Box::new(cc);
            let (mut s, now) = clocked_with(s);
            let (una, nxt) = (s.snd_una, s.snd_nxt);
            // An ECE first, so a CWR flag is queued when the loss shows.
            ack_at(&mut s, now, una, true, &[]);
            let sack = [SackBlock {
                start: una + 1,
                end: nxt,
            }];
            let mut out = Vec::new();
            let t = now + s.rtt.srtt().unwrap();
            s.on_packet(t, &Packet::ack(0, una, &sack), &mut out);
            let rtx = out.iter().find(|p| p.seq == una).expect("the hole re-sent");
            assert_eq!(rtx.ecn.is_ect(), ect);
            assert!(!rtx.has_flag(flags::CWR), "CWR rides on new data only");
            // The same answer sends new data: ECT, the first with the CWR
            // flag the ECE queued.
            let new: Vec<&Packet> = out.iter().filter(|p| p.seq >= nxt).collect();
            assert!(!new.is_empty(), "new data goes with the retransmission");
            assert!(new.iter().all(|p| p.ecn.is_ect()));
            assert!(new[0].has_flag(flags::CWR));
        }
    }
}
