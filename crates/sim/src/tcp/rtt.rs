//! RTT estimation and the retransmission timeout, as Linux
//! `tcp_rtt_estimator` and `tcp_set_rto` (net/ipv4/tcp_input.c) implement
//! RFC 6298: srtt and mdev in microseconds, rttvar never below the 200 ms
//! minimum RTO, RTO = srtt + rttvar, plus the 5-minute windowed min RTT
//! (`tcp_update_rtt_min`, sysctl tcp_min_rtt_wlen = 300 s).

use crate::filter::MinMax;
use crate::units::{Dur, Time};

/// Linux `TCP_RTO_MIN` and `TCP_RTO_MAX`, and the 1 s `TCP_TIMEOUT_INIT`.
pub const RTO_MIN: Dur = Dur::from_ms(200);
pub const RTO_MAX: Dur = Dur::from_secs(120);
pub const TIMEOUT_INIT: Dur = Dur::from_secs(1);
const MIN_RTT_WINDOW_US: u64 = 300_000_000;

/// The hosts' RFC 7323 timestamp clock in milliseconds (`TCP_TS_HZ` 1000:
/// `tcp_time_stamp` and `tcp_skb_timestamp` truncate the microsecond clock
/// to ms). Never 0: a TSecr of 0 reads as "no timestamp"
/// (`tcp_ack_update_rtt` checks `rcv_tsecr`); Linux adds a random
/// per-connection offset, which cancels in every difference.
pub fn ts_clock(now: Time) -> u32 {
    (now.0 / 1_000_000) as u32 + 1
}

/// `tcp_ack_update_rtt`'s timestamp sample, us: for an ACK that advances
/// snd_una but gives no timed sample (Karn's rule forbids one after a
/// retransmission and no never-retransmitted segment was SACKed), the
/// echoed TSecr, in whole ms (a delta of 0 counts as 1 ms).
pub fn ts_sample_us(now: Time, tsecr: u32) -> Option<u64> {
    if tsecr == 0 {
        return None;
    }
    let delta = ts_clock(now).wrapping_sub(tsecr);
    // `delta < INT_MAX / (USEC_PER_SEC / TCP_TS_HZ)`: a sane echo.
    (delta < i32::MAX as u32 / 1000).then(|| delta.max(1) as u64 * 1000)
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// Smoothed RTT x 8, us (`srtt_us`); 0 before the first sample.
    srtt8_us: u64,
    /// Mean deviation x 4, us (`mdev_us`).
    mdev4_us: u64,
    /// Maximal mdev over the last RTT (`mdev_max_us`).
    mdev_max_us: u64,
    /// RTO variance term (`rttvar_us`).
    rttvar_us: u64,
    /// snd_nxt when the current RTT period started (`rtt_seq`).
    rtt_seq: u32,
    /// Current RTO including exponential backoff (`icsk_rto`).
    rto: Dur,
    min_rtt: MinMax,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            srtt8_us: 0,
            mdev4_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            rto: TIMEOUT_INIT,
            min_rtt: MinMax::new_min(),
        }
    }
}

impl RttEstimator {
    pub fn srtt(&self) -> Option<Dur> {
        (self.srtt8_us > 0).then(|| Dur(self.srtt8_us * 125))
    }

    /// `tcp_min_rtt`: windowed minimum, or None before any sample.
    pub fn min_rtt(&self) -> Option<Dur> {
        let v = self.min_rtt.get();
        (v != u64::MAX).then(|| Dur::from_us(v))
    }

    pub fn min_rtt_us(&self) -> u64 {
        self.min_rtt.get()
    }

    pub fn rto(&self) -> Dur {
        self.rto
    }

    /// Exponential backoff after a timeout (`icsk_rto` doubled, capped).
    pub fn backoff(&mut self) {
        self.rto = Dur((self.rto.0 * 2).min(RTO_MAX.0));
    }

    /// `tcp_update_rtt_min`: samples from probably-delayed ACKs only count if lower.
    pub fn update_min_rtt(&mut self, now: Time, rtt_us: u64, maybe_delayed: bool) {
        if maybe_delayed && rtt_us > self.min_rtt.get() {
            return;
        }
        self.min_rtt
            .update(MIN_RTT_WINDOW_US, now.us(), rtt_us.max(1));
    }

    /// `tcp_rtt_estimator` followed by `tcp_set_rto` (which also clears backoff).
    pub fn sample(&mut self, mrtt_us: u64, snd_una: u32, snd_nxt: u32) {
        let rto_min_us = RTO_MIN.us();
        let mut m = mrtt_us as i64;
        if self.srtt8_us != 0 {
            let mut srtt = self.srtt8_us as i64;
            m -= srtt >> 3; // error in the estimate
            srtt += m; // srtt = 7/8 srtt + 1/8 sample
            let mut mdev = self.mdev4_us as i64;
            if m < 0 {
                // A sample below srtt moves mdev down only a little.
                m = -m - (mdev >> 2);
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            mdev += m; // mdev = 3/4 mdev + 1/4 |error|
            self.mdev4_us = mdev.max(0) as u64;
            if self.mdev4_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev4_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            // Once per RTT, let rttvar decay toward the period's mdev_max.
            if seq_after(snd_una, self.rtt_seq) {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = rto_min_us;
            }
            self.srtt8_us = srtt.max(1) as u64;
        } else {
            // First sample.
            self.srtt8_us = (m.max(1) as u64) << 3;
            self.mdev4_us = (m.max(0) as u64) << 1;
            self.rttvar_us = self.mdev4_us.max(rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        // `__tcp_set_rto`: srtt + rttvar, capped.
        let rto_us = (self.srtt8_us >> 3) + self.rttvar_us;
        self.rto = Dur::from_us(rto_us).min(RTO_MAX);
    }
}

/// `after(a, b)` on 32-bit sequence numbers.
pub fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_srtt_and_a_200ms_floor() {
        let mut r = RttEstimator::default();
        r.sample(20_000, 0, 10);
        assert_eq!(r.srtt(), Some(Dur::from_ms(20)));
        // rttvar = max(2 x 20 ms, 200 ms) = 200 ms; RTO = 220 ms.
        assert_eq!(r.rto(), Dur::from_ms(220));
    }

    #[test]
    fn srtt_converges_to_a_steady_rtt() {
        let mut r = RttEstimator::default();
        r.sample(100_000, 0, 1);
        for i in 0..100 {
            r.sample(20_000, i + 1, i + 2);
        }
        let srtt = r.srtt().unwrap().us();
        assert!((19_990..=20_010).contains(&srtt), "{srtt}");
        assert!(r.rto() >= Dur::from_ms(220));
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let mut r = RttEstimator::default();
        r.sample(50_000, 0, 1);
        let base = r.rto();
        r.backoff();
        assert_eq!(r.rto(), Dur(base.0 * 2));
        for _ in 0..20 {
            r.backoff();
        }
        assert_eq!(r.rto(), RTO_MAX);
    }

    #[test]
    fn delayed_ack_samples_do_not_raise_min_rtt() {
        let mut r = RttEstimator::default();
        r.update_min_rtt(Time(0), 20_000, false);
        r.update_min_rtt(Time(1_000), 30_000, true);
        assert_eq!(r.min_rtt_us(), 20_000);
        r.update_min_rtt(Time(2_000), 15_000, true);
        assert_eq!(r.min_rtt_us(), 15_000);
    }
}
