//! PSH marks of a Linux bulk sender, and why they matter to the receiver.
//!
//! Linux sets PSH in two places:
//! - on every multi-segment transmit (a GSO packet: `__tcp_transmit_skb`,
//!   tcp_output.c, "Force a PSH flag on all (GSO) packets"), which
//!   segmentation leaves on its last segment: each burst of two or more
//!   segments ends with PSH, a lone segment has none (model version 7);
//! - on the last segment of each application write (`tcp_push` at the end
//!   of `tcp_sendmsg_locked`). A bulk writer blocked on a full send buffer
//!   is woken only when a third of it is free (`sk_stream_write_space`:
//!   free space at least half of what is queued), so its writes are large
//!   and rare: measured on the Linux backend (kernel 6.18, the backend's
//!   bulk sender, strace), 360 segments every 87 ms on a 50 Mbit/s flow.
//!
//! On that flow the kernel marks 25.6% of data segments PSH, 2 apart in
//! slow start and 4 apart after: the bursts (docs/validation.md, "Captures
//! side by side").
//!
//! The receiver ACKs a full-sized PSH segment at once when its application
//! drains the receive queue (`tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED`,
//! `tcp_cleanup_rbuf` then sends the ACK); a bulk receiver reads at once, so
//! such a segment is ACKed alone instead of waiting for a second segment or
//! the delayed-ACK timer.
//!
//! `[hosts] push_acks = false` turns both off (the model before version 4).
//!
//! The writer: the send buffer is `tcp_sndbuf_expand`'s, `2 x max(cwnd, 10)`
//! times `per_mss` (4,352 bytes for a 1500-byte MTU: the segment, the
//! largest header and the skb's bookkeeping, rounded up to a power of two)
//! over what a queued segment is charged (about its payload in a 64 KB
//! skb): 6 x max(cwnd, 10) segments, never shrinking. The application
//! fills it, and writes again once a third of it is free.
//!
//! The write queue's buffers (skbs) are sized when the application writes
//! (`tcp_sendmsg_locked`): the unsent tail buffer is topped up to the size
//! goal of that moment (`tcp_send_mss`, at most half the largest window the
//! receiver advertised), then new buffers of that goal follow; a buffer
//! keeps its size when the goal grows later, and a partly sent one keeps its
//! end (`tso_fragment` leaves the rest as the head). `tcp_tso_should_defer`
//! looks at the head buffer: how many segments it holds and whether it is
//! the queue's tail (model version 18; before, the buffers were cut at
//! multiples of the current goal, counted from the flow's first segment).

use crate::hint::addr_of;
use std::collections::VecDeque;

/// `TCP_INIT_CWND`, the floor of `tcp_sndbuf_expand`'s segment count.
const SNDBUF_MIN_SEGS: u32 = 10;
/// Send buffer segments per cwnd segment: `tcp_sndbuf_expand`'s factor 2
/// times `per_mss` (4,352 bytes) over a queued segment's charge (~1,450).
const SNDBUF_PER_CWND: u32 = 6;

#[derive(Clone, Debug, Default)]
pub struct PushMarks {
    on: bool,
    /// Segments the application has written (`write_seq`, in segments).
    written: u32,
    /// Send buffer in segments: `6 x max(cwnd, 10)`, never shrinking.
    buf: u32,
    /// Segments that end a write, not yet sent, ascending.
    marks: VecDeque<u32>,
    /// The write queue's unsent buffers, `[start, end)` in segments,
    /// ascending; the first may be partly sent (its rest starts at
    /// `snd_nxt`).
    bufs: VecDeque<(u32, u32)>,
}

impl PushMarks {
    pub fn new(on: bool) -> PushMarks {
        PushMarks {
            on,
            ..PushMarks::default()
        }
    }

    /// Where the oldest mark and unsent buffer lie (what `refill` reads
    /// first; prefetch hints, null for none).
    pub fn front_addrs(&self) -> [*const u8; 2] {
        [addr_of(self.marks.front()), addr_of(self.bufs.front())]
    }

    /// The application tops the send buffer up: `snd_una` is the oldest
    /// unacknowledged segment, `snd_nxt` the next new one, `available`
    /// what it has written so far in total (bulk: unbounded), `goal` the
    /// size goal of a buffer now, in segments (asked only for a write).
    pub fn refill(
        &mut self,
        snd_una: u32,
        snd_nxt: u32,
        cwnd: u32,
        available: u32,
        goal: impl FnOnce() -> u32,
    ) {
        if !self.on {
            return;
        }
        self.drop_sent(snd_nxt);
        self.buf = self.buf.max(SNDBUF_PER_CWND * cwnd.max(SNDBUF_MIN_SEGS));
        let queued = self.written.saturating_sub(snd_una);
        // `sk_stream_write_space`: writable once the free space is at least
        // half of what is queued (a third of a full buffer); a first write,
        // or one after the application ran dry, goes at once.
        if self.written > 0 && queued > 0 && 2 * (self.buf.saturating_sub(queued)) < queued {
            return;
        }
        let target = snd_una.saturating_add(self.buf).min(available);
        if target > self.written {
            self.add_buffers(snd_nxt, target, goal().max(1));
            self.written = target;
            self.marks.push_back(target - 1);
        }
    }

    /// `tcp_sendmsg_locked`: the data from `written` to `target` tops up
    /// the unsent tail buffer to `goal` segments, then fills new ones.
    fn add_buffers(&mut self, snd_nxt: u32, target: u32, goal: u32) {
        let mut s = self.written;
        if let Some(last) = self.bufs.back_mut() {
            // The tail ends where the last write did; it is unsent, or its
            // rest is (`drop_sent` removed the sent ones): what it holds now.
            debug_assert_eq!(last.1, s);
            let held = last.1 - last.0.max(snd_nxt);
            if held < goal {
                let add = (goal - held).min(target - s);
                last.1 += add;
                s += add;
            }
        }
        while s < target {
            let e = s.saturating_add(goal).min(target);
            self.bufs.push_back((s, e));
            s = e;
        }
    }

    fn drop_sent(&mut self, snd_nxt: u32) {
        while self.bufs.front().is_some_and(|b| b.1 <= snd_nxt) {
            self.bufs.pop_front();
        }
    }

    /// The buffer that holds `snd_nxt` (`tcp_send_head`): its end and
    /// whether it is the queue's tail; None when the writer is not
    /// modelled or has not written it.
    pub fn head_buffer(&self, snd_nxt: u32) -> Option<(u32, bool)> {
        let i = self.bufs.iter().position(|b| b.1 > snd_nxt)?;
        let (start, end) = self.bufs[i];
        (start <= snd_nxt).then_some((end, i + 1 == self.bufs.len()))
    }

    /// Segments the application has handed to TCP so far (0 when the
    /// writer is not modelled, `push_acks = false`).
    pub fn written(&self) -> u32 {
        self.written
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
    fn the_writer_waits_for_a_third_of_the_buffer() {
        let mut p = PushMarks::new(true);
        p.refill(0, 0, 10, u32::MAX, || 44);
        assert_eq!(p.written, 60, "6 x max(cwnd, 10)");
        assert!((0..59).all(|q| !p.take(q)));
        assert!(p.take(59));
        // An ACK frees 2 segments: 58 queued, 2 free, less than half of 58.
        p.refill(2, 2, 10, u32::MAX, || 44);
        assert_eq!(p.written, 60);
        // 20 freed: 40 queued, 20 free, half of 40: it writes 20, marked.
        p.refill(20, 20, 10, u32::MAX, || 44);
        assert_eq!(p.written, 80);
        assert!((60..79).all(|q| !p.take(q)));
        assert!(p.take(79));
    }

    /// Buffers keep the goal of the write that made them; a later write
    /// tops up the unsent tail to its own goal first.
    #[test]
    fn buffers_keep_the_size_goal_they_were_written_with() {
        let mut p = PushMarks::new(true);
        // 60 segments written while the goal is 22 (a 45-segment window).
        p.refill(0, 0, 10, u32::MAX, || 22);
        assert_eq!(p.bufs, [(0, 22), (22, 44), (44, 60)]);
        assert_eq!(p.head_buffer(0), Some((22, false)));
        // 30 sent; the window grew (goal 44); 40 acknowledged: a write of
        // 40 tops the tail (16 held) up to 44, then a buffer of 12.
        p.refill(40, 30, 10, u32::MAX, || 44);
        assert_eq!(p.bufs, [(22, 44), (44, 88), (88, 100)]);
        assert_eq!(p.head_buffer(30), Some((44, false)));
        assert_eq!(p.head_buffer(95), Some((100, true)));
        // Off: no buffers, the caller cuts the queue itself.
        let mut off = PushMarks::new(false);
        off.refill(0, 0, 10, u32::MAX, || 22);
        assert_eq!(off.head_buffer(0), None);
    }

    #[test]
    fn a_sized_write_ends_marked_and_off_marks_nothing() {
        let mut p = PushMarks::new(true);
        p.refill(0, 0, 10, 7, || 44);
        assert!((0..6).all(|q| !p.take(q)));
        assert!(p.take(6));
        let mut off = PushMarks::new(false);
        off.refill(0, 0, 10, 7, || 44);
        assert!((0..7).all(|q| !off.take(q)));
    }
}
