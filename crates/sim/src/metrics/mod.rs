//! Measurement: samplers, summaries and the columnar tables they fill.

pub mod hist;
pub mod collect;
pub mod table;
