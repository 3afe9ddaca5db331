//! PROBE_BW's cycle: DOWN, CRUISE, REFILL and UP, and when the next probe starts.

use super::{scale, AckPhase, Bbr3, Phase, Version, UNSET};
use crate::cc::bbr::common::BBR_UNIT;
use crate::cc::bbr::v1::Mode;
use crate::cc::{CaState, Conn, RateSample};
use crate::units::Time;

impl Bbr3 {
    /// `bbr_is_probing_bandwidth`.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, now: Time, interval_us: u64) -> bool {
        now.us() > self.cycle_mstamp.us() + interval_us
    }

    /// `bbr_pick_probe_wait`: 0 or 1 extra rounds, and 2 s + U[0, 1 s).
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(self.p.bw_probe_rand_rounds);
        self.probe_wait_us =
            self.p.bw_probe_base_us + self.rng.below(self.p.bw_probe_rand_us) as u64;
    }

    /// `bbr_set_cycle_idx`.
    pub(super) fn set_phase(&mut self, phase: Phase) {
        self.phase = phase;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_refill`: drop the lower bounds and send at bw for
    /// a round to refill the pipe.
    pub(super) fn start_bw_probe_refill(&mut self, bw_probe_up_rounds: u32, conn: &Conn) {
        self.reset_lower_bounds();
        if self.inflight_hi != UNSET {
            self.inflight_hi = self.inflight_hi.saturating_add(self.p.refill_add_inc);
        }
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.rounds.restart(conn.delivered);
        self.set_phase(Phase::Refill);
    }

    /// `bbr_start_bw_probe_up` (v3 also restarts the plateau detector at
    /// the current sample).
    pub(super) fn start_bw_probe_up(&mut self, conn: &Conn, now: Time, sample_bw: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.rounds.restart(conn.delivered);
        self.cycle_mstamp = now;
        if self.is_v3() {
            self.reset_full_bw();
            self.full_bw.full_bw = sample_bw;
        }
        self.set_phase(Phase::Up);
        self.raise_inflight_hi_slope();
    }

    /// `bbr_start_bw_probe_down`: a new cycle with a new random wait.
    pub(super) fn start_bw_probe_down(&mut self, conn: &Conn, now: Time) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_mstamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.rounds.restart(conn.delivered);
        self.set_phase(Phase::Down);
    }

    /// `bbr_start_bw_probe_cruise`.
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_phase(Phase::Cruise);
    }

    /// `bbr_is_reno_coexistence_probe_time`: probe at least every
    /// min(63, reno_gain x target inflight) rounds.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let mut rounds = self.p.bw_probe_max_rounds;
        if self.p.bw_probe_reno_gain != 0 {
            let reno = scale(self.target_inflight() as u64, self.p.bw_probe_reno_gain);
            rounds = rounds.min(reno.min(u32::MAX as u64) as u32);
        }
        self.rounds_since_probe >= rounds
    }

    /// `bbr_check_time_to_probe_bw`: ECN re-probe, the wall clock or the
    /// Reno-coexistence round count start REFILL.
    fn check_time_to_probe_bw(&mut self, conn: &Conn, now: Time) -> bool {
        if self.p.ecn_reprobe_gain != 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && conn.ca_state == CaState::Open
        {
            // growth 2^n in the first UP round is about reprobe_gain x inflight_hi.
            let x = scale(self.inflight_hi as u64, self.p.ecn_reprobe_gain);
            let n = if x == 0 { 0 } else { 63 - x.leading_zeros() };
            // bw_probe_up_rounds is a 5-bit field.
            self.start_bw_probe_refill(n & 0x1F, conn);
            return true;
        }
        if self.has_elapsed_in_phase(now, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time()
        {
            self.start_bw_probe_refill(0, conn);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: inflight below the headroom and one BDP
    /// (v2alpha without drain_to_target: or a min_rtt in DOWN).
    fn check_time_to_cruise(&self, inflight: u32, bw: u64, now: Time) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        let is_under_bdp = inflight <= self.inflight(bw, BBR_UNIT);
        if self.p.drain_to_target {
            return is_under_bdp;
        }
        is_under_bdp || self.has_elapsed_in_phase(now, self.min_rtt.us as u64)
    }

    /// `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        now: Time,
        sample_bw: u64,
    ) {
        if !self.full_bw.reached {
            return;
        }
        if self.adapt_upper_bounds(rs, conn, now) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight, now, conn);
        let bw = self.max_bw();
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(conn, now);
            }
            Phase::Refill => {
                if self.rounds.round_start {
                    // Samples from now on reflect the refilled pipe.
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(conn, now, sample_bw);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else {
                    match self.p.version {
                        Version::V3 => {
                            if conn.is_cwnd_limited && self.cwnd >= self.inflight_hi {
                                // inflight_hi, not the path, limits growth.
                                self.reset_full_bw();
                                self.full_bw.full_bw = sample_bw;
                            } else if self.full_bw_now {
                                done = true;
                            }
                        }
                        Version::V2Alpha => {
                            if self.has_elapsed_in_phase(now, self.min_rtt.us as u64)
                                && inflight >= self.inflight(bw, self.p.bw_probe_pif_gain)
                            {
                                done = true;
                            }
                        }
                    }
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(conn, now);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(conn, now) {
                    return;
                }
                if self.check_time_to_cruise(inflight, bw, now) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::v3;
    use super::super::*;
    use crate::cc::bbr::testpipe::{secs, Pipe, PipeConfig};

    /// v3 `bbr_pick_probe_wait`, `bbr_check_time_to_probe_bw`: on a 60 ms
    /// path with a BDP above 63 packets the Reno bound (63 rounds, ~3.8 s)
    /// is later than the wall clock, so REFILL starts 2-3 s after DOWN;
    /// phases come in the order DOWN, CRUISE, REFILL, UP.
    #[test]
    fn probe_bw_cycles_with_a_2_to_3_s_wait() {
        let mut pipe = Pipe::new(PipeConfig::new(20, 60));
        let mut c = v3(&pipe, 7);
        let mut changes: Vec<(f64, &'static str)> = vec![];
        pipe.run(&mut c, secs(20.0), |v, c| {
            if changes.last().map(|x| x.1) != Some(c.phase()) {
                changes.push((v.now.secs_f64(), c.phase()));
            }
        });
        let late: Vec<&(f64, &str)> = changes.iter().filter(|(t, _)| *t > 0.5).collect();
        let mut waits = vec![];
        for w in late.windows(2) {
            let next = match w[0].1 {
                "PROBE_BW:DOWN" => ["PROBE_BW:CRUISE", "PROBE_BW:REFILL"].as_slice(),
                "PROBE_BW:CRUISE" => &["PROBE_BW:REFILL"],
                "PROBE_BW:REFILL" => &["PROBE_BW:UP"],
                "PROBE_BW:UP" => &["PROBE_BW:DOWN"],
                _ => &["PROBE_BW:CRUISE"],
            };
            assert!(
                w[1].1 == "PROBE_RTT" || next.contains(&w[1].1),
                "{:?} -> {:?}",
                w[0],
                w[1]
            );
        }
        // The cycle clock starts when DOWN starts: on entering DOWN, and on
        // leaving DRAIN or PROBE_RTT (DOWN then CRUISE in the same ACK).
        let mut start = None;
        for w in changes.windows(2) {
            let ((_, from), (t, to)) = (w[0], w[1]);
            if to == "PROBE_BW:DOWN" || (matches!(from, "DRAIN" | "PROBE_RTT") && to != "PROBE_RTT")
            {
                start = Some(t);
            } else if to == "PROBE_BW:REFILL" {
                if let Some(s) = start.take() {
                    waits.push(t - s);
                }
            } else if to == "PROBE_RTT" {
                start = None;
            }
        }
        assert!(waits.len() >= 4, "{changes:?}");
        for w in &waits {
            // One ACK (0.6 ms) of slack: the check runs on ACKs.
            assert!((2.0..3.001).contains(w), "waits {waits:?}");
        }
    }
}
