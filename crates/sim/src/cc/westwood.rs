//! TCP Westwood+ (Mascolo et al. 2001; Grieco and Mascolo 2004), as Linux
//! net/ipv4/tcp_westwood.c: Reno's growth, but after a loss or an ECN
//! reduction the window is set from an estimate of the bandwidth (bytes
//! ACKed per RTT, at least 50 ms, low-pass filtered twice) times the
//! minimum RTT, rather than halved. So random losses cost less than
//! Reno's halving.

use super::classic::{jiffies, usecs_to_jiffies, Window, WindowEvent, WindowRule, HZ};
use super::reno::RenoRule;
use super::{CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// `TCP_WESTWOOD_RTT_MIN`: the bandwidth is sampled over at least 50 ms.
const RTT_MIN: u32 = HZ / 20;
/// `TCP_WESTWOOD_INIT_RTT`: a conservative first RTT, jiffies.
const INIT_RTT: u32 = 20 * HZ;

/// Westwood+ has no module parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WestwoodConfig {}

impl CcParams for WestwoodConfig {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `struct westwood`. Sequence numbers are bytes (segments x MSS), as in Linux.
pub struct WestwoodRule {
    mss: u32,
    /// First filter stage, bytes per jiffy.
    bw_ns_est: u32,
    /// The bandwidth estimate, bytes per jiffy.
    bw_est: u32,
    /// Start of the current sampling window, jiffies.
    rtt_win_sx: u32,
    /// Bytes ACKed in the current sampling window.
    bk: u32,
    snd_una: u32,
    cumul_ack: u32,
    /// Bytes already counted for duplicate ACKs.
    accounted: u32,
    /// Latest RTT sample, jiffies.
    rtt: u32,
    rtt_min: u32,
    first_ack: bool,
    reset_rtt_min: bool,
}

impl WestwoodRule {
    /// `tcp_westwood_init`.
    pub fn new(_cfg: &WestwoodConfig, init: &CcInit) -> Self {
        WestwoodRule {
            mss: init.mss,
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: jiffies(init.now),
            bk: 0,
            snd_una: 0,
            cumul_ack: 0,
            accounted: 0,
            rtt: INIT_RTT,
            rtt_min: INIT_RTT,
            first_ack: true,
            reset_rtt_min: true,
        }
    }

    fn una_bytes(&self, conn: &Conn) -> u32 {
        conn.snd_una.wrapping_mul(self.mss)
    }

    /// `westwood_filter`: two stages of 7/8 old + 1/8 new.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = (7u32.wrapping_mul(self.bw_ns_est).wrapping_add(sample)) >> 3;
            self.bw_est = (7u32.wrapping_mul(self.bw_est).wrapping_add(self.bw_ns_est)) >> 3;
        }
    }

    /// `westwood_update_window`: close the sampling window after max(RTT, 50 ms).
    fn update_window(&mut self, now: Time, conn: &Conn) {
        let jif = jiffies(now);
        let delta = jif.wrapping_sub(self.rtt_win_sx) as i32;
        if self.first_ack {
            self.snd_una = self.una_bytes(conn);
            self.first_ack = false;
        }
        if self.rtt != 0 && delta as u32 > self.rtt.max(RTT_MIN) {
            self.filter(delta as u32);
            self.bk = 0;
            self.rtt_win_sx = jif;
        }
    }

    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// `westwood_acked_count`: bytes this ACK accounts for; a duplicate
    /// counts one MSS, which later cumulative ACKs give back.
    fn acked_count(&mut self, conn: &Conn) -> u32 {
        let una = self.una_bytes(conn);
        self.cumul_ack = una.wrapping_sub(self.snd_una);
        if self.cumul_ack == 0 {
            self.accounted = self.accounted.wrapping_add(self.mss);
            self.cumul_ack = self.mss;
        }
        if self.cumul_ack > self.mss {
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = self.mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = una;
        self.cumul_ack
    }

    /// `tcp_westwood_bw_rttmin`: BW x RTTmin in packets, at least 2.
    fn bw_rttmin(&self) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / self.mss).max(2)
    }
}

impl WindowRule for WestwoodRule {
    /// `tcp_reno_ssthresh` (the window is set on `CA_EVENT_COMPLETE_CWR`).
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        RenoRule::linux().cong_avoid(now, w, acked, conn);
    }

    /// `tcp_westwood_ack`.
    fn in_ack_event(&mut self, now: Time, _w: &Window, rs: &RateSample, conn: &Conn) {
        self.update_window(now, conn);
        if rs.slow_path {
            let n = self.acked_count(conn);
            self.bk = self.bk.wrapping_add(n);
        } else {
            // `westwood_fast_bw`.
            let una = self.una_bytes(conn);
            self.bk = self.bk.wrapping_add(una.wrapping_sub(self.snd_una));
            self.snd_una = una;
        }
        self.update_rtt_min();
    }

    /// `tcp_westwood_pkts_acked`: the latest RTT, jiffies.
    fn pkts_acked(&mut self, _now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        if rs.rtt_us > 0 {
            self.rtt = usecs_to_jiffies(rs.rtt_us.min(u32::MAX as i64) as u32);
        }
    }

    /// `tcp_westwood_event`.
    fn cwnd_event(&mut self, _now: Time, ev: WindowEvent, w: &mut Window, _conn: &Conn) {
        match ev {
            WindowEvent::CompleteCwr => {
                w.ssthresh = self.bw_rttmin();
                w.cwnd = w.ssthresh;
            }
            WindowEvent::Loss => {
                w.ssthresh = self.bw_rttmin();
                self.reset_rtt_min = true;
            }
            WindowEvent::Core(_) => {}
        }
    }

    fn write_state(&self, out: &mut CcState) {
        // bytes per jiffy (ms) -> Mbit/s.
        out.num("westwood_bw_mbps", self.bw_est as f64 * 8.0 * 1000.0 / 1e6);
        out.num("westwood_rtt_min_ms", self.rtt_min as f64);
        out.num("westwood_bw_rttmin_pkts", self.bw_rttmin() as f64);
    }
}

/// The registry's entry for `cc = "westwood"` (`cc::Algorithm`).
impl crate::cc::Algorithm for WestwoodConfig {
    const NAME: &'static str = "westwood";
    const REFERENCE: &'static str =
        "Linux net/ipv4/tcp_westwood.c (Westwood+); Grieco and Mascolo, CCR 2004";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Westwood(crate::cc::classic::Classic::new(
            WestwoodRule::new(self, init),
            init,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, init, win, MSS};
    use crate::units::Dur;

    #[test]
    fn after_recovery_the_window_is_bandwidth_times_min_rtt() {
        let mut r = WestwoodRule::new(&WestwoodConfig::default(), &init(Time::ZERO, None));
        let mut w = win(100, 50);
        let mut c = conn(100);
        // 10 packets per ms (14.48 MB/s, 115.8 Mbit/s) for 1 s, RTT 20 ms.
        for ms in 1..=1000u64 {
            let now = Time::ZERO + Dur::from_ms(ms);
            c.snd_una += 10;
            let rs = ack(10, 20_000);
            r.pkts_acked(now, &mut w, &rs, &c, Rate::INF);
            r.in_ack_event(now, &w, &rs, &c);
        }
        assert_eq!(r.rtt_min, 20);
        let bw = r.bw_est;
        assert!(
            (bw as i64 - 10 * MSS as i64).abs() <= 10 * MSS as i64 / 50,
            "{bw}"
        );
        // BDP = 10 packets/ms x 20 ms.
        r.cwnd_event(Time::ZERO, WindowEvent::CompleteCwr, &mut w, &c);
        assert!((195..=200).contains(&w.cwnd), "{}", w.cwnd);
        assert_eq!(w.ssthresh, w.cwnd);
    }

    #[test]
    fn a_duplicate_ack_counts_one_mss_that_the_next_cumulative_ack_gives_back() {
        let mut r = WestwoodRule::new(&WestwoodConfig::default(), &init(Time::ZERO, None));
        let w = win(100, 50);
        let mut c = conn(100);
        let now = Time::ZERO + Dur::from_ms(1);
        // The first ACK only sets the reference point (`first_ack`).
        c.snd_una = 5;
        r.in_ack_event(now, &w, &ack(5, 1000), &c);
        assert_eq!(r.bk, 0);
        c.snd_una = 10;
        r.in_ack_event(now, &w, &ack(5, 1000), &c);
        assert_eq!(r.bk, 5 * MSS);
        let mut dup = ack(0, -1);
        dup.slow_path = true;
        r.in_ack_event(now, &w, &dup, &c);
        r.in_ack_event(now, &w, &dup, &c);
        assert_eq!(r.bk, 7 * MSS);
        // 4 packets more, 2 of them already counted.
        c.snd_una = 14;
        let mut cum = ack(4, 1000);
        cum.slow_path = true;
        r.in_ack_event(now, &w, &cum, &c);
        assert_eq!(r.bk, 9 * MSS);
    }
}
