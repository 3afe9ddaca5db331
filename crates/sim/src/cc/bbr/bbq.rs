//! BBQ (Ma, Jiang, Wang, Li, "Towards RTT Fairness of Congestion-Based
//! Congestion Control", 2017; cc-facts §10): BBRv1 whose probing phase
//! (pacing gain 1.25) lasts rho = min(min_rtt, alpha) instead of min_rtt
//! while a persistent queue is seen, so that a long-RTT flow no longer
//! injects more excess data per probe than a short-RTT one. Everything
//! else, including the 0.75 and 1.0 phases, is BBRv1 ([`super::v1`]).
//!
//! Choices the paper leaves open, made here:
//! * The queue test compares the latest RTT sample (`rs.rtt_us` of the most
//!   recent ACK that carried one, not srtt) with min_rtt: a queue persists
//!   while latest >= (1 + beta) x min_rtt. A smoothed RTT would lag the
//!   drain that makes the pipe "under-utilized" again, which is exactly when
//!   the paper wants BBRv1's behaviour back.
//! * While the probe is shortened it ends after rho, whether or not
//!   inflight has reached 1.25 x BDP and whether or not there was a loss.
//!   BBRv1 also waits for inflight >= 1.25 x BDP; at a pacing gain of 1.25
//!   that takes about one min_rtt, so keeping the condition would undo the
//!   cap for any flow whose standing queue is below a quarter of its
//!   min_rtt, i.e. for the long-RTT flow the fix is aimed at.
//! * Without a queue (or before any RTT sample) the probe follows v1 in full.

use super::common::MIN_RTT_UNSET;
use crate::cc::CcState;

/// How long PROBE_BW's probing phase (pacing gain above 1) lasts: the hook
/// BBQ changes in the v1 state machine.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeLength {
    /// BBRv1 (`bbr_is_next_cycle_phase`): at least min_rtt, and until
    /// inflight reaches pacing_gain x BDP or a loss.
    MinRtt,
    /// BBQ: exactly min(min_rtt, alpha) while latest RTT >= (1 + beta) x min_rtt.
    Bbq { alpha_us: u64, beta: f64 },
}

impl ProbeLength {
    /// BBQ's shortened probe length in microseconds, or `None` when v1's
    /// rule applies.
    pub fn shortened_us(&self, min_rtt_us: u32, latest_rtt_us: Option<u32>) -> Option<u64> {
        match *self {
            ProbeLength::MinRtt => None,
            ProbeLength::Bbq { alpha_us, beta } => {
                if queue_persists(beta, min_rtt_us, latest_rtt_us) {
                    Some((min_rtt_us as u64).min(alpha_us))
                } else {
                    None
                }
            }
        }
    }

    /// BBQ reports its queue test as `bbq_queue` (0/1); v1 adds nothing.
    pub fn write_state(&self, out: &mut CcState, min_rtt_us: u32, latest_rtt_us: Option<u32>) {
        if let ProbeLength::Bbq { beta, .. } = *self {
            let q = queue_persists(beta, min_rtt_us, latest_rtt_us);
            out.num("bbq_queue", q as u8 as f64);
        }
    }
}

/// The paper's pipe-full test: the latest RTT is at least (1 + beta) x min_rtt.
fn queue_persists(beta: f64, min_rtt_us: u32, latest_rtt_us: Option<u32>) -> bool {
    match latest_rtt_us {
        Some(rtt) if min_rtt_us != MIN_RTT_UNSET => rtt as f64 >= (1.0 + beta) * min_rtt_us as f64,
        _ => false,
    }
}
