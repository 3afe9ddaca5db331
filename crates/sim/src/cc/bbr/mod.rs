//! The BBR family. [`common`] holds what every version shares (units,
//! pacing and BDP arithmetic, TSO goal, round counting, ACK aggregation);
//! [`v1`] is Linux 6.1 BBRv1; [`bbq`] is BBQ, BBRv1 with a shorter probing
//! phase. BBRv2-alpha and BBRv3 are meant to sit beside them and reuse
//! `common`.

pub mod bbq;
pub mod common;
pub mod v1;

#[cfg(test)]
pub(crate) mod testpipe;

pub use v1::{Bbr1, Bbr1Config};

/// Serde for durations written with a unit ("10s", "200ms"), as in scenarios.
pub(crate) mod dur_str {
    use crate::units::{format_duration, parse_duration, Dur};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Dur, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map_err(serde::de::Error::custom)
    }
}
