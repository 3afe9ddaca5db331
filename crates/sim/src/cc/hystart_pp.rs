//! HyStart++ (RFC 9406): slow start that watches each round's minimum RTT
//! and, when it rises by more than clamp(min RTT / 8, 4 ms, 16 ms) over the
//! previous round's, switches to Conservative Slow Start (CSS: growth / 4)
//! for up to five rounds before congestion avoidance, returning to slow
//! start if the RTT falls back (a spurious exit). Without pacing, growth
//! per ACK is limited to 8 packets (L). Used by Reno and CUBIC when their
//! `hystart_plus_plus` is on, in the initial slow start only (up to the
//! first congestion event), as RFC 9406 section 4.3 recommends.

use super::classic::{after, is_cwnd_limited, Window, WindowEvent, WindowRule};
use super::{CaState, CcInit, CcState, Conn, RateSample};
use crate::units::{Rate, Time};

/// RFC 9406 section 4.3 constants.
const MIN_RTT_THRESH_US: u32 = 4_000;
const MAX_RTT_THRESH_US: u32 = 16_000;
const MIN_RTT_DIVISOR: u32 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u32 = 4;
const CSS_ROUNDS: u32 = 5;
/// L without pacing; infinite with it.
const L_UNPACED: u32 = 8;

#[derive(Clone, Debug)]
pub struct HystartPP {
    /// Round's end: snd_nxt when it started (`windowEnd`).
    window_end: u32,
    last_round_min_rtt: u32,
    current_round_min_rtt: u32,
    rtt_sample_count: u32,
    css_baseline_min_rtt: u32,
    css_rounds: u32,
    in_css: bool,
    /// Growth in CSS below one packet, in 1/CSS_GROWTH_DIVISOR packets.
    css_credit: u32,
    /// Off after the first congestion event.
    pub done: bool,
}

impl Default for HystartPP {
    fn default() -> Self {
        HystartPP {
            window_end: 0,
            last_round_min_rtt: u32::MAX,
            current_round_min_rtt: u32::MAX,
            rtt_sample_count: 0,
            css_baseline_min_rtt: u32::MAX,
            css_rounds: 0,
            in_css: false,
            css_credit: 0,
            done: false,
        }
    }
}

impl HystartPP {
    pub fn in_css(&self) -> bool {
        self.in_css && !self.done
    }

    /// Every ACK in slow start: round boundaries and the RTT samples.
    pub fn on_ack(&mut self, w: &mut Window, rs: &RateSample, conn: &Conn) {
        if self.done || !w.in_slow_start() {
            return;
        }
        if after(conn.snd_una, self.window_end) {
            // A round ended: CSS counts it, and ends after CSS_ROUNDS.
            if self.in_css {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    w.ssthresh = w.cwnd;
                    self.done = true;
                    return;
                }
            }
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = u32::MAX;
            self.rtt_sample_count = 0;
            self.window_end = conn.snd_nxt;
        }
        if rs.rtt_us < 0 {
            return;
        }
        let rtt = rs.rtt_us.min(u32::MAX as i64 - 1) as u32;
        self.current_round_min_rtt = self.current_round_min_rtt.min(rtt);
        self.rtt_sample_count += 1;
        if self.rtt_sample_count < N_RTT_SAMPLE
            || self.current_round_min_rtt == u32::MAX
            || self.last_round_min_rtt == u32::MAX
        {
            return;
        }
        if !self.in_css {
            let thresh = (self.last_round_min_rtt / MIN_RTT_DIVISOR)
                .clamp(MIN_RTT_THRESH_US, MAX_RTT_THRESH_US);
            if self.current_round_min_rtt >= self.last_round_min_rtt.saturating_add(thresh) {
                self.css_baseline_min_rtt = self.current_round_min_rtt;
                self.in_css = true;
                self.css_rounds = 0;
            }
        } else if self.current_round_min_rtt < self.css_baseline_min_rtt {
            // The delay increase was spurious: back to slow start.
            self.css_baseline_min_rtt = u32::MAX;
            self.in_css = false;
        }
    }

    /// Slow start's growth for `acked` packets: min(N, L) in slow start, a
    /// quarter of it in CSS. Returns the packets left for avoidance (those
    /// past ssthresh).
    pub fn slow_start(&mut self, w: &mut Window, acked: u32, paced: bool) -> u32 {
        let n = if paced { acked } else { acked.min(L_UNPACED) };
        if !self.in_css() {
            // Past ssthresh the rest goes to avoidance; above L it is not credited.
            let room = w.ssthresh.saturating_sub(w.cwnd);
            let grow = n.min(room);
            w.cwnd = (w.cwnd + grow).min(w.clamp);
            return n - grow;
        }
        self.css_credit += n;
        let grow = self.css_credit / CSS_GROWTH_DIVISOR;
        self.css_credit %= CSS_GROWTH_DIVISOR;
        w.cwnd = (w.cwnd + grow).min(w.clamp);
        0
    }
}

/// Any loss-based rule with HyStart++ in its initial slow start.
pub struct WithHystartPP<R> {
    pub inner: R,
    pub h: HystartPP,
}

impl<R: WindowRule> WindowRule for WithHystartPP<R> {
    fn ssthresh(&mut self, now: Time, w: &Window, conn: &Conn) -> u32 {
        self.inner.ssthresh(now, w, conn)
    }

    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        if self.h.done || !w.in_slow_start() {
            return self.inner.cong_avoid(now, w, acked, conn);
        }
        if !is_cwnd_limited(w, conn) {
            return;
        }
        let rest = self.h.slow_start(w, acked, conn.paced);
        if rest > 0 && !w.in_slow_start() {
            self.inner.cong_avoid(now, w, rest, conn);
        }
    }

    fn init(&mut self, w: &mut Window, init: &CcInit) {
        self.inner.init(w, init)
    }

    fn in_ack_event(&mut self, now: Time, w: &Window, rs: &RateSample, conn: &Conn) {
        self.inner.in_ack_event(now, w, rs, conn)
    }

    fn pkts_acked(&mut self, now: Time, w: &mut Window, rs: &RateSample, conn: &Conn, p: Rate) {
        self.h.on_ack(w, rs, conn);
        self.inner.pkts_acked(now, w, rs, conn, p)
    }

    fn set_state(&mut self, now: Time, from: CaState, to: CaState, w: &mut Window, conn: &Conn) {
        // The initial slow start ends at the first congestion event.
        if to >= CaState::Cwr {
            self.h.done = true;
        }
        self.inner.set_state(now, from, to, w, conn)
    }

    fn cwnd_event(&mut self, now: Time, ev: WindowEvent, w: &mut Window, conn: &Conn) {
        self.inner.cwnd_event(now, ev, w, conn)
    }

    fn phase(&self, w: &Window) -> &'static str {
        if self.h.in_css() && w.in_slow_start() {
            "CSS"
        } else {
            self.inner.phase(w)
        }
    }

    fn write_state(&self, out: &mut CcState) {
        self.inner.write_state(out);
        out.num("hystartpp_css", if self.h.in_css() { 1.0 } else { 0.0 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, win};

    /// One round of `n` ACKs with RTT `rtt_us`.
    fn round(h: &mut HystartPP, w: &mut Window, c: &mut Conn, n: u32, rtt_us: i64) {
        c.snd_una = h.window_end + 1;
        c.snd_nxt = c.snd_una + w.cwnd;
        for _ in 0..n {
            h.on_ack(w, &ack(1, rtt_us), c);
            h.slow_start(w, 1, false);
        }
    }

    #[test]
    fn a_delay_rise_enters_css_and_five_rounds_later_avoidance() {
        let mut h = HystartPP::default();
        let mut w = win(20, u32::MAX);
        let mut c = conn(20);
        round(&mut h, &mut w, &mut c, 10, 20_000);
        round(&mut h, &mut w, &mut c, 10, 20_000);
        assert!(!h.in_css());
        assert_eq!(w.cwnd, 40);
        // +4 ms (the clamp's floor for a 20 ms RTT, 20/8 = 2.5 ms): CSS.
        round(&mut h, &mut w, &mut c, 12, 24_000);
        assert!(h.in_css());
        // In CSS a quarter of the growth.
        let before = w.cwnd;
        round(&mut h, &mut w, &mut c, 8, 24_500);
        assert_eq!(w.cwnd, before + 2);
        for _ in 0..4 {
            round(&mut h, &mut w, &mut c, 8, 24_500);
        }
        assert!(h.done && w.ssthresh == w.cwnd, "{h:?}");
    }

    #[test]
    fn the_rtt_falling_back_resumes_slow_start() {
        let mut h = HystartPP::default();
        let mut w = win(20, u32::MAX);
        let mut c = conn(20);
        round(&mut h, &mut w, &mut c, 10, 20_000);
        round(&mut h, &mut w, &mut c, 10, 26_000);
        assert!(h.in_css());
        round(&mut h, &mut w, &mut c, 10, 21_000);
        assert!(!h.in_css() && !h.done);
    }

    #[test]
    fn unpaced_growth_is_at_most_eight_packets_per_ack() {
        let mut h = HystartPP::default();
        let mut w = win(20, u32::MAX);
        assert_eq!(h.slow_start(&mut w, 20, false), 0);
        assert_eq!(w.cwnd, 28);
        assert_eq!(h.slow_start(&mut w, 20, true), 0);
        assert_eq!(w.cwnd, 48);
    }
}
