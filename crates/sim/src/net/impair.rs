//! Path impairments a path applies per packet: random loss and delay
//! jitter that never reorders. Pure components: the caller passes the
//! times and the random stream; nothing here schedules anything.
//!
//! Loss follows Linux NetEm (net/sched/sch_netem.c): `Bernoulli` is its
//! `loss random` without correlation, `GilbertElliott` its `loss gemodel`.
//! Probabilities become 32-bit thresholds as tc stores them
//! (`rint(p * UINT32_MAX)`) and are compared with one 32-bit draw each, in
//! NetEm's order.
//!
//! Jitter follows the models of experiments.md (bbrv3-insights table 1):
//! a packet never leaves before the one ahead of it on the path.

use crate::rng::Rng;
use crate::units::{parse_duration, Dur, FractionSpec, Time};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// tc's `set_percent`: a probability as a 32-bit threshold.
fn threshold(p: f64) -> u32 {
    (p * u32::MAX as f64).round() as u32
}

/// `loss = ...` of a path.
///
/// Written either as a rate, the Bernoulli shorthand (`loss = "1%"`), or
/// as a table naming the model:
/// `loss = { model = "bernoulli", p = "1%" }`,
/// `loss = { model = "gilbert_elliott", p = "1%", r = "10%", h = "0%", k = "100%" }`.
///
/// Gilbert-Elliott parameters in the model's usual terms (Hasslinger and
/// Hohlfeld, which NetEm follows): `p` = P(Good -> Bad) and `r` =
/// P(Bad -> Good) per packet, `h` = P(delivered | Bad), `k` =
/// P(delivered | Good). tc's `loss gemodel P R 1-H 1-K` takes the
/// complements of the last two; they may be given as `loss_bad` (= 1-h)
/// and `loss_good` (= 1-k) instead. Defaults as tc's: r = 1 - p, h = 0
/// (every packet in Bad is lost), k = 1 (none in Good).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LossConfig {
    #[default]
    None,
    Bernoulli {
        p: FractionSpec,
    },
    GilbertElliott {
        p: FractionSpec,
        #[serde(skip_serializing_if = "Option::is_none")]
        r: Option<FractionSpec>,
        #[serde(skip_serializing_if = "Option::is_none")]
        h: Option<FractionSpec>,
        #[serde(skip_serializing_if = "Option::is_none")]
        k: Option<FractionSpec>,
        #[serde(skip_serializing_if = "Option::is_none")]
        loss_bad: Option<FractionSpec>,
        #[serde(skip_serializing_if = "Option::is_none")]
        loss_good: Option<FractionSpec>,
    },
}

/// The table form of [`LossConfig`].
#[derive(Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
enum LossTable {
    None,
    Bernoulli {
        p: FractionSpec,
    },
    GilbertElliott {
        p: FractionSpec,
        r: Option<FractionSpec>,
        h: Option<FractionSpec>,
        k: Option<FractionSpec>,
        loss_bad: Option<FractionSpec>,
        loss_good: Option<FractionSpec>,
    },
}

impl<'de> Deserialize<'de> for LossConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LossConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a loss rate such as \"1%\", or a table such as { model = \"gilbert_elliott\", p = \"1%\", r = \"10%\" }",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LossConfig, E> {
                Ok(LossConfig::Bernoulli {
                    p: FractionSpec::Text(s.into()),
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LossConfig, E> {
                Ok(LossConfig::Bernoulli {
                    p: FractionSpec::Number(v),
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LossConfig, E> {
                self.visit_f64(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LossConfig, E> {
                self.visit_f64(v as f64)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LossConfig, A::Error> {
                let t = LossTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(match t {
                    LossTable::None => LossConfig::None,
                    LossTable::Bernoulli { p } => LossConfig::Bernoulli { p },
                    LossTable::GilbertElliott {
                        p,
                        r,
                        h,
                        k,
                        loss_bad,
                        loss_good,
                    } => LossConfig::GilbertElliott {
                        p,
                        r,
                        h,
                        k,
                        loss_bad,
                        loss_good,
                    },
                })
            }
        }
        d.deserialize_any(V)
    }
}

fn fraction(name: &str, f: &FractionSpec) -> Result<f64, String> {
    f.value().map_err(|e| format!("{name}: {e}"))
}

/// A complement pair (`h` or `1-h` given as `loss_bad`): the delivery probability.
fn delivery(
    name: &str,
    direct: &Option<FractionSpec>,
    alt_name: &str,
    complement: &Option<FractionSpec>,
    default: f64,
) -> Result<f64, String> {
    match (direct, complement) {
        (Some(_), Some(_)) => Err(format!(
            "{name}: give either {name} or {alt_name} (= 1 - {name}), not both"
        )),
        (Some(v), None) => fraction(name, v),
        (None, Some(c)) => Ok(1.0 - fraction(alt_name, c)?),
        (None, None) => Ok(default),
    }
}

impl LossConfig {
    /// Check every probability lies in [0, 1], and that some packets get
    /// through: a process that loses every one leaves a run nothing to
    /// measure (issue 39). The message names the parameter.
    pub fn validate(&self) -> Result<(), String> {
        let model = self.build()?;
        if !model.loses_every_packet() {
            return Ok(());
        }
        Err(match self {
            LossConfig::Bernoulli { p } => format!(
                "p: {} loses every packet, so nothing would arrive and the run could measure nothing; expected less than 100%",
                shown(p)
            ),
            _ => "loses every packet (the good state loses all, k = 0, and so does the bad state, h = 0, or p = 0 never leaves the good one), so nothing would arrive and the run could measure nothing; expected k > 0, or p > 0 and h > 0"
                .into(),
        })
    }

    /// What makes an accepted loss process mean other than it seems (issue
    /// 39), for a warning: a Gilbert-Elliott chain that enters its bad state
    /// (p > 0) but never leaves it (r = 0) loses the bad state's share of
    /// every packet from then on.
    pub fn warning(&self) -> Option<String> {
        let LossModel::GilbertElliott(g) = self.build().ok()? else {
            return None;
        };
        if g.p_t == 0 || g.r_t != 0 {
            return None;
        }
        Some(format!(
            "r = 0: once in the bad state (after about {} packets, 1/p) the chain never leaves it, so from then on {}% of packets are lost; expected r > 0",
            (1.0 / g.p).round(),
            ((1.0 - g.h) * 100.0 * 1e6).round() / 1e6
        ))
    }

    pub fn build(&self) -> Result<LossModel, String> {
        Ok(match self {
            LossConfig::None => LossModel::None,
            LossConfig::Bernoulli { p } => LossModel::Bernoulli {
                p: fraction("p", p)?,
                threshold: threshold(fraction("p", p)?),
            },
            LossConfig::GilbertElliott {
                p,
                r,
                h,
                k,
                loss_bad,
                loss_good,
            } => {
                let p = fraction("p", p)?;
                let r = r.as_ref().map_or(Ok(1.0 - p), |r| fraction("r", r))?;
                let h = delivery("h", h, "loss_bad", loss_bad, 0.0)?;
                let k = delivery("k", k, "loss_good", loss_good, 1.0)?;
                LossModel::GilbertElliott(GilbertElliott {
                    p,
                    r,
                    h,
                    k,
                    p_t: threshold(p),
                    r_t: threshold(r),
                    h_t: threshold(h),
                    loss_good_t: threshold(1.0 - k),
                    bad: false,
                })
            }
        })
    }
}

/// A probability as the scenario wrote it, for a message.
fn shown(f: &FractionSpec) -> String {
    match f {
        FractionSpec::Number(v) => v.to_string(),
        FractionSpec::Text(s) => format!("{s:?}"),
    }
}

/// NetEm's Gilbert-Elliott loss generator with its current state.
#[derive(Clone, Debug, PartialEq)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub h: f64,
    pub k: f64,
    p_t: u32,
    r_t: u32,
    h_t: u32,
    loss_good_t: u32,
    bad: bool,
}

/// A loss process, one decision per packet.
#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    None,
    Bernoulli { p: f64, threshold: u32 },
    GilbertElliott(GilbertElliott),
}

impl LossModel {
    /// Is the next packet lost?
    pub fn lost(&mut self, rng: &mut Rng) -> bool {
        match self {
            LossModel::None => false,
            // sch_netem.c `loss_event`, CLG_RANDOM without correlation:
            // lost when the threshold is nonzero and >= a 32-bit draw.
            LossModel::Bernoulli { threshold, .. } => {
                *threshold != 0 && *threshold >= rng.next_u32()
            }
            // sch_netem.c `loss_gilb_ell`: in the current state, draw the
            // transition, then draw the loss with that (old) state's
            // probability.
            LossModel::GilbertElliott(g) => {
                if !g.bad {
                    if rng.next_u32() < g.p_t {
                        g.bad = true;
                    }
                    rng.next_u32() < g.loss_good_t
                } else {
                    if rng.next_u32() < g.r_t {
                        g.bad = false;
                    }
                    rng.next_u32() > g.h_t
                }
            }
        }
    }

    /// Whether every packet is lost, as the thresholds decide (`lost`; a
    /// probability within 2^-33 of one rounds to the threshold of 100%, and
    /// a Gilbert-Elliott state at 100% lets one packet in 2^32 through).
    pub fn loses_every_packet(&self) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { threshold, .. } => *threshold == u32::MAX,
            LossModel::GilbertElliott(g) => g.loss_good_t == u32::MAX && (g.p_t == 0 || g.h_t == 0),
        }
    }

    /// The long-run fraction of packets lost.
    pub fn stationary_rate(&self) -> f64 {
        match self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p, .. } => *p,
            LossModel::GilbertElliott(g) => {
                let pi_bad = if g.p + g.r > 0.0 {
                    g.p / (g.p + g.r)
                } else {
                    0.0
                };
                (1.0 - pi_bad) * (1.0 - g.k) + pi_bad * (1.0 - g.h)
            }
        }
    }
}

/// `jitter = { model = "slotted" | "per_packet" | "periodic", max = "10ms" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    pub model: JitterKind,
    /// J: the largest extra delay.
    pub max: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterKind {
    #[serde(alias = "per-packet")]
    PerPacket,
    Slotted,
    /// Released at the next grant, every `max` (aggregation; see `Jitter`).
    Periodic,
}

impl JitterConfig {
    /// `max` must be a duration >= 0; the message names it.
    pub fn validate(&self) -> Result<(), String> {
        self.build().map(|_| ())
    }

    pub fn build(&self) -> Result<Jitter, String> {
        let max = parse_duration(&self.max).map_err(|e| format!("max: {e}"))?;
        Ok(match self.model {
            JitterKind::PerPacket => Jitter::PerPacket { max },
            JitterKind::Slotted => Jitter::Slotted { max, slot: None },
            JitterKind::Periodic => Jitter::Periodic { period: max },
        })
    }
}

/// The slot currently collecting packets, on the jitter stage's own clock
/// (arrival times, without the path's base delay).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot {
    /// When the slot releases the packets it holds: its start plus its delay.
    release: Time,
    /// When its last packet leaves the stage (at least `release`); the
    /// slot is open or serving until then.
    end: Time,
}

/// Extra delay that never reorders: every packet leaves no earlier than
/// the one before it.
///
/// * Per-packet: each packet gets an independent extra delay uniform in
///   [0, J] on top of its base exit time.
/// * Slotted: time is cut into slots. A packet that arrives when no slot is
///   active opens one and draws its delay d, uniform in [0, J]; the slot
///   holds the packets that arrive while it is open (until start + d) or
///   still serving earlier ones, and releases each at start + d (or, for one
///   that joined while the slot was serving, at once), never before the
///   packet ahead; the slot ends when its last packet has left, and the
///   next arrival opens a new slot. The first packet of a slot is delayed
///   by d; later ones by less, so a steady stream sees delays between 0
///   and J, triangular with mean J/3, and leaves in bursts, one per slot.
/// * Periodic (aggregation, as on the ACK path of a Wi-Fi or DOCSIS
///   access link, whose station or cable modem sends only at its
///   transmit opportunities or upstream grants): a packet waits for the
///   next grant, one every J from the start of the run, and the packets of
///   one period leave together at its grant. Each waits 0 to J (mean J/2
///   for a steady stream); no random draws. A stated model, not a measured
///   one: real grant cycles vary with the medium's load.
#[derive(Clone, Debug, PartialEq)]
pub enum Jitter {
    None,
    PerPacket { max: Dur },
    Slotted { max: Dur, slot: Option<Slot> },
    Periodic { period: Dur },
}

/// Uniform in [0, max], to the nanosecond.
fn draw(max: Dur, rng: &mut Rng) -> Dur {
    Dur((rng.uniform() * (max.0 as f64 + 1.0)).floor() as u64).min(max)
}

impl Jitter {
    /// When a packet that entered the path at `arrival` and would leave at
    /// `base_exit` without jitter actually leaves, given that the packet
    /// ahead of it on this path leaves at `last_exit` (`Time::ZERO` for the
    /// first). Always `>= base_exit` and `>= last_exit`.
    pub fn exit_time(
        &mut self,
        arrival: Time,
        base_exit: Time,
        last_exit: Time,
        rng: &mut Rng,
    ) -> Time {
        match self {
            Jitter::None => base_exit.max(last_exit),
            Jitter::PerPacket { max } => (base_exit + draw(*max, rng)).max(last_exit),
            Jitter::Periodic { period } => {
                let p = period.0.max(1);
                Time(base_exit.0.div_ceil(p) * p).max(last_exit)
            }
            Jitter::Slotted { max, slot } => {
                let s = match slot {
                    Some(s) if arrival < s.end => s,
                    _ => slot.insert({
                        let release = arrival + draw(*max, rng);
                        Slot {
                            release,
                            end: release,
                        }
                    }),
                };
                let held = s.release.since(arrival);
                let exit = (base_exit + held).max(last_exit);
                // Back on the stage's clock: when this packet leaves the slot.
                let out = exit - base_exit.since(arrival);
                s.end = s.end.max(out);
                exit
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(v: serde_json::Value) -> Result<LossConfig, String> {
        serde_path_to_error::deserialize(v).map_err(|e| e.to_string())
    }

    /// Losses in `n` decisions.
    fn count(m: &mut LossModel, n: u32, seed: u64) -> u32 {
        let mut rng = Rng::stream(seed, "loss");
        (0..n).filter(|_| m.lost(&mut rng)).count() as u32
    }

    #[test]
    fn bernoulli_loss_matches_its_rate() {
        // Binomial(n, p): within 3 standard deviations sqrt(n p (1-p)).
        for (s, p) in [("1%", 0.01), ("0.1%", 0.001), ("20%", 0.2)] {
            let cfg = loss(serde_json::json!(s)).unwrap();
            let mut m = cfg.build().unwrap();
            assert_eq!(m.stationary_rate(), p);
            let n = 400_000;
            let k = count(&mut m, n, 1) as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((k - n as f64 * p).abs() < 3.0 * sd, "{s}: {k}");
        }
        let mut none = loss(serde_json::json!("0%")).unwrap().build().unwrap();
        assert_eq!(count(&mut none, 10_000, 1), 0);
        let mut all = loss(serde_json::json!(1.0)).unwrap().build().unwrap();
        assert_eq!(count(&mut all, 10_000, 1), 10_000);
    }

    #[test]
    fn gilbert_elliott_loss_matches_its_stationary_rate() {
        // Two-state chain: pi_B = p/(p+r), loss = pi_G (1-k) + pi_B (1-h).
        // The count's variance is that of a Markov-modulated Bernoulli sum:
        // n [pi_G lG(1-lG) + pi_B lB(1-lB)] + n (lB-lG)^2 pi_G pi_B (1+l)/(1-l),
        // l = 1 - p - r the chain's second eigenvalue.
        let cases = [
            serde_json::json!({"model": "gilbert_elliott", "p": "1%", "r": "10%"}),
            serde_json::json!({"model": "gilbert_elliott", "p": "2%", "r": "30%", "h": "20%", "k": "99.9%"}),
            serde_json::json!({"model": "gilbert_elliott", "p": 0.05, "r": 0.5, "loss_bad": "70%", "loss_good": "0.5%"}),
        ];
        for c in cases {
            let mut m = loss(c.clone()).unwrap().build().unwrap();
            let LossModel::GilbertElliott(g) = m.clone() else {
                panic!()
            };
            let pi_b = g.p / (g.p + g.r);
            let (lg, lb) = (1.0 - g.k, 1.0 - g.h);
            let rate = m.stationary_rate();
            assert!((rate - ((1.0 - pi_b) * lg + pi_b * lb)).abs() < 1e-12);
            let n = 1_000_000;
            let k = count(&mut m, n, 2) as f64;
            let l = 1.0 - g.p - g.r;
            let var = n as f64
                * ((1.0 - pi_b) * lg * (1.0 - lg)
                    + pi_b * lb * (1.0 - lb)
                    + (lb - lg).powi(2) * pi_b * (1.0 - pi_b) * (1.0 + l) / (1.0 - l));
            assert!(
                (k - n as f64 * rate).abs() < 3.0 * var.sqrt(),
                "{c}: {} vs {rate}",
                k / n as f64
            );
        }
    }

    #[test]
    fn gilbert_elliott_defaults_are_tcs() {
        // tc q_netem.c: `loss gemodel p` alone means r = 1 - p, 1-h = 100%, 1-k = 0%.
        let m = loss(serde_json::json!({"model": "gilbert_elliott", "p": "10%"}))
            .unwrap()
            .build()
            .unwrap();
        let LossModel::GilbertElliott(g) = m else {
            panic!()
        };
        assert_eq!((g.r, g.h, g.k), (0.9, 0.0, 1.0));
    }

    #[test]
    fn gilbert_elliott_losses_come_in_runs_of_mean_length_one_over_r() {
        // With h = 0, k = 1 every run of losses is a stay in Bad: mean length 1/r.
        let mut m = loss(serde_json::json!({"model": "gilbert_elliott", "p": "1%", "r": "25%"}))
            .unwrap()
            .build()
            .unwrap();
        let mut rng = Rng::stream(3, "loss");
        let (mut runs, mut lost, mut prev) = (0u32, 0u32, false);
        for _ in 0..1_000_000 {
            let l = m.lost(&mut rng);
            lost += l as u32;
            runs += (l && !prev) as u32;
            prev = l;
        }
        let mean_run = lost as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.2, "{mean_run}");
    }

    #[test]
    fn bad_loss_parameters_name_the_parameter() {
        let cases = [
            (serde_json::json!("150%"), "p:"),
            (serde_json::json!(-0.1), "p:"),
            (serde_json::json!({"model": "bernoulli", "p": 2}), "p:"),
            (
                serde_json::json!({"model": "gilbert_elliott", "p": "1%", "r": "101%"}),
                "r:",
            ),
            (
                serde_json::json!({"model": "gilbert_elliott", "p": "1%", "h": "-5%"}),
                "h:",
            ),
            (
                serde_json::json!({"model": "gilbert_elliott", "p": "1%", "k": 0.9, "loss_good": 0.1}),
                "k:",
            ),
        ];
        for (v, name) in cases {
            let e = loss(v.clone()).unwrap().validate().unwrap_err();
            assert!(e.starts_with(name), "{v}: {e}");
        }
        let e = loss(serde_json::json!({"model": "gilbert_elliott", "p": "1%", "q": "1%"}))
            .unwrap_err();
        assert!(e.contains("unknown field `q`"), "{e}");
        let e = loss(serde_json::json!({"model": "markov"})).unwrap_err();
        assert!(e.contains("markov"), "{e}");
    }

    #[test]
    fn loss_config_round_trips_through_serde() {
        for v in [
            serde_json::json!({"model": "bernoulli", "p": "1%"}),
            serde_json::json!({"model": "gilbert_elliott", "p": "1%", "r": "10%", "h": 0.5}),
            serde_json::json!({"model": "none"}),
        ] {
            let c = loss(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), v);
        }
        assert_eq!(LossConfig::default().build().unwrap(), LossModel::None);
    }

    fn jitter(model: &str, max: &str) -> Jitter {
        let c: JitterConfig =
            serde_json::from_value(serde_json::json!({"model": model, "max": max})).unwrap();
        c.build().unwrap()
    }

    /// Run `arrivals` (ns) through a jitter model with a 5 ms base delay;
    /// return (arrival, base exit, exit) per packet.
    fn run(j: &mut Jitter, arrivals: &[u64], seed: u64) -> Vec<(Time, Time, Time)> {
        let mut rng = Rng::stream(seed, "jitter");
        let mut last = Time::ZERO;
        arrivals
            .iter()
            .map(|&a| {
                let a = Time(a);
                let base = a + Dur::from_ms(5);
                let e = j.exit_time(a, base, last, &mut rng);
                assert!(e >= last && e >= base);
                last = e;
                (a, base, e)
            })
            .collect()
    }

    #[test]
    fn no_jitter_model_ever_reorders() {
        // experiments.md: both models keep order. Dense arrivals (10 us
        // apart) with J = 10 ms, so most packets are pushed by the one ahead.
        let arrivals: Vec<u64> = (0..200_000).map(|i| i * 10_000).collect();
        for model in ["per_packet", "per-packet", "slotted"] {
            let mut j = jitter(model, "10ms");
            let out = run(&mut j, &arrivals, 5);
            assert!(out.windows(2).all(|w| w[0].2 <= w[1].2), "{model}");
            let max_extra = out.iter().map(|(_, b, e)| e.since(*b)).max().unwrap();
            assert!(max_extra <= Dur::from_ms(10), "{model}: {max_extra}");
        }
    }

    #[test]
    fn per_packet_delay_is_uniform_up_to_max() {
        // Independent U[0, J] per packet: with arrivals farther apart than J
        // nothing is pushed, so the extra delays are the draws: mean J/2
        // (within 4 standard errors J/sqrt(12 n)) and each quarter of
        // [0, J] holds a quarter of them (binomial, 4 sd).
        let n = 40_000u64;
        let arrivals: Vec<u64> = (0..n).map(|i| i * 20_000_000).collect();
        let mut j = jitter("per_packet", "10ms");
        let extra: Vec<f64> = run(&mut j, &arrivals, 6)
            .iter()
            .map(|(_, b, e)| e.since(*b).secs_f64())
            .collect();
        let mean = extra.iter().sum::<f64>() / n as f64;
        let se = 0.010 / (12.0 * n as f64).sqrt();
        assert!((mean - 0.005).abs() < 4.0 * se, "{mean}");
        for q in 0..4 {
            let lo = q as f64 * 0.0025;
            let c = extra
                .iter()
                .filter(|&&x| x >= lo && x < lo + 0.0025)
                .count() as f64;
            let sd = (n as f64 * 0.25 * 0.75).sqrt();
            assert!((c - n as f64 / 4.0).abs() < 4.0 * sd, "quarter {q}: {c}");
        }
    }

    #[test]
    fn periodic_aggregation_releases_at_each_grant() {
        // Grants every 4 ms: packets due at 6, 7.9 and 8 ms leave at 8 ms,
        // one due at 8.1 ms at 12 ms; nothing is drawn, nothing reordered.
        let mut j = jitter("periodic", "4ms");
        let ms = |x: f64| Time((x * 1e6) as u64);
        let mut rng = Rng::stream(1, "j");
        let mut last = Time::ZERO;
        let mut out = vec![];
        for due in [6.0, 7.9, 8.0, 8.1] {
            last = j.exit_time(ms(due - 5.0), ms(due), last, &mut rng);
            out.push(last);
        }
        assert_eq!(out, [ms(8.0), ms(8.0), ms(8.0), ms(12.0)]);
    }

    #[test]
    fn slotted_delay_is_drawn_once_per_slot() {
        // Sparse arrivals (20 ms apart, J = 10 ms): each packet opens its own
        // slot and is held for the slot's delay, U[0, J]: mean J/2.
        let n = 40_000u64;
        let arrivals: Vec<u64> = (0..n).map(|i| i * 20_000_000).collect();
        let mut j = jitter("slotted", "10ms");
        let extra: Vec<f64> = run(&mut j, &arrivals, 7)
            .iter()
            .map(|(_, b, e)| e.since(*b).secs_f64())
            .collect();
        let mean = extra.iter().sum::<f64>() / n as f64;
        let se = 0.010 / (12.0 * n as f64).sqrt();
        assert!((mean - 0.005).abs() < 4.0 * se, "{mean}");

        // A steady stream (one packet per 100 us): packets leave in bursts,
        // all packets of a slot at its release time; the slots tile time,
        // a slot of delay d collects about d/100us packets, so a packet's
        // delay is triangular on [0, J] with mean J/3.
        let arrivals: Vec<u64> = (0..400_000).map(|i| i * 100_000).collect();
        let mut j = jitter("slotted", "10ms");
        let out = run(&mut j, &arrivals, 8);
        let extra: Vec<f64> = out.iter().map(|(_, b, e)| e.since(*b).secs_f64()).collect();
        let mean = extra.iter().sum::<f64>() / extra.len() as f64;
        assert!((mean - 0.010 / 3.0).abs() < 0.0002, "{mean}");
        let mut bursts = 0;
        for w in out.windows(2) {
            if w[1].2 != w[0].2 {
                bursts += 1;
            }
        }
        // About 40 s / 5 ms = 8000 slots.
        assert!((7_000..9_000).contains(&bursts), "{bursts}");
    }

    #[test]
    fn jitter_is_deterministic_for_a_seed() {
        let arrivals: Vec<u64> = (0..10_000).map(|i| i * 300_000).collect();
        for model in ["per_packet", "slotted"] {
            let a = run(&mut jitter(model, "5ms"), &arrivals, 9);
            let b = run(&mut jitter(model, "5ms"), &arrivals, 9);
            assert_eq!(a, b);
        }
        let mut none = Jitter::None;
        let out = run(&mut none, &arrivals, 9);
        assert!(out.iter().all(|(_, b, e)| b == e));
    }

    #[test]
    fn bad_jitter_parameters_name_the_parameter() {
        let c: JitterConfig =
            serde_json::from_value(serde_json::json!({"model": "slotted", "max": "-1ms"})).unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.starts_with("max:") && e.contains("negative"), "{e}");
        let e = serde_json::from_value::<JitterConfig>(
            serde_json::json!({"model": "gaussian", "max": "1ms"}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("gaussian"), "{e}");
        let e = serde_json::from_value::<JitterConfig>(
            serde_json::json!({"model": "slotted", "max": "1ms", "min": "0ms"}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `min`"), "{e}");
    }
}
