//! The model: the bandwidth filters, latest-delivery signals, inflight bounds and ACK aggregation.

use super::{AckPhase, Bbr3, Phase, BW_UNSET, PROBE_UP_ROUNDS_MAX, UNSET};
use crate::cc::bbr::v1::Mode;
use crate::cc::{AckOutcome, Conn, RateSample};
use crate::units::Time;

impl Bbr3 {
    /// `bbr_ack_aggregation_cwnd`: also in STARTUP (v2alpha only with
    /// `extra_acked_in_startup`), capped at bw x 100 ms.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || (!self.full_bw.reached && !self.p.extra_acked_in_startup)
        {
            return 0;
        }
        self.ack_agg
            .cwnd_allowance(self.bw(), self.p.extra_acked_gain)
    }

    /// `bbr_init_lower_bounds`.
    pub(super) fn init_lower_bounds(&mut self, init_bw: bool) {
        if init_bw && self.bw_lo == BW_UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = self.cwnd;
        }
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = BW_UNSET;
        self.inflight_lo = UNSET;
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// v3 `bbr_update_latest_delivery_signals`: the per-round max rate and
    /// volume of delivery, and the loss-round marker.
    pub(super) fn update_latest_delivery_signals(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        sample_bw: u64,
    ) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = conn.delivered;
            self.loss_round_start = true;
        }
    }

    /// v3 `bbr_advance_latest_delivery_signals`: start the next round's
    /// filters, unless the ACK is for a TLP retransmission.
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, sample_bw: u64) {
        if self.loss_round_start && !rs.is_acking_tlp_retrans_seq {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }

    /// `bbr_update_congestion_signals` (v3) / `bbr2_update_congestion_signals`
    /// (which also keeps the latest-delivery filters and the loss round).
    pub(super) fn update_congestion_signals(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        sample_bw: u64,
    ) {
        if !self.is_v3() {
            self.loss_round_start = false;
        }
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || sample_bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.is_v3() {
            self.bw_latest = self.bw_latest.max(sample_bw);
            self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
            if rs.prior_delivered < self.loss_round_delivered {
                return;
            }
            self.loss_round_delivered = conn.delivered;
            self.loss_round_start = true;
        }
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds();
        self.loss_in_round = false;
        self.ecn_in_round = false;
        if !self.is_v3() {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }

    /// `bbr_raise_inflight_hi_slope`: each UP round doubles the growth.
    pub(super) fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(31);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(PROBE_UP_ROUNDS_MAX);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`: while cwnd-limited at inflight_hi,
    /// one more packet of inflight_hi per bw_probe_up_cnt packets ACKed.
    fn probe_inflight_hi_upward(&mut self, rs: &RateSample, conn: &Conn) {
        if !conn.is_cwnd_limited || self.cwnd < self.inflight_hi {
            if !self.is_v3() {
                self.bw_probe_up_acks = 0;
            }
            return;
        }
        self.bw_probe_up_acks = self.bw_probe_up_acks.saturating_add(rs.acked_sacked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            if self.is_v3() {
                self.try_fast_path = false;
            }
        }
        if self.rounds.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// `bbr_advance_max_bw_filter`: forget the older cycle's bw_hi.
    fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_adapt_upper_bounds`: track the probe's feedback, cut
    /// inflight_hi when the probe went too high, raise it when a higher
    /// level proved safe. Returns whether it decided a transition.
    pub(super) fn adapt_upper_bounds(&mut self, rs: &RateSample, conn: &Conn, now: Time) -> bool {
        let round_start = self.rounds.round_start;
        if self.ack_phase == AckPhase::ProbeStarting && round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(0, conn);
                return true;
            }
        }
        if self.is_inflight_too_high(rs.lost, rs.tx_in_flight, rs.delivered, rs.delivered_ce) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(rs.is_app_limited, rs.tx_in_flight, conn, now);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
                self.probe_inflight_hi_upward(rs, conn);
            }
        }
        false
    }

    /// `bbr_update_model` / `bbr2_update_model`.
    pub(super) fn update_model(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        now: Time,
        sample_bw: u64,
        out: &mut AckOutcome,
    ) {
        self.update_congestion_signals(rs, conn, sample_bw);
        self.update_ack_aggregation(rs, conn);
        self.check_loss_too_high_in_startup(rs, conn);
        self.check_full_bw_reached(rs, sample_bw);
        self.check_drain(conn, now);
        self.update_cycle_phase(rs, conn, now, sample_bw);
        self.update_min_rtt(rs, conn, now, out);
    }

    /// `bbr_update_ack_aggregation`: 1-round slots until the pipe is full.
    fn update_ack_aggregation(&mut self, rs: &RateSample, conn: &Conn) {
        if self.p.extra_acked_gain == 0 {
            return;
        }
        let win = if self.p.extra_acked_in_startup && !self.full_bw.reached {
            1
        } else {
            self.p.extra_acked_win_rtts
        };
        let bw = self.bw();
        self.ack_agg.update(
            rs,
            self.rounds.round_start,
            win,
            bw,
            conn.delivered_mstamp,
            self.cwnd,
        );
    }

    /// `bbr_run_fast_path`: on app-limited ACKs that cannot raise the
    /// estimate, with no loss or ECN in the round, run only the state
    /// checks; skip everything if nothing changed. Returns true to skip the
    /// control update too; clears `update_model` to skip only the model.
    pub(super) fn run_fast_path(
        &mut self,
        update_model: &mut bool,
        rs: &RateSample,
        conn: &Conn,
        now: Time,
        sample_bw: u64,
        out: &mut AckOutcome,
    ) -> bool {
        if self.p.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt_us = self.min_rtt.us;
            self.check_drain(conn, now);
            self.update_cycle_phase(rs, conn, now, sample_bw);
            self.update_min_rtt(rs, conn, now, out);
            if self.mode == prev_mode && self.min_rtt.us == prev_min_rtt_us && self.try_fast_path {
                return true;
            }
            *update_model = false;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cruising, v3};
    use super::super::*;
    use crate::cc::bbr::testpipe::{Pipe, PipeConfig};
    use crate::cc::parse_params;
    use serde_json::json;

    /// `bbr_raise_inflight_hi_slope`, `bbr_probe_inflight_hi_upward`: in UP,
    /// inflight_hi grows 1, 2, 4, ... packets per cwnd of ACKs per round,
    /// only while cwnd-limited at inflight_hi.
    #[test]
    fn inflight_hi_grows_with_a_doubling_slope() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let conn = pipe.conn();
        let mut c = cruising(v3(&pipe, 1), &conn);
        c.inflight_hi = 200;
        c.start_bw_probe_refill(0, &conn);
        c.start_bw_probe_up(&conn, Time::ZERO, 0);
        assert_eq!(c.bw_probe_up_cnt, 200, "growth 1 per cwnd");
        let ack = RateSample {
            acked_sacked: 100,
            ..Default::default()
        };
        let mut gained = vec![];
        for _ in 0..3 {
            let before = c.inflight_hi;
            c.rounds.round_start = false;
            for _ in 0..2 {
                c.probe_inflight_hi_upward(&ack, &conn);
                // cwnd follows inflight_hi (the model bound in UP).
                c.cwnd = c.inflight_hi;
            }
            gained.push(c.inflight_hi - before);
            c.rounds.round_start = true;
            c.probe_inflight_hi_upward(&RateSample::default(), &conn);
        }
        assert_eq!(gained, [1, 2, 4]);
        // Not cwnd-limited: no growth.
        let mut idle = conn;
        idle.is_cwnd_limited = false;
        let before = c.inflight_hi;
        c.probe_inflight_hi_upward(&ack, &idle);
        assert_eq!(c.inflight_hi, before);
    }

    /// `bbr_run_fast_path`: an app-limited ACK below max_bw with nothing
    /// changing skips the model and the control; with fast_path off the
    /// model runs (and takes the sample into bw_hi[1]).
    #[test]
    fn fast_path_skips_quiet_app_limited_acks() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut conn = pipe.conn();
        conn.delivered = 1000;
        let rs = RateSample {
            prior_delivered: 999,
            delivered: 1,
            interval_us: 20_000,
            rtt_us: 20_000,
            acked_sacked: 1,
            is_app_limited: true,
            ..Default::default()
        };
        for fast in [true, false] {
            let cfg: Bbr3Config = parse_params(&json!({ "fast_path": fast })).unwrap();
            let mut c = cruising(Bbr3::new(&cfg, &pipe.init(1)), &conn);
            c.try_fast_path = true;
            c.rounds.next_rtt_delivered = 5000;
            c.loss_round_delivered = 5000;
            c.bw_hi[1] = 1;
            c.cwnd = 123;
            c.on_ack(Time(1_000_000), &rs, &conn);
            // Slow path: cwnd + acked (below the target, no bound).
            assert_eq!(c.cwnd, if fast { 123 } else { 124 }, "fast path {fast}");
        }
    }
}
