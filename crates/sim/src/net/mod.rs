//! The network of the dumbbell: per-flow paths (access link plus
//! propagation delay, with loss and jitter impairments) and the shared
//! bottleneck (token-bucket shaper in front of a queue discipline), and
//! the end hosts' timing noise.

pub mod bottleneck;
pub mod host;
pub mod impair;
pub mod path;
