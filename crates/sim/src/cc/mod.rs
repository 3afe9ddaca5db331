//! Congestion control: the trait every algorithm implements, the enum that
//! dispatches to them on the per-ACK path, and the registry that turns a
//! scenario's `cc = "..."` and `cc_params = {...}` into a validated config.
//!
//! The shape follows Linux's `struct tcp_congestion_ops`: the TCP core
//! (loss detection, recovery states, delivery-rate sampling) calls the hooks;
//! the algorithm owns its congestion window and pacing rate and the core
//! reads them. Loss-based algorithms share `classic::LossBased`, which holds
//! what Linux keeps in `tcp_input.c` for them (slow start, PRR, ssthresh).

pub mod bbr;
pub mod bic;
pub mod classic;
pub mod copa;
pub mod cubic;
pub mod dctcp;
pub mod external;
pub mod htcp;
pub mod hybla;
pub mod hystart_pp;
pub mod illinois;
pub mod ledbat;
pub mod prague;
pub mod reno;
pub mod scalable;
pub mod signals;
pub mod vegas;
pub mod vivace;
pub mod westwood;
pub mod yeah;

pub use signals::{AckOutcome, CaState, CcEvent, CcInit, Conn, LostPacket, RateSample, TsoPolicy};

use crate::units::{Rate, Time};

/// A value of a CC's internal state, written into samples.parquet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StateValue {
    Num(f64),
    Label(&'static str),
}

/// The named columns a CC reports at each sample (`bbr_mode`, `cubic_wmax_pkts`, ...).
/// Names carry their unit; the same CC always writes the same names in the same order.
#[derive(Default, Debug)]
pub struct CcState {
    pub entries: Vec<(&'static str, StateValue)>,
}

impl CcState {
    pub fn num(&mut self, name: &'static str, v: f64) {
        self.entries.push((name, StateValue::Num(v)));
    }
    pub fn label(&mut self, name: &'static str, v: &'static str) {
        self.entries.push((name, StateValue::Label(v)));
    }
}

pub trait CongestionControl {
    /// One ACK was processed (`cong_control`, or `pkts_acked` + `cong_avoid`).
    /// Recovery-state changes caused by this ACK have already been reported.
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome;

    /// The loss detector marked one packet lost (BBRv3 tree `skb_marked_lost`).
    fn on_packet_lost(&mut self, _now: Time, _lost: &LostPacket, _conn: &Conn) {}

    /// The recovery state changed (`ssthresh` on entering Recovery/Loss/CWR,
    /// `set_state`, and the cwnd restore when recovery ends).
    fn on_state_change(&mut self, _now: Time, _from: CaState, _to: CaState, _conn: &Conn) {}

    /// An event outside the ACK path (`cwnd_event`).
    fn on_event(&mut self, _now: Time, _ev: CcEvent, _conn: &Conn) {}

    /// Congestion window, in packets.
    fn cwnd(&self) -> u32;

    /// Slow-start threshold in packets (`u32::MAX` when unset), for reporting.
    fn ssthresh(&self) -> u32 {
        u32::MAX
    }

    /// Current pacing rate (`sk_pacing_rate`); `Rate::INF` when unpaced.
    fn pacing_rate(&self) -> Rate;

    /// The algorithm needs pacing even without sch_fq (`SK_PACING_NEEDED`,
    /// which BBR requests); only such flows are paced with `pacing = "internal"`.
    fn wants_pacing(&self) -> bool {
        false
    }

    /// How large a burst the TCP core may build.
    fn tso_policy(&self) -> TsoPolicy {
        TsoPolicy::Autosize { min_segs: 2 }
    }

    /// A short label of the state machine's position ("STARTUP",
    /// "PROBE_BW:UP"); a change is recorded in transitions.parquet.
    fn phase(&self) -> &'static str {
        ""
    }

    /// Append the algorithm's internal state (named, with units) to `out`.
    fn write_state(&self, _out: &mut CcState) {}
}

/// Forward every trait method of `AnyCc` to the variant it holds.
macro_rules! any_cc {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// Enum dispatch over the algorithms (no `Box<dyn>` on the per-ACK path).
        /// There is one per flow, so the size of the largest state (BBR's,
        /// a few hundred bytes) matters less than a pointer chase per ACK.
        #[allow(clippy::large_enum_variant)]
        pub enum AnyCc { $($variant($ty)),* }

        impl CongestionControl for AnyCc {
            fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
                match self { $(AnyCc::$variant(c) => c.on_ack(now, rs, conn)),* }
            }
            fn on_packet_lost(&mut self, now: Time, lost: &LostPacket, conn: &Conn) {
                match self { $(AnyCc::$variant(c) => c.on_packet_lost(now, lost, conn)),* }
            }
            fn on_state_change(&mut self, now: Time, from: CaState, to: CaState, conn: &Conn) {
                match self { $(AnyCc::$variant(c) => c.on_state_change(now, from, to, conn)),* }
            }
            fn on_event(&mut self, now: Time, ev: CcEvent, conn: &Conn) {
                match self { $(AnyCc::$variant(c) => c.on_event(now, ev, conn)),* }
            }
            fn cwnd(&self) -> u32 {
                match self { $(AnyCc::$variant(c) => c.cwnd()),* }
            }
            fn ssthresh(&self) -> u32 {
                match self { $(AnyCc::$variant(c) => c.ssthresh()),* }
            }
            fn pacing_rate(&self) -> Rate {
                match self { $(AnyCc::$variant(c) => c.pacing_rate()),* }
            }
            fn wants_pacing(&self) -> bool {
                match self { $(AnyCc::$variant(c) => c.wants_pacing()),* }
            }
            fn tso_policy(&self) -> TsoPolicy {
                match self { $(AnyCc::$variant(c) => c.tso_policy()),* }
            }
            fn phase(&self) -> &'static str {
                match self { $(AnyCc::$variant(c) => c.phase()),* }
            }
            fn write_state(&self, out: &mut CcState) {
                match self { $(AnyCc::$variant(c) => c.write_state(out)),* }
            }
        }
    };
}

any_cc! {
    Reno(classic::Classic<reno::RenoRule>),
    Cubic(classic::Classic<cubic::CubicRule>),
    RenoPP(classic::Classic<hystart_pp::WithHystartPP<reno::RenoRule>>),
    CubicPP(classic::Classic<hystart_pp::WithHystartPP<cubic::CubicRule>>),
    Dctcp(classic::Classic<dctcp::DctcpRule>),
    Vegas(classic::Classic<vegas::VegasRule>),
    Westwood(classic::Classic<westwood::WestwoodRule>),
    Htcp(classic::Classic<htcp::HtcpRule>),
    Illinois(classic::Classic<illinois::IllinoisRule>),
    Bic(classic::Classic<bic::BicRule>),
    Scalable(classic::Classic<scalable::ScalableRule>),
    Hybla(classic::Classic<hybla::HyblaRule>),
    Yeah(classic::Classic<yeah::YeahRule>),
    LedbatPP(classic::Classic<ledbat::LedbatRule>),
    Prague(prague::Prague),
    Copa(copa::Copa),
    Vivace(vivace::Vivace),
    // A user's controller (Python), the one variant behind a pointer.
    External(Box<dyn CongestionControl + Send>),
    // BBRv1 and BBQ (v1 with another probing-phase rule) share one type.
    Bbr1(bbr::Bbr1),
    // BBRv3 and BBRv2-alpha share one type, parameterised by version.
    Bbr3(bbr::Bbr3),
}

pub use crate::params::{parse_params, Params as CcParams};

/// How an algorithm uses ECN. Linux sets the first three per algorithm
/// (`tcp_congestion_ops.flags`, `tcp_ecn_send`); the fourth is the
/// receiver's feedback the algorithm relies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EcnUse {
    /// Its flows negotiate ECN unless the scenario says `ecn = false`
    /// (`TCP_CONG_NEEDS_ECN`: DCTCP, Prague).
    pub needs: bool,
    /// The codepoint its sender sets: ECT(1) for L4S senders (RFC 9331:
    /// Prague, `tcp_prague.c`'s `INET_ECN_xmit_ect_1`), ECT(0) otherwise.
    pub ect: crate::packet::Ecn,
    /// Retransmissions keep ECT. Linux sends them Not-ECT (RFC 3168 6.1.5,
    /// `tcp_ecn_send`) unless the algorithm needs ECN on every packet
    /// (`TCP_CONG_NEEDS_ECN`) or set `TCP_ECN_ECT_PERMANENT` (BBRv3's
    /// `bbr_init` when `bbr_can_use_ecn`; BBRv2-alpha's with `ecn_enable`).
    pub ect_permanent: bool,
    /// Its receivers echo every CE mark (the accurate feedback DCTCP and
    /// BBRv2/v3 rely on) rather than RFC 3168's latch.
    pub accurate_feedback: bool,
}

impl EcnUse {
    /// RFC 3168 ECN, used only where the scenario asks for it.
    pub const CLASSIC: EcnUse = EcnUse {
        needs: false,
        ect: crate::packet::Ecn::Ect0,
        ect_permanent: false,
        accurate_feedback: false,
    };
    /// An algorithm that needs ECN on every packet with every mark echoed
    /// (`TCP_CONG_NEEDS_ECN`: DCTCP; Prague with ECT(1)).
    pub const NEEDED: EcnUse = EcnUse {
        needs: true,
        ect: crate::packet::Ecn::Ect0,
        ect_permanent: true,
        accurate_feedback: true,
    };
}

/// How a parameter type reads its `cc_params` table (JSON null when
/// absent): every `CcParams` type through `parse_params`, which names the
/// parameter and its range in an error; `PythonConfig` its own way.
pub trait ReadParams: Sized {
    fn read(params: &serde_json::Value) -> Result<Self, String>;
}

impl<T: CcParams> ReadParams for T {
    fn read(params: &serde_json::Value) -> Result<Self, String> {
        parse_params(params)
    }
}

/// What an algorithm declares about itself, beside its parameters, in its
/// own file: its name in `cc = "..."`, where its rules come from, how a
/// flow's instance is built, and how it uses ECN. `algorithms!` below lists
/// the implementations once; adding an algorithm is its file, one line
/// there and, for a new state type, one line in `any_cc!`.
pub trait Algorithm: ReadParams {
    /// The name in `cc = "..."`.
    const NAME: &'static str;
    /// Where the rules come from, for `ccarena list`.
    const REFERENCE: &'static str;
    /// Flow `flow`'s instance, at its connection's establishment.
    fn build(&self, init: &CcInit, flow: u32) -> AnyCc;
    /// How it uses ECN.
    fn ecn(&self) -> EcnUse {
        EcnUse::CLASSIC
    }
}

/// The registry: `CcConfig`, one variant per algorithm name, and its
/// methods, each forwarded to the variant's `Algorithm`.
macro_rules! algorithms {
    ($($variant:ident($cfg:ty)),* $(,)?) => {
        /// A validated algorithm choice with its parameters.
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcConfig { $($variant($cfg)),* }

        impl CcConfig {
            /// Every name accepted in `cc = "..."`.
            pub const NAMES: &'static [&'static str] = &[$(<$cfg as Algorithm>::NAME),*];

            /// Where each algorithm's rules come from, for `ccarena list`.
            pub fn reference(name: &str) -> &'static str {
                $(if name == <$cfg as Algorithm>::NAME {
                    return <$cfg as Algorithm>::REFERENCE;
                })*
                ""
            }

            pub fn parse(name: &str, params: &serde_json::Value) -> Result<CcConfig, String> {
                $(if name == <$cfg as Algorithm>::NAME {
                    return Ok(CcConfig::$variant(<$cfg as ReadParams>::read(params)?));
                })*
                Err(format!(
                    "unknown congestion control {name:?}; known: {}",
                    Self::NAMES.join(", ")
                ))
            }

            pub fn name(&self) -> &'static str {
                match self { $(CcConfig::$variant(_) => <$cfg as Algorithm>::NAME),* }
            }

            /// The parameters with every default filled in, for scenario.json.
            pub fn params_json(&self) -> serde_json::Value {
                match self { $(CcConfig::$variant(c) => serde_json::to_value(c)),* }
                    .expect("cc params serialize")
            }

            /// How the chosen algorithm uses ECN (`Algorithm::ecn`).
            pub fn ecn(&self) -> EcnUse {
                match self { $(CcConfig::$variant(c) => c.ecn()),* }
            }

            /// Flow `flow`'s algorithm, at its connection's establishment.
            pub fn build(&self, init: &CcInit, flow: u32) -> AnyCc {
                match self { $(CcConfig::$variant(c) => c.build(init, flow)),* }
            }
        }
    };
}

// In the order `ccarena list` shows them.
algorithms! {
    Reno(reno::RenoConfig),
    Cubic(cubic::CubicConfig),
    Dctcp(dctcp::DctcpConfig),
    Vegas(vegas::VegasConfig),
    Westwood(westwood::WestwoodConfig),
    Htcp(htcp::HtcpConfig),
    Illinois(illinois::IllinoisConfig),
    Bic(bic::BicConfig),
    Scalable(scalable::ScalableConfig),
    Hybla(hybla::HyblaConfig),
    Yeah(yeah::YeahConfig),
    LedbatPP(ledbat::LedbatConfig),
    Copa(copa::CopaConfig),
    Vivace(vivace::VivaceConfig),
    Prague(prague::PragueConfig),
    Bbr1(bbr::Bbr1Config),
    Bbq(bbr::BbqConfig),
    Bbr2(bbr::Bbr2Config),
    Bbr3(bbr::Bbr3Config),
    Python(external::PythonConfig),
}

/// In a normalized scenario a flow's algorithm is two fields, `cc` (its
/// name) and `cc_params` (every parameter, defaults filled in); they are
/// parsed once, into the typed `CcConfig`, when the scenario is read.
impl serde::Serialize for CcConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("cc", self.name())?;
        m.serialize_entry("cc_params", &self.params_json())?;
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for CcConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Fields {
            cc: String,
            #[serde(default)]
            cc_params: serde_json::Value,
        }
        let f = Fields::deserialize(d)?;
        CcConfig::parse(&f.cc, &f.cc_params).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use serde_json::json;

    fn ecn(name: &str, params: serde_json::Value) -> EcnUse {
        CcConfig::parse(name, &params).unwrap().ecn()
    }

    #[test]
    fn each_algorithm_uses_ecn_as_its_linux_module_does() {
        assert_eq!(ecn("cubic", json!({})), EcnUse::CLASSIC);
        assert_eq!(ecn("bbr1", json!({})), EcnUse::CLASSIC);
        // TCP_CONG_NEEDS_ECN; Prague's ECT(1).
        assert_eq!(ecn("dctcp", json!({})), EcnUse::NEEDED);
        let prague = ecn("prague", json!({}));
        assert_eq!(
            (prague.ect, prague.needs, prague.ect_permanent),
            (Ecn::Ect1, true, true)
        );
        // BBRv2-alpha keeps ECT with its ECN logic on; BBRv3 only where the
        // route is `ecn_low` too (`bbr_can_use_ecn`). Both echo every mark.
        let on = json!({ "ecn": true, "ecn_low": false });
        assert!(ecn("bbr2", on.clone()).ect_permanent);
        assert!(!ecn("bbr3", on).ect_permanent);
        assert!(ecn("bbr3", json!({ "ecn": true, "ecn_low": true })).ect_permanent);
        assert!(!ecn("bbr3", json!({ "ecn": false })).ect_permanent);
        let b3 = ecn("bbr3", json!({ "ect1": true }));
        assert!(b3.accurate_feedback && !b3.needs && b3.ect == Ecn::Ect1);
    }

    #[test]
    fn every_name_parses_to_itself_and_unknown_ones_list_the_names() {
        for &name in CcConfig::NAMES.iter().filter(|&&n| n != "python") {
            assert_eq!(
                CcConfig::parse(name, &serde_json::Value::Null)
                    .unwrap()
                    .name(),
                name
            );
            assert!(!CcConfig::reference(name).is_empty(), "{name}");
        }
        let e = CcConfig::parse("nope", &serde_json::Value::Null).unwrap_err();
        assert!(e.contains("cubic") && e.contains("bbr3"), "{e}");
    }
}
