//! BBRv1 as Linux 6.1 `net/ipv4/tcp_bbr.c` (cc-facts §5).
//!
//! Like Linux's `cong_control` hook, BBR owns cwnd and pacing rate and is
//! called once per ACK ([`Bbr1::on_ack`] = `bbr_main`); the TCP core reports
//! recovery-state changes before the ACK that caused them
//! ([`Bbr1::on_state_change`] = the `ssthresh` and `set_state` hooks plus
//! the cwnd that `tcp_enter_loss` sets). Per ACK, in Linux's order:
//! bandwidth and rounds (with long-term sampling), ACK aggregation, gain
//! cycle, full-pipe check, DRAIN check, min_rtt and PROBE_RTT, gains, then
//! pacing rate and cwnd.
//!
//! Differences from the kernel, all deliberate:
//! * Timers that Linux keeps in jiffies (`min_rtt_stamp`,
//!   `probe_rtt_done_stamp`) use the simulator's nanosecond clock, so the
//!   10 s and 200 ms limits are exact instead of rounded to a tick.
//! * `sk_max_pacing_rate` and `snd_cwnd_clamp` are left to the TCP core.
//! * `bbr_init` reads `tcp_min_rtt()`; at init the only RTT sample is the
//!   handshake's, so min_rtt starts from `CcInit::srtt`.
//! * `tcp_enter_loss` calls `ssthresh` (and so saves cwnd) when the state
//!   was Open or Disorder; its two rarer conditions (recovery already past
//!   `high_seq`, a repeated RTO without retransmissions) are not modelled.
//! * Undo (`bbr_undo_cwnd`) is not implemented: the simulated TCP core does
//!   not undo.
//! * Linux's bit fields (2-bit `full_bw_cnt`, 16-bit `extra_acked`) are
//!   plain integers; they only differ for configurations the kernel cannot
//!   express or cwnds above 65535 packets.

use super::common::{
    bdp, bw_sample, bw_to_rate, check_dur, check_range, gain_f64, gain_q8, min_tso_segs,
    packets_in_net_at_edt, rate_bytes_per_sec, saved_cwnd, tso_segs_goal, us_delta, AckAggregation,
    FullBwDetector, MinRttFilter, MinRttTies, PacingRate, ProbeRttHold, Quantization, RoundCounter,
    Rounding, BBR_UNIT, BW_UNIT, PACING_SHIFT,
};
use crate::cc::{
    AckOutcome, CaState, CcEvent, CcInit, CcParams, CcState, CongestionControl, Conn, RateSample,
    TsoPolicy,
};
use crate::filter::MinMax;
use crate::rng::Rng;
use crate::units::{Dur, Rate, Time};
use serde::{Deserialize, Serialize};

/// Phases of the PROBE_BW gain cycle (`CYCLE_LEN`).
pub const CYCLE_LEN: usize = 8;
/// `bbr_cycle_rand`: the first phase is drawn among this many.
const CYCLE_RAND: u32 = 7;
/// `TCP_INIT_CWND`: v1's cwnd fallback without an RTT, and the number of
/// deliveries during which STARTUP grows cwnd regardless of the target.
const TCP_INIT_CWND: u32 = 10;
/// `bbr_pacing_margin_percent`.
const PACING_MARGIN_PERCENT: u32 = 1;
/// `bbr_lt_intvl_min_rtts`: a long-term interval lasts at least 4 rounds
/// (and is abandoned after 4 x 4).
const LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh`: an interval is lossy at lost/delivered >= 50/256.
const LT_LOSS_THRESH: u64 = 50;
/// `bbr_lt_bw_ratio`: two intervals agree within 1/8 ...
const LT_BW_RATIO: u64 = BBR_UNIT as u64 / 8;
/// `bbr_lt_bw_diff`: ... or within 4 kbit/s (in bytes/s).
const LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: use the long-term rate for 48 rounds.
const LT_BW_MAX_RTTS: u32 = 48;

/// Parameters of `cc = "bbr1"`; the defaults are Linux 6.1's constants.
/// Gains are real numbers converted to Q8 by truncation, as the kernel's
/// integer expressions do (the defaults are exact Q8 values).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bbr1Config {
    /// STARTUP pacing and cwnd gain (`bbr_high_gain` = 739/256 = 2.8867, about 2/ln 2).
    pub high_gain: f64,
    /// DRAIN pacing gain (`bbr_drain_gain` = 88/256 = 0.34375, about 1/high_gain).
    pub drain_gain: f64,
    /// PROBE_BW cwnd gain (`bbr_cwnd_gain` = 2).
    pub cwnd_gain: f64,
    /// Pacing gain of the probing phase of the cycle (5/4).
    pub probe_gain_up: f64,
    /// Pacing gain of the draining phase of the cycle (3/4).
    pub probe_gain_down: f64,
    /// Window of the max-bandwidth filter, rounds (`bbr_bw_rtts` = 10).
    pub bw_rtts: u32,
    /// Window of the min-RTT filter; its expiry triggers PROBE_RTT (10 s).
    #[serde(with = "crate::units::dur_text")]
    pub min_rtt_win: Dur,
    /// Time PROBE_RTT holds cwnd at `min_cwnd` (`bbr_probe_rtt_mode_ms`
    /// = 200 ms); "0s" disables PROBE_RTT as in Linux.
    #[serde(with = "crate::units::dur_text")]
    pub probe_rtt_duration: Dur,
    /// Minimum cwnd and PROBE_RTT cwnd, packets (`bbr_cwnd_min_target` = 4).
    pub min_cwnd: u32,
    /// Growth per round that counts as "still growing" in STARTUP (1.25).
    pub full_bw_thresh: f64,
    /// Rounds without such growth that end STARTUP (3).
    pub full_bw_cnt: u32,
    /// Add the ACK-aggregation allowance to the cwnd target.
    pub extra_acked: bool,
    /// Gain on that allowance (`bbr_extra_acked_gain` = 1).
    pub extra_acked_gain: f64,
    /// Length of one of the two extra_acked slots, rounds (5).
    pub extra_acked_win_rtts: u32,
    /// Detect token-bucket policers and pace at their rate (`lt_bw`).
    pub lt_bw: bool,
    /// Not Linux: the 0.75 phase ends only once inflight-at-EDT is down to
    /// one BDP (v1's own target, `bbr_inflight(bw, 1.0)`), with no min_rtt
    /// time limit. This is the "drain to exactly one BDP after probing"
    /// variant of BBQ's paper (Ma et al. 2017 §V-A, experiment bbq/fig12),
    /// kept as a flag of bbr1 because it changes nothing else.
    pub drain_to_target: bool,
}

impl Default for Bbr1Config {
    fn default() -> Self {
        Bbr1Config {
            high_gain: 739.0 / 256.0,
            drain_gain: 88.0 / 256.0,
            cwnd_gain: 2.0,
            probe_gain_up: 1.25,
            probe_gain_down: 0.75,
            bw_rtts: 10,
            min_rtt_win: Dur::from_secs(10),
            probe_rtt_duration: Dur::from_ms(200),
            min_cwnd: 4,
            full_bw_thresh: 1.25,
            full_bw_cnt: 3,
            extra_acked: true,
            extra_acked_gain: 1.0,
            extra_acked_win_rtts: 5,
            lt_bw: true,
            drain_to_target: false,
        }
    }
}

impl CcParams for Bbr1Config {
    fn validate(&self) -> Result<(), String> {
        check_range("high_gain", self.high_gain, 1.0, 16.0)?;
        check_range("drain_gain", self.drain_gain, 0.01, 1.0)?;
        check_range("cwnd_gain", self.cwnd_gain, 1.0, 16.0)?;
        check_range("probe_gain_up", self.probe_gain_up, 1.0, 4.0)?;
        check_range("probe_gain_down", self.probe_gain_down, 0.01, 1.0)?;
        check_range("bw_rtts", self.bw_rtts, 1, 1000)?;
        check_dur(
            "min_rtt_win",
            self.min_rtt_win,
            Dur::from_ms(1),
            Dur::from_secs(3600),
        )?;
        check_dur(
            "probe_rtt_duration",
            self.probe_rtt_duration,
            Dur::ZERO,
            Dur::from_secs(60),
        )?;
        check_range("min_cwnd", self.min_cwnd, 1, 1000)?;
        check_range("full_bw_thresh", self.full_bw_thresh, 1.0, 4.0)?;
        check_range("full_bw_cnt", self.full_bw_cnt, 1, 100)?;
        check_range("extra_acked_gain", self.extra_acked_gain, 0.0, 16.0)?;
        check_range("extra_acked_win_rtts", self.extra_acked_win_rtts, 1, 31)?;
        Ok(())
    }
}

/// The configuration in the units the algorithm computes with.
#[derive(Clone, Debug)]
struct Params {
    high_gain: u32,
    drain_gain: u32,
    cwnd_gain: u32,
    /// `bbr_pacing_gain[]`: up, down, then six phases at 1.0.
    cycle_gains: [u32; CYCLE_LEN],
    bw_rtts: u64,
    min_rtt_win: Dur,
    probe_rtt_duration: Dur,
    min_cwnd: u32,
    full_bw_thresh: u32,
    full_bw_cnt: u32,
    /// 0 when `extra_acked` is off (Linux: `!bbr_extra_acked_gain`).
    extra_acked_gain: u32,
    extra_acked_win_rtts: u32,
    lt_bw: bool,
    drain_to_target: bool,
}

impl Params {
    fn new(c: &Bbr1Config) -> Self {
        let mut cycle_gains = [BBR_UNIT; CYCLE_LEN];
        if !crate::mutant::is(crate::mutant::Mutant::BbrFlatGain) {
            cycle_gains[0] = gain_q8(c.probe_gain_up);
            cycle_gains[1] = gain_q8(c.probe_gain_down);
        }
        Params {
            high_gain: gain_q8(c.high_gain),
            drain_gain: gain_q8(c.drain_gain),
            cwnd_gain: gain_q8(c.cwnd_gain),
            cycle_gains,
            bw_rtts: c.bw_rtts as u64,
            min_rtt_win: c.min_rtt_win,
            probe_rtt_duration: c.probe_rtt_duration,
            min_cwnd: c.min_cwnd,
            full_bw_thresh: gain_q8(c.full_bw_thresh),
            full_bw_cnt: c.full_bw_cnt,
            extra_acked_gain: if c.extra_acked {
                gain_q8(c.extra_acked_gain)
            } else {
                0
            },
            extra_acked_win_rtts: c.extra_acked_win_rtts,
            lt_bw: c.lt_bw,
            drain_to_target: c.drain_to_target,
        }
    }
}

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }
}

/// What long-term sampling asks of the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LtEvent {
    None,
    /// Two consistent lossy intervals: pace at lt_bw from now on.
    Engaged,
    /// lt_bw has been used for 48 rounds: drop it, restart the gain cycle.
    Expired,
}

/// The long-term ("policer") bandwidth model (`lt_*` fields,
/// `bbr_lt_bw_sampling`, `bbr_lt_bw_interval_done`).
#[derive(Clone, Debug, Default)]
struct LtBw {
    is_sampling: bool,
    /// Rounds in the current interval, or rounds spent using lt_bw.
    rtt_cnt: u32,
    use_bw: bool,
    /// The policed rate estimate, BW units.
    bw: u64,
    last_delivered: u64,
    /// Interval start, ms of `delivered_mstamp`.
    last_stamp_ms: u64,
    last_lost: u64,
}

impl LtBw {
    /// `bbr_reset_lt_bw_sampling` at init, when nothing is delivered or lost.
    fn new(now: Time) -> Self {
        LtBw {
            last_stamp_ms: now.us() / 1000,
            ..Default::default()
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_interval(&mut self, conn: &Conn) {
        self.last_stamp_ms = conn.delivered_mstamp.us() / 1000;
        self.last_delivered = conn.delivered;
        self.last_lost = conn.lost;
        self.rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset(&mut self, conn: &Conn) {
        self.bw = 0;
        self.use_bw = false;
        self.is_sampling = false;
        self.reset_interval(conn);
    }

    /// `bbr_lt_bw_sampling`: intervals of 4..16 rounds that start and end
    /// with a loss; two lossy intervals with consistent rates mean a policer.
    fn sample(
        &mut self,
        losses: u32,
        is_app_limited: bool,
        round_start: bool,
        in_probe_bw: bool,
        conn: &Conn,
    ) -> LtEvent {
        if self.use_bw {
            if in_probe_bw && round_start {
                self.rtt_cnt += 1;
                if self.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset(conn);
                    return LtEvent::Expired;
                }
            }
            return LtEvent::None;
        }
        // Start at a loss, when the policer's bucket is empty.
        if !self.is_sampling {
            if losses == 0 {
                return LtEvent::None;
            }
            self.reset_interval(conn);
            self.is_sampling = true;
        }
        if is_app_limited {
            self.reset(conn);
            return LtEvent::None;
        }
        if round_start {
            self.rtt_cnt += 1;
        }
        if self.rtt_cnt < LT_INTVL_MIN_RTTS {
            return LtEvent::None;
        }
        if self.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset(conn);
            return LtEvent::None;
        }
        // End the interval at a loss too.
        if losses == 0 {
            return LtEvent::None;
        }
        let lost = conn.lost - self.last_lost;
        let delivered = conn.delivered - self.last_delivered;
        if delivered == 0 || (lost << 8) < LT_LOSS_THRESH * delivered {
            return LtEvent::None;
        }
        let t_ms = (conn.delivered_mstamp.us() / 1000) as i64 - self.last_stamp_ms as i64;
        if t_ms < 1 {
            return LtEvent::None;
        }
        if t_ms as u64 >= u32::MAX as u64 / 1000 {
            self.reset(conn);
            return LtEvent::None;
        }
        let bw = delivered * BW_UNIT / (t_ms as u64 * 1000);
        self.interval_done(bw, conn)
    }

    /// `bbr_lt_bw_interval_done`.
    fn interval_done(&mut self, bw: u64, conn: &Conn) -> LtEvent {
        if self.bw != 0 {
            let diff = bw.abs_diff(self.bw);
            if diff * BBR_UNIT as u64 <= LT_BW_RATIO * self.bw
                || rate_bytes_per_sec(diff, BBR_UNIT, conn.mss, PACING_MARGIN_PERCENT) <= LT_BW_DIFF
            {
                self.bw = (bw + self.bw) >> 1;
                self.use_bw = true;
                self.rtt_cnt = 0;
                return LtEvent::Engaged;
            }
        }
        self.bw = bw;
        self.reset_interval(conn);
        LtEvent::None
    }
}

/// How long PROBE_BW's probing phase (pacing gain above 1) lasts: the hook
/// BBQ changes in this state machine (its rule is `bbq.rs`'s
/// `ProbeLength::shortened_us`).
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeLength {
    /// BBRv1 (`bbr_is_next_cycle_phase`): at least min_rtt, and until
    /// inflight reaches pacing_gain x BDP or a loss.
    MinRtt,
    /// BBQ: exactly min(min_rtt, alpha) while latest RTT >= (1 + beta) x min_rtt.
    Bbq { alpha_us: u64, beta: f64 },
}

/// A BBRv1 flow (`struct bbr`). BBQ is the same machine with a different
/// [`ProbeLength`].
pub struct Bbr1 {
    p: Params,
    /// How long the 1.25 phase lasts: v1's rule, or BBQ's.
    probe_len: ProbeLength,
    rng: Rng,
    mss: u32,
    /// `snd_cwnd`, packets.
    cwnd: u32,
    /// `snd_ssthresh` as BBR sets it on entering DRAIN (reporting only).
    ssthresh: u32,
    pacing: PacingRate,
    mode: Mode,
    /// `min_rtt_us` and `min_rtt_stamp`.
    min_rtt: MinRttFilter,
    probe_rtt: ProbeRttHold,
    /// Max filter of bandwidth samples over `bw_rtts` rounds.
    bw: MinMax,
    rounds: RoundCounter,
    /// `cycle_mstamp`: start of the current gain phase.
    cycle_mstamp: Time,
    cycle_idx: usize,
    /// The CA state on the previous ACK (`prev_ca_state`).
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    lt: LtBw,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw: FullBwDetector,
    /// `prior_cwnd`: cwnd saved on entering recovery or PROBE_RTT.
    prior_cwnd: u32,
    ack_agg: AckAggregation,
    /// Latest valid `rs.rtt_us` (for BBQ's queue test).
    last_rtt_us: Option<u32>,
}

impl Bbr1 {
    /// `bbr_init`, with v1's probing-phase rule.
    pub fn new(cfg: &Bbr1Config, init: &CcInit) -> Self {
        Self::with_probe_length(cfg, init, ProbeLength::MinRtt)
    }

    /// `bbr_init`, with a chosen probing-phase rule.
    pub fn with_probe_length(cfg: &Bbr1Config, init: &CcInit, probe_len: ProbeLength) -> Self {
        let p = Params::new(cfg);
        let pacing = PacingRate::new(
            init.init_cwnd,
            init.srtt,
            init.mss,
            p.high_gain,
            PACING_MARGIN_PERCENT,
        );
        Bbr1 {
            rng: Rng::stream(init.seed, "bbr"),
            mss: init.mss,
            cwnd: init.init_cwnd,
            ssthresh: u32::MAX,
            pacing,
            mode: Mode::Startup,
            min_rtt: MinRttFilter::from_handshake(init.srtt, init.now),
            probe_rtt: ProbeRttHold::default(),
            bw: MinMax::new_max(),
            rounds: RoundCounter::new(0),
            cycle_mstamp: Time::ZERO,
            cycle_idx: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            lt: LtBw::new(init.now),
            // Linux starts from zeroed gains; update_gains sets these on the
            // first ACK before anything reads them, so report STARTUP's.
            pacing_gain: p.high_gain,
            cwnd_gain: p.high_gain,
            full_bw: FullBwDetector::default(),
            prior_cwnd: 0,
            ack_agg: AckAggregation::new(init.now),
            last_rtt_us: None,
            probe_len,
            p,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Index into the PROBE_BW gain cycle (0 = the 1.25 phase).
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    /// Current pacing gain, Q8.
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw.reached
    }

    /// The windowed max bandwidth, BW units (`bbr_max_bw`).
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// The bandwidth the model uses: lt_bw while policed (`bbr_bw`).
    pub fn bw(&self) -> u64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    pub fn lt_use_bw(&self) -> bool {
        self.lt.use_bw
    }

    /// The policed-rate estimate, BW units (0 when none).
    pub fn lt_bw(&self) -> u64 {
        self.lt.bw
    }

    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt.us
    }

    pub fn round_count(&self) -> u64 {
        self.rounds.count
    }

    /// The probing-phase rule (BBQ reports its queue test through it).
    pub fn probe_length(&self) -> &ProbeLength {
        &self.probe_len
    }

    /// `bbr_tso_segs_goal`: a burst of about 1 ms at the pacing rate, at
    /// most 64 KB and 127 segments.
    fn tso_segs_goal(&self) -> u32 {
        let pacing = self.pacing.bytes_per_sec;
        tso_segs_goal(pacing >> PACING_SHIFT, self.mss, min_tso_segs(pacing)).min(0x7F)
    }

    /// `bbr_bdp`.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        bdp(bw, self.min_rtt.us, gain, TCP_INIT_CWND)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let probing_up = self.mode == Mode::ProbeBw && self.cycle_idx == 0;
        Quantization::V1.apply(cwnd, self.tso_segs_goal(), probing_up)
    }

    /// `bbr_inflight`: BDP x gain plus the quantization budget.
    fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, inflight_now: u32, now: Time, conn: &Conn) -> u32 {
        let burst = if self.pacing_gain > BBR_UNIT {
            self.tso_segs_goal()
        } else {
            0
        };
        packets_in_net_at_edt(inflight_now, now, conn.next_departure, self.bw(), burst)
    }

    /// `bbr_save_cwnd`: remember the last good cwnd.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = saved_cwnd(
            self.prior_cwnd,
            self.cwnd,
            self.prev_ca_state,
            self.mode == Mode::ProbeRtt,
        );
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, bw: u64, gain: u32, conn: &Conn) {
        self.pacing
            .set(bw, gain, self.full_bw.reached, self.cwnd, conn.srtt);
    }

    /// `bbr_ack_aggregation_cwnd`: v1 adds the allowance only once the
    /// pipe has been filled.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw.reached {
            return 0;
        }
        self.ack_agg
            .cwnd_allowance(self.bw(), self.p.extra_acked_gain)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: returns the cwnd and whether
    /// packet conservation decides it.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        rs: &RateSample,
        conn: &Conn,
        acked: u32,
    ) -> (u32, bool) {
        let prev = self.prev_ca_state;
        let state = conn.ca_state;
        let mut cwnd = self.cwnd;
        // Deduct losses now; set_cwnd then slow-starts back towards target.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation.
            self.packet_conservation = true;
            self.rounds.restart(conn.delivered);
            cwnd = conn.in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // Recovery or RTO is over: restore the cwnd saved before it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(conn.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, rs: &RateSample, conn: &Conn, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(rs, conn, acked);
            cwnd = c;
            if !conserving {
                let target = self.bdp(bw, gain) + self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                if self.full_bw.reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || conn.delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.p.min_cwnd);
            }
        }
        self.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.p.min_cwnd);
        }
    }

    /// `bbr_is_next_cycle_phase`: a phase lasts min_rtt; the 1.25 phase
    /// also waits until inflight reaches 1.25 x BDP (or a loss), the 0.75
    /// phase ends early once inflight is down to one BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample, conn: &Conn, now: Time) -> bool {
        let elapsed_us = us_delta(conn.delivered_mstamp, self.cycle_mstamp);
        let is_full_length = elapsed_us > self.min_rtt.us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight, now, conn);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            // BBQ's one change: a shorter probe while a queue persists.
            if let Some(len_us) = self
                .probe_len
                .shortened_us(self.min_rtt.us, self.last_rtt_us)
            {
                return elapsed_us > len_us;
            }
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        let drained = inflight <= self.inflight(bw, BBR_UNIT);
        if self.p.drain_to_target {
            return drained;
        }
        is_full_length || drained
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, conn: &Conn) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = conn.delivered_mstamp;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, rs: &RateSample, conn: &Conn, now: Time) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, conn, now) {
            self.advance_cycle_phase(conn);
        }
    }

    /// `bbr_reset_probe_bw_mode`: start the cycle at a random phase other
    /// than the 0.75 one (index 7 - U{0..6}, then advanced once).
    fn reset_probe_bw_mode(&mut self, conn: &Conn) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(conn);
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, conn: &Conn) {
        if self.full_bw.reached {
            self.reset_probe_bw_mode(conn);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_lt_bw_sampling` and what its outcome does to the mode.
    fn lt_bw_sampling(&mut self, losses: u32, is_app_limited: bool, conn: &Conn) {
        if !self.p.lt_bw {
            return;
        }
        let ev = self.lt.sample(
            losses,
            is_app_limited,
            self.rounds.round_start,
            self.mode == Mode::ProbeBw,
            conn,
        );
        match ev {
            LtEvent::None => {}
            LtEvent::Engaged => self.pacing_gain = BBR_UNIT,
            LtEvent::Expired => self.reset_probe_bw_mode(conn),
        }
    }

    /// `bbr_update_bw`: rounds, long-term sampling, the max filter.
    fn update_bw(&mut self, rs: &RateSample, conn: &Conn) {
        let sample = bw_sample(rs, Rounding::Down);
        if self
            .rounds
            .on_ack(sample.is_some(), rs.prior_delivered, conn.delivered)
        {
            self.packet_conservation = false;
        }
        let Some(bw) = sample else {
            return;
        };
        self.lt_bw_sampling(rs.losses, rs.is_app_limited, conn);
        // App-limited samples only count if they raise the estimate.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(self.p.bw_rtts, self.rounds.count, bw);
        }
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, rs: &RateSample, conn: &Conn) {
        if self.p.extra_acked_gain == 0 {
            return;
        }
        let bw = self.bw();
        self.ack_agg.update(
            rs,
            self.rounds.round_start,
            self.p.extra_acked_win_rtts,
            bw,
            conn.delivered_mstamp,
            self.cwnd,
        );
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        self.full_bw.check(
            self.rounds.round_start,
            rs.is_app_limited,
            self.max_bw(),
            self.p.full_bw_thresh,
            self.p.full_bw_cnt,
        );
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, conn: &Conn, now: Time) {
        if self.mode == Mode::Startup && self.full_bw.reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(conn.in_flight, now, conn)
                <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(conn);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: Time, conn: &Conn) {
        if !self.probe_rtt.done(now) {
            return;
        }
        self.min_rtt.stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(conn);
    }

    /// `bbr_update_min_rtt`: the min_rtt filter and PROBE_RTT.
    fn update_min_rtt(&mut self, rs: &RateSample, conn: &Conn, now: Time, out: &mut AckOutcome) {
        let filter_expired = self
            .min_rtt
            .update(rs, now, self.p.min_rtt_win, MinRttTies::Lower);
        if self.p.probe_rtt_duration > Dur::ZERO
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt.enter();
        }
        if self.mode == Mode::ProbeRtt {
            // Keep low-rate samples out of the bandwidth filter.
            out.mark_app_limited = true;
            // Hold min_cwnd in flight for max(200 ms, one round).
            if self.probe_rtt.on_ack(
                now,
                conn.in_flight,
                self.p.min_cwnd,
                self.p.probe_rtt_duration,
                &mut self.rounds,
                conn.delivered,
            ) {
                self.check_probe_rtt_done(now, conn);
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.high_gain, self.p.high_gain),
            Mode::Drain => (self.p.drain_gain, self.p.high_gain),
            Mode::ProbeBw => {
                let g = if self.lt.use_bw {
                    BBR_UNIT
                } else {
                    self.p.cycle_gains[self.cycle_idx]
                };
                (g, self.p.cwnd_gain)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, rs: &RateSample, conn: &Conn, now: Time, out: &mut AckOutcome) {
        if rs.rtt_us >= 0 {
            self.last_rtt_us = Some(rs.rtt_us.min(u32::MAX as i64) as u32);
        }
        self.update_bw(rs, conn);
        self.update_ack_aggregation(rs, conn);
        self.update_cycle_phase(rs, conn, now);
        self.check_full_bw_reached(rs);
        self.check_drain(conn, now);
        self.update_min_rtt(rs, conn, now, out);
        self.update_gains();
    }

    /// Label of the gain-cycle phase ("UP", "DOWN", "CRUISE"; "" outside PROBE_BW).
    fn gain_phase(&self) -> &'static str {
        if self.mode != Mode::ProbeBw {
            return "";
        }
        match self.cycle_idx {
            0 => "UP",
            1 => "DOWN",
            _ => "CRUISE",
        }
    }
}

impl CongestionControl for Bbr1 {
    /// `bbr_main`.
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        let mut out = AckOutcome::default();
        self.update_model(rs, conn, now, &mut out);
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, conn);
        self.set_cwnd(rs, conn, rs.acked_sacked, bw, self.cwnd_gain);
        out
    }

    /// `bbr_ssthresh` (via `tcp_init_cwnd_reduction` and `tcp_enter_loss`),
    /// the cwnd `tcp_enter_loss` sets, and `bbr_set_state`.
    fn on_state_change(&mut self, _now: Time, from: CaState, to: CaState, conn: &Conn) {
        match to {
            CaState::Recovery | CaState::Cwr
                if !matches!(from, CaState::Cwr | CaState::Recovery) =>
            {
                self.save_cwnd();
            }
            CaState::Loss => {
                if from <= CaState::Disorder {
                    self.save_cwnd();
                }
                self.cwnd = conn.in_flight + 1;
                // bbr_set_state: an RTO ends the round and feeds lt sampling.
                self.prev_ca_state = CaState::Loss;
                self.full_bw.full_bw = 0;
                self.rounds.round_start = true;
                self.lt_bw_sampling(1, false, conn);
            }
            _ => {}
        }
    }

    /// `bbr_cwnd_event`: restarting from idle.
    fn on_event(&mut self, now: Time, ev: CcEvent, conn: &Conn) {
        if ev != CcEvent::TxStart || !conn.app_limited {
            return;
        }
        self.idle_restart = true;
        self.ack_agg.reset_epoch(now);
        match self.mode {
            // Restarting app-limited: pace at the estimated bw, no faster.
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT, conn),
            Mode::ProbeRtt => self.check_probe_rtt_done(now, conn),
            _ => {}
        }
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }

    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    fn pacing_rate(&self) -> Rate {
        self.pacing.rate()
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// `bbr_min_tso_segs`.
    fn tso_policy(&self) -> TsoPolicy {
        TsoPolicy::Autosize {
            min_segs: min_tso_segs(self.pacing.bytes_per_sec),
        }
    }

    fn phase(&self) -> &'static str {
        self.mode.label()
    }

    fn write_state(&self, out: &mut CcState) {
        out.label("bbr_mode", self.mode.label());
        out.label("bbr_phase", self.gain_phase());
        out.num("bbr_cycle_idx", self.cycle_idx as f64);
        out.num("bbr_pacing_gain", gain_f64(self.pacing_gain));
        out.num("bbr_cwnd_gain", gain_f64(self.cwnd_gain));
        out.num(
            "bbr_max_bw_mbps",
            bw_to_rate(self.max_bw(), self.mss).mbps_f64(),
        );
        // `bbr_bw`: lt_bw while lt_use_bw, else the max filter; what
        // `bbr_get_info` reports (tcp_info's bbr_bw), so the Linux backend's
        // column of the same name (model version 21).
        out.num("bbr_bw_mbps", bw_to_rate(self.bw(), self.mss).mbps_f64());
        out.num("bbr_min_rtt_ms", self.min_rtt.ms());
        out.num("bbr_round_count", self.rounds.count as f64);
        out.num("bbr_full_bw_reached", self.full_bw.reached as u8 as f64);
        out.num("bbr_extra_acked_pkts", self.ack_agg.extra_acked() as f64);
        out.num("bbr_lt_use_bw", self.lt.use_bw as u8 as f64);
        // BDP of the bandwidth in use (lt_bw while policed), no quantization.
        out.num("bbr_bdp_pkts", self.bdp(self.bw(), BBR_UNIT) as f64);
        self.probe_len
            .write_state(out, self.min_rtt.us, self.last_rtt_us);
    }
}

/// The registry's entry for `cc = "bbr1"` (`cc::Algorithm`).
impl crate::cc::Algorithm for Bbr1Config {
    const NAME: &'static str = "bbr1";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_bbr.c (BBRv1)";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Bbr1(Bbr1::new(self, init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr::common::BW_UNIT;
    use crate::cc::bbr::testpipe::{secs, Pipe, PipeConfig, Policer};
    use crate::cc::parse_params;

    fn mbps(c: &Bbr1, bw: u64) -> f64 {
        bw_to_rate(bw, c.mss).mbps_f64()
    }

    /// A numeric state column as `write_state` gives it to samples.parquet.
    fn column(c: &Bbr1, name: &str) -> f64 {
        let mut st = CcState::default();
        c.write_state(&mut st);
        match st.entries.iter().find(|e| e.0 == name).map(|e| e.1) {
            Some(crate::cc::StateValue::Num(v)) => v,
            other => panic!("{name}: {other:?}"),
        }
    }

    /// A flow on `pipe` with default parameters.
    fn flow(pipe: &Pipe, seed: u64) -> Bbr1 {
        Bbr1::new(&Bbr1Config::default(), &pipe.init(seed))
    }

    /// Rounds of the first entry into each mode.
    fn mode_entries(rate_mbps: u64, rtt_ms: u64, until: f64) -> (Vec<(Mode, u64)>, u64) {
        let cfg = PipeConfig::new(rate_mbps, rtt_ms);
        let pipe_rate = cfg.rate.mbps_f64();
        let mut pipe = Pipe::new(cfg);
        let mut cc = flow(&pipe, 1);
        let mut entries = vec![(Mode::Startup, 0)];
        let mut plateau = None;
        pipe.run(&mut cc, secs(until), |_, c| {
            if plateau.is_none() && mbps(c, c.max_bw()) >= 0.98 * pipe_rate {
                plateau = Some(c.round_count());
            }
            if entries.last().unwrap().0 != c.mode() {
                entries.push((c.mode(), c.round_count()));
            }
        });
        (entries, plateau.expect("max_bw reached the pipe rate"))
    }

    /// tcp_bbr.c `bbr_check_full_bw_reached` and `bbr_check_drain`: STARTUP
    /// ends after 3 rounds without 25 % growth of max_bw (the round in
    /// which the plateau is reached can be the first of them), DRAIN ends
    /// once inflight is down to one BDP, within a round or two.
    #[test]
    fn startup_drains_then_probes_bw_within_rounds_of_the_plateau() {
        for (rate, rtt) in [(100, 20), (10, 50), (50, 5)] {
            let (entries, plateau) = mode_entries(rate, rtt, 3.0);
            let modes: Vec<Mode> = entries.iter().map(|e| e.0).collect();
            assert_eq!(
                modes,
                [Mode::Startup, Mode::Drain, Mode::ProbeBw],
                "{rate} Mbit/s {rtt} ms: {entries:?}"
            );
            let drain = entries[1].1;
            let probe_bw = entries[2].1;
            assert!(
                (plateau + 2..=plateau + 3).contains(&drain),
                "{rate}/{rtt}: plateau at round {plateau}, DRAIN at {drain}"
            );
            assert!(probe_bw <= drain + 2, "{entries:?}");
        }
    }

    /// tcp_bbr.c `bbr_update_bw`: max filter of delivered/interval samples;
    /// on a pipe without competing traffic it converges to the pipe rate,
    /// and PROBE_BW paces at 0.99 x bw x gain (`bbr_rate_bytes_per_sec`).
    #[test]
    fn max_bw_converges_to_the_pipe_rate() {
        for (rate, rtt) in [(100, 20), (10, 50), (50, 5)] {
            let mut pipe = Pipe::new(PipeConfig::new(rate, rtt));
            let mut cc = flow(&pipe, 3);
            pipe.run(&mut cc, secs(3.0), |_, _| {});
            let est = mbps(&cc, cc.max_bw());
            assert!(
                (est - rate as f64).abs() / (rate as f64) < 0.02,
                "{rate} Mbit/s {rtt} ms: max_bw {est}"
            );
            assert_eq!(cc.mode(), Mode::ProbeBw);
            let expect = rate_bytes_per_sec(cc.bw(), cc.pacing_gain, 1448, 1);
            assert_eq!(cc.pacing_rate(), Rate::from_bytes_per_sec(expect));
        }
    }

    /// tcp_bbr.c `bbr_reset_probe_bw_mode`: the first phase is
    /// 7 - U{0..6} advanced once, i.e. any phase but the 0.75 one; and
    /// `bbr_pacing_gain[]` / `bbr_advance_cycle_phase`: phases follow each
    /// other in order 1.25, 0.75, then six at 1.0.
    #[test]
    fn gain_cycle_is_up_down_six_cruise_and_never_starts_down() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let conn = pipe.conn();
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..700 {
            let mut c = flow(&pipe, seed);
            c.full_bw.reached = true;
            c.reset_probe_bw_mode(&conn);
            seen[c.cycle_idx] += 1;
        }
        assert_eq!(seen[1], 0, "never starts in the 0.75 phase: {seen:?}");
        for (i, n) in seen.iter().enumerate().filter(|&(i, _)| i != 1) {
            assert!((70..130).contains(n), "phase {i} drawn {n} times of 700");
        }

        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 5);
        let mut phases: Vec<(usize, u32)> = vec![];
        pipe.run(&mut cc, secs(4.0), |_, c| {
            if c.mode() == Mode::ProbeBw && phases.last().map(|p| p.0) != Some(c.cycle_idx) {
                phases.push((c.cycle_idx, c.pacing_gain));
            }
        });
        assert!(phases.len() > 100, "{}", phases.len());
        assert_ne!(phases[0].0, 1);
        let gains = [320, 192, 256, 256, 256, 256, 256, 256];
        for w in phases.windows(2) {
            assert_eq!(w[1].0, (w[0].0 + 1) % CYCLE_LEN, "{phases:?}");
        }
        for &(idx, gain) in &phases {
            assert_eq!(gain, gains[idx]);
        }
    }

    /// tcp_bbr.c `bbr_update_min_rtt` and `bbr_check_probe_rtt_done`: when
    /// min_rtt is 10 s old, PROBE_RTT caps cwnd at 4, marks the connection
    /// app-limited, and once inflight is down to 4 holds for 200 ms and a
    /// round; then back to PROBE_BW with the saved cwnd and a fresh min_rtt.
    #[test]
    fn probe_rtt_when_min_rtt_is_10s_old_holds_4_packets_200ms_and_a_round() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        let mut enter = None;
        let mut low: Option<(Time, u64)> = None;
        let mut exit: Option<(Time, u64, u32)> = None;
        let mut max_cwnd_in_probe_rtt = 0;
        let mut cwnd_before = 0;
        pipe.run(&mut cc, secs(11.0), |v, c| {
            if c.mode() == Mode::ProbeRtt {
                if enter.is_none() {
                    // The expired filter takes this ACK's sample, whatever it is.
                    assert_eq!(c.min_rtt.us as i64, v.rs.rtt_us);
                    assert_eq!(c.min_rtt.stamp, v.now);
                    enter = Some(v.now);
                }
                max_cwnd_in_probe_rtt = max_cwnd_in_probe_rtt.max(c.cwnd());
                assert!(v.out.mark_app_limited);
                if low.is_none() && v.conn.in_flight <= 4 {
                    low = Some((v.now, c.round_count()));
                }
            } else if enter.is_none() {
                cwnd_before = c.cwnd();
            } else if exit.is_none() {
                exit = Some((v.now, c.round_count(), c.cwnd()));
                assert_eq!(c.mode(), Mode::ProbeBw);
                assert_eq!(c.min_rtt.stamp, v.now);
            }
        });
        // The handshake's 20 ms was never beaten, so the window expires at 10 s.
        let enter = enter.expect("entered PROBE_RTT");
        assert!(enter > secs(10.0) && enter < secs(10.001), "{enter}");
        assert_eq!(max_cwnd_in_probe_rtt, 4);
        let (t_low, round_low) = low.expect("inflight reached 4");
        let (t_exit, round_exit, cwnd_after) = exit.expect("left PROBE_RTT");
        assert!(t_exit.since(t_low) >= Dur::from_ms(200), "{t_low} {t_exit}");
        assert!(t_exit.since(t_low) < Dur::from_ms(250), "{t_low} {t_exit}");
        assert!(round_exit > round_low);
        assert!(cwnd_after >= cwnd_before, "{cwnd_after} < {cwnd_before}");
    }

    /// An ACK that starts a new round with bandwidth sample `bw` (BW units).
    fn round_ack(c: &mut Bbr1, conn: &mut Conn, bw: u64) {
        let prior = conn.delivered;
        conn.delivered += 100;
        conn.delivered_mstamp += Dur::from_ms(20);
        let rs = RateSample {
            prior_delivered: prior,
            delivered: 100,
            interval_us: (100 * BW_UNIT / bw) as i64,
            rtt_us: 20_000,
            acked_sacked: 1,
            snd_una_advanced: true,
            ..Default::default()
        };
        let now = conn.delivered_mstamp;
        c.on_ack(now, &rs, conn);
    }

    /// tcp_bbr.c `bbr_check_full_bw_reached`: once per round, growth of
    /// max_bw by >= 1.25x restarts the count; 3 rounds below it end STARTUP.
    #[test]
    fn full_bw_needs_three_rounds_below_25pct_growth() {
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut c = flow(&pipe, 1);
        let mut conn = pipe.conn();
        conn.in_flight = 1000;
        let b = BW_UNIT / 100;
        // Counts after each round: growth (>= 1.25x the last growth) resets.
        let rounds = [
            (b, 0),
            (2 * b, 0),
            (12 * b / 5, 1),
            (12 * b / 5, 2),
            (3 * b, 0),
        ];
        for (i, (bw, cnt)) in rounds.into_iter().enumerate() {
            round_ack(&mut c, &mut conn, bw);
            assert_eq!(c.full_bw.cnt, cnt, "round {i}");
            assert!(!c.full_bw_reached(), "round {i}");
        }
        assert_eq!(c.full_bw.full_bw, c.max_bw());
        // 3.5b < 1.25 x 3b: no growth.
        for i in 0..2 {
            round_ack(&mut c, &mut conn, 7 * b / 2);
            assert!(!c.full_bw_reached(), "round {i} without growth");
        }
        round_ack(&mut c, &mut conn, 7 * b / 2);
        assert!(c.full_bw_reached());
        assert_eq!(c.mode(), Mode::Drain);
        // Entering DRAIN sets ssthresh to one BDP plus quantization (for reporting).
        let bdp = c.bdp(c.max_bw(), BBR_UNIT);
        assert!(
            (bdp..bdp + 3 * 127 + 4).contains(&c.ssthresh()),
            "{}",
            c.ssthresh()
        );
    }

    /// tcp_bbr.c `bbr_lt_bw_sampling` / `bbr_lt_bw_interval_done`: behind a
    /// token-bucket policer (10 Mbit/s on a 100 Mbit/s path) two lossy
    /// intervals with consistent rates engage lt_bw at the policed rate,
    /// pacing at gain 1.0; after 48 rounds it is dropped and re-learned.
    #[test]
    fn lt_bw_engages_under_a_policer() {
        let mut cfg = PipeConfig::new(100, 20);
        cfg.policer = Some(Policer {
            rate: Rate(10_000_000),
            burst_bytes: 100_000,
        });
        let mut pipe = Pipe::new(cfg);
        let mut cc = flow(&pipe, 1);
        let mut engaged = vec![];
        let mut was = false;
        // bbr_bw_mbps is `bbr_bw` (what tcp_info reports): lt_bw while it
        // is used, however far the max filter is above it.
        let mut above = 0;
        pipe.run(&mut cc, secs(5.0), |_, c| {
            if c.lt_use_bw() && !was {
                engaged.push((c.round_count(), mbps(c, c.lt_bw())));
            }
            if c.lt_use_bw() && c.mode() == Mode::ProbeBw {
                assert_eq!(c.pacing_gain, BBR_UNIT);
                let paced = c.pacing_rate().mbps_f64();
                assert!(paced < 10.5, "paced at {paced} while policed");
            }
            let used = column(c, "bbr_bw_mbps");
            if c.lt_use_bw() {
                assert_eq!(used, mbps(c, c.lt_bw()));
                above += (column(c, "bbr_max_bw_mbps") > used) as u32;
            } else {
                assert_eq!(used, column(c, "bbr_max_bw_mbps"));
            }
            was = c.lt_use_bw();
        });
        assert!(
            above > 0,
            "the max filter never above lt_bw while it was used"
        );
        assert!(engaged.len() >= 2, "{engaged:?}");
        for &(_, bw) in &engaged {
            assert!((bw - 10.0).abs() < 0.5, "{engaged:?}");
        }
        assert!(
            engaged[1].0 - engaged[0].0 > LT_BW_MAX_RTTS as u64,
            "{engaged:?}"
        );

        // Without a policer the model never engages; with lt_bw off neither.
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        pipe.run(&mut cc, secs(3.0), |_, c| assert!(!c.lt_use_bw()));
        let mut cfg = PipeConfig::new(100, 20);
        cfg.policer = Some(Policer {
            rate: Rate(10_000_000),
            burst_bytes: 100_000,
        });
        let mut pipe = Pipe::new(cfg);
        let off = Bbr1Config {
            lt_bw: false,
            ..Default::default()
        };
        let mut cc = Bbr1::new(&off, &pipe.init(1));
        pipe.run(&mut cc, secs(3.0), |_, c| assert!(!c.lt_use_bw()));
    }

    /// Lengths (ms) of the gain phase `idx` that start after `from` s.
    fn phase_lengths(mut cc: Bbr1, mut pipe: Pipe, idx: usize, from: f64, to: f64) -> Vec<f64> {
        pipe.span_lengths(&mut cc, secs(from), secs(to), |c| {
            c.mode() == Mode::ProbeBw && c.cycle_idx == idx
        })
    }

    /// BBQ paper §V-A ("drain to exactly one BDP"): with `drain_to_target`
    /// the 0.75 phase has no min_rtt time limit, so a standing queue of
    /// other traffic above min_rtt/3 (here +15 ms on 20 ms) traps the flow
    /// in it; Linux's `bbr_is_next_cycle_phase` leaves after min_rtt.
    #[test]
    fn drain_to_target_holds_the_down_phase_until_inflight_is_one_bdp() {
        let mut cfg = PipeConfig::new(100, 20);
        cfg.extra_delay = Some((secs(1.0), Dur::from_ms(15)));
        let on = Bbr1Config {
            drain_to_target: true,
            ..Default::default()
        };
        let pipe = Pipe::new(cfg.clone());
        let cc = Bbr1::new(&on, &pipe.init(1));
        let mut trapped_since = None;
        let mut pipe2 = Pipe::new(cfg.clone());
        let mut cc2 = Bbr1::new(&on, &pipe2.init(1));
        pipe2.run(&mut cc2, secs(4.0), |v, c| {
            let down = c.mode() == Mode::ProbeBw && c.cycle_idx == 1;
            if v.now > secs(1.5) && down {
                trapped_since.get_or_insert(v.now);
            } else {
                trapped_since = None;
            }
        });
        let since = trapped_since.expect("in the 0.75 phase at the end");
        assert!(since < secs(2.0), "trapped from {since}");
        // Before the queue appears the phase ends as soon as inflight is down.
        let before = phase_lengths(cc, pipe, 1, 0.5, 1.0);
        assert!(!before.is_empty());
        assert!(before.iter().all(|&ms| ms <= 22.0), "{before:?}");
        // Linux v1 never stays longer than about one min_rtt.
        let pipe = Pipe::new(cfg);
        let cc = flow(&pipe, 1);
        let v1 = phase_lengths(cc, pipe, 1, 1.5, 4.0);
        assert!(v1.len() > 5, "{v1:?}");
        assert!(v1.iter().all(|&ms| ms <= 22.0), "{v1:?}");
    }

    /// tcp_bbr.c `bbr_set_cwnd_to_recover_or_restore`, `bbr_ssthresh` and
    /// `bbr_save_cwnd`: entering Recovery saves cwnd and starts one round of
    /// packet conservation (cwnd = inflight + acked); leaving it restores
    /// the saved cwnd.
    #[test]
    fn recovery_conserves_packets_then_restores_prior_cwnd() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        pipe.run(&mut cc, secs(2.0), |_, _| {});
        let before = cc.cwnd();
        let mut conn = pipe.conn();
        conn.ca_state = CaState::Recovery;
        conn.in_flight = 100;
        cc.on_state_change(pipe.now, CaState::Open, CaState::Recovery, &conn);
        assert_eq!(cc.prior_cwnd, before);
        let rs = RateSample {
            prior_delivered: conn.delivered - 1,
            delivered: 1,
            interval_us: 20_000,
            rtt_us: 20_000,
            losses: 3,
            acked_sacked: 2,
            snd_una_advanced: true,
            ..Default::default()
        };
        cc.on_ack(pipe.now, &rs, &conn);
        assert_eq!(cc.cwnd(), 102, "inflight + acked");
        assert!(cc.packet_conservation);
        conn.in_flight = 90;
        cc.on_ack(pipe.now, &rs, &conn);
        assert_eq!(cc.cwnd(), 99, "cwnd - losses, at least inflight + acked");
        conn.ca_state = CaState::Open;
        cc.on_state_change(pipe.now, CaState::Recovery, CaState::Open, &conn);
        cc.on_ack(pipe.now, &RateSample { losses: 0, ..rs }, &conn);
        assert!(!cc.packet_conservation);
        assert!(cc.cwnd() >= before, "{} < {before}", cc.cwnd());
    }

    /// tcp_input.c `tcp_enter_loss` (cwnd = inflight + 1 after ssthresh) and
    /// tcp_bbr.c `bbr_set_state`: an RTO clears full_bw, counts as a round
    /// end and a loss for lt sampling; the cwnd comes back after the RTO.
    #[test]
    fn rto_cuts_cwnd_to_inflight_plus_one_and_restores_it_after() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        pipe.run(&mut cc, secs(2.0), |_, _| {});
        let before = cc.cwnd();
        let mut conn = pipe.conn();
        conn.in_flight = 0;
        conn.ca_state = CaState::Loss;
        cc.on_state_change(pipe.now, CaState::Open, CaState::Loss, &conn);
        assert_eq!(cc.cwnd(), 1);
        assert_eq!(cc.prior_cwnd, before);
        assert_eq!(cc.full_bw.full_bw, 0);
        assert!(cc.lt.is_sampling, "the RTO starts a long-term interval");
        assert_eq!(cc.prev_ca_state, CaState::Loss);
        conn.ca_state = CaState::Open;
        conn.delivered += 1;
        let rs = RateSample {
            prior_delivered: conn.delivered - 1,
            delivered: 1,
            interval_us: 20_000,
            rtt_us: 20_000,
            acked_sacked: 1,
            snd_una_advanced: true,
            ..Default::default()
        };
        cc.on_state_change(pipe.now, CaState::Loss, CaState::Open, &conn);
        cc.on_ack(pipe.now, &rs, &conn);
        assert!(cc.cwnd() >= before.min(cc.inflight(cc.bw(), cc.cwnd_gain)));
        assert_eq!(cc.prev_ca_state, CaState::Open);
    }

    /// tcp_bbr.c `bbr_cwnd_event`: restarting after idle while app-limited
    /// in PROBE_BW paces at 1.0 x bw, and suppresses PROBE_RTT entry until
    /// data is delivered.
    #[test]
    fn idle_restart_paces_at_the_estimated_bw() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        pipe.run(&mut cc, secs(2.0), |_, _| {});
        while cc.cycle_idx != 0 {
            pipe.run(&mut cc, pipe.now + Dur::from_ms(1), |_, _| {});
        }
        let mut conn = pipe.conn();
        cc.on_event(pipe.now, CcEvent::TxStart, &conn);
        assert!(!cc.idle_restart, "only when app-limited");
        conn.app_limited = true;
        cc.on_event(pipe.now, CcEvent::TxStart, &conn);
        assert!(cc.idle_restart);
        let expect = rate_bytes_per_sec(cc.bw(), BBR_UNIT, 1448, 1);
        assert_eq!(cc.pacing.bytes_per_sec, expect);
    }

    /// Linux's constants: `bbr_high_gain` 739, `bbr_drain_gain` 88,
    /// `bbr_cwnd_gain` 512, `bbr_pacing_gain[]`, `bbr_full_bw_thresh` 320;
    /// the initial pacing rate is high_gain x init_cwnd / srtt
    /// (`bbr_init_pacing_rate_from_rtt`); TSO policy `bbr_min_tso_segs`.
    #[test]
    fn defaults_are_linux_constants() {
        let p = Params::new(&Bbr1Config::default());
        assert_eq!((p.high_gain, p.drain_gain, p.cwnd_gain), (739, 88, 512));
        assert_eq!(p.cycle_gains, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!((p.full_bw_thresh, p.extra_acked_gain), (320, 256));
        let pipe = Pipe::new(PipeConfig::new(100, 20));
        let c = flow(&pipe, 1);
        let bw = 10 * BW_UNIT / 20_000;
        assert_eq!(
            c.pacing_rate(),
            Rate::from_bytes_per_sec(rate_bytes_per_sec(bw, 739, 1448, 1))
        );
        assert_eq!(c.tso_policy(), TsoPolicy::Autosize { min_segs: 2 });
        assert!(c.wants_pacing());
        assert_eq!(c.phase(), "STARTUP");
        assert_eq!(c.ssthresh(), u32::MAX);
    }

    /// Columns named with units, in a fixed order.
    #[test]
    fn state_columns_have_units_in_their_names() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut cc = flow(&pipe, 1);
        pipe.run(&mut cc, secs(1.0), |_, _| {});
        let mut st = CcState::default();
        cc.write_state(&mut st);
        let names: Vec<&str> = st.entries.iter().map(|e| e.0).collect();
        assert_eq!(
            names,
            [
                "bbr_mode",
                "bbr_phase",
                "bbr_cycle_idx",
                "bbr_pacing_gain",
                "bbr_cwnd_gain",
                "bbr_max_bw_mbps",
                "bbr_bw_mbps",
                "bbr_min_rtt_ms",
                "bbr_round_count",
                "bbr_full_bw_reached",
                "bbr_extra_acked_pkts",
                "bbr_lt_use_bw",
                "bbr_bdp_pkts",
            ]
        );
        let get = |n: &str| st.entries.iter().find(|e| e.0 == n).unwrap().1;
        use crate::cc::StateValue::{Label, Num};
        assert_eq!(get("bbr_mode"), Label("PROBE_BW"));
        assert_eq!(get("bbr_min_rtt_ms"), Num(20.0));
        assert_eq!(get("bbr_full_bw_reached"), Num(1.0));
        let Num(bw) = get("bbr_max_bw_mbps") else {
            panic!()
        };
        assert!((bw - 100.0).abs() < 0.5, "{bw}");
        // Not in lt mode: the bandwidth in use is the max filter's.
        assert_eq!(get("bbr_bw_mbps"), Num(bw));
        assert_eq!(get("bbr_bdp_pkts"), Num(173.0));
    }

    /// Config errors name the parameter and its range.
    #[test]
    fn config_errors_name_the_parameter() {
        let err = |v: serde_json::Value| parse_params::<Bbr1Config>(&v).unwrap_err();
        assert_eq!(
            err(serde_json::json!({"cwnd_gain": 0.5})),
            "cwnd_gain must be in 1..=16, got 0.5"
        );
        let e = err(serde_json::json!({"min_rtt_win": "0s"}));
        assert_eq!(e, "min_rtt_win must be in 1ms..=3600s, got 0ns");
        let e = err(serde_json::json!({"min_rtt_win": "10"}));
        assert!(
            e.starts_with("min_rtt_win: ") && e.contains("no unit"),
            "{e}"
        );
        let e = err(serde_json::json!({"extra_acked_win_rtts": 40}));
        assert!(
            e.starts_with("extra_acked_win_rtts must be in 1..=31"),
            "{e}"
        );
        let e = err(serde_json::json!({"high_gian": 3}));
        assert!(e.contains("unknown field `high_gian`"), "{e}");
        let c: Bbr1Config =
            parse_params(&serde_json::json!({"probe_rtt_duration": "0s", "lt_bw": false})).unwrap();
        assert_eq!(c.probe_rtt_duration, Dur::ZERO);
        assert_eq!(
            parse_params::<Bbr1Config>(&serde_json::Value::Null).unwrap(),
            Bbr1Config::default()
        );
    }
}
