//! The receiver's delayed-ACK timer as Linux runs it (`[hosts] delack`,
//! `hz`): the timeout `icsk_ack.ato` adapts to the gaps between in-order
//! segments (`tcp_event_data_recv`), doubles when the timer had to send the
//! ACK (`tcp_delack_timer_handler`), is bounded by the handshake's RTT
//! (`tcp_send_delayed_ack`) and falls back to 40 ms when quick-ACK mode
//! ends or starts (`tcp_dec_quickack_mode`, `tcp_enter_quickack_mode`).
//! The kernel counts all of it in jiffies and arms the timer on its timer
//! wheel, which rounds an expiry up by one tick (`calc_index`, Linux
//! `kernel/time/timer.c`): with `CONFIG_HZ=250` a 40 ms timer fires 40 to
//! 44 ms after the segment, as measured on the Linux backend (40.3-44.1 ms,
//! docs/validation.md). With `delack = false` the timer is exactly 40 ms
//! after the first unACKed segment (the model before version 12).

use crate::rng::Rng;
use crate::units::{Dur, Time};

/// `TCP_DELACK_MIN` / `TCP_ATO_MIN` (HZ/25).
pub const DELACK_TIMEOUT: Dur = Dur::from_ms(40);

/// The kernel's tick: its length (1/HZ) and where it falls in simulated
/// time. All hosts of a run share one (on the Linux backend they are one
/// kernel); the phase is drawn from the run's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jiffies {
    hz: u32,
    /// 1/hz.
    tick: Dur,
    /// From a jiffy's start to the simulation's zero, below `tick`.
    phase: Dur,
}

impl Jiffies {
    pub fn new(hz: u32, phase: Dur) -> Jiffies {
        let tick = Dur(1_000_000_000 / u64::from(hz));
        debug_assert!(phase < tick);
        Jiffies { hz, tick, phase }
    }

    /// At a phase drawn from `rng`, once per run.
    pub fn seeded(hz: u32, rng: &mut Rng) -> Jiffies {
        let tick = 1_000_000_000 / hz;
        Jiffies::new(hz, Dur(u64::from(rng.below(tick))))
    }

    /// `jiffies` at `now`.
    fn at(self, now: Time) -> u64 {
        (now.0 + self.phase.0) / self.tick.0
    }

    /// When jiffy `j` begins.
    fn start(self, j: u64) -> Time {
        Time(j * self.tick.0 - self.phase.0)
    }

    /// `usecs_to_jiffies`: rounded up.
    fn of(self, d: Dur) -> u64 {
        d.0.div_ceil(self.tick.0)
    }

    /// HZ/n jiffies, as the kernel's constants are written.
    fn hz_over(self, n: u32) -> u64 {
        u64::from(self.hz / n)
    }
}

/// `TCP_RTO_MIN` (HZ/5) as the receiver's RTO from its one RTT sample uses it.
const RTO_MIN: Dur = Dur::from_ms(200);

/// Where the delayed-ACK timer stands (`icsk_ack.ato`, `lrcvtime`,
/// `timeout`) for one receiver: the one owner of its pending timer.
#[derive(Clone, Debug)]
pub struct DelayedAck {
    clock: Option<Jiffies>,
    /// `icsk_ack.ato`, jiffies; 0 before the first in-order segment.
    ato: u64,
    /// `icsk_ack.lrcvtime`: the jiffy of the last in-order segment.
    lrcv: u64,
    /// The receiver's `icsk_rto`, jiffies, from the handshake's RTT.
    rto: u64,
    /// The receiver's srtt (the handshake's), jiffies rounded up.
    srtt: Option<u64>,
    /// The pending timer: `icsk_ack.timeout` (the jiffy it was armed
    /// for; 0 without the engine) and when the wheel fires it.
    pending: Option<(u64, Time)>,
}

impl DelayedAck {
    /// `clock`: Linux's engine on these jiffies; `None`: a fixed 40 ms.
    pub fn new(clock: Option<Jiffies>) -> DelayedAck {
        DelayedAck {
            clock,
            ato: 0,
            lrcv: 0,
            // `TCP_TIMEOUT_INIT` (1 s) until the handshake's RTT is known.
            rto: clock.map_or(0, |c| u64::from(c.hz)),
            srtt: None,
            pending: None,
        }
    }

    /// The handshake's RTT sample, the receiver's only one: its srtt and
    /// RTO (`tcp_rtt_estimator`'s first sample: rttvar = max(2 x rtt,
    /// `TCP_RTO_MIN`); `__tcp_set_rto`: srtt + rttvar).
    pub fn on_rtt(&mut self, rtt: Dur) {
        if let Some(c) = self.clock {
            self.srtt = Some(c.of(rtt));
            self.rto = c.of(rtt + Dur((2 * rtt.0).max(RTO_MIN.0)));
        }
    }

    /// An in-order data segment (`tcp_event_data_recv`); true if the gap
    /// since the last one exceeded the RTO, so quick-ACK mode restarts
    /// (`tcp_incr_quickack`).
    pub fn on_in_order(&mut self, now: Time) -> bool {
        let Some(c) = self.clock else { return false };
        let now_j = c.at(now);
        let ato_min = c.hz_over(25);
        let mut restart = false;
        if self.ato == 0 {
            // The first data: quick-ACK mode (the caller's) and ato = 40 ms.
            self.ato = ato_min;
        } else {
            let m = now_j - self.lrcv;
            if m <= ato_min / 2 {
                self.ato = self.ato / 2 + ato_min / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(self.rto);
            } else if m > self.rto {
                restart = true;
            }
        }
        self.lrcv = now_j;
        restart
    }

    /// Quick-ACK mode starts or ends: ato back to `TCP_ATO_MIN`
    /// (`tcp_enter_quickack_mode`, `tcp_dec_quickack_mode`).
    pub fn deflate(&mut self) {
        if let Some(c) = self.clock {
            if self.ato != 0 {
                self.ato = c.hz_over(25);
            }
        }
    }

    /// When the pending timer fires.
    pub fn deadline(&self) -> Option<Time> {
        self.pending.map(|(_, at)| at)
    }

    /// The timer is due at `now`: true, and no longer pending.
    pub fn expire(&mut self, now: Time) -> bool {
        let due = self.deadline().is_some_and(|at| at <= now);
        if due {
            self.pending = None;
        }
        due
    }

    /// The timer had to send the ACK (`tcp_delack_timer_handler`, not in
    /// ping-pong mode: a receiver that sends no data never is): ato
    /// doubles, at most the RTO.
    pub fn on_fired(&mut self) {
        if self.clock.is_some() {
            self.ato = (self.ato * 2).min(self.rto);
        }
    }

    /// An ACK left: no timer pending.
    pub fn on_ack_sent(&mut self) {
        self.pending = None;
    }

    /// A segment is left unACKed (`tcp_send_delayed_ack`): arms the timer,
    /// or keeps the pending one; true if that one is so near that the ACK
    /// goes now.
    pub fn arm(&mut self, now: Time) -> bool {
        let Some(c) = self.clock else {
            if self.pending.is_none() {
                self.pending = Some((0, now + DELACK_TIMEOUT));
            }
            return false;
        };
        let now_j = c.at(now);
        let mut ato = self.ato.max(c.hz_over(25));
        if ato > c.hz_over(25) {
            // The slow path: bounded by HZ/2 and by the handshake's RTT (at
            // least `TCP_DELACK_MIN`). `ICSK_ACK_PUSHED` (HZ/5 instead of
            // HZ/2) never reaches here: such a segment is ACKed at once.
            let mut max_ato = c.hz_over(2);
            if let Some(rtt) = self.srtt {
                max_ato = max_ato.min(rtt.max(c.hz_over(25)));
            }
            ato = ato.min(max_ato);
        }
        // `icsk_delack_max`: `TCP_DELACK_MAX` (HZ/5).
        ato = ato.min(c.hz_over(5));
        let timeout = now_j + ato;
        if let Some((old, _)) = self.pending {
            if old <= now_j + ato / 4 {
                return true;
            }
            if timeout >= old {
                return false;
            }
        }
        // The timer wheel's bucket (`calc_wheel_index`): levels of 64
        // slots, each 8 times coarser; the expiry rounds up to the next
        // slot of its level, so never early.
        let delta = timeout - now_j;
        let mut shift = 0;
        while shift < 21 && delta >= 63 << shift {
            shift += 3;
        }
        let bucket = ((timeout >> shift) + 1) << shift;
        self.pending = Some((timeout, c.start(bucket)));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(rtt_ms: u64) -> DelayedAck {
        let mut d = DelayedAck::new(Some(Jiffies::new(250, Dur::ZERO)));
        d.on_rtt(Dur::from_ms(rtt_ms));
        d
    }

    #[test]
    fn a_40_ms_timer_fires_40_to_44_ms_later_at_hz_250() {
        // Armed anywhere in a 4 ms jiffy, the wheel fires it at the start
        // of jiffy now + 10 + 1.
        for us in [0u64, 1, 1999, 3999] {
            let mut d = engine(50);
            let now = Time(Dur::from_ms(100).0 + us * 1000);
            d.on_in_order(now);
            assert!(!d.arm(now));
            let t = d.deadline().unwrap();
            let wait = t.since(now);
            assert!(
                wait > Dur::from_ms(40) && wait <= Dur::from_ms(44),
                "{wait:?}"
            );
            assert_eq!(t, Time(Dur::from_ms(144).0));
        }
    }

    #[test]
    fn without_the_engine_the_timer_is_exactly_40_ms_and_keeps_the_older_one() {
        let mut d = DelayedAck::new(None);
        let now = Time(Dur::from_ms(7).0 + 123);
        assert!(!d.arm(now));
        assert_eq!(d.deadline(), Some(now + DELACK_TIMEOUT));
        assert!(!d.arm(now + Dur::from_ms(5)));
        assert_eq!(d.deadline(), Some(now + DELACK_TIMEOUT));
        assert!(!d.expire(now + Dur::from_ms(39)));
        assert!(d.expire(now + DELACK_TIMEOUT));
        assert_eq!(d.deadline(), None);
    }

    #[test]
    fn a_fired_timer_doubles_ato_bounded_by_the_handshake_rtt() {
        // 50 ms path: ato 10 -> 20 jiffies, capped at srtt = 13 jiffies
        // (12.5 rounded up): the next timer waits 52-56 ms.
        let mut d = engine(50);
        let t0 = Time(Dur::from_ms(1000).0);
        d.on_in_order(t0);
        d.on_fired();
        assert_eq!(d.ato, 20);
        // The next segment 30 ms later (between 20 ms and ato): ato/2 + m.
        let t1 = t0 + Dur::from_ms(30);
        d.on_in_order(t1);
        assert_eq!(d.ato, 10 + 7);
        d.arm(t1);
        let t = d.deadline().unwrap();
        assert_eq!(
            t.since(t1),
            Dur::from_ms(13 * 4 + 4 - 2),
            "armed 2 ms into a jiffy"
        );
        // Segments in quick succession bring it back towards 40 ms.
        let mut t = t1;
        for _ in 0..8 {
            t += Dur::from_ms(1);
            d.on_in_order(t);
        }
        assert_eq!(d.ato, 10);
    }

    #[test]
    fn on_a_10_ms_path_the_bound_is_40_ms_and_the_rto_210_ms() {
        let mut d = engine(10);
        assert_eq!(d.rto, 53); // 210 ms in 4 ms jiffies, rounded up
        let t0 = Time(Dur::from_ms(1000).0);
        d.on_in_order(t0);
        d.on_fired();
        d.arm(t0 + Dur::from_ms(1));
        let t = d.deadline().unwrap();
        assert!(t.since(t0) <= Dur::from_ms(44));
    }

    #[test]
    fn a_gap_longer_than_the_rto_restarts_quick_acks() {
        let mut d = engine(50);
        let t0 = Time(Dur::from_ms(1000).0);
        assert!(!d.on_in_order(t0));
        assert!(!d.on_in_order(t0 + Dur::from_ms(240)));
        assert!(d.on_in_order(t0 + Dur::from_ms(240 + 260)));
    }

    #[test]
    fn a_segment_near_the_pending_expiry_is_acked_at_once() {
        // ato 10 jiffies: a second arm within ato/4 = 2 jiffies of the
        // pending timeout sends the ACK now.
        let mut d = engine(50);
        let t0 = Time(Dur::from_ms(1000).0);
        d.on_in_order(t0);
        assert!(!d.arm(t0));
        let at = d.deadline();
        // Later and not near: the pending timer stays as it was.
        assert!(!d.arm(t0 + Dur::from_ms(20)));
        assert_eq!(d.deadline(), at);
        assert!(d.arm(t0 + Dur::from_ms(33)));
    }
}
