//! The BBR family. [`common`] holds what every version shares (units,
//! pacing and BDP arithmetic, TSO goal, round counting, ACK aggregation);
//! [`v1`] is Linux 6.1 BBRv1; [`bbq`] is BBQ, BBRv1 with a shorter probing
//! phase; [`v3`] is google/bbr's BBRv3 and, parameterised by version,
//! BBRv2-alpha.

pub mod bbq;
pub mod common;
pub mod v1;
pub mod v3;

#[cfg(test)]
pub(crate) mod testpipe;

pub use bbq::BbqConfig;
pub use v1::{Bbr1, Bbr1Config};
pub use v3::{Bbr2Config, Bbr3, Bbr3Config};

/// Serde for a fraction written as a number (0.01) or a percentage ("1%").
pub(crate) mod fraction {
    use crate::units::parse_fraction;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Num(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Num(v) => Ok(v),
            Raw::Text(s) => parse_fraction(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cc::{CcConfig, CongestionControl};
    use crate::units::{Dur, Time};

    /// `bbr1` and `bbq` are registered: they parse with defaults, build,
    /// and their filled-in parameters parse back to the same config.
    #[test]
    fn bbr_family_is_registered() {
        for name in ["bbr1", "bbq"] {
            assert!(CcConfig::NAMES.contains(&name));
            let cfg = CcConfig::parse(name, &serde_json::Value::Null).unwrap();
            assert_eq!(cfg.name(), name);
            let json = cfg.params_json();
            assert_eq!(json["min_rtt_win"], "10s");
            assert_eq!(json["high_gain"], 739.0 / 256.0);
            assert_eq!(CcConfig::parse(name, &json).unwrap(), cfg);
            let init = crate::cc::CcInit {
                now: Time::ZERO,
                mss: 1448,
                init_cwnd: 10,
                srtt: Some(Dur::from_ms(20)),
                seed: 1,
                ecn_enabled: false,
            };
            let cc = cfg.build(&init, 0);
            assert!(cc.wants_pacing());
            assert_eq!((cc.cwnd(), cc.phase()), (10, "STARTUP"));
        }
        let bbq = CcConfig::parse("bbq", &serde_json::Value::Null).unwrap();
        assert_eq!(bbq.params_json()["alpha"], "3ms");
        assert_eq!(bbq.params_json()["beta"], 0.01);
        let e = CcConfig::parse("bbr1", &serde_json::json!({"cwnd_gain": 0.5})).unwrap_err();
        assert!(e.contains("cwnd_gain"), "{e}");
    }
}
