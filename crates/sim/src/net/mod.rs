//! The network: paths, links and the bottleneck.

pub mod impair;
