//! The receiving side of a flow: cumulative ACK, SACK blocks (most recent
//! first, RFC 2018 and Linux `tcp_sack_new_ofo_skb`), delayed ACKs as Linux
//! does them (`__tcp_ack_snd_check`: quick-ACK mode for the first segments,
//! an ACK per two full segments, an immediate ACK when a hole fills, the
//! delayed-ACK timer otherwise: `tcp/delack.rs`), SACK compression while data is out of
//! order (three immediate duplicate ACKs, then one per min(rtt/20, 1 ms)),
//! a quick ACK for every segment that grows the receive window
//! (`tcp/rcvbuf.rs`), and the RFC 3168 ECN echo.

use super::delack::{DelayedAck, Jiffies};
use super::rcvbuf::RcvWindow;
use super::rtt::ts_clock;
use crate::packet::{flags, Ecn, Kind, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::units::{Dur, Time};

/// How the receiver reports CE marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnEcho {
    /// RFC 3168: ECE on every ACK from the first CE until the sender's CWR.
    Rfc3168,
    /// DCTCP-style (`tcp_dctcp.c` `dctcp_ece_ack_update`): ECE mirrors the CE
    /// bit of the latest data; when it flips, the data before the flip is
    /// ACKed at once with the old state. BBRv2/v3 expect this
    /// (`bbr_precise_ece_ack`).
    Accurate,
}

/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
pub use super::delack::DELACK_TIMEOUT;
/// sysctl `tcp_comp_sack_delay_ns`: the longest a SACK is held back.
const COMP_SACK_DELAY: Dur = Dur::from_ms(1);
/// sysctl `tcp_comp_sack_nr`: at most this many ACKs compressed into one.
const COMP_SACK_NR: u32 = 44;
/// `TCP_FASTRETRANS_THRESH`: duplicate ACKs sent at once before compressing.
const FASTRETRANS_THRESH: u32 = 3;
/// `TCP_SACK_BLOCKS_EXPECTED`: a segment landing beyond the first two SACK
/// blocks flushes a compressed ACK first (`tcp_sack_new_ofo_skb`).
const SACK_BLOCKS_EXPECTED: usize = 2;

/// The Linux receive-side behaviours a receiver models (`[hosts]`); both
/// on by default, as in Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckOptions {
    /// SACK compression (`tcp_comp_sack_*`, `[hosts] sack_compress`).
    pub sack_compress: bool,
    /// ACK an in-order full-sized PSH segment at once (`tcp/push.rs`,
    /// `[hosts] push_acks`).
    pub push_acks: bool,
    /// A quick ACK for each segment that grows the receive window
    /// (`tcp_grow_window`, `[hosts] window_acks`).
    pub window_acks: bool,
    /// Linux's delayed-ACK engine on these jiffies (`tcp/delack.rs`,
    /// `[hosts] delack`, `hz`): the adaptive timeout and the quick-ACK
    /// mode it restarts; `None`: a fixed 40 ms timer.
    pub delack: Option<Jiffies>,
    /// ACKs advertise the receive window and the sender keeps within it
    /// (`tcp_select_window`, `[hosts] advertised_window`, off by default);
    /// `false`: no window on ACKs.
    pub advertise: bool,
    /// The receiver's RTT from RFC 7323 timestamps (`tcp_rcv_rtt_measure_ts`,
    /// `[hosts] rcv_rtt_timestamps`): what DRS measures its rounds by;
    /// `false`: the handshake's RTT.
    pub rcv_rtt_ts: bool,
    /// ACK every segment at once, and send SACK blocks: both true in Linux;
    /// false only in deliberately wrong models (`mutant`).
    pub delay_acks: bool,
    pub sack: bool,
}

impl Default for AckOptions {
    fn default() -> AckOptions {
        AckOptions {
            sack_compress: true,
            push_acks: true,
            window_acks: true,
            delack: None,
            advertise: false,
            rcv_rtt_ts: false,
            delay_acks: true,
            sack: true,
        }
    }
}

pub struct Receiver {
    flow: u32,
    echo: EcnEcho,
    opts: AckOptions,
    /// Next segment expected (`rcv_nxt`).
    rcv_nxt: u32,
    /// Out-of-order ranges received above rcv_nxt, sorted, disjoint.
    ooo: Vec<(u32, u32)>,
    /// Start of recently changed ooo ranges, most recent first (SACK order).
    recent: Vec<u32>,
    /// Remaining quick ACKs (`icsk_ack.quick`).
    quick: u32,
    started: bool,
    /// The delayed-ACK timeout (`icsk_ack.ato`) and its pending timer.
    dack: DelayedAck,
    /// An ECT or CE segment arrived (`TCP_ECN_SEEN`).
    ecn_seen: bool,
    /// RFC 3168: echo ECE until the sender's CWR arrives.
    ece: bool,
    /// Segments received in total (duplicates included).
    pub segs_received: u64,
    /// `rcv_nxt` when the last ACK left (`rcv_wup`): what is unACKed is
    /// `rcv_nxt - rcv_wup`.
    rcv_wup: u32,
    /// The TSval the next ACK echoes (`ts_recent`).
    ts_recent: u32,
    /// When the SYN-ACK left, then the handshake RTT it gave (`srtt_us` of a
    /// receiver that sends no data).
    synack_at: Option<Time>,
    srtt: Option<Dur>,
    /// ACKs held back (`compressed_ack`) and the timer that sends them.
    compressed: u32,
    comp_at: Option<Time>,
    /// `compressed_ack_rcv_nxt` and `dup_ack_counter`.
    comp_rcv_nxt: u32,
    dup_acks: u32,
    /// The receive window's growth (`rcv_ssthresh`, `window_clamp`, DRS).
    window: RcvWindow,
    /// The right edge of the window last advertised, in segments
    /// (`rcv_wup + rcv_wnd`): it never moves left (`tcp_select_window`).
    right_edge: u32,
    /// `rcv_rtt_est.rtt_us`: eight times the smoothed receiver RTT, us (0:
    /// no sample yet), and the TSecr of its last sample (`rcv_rtt_last_tsecr`).
    rcv_rtt_us8: u64,
    rcv_rtt_last_tsecr: u16,
}

impl Receiver {
    /// `mss`: the flow's segment size; `rwnd`: its fixed receive window
    /// (bytes), if any.
    pub fn new(flow: u32, echo: EcnEcho, opts: AckOptions, mss: u32, rwnd: Option<u64>) -> Self {
        Receiver {
            flow,
            echo,
            opts,
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            quick: 0,
            started: false,
            dack: DelayedAck::new(opts.delack),
            ecn_seen: false,
            ece: false,
            segs_received: 0,
            rcv_wup: 0,
            ts_recent: 0,
            synack_at: None,
            srtt: None,
            compressed: 0,
            comp_at: None,
            comp_rcv_nxt: 0,
            dup_acks: 0,
            window: RcvWindow::new(mss, rwnd),
            right_edge: 0,
            rcv_rtt_us8: 0,
            rcv_rtt_last_tsecr: 0,
        }
    }

    /// `tcp_grow_window` for a new segment: a quick ACK if the window grew
    /// (`icsk_ack.quick |= 1`). The buffer holds the out-of-order segments
    /// and, for an in-order one, the segment itself (`tcp_queue_rcv`
    /// charges it before `tcp_event_data_recv`; the application reads it
    /// after), while an out-of-order one, already in the list, is charged
    /// only after (`tcp_data_queue_ofo`: `skb_set_owner_r` follows the grow).
    fn grow_window(&mut self, pkt: &Packet, in_order: bool) {
        let ooo = &self.ooo;
        let listed = || ooo.iter().map(|&(s, e)| u64::from(e - s)).sum::<u64>();
        let grew = if in_order {
            self.window.grow(u64::from(pkt.payload), 1, || listed() + 1)
        } else {
            self.window.grow(u64::from(pkt.payload), 0, || listed() - 1)
        };
        if grew && self.opts.window_acks {
            self.quick |= 1;
        }
    }

    /// In-order segments received and not yet ACKed (`rcv_nxt - rcv_wup`).
    fn unacked(&self) -> u32 {
        self.rcv_nxt - self.rcv_wup
    }

    /// A SYN arrived: the SYN-ACK to send, stamped as `stamp` stamps an
    /// ACK (its window is `tcp_select_initial_window`'s 64 KB in whole
    /// segments, at most the clamp: `rcv_ssthresh` before any data).
    pub fn on_syn(&mut self, now: Time) -> Packet {
        self.synack_at = Some(now);
        let mut p = Packet::control(self.flow, Kind::SynAck);
        self.stamp(now, &mut p);
        p
    }

    /// When `on_timer` must next be called: the delayed-ACK or the
    /// compressed-SACK timer.
    pub fn deadline(&self) -> Option<Time> {
        match (self.dack.deadline(), self.comp_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    /// The room for a window an ACK sent now may offer, bytes
    /// (`__tcp_select_window`: `rcv_ssthresh`, at most the buffer's room
    /// left by out-of-order data); `select_window` keeps its right edge
    /// from moving left.
    pub fn advertised_window(&self) -> u64 {
        let held: u64 = self.ooo.iter().map(|&(s, e)| u64::from(e - s)).sum();
        self.window
            .rcv_ssthresh()
            .min(self.window.clamp().saturating_sub(held * self.window.mss()))
    }

    /// `tcp_select_window` for an ACK leaving now: the window is the room
    /// `advertised_window` leaves, in whole segments, but its right edge
    /// never moves left (`tcp_shrink_window` = 0): while a hole holds
    /// `rcv_nxt` and out-of-order data fills the buffer, the sender may
    /// still send up to the edge it was given, and no further. Returns the
    /// right edge (segments).
    fn select_window(&mut self) -> u32 {
        let room = (self.advertised_window() / self.window.mss()) as u32;
        let cur = self.right_edge.saturating_sub(self.rcv_nxt);
        self.right_edge = self.rcv_nxt.saturating_add(room.max(cur));
        self.right_edge
    }

    /// `tcp_rcv_rtt_measure_ts`: a full-sized segment echoing a TSecr not
    /// used before gives a sample, now less the TSval the receiver put on
    /// the ACK that segment answers (whole ms; 0 ms gives none: Linux 6.16,
    /// "tcp: remove zero TCP TS samples for autotuning"). Unlike the
    /// handshake's RTT, it sees the queue the data waited in.
    /// `tcp_rcv_rtt_update` as Linux 6.16 has it ("tcp: always seek for
    /// minimal rtt in tcp_rcv_rtt_update()"): a sample below the estimate
    /// replaces it at once; a larger one moves it by 1/8, and only while
    /// the receive queue is empty ("tcp: skip big rtt sample if receive
    /// queue is not empty"), which it always is here: the application
    /// reads each in-order segment as it arrives.
    fn rcv_rtt_measure_ts(&mut self, now: Time, pkt: &Packet) {
        let tsecr = pkt.ts_other;
        if tsecr == 0 || tsecr == self.rcv_rtt_last_tsecr {
            return;
        }
        self.rcv_rtt_last_tsecr = tsecr;
        if u64::from(pkt.payload) < self.window.mss() {
            return;
        }
        let delta_ms = (ts_clock(now) as u16).wrapping_sub(tsecr);
        if delta_ms == 0 {
            return;
        }
        let sample = u64::from(delta_ms) * 1000;
        let old = self.rcv_rtt_us8;
        self.rcv_rtt_us8 = if old == 0 || sample << 3 < old {
            sample << 3
        } else {
            old - (old >> 3) + sample
        };
    }

    /// The RTT DRS measures its rounds by: the timestamps' estimate once it
    /// has a sample, else the handshake's.
    fn drs_rtt(&self) -> Option<Dur> {
        if self.rcv_rtt_us8 > 0 {
            Some(Dur::from_us(self.rcv_rtt_us8 >> 3))
        } else {
            self.srtt
        }
    }

    /// A data segment arrived; returns the ACKs to send now (at most two:
    /// an accurate-ECN echo may first ACK the data before a CE flip).
    pub fn on_data(&mut self, now: Time, pkt: &Packet) -> [Option<Packet>; 2] {
        self.segs_received += 1;
        if !self.started {
            // First data: initialise the delayed-ACK engine in quick-ACK mode
            // (`tcp_event_data_recv` -> `tcp_incr_quickack`): half the
            // window the SYN-ACK advertised in segments, at most 16 (one
            // for a 3-segment `rwnd`, as measured on the kernel's ACKs).
            self.started = true;
            self.quick = self.quickacks(MAX_QUICKACKS);
        }
        if self.srtt.is_none() {
            // The handshake's last ACK comes with the first data here.
            self.srtt = self.synack_at.map(|t| now.since(t));
            if let Some(rtt) = self.srtt {
                self.dack.on_rtt(rtt);
            }
        }
        if self.opts.rcv_rtt_ts {
            self.rcv_rtt_measure_ts(now, pkt);
        }
        // `tcp_replace_ts_recent`: the TSval of a segment at or before
        // rcv_wup (the left edge of what the next ACK covers), never older
        // than the one held (`tcp_paws_check`). Out-of-order segments leave
        // it; the retransmission that fills the hole sets it.
        if pkt.seq <= self.rcv_wup && (pkt.ts.wrapping_sub(self.ts_recent) as i32) >= 0 {
            self.ts_recent = pkt.ts;
        }
        let ce = pkt.ecn == Ecn::Ce;
        if self.opts.delack.is_some() {
            // `__tcp_ecn_check_ce`: a Not-ECT segment after ECT ones is
            // probably a retransmission: two quick ACKs.
            if pkt.ecn == Ecn::NotEct {
                if self.ecn_seen && pkt.seq >= self.rcv_nxt {
                    self.enter_quickack(2);
                }
            } else {
                self.ecn_seen = true;
            }
        }
        let mut flip_ack = None;
        match self.echo {
            EcnEcho::Rfc3168 => {
                if pkt.has_flag(flags::CWR) {
                    self.ece = false;
                }
                if ce {
                    if !self.ece {
                        // First CE: ACK quickly (`tcp_ecn_check_ce` enters quick-ACK mode).
                        self.enter_quickack(2);
                    }
                    self.ece = true;
                }
            }
            EcnEcho::Accurate => {
                if ce != self.ece {
                    if self.unacked() > 0 {
                        flip_ack = Some(self.make_ack(now));
                    }
                    self.ece = ce;
                    self.quick = self.quick.max(2);
                }
            }
        }
        let seq = pkt.seq;
        let mut immediate = false;
        if seq == self.rcv_nxt {
            if self.dack.on_in_order(now) {
                // A gap longer than the RTO (`tcp_event_data_recv`).
                self.quick = self.quick.max(self.quickacks(MAX_QUICKACKS));
            }
            self.rcv_nxt += 1;
            // `tcp_event_data_recv` (segments of 128 bytes or more), before
            // `tcp_ofo_queue` moves the out-of-order data in.
            if pkt.payload >= 128 {
                self.grow_window(pkt, true);
            }
            let had_ooo = !self.ooo.is_empty();
            // Pull in any out-of-order range that is now contiguous.
            if let Some(&(s, e)) = self.ooo.first() {
                if s <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(e);
                    self.ooo.remove(0);
                }
            }
            // The application reads all in-order data at once: DRS measures.
            let span = self.ooo.last().map_or(0, |&(_, e)| e - self.rcv_nxt);
            self.window.on_read(now, self.rcv_nxt, self.drs_rtt(), span);
            if self.opts.push_acks && pkt.has_flag(flags::PSH) {
                // `tcp_measure_rcv_mss` sets ICSK_ACK_PUSHED; the application
                // drains the queue at once and `tcp_cleanup_rbuf` ACKs.
                immediate = true;
            }
            if had_ooo {
                self.recent.retain(|&s| s > self.rcv_nxt);
                // RFC 5681 4.2: ACK at once when the hole is filled
                // (`ICSK_ACK_NOW`), or the window moved by more than a
                // segment; otherwise as out-of-order data.
                immediate = self.ooo.is_empty()
                    || self.unacked() >= 2
                    || self.quick > 0
                    || !self.hold_sack(now);
            }
        } else if seq > self.rcv_nxt {
            // `tcp_sack_new_ofo_skb`: a segment that lands past the first two
            // SACK blocks sends the held-back ACK before the blocks change.
            let flush = (self.compressed > 0 && self.sack_slot(seq) >= SACK_BLOCKS_EXPECTED)
                .then(|| self.make_ack(now));
            if self.insert_ooo(seq) {
                // `tcp_data_queue_ofo` grows the window too (SACK flows).
                self.grow_window(pkt, false);
            }
            if self.quick > 0 || !self.hold_sack(now) {
                return [flip_ack.or(flush), Some(self.make_ack(now))];
            }
            return [flip_ack.or(flush), None];
        } else {
            // Old duplicate: ACK at once (Linux sends a D-SACK; not
            // modelled) and quick-ACK mode (`tcp_data_queue`).
            immediate = true;
            if self.opts.delack.is_some() {
                self.enter_quickack(MAX_QUICKACKS);
            }
        }
        if immediate || self.unacked() >= 2 || self.quick > 0 || !self.opts.delay_acks {
            return [flip_ack, Some(self.make_ack(now))];
        }
        if self.dack.arm(now) {
            return [flip_ack, Some(self.make_ack(now))];
        }
        [flip_ack, None]
    }

    /// `tcp_incr_quickack`: quick ACKs for half the advertised window in
    /// segments (2 if that is none), at most `most`.
    fn quickacks(&self, most: u32) -> u32 {
        let half = self.advertised_window() / (2 * self.window.mss());
        (if half == 0 { 2 } else { half }).min(u64::from(most)) as u32
    }

    /// `tcp_enter_quickack_mode`.
    fn enter_quickack(&mut self, most: u32) {
        self.quick = self.quick.max(self.quickacks(most));
        self.dack.deflate();
    }

    /// SACK compression for an ACK that out-of-order data asks for
    /// (`__tcp_ack_snd_check`, Linux 6.1): true if it is held back. The
    /// first three duplicate ACKs for one `rcv_nxt` go at once, later ones
    /// wait for a timer of min(rtt/20, 1 ms), the rtt being the handshake's
    /// (a receiver that sends no data has no other srtt), up to 44 at a time.
    fn hold_sack(&mut self, now: Time) -> bool {
        if !self.opts.sack_compress || self.compressed >= COMP_SACK_NR {
            return false;
        }
        if self.comp_rcv_nxt != self.rcv_nxt {
            self.comp_rcv_nxt = self.rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < FASTRETRANS_THRESH {
            self.dup_acks += 1;
            return false;
        }
        self.compressed += 1;
        if self.comp_at.is_none() {
            let rtt = self.srtt.unwrap_or(Dur::ZERO);
            self.comp_at = Some(now + Dur((rtt.0 / 20).min(COMP_SACK_DELAY.0)));
        }
        true
    }

    /// Where segment `seq` lands among the SACK blocks, most recent first:
    /// the block it extends, or the count of blocks if it starts a new one.
    fn sack_slot(&self, seq: u32) -> usize {
        let mut n = 0;
        for &start in &self.recent {
            if let Ok(i) = self.ooo.binary_search_by(|&(s, _)| s.cmp(&start)) {
                let (s, e) = self.ooo[i];
                if seq + 1 >= s && seq <= e {
                    return n;
                }
                n += 1;
            }
        }
        n
    }

    /// The delayed-ACK or the compressed-SACK timer fired.
    pub fn on_timer(&mut self, now: Time) -> Option<Packet> {
        if self.comp_at.is_some_and(|t| t <= now) {
            self.comp_at = None;
            if self.compressed > 0 {
                return Some(self.make_ack(now));
            }
        }
        if self.dack.expire(now) && self.unacked() > 0 {
            self.dack.on_fired();
            return Some(self.make_ack(now));
        }
        None
    }

    /// Hold `seq` out of order; false if it was already held.
    fn insert_ooo(&mut self, seq: u32) -> bool {
        let i = self.ooo.partition_point(|&(_, e)| e < seq);
        let held = i < self.ooo.len() && self.ooo[i].0 <= seq && seq < self.ooo[i].1;
        if held {
            // Duplicate of an out-of-order segment.
        } else if i < self.ooo.len() && self.ooo[i].1 == seq {
            self.ooo[i].1 = seq + 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == seq + 1 {
                self.ooo[i].1 = self.ooo[i + 1].1;
                let gone = self.ooo.remove(i + 1).0;
                self.recent.retain(|&s| s != gone);
            }
        } else if i < self.ooo.len() && self.ooo[i].0 == seq + 1 {
            let old = self.ooo[i].0;
            self.ooo[i].0 = seq;
            self.recent.retain(|&s| s != old);
        } else {
            self.ooo.insert(i, (seq, seq + 1));
        }
        let start = self.ooo[i].0;
        self.recent.retain(|&s| s != start);
        self.recent.insert(0, start);
        self.recent.truncate(8);
        !held
    }

    /// What every segment the receiver sends carries for the switches that
    /// are on: its TSval (`rcv_rtt_timestamps`: the sender echoes it for
    /// `rcv_rtt_measure_ts`) and its window (`advertised_window`).
    fn stamp(&mut self, now: Time, p: &mut Packet) {
        if self.opts.rcv_rtt_ts {
            p.ts_other = ts_clock(now) as u16;
        }
        if self.opts.advertise {
            let edge = self.select_window();
            p.wnd = (edge - self.rcv_nxt).min(u32::from(u16::MAX)) as u16;
            p.flags |= flags::WND;
        }
    }

    fn make_ack(&mut self, now: Time) -> Packet {
        // `tcp_event_ack_sent`: any ACK sends what was held back.
        self.compressed = 0;
        self.comp_at = None;
        self.rcv_wup = self.rcv_nxt;
        self.dack.on_ack_sent();
        // `tcp_dec_quickack_mode`: leaving quick-ACK mode deflates ato.
        if self.quick == 1 {
            self.dack.deflate();
        }
        self.quick = self.quick.saturating_sub(1);
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        for &start in &self.recent {
            if n == MAX_SACK_BLOCKS || !self.opts.sack {
                break;
            }
            if let Ok(i) = self.ooo.binary_search_by(|&(s, _)| s.cmp(&start)) {
                blocks[n] = SackBlock {
                    start: self.ooo[i].0,
                    end: self.ooo[i].1,
                };
                n += 1;
            }
        }
        let mut ack = Packet::ack(self.flow, self.rcv_nxt, &blocks[..n]);
        ack.ts = self.ts_recent;
        self.stamp(now, &mut ack);
        if self.ece {
            ack.flags |= flags::ECE;
        }
        ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::rcvbuf::INITIAL_CLAMP;

    /// The rules before window growth: no quick ACK for a growing window.
    const FIXED_WINDOW: AckOptions = AckOptions {
        sack_compress: true,
        push_acks: true,
        window_acks: false,
        delack: None,
        advertise: false,
        rcv_rtt_ts: false,
        delay_acks: true,
        sack: true,
    };

    fn data(seq: u32) -> Packet {
        Packet::data(0, seq, 1448)
    }

    #[test]
    fn acks_every_second_segment_after_quick_acks() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, FIXED_WINDOW, 1448, None);
        let mut acks = 0;
        for s in 0..16 {
            acks += r.on_data(Time(s as u64), &data(s))[1].is_some() as u32;
        }
        assert_eq!(
            acks, 16,
            "quick-ACK mode ACKs each of the first 16 segments"
        );
        let mut acks = 0;
        for s in 16..36 {
            acks += r.on_data(Time(s as u64), &data(s))[1].is_some() as u32;
        }
        assert_eq!(acks, 10);
    }

    #[test]
    fn quick_acks_at_the_start_are_half_the_window_in_segments() {
        // `tcp_incr_quickack`: rcv_wnd / (2 x rcv_mss), at most 16. A
        // 3-segment buffer gives one quick ACK (as the kernel's receiver
        // did on the Linux backend), 10 segments five, 64 KB sixteen.
        for (rwnd, quick) in [(Some(3 * 1448), 1), (Some(10 * 1448), 5), (None, 16)] {
            let mut r = Receiver::new(0, EcnEcho::Rfc3168, FIXED_WINDOW, 1448, rwnd);
            let mut acked = Vec::new();
            for s in 0..2 * quick + 4 {
                acked.push(r.on_data(Time(u64::from(s)), &data(s))[1].is_some());
            }
            let q = quick as usize;
            assert!(acked[..q].iter().all(|&a| a), "{rwnd:?}: {acked:?}");
            // Then every second segment.
            assert!(
                !acked[q] && acked[q + 1] && !acked[q + 2],
                "{rwnd:?}: {acked:?}"
            );
        }
    }

    #[test]
    fn odd_segment_waits_for_the_delayed_ack_timer() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, FIXED_WINDOW, 1448, None);
        r.quick = 0;
        r.started = true;
        assert!(r.on_data(Time(0), &data(0))[1].is_none());
        assert_eq!(r.deadline(), Some(Time(0) + DELACK_TIMEOUT));
        assert!(r.on_timer(Time(1)).is_none());
        let ack = r.on_timer(Time(0) + DELACK_TIMEOUT).unwrap();
        assert_eq!(ack.seq, 1);
    }

    #[test]
    fn holes_produce_sack_blocks_most_recent_first() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, AckOptions::default(), 1448, None);
        r.on_data(Time(0), &data(0));
        let a = r.on_data(Time(1), &data(2))[1].unwrap();
        assert_eq!(a.seq, 1);
        assert_eq!(a.sacks(), &[SackBlock { start: 2, end: 3 }]);
        r.on_data(Time(2), &data(3));
        let a = r.on_data(Time(3), &data(6))[1].unwrap();
        assert_eq!(
            a.sacks(),
            &[
                SackBlock { start: 6, end: 7 },
                SackBlock { start: 2, end: 4 }
            ]
        );
        // Filling the first hole advances the cumulative ACK past 2..4.
        let a = r.on_data(Time(4), &data(1))[1].unwrap();
        assert_eq!(a.seq, 4);
        assert_eq!(a.sacks(), &[SackBlock { start: 6, end: 7 }]);
    }

    #[test]
    fn accurate_echo_mirrors_ce_and_acks_at_each_flip() {
        let mut r = Receiver::new(0, EcnEcho::Accurate, FIXED_WINDOW, 1448, None);
        r.quick = 0;
        r.started = true;
        let [a, b] = r.on_data(Time(0), &data(0));
        assert!(
            a.is_none() && b.is_none(),
            "one segment waits for the delayed ACK"
        );
        let mut p = data(1);
        p.ecn = Ecn::Ce;
        let [flip, ack] = r.on_data(Time(1), &p);
        // The flip ACKs segment 0 without ECE, then segment 1 with it.
        let flip = flip.unwrap();
        assert_eq!((flip.seq, flip.has_flag(flags::ECE)), (1, false));
        let ack = ack.unwrap();
        assert_eq!((ack.seq, ack.has_flag(flags::ECE)), (2, true));
        // No CWR needed: the next unmarked packet clears ECE.
        let [_, ack] = r.on_data(Time(2), &data(2));
        assert!(!ack.unwrap().has_flag(flags::ECE));
    }

    #[test]
    fn ce_is_echoed_until_cwr() {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, AckOptions::default(), 1448, None);
        let mut p = data(0);
        p.ecn = Ecn::Ce;
        let a = r.on_data(Time(0), &p)[1].unwrap();
        assert!(a.has_flag(flags::ECE));
        let a = r.on_data(Time(1), &data(1))[1].unwrap();
        assert!(a.has_flag(flags::ECE));
        let mut p = data(2);
        p.flags |= flags::CWR;
        let a = r.on_data(Time(2), &p)[1].unwrap();
        assert!(!a.has_flag(flags::ECE));
    }

    /// A receiver past quick-ACK mode whose handshake took `rtt`, with
    /// segments 0..10 received and ACKed and its window at its clamp (the
    /// steady state).
    fn steady(rtt: Dur) -> Receiver {
        steady_with(rtt, AckOptions::default())
    }

    fn steady_with(rtt: Dur, opts: AckOptions) -> Receiver {
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, opts, 1448, None);
        r.on_syn(Time::ZERO);
        let t0 = Time::ZERO + rtt;
        for q in 0..10 {
            r.on_data(t0, &data(q));
        }
        while r.window.grow(1448, 0, || 0) {}
        r.quick = 0;
        r.on_timer(t0 + DELACK_TIMEOUT);
        assert_eq!(r.rcv_nxt, 10);
        r
    }

    #[test]
    fn the_advertised_right_edge_stops_behind_a_hole_and_never_moves_left() {
        let opts = AckOptions {
            advertise: true,
            ..AckOptions::default()
        };
        let mut r = steady_with(Dur::from_ms(10), opts);
        let mut t = Time(50_000_000);
        let mut acks = Vec::new();
        let feed = |r: &mut Receiver, t: Time, q: u32, acks: &mut Vec<Packet>| {
            acks.extend(r.on_data(t, &data(q)).into_iter().flatten());
        };
        feed(&mut r, t, 10, &mut acks);
        feed(&mut r, t, 11, &mut acks);
        let a = *acks.last().expect("two segments are ACKed");
        assert!(a.has_flag(flags::WND));
        // At the clamp (81920 bytes: 56 segments) the window is the clamp.
        let edge = a.wnd_end().expect("advertised");
        assert_eq!((a.seq, edge), (12, 12 + 56));
        // Segment 12 is lost: 20 segments beyond it fill the buffer, the
        // room falls to 36 segments, but the edge does not move left.
        for q in 13..33 {
            t += Dur::from_us(240);
            feed(&mut r, t, q, &mut acks);
        }
        let dup: Vec<&Packet> = acks.iter().filter(|a| a.seq == 12).collect();
        assert!(dup.len() >= 3, "duplicate ACKs go at once");
        assert!(dup.iter().all(|a| a.wnd_end() == Some(edge)));
        assert_eq!(r.advertised_window(), INITIAL_CLAMP - 20 * 1448);
        // The hole filled: the edge moves right with rcv_nxt.
        feed(&mut r, t, 12, &mut acks);
        let a = acks.last().unwrap();
        assert_eq!(a.seq, 33);
        assert_eq!(a.wnd_end(), Some(33 + 56));
        // Without advertising, ACKs carry no window.
        let mut off = steady(Dur::from_ms(10));
        let a = off.on_data(Time(50_000_000), &data(10))[1]
            .or(off.on_data(Time(50_000_000), &data(11))[1]);
        assert_eq!(a.expect("ACKed").wnd_end(), None);
    }

    #[test]
    fn the_timestamp_rtt_falls_at_once_and_rises_by_an_eighth() {
        // `tcp_rcv_rtt_update` since Linux 6.16: a smaller sample latches,
        // a larger one moves the estimate by 1/8; 0 ms gives no sample.
        let opts = AckOptions {
            rcv_rtt_ts: true,
            ..AckOptions::default()
        };
        let mut r = steady_with(Dur::from_ms(10), opts);
        assert_eq!(
            r.drs_rtt(),
            Some(Dur::from_ms(10)),
            "the handshake's until a sample"
        );
        // A segment echoing the TSval of `ms_ago` ms before `at_ms` (ts_clock
        // counts ms from 1).
        let mut seq = 10;
        let mut feed = |r: &mut Receiver, at_ms: u64, ms_ago: u32, payload: u16| {
            let now = Time(at_ms * 1_000_000);
            let mut p = data(seq);
            p.payload = payload;
            p.ts_other = (ts_clock(now) - ms_ago) as u16;
            seq += 1;
            r.on_data(now, &p);
            r.drs_rtt().unwrap().us()
        };
        assert_eq!(feed(&mut r, 100, 40, 1448), 40_000, "the first sample");
        assert_eq!(feed(&mut r, 101, 40, 1448), 40_000);
        assert_eq!(feed(&mut r, 110, 20, 1448), 20_000, "a smaller one latches");
        assert_eq!(
            feed(&mut r, 111, 40, 1448),
            22_500,
            "a larger one moves it by 1/8"
        );
        assert_eq!(
            feed(&mut r, 111, 40, 1448),
            22_500,
            "the same TSecr: no sample"
        );
        assert_eq!(feed(&mut r, 120, 0, 1448), 22_500, "0 ms: no sample");
        assert_eq!(
            feed(&mut r, 130, 5, 1000),
            22_500,
            "not full-sized: no sample"
        );
    }

    #[test]
    fn every_segment_that_grows_the_window_is_acked_at_once() {
        // The first 6 segments open the window by two segments each, from
        // 65160 bytes up to the 81920-byte clamp less the segment being
        // queued; each sets a quick ACK, and `quick |= 1` keeps the 16 quick
        // ACKs whole (16 is even): 22 single ACKs before the first pair, as
        // the kernel sent (docs/validation.md), then one per two segments.
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, AckOptions::default(), 1448, None);
        r.on_syn(Time::ZERO);
        let acked: Vec<bool> = (0..36)
            .map(|q| r.on_data(Time(q as u64), &data(q))[1].is_some())
            .collect();
        assert_eq!(acked.iter().position(|a| !a), Some(22));
        assert_eq!(acked.iter().filter(|a| **a).count(), 22 + 7);
        assert_eq!(r.window.rcv_ssthresh(), INITIAL_CLAMP - 1448);
        // Without the mechanism the same receiver ACKs 16 singly, then pairs.
        let mut r = Receiver::new(0, EcnEcho::Rfc3168, FIXED_WINDOW, 1448, None);
        let acks: u32 = (0..36)
            .map(|q| r.on_data(Time(q as u64), &data(q))[1].is_some() as u32)
            .sum();
        assert_eq!(acks, 16 + 10);
    }

    #[test]
    fn three_duplicate_acks_go_at_once_then_sacks_are_compressed() {
        // Segment 10 is lost; 11.. arrive 10 us apart.
        let mut r = steady(Dur::from_ms(10));
        let t = Time(50_000_000);
        let mut sent = Vec::new();
        for k in 0..10u32 {
            let now = t + Dur::from_us(10 * k as u64);
            sent.push(r.on_data(now, &data(11 + k))[1].is_some());
        }
        assert_eq!(&sent[..3], &[true, true, true], "three dupacks at once");
        assert!(sent[3..].iter().all(|s| !s), "the rest held: {sent:?}");
        // One ACK when the timer fires: rtt/20 = 0.5 ms after the 4th.
        let due = t + Dur::from_us(30) + Dur::from_us(500);
        assert_eq!(r.deadline(), Some(due));
        assert!(r.on_timer(due - Dur(1)).is_none());
        let a = r.on_timer(due).expect("the compressed ACK");
        assert_eq!(a.seq, 10);
        assert_eq!(a.sacks(), &[SackBlock { start: 11, end: 21 }]);
        // Later out-of-order data for the same hole is compressed at once.
        assert!(r.on_data(due + Dur(1), &data(21))[1].is_none());
        // The retransmission fills the hole: ACKed at once.
        let a = r.on_data(due + Dur(2), &data(10))[1].expect("hole filled");
        assert_eq!(a.seq, 22);
        assert!(a.sacks().is_empty());
    }

    #[test]
    fn the_compression_delay_is_a_twentieth_of_the_rtt_at_most_1_ms() {
        for (rtt_ms, delay_us) in [(2, 100), (10, 500), (20, 1_000), (100, 1_000)] {
            let mut r = steady(Dur::from_ms(rtt_ms));
            let t = Time(500_000_000);
            for k in 0..4 {
                r.on_data(t, &data(11 + k));
            }
            assert_eq!(
                r.deadline(),
                Some(t + Dur::from_us(delay_us)),
                "rtt {rtt_ms} ms"
            );
        }
    }

    #[test]
    fn at_most_44_acks_are_compressed_into_one() {
        let mut r = steady(Dur::from_ms(100));
        let t = Time(500_000_000);
        let mut sent = 0;
        for k in 0..(3 + COMP_SACK_NR + 1) {
            sent += r.on_data(t, &data(11 + k))[1].is_some() as u32;
        }
        assert_eq!(sent, 3 + 1, "three dupacks, then one after 44 held back");
    }

    #[test]
    fn a_segment_beyond_the_first_two_sack_blocks_flushes_the_held_ack() {
        // Holes at 10 and 20: blocks 21.. (newest) and 11..20.
        let mut r = steady(Dur::from_ms(100));
        let t = Time(500_000_000);
        for q in 11..20 {
            r.on_data(t, &data(q));
        }
        for q in 21..24 {
            r.on_data(t, &data(q));
        }
        // A third hole (30), then a segment extending no block: a third one.
        let [flush, held] = r.on_data(t, &data(31));
        let flush = flush.expect("the held ACK goes before the blocks change");
        assert_eq!(
            flush.sacks(),
            &[
                SackBlock { start: 21, end: 24 },
                SackBlock { start: 11, end: 20 }
            ]
        );
        assert!(held.is_none(), "the new segment's own ACK is held back");
        assert_eq!(r.compressed, 1);
    }

    #[test]
    fn without_compression_every_out_of_order_segment_is_acked() {
        let opts = AckOptions {
            sack_compress: false,
            ..AckOptions::default()
        };
        let mut r = steady_with(Dur::from_ms(10), opts);
        let t = Time(50_000_000);
        for k in 0..10 {
            assert!(r.on_data(t, &data(11 + k))[1].is_some());
        }
    }

    #[test]
    fn a_full_sized_psh_segment_is_acked_at_once_when_asked_to() {
        let mut psh = data(10);
        psh.flags |= flags::PSH;
        let mut r = steady(Dur::from_ms(10));
        let a = r.on_data(Time(50_000_000), &psh)[1].expect("ACKed alone");
        assert_eq!(a.seq, 11);
        // Without push ACKs a lone segment waits for a second one.
        let opts = AckOptions {
            push_acks: false,
            ..AckOptions::default()
        };
        let mut r = steady_with(Dur::from_ms(10), opts);
        assert!(r.on_data(Time(50_000_000), &psh)[1].is_none());
        // Behind a hole the application cannot drain the queue: no ACK for PSH.
        let mut r = steady(Dur::from_ms(10));
        for q in [12, 13, 14, 15] {
            let mut p = data(q);
            p.flags |= flags::PSH;
            r.on_data(Time(50_000_000), &p);
        }
        assert_eq!(
            r.compressed, 1,
            "out-of-order PSH segments are compressed like others"
        );
    }

    #[test]
    fn ts_recent_comes_from_the_left_edge_not_from_out_of_order_segments() {
        // `tcp_replace_ts_recent`: only a segment at or before rcv_wup
        // updates the echoed TSval; the retransmission filling a hole does.
        let mut r = steady(Dur::from_ms(10));
        let t = Time(50_000_000);
        let seg = |q: u32, ts: u32| {
            let mut p = data(q);
            p.ts = ts;
            p
        };
        let a = r.on_data(t, &seg(10, 100))[1].or_else(|| r.on_timer(t + DELACK_TIMEOUT));
        assert_eq!(a.unwrap().ts, 100);
        // Segment 11 lost; 12 and 13 arrive later and do not change it.
        let a = r.on_data(t, &seg(12, 105))[1].unwrap();
        assert_eq!((a.seq, a.ts), (11, 100));
        let a = r.on_data(t, &seg(13, 106))[1].unwrap();
        assert_eq!(a.ts, 100);
        // The retransmission of 11, sent at 140 ms, is echoed.
        let a = r.on_data(t, &seg(11, 140))[1].unwrap();
        assert_eq!((a.seq, a.ts), (14, 140));
    }

    /// Linux's delayed-ACK engine at `CONFIG_HZ=250`, jiffies aligned with 0.
    fn linux_delack() -> AckOptions {
        AckOptions {
            delack: Some(Jiffies::new(250, Dur::ZERO)),
            ..AckOptions::default()
        }
    }

    #[test]
    fn a_lone_segment_waits_a_jiffy_timer_and_longer_after_it_fired() {
        // 60 ms after the steady state's last segment (less than the RTO).
        let mut r = steady_with(Dur::from_ms(50), linux_delack());
        let t = Time(Dur::from_ms(110).0);
        assert!(r.on_data(t, &data(10))[1].is_none());
        let due = r.deadline().unwrap();
        assert!(due.since(t) > Dur::from_ms(40) && due.since(t) <= Dur::from_ms(44));
        assert_eq!(r.on_timer(due).unwrap().seq, 11);
        // The timer had to ACK: ato doubles to 80 ms, bounded by the
        // handshake's 50 ms (13 jiffies): the next lone segment waits 52-56 ms.
        let t2 = due + Dur::from_ms(30);
        assert!(r.on_data(t2, &data(11))[1].is_none());
        let wait = r.deadline().unwrap().since(t2);
        assert!(
            wait > Dur::from_ms(52) && wait <= Dur::from_ms(56),
            "{wait:?}"
        );
        // Without the engine: 40 ms, every time.
        let mut r = steady_with(Dur::from_ms(50), AckOptions::default());
        r.on_data(t, &data(10));
        let due = r.deadline().unwrap();
        assert_eq!(due.since(t), DELACK_TIMEOUT);
        r.on_timer(due);
        r.on_data(t2, &data(11));
        assert_eq!(r.deadline().unwrap().since(t2), DELACK_TIMEOUT);
    }

    #[test]
    fn an_old_duplicate_and_a_long_gap_restart_quick_acks() {
        for (opts, quick) in [(linux_delack(), true), (AckOptions::default(), false)] {
            // An old duplicate, then a lone new segment.
            let mut r = steady_with(Dur::from_ms(10), opts);
            let t = Time(Dur::from_ms(60).0);
            assert!(r.on_data(t, &data(5))[1].is_some());
            assert_eq!(
                r.on_data(t + Dur::from_ms(1), &data(10))[1].is_some(),
                quick
            );
            // A gap longer than the receiver's RTO (10 + 200 ms).
            let mut r = steady_with(Dur::from_ms(10), opts);
            r.on_data(t, &data(10));
            r.on_timer(r.deadline().unwrap());
            let late = t + Dur::from_ms(300);
            assert_eq!(r.on_data(late, &data(11))[1].is_some(), quick);
        }
    }

    #[test]
    fn a_not_ect_segment_of_an_ecn_flow_is_acked_at_once() {
        // `__tcp_ecn_check_ce`: after ECT segments, a Not-ECT one (a
        // retransmission, model 10) enters quick-ACK mode; a flow that
        // never sent ECT is not affected.
        let ect = |q: u32| {
            let mut p = data(q);
            p.ecn = Ecn::Ect0;
            p
        };
        let t = Time(Dur::from_ms(60).0);
        for (opts, quick) in [(linux_delack(), true), (AckOptions::default(), false)] {
            let mut r = steady_with(Dur::from_ms(10), opts);
            r.on_data(t, &ect(10));
            assert!(r.on_data(t, &ect(11))[1].is_some(), "a pair");
            let lone = r.on_data(t + Dur::from_ms(1), &data(12))[1];
            assert_eq!(lone.is_some(), quick);
        }
        let mut r = steady_with(Dur::from_ms(10), linux_delack());
        assert!(r.on_data(t, &data(10))[1].is_none());
    }
}
