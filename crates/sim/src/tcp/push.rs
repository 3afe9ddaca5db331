//! PSH marks of a Linux bulk sender, and why they matter to the receiver.
//!
//! Linux marks PSH on the last segment of each application write
//! (`tcp_push` at the end of `tcp_sendmsg_locked`, and at `wait_for_space`
//! when the send buffer is full). A writer that keeps the send buffer full
//! writes again as soon as an ACK frees space, so the marks land one per
//! ACK, as far apart as the segments that ACK freed: measured on the Linux
//! backend (kernel 6.1, the backend's bulk sender, blocking or not), 32-44%
//! of data segments carry PSH, 2-4 segments apart (docs/model.md).
//!
//! The receiver ACKs a full-sized PSH segment at once when its application
//! drains the receive queue (`tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED`,
//! `tcp_cleanup_rbuf` then sends the ACK); a bulk receiver reads at once, so
//! such a segment is ACKed alone instead of waiting for a second segment or
//! the delayed-ACK timer.
//!
//! `[hosts] push_acks = false` turns both off (the model before version 4).
//!
//! The model: the send buffer holds `2 x max(cwnd, 10)` segments
//! (`tcp_sndbuf_expand`; it never shrinks); at every transmit opportunity the
//! application tops it up to `snd_una + buffer` (bounded by what it has to
//! write) and the last segment of that write is marked.

use std::collections::VecDeque;

/// `TCP_INIT_CWND`, the floor of `tcp_sndbuf_expand`'s segment count.
const SNDBUF_MIN_SEGS: u32 = 10;

#[derive(Clone, Debug, Default)]
pub struct PushMarks {
    on: bool,
    /// Segments the application has written (`write_seq`, in segments).
    written: u32,
    /// Send buffer in segments: `2 x max(cwnd, 10)`, never shrinking.
    buf: u32,
    /// Segments that end a write, not yet sent, ascending.
    marks: VecDeque<u32>,
}

impl PushMarks {
    pub fn new(on: bool) -> PushMarks {
        PushMarks {
            on,
            ..PushMarks::default()
        }
    }

    /// The application tops the send buffer up: `snd_una` is the oldest
    /// unacknowledged segment, `available` what it has written so far in
    /// total (bulk: unbounded).
    pub fn refill(&mut self, snd_una: u32, cwnd: u32, available: u32) {
        if !self.on {
            return;
        }
        self.buf = self.buf.max(2 * cwnd.max(SNDBUF_MIN_SEGS));
        let target = snd_una.saturating_add(self.buf).min(available);
        if target > self.written {
            self.written = target;
            self.marks.push_back(target - 1);
        }
    }

    /// Whether new segment `q` (sent in order) ends a write.
    pub fn take(&mut self, q: u32) -> bool {
        while let Some(&m) = self.marks.front() {
            if m < q {
                self.marks.pop_front();
            } else {
                return m == q;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mark_per_refill_at_the_end_of_the_write() {
        let mut p = PushMarks::new(true);
        p.refill(0, 10, u32::MAX);
        assert_eq!(p.written, 20);
        assert!((0..19).all(|q| !p.take(q)));
        assert!(p.take(19));
        // An ACK frees 2 segments: the next write is 2 segments, marked at its end.
        p.refill(2, 10, u32::MAX);
        assert!(!p.take(20));
        assert!(p.take(21));
        // Nothing freed, nothing written.
        p.refill(2, 10, u32::MAX);
        assert!(!p.take(22));
    }

    #[test]
    fn a_sized_write_ends_marked_and_off_marks_nothing() {
        let mut p = PushMarks::new(true);
        p.refill(0, 10, 7);
        assert!((0..6).all(|q| !p.take(q)));
        assert!(p.take(6));
        let mut off = PushMarks::new(false);
        off.refill(0, 10, 7);
        assert!((0..7).all(|q| !off.take(q)));
    }
}
