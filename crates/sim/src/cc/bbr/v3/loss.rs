//! The loss and ECN response: inflight too high, the lower bounds' cuts, ECN alpha.

use super::{scale, Bbr3, Phase, Version, UNSET};
use crate::cc::bbr::common::{BBR_SCALE, BBR_UNIT};
use crate::cc::bbr::v1::Mode;
use crate::cc::Conn;
use crate::units::Time;

/// `bbr_inflight_hi_from_lost_skb`: the in-flight level at which the loss
/// rate crossed `loss_thresh` (Q8), found by solving
/// (lost_prev + x) / (inflight_prev + x) = thresh for the prefix x of the
/// lost packet, rounded up; `UNSET` when the snapshot is inconsistent.
pub fn inflight_hi_from_lost(pcount: u32, tx_in_flight: u32, lost: u32, loss_thresh: u32) -> u32 {
    let inflight_prev = tx_in_flight as i64 - pcount as i64;
    let lost_prev = lost as i64 - pcount as i64;
    if inflight_prev < 0 || lost_prev < 0 || loss_thresh >= BBR_UNIT {
        return UNSET;
    }
    let budget = (inflight_prev as u64 * loss_thresh as u64 + BBR_UNIT as u64 - 1) >> BBR_SCALE;
    let prefix = if lost_prev as u64 >= budget {
        0
    } else {
        ((budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT - loss_thresh) as u64
    };
    (inflight_prev as u64 + prefix).min(UNSET as u64) as u32
}

impl Bbr3 {
    /// `bbr_adapt_lower_bounds` (v3) / `bbr2_adapt_lower_bounds`: once per
    /// loss round while not probing, cut inflight_lo by the ECN alpha and
    /// both bounds by beta on loss, never below this round's delivery.
    pub(super) fn adapt_lower_bounds(&mut self) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        // v2alpha tests eligibility here, v3 when setting ecn_in_round.
        let ecn_ok = self.is_v3() || self.ecn_eligible;
        if self.ecn_in_round && ecn_ok && self.p.ecn_factor != 0 {
            self.init_lower_bounds(false);
            let cut = BBR_UNIT - (scale(self.ecn_alpha as u64, self.p.ecn_factor) as u32);
            ecn_inflight_lo = scale(self.inflight_lo as u64, cut) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(true);
            let cut = BBR_UNIT - self.p.beta;
            self.bw_lo = self.bw_latest.max(scale(self.bw_lo, cut));
            self.inflight_lo = self
                .inflight_latest
                .max(scale(self.inflight_lo as u64, cut) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if self.is_v3() {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    /// `bbr_update_ecn_alpha` / `bbr2_update_ecn_alpha`, at round starts:
    /// eligibility, the CE-ratio EWMA, and the STARTUP ECN exit.
    pub(super) fn update_ecn_alpha(&mut self, conn: &Conn) {
        let rtt_ok = self.p.ecn_max_rtt_us == 0 || self.min_rtt.us as u64 <= self.p.ecn_max_rtt_us;
        match self.p.version {
            Version::V3 => {
                let can_use_ecn = self.p.ecn && conn.ecn_enabled && self.p.ecn_low;
                if !self.ecn_eligible && can_use_ecn && self.p.ecn_factor != 0 && rtt_ok {
                    self.ecn_eligible = true;
                }
                // Without PLB, alpha is only wanted when eligible.
                if !self.ecn_eligible {
                    return;
                }
            }
            Version::V2Alpha => {
                if self.p.ecn_factor == 0 {
                    return;
                }
            }
        }
        let delivered = conn.delivered.saturating_sub(self.alpha_last_delivered);
        let delivered_ce = conn
            .delivered_ce
            .saturating_sub(self.alpha_last_delivered_ce);
        if delivered == 0 {
            return;
        }
        if !self.is_v3() && !self.ecn_eligible && self.p.ecn && rtt_ok {
            self.ecn_eligible = true;
        }
        let ce_ratio = ((delivered_ce << BBR_SCALE) / delivered) as u32;
        let gain = self.p.ecn_alpha_gain;
        let alpha = scale(self.ecn_alpha as u64, BBR_UNIT - gain) + scale(ce_ratio as u64, gain);
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = conn.delivered;
        self.alpha_last_delivered_ce = conn.delivered_ce;
        self.check_ecn_too_high_in_startup(ce_ratio);
    }

    /// `bbr_is_inflight_too_high`: loss above loss_thresh of tx_in_flight,
    /// or (ECN-eligible) CE above ecn_thresh of delivered (v3 `>`, v2alpha `>=`).
    pub(super) fn is_inflight_too_high(
        &self,
        lost: u32,
        tx_in_flight: u32,
        delivered: i64,
        delivered_ce: i64,
    ) -> bool {
        if lost > 0 && tx_in_flight > 0 {
            let thresh = scale(tx_in_flight as u64, self.p.loss_thresh);
            if lost as u64 > thresh {
                return true;
            }
        }
        if delivered_ce > 0 && delivered > 0 && self.ecn_eligible && self.p.ecn_thresh != 0 {
            let thresh = scale(delivered as u64, self.p.ecn_thresh);
            let ce = delivered_ce as u64;
            return match self.p.version {
                Version::V3 => ce > thresh,
                Version::V2Alpha => ce >= thresh,
            };
        }
        false
    }

    /// `bbr_handle_inflight_too_high`: once per probe, cut inflight_hi to
    /// the level that was too high (at least (1 - beta) x target inflight),
    /// and stop probing.
    pub(super) fn handle_inflight_too_high(
        &mut self,
        is_app_limited: bool,
        tx_in_flight: u32,
        conn: &Conn,
        now: Time,
    ) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !is_app_limited {
            let floor = scale(self.target_inflight() as u64, BBR_UNIT - self.p.beta) as u32;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.start_bw_probe_down(conn, now);
        }
    }

    /// `bbr_note_loss`: a loss marks this round as a loss round.
    pub(super) fn note_loss(&mut self, conn: &Conn) {
        if !self.loss_in_round {
            self.loss_round_delivered = conn.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// The ssthresh hook on entering Recovery/CWR/Loss (`bbr_ssthresh`,
    /// without the undo snapshot).
    pub(super) fn on_cwnd_reduction(&mut self) {
        self.save_cwnd();
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cruising, v2, v3};
    use super::super::*;
    use crate::cc::bbr::testpipe::{Pipe, PipeConfig};
    use crate::cc::parse_params;
    use serde_json::json;

    /// `bbr_inflight_hi_from_lost_skb`: where (lost_prev + x)/(inflight_prev + x)
    /// reached loss_thresh, rounded up (cc-facts §6.6).
    #[test]
    fn crossing_point_of_the_loss_threshold() {
        // 99 before the packet, 1 lost before: budget ceil(99 x 5/256) = 2,
        // one more packet's worth: 256/251 -> 1.
        assert_eq!(inflight_hi_from_lost(1, 100, 2, 5), 100);
        // Earlier losses already crossed the budget: the packet's start.
        assert_eq!(inflight_hi_from_lost(1, 100, 3, 5), 99);
        // 400 before, none lost before: budget ceil(2000/256) = 8, 8 x 256/251 = 8.
        assert_eq!(inflight_hi_from_lost(1, 401, 1, 5), 408);
        // Inconsistent snapshots give ~0U.
        assert_eq!(inflight_hi_from_lost(1, 0, 1, 5), UNSET);
        assert_eq!(inflight_hi_from_lost(1, 10, 0, 5), UNSET);
    }

    /// `bbr_is_inflight_too_high`: loss above tx_in_flight x 5/256; CE
    /// above (v3) or at (v2alpha) half of delivered, only when ECN-eligible.
    #[test]
    fn inflight_too_high_thresholds_per_version() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        for mut c in [v3(&pipe, 1), v2(&pipe, 1)] {
            assert!(
                !c.is_inflight_too_high(1, 100, 0, 0),
                "1 <= 100 x 5/256 = 1"
            );
            assert!(c.is_inflight_too_high(2, 100, 0, 0));
            assert!(!c.is_inflight_too_high(2, 0, 0, 0));
            assert!(!c.is_inflight_too_high(0, 100, 10, 6), "not ECN-eligible");
            c.ecn_eligible = true;
            assert!(c.is_inflight_too_high(0, 100, 10, 6));
            let at_half = c.is_inflight_too_high(0, 100, 10, 5);
            assert_eq!(at_half, c.version() == Version::V2Alpha);
        }
    }

    /// v3 `bbr_adapt_lower_bounds`, applied from `bbr_update_congestion_signals`
    /// at loss-round starts only, and never while probing (cc-facts §6.7).
    #[test]
    fn lower_bounds_once_per_loss_round_and_not_while_probing() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut conn = pipe.conn();
        conn.delivered = 1000;
        let mut c = cruising(v3(&pipe, 1), &conn);
        let max_bw = c.max_bw();
        let rs = RateSample {
            prior_delivered: 990,
            delivered: 10,
            interval_us: 20_000,
            acked_sacked: 1,
            losses: 1,
            ..Default::default()
        };
        c.loss_round_delivered = 995;
        c.bw_latest = 1;
        c.inflight_latest = 10;
        // Not a loss-round start: the loss is noted, nothing is cut.
        c.update_latest_delivery_signals(&rs, &conn, 1);
        c.update_congestion_signals(&rs, &conn, 1);
        assert!(c.loss_in_round && c.bw_lo().is_none() && c.inflight_lo().is_none());
        // The loss round ends: cut by beta from max_bw and cwnd.
        let rs2 = RateSample {
            prior_delivered: 995,
            losses: 0,
            ..rs
        };
        c.update_latest_delivery_signals(&rs2, &conn, 1);
        c.update_congestion_signals(&rs2, &conn, 1);
        assert_eq!(c.inflight_lo(), Some(200 * 180 / 256));
        assert_eq!(c.bw_lo(), Some(max_bw * 180 / 256));
        assert!(!c.loss_in_round);
        assert_eq!(c.bw(), max_bw * 180 / 256);
        // Never below this round's delivery.
        c.loss_in_round = true;
        c.inflight_latest = 130;
        c.adapt_lower_bounds();
        // 140 x 180/256 = 98 < 130 delivered in the round.
        assert_eq!(c.inflight_lo(), Some(130));
        // While probing (REFILL resets, UP keeps) nothing is cut.
        c.start_bw_probe_refill(0, &conn);
        assert!(c.bw_lo().is_none() && c.inflight_lo().is_none());
        c.loss_in_round = true;
        c.adapt_lower_bounds();
        assert!(c.bw_lo().is_none() && c.inflight_lo().is_none());
    }

    /// v3 `bbr_ecn_lower_bounds`: ECN cuts only inflight_lo, by alpha x 1/3.
    #[test]
    fn ecn_cuts_inflight_lo_by_alpha() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let conn = pipe.conn();
        let mut c = cruising(v3(&pipe, 1), &conn);
        c.ecn_in_round = true;
        c.ecn_alpha = BBR_UNIT;
        c.adapt_lower_bounds();
        assert_eq!(c.inflight_lo(), Some(200 * (256 - 85) / 256));
        assert!(c.bw_lo().is_none());
    }

    /// `bbr_skb_marked_lost`: a lost packet sent while probing cuts
    /// inflight_hi to the crossing point (at least 0.7 x target inflight)
    /// and ends UP; outside probing it only marks the loss round.
    #[test]
    fn a_lost_probe_packet_cuts_inflight_hi_and_ends_up() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut conn = pipe.conn();
        conn.delivered = 5000;
        let mut c = cruising(v3(&pipe, 1), &conn);
        let lp = LostPacket {
            pcount: 1,
            tx_in_flight: 260,
            tx_lost: 10,
            has_tx_snapshot: true,
            ..Default::default()
        };
        conn.lost = 16; // 6 lost since it was sent: 6 > 260 x 5/256 = 5
        c.on_packet_lost(Time::ZERO, &lp, &conn);
        assert!(c.inflight_hi().is_none(), "CRUISE is not probing");
        assert!(c.loss_in_round && c.loss_in_cycle);
        assert_eq!(c.loss_round_delivered, 5000);
        c.start_bw_probe_refill(0, &conn);
        c.bw_probe_samples = true;
        c.start_bw_probe_up(&conn, Time::ZERO, 0);
        c.on_packet_lost(Time::ZERO, &lp, &conn);
        // 259 before, 5 lost before, budget ceil(259 x 5/256) = 6: 1 x 256/251 -> 1.
        let floor = c.target_inflight() * 180 / 256;
        assert_eq!(c.inflight_hi(), Some(260.max(floor)));
        assert_eq!(c.probe_bw_phase(), Phase::Down);
        assert!(c.prev_probe_too_high && !c.bw_probe_samples);
    }

    /// v3 `bbr_set_state`: an RTO resets the full-bw detector and, when not
    /// probing, seeds inflight_lo with max(cwnd, prior_cwnd); v2alpha uses
    /// prior_cwnd (cc-facts §7 item 10). Leaving Loss restores prior_cwnd.
    #[test]
    fn rto_seeds_inflight_lo_per_version_and_restores_cwnd() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut conn = pipe.conn();
        for version in [Version::V3, Version::V2Alpha] {
            let c = match version {
                Version::V3 => v3(&pipe, 1),
                Version::V2Alpha => v2(&pipe, 1),
            };
            let mut c = cruising(c, &conn);
            c.full_bw.full_bw = 77;
            c.full_bw.cnt = 2;
            conn.in_flight = 150;
            c.on_state_change(Time::ZERO, CaState::Open, CaState::Loss, &conn);
            assert_eq!(c.prior_cwnd, 200);
            assert_eq!(c.cwnd, 151, "tcp_enter_loss: inflight + 1");
            assert_eq!(c.full_bw.full_bw, 0);
            let (lo, cnt) = match version {
                Version::V3 => (200, 0),
                Version::V2Alpha => (200, 2),
            };
            assert_eq!((c.inflight_lo(), c.full_bw.cnt), (Some(lo), cnt));
            c.cwnd = 10;
            c.on_state_change(Time::ZERO, CaState::Loss, CaState::Open, &conn);
            assert_eq!(c.cwnd, 200);
        }
    }

    /// v3 `bbr_update_ecn_alpha`: ECN logic needs ECN negotiated, the
    /// ecn_low route flag and min_rtt <= 5 ms; v2alpha only `ecn_enable`.
    #[test]
    fn ecn_eligibility_per_version() {
        let pipe = Pipe::new(PipeConfig::new(100, 2));
        let mut conn = pipe.conn();
        conn.delivered = 100;
        conn.delivered_ce = 100;
        let mut c = v3(&pipe, 1);
        c.update_ecn_alpha(&conn);
        assert!(!c.ecn_eligible, "ECN not negotiated");
        conn.ecn_enabled = true;
        c.update_ecn_alpha(&conn);
        assert!(c.ecn_eligible);
        assert_eq!(c.ecn_alpha, BBR_UNIT);
        let cfg: Bbr3Config = parse_params(&json!({"ecn_low": false})).unwrap();
        let mut d = Bbr3::new(&cfg, &pipe.init(1));
        d.update_ecn_alpha(&conn);
        assert!(!d.ecn_eligible);
        let mut far = v3(&Pipe::new(PipeConfig::new(100, 20)), 1);
        far.update_ecn_alpha(&conn);
        assert!(!far.ecn_eligible, "min_rtt 20 ms > 5 ms");
        let mut e = v2(&pipe, 1);
        e.update_ecn_alpha(&conn);
        assert!(!e.ecn_eligible, "ecn_enable is off by default");
        let cfg: Bbr2Config = parse_params(&json!({"ecn": true})).unwrap();
        let mut e = Bbr3::new(&cfg, &pipe.init(1));
        conn.ecn_enabled = false;
        e.update_ecn_alpha(&conn);
        assert!(e.ecn_eligible, "v2alpha does not look at the handshake");
        // alpha moves 1/16 of the way to this round's CE ratio.
        conn.delivered = 200;
        conn.delivered_ce = 100;
        e.update_ecn_alpha(&conn);
        assert_eq!(e.ecn_alpha, 240);
    }
}
