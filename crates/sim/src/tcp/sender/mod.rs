//! The sending side of a flow, modelled on Linux TCP: handshake, transmit
//! loop (`tcp_write_xmit` with TSO sizing and the cwnd/rwnd tests),
//! EDT pacing (`tcp_update_skb_after_send`, sch_fq `maxrate`), ACK
//! processing (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`), RACK-TLP,
//! the recovery state machine (`tcp_fastretrans_alert`), RTO and the
//! delivery-rate sample handed to the congestion control on every ACK.
//!
//! Sans-IO: every call takes `now` and appends packets to send to `out`;
//! the caller asks `next_deadline()` when to call `on_timer`.
//!
//! The code is split along Linux's own files: `output.rs` (tcp_output.c:
//! the transmit loop, TSO and pacing), `input.rs` (tcp_input.c: the
//! handshake's answer and `tcp_ack`), `recovery.rs` (tcp_recovery.c and the
//! fast-recovery part of tcp_input.c) and `timer.rs` (tcp_timer.c: RTO,
//! loss probe, the timer dispatch). This file holds the state, the
//! constructor and the accessors.

mod input;
mod output;
mod recovery;
mod timer;

use super::push::PushMarks;
use super::rack::Rack;
use super::rate::DeliveryState;
use super::rtt::{RttEstimator, RTO_MAX, TIMEOUT_INIT};
use super::scoreboard::{SackRanges, Scoreboard};
use crate::app::App;
use crate::cc::{AnyCc, CaState, CcConfig, CongestionControl, Conn};
use crate::metrics::collect::RunningStats;
use crate::packet::{Kind, Packet};
use crate::scenario::Pacing;
use crate::units::{Dur, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `TCP_TIMEOUT_MIN` (2 jiffies at HZ=1000), added to the TLP timeout.
const TIMEOUT_MIN: Dur = Dur::from_ms(2);

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::cubic::CubicConfig;
    use crate::packet::{flags, SackBlock};
    use crate::scenario::PacingMode;
    use crate::tcp::rtt::ts_clock;

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
