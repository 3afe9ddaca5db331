//! Host timing noise: the time a real host takes between a packet reaching
//! it and the packet it sends in answer.
//!
//! The simulator's hosts answer at once: an ACK that reaches a sender at t
//! releases the next segments at t, and a segment that reaches a receiver at
//! t is acknowledged at t. Real hosts take a varying time (softirq and
//! scheduler latency, the stack's own path both ways). With loss-based flows
//! on a tail-drop queue that matters: perfectly regular ACK clocks
//! phase-lock with the queue, so the same flow finds it full every time
//! (Floyd and Jacobson, "On traffic phase effects in packet-switched
//! gateways", 1992), and two flows of different RTTs share very differently
//! from what the kernel does (docs/model.md, "Host timing noise").
//!
//! `HostLatency::Measured` draws each turnaround from the distribution
//! measured on the Linux backend (`scripts/host_latency.py`, unpaced CUBIC
//! 10 ms vs 50 ms, 50 Mbit/s, 3 runs of 20 s, kernel 6.18, veths, this
//! project's 2-vCPU machines; re-measured 2026-11-26, model version 8): at
//! the bottleneck, from the instant its schedule had a frame due towards a
//! host to the arrival of the frame the host sent in answer. The sender
//! table is the ACK -> triggered data turnaround (87 251 samples, mean 73.6
//! us), the receiver table the data -> covering ACK turnaround (132 965
//! samples, mean 74.1 us); each holds the percentiles of `PCT`, read by
//! linear interpolation (inverse CDF). The top 0.1% (up to the 1 ms the
//! measurement cuts at) is left out: it mixes protocol waits with noise.
//! The first measurement (2026-11-25 early, model versions 2-7) gave means
//! of 55.4 and 57.6 us; the same script and cell give 18-20 us more on the
//! backend as it is now, as do ten flows at 500 Mbit/s (medians 54.5 and
//! 54.2 us, were 34.7 and 36.5), and the conformance matrix's kernel runs
//! show the longer loop too (docs/model.md, "Host timing noise").

use crate::rng::Rng;
use crate::units::Dur;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How hosts time their answers (`[hosts] latency`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostLatency {
    /// Turnarounds drawn from the distribution measured on the Linux backend.
    #[default]
    Measured,
    /// Ideal hosts: every answer at once (the simulator before 0.2).
    None,
    /// Turnarounds drawn from a table the user measured
    /// (`scripts/host_latency.py --toml` on their own Linux backend).
    Table(Box<Turnarounds>),
}

/// How fast a run's hosts are, beside the table (`[hosts] run_speed`).
///
/// Kernel runs of one scenario differ in host speed: over the 1,014
/// trustworthy runs of the conformance matrix (`conformance/kernel.parquet`,
/// kernel 6.18.44, 238 cells of 3 or 10 runs), a run's median turnaround
/// lies within 0.89-1.11 of its cell's mean (5th-95th percentile, sd 6.7%;
/// `scripts/host_speed_spread.py`), and the body of its turnaround table
/// scales with it (each percentile from the 5th to the 90th moves 0.86-1.10
/// times as much, correlation 0.89-0.99). With flows of different RTTs on a
/// tail-drop queue that moves where their segments land in the bottleneck's
/// departure cycle, and so which flow its drops hit (docs/validation.md,
/// "The drop split is the hosts' phase").
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSpeed {
    /// Each run scales its table by a factor drawn from its seed, spread as
    /// the kernel's runs are (`SPEED_SPREAD`).
    #[default]
    Drawn,
    /// The table as it is (the model before version 14).
    Fixed,
    /// Every turnaround times this factor.
    Factor(f64),
}

impl RunSpeed {
    pub const NAMES: [&'static str; 2] = ["drawn", "fixed"];

    /// The factor this run's turnarounds are scaled by.
    pub fn factor(self, seed: u64) -> f64 {
        match self {
            RunSpeed::Drawn => {
                let u = Rng::stream(seed, "host-speed").uniform();
                interpolate(&SPEED_PCT, &SPEED_SPREAD, u * 100.0)
            }
            RunSpeed::Fixed => 1.0,
            RunSpeed::Factor(f) => f,
        }
    }
}

/// The percentiles `SPEED_SPREAD` holds values at.
const SPEED_PCT: [f64; 17] = [
    0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 98.0, 99.0,
    100.0,
];
/// A kernel run's host speed (its median turnaround) over the mean of its
/// cell's runs, each deviation widened by sqrt(n / (n - 1)) for the n runs
/// it was measured against (`scripts/host_speed_spread.py` on
/// `conformance/kernel.parquet`, 2026-11-27).
const SPEED_SPREAD: [f64; 17] = [
    0.8091, 0.8382, 0.8610, 0.8923, 0.9200, 0.9474, 0.9664, 0.9838, 0.9996, 1.0129, 1.0315, 1.0484,
    1.0805, 1.1125, 1.1520, 1.1907, 1.2768,
];

/// Linear interpolation of `values` at percentile `p` of `pct`.
fn interpolate(pct: &[f64], values: &[f64], p: f64) -> f64 {
    let k = pct.partition_point(|&x| x <= p).clamp(1, pct.len() - 1);
    let (p0, p1) = (pct[k - 1], pct[k]);
    values[k - 1] + (values[k] - values[k - 1]) * (p - p0) / (p1 - p0)
}

/// A turnaround distribution: its values at the percentiles of `PCT`, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turnarounds {
    /// ACK due at the sender -> the data it clocks out.
    pub sender_ns: [u64; 18],
    /// Data due at the receiver -> the ACK that covers it.
    pub receiver_ns: [u64; 18],
}

impl Turnarounds {
    /// Every turnaround times `factor` (`RunSpeed`).
    pub fn scaled(&self, factor: f64) -> Turnarounds {
        let f = |t: [u64; 18]| t.map(|ns| round_positive(ns as f64 * factor));
        Turnarounds {
            sender_ns: f(self.sender_ns),
            receiver_ns: f(self.receiver_ns),
        }
    }

    /// The table this module ships (see the module's comment).
    pub const MEASURED: Turnarounds = Turnarounds {
        sender_ns: SENDER_NS,
        receiver_ns: RECEIVER_NS,
    };
}

impl HostLatency {
    pub const NAMES: [&'static str; 2] = ["measured", "none"];

    pub fn parse(s: &str) -> Option<HostLatency> {
        match s {
            "measured" => Some(HostLatency::Measured),
            "none" => Some(HostLatency::None),
            _ => None,
        }
    }

    /// The distribution the hosts draw from (`None` for ideal hosts).
    pub fn turnarounds(&self) -> Option<Arc<Turnarounds>> {
        match self {
            HostLatency::Measured => Some(Arc::new(Turnarounds::MEASURED)),
            HostLatency::None => None,
            HostLatency::Table(t) => Some(Arc::new(**t)),
        }
    }
}

/// The percentiles a table holds values at (`[hosts] latency`'s
/// `sender_us`/`receiver_us` lists, 18 each).
pub const PCT: [f64; 18] = [
    0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 98.0, 99.0,
    99.5, 99.9,
];
/// Sender: ACK due at the sender -> the data it clocks out, ns.
const SENDER_NS: [u64; 18] = [
    21_640, 45_872, 48_340, 53_297, 63_504, 67_889, 69_603, 70_935, 72_097, 73_328, 74_820, 77_364,
    83_463, 89_758, 101_010, 115_181, 136_596, 408_196,
];
/// Receiver: data due at the receiver -> the ACK that covers it, ns.
const RECEIVER_NS: [u64; 18] = [
    20_670, 42_115, 44_684, 49_319, 54_153, 61_077, 65_739, 69_408, 73_044, 75_990, 78_363, 81_555,
    90_451, 97_846, 113_491, 137_203, 201_743, 427_183,
];

/// Inverse CDF of a percentile table at `u` in [0, 1).
fn quantile(table: &[u64; 18], u: f64) -> u64 {
    let p = u * PCT[PCT.len() - 1];
    // The knots at or below p, counted without branches (a random draw
    // defeats a binary search's branch prediction): `partition_point`.
    let below = PCT.iter().map(|&x| (x <= p) as usize).sum::<usize>();
    let k = below.clamp(1, PCT.len() - 1);
    let (p0, p1) = (PCT[k - 1], PCT[k]);
    let (v0, v1) = (table[k - 1] as f64, table[k] as f64);
    round_positive(v0 + (v1 - v0) * (p - p0) / (p1 - p0))
}

/// `x.round() as u64` for 0 <= x < 2^52 (halves away from zero), without
/// the library call `f64::round` is on x86-64's baseline target.
#[inline]
fn round_positive(x: f64) -> u64 {
    let t = x as u64;
    // Exact below 2^52: x - t is x's fraction.
    if x - t as f64 >= 0.5 {
        t + 1
    } else {
        t
    }
}

/// The turnarounds of one flow's two hosts, with their own random stream.
#[derive(Clone, Debug)]
pub struct HostNoise {
    rng: Rng,
    table: Arc<Turnarounds>,
}

impl HostNoise {
    pub fn new(rng: Rng, table: Arc<Turnarounds>) -> HostNoise {
        HostNoise { rng, table }
    }

    /// The delay an ACK takes between the receiver getting the data it
    /// covers and the sender acting on it, beyond the path's propagation:
    /// one receiver turnaround plus one sender turnaround.
    pub fn ack_turnaround(&mut self) -> Dur {
        let r = quantile(&self.table.receiver_ns, self.rng.uniform());
        let s = quantile(&self.table.sender_ns, self.rng.uniform());
        Dur(r + s)
    }
}

/// Mean of the shipped table's distribution (trapezoids between knots), ns.
pub fn mean_ns(sender: bool) -> f64 {
    let t = if sender { &SENDER_NS } else { &RECEIVER_NS };
    let total = PCT[PCT.len() - 1];
    (1..PCT.len())
        .map(|k| (PCT[k] - PCT[k - 1]) * (t[k] + t[k - 1]) as f64 / 2.0)
        .sum::<f64>()
        / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_positive_is_round() {
        let mut rng = Rng::stream(1, "round");
        for x in [
            0.0,
            0.5,
            1.5,
            2.5,
            0.499_999_999_999_999_94,
            4_503_599_627_370_495.5,
        ] {
            assert_eq!(round_positive(x), x.round() as u64, "{x}");
        }
        for _ in 0..100_000 {
            let x = rng.uniform() * 400_000.0;
            assert_eq!(round_positive(x), x.round() as u64, "{x}");
            let h = (x as u64) as f64 + 0.5;
            assert_eq!(round_positive(h), h.round() as u64, "{h}");
        }
    }

    #[test]
    fn quantile_hits_the_knots_and_interpolates() {
        assert_eq!(quantile(&SENDER_NS, 0.0), SENDER_NS[0]);
        let at_median = 50.0 / 99.9;
        assert_eq!(quantile(&SENDER_NS, at_median), SENDER_NS[8]);
        let mid = (quantile(&SENDER_NS, 0.0) + quantile(&SENDER_NS, 1.0 / 99.9)) / 2;
        assert!((quantile(&SENDER_NS, 0.5 / 99.9) as i64 - mid as i64).abs() <= 1);
        assert!(quantile(&SENDER_NS, 0.999_999_9) <= SENDER_NS[17]);
    }

    #[test]
    fn run_speeds_are_drawn_as_the_kernel_runs_spread() {
        let draws: Vec<f64> = (0..20_000).map(|s| RunSpeed::Drawn.factor(s)).collect();
        let below = |x: f64| draws.iter().filter(|&&d| d < x).count() as f64 / draws.len() as f64;
        // The table's own percentiles: 5% below 0.8923, half below 0.9996,
        // 95% below 1.1125; nothing outside its ends.
        for (x, p) in [(0.8923, 0.05), (0.9996, 0.5), (1.1125, 0.95)] {
            assert!((below(x) - p).abs() < 0.01, "{x}: {}", below(x));
        }
        assert!(draws.iter().all(|&d| (0.8091..=1.2768).contains(&d)));
        // One seed, one speed; the stream is the seed's own.
        assert_eq!(RunSpeed::Drawn.factor(42), RunSpeed::Drawn.factor(42));
        assert_ne!(RunSpeed::Drawn.factor(42), RunSpeed::Drawn.factor(43));
        assert_eq!(RunSpeed::Fixed.factor(42), 1.0);
        assert_eq!(RunSpeed::Factor(1.25).factor(42), 1.25);
    }

    #[test]
    fn a_scaled_table_scales_every_turnaround() {
        let t = Turnarounds::MEASURED.scaled(1.1);
        for (got, ns) in t.sender_ns.iter().zip(SENDER_NS) {
            assert_eq!(*got, (ns as f64 * 1.1).round() as u64);
        }
        assert_eq!(Turnarounds::MEASURED.scaled(1.0), Turnarounds::MEASURED);
    }

    #[test]
    fn draws_follow_the_measured_distribution() {
        let mut h = HostNoise::new(Rng::stream(7, "t"), Arc::new(Turnarounds::MEASURED));
        let n = 200_000;
        let mut v: Vec<u64> = (0..n).map(|_| h.ack_turnaround().0).collect();
        v.sort_unstable();
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        let expect = mean_ns(true) + mean_ns(false);
        assert!((mean - expect).abs() / expect < 0.01, "{mean} vs {expect}");
        // The sum of two draws lies between the sums of the tables' ends.
        assert!(v[0] >= SENDER_NS[0] + RECEIVER_NS[0]);
        assert!(v[n - 1] <= SENDER_NS[17] + RECEIVER_NS[17]);
        // Its median: both medians' sum within 5%.
        let med = v[n / 2] as f64;
        let m2 = (SENDER_NS[8] + RECEIVER_NS[8]) as f64;
        assert!((med - m2).abs() / m2 < 0.05, "{med} vs {m2}");
    }
}
