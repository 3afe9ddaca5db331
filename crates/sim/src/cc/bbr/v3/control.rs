//! The control outputs: BDP with the offload budget, TSO goal, pacing rate, cwnd, gains.

use super::{scale, Bbr3, Phase, Version, TCP_MIN_TSO_SEGS, TSO_RTT_SHIFT, UNSET};
use crate::cc::bbr::common::{
    bdp, min_tso_segs, packets_in_net_at_edt, saved_cwnd, tso_segs_goal, Quantization, BBR_UNIT,
    GSO_LEGACY_MAX_SIZE, PACING_SHIFT,
};
use crate::cc::bbr::v1::Mode;
use crate::cc::Conn;
use crate::units::Time;

impl Bbr3 {
    /// `bbr_tso_segs_generic` with the legacy 64 KB GSO size: about 1 ms at
    /// the pacing rate plus 64 KB >> (min_rtt / 512 us); at least 2 segments
    /// (v3: sysctl tcp_min_tso_segs) or 1 below 1.2 Mbit/s (v2alpha
    /// `bbr_min_tso_segs`).
    pub(super) fn tso_segs_goal(&self) -> u32 {
        let pacing = self.pacing.bytes_per_sec;
        let mut bytes = pacing >> PACING_SHIFT;
        let r = self.min_rtt.us >> TSO_RTT_SHIFT;
        if r < 32 {
            bytes += GSO_LEGACY_MAX_SIZE >> r;
        }
        let min_segs = match self.p.version {
            Version::V3 => TCP_MIN_TSO_SEGS,
            Version::V2Alpha => min_tso_segs(pacing),
        };
        tso_segs_goal(bytes, self.mss, min_segs)
    }

    /// `bbr_bdp`: the initial cwnd before any RTT sample.
    pub(super) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        bdp(bw, self.min_rtt.us, gain, self.init_cwnd)
    }

    /// `bbr_quantization_budget` (v2alpha `cwnd_tso_budget` = 1, "floor").
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let goal = if self.p.offload_budget {
            self.tso_segs_goal()
        } else {
            0
        };
        let probing_up = self.mode == Mode::ProbeBw && self.phase == Phase::Up;
        Quantization::V2 {
            min_cwnd: self.p.min_cwnd,
        }
        .apply(cwnd, goal, probing_up)
    }

    /// `bbr_inflight`: BDP x gain with the quantization budget.
    pub(super) fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`.
    pub(super) fn packets_in_net_at_edt(&self, inflight_now: u32, now: Time, conn: &Conn) -> u32 {
        let burst = if self.pacing_gain > BBR_UNIT {
            self.tso_segs_goal()
        } else {
            0
        };
        packets_in_net_at_edt(inflight_now, now, conn.next_departure, self.bw(), burst)
    }

    /// `bbr_target_inflight`: the BDP, unless congestion cut cwnd.
    pub(super) fn target_inflight(&self) -> u32 {
        self.inflight(self.bw(), BBR_UNIT).min(self.cwnd)
    }

    /// `bbr_save_cwnd`.
    pub(super) fn save_cwnd(&mut self) {
        self.prior_cwnd = saved_cwnd(
            self.prior_cwnd,
            self.cwnd,
            self.prev_ca_state,
            self.mode == Mode::ProbeRtt,
        );
    }

    pub(super) fn set_pacing_rate(&mut self, bw: u64, gain: u32, conn: &Conn) {
        self.pacing
            .set(bw, gain, self.full_bw.reached, self.cwnd, conn.srtt);
    }

    /// `bbr_set_cwnd`: no packet conservation in v2/v3.
    pub(super) fn set_cwnd(&mut self, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let target = self.bdp(bw, gain) + self.ack_aggregation_cwnd();
            let target = self.quantization_budget(target);
            self.try_fast_path = false;
            if self.full_bw.reached {
                cwnd = cwnd.saturating_add(acked);
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.saturating_add(acked);
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.p.min_cwnd);
        }
        self.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_inflight_with_headroom`.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = (scale(self.inflight_hi as u64, self.p.headroom) as u32).max(1);
        (self.inflight_hi as i64 - headroom as i64).max(self.p.min_cwnd as i64) as u32
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    pub(super) fn bound_cwnd_for_inflight_model(&mut self) {
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.phase == Phase::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(self.p.min_cwnd);
        self.cwnd = self.cwnd.min(cap);
    }

    /// `bbr_update_gains`.
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            Mode::Drain => (self.p.drain_gain, self.p.startup_cwnd_gain),
            Mode::ProbeBw => {
                let cwnd = if self.phase == Phase::Up {
                    self.p.probe_up_cwnd_gain
                } else {
                    self.p.cwnd_gain
                };
                (self.p.probe_gains[self.phase as usize], cwnd)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cruising, v2, v3};
    use super::super::*;
    use crate::cc::bbr::testpipe::{Pipe, PipeConfig};
    use crate::cc::parse_params;
    use serde_json::json;

    /// `bbr_quantization_budget` with and without the offload budget, and
    /// `bbr_ack_aggregation_cwnd` with extra_acked off; the TSO goal per
    /// version (v3 minimum 2 segments, v2alpha 1 below 1.2 Mbit/s).
    #[test]
    fn offload_budget_extra_acked_and_tso_goal() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let conn = pipe.conn();
        let c = cruising(v3(&pipe, 1), &conn);
        let goal = c.tso_segs_goal();
        assert!(goal >= 2);
        assert_eq!(c.quantization_budget(1), 3 * goal);
        let cfg: Bbr3Config = parse_params(&json!({"offload_budget": false})).unwrap();
        let mut d = cruising(Bbr3::new(&cfg, &pipe.init(1)), &conn);
        assert_eq!(d.quantization_budget(1), 4);
        d.set_phase(Phase::Up);
        assert_eq!(d.quantization_budget(1), 6, "+2 in UP");
        let mut e = cruising(v3(&pipe, 1), &conn);
        e.ack_agg.update(
            &RateSample {
                delivered: 50,
                interval_us: 1000,
                acked_sacked: 50,
                ..Default::default()
            },
            false,
            5,
            e.bw(),
            Time(1_000_000),
            200,
        );
        assert!(e.ack_aggregation_cwnd() > 0);
        let cfg: Bbr3Config = parse_params(&json!({"extra_acked": false})).unwrap();
        let f = Bbr3::new(&cfg, &pipe.init(1));
        assert_eq!(f.ack_aggregation_cwnd(), 0);
        let mut slow = v2(&pipe, 1);
        slow.pacing.bytes_per_sec = 100_000;
        slow.min_rtt.us = 100_000;
        assert_eq!(slow.tso_segs_goal(), 1);
        let mut slow3 = v3(&pipe, 1);
        slow3.pacing.bytes_per_sec = 100_000;
        slow3.min_rtt.us = 100_000;
        assert_eq!(slow3.tso_segs_goal(), 2);
    }
}
