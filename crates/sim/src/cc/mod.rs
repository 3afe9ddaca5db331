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

/// A validated algorithm choice with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum CcConfig {
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
    Prague(prague::PragueConfig),
    Copa(copa::CopaConfig),
    Vivace(vivace::VivaceConfig),
    Python(external::PythonConfig),
    Bbr1(bbr::Bbr1Config),
    Bbq(bbr::BbqConfig),
    Bbr2(bbr::Bbr2Config),
    Bbr3(bbr::Bbr3Config),
}

pub use crate::params::{parse_params, Params as CcParams};

impl CcConfig {
    /// Every name accepted in `cc = "..."`.
    pub const NAMES: &'static [&'static str] = &[
        "reno",
        "cubic",
        "dctcp",
        "vegas",
        "westwood",
        "htcp",
        "illinois",
        "bic",
        "scalable",
        "hybla",
        "yeah",
        "ledbat_pp",
        "copa",
        "vivace",
        "prague",
        "bbr1",
        "bbq",
        "bbr2",
        "bbr3",
        "python",
    ];

    /// Where each algorithm's rules come from, for `ccarena list`.
    pub fn reference(name: &str) -> &'static str {
        match name {
            "reno" => "Linux net/ipv4/tcp_cong.c (tcp_reno_*); RFC 5681",
            "cubic" => "Linux net/ipv4/tcp_cubic.c (with HyStart); RFC 9438",
            "dctcp" => "Linux net/ipv4/tcp_dctcp.c; RFC 8257",
            "vegas" => "Linux net/ipv4/tcp_vegas.c; Brakmo and Peterson, JSAC 1995",
            "westwood" => "Linux net/ipv4/tcp_westwood.c (Westwood+); Grieco and Mascolo, CCR 2004",
            "htcp" => "Linux net/ipv4/tcp_htcp.c; Leith and Shorten, PFLDnet 2004",
            "illinois" => "Linux net/ipv4/tcp_illinois.c; Liu, Basar and Srikant, VALUETOOLS 2006",
            "bic" => "Linux net/ipv4/tcp_bic.c; Xu, Harfoush and Rhee, INFOCOM 2004",
            "scalable" => "Linux net/ipv4/tcp_scalable.c; Kelly, CCR 2003",
            "hybla" => "Linux net/ipv4/tcp_hybla.c; Caini and Firrincieli, IJSCN 2004",
            "yeah" => "Linux net/ipv4/tcp_yeah.c; Baiocchi, Castellani and Vacirca, PFLDnet 2007",
            "ledbat_pp" => "LEDBAT++: draft-irtf-iccrg-ledbat-plus-plus-01 on RFC 6817 (less than best effort)",
            "copa" => "Copa: Arun and Balakrishnan, NSDI 2018, with genericCC's constants (no kernel module)",
            "vivace" => "PCC Vivace: Dong et al., NSDI 2018; the authors' PCC-Uspace NSDI-2018 branch (pcc.h) and PCC-Kernel tcp_pcc.c (no mainline module)",
            "prague" => "L4STeam/linux net/ipv4/tcp_prague.c (v0.7, window mode); draft-briscoe-iccrg-prague-congestion-control",
            "bbr1" => "Linux net/ipv4/tcp_bbr.c (BBRv1)",
            "bbq" => "BBRv1 with BBQ's probing rule (the BBQ paper)",
            "bbr2" => "google/bbr v2alpha branch, tcp_bbr2.c",
            "bbr3" => "google/bbr v3 branch, tcp_bbr.c; draft-ietf-ccwg-bbr",
            "python" => "your own: a ccarena.Controller subclass, cc_params = { class = \"module:Class\" } (docs/controllers.md)",
            _ => "",
        }
    }

    pub fn parse(name: &str, params: &serde_json::Value) -> Result<CcConfig, String> {
        Ok(match name {
            "reno" => CcConfig::Reno(parse_params(params)?),
            "cubic" => CcConfig::Cubic(parse_params(params)?),
            "dctcp" => CcConfig::Dctcp(parse_params(params)?),
            "vegas" => CcConfig::Vegas(parse_params(params)?),
            "westwood" => CcConfig::Westwood(parse_params(params)?),
            "htcp" => CcConfig::Htcp(parse_params(params)?),
            "illinois" => CcConfig::Illinois(parse_params(params)?),
            "bic" => CcConfig::Bic(parse_params(params)?),
            "scalable" => CcConfig::Scalable(parse_params(params)?),
            "hybla" => CcConfig::Hybla(parse_params(params)?),
            "yeah" => CcConfig::Yeah(parse_params(params)?),
            "ledbat_pp" => CcConfig::LedbatPP(parse_params(params)?),
            "prague" => CcConfig::Prague(parse_params(params)?),
            "copa" => CcConfig::Copa(parse_params(params)?),
            "vivace" => CcConfig::Vivace(parse_params(params)?),
            "python" => {
                let c = external::PythonConfig::parse(params)?;
                if !external::available() {
                    return Err("python controllers run through the Python package (ccarena.run, the ccarena command)".into());
                }
                CcConfig::Python(c)
            }
            "bbr1" => CcConfig::Bbr1(parse_params(params)?),
            "bbq" => CcConfig::Bbq(parse_params(params)?),
            "bbr2" => CcConfig::Bbr2(parse_params(params)?),
            "bbr3" => CcConfig::Bbr3(parse_params(params)?),
            _ => {
                return Err(format!(
                    "unknown congestion control {name:?}; known: {}",
                    Self::NAMES.join(", ")
                ))
            }
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::Reno(_) => "reno",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::Dctcp(_) => "dctcp",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Westwood(_) => "westwood",
            CcConfig::Htcp(_) => "htcp",
            CcConfig::Illinois(_) => "illinois",
            CcConfig::Bic(_) => "bic",
            CcConfig::Scalable(_) => "scalable",
            CcConfig::Hybla(_) => "hybla",
            CcConfig::Yeah(_) => "yeah",
            CcConfig::LedbatPP(_) => "ledbat_pp",
            CcConfig::Prague(_) => "prague",
            CcConfig::Copa(_) => "copa",
            CcConfig::Vivace(_) => "vivace",
            CcConfig::Python(_) => "python",
            CcConfig::Bbr1(_) => "bbr1",
            CcConfig::Bbq(_) => "bbq",
            CcConfig::Bbr2(_) => "bbr2",
            CcConfig::Bbr3(_) => "bbr3",
        }
    }

    /// The parameters with every default filled in, for scenario.json.
    pub fn params_json(&self) -> serde_json::Value {
        match self {
            CcConfig::Reno(c) => serde_json::to_value(c),
            CcConfig::Cubic(c) => serde_json::to_value(c),
            CcConfig::Dctcp(c) => serde_json::to_value(c),
            CcConfig::Vegas(c) => serde_json::to_value(c),
            CcConfig::Westwood(c) => serde_json::to_value(c),
            CcConfig::Htcp(c) => serde_json::to_value(c),
            CcConfig::Illinois(c) => serde_json::to_value(c),
            CcConfig::Bic(c) => serde_json::to_value(c),
            CcConfig::Scalable(c) => serde_json::to_value(c),
            CcConfig::Hybla(c) => serde_json::to_value(c),
            CcConfig::Yeah(c) => serde_json::to_value(c),
            CcConfig::LedbatPP(c) => serde_json::to_value(c),
            CcConfig::Prague(c) => serde_json::to_value(c),
            CcConfig::Copa(c) => serde_json::to_value(c),
            CcConfig::Vivace(c) => serde_json::to_value(c),
            CcConfig::Python(c) => serde_json::to_value(c),
            CcConfig::Bbr1(c) => serde_json::to_value(c),
            CcConfig::Bbq(c) => serde_json::to_value(c),
            CcConfig::Bbr2(c) => serde_json::to_value(c),
            CcConfig::Bbr3(c) => serde_json::to_value(c),
        }
        .expect("cc params serialize")
    }

    /// An ECN sender with this algorithm marks its retransmissions ECT too.
    /// Linux sends a retransmission Not-ECT (RFC 3168 6.1.5,
    /// `tcp_ecn_send`) unless the algorithm needs ECN on every packet
    /// (DCTCP's `TCP_CONG_NEEDS_ECN`) or set `TCP_ECN_ECT_PERMANENT` (BBRv3's
    /// `bbr_init` when `bbr_can_use_ecn`: ECN logic on and the `ecn_low`
    /// route; BBRv2-alpha's with `ecn_enable`).
    pub fn ect_permanent(&self) -> bool {
        match self {
            CcConfig::Dctcp(_) | CcConfig::Prague(_) => true,
            CcConfig::Bbr3(c) => c.ecn && c.ecn_low,
            CcConfig::Bbr2(c) => c.ecn,
            _ => false,
        }
    }

    /// The algorithm needs ECN (`TCP_CONG_NEEDS_ECN`: DCTCP, Prague): its
    /// flows negotiate it unless the scenario says `ecn = false`.
    pub fn needs_ecn(&self) -> bool {
        matches!(self, CcConfig::Dctcp(_) | CcConfig::Prague(_))
    }

    /// The ECN-capable codepoint an ECN sender with this algorithm sets:
    /// ECT(1) for L4S senders (RFC 9331: Prague, `tcp_prague.c`'s
    /// `INET_ECN_xmit_ect_1`), ECT(0) otherwise.
    pub fn ect(&self) -> crate::packet::Ecn {
        match self {
            CcConfig::Prague(_) => crate::packet::Ecn::Ect1,
            CcConfig::Bbr3(c) if c.ect1 => crate::packet::Ecn::Ect1,
            CcConfig::Bbr2(c) if c.ect1 => crate::packet::Ecn::Ect1,
            _ => crate::packet::Ecn::Ect0,
        }
    }

    /// Receivers of this algorithm echo every CE mark (the accurate ECN
    /// feedback DCTCP and BBRv2/v3 rely on) rather than RFC 3168's latch.
    pub fn wants_accurate_ecn(&self) -> bool {
        matches!(
            self,
            CcConfig::Dctcp(_) | CcConfig::Prague(_) | CcConfig::Bbr2(_) | CcConfig::Bbr3(_)
        )
    }

    /// Flow `flow`'s algorithm, at its connection's establishment.
    pub fn build(&self, init: &CcInit, flow: u32) -> AnyCc {
        match self {
            CcConfig::Python(c) => AnyCc::External(external::build(c, init, flow)),
            CcConfig::Prague(c) => AnyCc::Prague(prague::Prague::new(c, init)),
            CcConfig::Copa(c) => AnyCc::Copa(copa::Copa::new(c, init)),
            CcConfig::Vivace(c) => AnyCc::Vivace(vivace::Vivace::new(c, init)),
            CcConfig::Reno(c) if c.hystart_plus_plus => AnyCc::RenoPP(classic::Classic::new(
                hystart_pp::WithHystartPP {
                    inner: reno::RenoRule::new(c),
                    h: Default::default(),
                },
                init,
            )),
            CcConfig::Reno(c) => AnyCc::Reno(classic::Classic::new(reno::RenoRule::new(c), init)),
            CcConfig::Cubic(c) if c.hystart_plus_plus => AnyCc::CubicPP(classic::Classic::new(
                hystart_pp::WithHystartPP {
                    inner: cubic::CubicRule::new(c, init),
                    h: Default::default(),
                },
                init,
            )),
            CcConfig::Cubic(c) => {
                AnyCc::Cubic(classic::Classic::new(cubic::CubicRule::new(c, init), init))
            }
            CcConfig::Dctcp(c) => {
                AnyCc::Dctcp(classic::Classic::new(dctcp::DctcpRule::new(c, init), init))
            }
            CcConfig::Vegas(c) => {
                AnyCc::Vegas(classic::Classic::new(vegas::VegasRule::new(c), init))
            }
            CcConfig::Westwood(c) => AnyCc::Westwood(classic::Classic::new(
                westwood::WestwoodRule::new(c, init),
                init,
            )),
            CcConfig::Htcp(c) => {
                AnyCc::Htcp(classic::Classic::new(htcp::HtcpRule::new(c, init), init))
            }
            CcConfig::Illinois(c) => {
                AnyCc::Illinois(classic::Classic::new(illinois::IllinoisRule::new(c), init))
            }
            CcConfig::Bic(c) => AnyCc::Bic(classic::Classic::new(bic::BicRule::new(c), init)),
            CcConfig::Scalable(_) => {
                AnyCc::Scalable(classic::Classic::new(scalable::ScalableRule, init))
            }
            CcConfig::Hybla(c) => {
                AnyCc::Hybla(classic::Classic::new(hybla::HyblaRule::new(c), init))
            }
            CcConfig::Yeah(c) => AnyCc::Yeah(classic::Classic::new(yeah::YeahRule::new(c), init)),
            CcConfig::LedbatPP(c) => {
                AnyCc::LedbatPP(classic::Classic::new(ledbat::LedbatRule::new(c), init))
            }
            CcConfig::Bbr1(c) => AnyCc::Bbr1(bbr::Bbr1::new(c, init)),
            CcConfig::Bbq(c) => AnyCc::Bbr1(bbr::bbq::build(c, init)),
            CcConfig::Bbr2(c) => AnyCc::Bbr3(bbr::Bbr3::new(c, init)),
            CcConfig::Bbr3(c) => AnyCc::Bbr3(bbr::Bbr3::new(c, init)),
        }
    }
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
