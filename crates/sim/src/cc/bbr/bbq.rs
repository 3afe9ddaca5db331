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

use super::common::{check_dur, check_range, MIN_RTT_UNSET};
use super::v1::{Bbr1, Bbr1Config, ProbeLength};
use crate::cc::{CcInit, CcParams, CcState};
use crate::units::Dur;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

// BBQ's rule for v1's probing-phase hook (`v1::ProbeLength`, which holds
// the paper's alpha and beta).
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

/// Parameters of `cc = "bbq"`: every `bbr1` parameter, plus `alpha` and `beta`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BbqConfig {
    #[serde(flatten)]
    pub bbr1: Bbr1Config,
    /// Cap on the probing phase while a queue persists (paper: 3 ms).
    #[serde(with = "crate::units::dur_text")]
    pub alpha: Dur,
    /// Queue threshold as a fraction of min_rtt (paper: 0.5 %..1 %; "1%" or 0.01).
    #[serde(with = "super::fraction")]
    pub beta: f64,
}

impl Default for BbqConfig {
    fn default() -> Self {
        BbqConfig {
            bbr1: Bbr1Config::default(),
            alpha: Dur::from_ms(3),
            beta: 0.01,
        }
    }
}

/// serde cannot combine `flatten` with `deny_unknown_fields`; take out
/// `alpha` and `beta`, and let [`Bbr1Config`] reject whatever else it
/// does not know.
impl<'de> Deserialize<'de> for BbqConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mut cfg = BbqConfig::default();
        if let Some(v) = map.remove("alpha") {
            cfg.alpha = crate::units::dur_text::deserialize(v)
                .map_err(|e| D::Error::custom(format!("alpha: {e}")))?;
        }
        if let Some(v) = map.remove("beta") {
            cfg.beta = super::fraction::deserialize(v)
                .map_err(|e| D::Error::custom(format!("beta: {e}")))?;
        }
        cfg.bbr1 =
            serde_path_to_error::deserialize(serde_json::Value::Object(map)).map_err(|e| {
                let path = e.path().to_string();
                let mut msg = e.into_inner().to_string();
                if msg.starts_with("unknown field") {
                    msg.push_str(" (bbq also takes `alpha`, `beta`)");
                }
                if path == "." || path.is_empty() {
                    D::Error::custom(msg)
                } else {
                    D::Error::custom(format!("{path}: {msg}"))
                }
            })?;
        Ok(cfg)
    }
}

impl CcParams for BbqConfig {
    fn validate(&self) -> Result<(), String> {
        self.bbr1.validate()?;
        check_dur("alpha", self.alpha, Dur::from_us(1), Dur::from_secs(1))?;
        check_range("beta", self.beta, 0.0, 0.5)
    }
}

/// A BBQ flow: the v1 machine with BBQ's probing-phase rule.
pub fn build(cfg: &BbqConfig, init: &CcInit) -> Bbr1 {
    let probe = ProbeLength::Bbq {
        alpha_us: cfg.alpha.us(),
        beta: cfg.beta,
    };
    Bbr1::with_probe_length(&cfg.bbr1, init, probe)
}

/// The registry's entry for `cc = "bbq"` (`cc::Algorithm`).
impl crate::cc::Algorithm for BbqConfig {
    const NAME: &'static str = "bbq";
    const REFERENCE: &'static str = "BBRv1 with BBQ's probing rule (the BBQ paper)";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Bbr1(build(self, init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr::testpipe::{Pipe, PipeConfig};
    use crate::cc::bbr::v1::Mode;
    use crate::cc::{parse_params, CongestionControl};
    use crate::units::Time;

    fn bbq(alpha_ms: u64, beta: f64) -> ProbeLength {
        ProbeLength::Bbq {
            alpha_us: alpha_ms * 1000,
            beta,
        }
    }

    /// BBQ §V (cc-facts §10): rho = min(min_rtt, alpha) while the latest
    /// RTT is >= (1 + beta) x min_rtt; otherwise v1's rule (`None`).
    #[test]
    fn probe_length_is_min_of_min_rtt_and_alpha_only_with_a_queue() {
        let p = bbq(3, 0.01);
        assert_eq!(p.shortened_us(20_000, Some(20_200)), Some(3_000));
        assert_eq!(p.shortened_us(20_000, Some(20_199)), None);
        assert_eq!(p.shortened_us(20_000, None), None);
        assert_eq!(p.shortened_us(MIN_RTT_UNSET, Some(20_000)), None);
        assert_eq!(p.shortened_us(2_000, Some(2_500)), Some(2_000));
        assert_eq!(ProbeLength::MinRtt.shortened_us(20_000, Some(40_000)), None);
    }

    /// Lengths (ms) of the 1.25 phases starting between 1.5 s and 4 s, on a
    /// 100 Mbit/s 20 ms pipe with `queue_ms` of standing queue from 1 s on.
    fn probe_phases(cc: Option<BbqConfig>, queue_ms: u64) -> Vec<f64> {
        let mut cfg = PipeConfig::new(100, 20);
        if queue_ms > 0 {
            cfg.extra_delay = Some((Time(1_000_000_000), Dur::from_ms(queue_ms)));
        }
        let mut pipe = Pipe::new(cfg);
        let init = pipe.init(1);
        let mut cc = match cc {
            Some(c) => build(&c, &init),
            None => Bbr1::new(&Bbr1Config::default(), &init),
        };
        let (from, to) = (Time(1_500_000_000), Time(4_000_000_000));
        pipe.span_lengths(&mut cc, from, to, |c| {
            c.mode() == Mode::ProbeBw && c.cycle_idx() == 0
        })
    }

    /// tcp_bbr.c `bbr_is_next_cycle_phase` for v1 (the 1.25 phase lasts
    /// more than min_rtt = 20 ms) against BBQ (alpha = 3 ms) with a standing
    /// queue of other traffic (+4 ms >= 1 % of min_rtt); and with beta so
    /// large that no queue is detected, BBQ is exactly v1.
    #[test]
    fn bbq_shortens_the_probe_to_alpha_only_with_a_persistent_queue() {
        let v1 = probe_phases(None, 4);
        assert!(v1.len() > 10 && v1.iter().all(|&ms| ms > 20.0), "{v1:?}");
        let short = probe_phases(Some(BbqConfig::default()), 4);
        assert!(short.len() > 10, "{short:?}");
        // Ended by the first ACK after 3 ms (ACKs are 0.116 ms apart).
        assert!(
            short.iter().all(|&ms| (3.0..3.2).contains(&ms)),
            "{short:?}"
        );
        let blind = BbqConfig {
            beta: 0.5,
            ..Default::default()
        };
        assert_eq!(probe_phases(Some(blind.clone()), 4), v1);
        assert_eq!(probe_phases(Some(blind), 0), probe_phases(None, 0));
    }

    /// BBQ adds the `bbq_queue` column after v1's.
    #[test]
    fn bbq_reports_its_queue_test() {
        let mut cfg = PipeConfig::new(100, 20);
        cfg.extra_delay = Some((Time(500_000_000), Dur::from_ms(4)));
        let mut pipe = Pipe::new(cfg);
        let mut cc = build(&BbqConfig::default(), &pipe.init(1));
        pipe.run(&mut cc, Time(1_000_000_000), |_, _| {});
        let mut st = CcState::default();
        cc.write_state(&mut st);
        let last = st.entries.last().unwrap();
        assert_eq!(*last, ("bbq_queue", crate::cc::StateValue::Num(1.0)));
        assert_eq!(st.entries[st.entries.len() - 2].0, "bbr_bdp_pkts");
    }

    /// Parameters: every bbr1 one plus alpha and beta, errors naming them.
    #[test]
    fn bbq_config_takes_bbr1_parameters_plus_alpha_and_beta() {
        let c: BbqConfig =
            parse_params(&serde_json::json!({"alpha": "2ms", "beta": "0.5%", "cwnd_gain": 3}))
                .unwrap();
        assert_eq!(c.alpha, Dur::from_ms(2));
        assert_eq!(c.beta, 0.005);
        assert_eq!(c.bbr1.cwnd_gain, 3.0);
        let d: BbqConfig = parse_params(&serde_json::Value::Null).unwrap();
        assert_eq!((d.alpha, d.beta), (Dur::from_ms(3), 0.01));
        let err = |v: serde_json::Value| parse_params::<BbqConfig>(&v).unwrap_err();
        assert_eq!(
            err(serde_json::json!({"beta": 0.7})),
            "beta must be in 0..=0.5, got 0.7"
        );
        assert_eq!(
            err(serde_json::json!({"alpha": "0s"})),
            "alpha must be in 1us..=1s, got 0ns"
        );
        assert!(err(serde_json::json!({"alpha": 3})).starts_with("alpha: "));
        assert_eq!(
            err(serde_json::json!({"cwnd_gain": 0.5})),
            "cwnd_gain must be in 1..=16, got 0.5"
        );
        let e = err(serde_json::json!({"alfa": "3ms"}));
        assert!(e.contains("`alfa`") && e.contains("alpha"), "{e}");
        let e = err(serde_json::json!({"min_rtt_win": 10}));
        assert!(e.starts_with("min_rtt_win: "), "{e}");
    }
}
