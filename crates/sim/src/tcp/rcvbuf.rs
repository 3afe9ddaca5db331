//! The receiver's window growth and the ACKs it asks for (Linux
//! `tcp_input.c`: `tcp_grow_window`, `tcp_rcv_space_adjust`,
//! `tcp_rcvbuf_grow`).
//!
//! A Linux receiver opens its advertised window gradually: `rcv_ssthresh`
//! starts at the 64 KB of the SYN-ACK and grows by two segments for each
//! segment received, up to `window_clamp`, which follows the receive buffer
//! that dynamic right-sizing (DRS) sizes once per receiver RTT from the
//! bytes the application read in the last one. Every segment that grows
//! `rcv_ssthresh` also sets one quick ACK (`icsk_ack.quick |= 1`), so while
//! the window grows the receiver ACKs every segment instead of every other
//! one. In slow start the window grows during most of each round: in a
//! 20 ms Reno flow the kernel (6.18, this backend's) sent 22 single ACKs
//! before its first two-segment ACK, 28 of the 34 ACKs of the third round
//! and 189 of the 209 of the next two acknowledged one segment, while the
//! advertised window stepped 81920 -> 151552 -> 346112 ->
//! 694272 bytes (tcpdump at the receiver, docs/validation.md). Where the
//! window is at its clamp (steady state) nothing changes.
//!
//! Sizes: the initial clamp is the receive buffer `tcp_rmem[1]` = 131072
//! bytes at the scaling ratio Linux measures for 1448-byte segments
//! (`tcp_measure_rcv_mss`: payload over truesize, 160/256 here), 81920
//! bytes, the first plateau measured. DRS follows `tcp_rcvbuf_grow`
//! (Linux 6.18): a window of twice the bytes read in the last RTT, plus
//! twice its relative growth over the RTT before (slow start), plus the
//! out-of-order span; the buffer and the clamp are the same quantity at one
//! scaling ratio, so the clamp is that window. The receiver's RTT is
//! Linux's `rcv_rtt_est` from timestamps (`Receiver::rcv_rtt_measure_ts`),
//! which sees the queue (`[hosts] rcv_rtt_timestamps`, on by default;
//! off: the handshake's). With `[hosts] advertised_window` every ACK advertises
//! the window (`Receiver::select_window`: this room in whole segments, its
//! right edge never moving left) and the sender keeps within it: in slow
//! start the window stays ahead of the cwnd, but behind a hole the
//! out-of-order data takes the room and the right edge stops. It is on
//! by default since model version 18 (docs/model.md). A flow's `rwnd` is a
//! locked buffer (`SO_RCVBUF`): no DRS, the clamp the window of twice its
//! size (model version 19; before, `rwnd` itself).

use crate::units::{Dur, Time};

/// `tcp_win_from_space`: the window a receive buffer of `space` bytes
/// offers at the scaling ratio Linux measures for 1448-byte segments
/// (`tcp_measure_rcv_mss`: payload over truesize, 160/256).
const fn win_from_space(space: u64) -> u64 {
    space / 256 * 160
}
/// `tcp_rmem[1]` (131072) at the scaling ratio: the window before any DRS
/// step (measured: the first plateau, 81,920 bytes).
pub const INITIAL_CLAMP: u64 = win_from_space(131_072);
/// The largest window DRS may reach: the backend's `tcp_rmem[2]` (64 MB)
/// at the same scaling ratio.
pub const MAX_CLAMP: u64 = win_from_space(64 * 1024 * 1024);
/// `TCP_INIT_CWND`: the first DRS measure compares against this many
/// segments (`tcp_init_buffer_space`).
const INIT_SPACE_SEGS: u64 = 10;

#[derive(Clone, Debug)]
pub struct RcvWindow {
    mss: u64,
    /// `rcv_ssthresh` (bytes).
    rcv_ssthresh: u64,
    /// `window_clamp` (bytes).
    clamp: u64,
    /// A fixed receive buffer (`SO_RCVBUF`): DRS off.
    locked: bool,
    /// `rcvq_space`: bytes read in the last measured RTT, the read total
    /// when the current measure began, and when (None before any data).
    space: u64,
    space_seq: u64,
    space_time: Option<Time>,
}

impl RcvWindow {
    /// `rwnd`: a fixed receive window in bytes (the flow's `rwnd`), the
    /// size of a locked buffer (`SO_RCVBUF`): the kernel doubles it
    /// (socket(7)) and offers that at the scaling ratio, 1.25 x `rwnd`
    /// (the Linux backend measures its receivers advertising up to 1.24 x
    /// and clamps them to `rwnd`, as the simulator's senders do:
    /// `Sender::wnd_end`), so out-of-order data takes the room above
    /// `rwnd` first.
    pub fn new(mss: u32, rwnd: Option<u64>) -> RcvWindow {
        let mss = u64::from(mss.max(1));
        // `tcp_select_initial_window`: 64 KB rounded down to whole segments.
        let initial = (u64::from(u16::MAX) / mss).max(1) * mss;
        let clamp = rwnd
            .map_or(INITIAL_CLAMP, |r| win_from_space(2 * r))
            .max(2 * mss);
        RcvWindow {
            mss,
            // The SYN-ACK's window comes before the ratio is measured: at
            // the default 1/2 a locked buffer offers `rwnd` itself.
            rcv_ssthresh: initial.min(rwnd.unwrap_or(clamp)),
            clamp,
            locked: rwnd.is_some(),
            space: initial.min(INIT_SPACE_SEGS * mss),
            space_seq: 0,
            space_time: None,
        }
    }

    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }

    pub fn mss(&self) -> u64 {
        self.mss
    }

    pub fn clamp(&self) -> u64 {
        self.clamp
    }

    /// `tcp_grow_window` for a new segment of `len` bytes, in order or out
    /// of order; the buffer holds `held()` segments (`tcp_space`), at least
    /// `at_least`: `held` is asked only while that leaves room, so the
    /// steady state (the window at its clamp) costs one comparison. True if
    /// the window grew: the caller sets a quick ACK.
    pub fn grow(&mut self, len: u64, at_least: u64, held: impl FnOnce() -> u64) -> bool {
        if self.rcv_ssthresh + at_least * self.mss >= self.clamp {
            return false;
        }
        let room = self
            .clamp
            .saturating_sub(held() * self.mss)
            .saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return false;
        }
        // Full-sized segments fit the buffer's truesize budget:
        // `incr = 2 * advmss`, at least twice the segment.
        let incr = (2 * self.mss).max(2 * len);
        self.rcv_ssthresh += room.min(incr);
        true
    }

    /// The application has read every segment below `read_segs` at `now`
    /// (`tcp_rcv_space_adjust`, called by `tcp_recvmsg`); `rtt` is the
    /// receiver's RTT estimate, `ooo_span_segs` the segments from the next
    /// expected one to the end of the out-of-order data.
    pub fn on_read(&mut self, now: Time, read_segs: u32, rtt: Option<Dur>, ooo_span_segs: u32) {
        let Some(start) = self.space_time else {
            // `tcp_init_buffer_space` at the first data.
            self.space_time = Some(now);
            return;
        };
        let Some(rtt) = rtt.filter(|r| r.0 > 0) else {
            return;
        };
        if now.since(start) < rtt {
            return;
        }
        let read_total = u64::from(read_segs) * self.mss;
        let copied = read_total - self.space_seq;
        if copied > self.space {
            self.rcvbuf_grow(copied, u64::from(ooo_span_segs) * self.mss);
        }
        self.space_seq = read_total;
        self.space_time = Some(now);
    }

    /// `tcp_rcvbuf_grow` (Linux 6.18): DRS is one RTT late, so twice what
    /// was read; in slow start twice more per doubling.
    /// `copied` is more than `space` (the caller's test).
    fn rcvbuf_grow(&mut self, copied: u64, ooo_span: u64) {
        let old = self.space.max(1);
        self.space = copied;
        if self.locked {
            return;
        }
        let mut rcvwin = copied as u128 * 2;
        let grow = rcvwin * (copied - old) as u128 / old as u128;
        rcvwin += grow * 2 + ooo_span as u128;
        let win = (rcvwin.min(MAX_CLAMP as u128)) as u64;
        self.clamp = self.clamp.max(win);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn at_ms(ms: u64) -> Time {
        Time::ZERO + Dur::from_ms(ms)
    }

    #[test]
    fn starts_at_64_kb_in_whole_segments_under_the_initial_clamp() {
        let w = RcvWindow::new(MSS, None);
        assert_eq!(w.rcv_ssthresh(), 45 * 1448);
        assert_eq!(w.clamp(), INITIAL_CLAMP);
    }

    #[test]
    fn grows_two_segments_per_segment_until_the_clamp() {
        let mut w = RcvWindow::new(MSS, None);
        // 81920 - 65160 = 16760 bytes of room: five full steps of 2896
        // and a partial one, then none.
        let grew: Vec<bool> = (0..8).map(|_| w.grow(1448, 0, || 0)).collect();
        assert_eq!(grew, [true, true, true, true, true, true, false, false]);
        assert_eq!(w.rcv_ssthresh(), INITIAL_CLAMP);
    }

    #[test]
    fn at_the_clamp_the_out_of_order_data_is_not_even_counted() {
        let mut w = RcvWindow::new(MSS, None);
        while w.grow(1448, 0, || 0) {}
        assert!(!w.grow(1448, 0, || unreachable!("not asked at the clamp")));
    }

    #[test]
    fn out_of_order_data_takes_room() {
        let mut w = RcvWindow::new(MSS, None);
        // 12 segments held out of order leave 81920 - 17376 < 65160.
        assert!(!w.grow(1448, 0, || 12));
        assert!(w.grow(1448, 0, || 0));
    }

    #[test]
    fn drs_sizes_the_clamp_from_the_bytes_read_in_the_last_rtt() {
        let rtt = Dur::from_ms(20);
        let mut w = RcvWindow::new(MSS, None);
        w.on_read(Time::ZERO, 0, Some(rtt), 0);
        // One RTT of 10 segments: not more than the initial space.
        w.on_read(at_ms(20), 10, Some(rtt), 0);
        assert_eq!(w.clamp(), INITIAL_CLAMP);
        // The next RTT read 20 segments: twice 28960, grown by twice the
        // doubling: 57920 + 2 x 57920 = 173760.
        w.on_read(at_ms(40), 30, Some(rtt), 0);
        assert_eq!(w.clamp(), 173_760);
        // Less than an RTT later nothing is measured.
        w.on_read(at_ms(50), 35, Some(rtt), 0);
        assert_eq!(w.clamp(), 173_760);
        // An RTT that read less than the last one changes nothing.
        w.on_read(at_ms(60), 40, Some(rtt), 0);
        assert_eq!(w.clamp(), 173_760);
        // 40 segments after 20: 2 x 57920 = 115840, plus twice the
        // doubling, 2 x 115840.
        w.on_read(at_ms(80), 80, Some(rtt), 0);
        assert_eq!(w.clamp(), 347_520);
    }

    /// A locked buffer of `rwnd` bytes: the kernel doubles it, so the clamp
    /// is 1.25 x `rwnd` (100,000 bytes at 160/256), and DRS never moves it.
    #[test]
    fn a_fixed_rwnd_locks_a_doubled_buffer_that_never_grows() {
        let rtt = Dur::from_ms(20);
        let mut w = RcvWindow::new(MSS, Some(80_000));
        assert_eq!(w.clamp(), 100_000);
        // The SYN-ACK offers the buffer at the default ratio 1/2: `rwnd`.
        assert_eq!(w.rcv_ssthresh(), 45 * 1448);
        let small = RcvWindow::new(MSS, Some(50_000));
        assert_eq!(small.rcv_ssthresh(), 50_000);
        while w.grow(1448, 0, || 0) {}
        assert_eq!(w.rcv_ssthresh(), 100_000);
        w.on_read(Time::ZERO, 0, Some(rtt), 0);
        w.on_read(at_ms(20), 1000, Some(rtt), 0);
        assert_eq!(w.clamp(), 100_000);
    }
}
