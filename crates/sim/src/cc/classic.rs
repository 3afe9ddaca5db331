//! What Linux does for every congestion control that has no `cong_control`
//! hook (Reno, CUBIC, DCTCP): slow start, the additive-increase counter,
//! proportional rate reduction in recovery, the cwnd set on RTO and restored
//! when recovery ends, and the default pacing rate. An algorithm plugs in
//! only its `ssthresh` and `cong_avoid` rules through [`WindowRule`].
//!
//! References: net/ipv4/tcp_cong.c (`tcp_slow_start`, `tcp_cong_avoid_ai`),
//! net/ipv4/tcp_input.c (`tcp_cwnd_reduction` = RFC 6937 PRR,
//! `tcp_init_cwnd_reduction`, `tcp_end_cwnd_reduction`, `tcp_enter_loss`,
//! `tcp_may_raise_cwnd`, `tcp_update_pacing_rate`), include/net/tcp.h
//! (`tcp_is_cwnd_limited`).

use super::{AckOutcome, CaState, CcEvent, CcInit, CcState, CongestionControl, Conn, RateSample};
use crate::units::{Rate, Time};

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `sysctl_tcp_pacing_ss_ratio` and `sysctl_tcp_pacing_ca_ratio`, percent.
const PACING_SS_RATIO: u64 = 200;
const PACING_CA_RATIO: u64 = 120;

/// The congestion-window fields of `struct tcp_sock` that a loss-based
/// algorithm reads and writes.
#[derive(Clone, Debug)]
pub struct Window {
    /// `snd_cwnd`, packets.
    pub cwnd: u32,
    /// `snd_ssthresh`, packets.
    pub ssthresh: u32,
    /// `snd_cwnd_cnt`: ACKed packets not yet turned into cwnd growth.
    pub cwnd_cnt: u32,
    /// `snd_cwnd_clamp`.
    pub clamp: u32,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_slow_start`: grow by `acked` up to ssthresh; returns the ACKed
    /// count left over for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let used = cwnd - self.cwnd;
        self.cwnd = cwnd.min(self.clamp);
        acked - used
    }

    /// The start every module's `cong_avoid` repeats (`tcp_reno_cong_avoid`,
    /// `cubictcp_cong_avoid`, `bictcp_cong_avoid`, ...): nothing unless
    /// `tcp_is_cwnd_limited`; in slow start `tcp_slow_start`. The ACKed
    /// packets left for congestion avoidance; None when slow start used
    /// them all (or cwnd does not limit the sender).
    pub fn limited_slow_start(&mut self, acked: u32, conn: &Conn) -> Option<u32> {
        if !is_cwnd_limited(self, conn) {
            return None;
        }
        if !self.in_slow_start() {
            // Even 0: `tcp_cong_avoid_ai` may still apply banked credit.
            return Some(acked);
        }
        let left = self.slow_start(acked);
        (left > 0).then_some(left)
    }

    /// `tcp_cong_avoid_ai`: one packet of growth per `w` ACKed packets.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // Credit accumulated while w was larger is applied gently first.
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }
}

/// The kernel clock rate modelled for every `tcp_*.c` module: HZ = 1000,
/// so one jiffy (`tcp_jiffies32`) is one millisecond of simulated time.
pub const HZ: u32 = 1000;

/// `tcp_jiffies32` with HZ = 1000.
pub fn jiffies(now: Time) -> u32 {
    (now.ns() / crate::units::NS_PER_MS) as u32
}

/// `usecs_to_jiffies` for HZ = 1000: rounds up to whole milliseconds.
pub fn usecs_to_jiffies(us: u32) -> u32 {
    us.div_ceil(1000)
}

/// `after(a, b)` of include/net/tcp.h: `a` is later than `b` in wrapping
/// 32-bit sequence space.
pub fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `tcp_sk(sk)->srtt_us`: the smoothed RTT in 1/8 us (0 before any sample).
pub fn srtt_us_x8(conn: &Conn) -> u32 {
    conn.srtt
        .map_or(0, |d| (d.ns() / 125).min(u32::MAX as u64) as u32)
}

/// `tcp_current_ssthresh` outside a cwnd reduction (where a `cong_avoid`
/// runs): the larger of ssthresh and 3/4 of cwnd.
pub fn current_ssthresh(w: &Window) -> u32 {
    w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2))
}

/// `tcp_ca_event` as a loss-based algorithm sees it: the TCP core's events
/// and the two the window machinery raises itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowEvent {
    Core(CcEvent),
    /// `CA_EVENT_COMPLETE_CWR`: a CWR or Recovery episode ended
    /// (`tcp_end_cwnd_reduction`, after cwnd was set to ssthresh).
    CompleteCwr,
    /// `CA_EVENT_LOSS`: an RTO set a new ssthresh (`tcp_enter_loss`).
    Loss,
}

/// `tcp_is_cwnd_limited` (include/net/tcp.h).
pub fn is_cwnd_limited(w: &Window, conn: &Conn) -> bool {
    cwnd_limited(w.cwnd, w.ssthresh, conn)
}

/// `tcp_is_cwnd_limited` for an algorithm that keeps its own window
/// (Prague): in slow start, cwnd may grow to twice what was in flight.
pub fn cwnd_limited(cwnd: u32, ssthresh: u32, conn: &Conn) -> bool {
    conn.is_cwnd_limited || (cwnd < ssthresh && cwnd < 2 * conn.max_packets_out)
}

/// The rules that distinguish one loss-based algorithm from another.
pub trait WindowRule {
    /// Linux `ssthresh()`: the target window after a congestion event.
    fn ssthresh(&mut self, now: Time, w: &Window, conn: &Conn) -> u32;
    /// Linux `cong_avoid()`: an ACK that advanced snd_una (`tcp_may_raise_cwnd`)
    /// outside a reduction delivered `acked` packets. As in Linux, each rule
    /// checks `tcp_is_cwnd_limited` itself ([`is_cwnd_limited`]): some act
    /// once per RTT whether or not cwnd limits the sender (Vegas, Illinois).
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn);
    /// Linux `init()`, after the initial window is set (`tcp_init_transfer`):
    /// a rule may replace the window or its clamp (Hybla, YeAH).
    fn init(&mut self, _w: &mut Window, _init: &CcInit) {}
    /// Linux `in_ack_event()`: every ACK, first (snd_una already advanced).
    fn in_ack_event(&mut self, _now: Time, _w: &Window, _rs: &RateSample, _conn: &Conn) {}
    /// Linux `pkts_acked()`: every ACK, before any window change (RTT samples).
    /// `pacing_rate` is `sk_pacing_rate` as the previous ACK left it
    /// (CUBIC's HyStart reads it in `hystart_ack_delay`).
    fn pkts_acked(
        &mut self,
        _now: Time,
        _w: &mut Window,
        _rs: &RateSample,
        _conn: &Conn,
        _pacing_rate: Rate,
    ) {
    }
    /// Linux `set_state()`, called after the window changes that entering
    /// `to` makes (ssthresh, the RTO cwnd). `from` is the state being left
    /// (Linux's `icsk_ca_state` is still the old one when the hook runs);
    /// the rule may rewrite the window, as DCTCP does on entering Recovery.
    fn set_state(
        &mut self,
        _now: Time,
        _from: CaState,
        _to: CaState,
        _w: &mut Window,
        _conn: &Conn,
    ) {
    }
    /// Linux `cwnd_event()`; Westwood+ rewrites the window on two of them.
    fn cwnd_event(&mut self, _now: Time, _ev: WindowEvent, _w: &mut Window, _conn: &Conn) {}
    fn phase(&self, w: &Window) -> &'static str {
        if w.in_slow_start() {
            "SLOW_START"
        } else {
            "CONG_AVOID"
        }
    }
    fn write_state(&self, _out: &mut CcState) {}
}

/// A loss-based algorithm: Linux's window machinery around a [`WindowRule`].
pub struct Classic<R> {
    pub rule: R,
    pub win: Window,
    mss: u32,
    init_cwnd: u32,
    /// `prior_cwnd`: cwnd when the current reduction started.
    prior_cwnd: u32,
    /// `prr_delivered`: packets delivered since the reduction started.
    prr_delivered: u32,
    pacing: Rate,
    state: CaState,
}

impl<R: WindowRule> Classic<R> {
    pub fn new(rule: R, init: &CcInit) -> Self {
        let mut c = Classic {
            rule,
            win: Window {
                cwnd: init.init_cwnd,
                ssthresh: INFINITE_SSTHRESH,
                cwnd_cnt: 0,
                clamp: u32::MAX,
            },
            mss: init.mss,
            init_cwnd: init.init_cwnd,
            prior_cwnd: 0,
            prr_delivered: 0,
            pacing: Rate::INF,
            state: CaState::Open,
        };
        c.rule.init(&mut c.win, init);
        if let Some(srtt) = init.srtt {
            c.pacing = default_pacing_rate(&c.win, init.mss, 0, srtt.ns());
        }
        c
    }

    /// `tcp_init_cwnd_reduction`.
    fn start_reduction(&mut self, now: Time, conn: &Conn) {
        self.prior_cwnd = self.win.cwnd;
        self.prr_delivered = 0;
        self.win.ssthresh = self.rule.ssthresh(now, &self.win, conn);
    }

    /// `tcp_cwnd_reduction` (RFC 6937 proportional rate reduction).
    fn prr(&mut self, rs: &RateSample, conn: &Conn) {
        let newly = rs.acked_sacked;
        if newly == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly;
        let prr_out = conn.sent_since_state_change as i64;
        let in_flight = conn.in_flight as i64;
        let delta = self.win.ssthresh as i64 - in_flight;
        let mut sndcnt: i64 = if delta < 0 {
            // Above ssthresh: send in proportion to what was delivered.
            let dividend =
                self.win.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - prr_out
        } else {
            // Below ssthresh: slow-start back up to it (PRR-SSRB).
            let mut s = (self.prr_delivered as i64 - prr_out).max(newly as i64);
            if rs.snd_una_advanced && rs.losses == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if prr_out > 0 { 0 } else { 1 });
        self.win.cwnd = (in_flight + sndcnt).max(1) as u32;
    }
}

/// `tcp_update_pacing_rate`: 200% of cwnd x mss / srtt in slow start (below
/// half of ssthresh), 120% afterwards.
pub fn default_pacing_rate(w: &Window, mss: u32, packets_out: u32, srtt_ns: u64) -> Rate {
    let ratio = if w.cwnd < w.ssthresh / 2 {
        PACING_SS_RATIO
    } else {
        PACING_CA_RATIO
    };
    let pkts = w.cwnd.max(packets_out) as u128;
    let bytes_per_sec = crate::units::div128(
        mss as u128 * ratio as u128 * pkts * 1_000_000_000,
        100 * srtt_ns.max(1) as u128,
    );
    Rate::from_bytes_per_sec(bytes_per_sec.min(u64::MAX as u128 / 8) as u64)
}

impl<R: WindowRule> CongestionControl for Classic<R> {
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        self.rule.in_ack_event(now, &self.win, rs, conn);
        self.rule
            .pkts_acked(now, &mut self.win, rs, conn, self.pacing);
        match self.state {
            CaState::Cwr | CaState::Recovery => self.prr(rs, conn),
            // `tcp_may_raise_cwnd`: grow only on forward progress of snd_una.
            _ if rs.snd_una_advanced => {
                self.rule
                    .cong_avoid(now, &mut self.win, rs.acked_sacked, conn);
            }
            _ => {}
        }
        if let Some(srtt) = conn.srtt {
            self.pacing = default_pacing_rate(&self.win, self.mss, conn.packets_out, srtt.ns());
        }
        AckOutcome::default()
    }

    fn on_state_change(&mut self, now: Time, from: CaState, to: CaState, conn: &Conn) {
        match to {
            CaState::Recovery | CaState::Cwr if from < CaState::Cwr => {
                self.start_reduction(now, conn)
            }
            CaState::Loss => {
                // `tcp_enter_loss`: a new ssthresh unless already reducing.
                if from <= CaState::Disorder {
                    self.win.ssthresh = self.rule.ssthresh(now, &self.win, conn);
                    self.rule
                        .cwnd_event(now, WindowEvent::Loss, &mut self.win, conn);
                }
                self.prior_cwnd = self.win.cwnd;
                self.win.cwnd = conn.in_flight + 1;
                self.win.cwnd_cnt = 0;
            }
            // `tcp_end_cwnd_reduction`.
            CaState::Open if matches!(from, CaState::Cwr | CaState::Recovery) => {
                if self.win.ssthresh < INFINITE_SSTHRESH {
                    self.win.cwnd = self.win.ssthresh;
                }
                self.rule
                    .cwnd_event(now, WindowEvent::CompleteCwr, &mut self.win, conn);
            }
            _ => {}
        }
        self.state = to;
        self.rule.set_state(now, from, to, &mut self.win, conn);
    }

    fn on_event(&mut self, now: Time, ev: CcEvent, conn: &Conn) {
        self.rule
            .cwnd_event(now, WindowEvent::Core(ev), &mut self.win, conn);
        if let CcEvent::CwndRestart { idle, rto } = ev {
            // `tcp_cwnd_restart`: ssthresh keeps 3/4 of cwnd, then cwnd halves
            // per RTO of idle time, down to min(initial window, cwnd).
            let w = &mut self.win;
            if !matches!(self.state, CaState::Cwr | CaState::Recovery) {
                w.ssthresh = w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2));
            }
            let restart = self.init_cwnd.min(w.cwnd);
            let mut cwnd = w.cwnd;
            let mut left = idle.0 as i128;
            loop {
                left -= rto.0.max(1) as i128;
                if left <= 0 || cwnd <= restart {
                    break;
                }
                cwnd >>= 1;
            }
            w.cwnd = cwnd.max(restart);
        }
    }

    fn cwnd(&self) -> u32 {
        self.win.cwnd
    }

    fn ssthresh(&self) -> u32 {
        self.win.ssthresh
    }

    fn pacing_rate(&self) -> Rate {
        self.pacing
    }

    fn phase(&self) -> &'static str {
        match self.state {
            CaState::Recovery => "RECOVERY",
            CaState::Loss => "LOSS",
            CaState::Cwr => "CWR",
            _ => self.rule.phase(&self.win),
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num(
            "ssthresh_pkts",
            if self.win.ssthresh >= INFINITE_SSTHRESH {
                f64::NAN
            } else {
                self.win.ssthresh as f64
            },
        );
        self.rule.write_state(out);
    }
}

/// Windows and connections for the rules' unit tests.
#[cfg(test)]
pub mod testkit {
    use super::*;
    use crate::units::Dur;

    pub const MSS: u32 = 1448;

    pub fn win(cwnd: u32, ssthresh: u32) -> Window {
        Window {
            cwnd,
            ssthresh,
            cwnd_cnt: 0,
            clamp: u32::MAX,
        }
    }

    /// A cwnd-limited connection in Open with `in_flight` packets out, srtt
    /// and min RTT 100 ms, snd_una at 0.
    pub fn conn(in_flight: u32) -> Conn {
        Conn {
            mss: MSS,
            init_cwnd: 10,
            in_flight,
            packets_out: in_flight,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            delivered_mstamp: Time::ZERO,
            srtt: Some(Dur::from_ms(100)),
            min_rtt: Some(Dur::from_ms(100)),
            ca_state: CaState::Open,
            is_cwnd_limited: true,
            max_packets_out: in_flight,
            app_limited: false,
            next_departure: Time::ZERO,
            snd_una: 0,
            snd_nxt: in_flight,
            ecn_enabled: false,
            paced: false,
            sent_since_state_change: 0,
            data_segs_out: 0,
            highest_sack: 0,
        }
    }

    pub fn init(now: Time, srtt: Option<Dur>) -> CcInit {
        CcInit {
            now,
            mss: MSS,
            init_cwnd: 10,
            srtt,
            seed: 1,
            ecn_enabled: false,
        }
    }

    /// An ACK of `acked` packets with RTT sample `rtt_us` (-1: none).
    pub fn ack(acked: u32, rtt_us: i64) -> RateSample {
        RateSample {
            delivered: acked as i64,
            rtt_us,
            acked_sacked: acked,
            pkts_acked: acked,
            snd_una_advanced: acked > 0,
            slow_path: acked == 0,
            ..RateSample::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::win;
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut w = win(10, 14);
        assert_eq!(w.slow_start(6), 2);
        assert_eq!(w.cwnd, 14);
    }

    #[test]
    fn additive_increase_adds_one_per_window() {
        let mut w = win(10, 5);
        for _ in 0..10 {
            w.cong_avoid_ai(10, 1);
        }
        assert_eq!(w.cwnd, 11);
        assert_eq!(w.cwnd_cnt, 0);
        // Stretch ACK: 25 packets at w = 11 give two packets and keep 3.
        w.cong_avoid_ai(11, 25);
        assert_eq!((w.cwnd, w.cwnd_cnt), (13, 3));
    }

    #[test]
    fn pacing_is_twice_the_rate_in_slow_start() {
        // 10 x 1448 B per 10 ms = 1.448 MB/s; 200% = 2.896 MB/s.
        let w = win(10, INFINITE_SSTHRESH);
        let r = default_pacing_rate(&w, 1448, 0, 10_000_000);
        assert_eq!(r.bytes_per_sec(), 2_896_000);
        let w = win(10, 12);
        assert_eq!(
            default_pacing_rate(&w, 1448, 0, 10_000_000).bytes_per_sec(),
            1_737_600
        );
    }
}
