//! The scenario file as written (TOML, handed over as JSON): every field
//! optional where a default exists, every unit still a string. serde rejects
//! unknown fields and wrong types; `normalize` checks values and resolves units.

use crate::net::impair::{JitterConfig, LossConfig};
use crate::net::trace::TraceSpec;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// A string that carries a unit ("20ms", "100Mbps", "1BDP").
#[derive(Clone, Debug, PartialEq)]
pub struct UnitStr(pub String);

impl<'de> Deserialize<'de> for UnitStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = UnitStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quoted value with a unit, such as \"20ms\", \"100Mbps\" or \"1BDP\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UnitStr, E> {
                Ok(UnitStr(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub duration: Option<UnitStr>,
    pub seed: Option<u64>,
    pub bottleneck: Option<RawBottleneck>,
    /// A network instead of the dumbbell: its links, each crossed by the
    /// flows whose `route` names it.
    pub links: Option<Vec<RawLink>>,
    /// A shorthand for a network: `kind = "parking_lot"` with `hops` links
    /// named hop1..hopN, all with the link fields given here.
    pub topology: Option<RawTopology>,
    pub path: Option<RawPath>,
    pub flows: Option<Vec<RawFlow>>,
    pub sample: Option<RawSample>,
    pub hosts: Option<RawHosts>,
    pub capture: Option<RawCapture>,
}

/// `[capture]`: packet captures of the run (`capture`).
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RawCapture {
    pub at: Option<OneOrMany>,
    pub flows: Option<Vec<u32>>,
    pub packets: Option<String>,
    pub snaplen: Option<u32>,
    pub max_packets: Option<u64>,
}

/// A string, or a list of them.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// `[hosts]` as written (`scenario::hosts` normalizes it).
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHosts {
    /// "measured", "none", or a table `{ sender_us = [...], receiver_us = [...] }`.
    pub latency: Option<serde_json::Value>,
    pub tso_defer: Option<bool>,
    pub sack_compress: Option<bool>,
    pub push_acks: Option<bool>,
    pub window_acks: Option<bool>,
    pub advertised_window: Option<bool>,
    pub rcv_rtt_timestamps: Option<bool>,
    pub timestamps: Option<bool>,
    pub delack: Option<bool>,
    pub hz: Option<serde_json::Value>,
    /// "drawn", "fixed", or a factor.
    pub run_speed: Option<serde_json::Value>,
}

/// Declares `RawBottleneck` with the fields of a queueing link, and the
/// flat forms of `[[links]]` and `[topology]` that carry the same fields
/// beside their own. A link's fields are written out in each struct rather
/// than `#[serde(flatten)]`ed from `RawBottleneck`: serde reads a flattened
/// struct from a buffer that `serde_path_to_error` cannot see into, so a
/// wrong type in any of them was reported as `links[0]` or `topology`
/// instead of `links[0].rate` (issue 39).
macro_rules! queue_tables {
    ($($(#[$doc:meta])* $field:ident: $ty:ty,)*) => {
        /// Unknown keys land in `qdisc_params` and are checked by `normalize`
        /// (serde cannot combine `flatten` with `deny_unknown_fields`).
        #[derive(Deserialize, Debug, Default, Clone)]
        pub struct RawBottleneck {
            $($(#[$doc])* pub $field: $ty,)*
            /// `[bottleneck.<qdisc>]` parameter tables, checked against `qdisc`.
            #[serde(flatten)]
            pub qdisc_params: serde_json::Map<String, serde_json::Value>,
        }

        /// `RawLink` as written: its name and delay beside a link's fields.
        #[derive(Deserialize)]
        struct FlatLink {
            name: Option<String>,
            delay: Option<UnitStr>,
            $($field: $ty,)*
            #[serde(flatten)]
            qdisc_params: serde_json::Map<String, serde_json::Value>,
        }

        impl From<FlatLink> for RawLink {
            fn from(l: FlatLink) -> RawLink {
                RawLink {
                    name: l.name,
                    delay: l.delay,
                    queue: RawBottleneck {
                        $($field: l.$field,)*
                        qdisc_params: l.qdisc_params,
                    },
                }
            }
        }

        /// `RawTopology` as written: its kind and hops beside a link's fields.
        #[derive(Deserialize)]
        struct FlatTopology {
            kind: Option<String>,
            hops: Option<i64>,
            name: Option<String>,
            delay: Option<UnitStr>,
            $($field: $ty,)*
            #[serde(flatten)]
            qdisc_params: serde_json::Map<String, serde_json::Value>,
        }

        impl From<FlatTopology> for RawTopology {
            fn from(t: FlatTopology) -> RawTopology {
                RawTopology {
                    kind: t.kind,
                    hops: t.hops,
                    link: RawLink {
                        name: t.name,
                        delay: t.delay,
                        queue: RawBottleneck {
                            $($field: t.$field,)*
                            qdisc_params: t.qdisc_params,
                        },
                    },
                }
            }
        }
    };
}

queue_tables! {
    rate: Option<UnitStr>,
    buffer: Option<UnitStr>,
    bdp_rtt: Option<UnitStr>,
    qdisc: Option<String>,
    ecn: Option<bool>,
    burst: Option<UnitStr>,
    /// `[[time, rate], ...]`: the bottleneck rate changes at these times.
    rate_schedule: Option<Vec<(UnitStr, UnitStr)>>,
    /// A delivery-opportunity trace (Mahimahi's format) instead of `rate`.
    trace: Option<RawTrace>,
    /// A token-bucket policer at the link's ingress.
    policer: Option<RawPolicer>,
    /// Link-layer framing per packet, bytes ("38B").
    overhead: Option<UnitStr>,
    /// Random loss and jitter after the link's queue (`[[links]]` only).
    loss: Option<LossConfig>,
    jitter: Option<JitterConfig>,
}

/// `policer = { rate = "10Mbps", burst = "64KB" }`.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawPolicer {
    pub rate: UnitStr,
    pub burst: Option<UnitStr>,
}

/// `trace`: the timestamps (ms) themselves, or `{ name, ms }` as the Python
/// loader gives a trace file it read; a file name reaching the core unread
/// is an error.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum RawTrace {
    Inline(Vec<u64>),
    Named { name: String, ms: Vec<u64> },
    File(String),
}

impl RawTrace {
    pub fn spec(&self) -> Result<TraceSpec, String> {
        let spec = match self {
            RawTrace::Inline(ms) => TraceSpec {
                name: "inline".into(),
                ms: ms.clone(),
            },
            RawTrace::Named { name, ms } => TraceSpec {
                name: name.clone(),
                ms: ms.clone(),
            },
            RawTrace::File(f) => {
                return Err(format!(
                    "{f:?}: a trace file is read by ccarena's Python loader (ccarena run, validate, ccarena.run); given to the core directly, a trace is its list of millisecond timestamps"
                ))
            }
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// `[topology]`: `kind` ("dumbbell" or "parking_lot"), `hops` (parking
/// lot), and the fields of every link it makes (those of `[[links]]` but
/// `name`).
#[derive(Deserialize, Debug, Default)]
#[serde(from = "FlatTopology")]
pub struct RawTopology {
    pub kind: Option<String>,
    pub hops: Option<i64>,
    pub link: RawLink,
}

/// One `[[links]]` entry: a queueing link (the fields of `[bottleneck]`)
/// with a name and the propagation delay that follows it.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(from = "FlatLink")]
pub struct RawLink {
    pub name: Option<String>,
    pub delay: Option<UnitStr>,
    pub queue: RawBottleneck,
}

/// Path properties; under `[path]` they are defaults for every flow.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawPath {
    pub rtt: Option<UnitStr>,
    pub rtt_split: Option<f64>,
    pub access_rate: Option<UnitStr>,
    /// Random loss on the data path, before the bottleneck.
    pub loss: Option<LossConfig>,
    /// Random loss on the ACK path.
    pub ack_loss: Option<LossConfig>,
    /// Jitter on the data path and on the ACK path.
    pub jitter: Option<JitterConfig>,
    pub ack_jitter: Option<JitterConfig>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    pub cc: Option<String>,
    pub cc_params: Option<serde_json::Value>,
    pub count: Option<i64>,
    pub label: Option<String>,
    pub rtt: Option<UnitStr>,
    pub rtt_split: Option<f64>,
    pub access_rate: Option<UnitStr>,
    pub start: Option<UnitStr>,
    pub size: Option<UnitStr>,
    /// `"fq" | "internal" | "none"`, or `{ mode = "fq", max_rate = "8.5Mbps" }`.
    pub pacing: Option<serde_json::Value>,
    pub rwnd: Option<UnitStr>,
    pub ecn: Option<bool>,
    pub init_cwnd: Option<i64>,
    pub mss: Option<i64>,
    /// Successive flows: each next one starts `gap` after the previous completes.
    pub repeat: Option<RawRepeat>,
    /// Trace replay: `[[offset, bytes], ...]` written at start + offset.
    pub chunks: Option<Vec<(UnitStr, UnitStr)>>,
    /// Sender host id (default: the flow's index).
    pub host: Option<i64>,
    pub loss: Option<LossConfig>,
    pub ack_loss: Option<LossConfig>,
    pub jitter: Option<JitterConfig>,
    pub ack_jitter: Option<JitterConfig>,
    /// A bulk flow's application stops writing at this time; the flow
    /// completes once what it sent is delivered.
    pub stop: Option<UnitStr>,
    /// `[[time, rtt], ...]`: the flow's RTT changes at these times.
    pub rtt_schedule: Option<Vec<(UnitStr, UnitStr)>>,
    /// The links it crosses, in order (networks given by `[[links]]`).
    pub route: Option<Vec<String>>,
    /// The links its ACKs cross, in order (two-way traffic); default none.
    pub reverse_route: Option<Vec<String>>,
}

#[derive(Deserialize, Debug, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawRepeat {
    pub gap: Option<UnitStr>,
    pub count: Option<i64>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RawSample {
    pub interval: Option<UnitStr>,
}
