//! Applications: what a sender has to send, and when.
//!
//! Segments never straddle two application writes: a write of `b` bytes
//! fills ceil(b / mss) segments, the last one short, as a TCP sender with
//! Nagle off pushes each write.

use crate::units::{Dur, Time};

/// The data source of one flow.
#[derive(Clone, Debug)]
pub enum App {
    /// Always has data (iperf-style bulk transfer) until the run ends.
    Bulk,
    /// Writes `bytes` at the start, then the flow completes.
    Sized { bytes: u64 },
    /// Writes each chunk at `start + offset` (a trace flow replayed with its
    /// pauses); the flow completes when every chunk is delivered.
    Chunks(Chunks),
}

/// Writes at given times, with the segment ranges they occupy.
#[derive(Clone, Debug)]
pub struct Chunks {
    /// (offset from the flow's start, bytes), offsets non-decreasing.
    writes: Vec<(Dur, u64)>,
    /// First segment of each write, plus the total at the end.
    first_seg: Vec<u32>,
    /// Payload bytes before each write, plus the total at the end.
    first_byte: Vec<u64>,
}

impl Chunks {
    pub fn new(writes: Vec<(Dur, u64)>, mss: u32) -> Chunks {
        let mut first_seg = Vec::with_capacity(writes.len() + 1);
        let mut first_byte = Vec::with_capacity(writes.len() + 1);
        let (mut s, mut b) = (0u64, 0u64);
        for &(_, bytes) in &writes {
            first_seg.push(s as u32);
            first_byte.push(b);
            s += bytes.div_ceil(mss as u64);
            b += bytes;
        }
        first_seg.push(s.min(u32::MAX as u64) as u32);
        first_byte.push(b);
        Chunks {
            writes,
            first_seg,
            first_byte,
        }
    }

    /// Index of the write that holds segment `seq`.
    fn write_of(&self, seq: u32) -> usize {
        self.first_seg
            .partition_point(|&s| s <= seq)
            .saturating_sub(1)
    }

    /// Number of writes made by `elapsed` after the start.
    fn writes_by(&self, elapsed: Dur) -> usize {
        self.writes.partition_point(|&(off, _)| off <= elapsed)
    }

    /// Offset of the write after the first `n`, if any.
    pub fn next_write_after(&self, n_done: usize) -> Option<Dur> {
        self.writes.get(n_done).map(|&(off, _)| off)
    }
}

impl App {
    /// Segments the application has written by `now` (`u32::MAX` = unlimited).
    pub fn segments_written(&self, now: Time, start: Time, mss: u32) -> u32 {
        match self {
            App::Bulk => u32::MAX,
            App::Sized { bytes } => bytes.div_ceil(mss as u64).min(u32::MAX as u64 - 1) as u32,
            App::Chunks(c) => c.first_seg[c.writes_by(now.since(start))],
        }
    }

    /// Total segments of a finite transfer.
    pub fn total_segments(&self, mss: u32) -> Option<u32> {
        match self {
            App::Bulk => None,
            App::Sized { bytes } => {
                Some(bytes.div_ceil(mss as u64).min(u32::MAX as u64 - 1) as u32)
            }
            App::Chunks(c) => c.first_seg.last().copied(),
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
            App::Chunks(c) => {
                let w = c.write_of(seq);
                let into = (seq - c.first_seg[w]) as u64 * mss as u64;
                c.writes[w].1.saturating_sub(into).min(mss as u64) as u32
            }
        }
    }

    /// Payload bytes in segments `0..segs`.
    pub fn bytes_in(&self, segs: u32, mss: u32) -> u64 {
        let full = segs as u64 * mss as u64;
        match self {
            App::Bulk => full,
            App::Sized { bytes } => full.min(*bytes),
            App::Chunks(c) => {
                let w = c.write_of(segs);
                if segs >= *c.first_seg.last().expect("total") {
                    return *c.first_byte.last().expect("total");
                }
                c.first_byte[w] + ((segs - c.first_seg[w]) as u64 * mss as u64).min(c.writes[w].1)
            }
        }
    }

    /// When the application next writes, after `now` (for `Chunks`).
    pub fn next_write(&self, now: Time, start: Time) -> Option<Time> {
        match self {
            App::Chunks(c) => {
                let n = c.writes_by(now.since(start));
                c.next_write_after(n).map(|off| start + off)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_whole_segments_per_write() {
        // 3000 B at 0 s (3 segments: 1448, 1448, 104), 100 B at 1 s (1 segment).
        let c = App::Chunks(Chunks::new(
            vec![(Dur::ZERO, 3000), (Dur::from_secs(1), 100)],
            1448,
        ));
        assert_eq!(c.total_segments(1448), Some(4));
        assert_eq!(c.segments_written(Time(0), Time(0), 1448), 3);
        assert_eq!(c.segments_written(Time(999_999_999), Time(0), 1448), 3);
        assert_eq!(c.segments_written(Time(1_000_000_000), Time(0), 1448), 4);
        let p: Vec<u32> = (0..4).map(|s| c.payload(s, 1448)).collect();
        assert_eq!(p, vec![1448, 1448, 104, 100]);
        assert_eq!(c.bytes_in(2, 1448), 2896);
        assert_eq!(c.bytes_in(3, 1448), 3000);
        assert_eq!(c.bytes_in(4, 1448), 3100);
        assert_eq!(c.next_write(Time(0), Time(0)), Some(Time(1_000_000_000)));
        assert_eq!(c.next_write(Time(1_000_000_000), Time(0)), None);
    }

    #[test]
    fn sized_flow_ends_with_a_short_segment() {
        let a = App::Sized { bytes: 3000 };
        assert_eq!(a.total_segments(1448), Some(3));
        assert_eq!(a.payload(2, 1448), 104);
        assert_eq!(a.bytes_in(3, 1448), 3000);
    }
}
