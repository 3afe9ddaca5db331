//! The network: per-flow paths (access link plus propagation delay, with
//! loss and jitter impairments), the queueing links (token-bucket shaper in
//! front of a queue discipline, then a propagation delay) and each flow's
//! route through them (`network`: one link, "bottleneck", for the
//! dumbbell; `trace`: links driven by a Mahimahi delivery trace), and the
//! end hosts' timing noise.

pub mod bottleneck;
pub mod host;
pub mod impair;
pub mod network;
pub mod path;
pub mod police;
pub mod trace;
