//! ACK processing, as Linux's net/ipv4/tcp_input.c: the SYN-ACK
//! (`tcp_finish_connect`) and `tcp_ack` with its SACK, RTT, TLP and
//! congestion-control steps.

use super::{Phase, Sender};
use crate::cc::{CaState, CcEvent, CcInit, CongestionControl};
use crate::packet::{flags, Kind, Packet};
use crate::tcp::rate::SampleRef;
use crate::tcp::rtt::{seq_after, ts_sample_us};
use crate::tcp::scoreboard::seg;
use crate::units::Time;

impl Sender {
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

    // About 200 lines because it mirrors one Linux function, `tcp_ack`: its
    // numbered steps keep Linux's order, which splitting it would hide.
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
}
