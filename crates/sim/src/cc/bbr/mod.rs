//! The BBR family. [`common`] holds what every version shares (units,
//! pacing and BDP arithmetic, TSO goal, round counting, ACK aggregation).

pub mod common;
