//! TCP Prague, the L4S congestion control, as the L4S team's
//! net/ipv4/tcp_prague.c (L4STeam/linux, version 0.7) in its window mode:
//! a fractional window (`frac_cwnd`, 2^20 per packet) grown by Reno's
//! additive increase, scaled for RTT independence below a 25 ms target
//! (`prague_ai_ack_increase`: srtt^2 / target^2 per RTT), cut on each CWR
//! episode by alpha/2, alpha being the EWMA (g = 1/16) of the fraction of
//! CE-marked packets per round (`prague_update_alpha`); halved on loss. The
//! real cwnd steps at most one packet per ACK toward the fractional one,
//! and a step down sets ssthresh (`prague_update_cwnd`). It sends ECT(1)
//! and reads AccECN's count of CE-marked packets (here `delivered_ce`,
//! which the receiver's per-packet echo gives, as AccECN's counters do).
//! Pacing at 100% of cwnd/srtt (200% below half ssthresh) in packets of
//! the MTU (`tcp_mss_to_mtu`: 1500 bytes for a 1448-byte MSS, so the payload
//! goes 3.6% faster than cwnd/srtt), bursts of at most 1/4096 s
//! (`prague_tso_segs`). In alpha mode 0 (the default) alpha starts at 0 and
//! the first CE mark halves the window instead (`prague_update_cwnd`).
//!
//! Left out: the rate mode `prague_cwnd_mode` switches to when the window
//! falls to 4 MTUs (6000 bytes), and the MSS shrinking of v0.7 for such
//! windows; undo.

use super::classic::cwnd_limited;
use super::{
    AckOutcome, CaState, CcInit, CcParams, CcState, CongestionControl, Conn, RateSample, TsoPolicy,
};
use crate::packet::IP_TCP_TS_HEADER;
use crate::units::{div128, Dur, Rate, Time};
use serde::{Deserialize, Serialize};

/// `CWND_UNIT`: one packet of `frac_cwnd`.
const CWND_UNIT: u32 = 20;
/// `PRAGUE_ALPHA_BITS`: alpha 1.0 = 2^24.
const ALPHA_BITS: u32 = 24;
/// `PRAGUE_SHIFT_G`: EWMA gain 1/16.
const SHIFT_G: u32 = 4;
/// `MIN_CWND_RTT`.
const MIN_CWND: u32 = 2;
/// `MINIMUM_RATE`, bytes/s.
const MINIMUM_RATE: u64 = 12_500;
/// `MAX_SCALED_RTT`: above it no RTT scaling.
const MAX_SCALED_RTT: Dur = Dur::from_ms(100);
/// `prague_burst_shift`: a burst lasts at most 2^-12 s.
const BURST_SHIFT: u32 = 12;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PragueConfig {
    /// `prague_rtt_target`: below it growth is scaled for RTT independence.
    #[serde(with = "crate::units::dur_text")]
    pub rtt_target: Dur,
    /// `prague_rtt_transition`: rounds after slow start before the scaling.
    pub rtt_transition: u32,
    /// `prague_alpha_mode`: false (0) starts alpha at 0, so the first CE
    /// mark halves the window; true starts it at 1.
    pub alpha_init_one: bool,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            rtt_target: Dur::from_ms(25),
            rtt_transition: 4,
            alpha_init_one: false,
        }
    }
}

impl CcParams for PragueConfig {
    fn validate(&self) -> Result<(), String> {
        if self.rtt_target < Dur::from_us(100) || self.rtt_target > Dur::from_secs(1) {
            return Err(format!(
                "rtt_target = {} is out of range: allowed 100us to 1s",
                crate::units::format_duration(self.rtt_target)
            ));
        }
        if self.rtt_transition > 1_000_000 {
            return Err("rtt_transition: allowed 0 to 1000000 rounds".into());
        }
        Ok(())
    }
}

pub struct Prague {
    cfg: PragueConfig,
    /// `tcp_mss_to_mtu`: the MSS plus the IP and TCP headers with
    /// timestamps, the packet size Prague's pacing rate counts.
    mtu: u32,
    cwnd: u32,
    ssthresh: u32,
    /// cwnd << 20.
    frac_cwnd: u64,
    /// EWMA of the CE fraction, << (24 + 4).
    alpha_up: u64,
    /// Per-packet AI, 2^20 = one packet per window of ACKs.
    ai_ack_increase: u64,
    round: u32,
    next_seq: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// `delivered_ce` at the previous ACK (this ACK's ECE delta).
    last_delivered_ce: u64,
    alpha_stamp: Time,
    cwr_stamp: Time,
    saw_ce: bool,
    in_loss: bool,
    pacing: Rate,
    max_burst: u32,
    state: CaState,
}

impl Prague {
    /// `prague_init`.
    pub fn new(cfg: &PragueConfig, init: &CcInit) -> Self {
        let mut p = Prague {
            cfg: cfg.clone(),
            mtu: init.mss + IP_TCP_TS_HEADER,
            cwnd: init.init_cwnd,
            ssthresh: u32::MAX,
            frac_cwnd: (init.init_cwnd as u64) << CWND_UNIT,
            alpha_up: if cfg.alpha_init_one {
                1u64 << (ALPHA_BITS + SHIFT_G)
            } else {
                0
            },
            ai_ack_increase: 1 << CWND_UNIT,
            round: 0,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            last_delivered_ce: 0,
            alpha_stamp: init.now,
            cwr_stamp: init.now,
            // `prague_init`: `!!tp->delivered_ce`, whatever the alpha mode.
            saw_ce: false,
            in_loss: false,
            pacing: Rate::INF,
            max_burst: 1,
            state: CaState::Open,
        };
        if let Some(srtt) = init.srtt {
            p.update_pacing(srtt, 0);
        }
        p
    }

    fn alpha(&self) -> u64 {
        self.alpha_up >> SHIFT_G
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `prague_is_rtt_indep`.
    fn rtt_indep(&self) -> bool {
        !self.in_slow_start() && self.round >= self.cfg.rtt_transition
    }

    /// `prague_rate_scaled_ai_ack_increase`: srtt^2 / target^2 of Reno's
    /// increase once RTT-independent, Reno's otherwise.
    fn new_ai(&self, srtt: Option<Dur>) -> u64 {
        let unit = 1u64 << CWND_UNIT;
        match srtt {
            Some(s)
                if self.rtt_indep()
                    && s.0 > 0
                    && s <= MAX_SCALED_RTT
                    && s < self.cfg.rtt_target =>
            {
                let (s, t) = (s.0 as u128, self.cfg.rtt_target.0 as u128);
                ((unit as u128 * s * s + t * t / 2) / (t * t)) as u64
            }
            _ => unit,
        }
    }

    /// `prague_new_round`.
    fn new_round(&mut self, conn: &Conn) {
        self.next_seq = conn.snd_nxt;
        self.old_delivered = conn.delivered;
        self.old_delivered_ce = conn.delivered_ce;
        if !self.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.ai_ack_increase = self.new_ai(conn.srtt);
    }

    /// `prague_update_alpha`, at the end of a round (and, once
    /// RTT-independent, at most every rtt_target).
    fn update_alpha(&mut self, now: Time, conn: &Conn) {
        let round_over = conn.snd_una >= self.next_seq;
        if !round_over || (self.rtt_indep() && now.since(self.alpha_stamp) < self.cfg.rtt_target) {
            return;
        }
        if self.saw_ce {
            let delivered = conn.delivered.saturating_sub(self.old_delivered);
            let ce = conn.delivered_ce.saturating_sub(self.old_delivered_ce);
            let frac = (ce << ALPHA_BITS) / delivered.max(1);
            let up = self.alpha_up - (self.alpha_up >> SHIFT_G) + frac;
            self.alpha_up = up.min(1u64 << (ALPHA_BITS + SHIFT_G));
            self.alpha_stamp = now;
        }
        self.new_round(conn);
    }

    /// Step the real cwnd one packet toward the fractional one; a step down
    /// sets ssthresh (ends slow start).
    fn sync_cwnd(&mut self) {
        let target = (self.frac_cwnd.div_ceil(1 << CWND_UNIT) as u32).max(MIN_CWND);
        if target > self.cwnd {
            self.cwnd += 1;
        } else if target < self.cwnd {
            self.cwnd -= 1;
            self.ssthresh = self.cwnd;
        }
    }

    /// `prague_update_pacing_rate` (window mode): 100% of cwnd/srtt, 200%
    /// below half ssthresh; bursts of 2^-12 s.
    fn update_pacing(&mut self, srtt: Dur, in_flight: u32) {
        let pkts = ((self.frac_cwnd >> CWND_UNIT) as u32).max(in_flight).max(1) as u128;
        let mut rate = div128(
            self.mtu as u128 * pkts * 1_000_000_000,
            srtt.0.max(1) as u128,
        ) as u64;
        rate = rate.max(MINIMUM_RATE);
        if self.cwnd < self.ssthresh / 2 {
            rate = rate.saturating_mul(2);
        }
        self.pacing = Rate::from_bytes_per_sec(rate.min(u64::MAX / 8));
        self.max_burst = ((rate / self.mtu as u64) >> BURST_SHIFT).max(1) as u32;
    }
}

impl CongestionControl for Prague {
    /// `prague_cong_control`: `prague_update_cwnd`, then `prague_update_alpha`
    /// and the pacing rate.
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        let ece_delta = conn.delivered_ce.saturating_sub(self.last_delivered_ce);
        self.last_delivered_ce = conn.delivered_ce;
        if ece_delta > 0 {
            // `prague_update_cwnd`, alpha mode 0: the first CE mark halves
            // the window (alpha starts at 0, so that CWR cuts nothing).
            if !self.saw_ce && !self.cfg.alpha_init_one {
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
        }
        // Only packets that were not CE-marked grow the window.
        let mut acked = (rs.acked_sacked as u64).saturating_sub(ece_delta);
        if acked > 0 && !self.in_loss && cwnd_limited(self.cwnd, self.ssthresh, conn) {
            if self.in_slow_start() {
                // `tcp_slow_start` on the real window, the rest for AI.
                let cwnd = (self.cwnd as u64 + acked).min(self.ssthresh as u64) as u32;
                acked -= (cwnd - self.cwnd) as u64;
                self.cwnd = cwnd;
                self.frac_cwnd = (cwnd as u64) << CWND_UNIT;
            }
            if acked > 0 {
                // `DIV64_U64_ROUND_CLOSEST`.
                let f = self.frac_cwnd.max(1) as u128;
                let inc = div128(
                    (((acked * self.ai_ack_increase) as u128) << CWND_UNIT) + f / 2,
                    f,
                );
                let inc = inc as u64;
                self.frac_cwnd += inc.max(acked);
            }
        }
        self.sync_cwnd();
        self.update_alpha(now, conn);
        if let Some(srtt) = conn.srtt {
            self.update_pacing(srtt, conn.in_flight);
        }
        AckOutcome::default()
    }

    fn on_state_change(&mut self, now: Time, from: CaState, to: CaState, conn: &Conn) {
        match to {
            // `prague_enter_cwr`: cut by alpha/2, at most every rtt_target
            // once RTT-independent.
            CaState::Cwr
                if from < CaState::Cwr
                    && !(self.rtt_indep() && now.since(self.cwr_stamp) < self.cfg.rtt_target) =>
            {
                let a = self.alpha();
                let cut = ((a as u128 * self.frac_cwnd as u128 + (1u128 << ALPHA_BITS))
                    >> (ALPHA_BITS + 1)) as u64;
                self.frac_cwnd = self
                    .frac_cwnd
                    .saturating_sub(cut)
                    .max((MIN_CWND as u64) << CWND_UNIT);
                self.cwr_stamp = now;
            }
            // `prague_enter_loss`: halve, no growth until Open again.
            CaState::Recovery if from < CaState::Recovery => {
                self.frac_cwnd -= self.frac_cwnd >> 1;
                self.in_loss = true;
            }
            CaState::Loss => {
                if from != CaState::Loss {
                    self.frac_cwnd -= self.frac_cwnd >> 1;
                    self.in_loss = true;
                }
                // `tcp_enter_loss`.
                self.cwnd = conn.in_flight + 1;
            }
            // `prague_ca_open`.
            CaState::Open => self.in_loss = false,
            _ => {}
        }
        self.state = to;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }

    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    fn pacing_rate(&self) -> Rate {
        self.pacing
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// `prague_tso_segs`.
    fn tso_policy(&self) -> TsoPolicy {
        TsoPolicy::Fixed(self.max_burst)
    }

    fn phase(&self) -> &'static str {
        match self.state {
            CaState::Recovery => "RECOVERY",
            CaState::Loss => "LOSS",
            CaState::Cwr => "CWR",
            _ if self.in_slow_start() => "SLOW_START",
            _ => "CONG_AVOID",
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num(
            "ssthresh_pkts",
            if self.ssthresh == u32::MAX {
                f64::NAN
            } else {
                self.ssthresh as f64
            },
        );
        out.num(
            "prague_alpha",
            self.alpha() as f64 / (1u64 << ALPHA_BITS) as f64,
        );
        out.num(
            "prague_frac_cwnd_pkts",
            self.frac_cwnd as f64 / (1u64 << CWND_UNIT) as f64,
        );
        out.num("prague_round", self.round as f64);
        out.num(
            "prague_ai_per_rtt",
            self.ai_ack_increase as f64 / (1u64 << CWND_UNIT) as f64,
        );
    }
}

/// The registry's entry for `cc = "prague"` (`cc::Algorithm`).
impl crate::cc::Algorithm for PragueConfig {
    const NAME: &'static str = "prague";
    const REFERENCE: &'static str = "L4STeam/linux net/ipv4/tcp_prague.c (v0.7, window mode); draft-briscoe-iccrg-prague-congestion-control";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Prague(Prague::new(self, init))
    }
    fn ecn(&self) -> crate::cc::EcnUse {
        crate::cc::EcnUse {
            ect: crate::packet::Ecn::Ect1,
            ..crate::cc::EcnUse::NEEDED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, init};

    #[test]
    fn alpha_is_the_ewma_of_the_ce_fraction_per_round_and_the_cut_is_half_of_it() {
        let mut p = Prague::new(
            &PragueConfig::default(),
            &init(Time::ZERO, Some(Dur::from_ms(50))),
        );
        p.ssthresh = 100; // congestion avoidance
        p.cwnd = 100;
        p.frac_cwnd = 100 << CWND_UNIT;
        let mut c = conn(100);
        c.srtt = Some(Dur::from_ms(50)); // above the target: no RTT scaling
                                         // Rounds of 100 packets, 20% of them CE-marked; (15/16)^100 of the
                                         // initial 0 is left.
        let mut now = Time::ZERO;
        for r in 0..100u64 {
            now += Dur::from_ms(50);
            c.delivered = (r + 1) * 100;
            c.delivered_ce = (r + 1) * 20;
            c.snd_una = (r as u32 + 1) * 100;
            c.snd_nxt = c.snd_una + 100;
            p.on_ack(now, &ack(0, 50_000), &c);
        }
        let a = p.alpha() as f64 / (1u64 << ALPHA_BITS) as f64;
        assert!((a - 0.2).abs() < 0.01, "alpha {a}, the CE fraction is 0.2");
        let before = p.frac_cwnd;
        p.on_state_change(now, CaState::Open, CaState::Cwr, &c);
        let cut = 1.0 - p.frac_cwnd as f64 / before as f64;
        assert!((cut - a / 2.0).abs() < 1e-3, "cut {cut} for alpha {a}");
    }

    /// Alpha mode 0: alpha starts at 0, so the first CE mark halves the
    /// fractional window itself; later marks only feed alpha. Mode 1
    /// starts alpha at 1 and leaves the window to the CWR cut.
    #[test]
    fn the_first_ce_mark_halves_the_window_in_alpha_mode_0() {
        for (one, after_first) in [(false, 50u64), (true, 100)] {
            let cfg = PragueConfig {
                alpha_init_one: one,
                ..PragueConfig::default()
            };
            let mut p = Prague::new(&cfg, &init(Time::ZERO, Some(Dur::from_ms(50))));
            p.ssthresh = 100;
            p.cwnd = 100;
            p.frac_cwnd = 100 << CWND_UNIT;
            let mut c = conn(100);
            c.srtt = Some(Dur::from_ms(50));
            c.delivered = 2;
            c.delivered_ce = 1;
            p.on_ack(Time::ZERO + Dur::from_ms(1), &ack(0, 50_000), &c);
            let pkts = p.frac_cwnd >> CWND_UNIT;
            assert_eq!(pkts, after_first, "alpha mode {}", one as u8);
            // A second mark does not halve again.
            c.delivered = 4;
            c.delivered_ce = 2;
            p.on_ack(Time::ZERO + Dur::from_ms(2), &ack(0, 50_000), &c);
            assert_eq!(p.frac_cwnd >> CWND_UNIT, pkts);
        }
    }

    #[test]
    fn below_the_target_rtt_the_increase_is_scaled_by_rtt_squared() {
        let mut p = Prague::new(&PragueConfig::default(), &init(Time::ZERO, None));
        p.ssthresh = 10;
        p.cwnd = 20;
        p.round = 10;
        // 12.5 ms of a 25 ms target: a quarter of a packet per RTT.
        assert_eq!(p.new_ai(Some(Dur::from_us(12_500))), 1 << (CWND_UNIT - 2));
        assert_eq!(p.new_ai(Some(Dur::from_ms(40))), 1 << CWND_UNIT);
        p.round = 1; // still within rtt_transition rounds after slow start
        assert_eq!(p.new_ai(Some(Dur::from_us(12_500))), 1 << CWND_UNIT);
    }
}
