//! The state machine: STARTUP's exits, DRAIN into PROBE_BW, and min_rtt with PROBE_RTT.

use super::{scale, AckPhase, Bbr3, Version, LOSS_EVENTS_MAX};
use crate::cc::bbr::common::{MinRttTies, BBR_UNIT};
use crate::cc::bbr::v1::Mode;
use crate::cc::{AckOutcome, CaState, Conn, RateSample};
use crate::units::{Dur, Time};

impl Bbr3 {
    /// `bbr_probe_rtt_cwnd`: half the BDP, at least min_cwnd.
    pub(super) fn probe_rtt_cwnd(&self) -> u32 {
        if self.p.probe_rtt_cwnd_gain == 0 {
            return self.p.min_cwnd;
        }
        self.p
            .min_cwnd
            .max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_check_ecn_too_high_in_startup`.
    pub(super) fn check_ecn_too_high_in_startup(&mut self, ce_ratio: u32) {
        if self.full_bw.reached
            || !self.ecn_eligible
            || self.p.full_ecn_cnt == 0
            || self.p.ecn_thresh == 0
        {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup();
        }
    }

    /// `bbr_handle_queue_too_high_in_startup`: the pipe is full, and
    /// inflight_hi starts at the BDP (v3: or this round's delivery if larger).
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw.reached = true;
        let bdp = self.inflight(self.max_bw(), BBR_UNIT);
        self.inflight_hi = match self.p.version {
            Version::V3 => bdp.max(self.inflight_latest),
            Version::V2Alpha => bdp,
        };
    }

    /// `bbr_check_loss_too_high_in_startup`: at the end of a recovery round
    /// with >= full_loss_cnt loss events and a loss rate above loss_thresh.
    pub(super) fn check_loss_too_high_in_startup(&mut self, rs: &RateSample, conn: &Conn) {
        if self.full_bw.reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < LOSS_EVENTS_MAX {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt != 0
            && self.loss_round_start
            && conn.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.is_inflight_too_high(rs.lost, rs.tx_in_flight, rs.delivered, rs.delivered_ce)
        {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_reset_full_bw`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw.full_bw = 0;
        self.full_bw.cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached`. v3: on every non-app-limited ACK a
    /// sample 25 % above full_bw restarts the count, each round start
    /// without one counts. v2alpha: v1's check of max_bw once per round.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample, sample_bw: u64) {
        match self.p.version {
            Version::V3 => {
                if self.full_bw_now || rs.is_app_limited {
                    return;
                }
                let bw_thresh = scale(self.full_bw.full_bw, self.p.full_bw_thresh);
                if sample_bw >= bw_thresh {
                    self.reset_full_bw();
                    self.full_bw.full_bw = sample_bw;
                    return;
                }
                if !self.rounds.round_start {
                    return;
                }
                self.full_bw.cnt += 1;
                self.full_bw_now = self.full_bw.cnt >= self.p.full_bw_cnt;
                self.full_bw.reached |= self.full_bw_now;
            }
            Version::V2Alpha => self.full_bw.check(
                self.rounds.round_start,
                rs.is_app_limited,
                self.max_bw(),
                self.p.full_bw_thresh,
                self.p.full_bw_cnt,
            ),
        }
    }

    /// `bbr_check_drain`: STARTUP → DRAIN once the pipe is full, DRAIN →
    /// PROBE_BW:DOWN once inflight at EDT is down to one BDP.
    pub(super) fn check_drain(&mut self, conn: &Conn, now: Time) {
        if self.mode == Mode::Startup && self.full_bw.reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(conn.in_flight, now, conn)
                <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(conn, now);
        }
    }

    /// `bbr_exit_probe_rtt`.
    fn exit_probe_rtt(&mut self, conn: &Conn, now: Time) {
        self.reset_lower_bounds();
        if self.full_bw.reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(conn, now);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    pub(super) fn check_probe_rtt_done(&mut self, conn: &Conn, now: Time) {
        if !self.probe_rtt.done(now) {
            return;
        }
        self.probe_rtt_min.stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(conn, now);
    }

    /// `bbr_update_min_rtt`: the 5 s probe_rtt_min and 10 s min_rtt
    /// filters, PROBE_RTT entry, hold and exit.
    pub(super) fn update_min_rtt(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        now: Time,
        out: &mut AckOutcome,
    ) {
        let ties = match self.p.version {
            Version::V3 => MinRttTies::Lower,
            Version::V2Alpha => MinRttTies::LowerOrEqual,
        };
        let probe_rtt_expired = self
            .probe_rtt_min
            .update(rs, now, self.p.probe_rtt_win, ties);
        let min_rtt_expired = now > self.min_rtt.stamp + self.p.min_rtt_win;
        if self.probe_rtt_min.us <= self.min_rtt.us || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min;
        }
        if self.p.probe_rtt_duration > Dur::ZERO
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt.enter();
            self.ack_phase = AckPhase::ProbeStopping;
            self.rounds.restart(conn.delivered);
        }
        if self.mode == Mode::ProbeRtt {
            // Keep low-rate samples out of the bandwidth filter.
            out.mark_app_limited = true;
            let hold_cwnd = self.probe_rtt_cwnd();
            if self.probe_rtt.on_ack(
                now,
                conn.in_flight,
                hold_cwnd,
                self.p.probe_rtt_duration,
                &mut self.rounds,
                conn.delivered,
            ) {
                self.check_probe_rtt_done(conn, now);
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{mbps, v2, v3};
    use super::super::*;
    use crate::cc::bbr::testpipe::{secs, Pipe, PipeConfig};

    /// cc-facts §6.4/§6.5 and §7 item 1: on a clean pipe both versions go
    /// STARTUP -> DRAIN -> PROBE_BW (DOWN, at once CRUISE), with their own
    /// STARTUP gains, and the bandwidth filter finds the pipe rate.
    #[test]
    fn startup_drain_and_the_pipe_rate() {
        for version in [Version::V3, Version::V2Alpha] {
            let mut pipe = Pipe::new(PipeConfig::new(100, 20));
            let mut c = match version {
                Version::V3 => v3(&pipe, 1),
                Version::V2Alpha => v2(&pipe, 1),
            };
            let startup = (c.pacing_gain, c.cwnd_gain);
            let mut seen: Vec<&'static str> = vec![c.phase()];
            pipe.run(&mut c, secs(2.0), |_, c| {
                if *seen.last().unwrap() != c.phase() {
                    seen.push(c.phase());
                }
            });
            let expect = match version {
                Version::V3 => (710, 512),
                Version::V2Alpha => (739, 739),
            };
            assert_eq!(startup, expect, "{version:?}");
            assert_eq!(
                &seen[..4],
                ["STARTUP", "DRAIN", "PROBE_BW:DOWN", "PROBE_BW:CRUISE"],
                "{version:?}"
            );
            let est = mbps(&c, c.max_bw());
            assert!((est - 100.0).abs() < 2.0, "{version:?}: max_bw {est}");
            assert_eq!(c.min_rtt_us(), 20_000);
            assert!(c.full_bw_reached());
            assert_eq!(c.ssthresh(), c.inflight(c.max_bw(), BBR_UNIT));
        }
    }

    /// cc-facts §6.9: PROBE_RTT when probe_rtt_min is 5 s old, cwnd at half
    /// the BDP, held for 200 ms plus a round, then back to PROBE_BW:CRUISE.
    #[test]
    fn probe_rtt_every_5_s_at_half_the_bdp() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut c = v3(&pipe, 3);
        let mut entries = vec![];
        let mut cwnds = vec![];
        let mut prev = c.phase();
        let mut exit_to = vec![];
        pipe.run(&mut c, secs(16.0), |v, c| {
            if c.phase() == "PROBE_RTT" {
                if prev != "PROBE_RTT" {
                    entries.push(v.now.secs_f64());
                }
                cwnds.push((c.cwnd, c.probe_rtt_cwnd()));
            } else if prev == "PROBE_RTT" {
                exit_to.push((v.now.secs_f64(), c.phase()));
            }
            prev = c.phase();
        });
        assert_eq!(entries.len(), 3, "{entries:?}");
        for w in entries.windows(2) {
            let gap = w[1] - w[0];
            assert!((5.2..5.35).contains(&gap), "{entries:?}");
        }
        let (cwnd, half) = *cwnds.last().unwrap();
        assert_eq!(half, c.bdp(c.bw(), BBR_UNIT / 2));
        assert_eq!(cwnd, half, "bdp {}", c.bdp(c.bw(), BBR_UNIT));
        for (i, &(t, p)) in exit_to.iter().enumerate() {
            assert_eq!(p, "PROBE_BW:CRUISE");
            assert!(t - entries[i] > 0.2, "200 ms + a round: {exit_to:?}");
        }
    }
}
