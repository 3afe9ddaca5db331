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

use super::common::{
    bdp, bw_sample, bw_to_rate, check_dur, check_range, gain_f64, gain_q8, min_tso_segs,
    packets_in_net_at_edt, saved_cwnd, tso_segs_goal, AckAggregation, FullBwDetector, MinRttFilter,
    MinRttTies, PacingRate, ProbeRttHold, Quantization, RoundCounter, Rounding, BBR_SCALE,
    BBR_UNIT, GSO_LEGACY_MAX_SIZE, PACING_SHIFT,
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

    /// `bbr_tso_segs_generic` with the legacy 64 KB GSO size: about 1 ms at
    /// the pacing rate plus 64 KB >> (min_rtt / 512 us); at least 2 segments
    /// (v3: sysctl tcp_min_tso_segs) or 1 below 1.2 Mbit/s (v2alpha
    /// `bbr_min_tso_segs`).
    fn tso_segs_goal(&self) -> u32 {
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
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
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

    /// `bbr_ack_aggregation_cwnd`: also in STARTUP (v2alpha only with
    /// `extra_acked_in_startup`), capped at bw x 100 ms.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || (!self.full_bw.reached && !self.p.extra_acked_in_startup)
        {
            return 0;
        }
        self.ack_agg
            .cwnd_allowance(self.bw(), self.p.extra_acked_gain)
    }

    /// `bbr_probe_rtt_cwnd`: half the BDP, at least min_cwnd.
    fn probe_rtt_cwnd(&self) -> u32 {
        if self.p.probe_rtt_cwnd_gain == 0 {
            return self.p.min_cwnd;
        }
        self.p
            .min_cwnd
            .max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_target_inflight`: the BDP, unless congestion cut cwnd.
    fn target_inflight(&self) -> u32 {
        self.inflight(self.bw(), BBR_UNIT).min(self.cwnd)
    }

    /// `bbr_is_probing_bandwidth`.
    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, now: Time, interval_us: u64) -> bool {
        now.us() > self.cycle_mstamp.us() + interval_us
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = saved_cwnd(
            self.prior_cwnd,
            self.cwnd,
            self.prev_ca_state,
            self.mode == Mode::ProbeRtt,
        );
    }

    fn set_pacing_rate(&mut self, bw: u64, gain: u32, conn: &Conn) {
        self.pacing
            .set(bw, gain, self.full_bw.reached, self.cwnd, conn.srtt);
    }

    /// `bbr_set_cwnd`: no packet conservation in v2/v3.
    fn set_cwnd(&mut self, acked: u32, bw: u64, gain: u32) {
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
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = (scale(self.inflight_hi as u64, self.p.headroom) as u32).max(1);
        (self.inflight_hi as i64 - headroom as i64).max(self.p.min_cwnd as i64) as u32
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    fn bound_cwnd_for_inflight_model(&mut self) {
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

    // --------------------------------------------------------------
    // Congestion signals and the lower bounds.

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, init_bw: bool) {
        if init_bw && self.bw_lo == BW_UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = self.cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds` (v3) / `bbr2_adapt_lower_bounds`: once per
    /// loss round while not probing, cut inflight_lo by the ECN alpha and
    /// both bounds by beta on loss, never below this round's delivery.
    fn adapt_lower_bounds(&mut self) {
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

    /// `bbr_reset_lower_bounds`.
    fn reset_lower_bounds(&mut self) {
        self.bw_lo = BW_UNSET;
        self.inflight_lo = UNSET;
    }

    /// `bbr_reset_congestion_signals`.
    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// v3 `bbr_update_latest_delivery_signals`: the per-round max rate and
    /// volume of delivery, and the loss-round marker.
    fn update_latest_delivery_signals(&mut self, rs: &RateSample, conn: &Conn, sample_bw: u64) {
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
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample, sample_bw: u64) {
        if self.loss_round_start && !rs.is_acking_tlp_retrans_seq {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }

    /// `bbr_update_congestion_signals` (v3) / `bbr2_update_congestion_signals`
    /// (which also keeps the latest-delivery filters and the loss round).
    fn update_congestion_signals(&mut self, rs: &RateSample, conn: &Conn, sample_bw: u64) {
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

    /// `bbr_update_ecn_alpha` / `bbr2_update_ecn_alpha`, at round starts:
    /// eligibility, the CE-ratio EWMA, and the STARTUP ECN exit.
    fn update_ecn_alpha(&mut self, conn: &Conn) {
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

    /// `bbr_check_ecn_too_high_in_startup`.
    fn check_ecn_too_high_in_startup(&mut self, ce_ratio: u32) {
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
    fn check_loss_too_high_in_startup(&mut self, rs: &RateSample, conn: &Conn) {
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
    fn reset_full_bw(&mut self) {
        self.full_bw.full_bw = 0;
        self.full_bw.cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached`. v3: on every non-app-limited ACK a
    /// sample 25 % above full_bw restarts the count, each round start
    /// without one counts. v2alpha: v1's check of max_bw once per round.
    fn check_full_bw_reached(&mut self, rs: &RateSample, sample_bw: u64) {
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
    fn check_drain(&mut self, conn: &Conn, now: Time) {
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

    // --------------------------------------------------------------
    // Upper bounds and the PROBE_BW phase machine.

    /// `bbr_is_inflight_too_high`: loss above loss_thresh of tx_in_flight,
    /// or (ECN-eligible) CE above ecn_thresh of delivered (v3 `>`, v2alpha `>=`).
    fn is_inflight_too_high(
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
    fn handle_inflight_too_high(
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

    /// `bbr_raise_inflight_hi_slope`: each UP round doubles the growth.
    fn raise_inflight_hi_slope(&mut self) {
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
    fn adapt_upper_bounds(&mut self, rs: &RateSample, conn: &Conn, now: Time) -> bool {
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

    /// `bbr_pick_probe_wait`: 0 or 1 extra rounds, and 2 s + U[0, 1 s).
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(self.p.bw_probe_rand_rounds);
        self.probe_wait_us =
            self.p.bw_probe_base_us + self.rng.below(self.p.bw_probe_rand_us) as u64;
    }

    /// `bbr_set_cycle_idx`.
    fn set_phase(&mut self, phase: Phase) {
        self.phase = phase;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_refill`: drop the lower bounds and send at bw for
    /// a round to refill the pipe.
    fn start_bw_probe_refill(&mut self, bw_probe_up_rounds: u32, conn: &Conn) {
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
    fn start_bw_probe_up(&mut self, conn: &Conn, now: Time, sample_bw: u64) {
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
    fn start_bw_probe_down(&mut self, conn: &Conn, now: Time) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_mstamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.rounds.restart(conn.delivered);
        self.set_phase(Phase::Down);
    }

    /// `bbr_start_bw_probe_cruise`.
    fn start_bw_probe_cruise(&mut self) {
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
    fn update_cycle_phase(&mut self, rs: &RateSample, conn: &Conn, now: Time, sample_bw: u64) {
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

    // --------------------------------------------------------------
    // min_rtt and PROBE_RTT.

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
    fn check_probe_rtt_done(&mut self, conn: &Conn, now: Time) {
        if !self.probe_rtt.done(now) {
            return;
        }
        self.probe_rtt_min.stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(conn, now);
    }

    /// `bbr_update_min_rtt`: the 5 s probe_rtt_min and 10 s min_rtt
    /// filters, PROBE_RTT entry, hold and exit.
    fn update_min_rtt(&mut self, rs: &RateSample, conn: &Conn, now: Time, out: &mut AckOutcome) {
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

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
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

    /// `bbr_update_model` / `bbr2_update_model`.
    fn update_model(
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
    fn run_fast_path(
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

    /// `bbr_note_loss`: a loss marks this round as a loss round.
    fn note_loss(&mut self, conn: &Conn) {
        if !self.loss_in_round {
            self.loss_round_delivered = conn.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// The ssthresh hook on entering Recovery/CWR/Loss (`bbr_ssthresh`,
    /// without the undo snapshot).
    fn on_cwnd_reduction(&mut self) {
        self.save_cwnd();
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

    fn v3(pipe: &Pipe, seed: u64) -> Bbr3 {
        Bbr3::new(&Bbr3Config::default(), &pipe.init(seed))
    }

    fn v2(pipe: &Pipe, seed: u64) -> Bbr3 {
        Bbr3::new(&Bbr2Config::default(), &pipe.init(seed))
    }

    fn mbps(c: &Bbr3, bw: u64) -> f64 {
        bw_to_rate(bw, c.mss).mbps_f64()
    }

    /// A flow as it is after STARTUP on a 100 Mbit/s, 20 ms pipe, cruising.
    fn cruising(mut c: Bbr3, conn: &Conn) -> Bbr3 {
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
