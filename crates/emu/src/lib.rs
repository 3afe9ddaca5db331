//! ccarena-emu: the user-space bottleneck of ccarena's Linux backend.
//!
//! The router namespace's two veths are bridged by this program over
//! AF_PACKET sockets. Each frame of a run's flow becomes a
//! `ccarena_sim::packet::Packet` descriptor and goes through the
//! simulator's own code: the per-flow forward delay (`net::path`), the
//! token-bucket shaper and queue discipline (`net::bottleneck`, `qdisc`),
//! and the reverse delay on the ACK path, driven by CLOCK_MONOTONIC instead
//! of the event queue. A result that differs between the two backends then
//! points at the TCP stacks, not at two AQM implementations.

pub mod cli;
pub mod engine;
pub mod frame;
pub mod pipeline;
pub mod sys;
pub mod turnaround;
