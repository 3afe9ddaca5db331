//! The transmit path, as Linux's net/ipv4/tcp_output.c: the write loop,
//! TSO sizing and deferral, pacing, building and sending data segments.

use super::{Phase, Sender, TimerKind};
use crate::cc::{CaState, CcEvent, CongestionControl, TsoPolicy};
use crate::packet::{flags, Packet};
use crate::tcp::rtt::{seq_after, ts_clock};
use crate::tcp::scoreboard::{seg, Seg};
use crate::units::{Dur, Rate, Time};
use std::cmp::Reverse;

/// `GSO_MAX_SIZE`: the largest TSO super-packet, bytes.
const GSO_MAX_SIZE: u64 = 65_536;
/// sysctl `tcp_tso_rtt_log`.
const TSO_RTT_LOG: u32 = 9;
/// Default `sk_pacing_shift`: about 1 ms of data per TSO burst.
const PACING_SHIFT: u32 = 10;
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

impl Sender {
    fn segments_written(&self, now: Time) -> u32 {
        self.total_segs
            .unwrap_or(u32::MAX)
            .min(self.app.segments_written(now, self.start, self.cfg.mss))
    }

    /// Segments the application has written and TCP has not yet sent.
    pub(super) fn new_data_ready(&self, now: Time) -> u32 {
        let written = self.segments_written(now);
        written.saturating_sub(self.snd_nxt).min(self.send_window())
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
    pub(super) fn tso_segs(&self) -> u32 {
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
    pub(super) fn transmit(&mut self, now: Time, out: &mut Vec<Packet>) {
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

    pub(super) fn send_new(&mut self, now: Time, n: u32, out: &mut Vec<Packet>) {
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

    pub(super) fn retransmit(&mut self, now: Time, q: u32, out: &mut Vec<Packet>) {
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
