//! Units: simulated time in integer nanoseconds, byte counts, bit rates.
//!
//! Every conversion and every parser of a human unit ("100Mbps", "20ms",
//! "1.5MB", "0.1BDP", "1%") lives here, so that no other module multiplies by
//! 8 or 1e9 on its own.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

/// `n / d` in 128 bits, divided in 64 where both fit: the same integer, but
/// a u128 division is a library call (`__udivti3`) on the per-ACK path.
#[inline]
pub fn div128(n: u128, d: u128) -> u128 {
    if (n | d) >> 64 == 0 {
        (n as u64 / d as u64) as u128
    } else {
        n / d
    }
}

/// `n / d` rounded up, as `div128`.
#[inline]
pub fn div128_ceil(n: u128, d: u128) -> u128 {
    if (n | d) >> 64 == 0 {
        (n as u64).div_ceil(d as u64) as u128
    } else {
        n.div_ceil(d)
    }
}

/// An instant of simulated time, in nanoseconds since the start of the run.
/// Units live in these types; in a normalized scenario (JSON) each is its
/// integer, in the unit its field's name says (`_ns`, `_bps`, `_bytes`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Time(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Dur(pub u64);

/// A count of bytes.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A bit rate, in bits per second. `Rate::INF` means "not limited".
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Rate(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const NEVER: Time = Time(u64::MAX);
    pub fn ns(self) -> u64 {
        self.0
    }
    /// Microseconds, truncated: Linux keeps TCP timestamps (`tcp_mstamp`) in us.
    pub fn us(self) -> u64 {
        self.0 / NS_PER_US
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// `self - earlier`, or zero when `earlier` is later.
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);
    pub const fn from_ns(ns: u64) -> Dur {
        Dur(ns)
    }
    pub const fn from_us(us: u64) -> Dur {
        Dur(us * NS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Dur {
        Dur(ms * NS_PER_MS)
    }
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * NS_PER_S)
    }
    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * NS_PER_S as f64).round().max(0.0) as u64)
    }
    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn us(self) -> u64 {
        self.0 / NS_PER_US
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    pub fn ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    pub fn mul_f64(self, k: f64) -> Dur {
        Dur((self.0 as f64 * k).round().max(0.0) as u64)
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}
impl SubAssign for Dur {
    fn sub_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_sub(d.0);
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, b: Bytes) -> Bytes {
        Bytes(self.0 + b.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, b: Bytes) {
        self.0 += b.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, b: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(b.0))
    }
}
impl SubAssign for Bytes {
    fn sub_assign(&mut self, b: Bytes) {
        self.0 = self.0.saturating_sub(b.0);
    }
}

impl Rate {
    pub const INF: Rate = Rate(u64::MAX);
    pub fn bps(self) -> u64 {
        self.0
    }
    pub fn is_inf(self) -> bool {
        self.0 == u64::MAX
    }
    pub fn mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Bytes per second (truncated), the unit of Linux's `sk_pacing_rate`.
    pub fn bytes_per_sec(self) -> u64 {
        self.0 / 8
    }
    pub fn from_bytes_per_sec(bps: u64) -> Rate {
        Rate(bps.saturating_mul(8))
    }
    /// Time to serialize `b` at this rate, rounded up to the next ns.
    pub fn tx_time(self, b: Bytes) -> Dur {
        if self.0 == 0 {
            return Dur::MAX;
        }
        if self.is_inf() {
            return Dur::ZERO;
        }
        let num = b.0 as u128 * 8 * NS_PER_S as u128;
        Dur(div128_ceil(num, self.0 as u128) as u64)
    }
    /// Bytes sent at this rate in `d` (truncated).
    pub fn bytes_in(self, d: Dur) -> Bytes {
        if self.is_inf() {
            return Bytes(u64::MAX);
        }
        Bytes(div128(self.0 as u128 * d.0 as u128, 8 * NS_PER_S as u128) as u64)
    }
    /// Rate that moves `b` in `d`.
    pub fn from_bytes_over(b: Bytes, d: Dur) -> Rate {
        if d.0 == 0 {
            return Rate::INF;
        }
        Rate(div128(b.0 as u128 * 8 * NS_PER_S as u128, d.0 as u128) as u64)
    }
    pub fn mul_f64(self, k: f64) -> Rate {
        if self.is_inf() {
            return self;
        }
        Rate((self.0 as f64 * k) as u64)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.secs_f64())
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format_duration(*self))
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format_rate(*self))
    }
}

/// Shortest exact rendering of a duration with a unit ("20ms", "1500us").
pub fn format_duration(d: Dur) -> String {
    let ns = d.0;
    for (unit, k) in [("s", NS_PER_S), ("ms", NS_PER_MS), ("us", NS_PER_US)] {
        if ns >= k && ns.is_multiple_of(k) {
            return format!("{}{}", ns / k, unit);
        }
    }
    format!("{ns}ns")
}

/// Shortest exact rendering of a rate with a unit ("100Mbps").
pub fn format_rate(r: Rate) -> String {
    if r.is_inf() {
        return "unlimited".into();
    }
    let b = r.0;
    for (unit, k) in [
        ("Gbps", 1_000_000_000u64),
        ("Mbps", 1_000_000),
        ("Kbps", 1_000),
    ] {
        if b >= k && b.is_multiple_of(k) {
            return format!("{}{}", b / k, unit);
        }
    }
    format!("{b}bps")
}

// ---------------------------------------------------------------------------
// Parsing. Each parser returns a message that says what is allowed, so the
// scenario loader can prefix it with the file and the field path.

/// Split "12.5ms" into (12.5, "ms"). The number may have a sign, a decimal
/// point and an exponent; white space between number and unit is allowed.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+')
                    && (i == 0 || matches!(s.as_bytes()[i - 1], b'e' | b'E')))
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && s[i + 1..]
                        .starts_with(|n: char| n.is_ascii_digit() || n == '-' || n == '+')))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let v: f64 = s[..end].parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, s[end..].trim()))
}

const DURATION_HELP: &str = "a duration with a unit: ns, us, ms or s (e.g. \"20ms\")";
const RATE_HELP: &str = "a rate with a unit: bps, Kbps, Mbps or Gbps (e.g. \"100Mbps\")";
const SIZE_HELP: &str =
    "a size with a unit: B, KB, MB, GB (powers of 1000), KiB, MiB, GiB, pkt, or a BDP multiple (e.g. \"1.5MB\", \"100pkt\", \"0.5BDP\")";

/// Parse a non-negative duration ("20ms", "1.5s", "250us", "0s").
pub fn parse_duration(s: &str) -> Result<Dur, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("cannot read {s:?}: expected {DURATION_HELP}"))?;
    let k = match unit {
        "ns" => 1.0,
        "us" | "µs" => NS_PER_US as f64,
        "ms" => NS_PER_MS as f64,
        "s" => NS_PER_S as f64,
        "" => return Err(format!("{s:?} has no unit: expected {DURATION_HELP}")),
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?}: expected {DURATION_HELP}"
            ))
        }
    };
    if v < 0.0 {
        return Err(format!("{s:?} is negative: expected {DURATION_HELP}"));
    }
    let ns = v * k;
    if ns > 1e18 {
        return Err(format!("{s:?} is too long (at most about 31 years)"));
    }
    Ok(Dur(ns.round() as u64))
}

/// Parse a rate ("100Mbps", "1Gbps", "8.5Mbps"); zero is allowed here and
/// rejected by callers that need a positive rate.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("cannot read {s:?}: expected {RATE_HELP}"))?;
    let k = match unit {
        "bps" | "bit/s" => 1.0,
        "Kbps" | "kbps" | "kbit/s" => 1e3,
        "Mbps" | "mbps" | "Mbit/s" => 1e6,
        "Gbps" | "gbps" | "Gbit/s" => 1e9,
        "" => return Err(format!("{s:?} has no unit: expected {RATE_HELP}")),
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?}: expected {RATE_HELP}"
            ))
        }
    };
    if v < 0.0 {
        return Err(format!("{s:?} is negative: expected {RATE_HELP}"));
    }
    let bps = v * k;
    if bps >= 1.0e15 {
        return Err(format!("{s:?} is too large (at most 1000 Tbps)"));
    }
    Ok(Rate(bps.round() as u64))
}

/// A size as written in a scenario, before the BDP and the packet size are known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeSpec {
    Bytes(u64),
    Packets(f64),
    Bdp(f64),
}

/// The largest size in bytes a scenario may give (it fits in 64 bits).
pub const MAX_SIZE_BYTES: f64 = 1.0e18;

/// Parse a size ("1.5MB", "64KiB", "100pkt", "0.1BDP", "2500000B").
pub fn parse_size(s: &str) -> Result<SizeSpec, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("cannot read {s:?}: expected {SIZE_HELP}"))?;
    if v < 0.0 {
        return Err(format!("{s:?} is negative: expected {SIZE_HELP}"));
    }
    let bytes = |k: f64| -> Result<SizeSpec, String> {
        let b = v * k;
        if b >= MAX_SIZE_BYTES {
            return Err(format!("{s:?} is too large"));
        }
        Ok(SizeSpec::Bytes(b.round() as u64))
    };
    match unit {
        "B" => bytes(1.0),
        "KB" | "kB" => bytes(1e3),
        "MB" => bytes(1e6),
        "GB" => bytes(1e9),
        "TB" => bytes(1e12),
        "KiB" => bytes(1024.0),
        "MiB" => bytes(1024.0 * 1024.0),
        "GiB" => bytes(1024.0 * 1024.0 * 1024.0),
        "pkt" | "pkts" | "packets" => Ok(SizeSpec::Packets(v)),
        "BDP" | "bdp" | "xBDP" => Ok(SizeSpec::Bdp(v)),
        "" => Err(format!("{s:?} has no unit: expected {SIZE_HELP}")),
        _ => Err(format!(
            "unknown unit {unit:?} in {s:?}: expected {SIZE_HELP}"
        )),
    }
}

/// Parse a probability written as a percentage ("1%", "0.01%") or a plain
/// fraction ("0.01"), returning the fraction in [0, 1].
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s)
        .ok_or_else(|| format!("cannot read {s:?}: expected a percentage such as \"1%\" or a fraction such as \"0.01\""))?;
    let f = match unit {
        "%" => v / 100.0,
        "" => v,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?}: expected a percentage such as \"1%\""
            ))
        }
    };
    if !(0.0..=1.0).contains(&f) {
        return Err(format!("{s:?} is outside 0%..100%"));
    }
    Ok(f)
}

/// A probability as a scenario writes it: a plain number (`0.02`) or a
/// string with or without a percent sign (`"2%"`, `"0.02"`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum FractionSpec {
    Number(f64),
    Text(String),
}

impl FractionSpec {
    /// The fraction in [0, 1].
    pub fn value(&self) -> Result<f64, String> {
        match self {
            FractionSpec::Number(v) if (0.0..=1.0).contains(v) => Ok(*v),
            FractionSpec::Number(v) => Err(format!("{v} is outside 0..=1")),
            FractionSpec::Text(s) => parse_fraction(s),
        }
    }
}

/// Bandwidth-delay product in bytes: rate x rtt.
pub fn bdp(rate: Rate, rtt: Dur) -> Bytes {
    rate.bytes_in(rtt)
}

/// Serde for a duration written with a unit ("10s", "200ms"), as in
/// scenario files: `#[serde(with = "crate::units::dur_text")]` (the one
/// such (de)serializer; algorithms' parameters use it).
pub mod dur_text {
    use super::{format_duration, parse_duration, Dur};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Dur, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_every_unit() {
        assert_eq!(parse_duration("20ms"), Ok(Dur::from_ms(20)));
        assert_eq!(parse_duration("1.5s"), Ok(Dur::from_ms(1500)));
        assert_eq!(parse_duration("250us"), Ok(Dur::from_us(250)));
        assert_eq!(parse_duration("7ns"), Ok(Dur(7)));
        assert_eq!(parse_duration("0s"), Ok(Dur::ZERO));
        assert_eq!(parse_duration(" 3 ms "), Ok(Dur::from_ms(3)));
        assert_eq!(parse_duration("1e-3s"), Ok(Dur::from_ms(1)));
    }

    #[test]
    fn bad_durations_say_what_is_allowed() {
        for bad in ["20", "20 parsecs", "ms", "", "-5ms", "1.2.3s"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                e.contains("duration") || e.contains("negative"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn rates_parse_in_powers_of_1000() {
        assert_eq!(parse_rate("100Mbps"), Ok(Rate(100_000_000)));
        assert_eq!(parse_rate("1Gbps"), Ok(Rate(1_000_000_000)));
        assert_eq!(parse_rate("8.5Mbps"), Ok(Rate(8_500_000)));
        assert_eq!(parse_rate("56Kbps"), Ok(Rate(56_000)));
        assert_eq!(parse_rate("12bps"), Ok(Rate(12)));
        assert!(parse_rate("100MB").is_err());
        assert!(parse_rate("100").is_err());
        assert!(parse_rate("-1Mbps").is_err());
    }

    #[test]
    fn sizes_parse_bytes_packets_and_bdp() {
        assert_eq!(parse_size("1.5MB"), Ok(SizeSpec::Bytes(1_500_000)));
        assert_eq!(parse_size("2MiB"), Ok(SizeSpec::Bytes(2 * 1024 * 1024)));
        assert_eq!(parse_size("64KiB"), Ok(SizeSpec::Bytes(65536)));
        assert_eq!(parse_size("1KB"), Ok(SizeSpec::Bytes(1000)));
        assert_eq!(parse_size("100pkt"), Ok(SizeSpec::Packets(100.0)));
        assert_eq!(parse_size("0.1BDP"), Ok(SizeSpec::Bdp(0.1)));
        assert_eq!(parse_size("1500B"), Ok(SizeSpec::Bytes(1500)));
        assert!(parse_size("1.5 parsecs").is_err());
        assert!(parse_size("12").is_err());
    }

    #[test]
    fn fractions_accept_percent_and_plain() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert!(parse_fraction("101%").is_err());
        assert!(parse_fraction("-1%").is_err());
    }

    #[test]
    fn fraction_specs_take_numbers_and_strings() {
        let v: FractionSpec = serde_json::from_str("0.02").unwrap();
        assert_eq!(v.value(), Ok(0.02));
        let v: FractionSpec = serde_json::from_str("\"2%\"").unwrap();
        assert_eq!(v.value(), Ok(0.02));
        let v: FractionSpec = serde_json::from_str("1.5").unwrap();
        assert!(v.value().is_err());
    }

    #[test]
    fn serialization_time_rounds_up() {
        // 1514 bytes at 1 Gbps = 12.112 us.
        assert_eq!(Rate(1_000_000_000).tx_time(Bytes(1514)), Dur(12_112));
        // 1 byte at 3 bps = 2.666.. s, rounded up.
        assert_eq!(Rate(3).tx_time(Bytes(1)), Dur(2_666_666_667));
        assert_eq!(Rate::INF.tx_time(Bytes(1500)), Dur::ZERO);
    }

    #[test]
    fn bdp_of_100mbps_20ms_is_250kb() {
        assert_eq!(bdp(Rate(100_000_000), Dur::from_ms(20)), Bytes(250_000));
    }

    #[test]
    fn formatting_round_trips() {
        for s in ["20ms", "1s", "250us", "7ns"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
        for s in ["100Mbps", "1Gbps", "56Kbps"] {
            assert_eq!(format_rate(parse_rate(s).unwrap()), s);
        }
    }
}
