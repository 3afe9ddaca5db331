//! Timers, as Linux's net/ipv4/tcp_timer.c: the timer dispatch, the RTO
//! and the tail loss probe, with the arming of both (in Linux the probe's
//! scheduling and sending are in tcp_output.c, `tcp_rearm_rto` in
//! tcp_input.c).

use super::{Phase, Sender, TimerKind, TIMEOUT_MIN};
use crate::cc::CaState;
use crate::packet::{Kind, Packet};
use crate::tcp::rtt::{RTO_MAX, RTO_MIN, TIMEOUT_INIT};
use crate::tcp::scoreboard::seg;
use crate::units::{Dur, Time};

impl Sender {
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
    pub(super) fn rearm_rto(&mut self, now: Time) {
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
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
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
}
