//! Measurement: samplers, summaries and the columnar tables they fill.

pub mod table;
