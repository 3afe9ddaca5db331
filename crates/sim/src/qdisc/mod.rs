//! Queue disciplines at the bottleneck. Written against an abstract clock
//! (`now` is passed in) and the packet descriptor, so the user-space
//! bottleneck of the Linux backend runs this very code.

pub mod fifo;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::units::{Bytes, Time};

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

pub trait Qdisc {
    /// Offer a packet; `pkt.enqueued` is already set to `now`. A packet the
    /// qdisc refuses, or one it evicts to make room, is reported in `ctx`.
    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx);
    /// Take the next packet to send, if any (the AQM may drop or mark on the way).
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx) -> Option<Packet>;
    fn backlog_bytes(&self) -> Bytes;
    fn backlog_packets(&self) -> u32;
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
        }
    };
}

any_qdisc! {
    TailDrop(fifo::Fifo),
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

/// A validated queue-discipline choice with its parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QdiscConfig {
    Taildrop { limit: Limit },
}

impl QdiscConfig {
    /// Every name accepted in `bottleneck.qdisc`.
    pub const NAMES: &'static [&'static str] = &["taildrop"];

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
            _ => Err(format!(
                "unknown queue discipline {name:?}; known: {}",
                Self::NAMES.join(", ")
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            QdiscConfig::Taildrop { .. } => "taildrop",
        }
    }

    pub fn build(&self) -> AnyQdisc {
        match self {
            QdiscConfig::Taildrop { limit } => AnyQdisc::TailDrop(fifo::Fifo::new(*limit)),
        }
    }
}
