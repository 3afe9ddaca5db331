//! ccarena-sim: a deterministic packet-level simulator of TCP congestion
//! control over a dumbbell bottleneck. Sans-IO: the library reads no clock
//! and writes no file; `world::run` takes a normalized scenario and returns
//! columnar results.

pub mod app;
pub mod capture;
pub mod cc;
pub mod filter;
pub mod hint;
pub mod metrics;
pub mod mutant;
pub mod net;
pub mod packet;
pub mod params;
pub mod qdisc;
pub mod rng;
pub mod scenario;
pub mod sched;
pub mod tcp;
pub mod units;
pub mod world;
