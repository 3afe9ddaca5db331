//! Measurement: samplers, summaries and the columnar tables they fill.

pub mod collect;
pub mod hist;
pub mod schema;
pub mod stream;
pub mod table;
