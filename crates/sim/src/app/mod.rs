//! Applications: what a sender has to send, and when.

/// The data source of one flow.
#[derive(Clone, Debug)]
pub enum App {
    /// Always has data (iperf-style bulk transfer) until the run ends.
    Bulk,
    /// Sends `bytes` once, then the flow completes.
    Sized { bytes: u64 },
}

impl App {
    /// Segments the application has written so far (`u32::MAX` = unlimited).
    pub fn segments_written(&self, mss: u32) -> u32 {
        match self {
            App::Bulk => u32::MAX,
            App::Sized { bytes } => bytes.div_ceil(mss as u64).min(u32::MAX as u64 - 1) as u32,
        }
    }

    /// Total segments of a finite transfer.
    pub fn total_segments(&self, mss: u32) -> Option<u32> {
        match self {
            App::Bulk => None,
            App::Sized { .. } => Some(self.segments_written(mss)),
        }
    }

    /// Payload bytes carried by segment `seq`.
    pub fn payload(&self, seq: u32, mss: u32) -> u32 {
        match self {
            App::Bulk => mss,
            App::Sized { bytes } => {
                let start = seq as u64 * mss as u64;
                (bytes.saturating_sub(start)).min(mss as u64) as u32
            }
        }
    }

    /// Payload bytes in segments `0..segs`.
    pub fn bytes_in(&self, segs: u32, mss: u32) -> u64 {
        let full = segs as u64 * mss as u64;
        match self {
            App::Bulk => full,
            App::Sized { bytes } => full.min(*bytes),
        }
    }
}
