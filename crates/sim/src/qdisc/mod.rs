//! Queue disciplines at the bottleneck. Written against an abstract clock
//! (`now` is passed in) and the packet descriptor, so the user-space
//! bottleneck of the Linux backend runs this very code.
//!
//! Each discipline lives in its own file with a `XxxConfig` (serde,
//! `deny_unknown_fields`, Linux defaults in `Default`, durations and sizes as
//! strings read by `units.rs`, ranges checked by `validate`). Parameters that
//! depend on the bottleneck (`buffer`, rate, MTU, `ecn`) are resolved by
//! [`QdiscConfig::parse`] from a [`QdiscEnv`]; each module documents how.
//!
//! `bottleneck.buffer` per discipline (an explicit key in the
//! discipline's table wins):
//!
//! | qdisc    | buffer in bytes                    | buffer in packets          |
//! |----------|------------------------------------|----------------------------|
//! | taildrop | bfifo limit                        | pfifo limit                |
//! | codel    | byte limit (bfifo rule)            | `limit`                    |
//! | pie      | byte limit (bfifo rule)            | `limit`                    |
//! | red      | child bfifo limit (`limit`)        | child pfifo limit          |
//! | fq_codel | `memory_limit` (limit stays 10240) | `limit` (memory 32 MiB)    |
//! | cake     | `memlimit`                         | packet limit x MTU         |
//!
//! `bottleneck.ecn = true` turns ECN marking on where Linux's default is
//! off (codel, red, pie); fq_codel marks by default; CAKE always marks ECT
//! packets. A discipline's own `ecn` key overrides both.

pub mod cake;
pub mod codel;
mod drr;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod pie;
pub mod red;

use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::units::{parse_duration, parse_size, Bytes, Dur, SizeSpec, Time};

/// Why a packet left the queue without being sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue (or its memory) was full.
    Overflow,
    /// The AQM chose to drop it.
    Aqm,
}

/// What a qdisc reports besides the packets it hands out.
#[derive(Clone, Copy, Debug)]
pub enum QdiscEvent {
    Drop {
        pkt: Packet,
        cause: DropCause,
    },
    /// The packet (of this flow) was CE-marked instead of dropped.
    Mark {
        flow: u32,
    },
}

/// Per-call context: where drops and marks go, and the qdisc's random stream.
pub struct QdiscCtx<'a> {
    pub events: &'a mut Vec<QdiscEvent>,
    pub rng: &'a mut Rng,
}

impl QdiscCtx<'_> {
    pub fn drop(&mut self, pkt: Packet, cause: DropCause) {
        self.events.push(QdiscEvent::Drop { pkt, cause });
    }
    pub fn mark(&mut self, pkt: &mut Packet) {
        pkt.ecn = crate::packet::Ecn::Ce;
        self.events.push(QdiscEvent::Mark { flow: pkt.flow });
    }
}

/// Linux `INET_ECN_set_ce` (include/net/inet_ecn.h): an ECT(0), ECT(1) or
/// already-CE packet ends up CE and the call succeeds; a Not-ECT packet is
/// left alone and the call fails (the caller then drops). A `Mark` event is
/// reported only when the codepoint changes, so a packet that two rules
/// mark (CoDel and `ce_threshold`) is counted once.
pub(crate) fn set_ce(pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
    match pkt.ecn {
        Ecn::NotEct => false,
        Ecn::Ce => true,
        Ecn::Ect0 | Ecn::Ect1 => {
            ctx.mark(pkt);
            true
        }
    }
}

pub trait Qdisc {
    /// Offer a packet; `pkt.enqueued` is already set to `now`. A packet the
    /// qdisc refuses, or one it evicts to make room, is reported in `ctx`.
    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx);
    /// Take the next packet to send, if any (the AQM may drop or mark on the way).
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx) -> Option<Packet>;
    fn backlog_bytes(&self) -> Bytes;
    fn backlog_packets(&self) -> u32;
    /// After `dequeue` returned `None` with packets still queued (a shaper
    /// inside the qdisc holding them back, as CAKE's with `bandwidth`): the
    /// time at which `dequeue` can next succeed, as Linux's qdisc watchdog.
    /// `None`: call `dequeue` again when a packet arrives or the link frees.
    fn next_ready(&self) -> Option<Time> {
        None
    }
}

/// How the queue limit is counted (bfifo or pfifo).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Bytes(u64),
    Packets(u32),
}

macro_rules! any_qdisc {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// Enum dispatch over the disciplines.
        pub enum AnyQdisc { $($variant($ty)),* }
        impl Qdisc for AnyQdisc {
            fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx) {
                match self { $(AnyQdisc::$variant(q) => q.enqueue(now, pkt, ctx)),* }
            }
            fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx) -> Option<Packet> {
                match self { $(AnyQdisc::$variant(q) => q.dequeue(now, ctx)),* }
            }
            fn backlog_bytes(&self) -> Bytes {
                match self { $(AnyQdisc::$variant(q) => q.backlog_bytes()),* }
            }
            fn backlog_packets(&self) -> u32 {
                match self { $(AnyQdisc::$variant(q) => q.backlog_packets()),* }
            }
            fn next_ready(&self) -> Option<Time> {
                match self { $(AnyQdisc::$variant(q) => q.next_ready()),* }
            }
        }
    };
}

any_qdisc! {
    TailDrop(fifo::Fifo),
    CoDel(codel::CoDel),
    FqCodel(fq_codel::FqCodel),
    Red(red::Red),
    Pie(pie::Pie),
    Cake(cake::Cake),
    DualPi2(dualpi2::DualPi2),
    FqPie(fq_pie::FqPie),
    Fq(fq::Fq),
}

/// What every discipline's parameters may depend on, resolved by the
/// scenario loader from `[bottleneck]`.
#[derive(Clone, Copy, Debug)]
pub struct QdiscEnv {
    /// The queue limit `buffer` resolves to (bytes, or packets for "Npkt").
    pub limit: Limit,
    /// Bottleneck rate.
    pub rate: crate::units::Rate,
    /// Largest packet on the wire (MTU plus framing), bytes.
    pub mtu_wire: u32,
    /// `bottleneck.ecn`: mark ECT packets instead of dropping where the discipline can.
    pub ecn: bool,
}

impl QdiscEnv {
    /// The ECN switch of a discipline: its own `ecn` key when given, else on
    /// when either Linux turns it on by default (fq_codel) or
    /// `bottleneck.ecn` asks for it.
    pub(crate) fn ecn(&self, explicit: Option<bool>, linux_default: bool) -> bool {
        explicit.unwrap_or(linux_default || self.ecn)
    }
}

/// A validated queue-discipline choice with its parameters, every value
/// that depends on `[bottleneck]` already resolved.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QdiscConfig {
    Taildrop {
        limit: Limit,
    },
    Codel {
        config: codel::CodelConfig,
        limit: Limit,
        ecn: bool,
        mtu: u32,
    },
    FqCodel(fq_codel::FqCodelSetup),
    Red(red::RedSetup),
    Pie {
        config: pie::PieConfig,
        limit: Limit,
        ecn: bool,
        mtu: u32,
    },
    Cake(cake::CakeSetup),
    DualPi2 {
        config: dualpi2::DualPi2Config,
        limit: Limit,
        mtu: u32,
    },
    FqPie(fq_pie::FqPieSetup),
    Fq(fq::FqSetup),
}

pub use crate::params::{parse_params, Params as QdiscParams};

/// Read a duration parameter and check it lies in `[lo, hi]`.
pub(crate) fn param_dur(name: &str, s: &str, lo: Dur, hi: Dur) -> Result<Dur, String> {
    let d = parse_duration(s).map_err(|e| format!("{name}: {e}"))?;
    if d < lo || d > hi {
        return Err(format!(
            "{name}: {s:?} is outside the allowed range {lo}..={hi}"
        ));
    }
    Ok(d)
}

/// Read a size parameter as bytes; packets count `mtu` bytes each. BDP
/// multiples are refused: a discipline's parameters do not know the RTT.
pub(crate) fn param_bytes(name: &str, s: &str, mtu: u32) -> Result<u64, String> {
    match parse_size(s).map_err(|e| format!("{name}: {e}"))? {
        SizeSpec::Bytes(b) => Ok(b),
        SizeSpec::Packets(n) => Ok((n * mtu as f64).round() as u64),
        SizeSpec::Bdp(_) => Err(format!(
            "{name}: {s:?} is a BDP multiple, which is not accepted here; give bytes (\"0.5MB\") or packets (\"100pkt\")"
        )),
    }
}

/// Check that `v` lies in `[lo, hi]`; the message names the parameter.
pub(crate) fn check_range<T: PartialOrd + std::fmt::Display>(
    name: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), String> {
    if v < lo || v > hi {
        return Err(format!(
            "{name}: {v} is outside the allowed range {lo}..={hi}"
        ));
    }
    Ok(())
}

/// The hash that stands for Linux's `skb_get_hash` (a keyed jhash of the
/// 5-tuple) in the flow-queueing disciplines: the murmur3 32-bit finalizer
/// of the flow id, with a fixed key. It is fixed, so two flow ids that
/// collide do so in every run; Linux draws its key at boot.
pub(crate) fn flow_hash(flow: u32) -> u32 {
    fmix32(flow ^ 0x9e37_79b9)
}

/// The host-address hash of CAKE's host isolation: the same finalizer with
/// another key, so a host id and a flow id with the same number do not hash
/// alike.
pub(crate) fn host_hash(host: u16) -> u32 {
    fmix32(host as u32 ^ 0x85eb_ca6b)
}

/// MurmurHash3's 32-bit finalizer (Appleby): a bijection on u32 with full avalanche.
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Linux `reciprocal_scale` (include/linux/kernel.h): map a 32-bit value
/// onto `[0, n)` by multiply and shift.
pub(crate) fn reciprocal_scale(v: u32, n: u32) -> u32 {
    ((v as u64 * n as u64) >> 32) as u32
}

impl QdiscConfig {
    /// Every name accepted in `bottleneck.qdisc`.
    pub const NAMES: &'static [&'static str] = &[
        "taildrop", "codel", "fq_codel", "red", "pie", "cake", "dualpi2", "fq_pie", "fq",
    ];

    /// Where each discipline's rules come from, for `ccarena list`.
    pub fn reference(name: &str) -> &'static str {
        match name {
            "taildrop" => "Linux net/sched/sch_fifo.c (pfifo, bfifo)",
            "codel" => "Linux net/sched/sch_codel.c; RFC 8289",
            "fq_codel" => "Linux net/sched/sch_fq_codel.c; RFC 8290",
            "red" => "Linux net/sched/sch_red.c; Floyd and Jacobson, ToN 1993",
            "pie" => "Linux net/sched/sch_pie.c; RFC 8033",
            "cake" => "Linux net/sched/sch_cake.c; Hoeiland-Joergensen et al., LANMAN 2018",
            "dualpi2" => "Linux net/sched/sch_dualpi2.c (6.18); RFC 9332 (L4S)",
            "fq_pie" => "Linux net/sched/sch_fq_pie.c; RFC 8033 per flow with RFC 8290's scheduler",
            "fq" => "Linux net/sched/sch_fq.c at a router (orphan flows, credit round robin, flow_limit)",
            _ => "",
        }
    }

    /// Build the config for `qdisc = name` from its `[bottleneck.<name>]`
    /// table (`params`, JSON null when absent). Errors name the parameter
    /// and its allowed range; the caller adds the file and the table path.
    pub fn parse(
        name: &str,
        params: &serde_json::Value,
        env: &QdiscEnv,
    ) -> Result<QdiscConfig, String> {
        match name {
            "taildrop" => {
                if !params.is_null() && params.as_object().is_some_and(|m| !m.is_empty()) {
                    return Err(
                        "taildrop has no parameters (its limit is bottleneck.buffer)".into(),
                    );
                }
                Ok(QdiscConfig::Taildrop { limit: env.limit })
            }
            "codel" => {
                let config: codel::CodelConfig = parse_params(params)?;
                Ok(QdiscConfig::Codel {
                    limit: config.limit.map_or(env.limit, Limit::Packets),
                    ecn: env.ecn(config.ecn, false),
                    mtu: env.mtu_wire,
                    config,
                })
            }
            "fq_codel" => Ok(QdiscConfig::FqCodel(fq_codel::FqCodelSetup::resolve(
                parse_params(params)?,
                env,
            )?)),
            "red" => Ok(QdiscConfig::Red(red::RedSetup::resolve(
                parse_params(params)?,
                env,
            )?)),
            "pie" => {
                let config: pie::PieConfig = parse_params(params)?;
                Ok(QdiscConfig::Pie {
                    limit: config.limit.map_or(env.limit, Limit::Packets),
                    ecn: env.ecn(config.ecn, false),
                    mtu: env.mtu_wire,
                    config,
                })
            }
            "cake" => Ok(QdiscConfig::Cake(cake::CakeSetup::resolve(
                parse_params(params)?,
                env,
            )?)),
            // DualPI2 always marks ECT packets (no ecn switch): buffer in
            // packets is the shared limit, in bytes a byte limit.
            "fq" => Ok(QdiscConfig::Fq(fq::FqSetup::resolve(
                parse_params(params)?,
                env,
            )?)),
            "fq_pie" => Ok(QdiscConfig::FqPie(fq_pie::FqPieSetup::resolve(
                parse_params(params)?,
                env,
            )?)),
            "dualpi2" => {
                let config: dualpi2::DualPi2Config = parse_params(params)?;
                Ok(QdiscConfig::DualPi2 {
                    limit: env.limit,
                    mtu: env.mtu_wire,
                    config,
                })
            }
            _ => Err(format!(
                "unknown queue discipline {name:?}; known: {}",
                Self::NAMES.join(", ")
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            QdiscConfig::Taildrop { .. } => "taildrop",
            QdiscConfig::Codel { .. } => "codel",
            QdiscConfig::FqCodel(_) => "fq_codel",
            QdiscConfig::Red(_) => "red",
            QdiscConfig::Pie { .. } => "pie",
            QdiscConfig::Cake(_) => "cake",
            QdiscConfig::DualPi2 { .. } => "dualpi2",
            QdiscConfig::FqPie(_) => "fq_pie",
            QdiscConfig::Fq(_) => "fq",
        }
    }

    pub fn build(&self) -> AnyQdisc {
        match self {
            QdiscConfig::Taildrop { limit } => AnyQdisc::TailDrop(fifo::Fifo::new(*limit)),
            QdiscConfig::Codel {
                config,
                limit,
                ecn,
                mtu,
            } => AnyQdisc::CoDel(codel::CoDel::new(config, *limit, *ecn, *mtu)),
            QdiscConfig::FqCodel(s) => AnyQdisc::FqCodel(fq_codel::FqCodel::new(s)),
            QdiscConfig::Red(s) => AnyQdisc::Red(red::Red::new(s)),
            QdiscConfig::Pie {
                config,
                limit,
                ecn,
                mtu,
            } => AnyQdisc::Pie(pie::Pie::new(config, *limit, *ecn, *mtu)),
            QdiscConfig::Cake(s) => AnyQdisc::Cake(cake::Cake::new(s)),
            QdiscConfig::FqPie(s) => AnyQdisc::FqPie(fq_pie::FqPie::new(s)),
            QdiscConfig::Fq(s) => AnyQdisc::Fq(fq::Fq::new(s)),
            QdiscConfig::DualPi2 { config, limit, mtu } => {
                AnyQdisc::DualPi2(dualpi2::DualPi2::new(config, *limit, *mtu))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_discipline_parses_with_defaults_round_trips_and_builds() {
        // The normalized scenario stores QdiscConfig as JSON: it must come
        // back equal and build the same discipline.
        for limit in [Limit::Bytes(250_000), Limit::Packets(200)] {
            let env = testkit::env(limit);
            for name in QdiscConfig::NAMES {
                let c = QdiscConfig::parse(name, &serde_json::Value::Null, &env).unwrap();
                assert_eq!(c.name(), *name);
                let json = serde_json::to_value(&c).unwrap();
                let back: QdiscConfig = serde_json::from_value(json).unwrap();
                assert_eq!(back, c);
                let q = c.build();
                assert_eq!(q.backlog_packets(), 0);
                assert_eq!(q.next_ready(), None);
            }
        }
        let e = QdiscConfig::parse(
            "sfq",
            &serde_json::Value::Null,
            &testkit::env(Limit::Packets(1)),
        )
        .unwrap_err();
        assert!(e.contains("cake"), "{e}");
    }
}
