//! The parts of BBR that every version shares: Linux's fixed-point units,
//! the bandwidth sample, pacing-rate and BDP arithmetic with Linux's
//! rounding, the TSO burst goal, the inflight-at-EDT estimate, packet-timed
//! round counting and the ACK-aggregation ("extra_acked") estimator.
//!
//! Everything here is written from Linux 6.1 `net/ipv4/tcp_bbr.c` (v1) and
//! checked against google/bbr v3 `net/ipv4/tcp_bbr.c` (cc-facts §6, §8):
//! where the versions differ, the difference is a parameter (rounding of the
//! bandwidth sample, the quantization rule, the extra_acked window length),
//! not a copy. Bandwidth is kept in Linux's unit, packets per microsecond
//! scaled by [`BW_UNIT`]; gains are Q8 ([`BBR_UNIT`] = 1.0); times are
//! [`Time`], with microsecond deltas taken the way Linux does on its
//! microsecond stamps (`tcp_stamp_us_delta`).

use crate::cc::{CaState, RateSample};
use crate::units::{format_duration, Dur, Rate, Time, NS_PER_US};

/// Gains are Q8 fixed point: 256 = 1.0 (`BBR_SCALE`, `BBR_UNIT`).
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Bandwidth is packets per microsecond << 24 (`BW_SCALE`, `BW_UNIT`):
/// one unit is about 715 bit/s at 1500-byte packets.
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;

/// `min_rtt_us` before any RTT sample (Linux stores `~0U`).
pub const MIN_RTT_UNSET: u32 = u32::MAX;

/// `sk_pacing_shift` default (include/net/sock.h): TSQ and TSO budget about
/// 1 ms of data at the pacing rate.
pub const PACING_SHIFT: u32 = 10;

/// `GSO_LEGACY_MAX_SIZE` (include/linux/netdevice.h).
pub const GSO_LEGACY_MAX_SIZE: u64 = 65_536;

/// `MAX_TCP_HEADER` = L1_CACHE_ALIGN(128 + MAX_HEADER) on an x86-64
/// distribution kernel (MAX_HEADER = LL_MAX_HEADER 128 + 48 for tunnels =
/// 176; 304 aligned to 64-byte lines = 320).
pub const MAX_TCP_HEADER: u64 = 320;

/// Largest TSO/GSO burst BBR budgets, in bytes (`GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER`).
pub const GSO_MAX_BYTES: u64 = GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER;

/// v1/v2alpha `bbr_min_tso_rate`: below 1.2 Mbit/s, bursts of one segment.
pub const MIN_TSO_RATE_BPS: u64 = 1_200_000;

/// `bbr_ack_epoch_acked_reset_thresh`: restart the aggregation epoch after 2^20 packets.
pub const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;

/// `bbr_extra_acked_max_us`: the aggregation allowance is at most bw x 100 ms.
pub const EXTRA_ACKED_MAX_US: u64 = 100_000;

/// A gain written as a real number, in Q8 truncated towards zero, as the
/// kernel's integer constant expressions do (0.91 becomes 232/256).
pub fn gain_q8(g: f64) -> u32 {
    (g * BBR_UNIT as f64) as u32
}

/// A Q8 gain as a real number, for reporting.
pub fn gain_f64(q8: u32) -> f64 {
    q8 as f64 / BBR_UNIT as f64
}

/// `tcp_stamp_us_delta`: `later - earlier` in microseconds of Linux's
/// microsecond clock, zero if negative.
pub fn us_delta(later: Time, earlier: Time) -> u64 {
    later.us().saturating_sub(earlier.us())
}

/// How a bandwidth sample is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// v1 and v2alpha (`bbr_update_bw`: `div64_long`).
    Down,
    /// v3 (`bbr_calculate_bw_sample`: `DIV_ROUND_UP_ULL`).
    Up,
}

/// Bandwidth sample of one ACK: delivered x BW_UNIT / interval_us, or
/// `None` when the rate sample is invalid (`rs->delivered < 0 ||
/// rs->interval_us <= 0`, tcp_bbr.c `bbr_update_bw`).
pub fn bw_sample(rs: &RateSample, rounding: Rounding) -> Option<u64> {
    if !rs.is_valid() {
        return None;
    }
    let num = rs.delivered as u128 * BW_UNIT as u128;
    let den = rs.interval_us as u128;
    let bw = match rounding {
        Rounding::Down => crate::units::div128(num, den),
        Rounding::Up => crate::units::div128_ceil(num, den),
    };
    Some(bw.min(u64::MAX as u128) as u64)
}

/// `bbr_rate_bytes_per_sec`: bytes per second for `bw` with a Q8 `gain`,
/// paced `margin_percent` below it (v1 and v3 pace 1 % below; v3 reports
/// bw with margin 0). Computed in 128 bits; Linux's 64-bit order of
/// operations gives the same result wherever it does not overflow.
pub fn rate_bytes_per_sec(bw: u64, gain: u32, mss: u32, margin_percent: u32) -> u64 {
    let mut r = bw as u128 * mss as u128;
    r *= gain as u128;
    r >>= BBR_SCALE;
    r *= (1_000_000 / 100 * (100 - margin_percent.min(100) as u64)) as u128;
    r >>= BW_SCALE;
    r.min(u64::MAX as u128) as u64
}

/// The payload rate of a bandwidth estimate (bw x mss, no margin), for reporting.
pub fn bw_to_rate(bw: u64, mss: u32) -> Rate {
    let bits = (bw as u128 * mss as u128 * 8 * 1_000_000) >> BW_SCALE;
    Rate(bits.min(u64::MAX as u128 - 1) as u64)
}

/// `bbr_bdp`: ceil(bw x min_rtt x gain) in packets; before any RTT sample
/// (`min_rtt_us == MIN_RTT_UNSET`) the `no_rtt` fallback (v1: TCP_INIT_CWND,
/// v3: the initial cwnd).
pub fn bdp(bw: u64, min_rtt_us: u32, gain: u32, no_rtt: u32) -> u32 {
    if min_rtt_us == MIN_RTT_UNSET {
        return no_rtt;
    }
    let w = bw as u128 * min_rtt_us as u128;
    let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
    bdp.min(u32::MAX as u128) as u32
}

/// `bbr_quantization_budget`: room for full-sized TSO bursts on top of a BDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantization {
    /// v1: + 3 TSO goals, rounded up to even, + 2 while probing up.
    V1,
    /// v2alpha/v3: at least 3 TSO goals and `min_cwnd`, + 2 while probing up.
    V2 { min_cwnd: u32 },
}

impl Quantization {
    /// `cwnd` plus the budget; `probing_up` is PROBE_BW in its 1.25 phase.
    pub fn apply(self, cwnd: u32, tso_segs_goal: u32, probing_up: bool) -> u32 {
        let mut c = match self {
            Quantization::V1 => {
                let c = cwnd.saturating_add(3 * tso_segs_goal);
                c.saturating_add(1) & !1
            }
            Quantization::V2 { min_cwnd } => cwnd.max(3 * tso_segs_goal).max(min_cwnd),
        };
        if probing_up {
            c = c.saturating_add(2);
        }
        c
    }
}

/// v1/v2alpha `bbr_min_tso_segs`: one-segment bursts below 1.2 Mbit/s, else two.
pub fn min_tso_segs(pacing_bytes_per_sec: u64) -> u32 {
    if pacing_bytes_per_sec < MIN_TSO_RATE_BPS >> 3 {
        1
    } else {
        2
    }
}

/// The segment count of a TSO burst of `burst_bytes` (`bbr_tso_segs_goal`
/// in v1, `bbr_tso_segs_generic` in v3): capped at [`GSO_MAX_BYTES`], at
/// least `min_segs`. v1 takes `pacing_rate >> PACING_SHIFT` as the burst
/// and caps the result at 127; v3 adds a min_rtt bonus to the burst.
pub fn tso_segs_goal(burst_bytes: u64, mss: u32, min_segs: u32) -> u32 {
    let bytes = burst_bytes.min(GSO_MAX_BYTES);
    ((bytes / mss.max(1) as u64) as u32).max(min_segs)
}

/// `bbr_packets_in_net_at_edt`: of `inflight_now`, what is still in the
/// network when the next packet leaves at its earliest departure time,
/// assuming delivery at `bw` until then. `edt_burst_segs` is the TSO goal
/// when the pacing gain is above 1 (the burst leaving at EDT counts), else 0.
pub fn packets_in_net_at_edt(
    inflight_now: u32,
    now: Time,
    next_departure: Time,
    bw: u64,
    edt_burst_segs: u32,
) -> u32 {
    let edt = next_departure.max(now);
    let interval_us = (edt.ns() - now.ns()) / NS_PER_US;
    let delivered = ((bw as u128 * interval_us as u128) >> BW_SCALE) as u64;
    let at_edt = inflight_now as u64 + edt_burst_segs as u64;
    at_edt.saturating_sub(delivered) as u32
}

/// Check that `v` of parameter `name` lies in `lo..=hi` (a NaN is out of
/// range). Not Linux: the module parameters of every BBR version are checked
/// with it and [`check_dur`].
pub(crate) fn check_range<T: PartialOrd + std::fmt::Display>(
    name: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!("{name} must be in {lo}..={hi}, got {v}"))
    }
}

/// Check that duration `v` of parameter `name` lies in `lo..=hi`.
pub(crate) fn check_dur(name: &str, v: Dur, lo: Dur, hi: Dur) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "{name} must be in {}..={}, got {}",
            format_duration(lo),
            format_duration(hi),
            format_duration(v)
        ))
    }
}

/// Packet-timed round trips (`next_rtt_delivered`, `round_start`, `rtt_cnt`):
/// a round ends when an ACK's sample was sent after the previous round ended.
#[derive(Clone, Debug)]
pub struct RoundCounter {
    /// `tp->delivered` at which the current round ends.
    pub next_rtt_delivered: u64,
    /// Rounds elapsed (`rtt_cnt`), the time base of the v1 bandwidth filter.
    pub count: u64,
    /// This ACK started a new round.
    pub round_start: bool,
}

impl RoundCounter {
    /// `bbr_init`: the first round ends once what is sent from now is delivered.
    pub fn new(delivered: u64) -> Self {
        RoundCounter {
            next_rtt_delivered: delivered,
            count: 0,
            round_start: false,
        }
    }

    /// Once per ACK (v1 `bbr_update_bw`, v3 `bbr_update_round_start`):
    /// `valid` is the version's sample-validity test. Returns `round_start`.
    pub fn on_ack(&mut self, valid: bool, prior_delivered: u64, delivered: u64) -> bool {
        self.round_start = false;
        if valid && prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = delivered;
            self.count += 1;
            self.round_start = true;
        }
        self.round_start
    }

    /// Start a round now (`next_rtt_delivered = tp->delivered`), as recovery
    /// and PROBE_RTT do; the round ends one flight later.
    pub fn restart(&mut self, delivered: u64) {
        self.next_rtt_delivered = delivered;
    }
}

/// Which RTT samples count as a new minimum in the windowed min-RTT filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinRttTies {
    /// v1 `min_rtt_us`, v3 `probe_rtt_min_us`: only a lower sample
    /// (`rs->rtt_us < min`) restarts the window before it expires.
    Lower,
    /// v2alpha `probe_rtt_min_us`: an equal sample does too (`<=`).
    LowerOrEqual,
}

/// A windowed min-RTT filter as `bbr_update_min_rtt` keeps it: the value
/// (`min_rtt_us` in v1, `probe_rtt_min_us` and `min_rtt_us` in v2/v3) and
/// the time it was taken (`min_rtt_stamp`, `probe_rtt_min_stamp`).
#[derive(Clone, Copy, Debug)]
pub struct MinRttFilter {
    /// Microseconds, [`MIN_RTT_UNSET`] before any sample.
    pub us: u32,
    pub stamp: Time,
}

impl MinRttFilter {
    /// `bbr_init`: Linux reads `tcp_min_rtt()`; at init the only RTT sample
    /// is the handshake's, which is also srtt.
    pub fn from_handshake(srtt: Option<Dur>, now: Time) -> Self {
        let us = srtt.map_or(MIN_RTT_UNSET, |s| {
            s.us().min(MIN_RTT_UNSET as u64 - 1) as u32
        });
        MinRttFilter { us, stamp: now }
    }

    /// The filter step of `bbr_update_min_rtt`: take a sample that is a
    /// new minimum (per `ties`), or, once the window `win` has expired, any
    /// sample not delayed by a delayed ACK. Returns whether the window had
    /// expired (v1 `filter_expired`, v3 `probe_rtt_expired`), which is also
    /// what sends the flow into PROBE_RTT.
    pub fn update(&mut self, rs: &RateSample, now: Time, win: Dur, ties: MinRttTies) -> bool {
        let expired = now > self.stamp + win;
        if rs.rtt_us >= 0 {
            let rtt = rs.rtt_us as u64;
            let lower = match ties {
                MinRttTies::Lower => rtt < self.us as u64,
                MinRttTies::LowerOrEqual => rtt <= self.us as u64,
            };
            if lower || (expired && !rs.is_ack_delayed) {
                self.us = rtt.min(MIN_RTT_UNSET as u64 - 1) as u32;
                self.stamp = now;
            }
        }
        expired
    }

    /// The minimum in milliseconds for reporting, NaN before any sample.
    pub fn ms(&self) -> f64 {
        if self.us == MIN_RTT_UNSET {
            f64::NAN
        } else {
            self.us as f64 / 1000.0
        }
    }
}

/// The PROBE_RTT hold of `bbr_update_min_rtt` (`probe_rtt_done_stamp`,
/// `probe_rtt_round_done`) and the test of `bbr_check_probe_rtt_done`:
/// once inflight is down to the PROBE_RTT cwnd, hold for `duration` and at
/// least one round. What happens when the hold is done is the version's.
#[derive(Clone, Debug, Default)]
pub struct ProbeRttHold {
    /// `probe_rtt_done_stamp`; `None` is Linux's 0.
    pub done_stamp: Option<Time>,
    /// `probe_rtt_round_done`.
    pub round_done: bool,
}

impl ProbeRttHold {
    /// Entering PROBE_RTT: the hold starts only once inflight is low
    /// (`probe_rtt_done_stamp = 0`).
    pub fn enter(&mut self) {
        self.done_stamp = None;
    }

    /// One ACK in PROBE_RTT. Before the hold, start it when `in_flight` is
    /// at most `hold_cwnd` (and restart the round, as Linux sets
    /// `next_rtt_delivered`); during it, note a round start. Returns true
    /// when the caller should run `bbr_check_probe_rtt_done`.
    pub fn on_ack(
        &mut self,
        now: Time,
        in_flight: u32,
        hold_cwnd: u32,
        duration: Dur,
        rounds: &mut RoundCounter,
        delivered: u64,
    ) -> bool {
        if self.done_stamp.is_none() && in_flight <= hold_cwnd {
            self.done_stamp = Some(now + duration);
            self.round_done = false;
            rounds.restart(delivered);
            false
        } else if self.done_stamp.is_some() {
            if rounds.round_start {
                self.round_done = true;
            }
            self.round_done
        } else {
            false
        }
    }

    /// `bbr_check_probe_rtt_done`'s condition: the hold has a stamp and it
    /// has passed.
    pub fn done(&self, now: Time) -> bool {
        self.done_stamp.is_some_and(|done| now > done)
    }
}

/// `bbr_save_cwnd` (the same in v1 and v3): the cwnd to remember as
/// `prior_cwnd`. Outside recovery and PROBE_RTT the current cwnd; else
/// recovery or PROBE_RTT already cut cwnd, so keep the larger.
pub fn saved_cwnd(prior_cwnd: u32, cwnd: u32, prev_ca_state: CaState, in_probe_rtt: bool) -> u32 {
    if prev_ca_state < CaState::Recovery && !in_probe_rtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}

/// The ACK-aggregation estimator (`bbr_update_ack_aggregation`,
/// `bbr_extra_acked`, `bbr_ack_aggregation_cwnd`): how many packets were
/// ACKed beyond what `bw` explains since the epoch started, max over two
/// slots of `win_rtts` rounds each (an approximate window of k..2k rounds).
#[derive(Clone, Debug)]
pub struct AckAggregation {
    /// `ack_epoch_mstamp`.
    epoch_start: Time,
    /// `ack_epoch_acked` (a 20-bit field in Linux).
    epoch_acked: u32,
    /// `extra_acked[2]`, packets.
    extra_acked: [u32; 2],
    /// `extra_acked_win_rtts` (a 5-bit field: saturates at 31).
    win_rtts: u32,
    /// `extra_acked_win_idx`.
    win_idx: usize,
}

impl AckAggregation {
    pub fn new(now: Time) -> Self {
        AckAggregation {
            epoch_start: now,
            epoch_acked: 0,
            extra_acked: [0; 2],
            win_rtts: 0,
            win_idx: 0,
        }
    }

    /// Restart the epoch (`CA_EVENT_TX_START` after idle).
    pub fn reset_epoch(&mut self, now: Time) {
        self.epoch_start = now;
        self.epoch_acked = 0;
    }

    /// Feed one ACK. `win_rtts` is the slot length in rounds (v1: 5; v3: 1
    /// before full bandwidth, 5 after); `bw` the version's bandwidth
    /// estimate; `cwnd` the current cwnd, which caps one epoch's excess.
    pub fn update(
        &mut self,
        rs: &RateSample,
        round_start: bool,
        win_rtts: u32,
        bw: u64,
        delivered_mstamp: Time,
        cwnd: u32,
    ) {
        if rs.acked_sacked == 0 || !rs.is_valid() {
            return;
        }
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1F);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch_us = us_delta(delivered_mstamp, self.epoch_start);
        let mut expected = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        // A slow ACK stream or a very old epoch starts a new epoch.
        if self.epoch_acked as u64 <= expected
            || self.epoch_acked.saturating_add(rs.acked_sacked) >= ACK_EPOCH_ACKED_RESET
        {
            self.epoch_acked = 0;
            self.epoch_start = delivered_mstamp;
            expected = 0;
        }
        self.epoch_acked = self
            .epoch_acked
            .saturating_add(rs.acked_sacked)
            .min(ACK_EPOCH_ACKED_RESET - 1);
        let extra = (self.epoch_acked as u64 - expected).min(cwnd as u64) as u32;
        if extra > self.extra_acked[self.win_idx] {
            self.extra_acked[self.win_idx] = extra;
        }
    }

    /// `bbr_extra_acked`: the max over both slots, packets.
    pub fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_ack_aggregation_cwnd` without the version's on/off conditions:
    /// gain x extra_acked, capped at bw x 100 ms.
    pub fn cwnd_allowance(&self, bw: u64, gain: u32) -> u32 {
        let cap = (bw as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128) as u64;
        let aggr = (gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr.min(cap) as u32
    }
}

/// Full-pipe detection as v1 and v2alpha do it (`bbr_check_full_bw_reached`):
/// once per non-app-limited round, the bandwidth must grow by `thresh`
/// (1.25) or the round counts; `cnt` such rounds in a row mean the pipe is full.
#[derive(Clone, Debug, Default)]
pub struct FullBwDetector {
    /// `full_bw`: the bandwidth at the last significant growth.
    pub full_bw: u64,
    /// `full_bw_cnt`: rounds since then without significant growth.
    pub cnt: u32,
    /// `full_bw_reached`.
    pub reached: bool,
}

impl FullBwDetector {
    /// v1 and v2alpha `bbr_check_full_bw_reached` in full: only on a round
    /// start with a non-app-limited sample, and not once `reached`, run
    /// [`Self::on_round`] with `max_bw`.
    pub fn check(
        &mut self,
        round_start: bool,
        is_app_limited: bool,
        max_bw: u64,
        thresh: u32,
        rounds_needed: u32,
    ) {
        if self.reached || !round_start || is_app_limited {
            return;
        }
        self.on_round(max_bw, thresh, rounds_needed);
    }

    /// One round's check with the current `max_bw`; `thresh` is Q8.
    /// The caller skips app-limited rounds and rounds after `reached`.
    pub fn on_round(&mut self, max_bw: u64, thresh: u32, rounds_needed: u32) {
        let bw_thresh = ((self.full_bw as u128 * thresh as u128) >> BBR_SCALE) as u64;
        if max_bw >= bw_thresh {
            self.full_bw = max_bw;
            self.cnt = 0;
            return;
        }
        self.cnt += 1;
        self.reached = self.cnt >= rounds_needed;
    }
}

/// `sk_pacing_rate` as BBR sets it (`bbr_set_pacing_rate`,
/// `bbr_init_pacing_rate_from_rtt`), kept in Linux's bytes per second.
#[derive(Clone, Debug)]
pub struct PacingRate {
    /// `sk_pacing_rate`, bytes per second.
    pub bytes_per_sec: u64,
    /// `has_seen_rtt`: the rate has been set from a real RTT.
    pub has_seen_rtt: bool,
    mss: u32,
    /// The gain applied to cwnd/RTT for the initial rate (v1 high_gain).
    startup_gain: u32,
    margin_percent: u32,
}

impl PacingRate {
    /// The rate at init: `startup_gain` x `cwnd` / srtt (1 ms without an RTT).
    pub fn new(cwnd: u32, srtt: Option<Dur>, mss: u32, startup_gain: u32, margin: u32) -> Self {
        let mut p = PacingRate {
            bytes_per_sec: 0,
            has_seen_rtt: false,
            mss,
            startup_gain,
            margin_percent: margin,
        };
        p.init_from_rtt(cwnd, srtt);
        p
    }

    /// `bbr_init_pacing_rate_from_rtt`.
    pub fn init_from_rtt(&mut self, cwnd: u32, srtt: Option<Dur>) {
        let rtt_us = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.us().max(1)
            }
            None => 1_000,
        };
        let bw = cwnd as u64 * BW_UNIT / rtt_us;
        self.bytes_per_sec = self.target(bw, self.startup_gain);
    }

    /// `bbr_bw_to_pacing_rate` (without `sk_max_pacing_rate`, which the
    /// TCP core applies).
    pub fn target(&self, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(bw, gain, self.mss, self.margin_percent)
    }

    /// `bbr_set_pacing_rate`: take the rate for `bw` x `gain`, but only
    /// upwards until the pipe has been filled. `cwnd` and `srtt` serve the
    /// late initialization when the first RTT sample arrives.
    pub fn set(&mut self, bw: u64, gain: u32, full_bw_reached: bool, cwnd: u32, srtt: Option<Dur>) {
        let rate = self.target(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_from_rtt(cwnd, srtt);
        }
        if full_bw_reached || rate > self.bytes_per_sec {
            self.bytes_per_sec = rate;
        }
    }

    /// The rate in the simulator's unit.
    pub fn rate(&self) -> Rate {
        Rate::from_bytes_per_sec(self.bytes_per_sec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 Mbit/s of 1448-byte packets in BW units (pkts/us << 24).
    fn bw_100m() -> u64 {
        // 100e6 / (1448 * 8) pkts/s = 8632.6 pkts/s = 0.0086326 pkts/us.
        100_000_000u64 * BW_UNIT / (1448 * 8 * 1_000_000)
    }

    /// `BBR_UNIT * 2885 / 1000 + 1` = 739 and `BBR_UNIT * 1000 / 2885` = 88
    /// (tcp_bbr.c constants); truncation as in C (0.91 -> 232, cc-facts §6.2).
    #[test]
    fn gains_truncate_to_q8_like_the_kernel() {
        assert_eq!(256 * 2885 / 1000 + 1, 739);
        assert_eq!(gain_q8(739.0 / 256.0), 739);
        assert_eq!(gain_q8(88.0 / 256.0), 88);
        assert_eq!(gain_q8(1.25), 320);
        assert_eq!(gain_q8(0.91), 232);
        assert_eq!(gain_f64(320), 1.25);
    }

    /// tcp_bbr.c `bbr_update_bw` truncates, v3 `bbr_calculate_bw_sample`
    /// rounds up; invalid samples give nothing.
    #[test]
    fn bw_sample_rounds_per_version_and_rejects_invalid() {
        let rs = RateSample {
            delivered: 3,
            interval_us: 7,
            ..Default::default()
        };
        assert_eq!(bw_sample(&rs, Rounding::Down), Some(3 * BW_UNIT / 7));
        assert_eq!(bw_sample(&rs, Rounding::Up), Some(3 * BW_UNIT / 7 + 1));
        let bad = RateSample {
            delivered: 3,
            interval_us: -1,
            ..Default::default()
        };
        assert_eq!(bw_sample(&bad, Rounding::Down), None);
    }

    /// `bbr_rate_bytes_per_sec`: bw x mss x gain x (1 - 1 %) in bytes/s.
    #[test]
    fn pacing_rate_has_the_one_percent_margin() {
        let bw = bw_100m();
        let r = rate_bytes_per_sec(bw, BBR_UNIT, 1448, 1);
        // 12.5 MB/s x 0.99 = 12.375 MB/s, less the truncation of bw.
        assert!((12_370_000..=12_375_000).contains(&r), "{r}");
        let r0 = rate_bytes_per_sec(bw, BBR_UNIT, 1448, 0);
        assert!((12_495_000..=12_500_000).contains(&r0), "{r0}");
        assert_eq!(
            rate_bytes_per_sec(bw, 2 * BBR_UNIT, 1448, 1),
            (((bw as u128 * 1448 * 512) >> 8) as u64 * 990_000) >> 24
        );
        let rate = bw_to_rate(bw, 1448);
        assert!((99_990_000..=100_000_000).contains(&rate.bps()), "{rate}");
    }

    /// `bbr_bdp` rounds up and falls back before any RTT sample.
    #[test]
    fn bdp_rounds_up_and_falls_back_without_rtt() {
        let bw = bw_100m();
        // 8632.6 pkts/s x 20 ms = 172.65 -> 173.
        assert_eq!(bdp(bw, 20_000, BBR_UNIT, 10), 173);
        assert_eq!(bdp(bw, 20_000, 2 * BBR_UNIT, 10), 346);
        assert_eq!(bdp(bw, MIN_RTT_UNSET, BBR_UNIT, 10), 10);
        // Exactly one packet stays one packet.
        assert_eq!(bdp(BW_UNIT / 1000, 1000, BBR_UNIT, 10), 1);
    }

    /// v1 and v3 `bbr_quantization_budget`.
    #[test]
    fn quantization_budget_per_version() {
        assert_eq!(Quantization::V1.apply(173, 8, false), 198);
        assert_eq!(Quantization::V1.apply(172, 8, false), 196);
        assert_eq!(Quantization::V1.apply(173, 8, true), 200);
        let v2 = Quantization::V2 { min_cwnd: 4 };
        assert_eq!(v2.apply(173, 8, false), 173);
        assert_eq!(v2.apply(10, 8, true), 26);
        assert_eq!(v2.apply(1, 1, false), 4);
    }

    /// v1 `bbr_min_tso_segs` and `bbr_tso_segs_goal`.
    #[test]
    fn tso_goal_follows_the_pacing_rate() {
        assert_eq!(min_tso_segs(149_999), 1);
        assert_eq!(min_tso_segs(150_000), 2);
        // 12.5 MB/s >> 10 = 12207 bytes = 8 segments of 1448.
        assert_eq!(tso_segs_goal(12_500_000 >> PACING_SHIFT, 1448, 2), 8);
        assert_eq!(tso_segs_goal(100, 1448, 2), 2);
        // 10 GB/s: the 64 KB GSO limit binds.
        assert_eq!(tso_segs_goal(10_000_000_000 >> PACING_SHIFT, 1448, 2), 45);
    }

    /// `bbr_packets_in_net_at_edt`: deduct what bw delivers until EDT.
    #[test]
    fn inflight_at_edt_deducts_delivery_until_departure() {
        let bw = BW_UNIT / 64; // 1/64 packet per us
        let now = Time(1_000_000);
        assert_eq!(packets_in_net_at_edt(100, now, now, bw, 0), 100);
        assert_eq!(packets_in_net_at_edt(100, now, Time(0), bw, 8), 108);
        // 2 ms x 1/64 per us = 31.25, truncated.
        assert_eq!(packets_in_net_at_edt(100, now, Time(3_000_000), bw, 0), 69);
        assert_eq!(packets_in_net_at_edt(10, now, Time(3_000_000), bw, 0), 0);
    }

    /// `bbr_update_bw`: a round ends when a packet sent after the previous
    /// round's end is delivered.
    #[test]
    fn rounds_end_when_the_marked_flight_is_delivered() {
        let mut r = RoundCounter::new(0);
        assert!(r.on_ack(true, 0, 1));
        assert_eq!(r.next_rtt_delivered, 1);
        assert!(!r.on_ack(true, 0, 2));
        assert!(r.on_ack(true, 1, 3));
        assert!(
            !r.on_ack(false, 5, 4),
            "invalid samples never start a round"
        );
        assert_eq!(r.count, 2);
        r.restart(10);
        assert!(!r.on_ack(true, 9, 11));
        assert!(r.on_ack(true, 10, 12));
    }

    fn ack(n: u32) -> RateSample {
        RateSample {
            delivered: n as i64,
            interval_us: 1000,
            acked_sacked: n,
            ..Default::default()
        }
    }

    /// `bbr_update_ack_aggregation`: excess over bw x epoch, capped by cwnd,
    /// remembered for two slots of `win_rtts` rounds.
    #[test]
    fn ack_aggregation_measures_excess_and_ages_out() {
        let bw = BW_UNIT / 1000; // 0.99998 packet per ms after truncation
        let mut a = AckAggregation::new(Time::ZERO);
        // First ACK after 5 ms: 0 acked <= 5 expected -> new epoch at 5 ms.
        a.update(&ack(10), false, 5, bw, Time(5_000_000), 100);
        assert_eq!(a.extra_acked(), 10);
        // 20 more packets 2 ms later: 30 acked vs 1.99996 -> 1 expected.
        a.update(&ack(20), false, 5, bw, Time(7_000_000), 100);
        assert_eq!(a.extra_acked(), 29);
        // An ACK stream slower than bw restarts the epoch.
        let mut b = a.clone();
        b.update(&ack(1), false, 5, bw, Time(40_000_000), 100);
        assert_eq!(b.epoch_acked, 1);
        assert_eq!(b.epoch_start, Time(40_000_000));
        // The cwnd caps the excess.
        a.update(&ack(50), false, 5, bw, Time(7_000_000), 30);
        assert_eq!(a.extra_acked(), 30);
        // Allowance: gain 1.0, but at most bw x 100 ms (99.99 -> 99 packets).
        assert_eq!(a.cwnd_allowance(bw, BBR_UNIT), 30);
        assert_eq!(a.cwnd_allowance(bw, BBR_UNIT / 2), 15);
        assert_eq!(a.cwnd_allowance(bw / 10, BBR_UNIT), 9);
        // After 2 x 5 round starts both slots were cleared: what is left
        // is the excess of the new epoch (10 back-to-back ACKs).
        for i in 0..10 {
            a.update(&ack(1), true, 5, bw, Time(1_000_000_000 + i), 100);
        }
        assert_eq!(a.extra_acked(), 10);
    }

    /// `bbr_check_full_bw_reached` (v1): growth of 1.25x resets the count.
    #[test]
    fn full_bw_detector_counts_rounds_without_growth() {
        let mut d = FullBwDetector::default();
        d.on_round(100, 320, 3);
        assert_eq!((d.full_bw, d.cnt), (100, 0));
        d.on_round(124, 320, 3);
        d.on_round(124, 320, 3);
        assert_eq!(d.cnt, 2);
        assert!(!d.reached);
        d.on_round(125, 320, 3);
        assert_eq!((d.full_bw, d.cnt), (125, 0));
        for _ in 0..3 {
            d.on_round(150, 320, 3);
        }
        assert!(d.reached);
    }

    /// `bbr_update_min_rtt`: a lower sample always wins, an equal one only
    /// with v2alpha's `<=`; an expired window takes any undelayed sample.
    #[test]
    fn min_rtt_filter_ties_and_expiry() {
        let rtt = |us: i64, delayed: bool| RateSample {
            rtt_us: us,
            is_ack_delayed: delayed,
            ..Default::default()
        };
        let win = Dur::from_secs(10);
        let mut f = MinRttFilter::from_handshake(Some(Dur::from_ms(20)), Time::ZERO);
        assert!(!f.update(&rtt(20_000, false), Time(5), win, MinRttTies::Lower));
        assert_eq!(f.stamp, Time::ZERO);
        assert!(!f.update(&rtt(20_000, false), Time(5), win, MinRttTies::LowerOrEqual));
        assert_eq!(f.stamp, Time(5));
        let late = Time(11 * 1_000_000_000);
        assert!(f.update(&rtt(30_000, true), late, win, MinRttTies::Lower));
        assert_eq!(f.us, 20_000, "a delayed ACK does not refresh the window");
        assert!(f.update(&rtt(30_000, false), late, win, MinRttTies::Lower));
        assert_eq!((f.us, f.stamp), (30_000, late));
        assert!(MinRttFilter::from_handshake(None, Time::ZERO).ms().is_nan());
    }

    /// `bbr_update_min_rtt`'s PROBE_RTT hold: 200 ms and a round from the
    /// ACK at which inflight was low enough.
    #[test]
    fn probe_rtt_hold_needs_the_duration_and_a_round() {
        let d = Dur::from_ms(200);
        let mut rounds = RoundCounter::new(0);
        let mut h = ProbeRttHold::default();
        assert!(!h.on_ack(Time::ZERO, 10, 4, d, &mut rounds, 100));
        assert!(h.done_stamp.is_none(), "inflight is still too high");
        assert!(!h.on_ack(Time::ZERO, 4, 4, d, &mut rounds, 100));
        assert_eq!(rounds.next_rtt_delivered, 100);
        let later = Time::ZERO + Dur::from_ms(300);
        assert!(!h.on_ack(later, 4, 4, d, &mut rounds, 101));
        rounds.on_ack(true, 100, 104);
        assert!(h.on_ack(later, 4, 4, d, &mut rounds, 104));
        assert!(h.done(later));
        assert!(!h.done(Time::ZERO + d), "the stamp itself is not past");
        h.enter();
        assert!(!h.done(later));
    }

    /// `bbr_init_pacing_rate_from_rtt` and `bbr_set_pacing_rate`.
    #[test]
    fn pacing_starts_from_srtt_and_only_rises_before_full_bw() {
        let mut p = PacingRate::new(10, Some(Dur::from_ms(20)), 1448, 739, 1);
        let bw0 = 10 * BW_UNIT / 20_000;
        assert!(p.has_seen_rtt);
        assert_eq!(p.bytes_per_sec, rate_bytes_per_sec(bw0, 739, 1448, 1));
        let before = p.bytes_per_sec;
        p.set(bw0 / 2, 739, false, 10, Some(Dur::from_ms(20)));
        assert_eq!(p.bytes_per_sec, before, "no decrease before full bw");
        p.set(bw0 / 2, 739, true, 10, Some(Dur::from_ms(20)));
        assert!(p.bytes_per_sec < before);
        // Without an RTT the nominal 1 ms is used, then replaced by the first srtt.
        let mut q = PacingRate::new(10, None, 1448, 739, 1);
        assert!(!q.has_seen_rtt);
        q.set(0, 739, true, 10, Some(Dur::from_ms(20)));
        assert!(q.has_seen_rtt);
        assert_eq!(q.bytes_per_sec, 0, "after full bw the target rate wins");
    }
}
