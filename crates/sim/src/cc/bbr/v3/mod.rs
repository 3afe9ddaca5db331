//! BBRv3 as google/bbr branch v3 `net/ipv4/tcp_bbr.c` (commit 001a430b,
//! `BBR_VERSION 3`) and BBRv2-alpha as google/bbr `net/ipv4/tcp_bbr2.c`
//! (commit 8d11b540), cc-facts §6, §7, §9. Both are one state machine here:
//! [`Version`] selects the documented v2alpha → v3 behaviour differences
//! (cc-facts §7 items 1-14), and the numeric knobs are parameters whose
//! defaults depend on the version ([`BbrConfig::for_version`]).
//!
//! The model: a bandwidth upper bound `bw_hi` (max over the current and the
//! previous PROBE_BW cycle), short-term lower bounds `bw_lo`/`inflight_lo`
//! cut once per loss round while not probing, and a long-term volume bound
//! `inflight_hi` that loss (> 2 %) or ECN (> 50 % CE) while probing cuts and
//! that grows with a doubling slope in PROBE_BW:UP. PROBE_BW cycles DOWN →
//! CRUISE → (wall clock 2-3 s, or Reno-scale rounds) REFILL → UP → DOWN.
//! PROBE_RTT comes every 5 s and holds cwnd at half the BDP for 200 ms and a
//! round.
//!
//! Per ACK ([`Bbr3::on_ack`] = `bbr_main`), in Linux's order (cc-facts §9):
//! round start (and then ECN alpha), ECN-in-round, bandwidth sample, v3's
//! latest-delivery signals, the optional fast path, the model (congestion
//! signals and lower bounds, ACK aggregation, STARTUP loss exit, full-bw
//! check, DRAIN, PROBE_BW phase machine with upper bounds, min_rtt and
//! PROBE_RTT), gains, pacing rate, cwnd, the inflight-model bound, then v3's
//! advance of the latest-delivery signals and the per-cycle loss/ECN flags.
//!
//! Differences from the kernel, all deliberate:
//! * Timers Linux keeps in jiffies (`min_rtt_stamp`, `probe_rtt_min_stamp`,
//!   `probe_rtt_done_stamp`) use the simulator's nanosecond clock.
//! * `sk_max_pacing_rate` and `snd_cwnd_clamp` are left to the TCP core.
//! * Undo (`bbr_undo_cwnd` and the `undo_*` fields saved by `bbr_ssthresh`)
//!   is not modelled: the simulated TCP core never undoes a recovery.
//! * PLB (protective load balancing, v3 only) is not modelled: the dumbbell
//!   has a single path, so a rehash could not change anything; v3's
//!   `want_ecn_alpha` therefore reduces to `ecn_eligible`.
//! * The receiver-side ECN hooks (`CA_EVENT_ECN_IS_CE`/`NO_CE` with
//!   `precise_ece_ack`, `fast_ack_mode`) shape the ACKs BBR *sends* as a
//!   receiver; the simulated receiver has its own ACK policy, so they are
//!   ignored here.
//! * v3's `is_acking_tlp_retrans_seq` comes from the TCP core, which does
//!   not set it (it is always false); the TLP-repair event itself
//!   (`CA_EVENT_TLP_RECOVERY`) is modelled.
//! * Linux's bit fields (2-bit `full_bw_cnt`, `startup_ecn_rounds`, 16-bit
//!   `extra_acked`) are plain integers; they only differ for parameter
//!   values the kernel cannot express.
//! * `bbr_rate_bytes_per_sec`'s floor of 1 byte/s only matters for a zero
//!   bandwidth estimate, when the rate is never lowered anyway (before the
//!   pipe is full); the shared [`PacingRate`] does not apply it.
//!
//! The code is split along BBR's parts: `model.rs` (the bandwidth filters,
//! the latest-delivery signals and loss rounds, inflight_hi's growth, ACK
//! aggregation, `bbr_update_model` and the fast path), `states.rs` (STARTUP's
//! exits, DRAIN, min_rtt and PROBE_RTT), `probe_bw.rs` (the DOWN → CRUISE →
//! REFILL → UP cycle and when to probe), `loss.rs` (inflight too high, the
//! loss- and ECN-driven bounds, ECN alpha) and `control.rs` (BDP, TSO goal,
//! pacing rate, cwnd, gains). This file keeps the parameters, the state, the
//! constructor and the `CongestionControl` hooks.

mod control;
mod loss;
mod model;
mod probe_bw;
mod states;

pub use loss::inflight_hi_from_lost;

use super::common::{
    bw_sample, bw_to_rate, check_dur, check_range, gain_f64, gain_q8, AckAggregation,
    FullBwDetector, MinRttFilter, PacingRate, ProbeRttHold, RoundCounter, Rounding, BBR_SCALE,
    BBR_UNIT,
};
use super::v1::Mode;
use crate::cc::{
    AckOutcome, CaState, CcEvent, CcInit, CcParams, CcState, CongestionControl, Conn, LostPacket,
    RateSample, TsoPolicy,
};
use crate::rng::Rng;
use crate::units::{Dur, Rate, Time};
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

/// `bbr_pacing_margin_percent`: pace 1 % below bw x gain.
const PACING_MARGIN_PERCENT: u32 = 1;
/// `tso_rtt_shift`: halve the min_rtt burst bonus every 2^9 us of min_rtt.
const TSO_RTT_SHIFT: u32 = 9;
/// v3 takes its minimum burst from sysctl `tcp_min_tso_segs` (default 2).
const TCP_MIN_TSO_SEGS: u32 = 2;
/// `~0U`: `inflight_lo`, `inflight_hi`, `bw_probe_up_cnt` unset.
const UNSET: u32 = u32::MAX;
/// `bw_lo` unset (`~0U` in Linux's 32-bit field).
const BW_UNSET: u64 = u64::MAX;
/// `rounds_since_probe` is an 8-bit field that saturates.
const ROUNDS_SINCE_PROBE_MAX: u32 = 0xFF;
/// `loss_events_in_round` is a 4-bit saturating counter.
const LOSS_EVENTS_MAX: u32 = 0xF;
/// `bbr_raise_inflight_hi_slope` caps the doubling at 2^30.
const PROBE_UP_ROUNDS_MAX: u32 = 30;

/// Which kernel module the state machine follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// google/bbr v2alpha `tcp_bbr2.c`, congestion-ops name "bbr2".
    V2Alpha,
    /// google/bbr v3 `tcp_bbr.c`, `BBR_VERSION 3`.
    V3,
}

/// Type-level choice of the version, so that `bbr2` and `bbr3` get
/// different parameter defaults from one config type.
pub trait Flavour: Clone + std::fmt::Debug + PartialEq + Default {
    const VERSION: Version;
    /// The name in `cc = "..."` and where the rules come from (`cc::Algorithm`).
    const NAME: &'static str;
    const REFERENCE: &'static str;
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct V2AlphaFlavour;
impl Flavour for V2AlphaFlavour {
    const VERSION: Version = Version::V2Alpha;
    const NAME: &'static str = "bbr2";
    const REFERENCE: &'static str = "google/bbr v2alpha branch, tcp_bbr2.c";
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct V3Flavour;
impl Flavour for V3Flavour {
    const VERSION: Version = Version::V3;
    const NAME: &'static str = "bbr3";
    const REFERENCE: &'static str = "google/bbr v3 branch, tcp_bbr.c; draft-ietf-ccwg-bbr";
}

/// Parameters of `cc = "bbr2"`.
pub type Bbr2Config = BbrConfig<V2AlphaFlavour>;
/// Parameters of `cc = "bbr3"`.
pub type Bbr3Config = BbrConfig<V3Flavour>;

/// Parameters of `cc = "bbr2"` and `cc = "bbr3"`. Gains and fractions are
/// real numbers converted to Q8 by truncation, as the kernel's integer
/// constant expressions do (0.91 becomes 232/256, 2 % becomes 5/256); the
/// defaults are written as the exact Q8 values Linux ends up with.
/// Fractions also accept percentages ("2%"). Knobs marked "v2alpha only"
/// or "v3 only" are read by that version alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, bound = "")]
pub struct BbrConfig<F: Flavour> {
    /// STARTUP pacing gain (v3 `bbr_startup_pacing_gain` 710/256 = 4 ln 2 + 1/256;
    /// v2alpha `bbr_high_gain` 739/256 = 2/ln 2 + 1/256).
    pub startup_pacing_gain: f64,
    /// STARTUP and DRAIN cwnd gain (v3 2.0; v2alpha 739/256).
    pub startup_cwnd_gain: f64,
    /// DRAIN pacing gain (`bbr_drain_gain` = 88/256).
    pub drain_gain: f64,
    /// PROBE_BW cwnd gain outside UP (`bbr_cwnd_gain` = 2.0).
    pub cwnd_gain: f64,
    /// PROBE_BW:UP pacing gain (1.25).
    pub probe_up_gain: f64,
    /// PROBE_BW:DOWN pacing gain (v3 232/256 = 0.90625; v2alpha 0.75).
    pub probe_down_gain: f64,
    /// PROBE_BW:CRUISE pacing gain (1.0).
    pub probe_cruise_gain: f64,
    /// PROBE_BW:REFILL pacing gain (1.0).
    pub probe_refill_gain: f64,
    /// PROBE_BW:UP cwnd gain (v3 2.25 = cwnd_gain + `bbr_bw_probe_cwnd_gain`/4;
    /// v2alpha 2.0).
    pub probe_up_cwnd_gain: f64,
    /// PROBE_RTT cwnd as a fraction of the BDP (`bbr_probe_rtt_cwnd_gain` = 0.5;
    /// 0 means `min_cwnd`).
    pub probe_rtt_cwnd_gain: f64,
    /// Window of the min_rtt filter (`bbr_min_rtt_win_sec` = 10 s).
    #[serde(with = "crate::units::dur_text")]
    pub min_rtt_win: Dur,
    /// Window of the probe_rtt_min filter, i.e. the PROBE_RTT period
    /// (`bbr_probe_rtt_win_ms` = 5 s); at most `min_rtt_win`.
    #[serde(with = "crate::units::dur_text")]
    pub probe_rtt_interval: Dur,
    /// Time PROBE_RTT holds the low cwnd (`bbr_probe_rtt_mode_ms` = 200 ms);
    /// "0s" disables PROBE_RTT as in Linux.
    #[serde(with = "crate::units::dur_text")]
    pub probe_rtt_duration: Dur,
    /// Minimum cwnd, packets (`bbr_cwnd_min_target` = 4).
    pub min_cwnd: u32,
    /// Growth that counts as "still growing" for the full-bw detector (1.25).
    pub full_bw_thresh: f64,
    /// Rounds without such growth that mean the pipe is full (3).
    pub full_bw_cnt: u32,
    /// STARTUP exits on loss after this many loss events in a recovery
    /// round (v3 6; v2alpha 8; 0 disables).
    pub full_loss_cnt: u32,
    /// STARTUP exits after this many rounds with CE ratio >= ecn_thresh (2; 0 disables).
    pub full_ecn_cnt: u32,
    /// Loss rate that means inflight is too high (`bbr_loss_thresh` = 5/256).
    #[serde(with = "super::fraction")]
    pub loss_thresh: f64,
    /// Multiplicative cut on loss (`bbr_beta` = 76/256: bounds go to 180/256).
    #[serde(with = "super::fraction")]
    pub beta: f64,
    /// Headroom left below inflight_hi in CRUISE and PROBE_RTT
    /// (`bbr_inflight_headroom` = 38/256).
    #[serde(with = "super::fraction")]
    pub headroom: f64,
    /// Add the ACK-aggregation allowance (extra_acked) to the cwnd target.
    pub extra_acked: bool,
    /// Gain on that allowance (`bbr_extra_acked_gain` = 1.0).
    pub extra_acked_gain: f64,
    /// Length of one of the two extra_acked slots after STARTUP, rounds (5).
    pub extra_acked_win_rtts: u32,
    /// Use extra_acked in STARTUP too, with 1-round slots (v2alpha
    /// `bbr_extra_acked_in_startup` = 1; v3 always does).
    pub extra_acked_in_startup: bool,
    /// Budget cwnd for offload bursts: at least 3 TSO goals
    /// (`bbr_quantization_budget`); off keeps only the min_cwnd floor and
    /// the +2 in UP.
    pub offload_budget: bool,
    /// Sender-side ECN logic (v2alpha module parameter `ecn_enable`,
    /// default off; v3 on, and then also needs ECN negotiated and `ecn_low`).
    #[serde(alias = "ecn_enable")]
    pub ecn: bool,
    /// v3 only: the route is flagged as a low-latency (shallow-threshold)
    /// ECN route (`TCP_ECN_LOW`).
    pub ecn_low: bool,
    /// Send ECT(1), the L4S identifier (RFC 9331), instead of ECT(0), so an
    /// L4S queue (DualPI2) marks this flow with its shallow step: BBRv3's
    /// L4S mode. Written into the normalized scenario only when on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ect1: bool,
    /// ECN logic only while min_rtt <= this (`bbr_ecn_max_rtt_us` = 5 ms; "0s": any RTT).
    #[serde(with = "crate::units::dur_text")]
    pub ecn_max_rtt: Dur,
    /// EWMA gain of ecn_alpha (1/16).
    #[serde(with = "super::fraction")]
    pub ecn_alpha_gain: f64,
    /// Initial ecn_alpha (1.0).
    #[serde(with = "super::fraction")]
    pub ecn_alpha_init: f64,
    /// ECN cut of inflight_lo: 1 - alpha x factor (85/256; 0 disables ECN bounding).
    #[serde(with = "super::fraction")]
    pub ecn_factor: f64,
    /// CE ratio that means inflight is too high (0.5; 0 disables).
    #[serde(with = "super::fraction")]
    pub ecn_thresh: f64,
    /// After a cycle with ECN but no loss, re-probe starting at this
    /// fraction of inflight_hi (v3 0.5; v2alpha 0 = off).
    pub ecn_reprobe_gain: f64,
    /// v3: a loss repaired by a tail-loss probe counts as a loss
    /// (`bbr_loss_probe_recovery`; v2alpha has no such hook).
    pub loss_probe_recovery: bool,
    /// v2alpha only: UP ends after a min_rtt once inflight reaches this x
    /// BDP (`bbr_bw_probe_pif_gain` = 1.25).
    pub bw_probe_pif_gain: f64,
    /// Reno-coexistence probe interval in rounds, as a multiple of the
    /// target inflight (`bbr_bw_probe_reno_gain` = 1.0; 0 disables).
    pub bw_probe_reno_gain: f64,
    /// At most this many rounds between probes (`bbr_bw_probe_max_rounds` = 63).
    pub bw_probe_max_rounds: u32,
    /// Random rounds added to the count (`bbr_bw_probe_rand_rounds` = 2: 0 or 1).
    pub bw_probe_rand_rounds: u32,
    /// Wall-clock wait between probes (`bbr_bw_probe_base_us` = 2 s) ...
    #[serde(with = "crate::units::dur_text")]
    pub bw_probe_base: Dur,
    /// ... plus uniform [0, this) (`bbr_bw_probe_rand_us` = 1 s).
    #[serde(with = "crate::units::dur_text")]
    pub bw_probe_rand: Dur,
    /// DOWN ends only once inflight is at most one BDP (v2alpha
    /// `bbr_drain_to_target`; v3 always); off also ends it after a min_rtt.
    pub drain_to_target: bool,
    /// v2alpha: add this to inflight_hi when entering REFILL (`bbr_refill_add_inc` = 0).
    pub refill_add_inc: u32,
    /// Skip model updates on app-limited ACKs that cannot change it
    /// (`bbr_fast_path`); changes when pacing and cwnd are recomputed.
    pub fast_path: bool,
    #[serde(skip)]
    flavour: PhantomData<F>,
}

/// `x / 256` as a real number: the default of a Q8 constant.
fn q8(x: u32) -> f64 {
    x as f64 / BBR_UNIT as f64
}

impl<F: Flavour> BbrConfig<F> {
    /// Every default of a version, in one place each.
    pub fn for_version(v: Version) -> Self {
        // google/bbr v3 tcp_bbr.c constants (cc-facts §6.2).
        let v3 = BbrConfig {
            startup_pacing_gain: q8(BBR_UNIT * 277 / 100 + 1),
            startup_cwnd_gain: q8(2 * BBR_UNIT),
            drain_gain: q8(BBR_UNIT * 1000 / 2885),
            cwnd_gain: q8(2 * BBR_UNIT),
            probe_up_gain: q8(BBR_UNIT * 5 / 4),
            probe_down_gain: q8(BBR_UNIT * 91 / 100),
            probe_cruise_gain: 1.0,
            probe_refill_gain: 1.0,
            probe_up_cwnd_gain: q8(2 * BBR_UNIT + BBR_UNIT / 4),
            probe_rtt_cwnd_gain: q8(BBR_UNIT / 2),
            min_rtt_win: Dur::from_secs(10),
            probe_rtt_interval: Dur::from_ms(5000),
            probe_rtt_duration: Dur::from_ms(200),
            min_cwnd: 4,
            full_bw_thresh: q8(BBR_UNIT * 5 / 4),
            full_bw_cnt: 3,
            full_loss_cnt: 6,
            full_ecn_cnt: 2,
            loss_thresh: q8(BBR_UNIT * 2 / 100),
            beta: q8(BBR_UNIT * 30 / 100),
            headroom: q8(BBR_UNIT * 15 / 100),
            extra_acked: true,
            extra_acked_gain: 1.0,
            extra_acked_win_rtts: 5,
            extra_acked_in_startup: true,
            offload_budget: true,
            ecn: true,
            ecn_low: true,
            ect1: false,
            ecn_max_rtt: Dur::from_us(5000),
            ecn_alpha_gain: q8(BBR_UNIT / 16),
            ecn_alpha_init: 1.0,
            ecn_factor: q8(BBR_UNIT / 3),
            ecn_thresh: q8(BBR_UNIT / 2),
            ecn_reprobe_gain: q8(BBR_UNIT / 2),
            loss_probe_recovery: true,
            bw_probe_pif_gain: q8(BBR_UNIT * 5 / 4),
            bw_probe_reno_gain: 1.0,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base: Dur::from_secs(2),
            bw_probe_rand: Dur::from_secs(1),
            drain_to_target: true,
            refill_add_inc: 0,
            fast_path: true,
            flavour: PhantomData,
        };
        match v {
            Version::V3 => v3,
            // google/bbr v2alpha tcp_bbr2.c module-parameter defaults where
            // they differ from v3 (cc-facts §7 knob table).
            Version::V2Alpha => BbrConfig {
                startup_pacing_gain: q8(BBR_UNIT * 2885 / 1000 + 1),
                startup_cwnd_gain: q8(BBR_UNIT * 2885 / 1000 + 1),
                probe_down_gain: q8(BBR_UNIT * 3 / 4),
                probe_up_cwnd_gain: q8(2 * BBR_UNIT),
                full_loss_cnt: 8,
                ecn: false,
                ecn_reprobe_gain: 0.0,
                loss_probe_recovery: false,
                ..v3
            },
        }
    }
}

impl<F: Flavour> Default for BbrConfig<F> {
    fn default() -> Self {
        Self::for_version(F::VERSION)
    }
}

impl<F: Flavour> CcParams for BbrConfig<F> {
    fn validate(&self) -> Result<(), String> {
        check_range("startup_pacing_gain", self.startup_pacing_gain, 1.0, 8.0)?;
        check_range("startup_cwnd_gain", self.startup_cwnd_gain, 1.0, 8.0)?;
        check_range("drain_gain", self.drain_gain, 0.01, 1.0)?;
        check_range("cwnd_gain", self.cwnd_gain, 1.0, 8.0)?;
        check_range("probe_up_gain", self.probe_up_gain, 1.0, 4.0)?;
        check_range("probe_down_gain", self.probe_down_gain, 0.01, 1.0)?;
        check_range("probe_cruise_gain", self.probe_cruise_gain, 0.5, 2.0)?;
        check_range("probe_refill_gain", self.probe_refill_gain, 0.5, 2.0)?;
        check_range("probe_up_cwnd_gain", self.probe_up_cwnd_gain, 1.0, 8.0)?;
        check_range("probe_rtt_cwnd_gain", self.probe_rtt_cwnd_gain, 0.0, 1.0)?;
        let hour = Dur::from_secs(3600);
        check_dur("min_rtt_win", self.min_rtt_win, Dur::from_ms(1), hour)?;
        check_dur(
            "probe_rtt_interval",
            self.probe_rtt_interval,
            Dur::from_ms(1),
            self.min_rtt_win,
        )
        .map_err(|e| format!("{e} (it may not exceed min_rtt_win)"))?;
        let minute = Dur::from_secs(60);
        check_dur(
            "probe_rtt_duration",
            self.probe_rtt_duration,
            Dur::ZERO,
            minute,
        )?;
        check_range("min_cwnd", self.min_cwnd, 1, 100)?;
        check_range("full_bw_thresh", self.full_bw_thresh, 1.0, 4.0)?;
        check_range("full_bw_cnt", self.full_bw_cnt, 1, 100)?;
        check_range("full_loss_cnt", self.full_loss_cnt, 0, LOSS_EVENTS_MAX)?;
        check_range("full_ecn_cnt", self.full_ecn_cnt, 0, 100)?;
        check_range("loss_thresh", self.loss_thresh, 0.0, 0.99)?;
        check_range("beta", self.beta, 0.0, 1.0)?;
        check_range("headroom", self.headroom, 0.0, 0.99)?;
        check_range("extra_acked_gain", self.extra_acked_gain, 0.0, 8.0)?;
        check_range("extra_acked_win_rtts", self.extra_acked_win_rtts, 1, 31)?;
        check_dur("ecn_max_rtt", self.ecn_max_rtt, Dur::ZERO, minute)?;
        check_range("ecn_alpha_gain", self.ecn_alpha_gain, 0.0, 1.0)?;
        check_range("ecn_alpha_init", self.ecn_alpha_init, 0.0, 1.0)?;
        check_range("ecn_factor", self.ecn_factor, 0.0, 1.0)?;
        check_range("ecn_thresh", self.ecn_thresh, 0.0, 1.0)?;
        check_range("ecn_reprobe_gain", self.ecn_reprobe_gain, 0.0, 1.99)?;
        check_range("bw_probe_pif_gain", self.bw_probe_pif_gain, 1.0, 1.99)?;
        check_range("bw_probe_reno_gain", self.bw_probe_reno_gain, 0.0, 1.99)?;
        check_range("bw_probe_max_rounds", self.bw_probe_max_rounds, 1, 255)?;
        check_range("bw_probe_rand_rounds", self.bw_probe_rand_rounds, 0, 15)?;
        check_dur("bw_probe_base", self.bw_probe_base, Dur::ZERO, minute)?;
        check_dur("bw_probe_rand", self.bw_probe_rand, Dur::ZERO, minute)?;
        check_range("refill_add_inc", self.refill_add_inc, 0, 3)?;
        Ok(())
    }
}

/// PROBE_BW phases (`enum bbr_pacing_gain_phase`, the `cycle_idx` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Up => "UP",
            Phase::Down => "DOWN",
            Phase::Cruise => "CRUISE",
            Phase::Refill => "REFILL",
        }
    }
}

/// What the incoming ACKs say about the bandwidth probe (`enum bbr_ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The configuration in the units the algorithm computes with.
#[derive(Clone, Debug)]
struct Params {
    version: Version,
    startup_pacing_gain: u32,
    startup_cwnd_gain: u32,
    drain_gain: u32,
    cwnd_gain: u32,
    /// Pacing gains indexed by [`Phase`] (`bbr_pacing_gain[]`).
    probe_gains: [u32; 4],
    probe_up_cwnd_gain: u32,
    probe_rtt_cwnd_gain: u32,
    min_rtt_win: Dur,
    probe_rtt_win: Dur,
    probe_rtt_duration: Dur,
    min_cwnd: u32,
    full_bw_thresh: u32,
    full_bw_cnt: u32,
    full_loss_cnt: u32,
    full_ecn_cnt: u32,
    loss_thresh: u32,
    beta: u32,
    headroom: u32,
    /// 0 when extra_acked is off (Linux: `!bbr_extra_acked_gain`).
    extra_acked_gain: u32,
    extra_acked_win_rtts: u32,
    extra_acked_in_startup: bool,
    offload_budget: bool,
    ecn: bool,
    ecn_low: bool,
    /// 0: no RTT limit.
    ecn_max_rtt_us: u64,
    ecn_alpha_gain: u32,
    ecn_alpha_init: u32,
    ecn_factor: u32,
    ecn_thresh: u32,
    ecn_reprobe_gain: u32,
    loss_probe_recovery: bool,
    bw_probe_pif_gain: u32,
    bw_probe_reno_gain: u32,
    bw_probe_max_rounds: u32,
    bw_probe_rand_rounds: u32,
    bw_probe_base_us: u64,
    bw_probe_rand_us: u32,
    drain_to_target: bool,
    refill_add_inc: u32,
    fast_path: bool,
}

impl Params {
    fn new<F: Flavour>(c: &BbrConfig<F>) -> Self {
        let mut probe_gains = [0; 4];
        probe_gains[Phase::Up as usize] = gain_q8(c.probe_up_gain);
        probe_gains[Phase::Down as usize] = gain_q8(c.probe_down_gain);
        probe_gains[Phase::Cruise as usize] = gain_q8(c.probe_cruise_gain);
        probe_gains[Phase::Refill as usize] = gain_q8(c.probe_refill_gain);
        Params {
            version: F::VERSION,
            startup_pacing_gain: gain_q8(c.startup_pacing_gain),
            startup_cwnd_gain: gain_q8(c.startup_cwnd_gain),
            drain_gain: gain_q8(c.drain_gain),
            cwnd_gain: gain_q8(c.cwnd_gain),
            probe_gains,
            probe_up_cwnd_gain: gain_q8(c.probe_up_cwnd_gain),
            probe_rtt_cwnd_gain: gain_q8(c.probe_rtt_cwnd_gain),
            min_rtt_win: c.min_rtt_win,
            probe_rtt_win: c.probe_rtt_interval,
            probe_rtt_duration: c.probe_rtt_duration,
            min_cwnd: c.min_cwnd,
            full_bw_thresh: gain_q8(c.full_bw_thresh),
            full_bw_cnt: c.full_bw_cnt,
            full_loss_cnt: c.full_loss_cnt,
            full_ecn_cnt: c.full_ecn_cnt,
            loss_thresh: gain_q8(c.loss_thresh),
            beta: gain_q8(c.beta),
            headroom: gain_q8(c.headroom),
            extra_acked_gain: if c.extra_acked {
                gain_q8(c.extra_acked_gain)
            } else {
                0
            },
            extra_acked_win_rtts: c.extra_acked_win_rtts,
            extra_acked_in_startup: c.extra_acked_in_startup,
            offload_budget: c.offload_budget,
            ecn: c.ecn,
            ecn_low: c.ecn_low,
            ecn_max_rtt_us: c.ecn_max_rtt.us(),
            ecn_alpha_gain: gain_q8(c.ecn_alpha_gain),
            ecn_alpha_init: gain_q8(c.ecn_alpha_init),
            ecn_factor: gain_q8(c.ecn_factor),
            ecn_thresh: gain_q8(c.ecn_thresh),
            ecn_reprobe_gain: gain_q8(c.ecn_reprobe_gain),
            loss_probe_recovery: c.loss_probe_recovery,
            bw_probe_pif_gain: gain_q8(c.bw_probe_pif_gain),
            bw_probe_reno_gain: gain_q8(c.bw_probe_reno_gain),
            bw_probe_max_rounds: c.bw_probe_max_rounds,
            bw_probe_rand_rounds: c.bw_probe_rand_rounds,
            bw_probe_base_us: c.bw_probe_base.us(),
            bw_probe_rand_us: c.bw_probe_rand.us().min(u32::MAX as u64) as u32,
            drain_to_target: c.drain_to_target,
            refill_add_inc: c.refill_add_inc,
            fast_path: c.fast_path,
        }
    }
}

/// `x * gain >> BBR_SCALE` for a Q8 gain.
fn scale(x: u64, gain: u32) -> u64 {
    ((x as u128 * gain as u128) >> BBR_SCALE) as u64
}

/// A BBRv3 or BBRv2-alpha flow (`struct bbr` of either module).
pub struct Bbr3 {
    p: Params,
    rng: Rng,
    mss: u32,
    /// `init_cwnd`: the BDP before any RTT sample, and STARTUP's minimum growth.
    init_cwnd: u32,
    /// `snd_cwnd`, packets.
    cwnd: u32,
    /// `snd_ssthresh` as BBR sets it on entering DRAIN (reporting only).
    ssthresh: u32,
    pacing: PacingRate,
    mode: Mode,
    /// `cycle_idx`.
    phase: Phase,
    ack_phase: AckPhase,
    prev_ca_state: CaState,
    rounds: RoundCounter,
    /// `min_rtt_us` and `min_rtt_stamp` (10 s window).
    min_rtt: MinRttFilter,
    /// `probe_rtt_min_us` and `probe_rtt_min_stamp` (the PROBE_RTT period).
    probe_rtt_min: MinRttFilter,
    probe_rtt: ProbeRttHold,
    /// `cycle_mstamp`: start of the phase's wall clock.
    cycle_mstamp: Time,
    pacing_gain: u32,
    cwnd_gain: u32,
    try_fast_path: bool,
    idle_restart: bool,
    /// `full_bw`, `full_bw_cnt`, `full_bw_reached`.
    full_bw: FullBwDetector,
    /// v3 `full_bw_now`: the plateau detector fired (also used in UP).
    full_bw_now: bool,
    prior_cwnd: u32,
    ack_agg: AckAggregation,
    /// `bw_hi[2]`: max bw of the previous and the current PROBE_BW cycle.
    bw_hi: [u64; 2],
    bw_lo: u64,
    bw_latest: u64,
    inflight_hi: u32,
    inflight_lo: u32,
    inflight_latest: u32,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_events_in_round: u32,
    startup_ecn_rounds: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_up_rounds: u32,
    probe_wait_us: u64,
    rounds_since_probe: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    ecn_eligible: bool,
    /// EWMA of the CE fraction, Q8.
    ecn_alpha: u32,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
}

impl Bbr3 {
    /// `bbr_init` (v3) / `bbr2_init` (v2alpha).
    pub fn new<F: Flavour>(cfg: &BbrConfig<F>, init: &CcInit) -> Self {
        let p = Params::new(cfg);
        let min_rtt = MinRttFilter::from_handshake(init.srtt, init.now);
        let pacing = PacingRate::new(
            init.init_cwnd,
            init.srtt,
            init.mss,
            p.startup_pacing_gain,
            PACING_MARGIN_PERCENT,
        );
        Bbr3 {
            rng: Rng::stream(init.seed, "bbr"),
            mss: init.mss,
            init_cwnd: init.init_cwnd.min(0x7F),
            cwnd: init.init_cwnd,
            ssthresh: u32::MAX,
            pacing,
            mode: Mode::Startup,
            phase: Phase::Up,
            ack_phase: AckPhase::Init,
            prev_ca_state: CaState::Open,
            // v3 starts the round at tp->delivered, v2alpha at 0: both 0 at init.
            rounds: RoundCounter::new(0),
            min_rtt,
            probe_rtt_min: min_rtt,
            probe_rtt: ProbeRttHold::default(),
            cycle_mstamp: Time::ZERO,
            pacing_gain: p.startup_pacing_gain,
            cwnd_gain: p.startup_cwnd_gain,
            try_fast_path: false,
            idle_restart: false,
            full_bw: FullBwDetector::default(),
            full_bw_now: false,
            prior_cwnd: 0,
            ack_agg: AckAggregation::new(init.now),
            bw_hi: [0; 2],
            bw_lo: BW_UNSET,
            bw_latest: 0,
            inflight_hi: UNSET,
            inflight_lo: UNSET,
            inflight_latest: 0,
            // Start sampling loss rounds after the first flight is ACKed.
            loss_round_delivered: 1,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_events_in_round: 0,
            startup_ecn_rounds: 0,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            probe_wait_us: 0,
            rounds_since_probe: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            ecn_eligible: false,
            ecn_alpha: p.ecn_alpha_init,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            p,
        }
    }

    pub fn version(&self) -> Version {
        self.p.version
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The PROBE_BW phase (meaningful in PROBE_BW only).
    pub fn probe_bw_phase(&self) -> Phase {
        self.phase
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw.reached
    }

    /// `bbr_max_bw`: max of both bw_hi slots, BW units.
    pub fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the bandwidth the model uses, min(max_bw, bw_lo).
    pub fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }

    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt.us
    }

    /// inflight_hi, `None` while unset.
    pub fn inflight_hi(&self) -> Option<u32> {
        (self.inflight_hi != UNSET).then_some(self.inflight_hi)
    }

    /// inflight_lo, `None` while unset.
    pub fn inflight_lo(&self) -> Option<u32> {
        (self.inflight_lo != UNSET).then_some(self.inflight_lo)
    }

    /// bw_lo, `None` while unset.
    pub fn bw_lo(&self) -> Option<u64> {
        (self.bw_lo != BW_UNSET).then_some(self.bw_lo)
    }

    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    pub fn round_count(&self) -> u64 {
        self.rounds.count
    }

    fn is_v3(&self) -> bool {
        self.p.version == Version::V3
    }

    /// Label of the PROBE_BW phase, "" outside PROBE_BW.
    fn phase_label(&self) -> &'static str {
        if self.mode == Mode::ProbeBw {
            self.phase.label()
        } else {
            ""
        }
    }
}

impl CongestionControl for Bbr3 {
    /// `bbr_main` / `bbr2_main`.
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        let mut out = AckOutcome::default();
        if self
            .rounds
            .on_ack(rs.interval_us > 0, rs.prior_delivered, conn.delivered)
        {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(ROUNDS_SINCE_PROBE_MAX);
            self.update_ecn_alpha(conn);
        }
        // v3 only counts ECE once eligible; v2alpha checks eligibility at use.
        self.ecn_in_round |= rs.is_ece && (self.ecn_eligible || !self.is_v3());
        // bbr_calculate_bw_sample: rounded up, 0 without an interval.
        let sample_bw = if rs.interval_us > 0 {
            bw_sample(rs, Rounding::Up).unwrap_or(0)
        } else {
            0
        };
        if self.is_v3() {
            self.update_latest_delivery_signals(rs, conn, sample_bw);
        }
        let mut update_model = true;
        if !self.run_fast_path(&mut update_model, rs, conn, now, sample_bw, &mut out) {
            if update_model {
                self.update_model(rs, conn, now, sample_bw, &mut out);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(bw, self.pacing_gain, conn);
            self.set_cwnd(rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model();
        }
        if self.is_v3() {
            self.advance_latest_delivery_signals(rs, sample_bw);
        }
        self.prev_ca_state = conn.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
        out
    }

    /// `bbr_skb_marked_lost`: note the loss round; while probing, find the
    /// in-flight level where the loss rate crossed loss_thresh and cut
    /// inflight_hi to it.
    fn on_packet_lost(&mut self, now: Time, lost: &LostPacket, conn: &Conn) {
        self.note_loss(conn);
        if !self.bw_probe_samples || !lost.has_tx_snapshot {
            return;
        }
        let lost_since = conn.lost.saturating_sub(lost.tx_lost).min(u32::MAX as u64) as u32;
        if self.is_inflight_too_high(lost_since, lost.tx_in_flight, 0, 0) {
            let tx_in_flight = inflight_hi_from_lost(
                lost.pcount,
                lost.tx_in_flight,
                lost_since,
                self.p.loss_thresh,
            );
            self.handle_inflight_too_high(lost.is_app_limited, tx_in_flight, conn, now);
        }
    }

    /// `bbr_ssthresh` (via `tcp_init_cwnd_reduction` and `tcp_enter_loss`),
    /// the cwnd `tcp_enter_loss` sets, and `bbr_set_state`.
    fn on_state_change(&mut self, _now: Time, from: CaState, to: CaState, conn: &Conn) {
        match to {
            CaState::Recovery | CaState::Cwr
                if !matches!(from, CaState::Cwr | CaState::Recovery) =>
            {
                self.on_cwnd_reduction();
            }
            CaState::Loss => {
                if from <= CaState::Disorder {
                    self.on_cwnd_reduction();
                }
                self.cwnd = conn.in_flight + 1;
                // bbr_set_state(TCP_CA_Loss).
                self.prev_ca_state = CaState::Loss;
                match self.p.version {
                    Version::V3 => self.reset_full_bw(),
                    Version::V2Alpha => self.full_bw.full_bw = 0,
                }
                if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                    self.inflight_lo = match self.p.version {
                        Version::V3 => self.cwnd.max(self.prior_cwnd),
                        Version::V2Alpha => self.prior_cwnd,
                    };
                }
                return;
            }
            _ => {}
        }
        if self.prev_ca_state == CaState::Loss {
            // bbr_exit_loss_recovery.
            self.cwnd = self.cwnd.max(self.prior_cwnd);
            self.try_fast_path = false;
        }
    }

    /// `bbr_cwnd_event`: restart from idle; v3's TLP-repair hook
    /// (`bbr_run_loss_probe_recovery`).
    fn on_event(&mut self, now: Time, ev: CcEvent, conn: &Conn) {
        match ev {
            CcEvent::TxStart if conn.app_limited => {
                self.idle_restart = true;
                self.ack_agg.reset_epoch(now);
                match self.mode {
                    Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT, conn),
                    Mode::ProbeRtt => self.check_probe_rtt_done(conn, now),
                    _ => {}
                }
            }
            CcEvent::TlpRecovery { orig_app_limited } if self.p.loss_probe_recovery => {
                self.note_loss(conn);
                if !self.bw_probe_samples {
                    return;
                }
                // One lost segment out of the latest round's delivery.
                let tx_in_flight = self.inflight_latest.saturating_add(1);
                if self.is_inflight_too_high(1, tx_in_flight, 0, 0) {
                    self.handle_inflight_too_high(orig_app_limited, tx_in_flight, conn, now);
                }
            }
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

    /// `bbr_tso_segs`.
    fn tso_policy(&self) -> TsoPolicy {
        TsoPolicy::Fixed(self.tso_segs_goal())
    }

    fn phase(&self) -> &'static str {
        match self.mode {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeRtt => "PROBE_RTT",
            Mode::ProbeBw => match self.phase {
                Phase::Up => "PROBE_BW:UP",
                Phase::Down => "PROBE_BW:DOWN",
                Phase::Cruise => "PROBE_BW:CRUISE",
                Phase::Refill => "PROBE_BW:REFILL",
            },
        }
    }

    fn write_state(&self, out: &mut CcState) {
        let mbps = |bw: u64| bw_to_rate(bw, self.mss).mbps_f64();
        let pkts = |v: u32| if v == UNSET { f64::NAN } else { v as f64 };
        out.label("bbr_mode", self.mode.label());
        out.label("bbr_phase", self.phase_label());
        out.num("bbr_pacing_gain", gain_f64(self.pacing_gain));
        out.num("bbr_cwnd_gain", gain_f64(self.cwnd_gain));
        out.num("bbr_max_bw_mbps", mbps(self.max_bw()));
        out.num("bbr_bw_hi_mbps", mbps(self.max_bw()));
        out.num(
            "bbr_bw_lo_mbps",
            if self.bw_lo == BW_UNSET {
                f64::NAN
            } else {
                mbps(self.bw_lo)
            },
        );
        out.num("bbr_bw_mbps", mbps(self.bw()));
        out.num("bbr_inflight_hi_pkts", pkts(self.inflight_hi));
        out.num("bbr_inflight_lo_pkts", pkts(self.inflight_lo));
        out.num("bbr_min_rtt_ms", self.min_rtt.ms());
        out.num("bbr_extra_acked_pkts", self.ack_agg.extra_acked() as f64);
        out.num("bbr_round_count", self.rounds.count as f64);
        out.num("bbr_full_bw_reached", self.full_bw.reached as u8 as f64);
        out.num("bbr_ecn_alpha", gain_f64(self.ecn_alpha));
        out.num("bbr_bdp_pkts", self.bdp(self.bw(), BBR_UNIT) as f64);
    }
}

/// The registry's entry for `cc = "bbr2"` and `cc = "bbr3"` (`cc::Algorithm`).
impl<F: Flavour> crate::cc::Algorithm for BbrConfig<F> {
    const NAME: &'static str = F::NAME;
    const REFERENCE: &'static str = F::REFERENCE;
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Bbr3(Bbr3::new(self, init))
    }
    /// ECT on retransmissions with the ECN logic on (`TCP_ECN_ECT_PERMANENT`:
    /// v2alpha's `ecn_enable`; v3's `bbr_can_use_ecn`, which also needs the
    /// `ecn_low` route); every CE mark echoed.
    fn ecn(&self) -> crate::cc::EcnUse {
        let v3 = matches!(F::VERSION, Version::V3);
        crate::cc::EcnUse {
            needs: false,
            ect: if self.ect1 {
                crate::packet::Ecn::Ect1
            } else {
                crate::packet::Ecn::Ect0
            },
            ect_permanent: self.ecn && (!v3 || self.ecn_low),
            accurate_feedback: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr::common::BW_UNIT;
    use crate::cc::bbr::testpipe::{secs, Pipe, PipeConfig};
    use crate::cc::parse_params;
    use serde_json::json;

    pub(super) fn v3(pipe: &Pipe, seed: u64) -> Bbr3 {
        Bbr3::new(&Bbr3Config::default(), &pipe.init(seed))
    }

    pub(super) fn v2(pipe: &Pipe, seed: u64) -> Bbr3 {
        Bbr3::new(&Bbr2Config::default(), &pipe.init(seed))
    }

    pub(super) fn mbps(c: &Bbr3, bw: u64) -> f64 {
        bw_to_rate(bw, c.mss).mbps_f64()
    }

    /// A flow as it is after STARTUP on a 100 Mbit/s, 20 ms pipe, cruising.
    pub(super) fn cruising(mut c: Bbr3, conn: &Conn) -> Bbr3 {
        c.full_bw.reached = true;
        c.bw_hi = [100_000_000u64 * BW_UNIT / (1448 * 8 * 1_000_000), 0];
        c.min_rtt.us = 20_000;
        c.cwnd = 200;
        c.mode = Mode::ProbeBw;
        c.start_bw_probe_down(conn, Time::ZERO);
        c.start_bw_probe_cruise();
        c
    }

    /// google/bbr v3 tcp_bbr.c constants (cc-facts §6.2) and the v2alpha
    /// module-parameter defaults that differ (cc-facts §7 table), in Q8.
    #[test]
    fn defaults_are_the_kernels_q8_constants() {
        let p = Params::new(&Bbr3Config::default());
        assert_eq!(p.version, Version::V3);
        assert_eq!((p.startup_pacing_gain, p.startup_cwnd_gain), (710, 512));
        assert_eq!(
            (p.drain_gain, p.cwnd_gain, p.probe_up_cwnd_gain),
            (88, 512, 576)
        );
        assert_eq!(p.probe_gains, [320, 232, 256, 256]);
        assert_eq!((p.loss_thresh, p.beta, p.headroom), (5, 76, 38));
        assert_eq!(
            (p.ecn_factor, p.ecn_alpha_gain, p.ecn_alpha_init),
            (85, 16, 256)
        );
        assert_eq!(
            (p.ecn_thresh, p.ecn_reprobe_gain, p.probe_rtt_cwnd_gain),
            (128, 128, 128)
        );
        assert_eq!(
            (p.full_bw_thresh, p.full_bw_cnt, p.full_loss_cnt),
            (320, 3, 6)
        );
        assert_eq!((p.bw_probe_max_rounds, p.bw_probe_rand_rounds), (63, 2));
        assert_eq!(
            (p.bw_probe_base_us, p.bw_probe_rand_us),
            (2_000_000, 1_000_000)
        );
        assert_eq!(p.probe_rtt_win, Dur::from_secs(5));
        assert_eq!(p.ecn_max_rtt_us, 5000);
        assert!(p.ecn && p.ecn_low && p.loss_probe_recovery && p.fast_path);
        let q = Params::new(&Bbr2Config::default());
        assert_eq!(q.version, Version::V2Alpha);
        assert_eq!((q.startup_pacing_gain, q.startup_cwnd_gain), (739, 739));
        assert_eq!(q.probe_gains, [320, 192, 256, 256]);
        assert_eq!((q.probe_up_cwnd_gain, q.full_loss_cnt), (512, 8));
        assert_eq!(
            (q.ecn, q.ecn_reprobe_gain, q.loss_probe_recovery),
            (false, 0, false)
        );
        assert_eq!(
            (q.loss_thresh, q.beta, q.headroom, q.bw_probe_pif_gain),
            (5, 76, 38, 320)
        );
    }

    /// Parameters are validated with the parameter's name and range; real
    /// numbers truncate to Q8 like the kernel's expressions.
    #[test]
    fn parameters_are_checked_and_named() {
        let err = |v: serde_json::Value| parse_params::<Bbr3Config>(&v).unwrap_err();
        assert!(err(json!({"beta": 1.5})).contains("beta must be in 0..=1"));
        assert!(err(json!({"full_loss_cnt": 16})).contains("full_loss_cnt"));
        assert!(err(json!({"probe_rtt_interval": "11s"})).contains("may not exceed min_rtt_win"));
        assert!(err(json!({"extra_acked": 1})).contains("extra_acked"));
        assert!(err(json!({"no_such_knob": 1})).contains("no_such_knob"));
        let c: Bbr3Config = parse_params(&json!({
            "loss_thresh": "2%", "probe_down_gain": 0.91, "startup_pacing_gain": 2.77,
            "extra_acked": false, "offload_budget": false, "fast_path": false
        }))
        .unwrap();
        let p = Params::new(&c);
        assert_eq!((p.loss_thresh, p.probe_gains[1]), (5, 232));
        assert_eq!(
            p.startup_pacing_gain, 709,
            "2.77 truncates; the default is 710"
        );
        assert_eq!(p.extra_acked_gain, 0);
        assert!(!p.offload_budget && !p.fast_path);
        // v2alpha's module parameter name is accepted for `ecn`.
        let c: Bbr2Config = parse_params(&json!({"ecn_enable": true})).unwrap();
        assert!(c.ecn);
        let d = serde_json::to_value(Bbr2Config::default()).unwrap();
        assert_eq!(d["probe_down_gain"], json!(0.75));
        assert_eq!(d["ecn"], json!(false));
    }

    /// The state columns of samples.parquet, with NaN for unset bounds.
    #[test]
    fn state_columns() {
        let mut pipe = Pipe::new(PipeConfig::new(100, 20));
        let mut c = v3(&pipe, 1);
        pipe.run(&mut c, secs(1.0), |_, _| {});
        let mut s = CcState::default();
        c.write_state(&mut s);
        let names: Vec<&str> = s.entries.iter().map(|e| e.0).collect();
        for n in [
            "bbr_mode",
            "bbr_phase",
            "bbr_pacing_gain",
            "bbr_cwnd_gain",
            "bbr_max_bw_mbps",
            "bbr_bw_hi_mbps",
            "bbr_bw_lo_mbps",
            "bbr_inflight_hi_pkts",
            "bbr_inflight_lo_pkts",
            "bbr_min_rtt_ms",
            "bbr_extra_acked_pkts",
            "bbr_round_count",
            "bbr_full_bw_reached",
            "bbr_ecn_alpha",
            "bbr_bdp_pkts",
        ] {
            assert!(names.contains(&n), "{n}");
        }
        let get = |n: &str| s.entries.iter().find(|e| e.0 == n).unwrap().1;
        assert_eq!(get("bbr_mode"), crate::cc::StateValue::Label("PROBE_BW"));
        assert_eq!(get("bbr_phase"), crate::cc::StateValue::Label("CRUISE"));
        match get("bbr_inflight_hi_pkts") {
            crate::cc::StateValue::Num(v) => assert!(v.is_nan()),
            _ => panic!(),
        }
    }
}
