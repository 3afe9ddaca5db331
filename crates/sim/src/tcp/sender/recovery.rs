//! Loss recovery, as Linux's net/ipv4/tcp_recovery.c (RACK) and the
//! fast-recovery part of tcp_input.c (`tcp_fastretrans_alert`).

use super::{Sender, TIMEOUT_MIN};
use crate::cc::{CaState, CongestionControl, LostPacket};
use crate::tcp::rack;
use crate::tcp::rtt::seq_after;
use crate::tcp::scoreboard::seg;
use crate::units::Time;
use std::cmp::Reverse;

impl Sender {
    /// `tcp_rack_mark_lost`.
    pub(super) fn rack_detect(&mut self, now: Time) {
        if !self.rack.take_advanced() {
            return;
        }
        self.run_rack(now);
    }

    pub(super) fn run_rack(&mut self, now: Time) {
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
    pub(super) fn mark_lost(&mut self, now: Time, q: u32) {
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

    pub(super) fn set_state(&mut self, now: Time, to: CaState) {
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
    pub(super) fn update_recovery_state(&mut self, now: Time, ece: bool) {
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
    pub(super) fn start_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.queue_cwr = self.cfg.ecn;
    }

    /// `tcp_enter_recovery`: a new reduction unless one is under way (CWR),
    /// whose high_seq and ssthresh Recovery keeps (the congestion control
    /// starts no reduction from CWR either).
    pub(super) fn enter_recovery(&mut self, now: Time) {
        if self.ca_state != CaState::Cwr {
            self.start_reduction();
        }
        self.set_state(now, CaState::Recovery);
    }
}
