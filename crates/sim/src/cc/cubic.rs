//! CUBIC with HyStart, as Linux 6.1 implements it (net/ipv4/tcp_cubic.c),
//! plugged into the shared loss-based machinery as a [`WindowRule`].
//!
//! Everything is integer arithmetic with Linux's units and truncations:
//! the window curve is evaluated in 1/1024-second steps from a clock in
//! jiffies (HZ = 1000, so one jiffy is one millisecond of simulated time),
//! K is an integer cube root of `(Wmax - cwnd) * 2^40 / cube_rtt_scale`, and
//! HyStart works on a microsecond clock (`tcp_mstamp`). Per-rule source
//! references name the Linux function each piece follows.
//!
//! Differences from Linux: `tp->lsndtime` (for the idle restart) is inferred
//! from the ACK that drained the pipe (see `pkts_acked`); the
//! `initial_ssthresh` module parameter (default off) is not offered; undo
//! (`tcp_reno_undo_cwnd`) is up to the shared machinery, which has none yet.

use super::classic::{after, jiffies, usecs_to_jiffies, Window, WindowEvent, WindowRule, HZ};
use super::{CaState, CcEvent, CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::{format_duration, Dur, Rate, Time};
use serde::{Deserialize, Serialize};

/// `BICTCP_BETA_SCALE`: beta is a fraction of 1024.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: the curve's time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before delay detection.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// Clamp of HyStart's delay threshold (`HYSTART_DELAY_MIN/MAX`), us.
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16000;
/// `sk_gso_max_size` of an IPv4 socket on a GSO-capable device
/// (`GSO_LEGACY_MAX_SIZE`, 64 KiB), used by `hystart_ack_delay`.
const GSO_MAX_SIZE: u64 = 65536;
const USEC_PER_SEC: u64 = 1_000_000;
const USEC_PER_MSEC: u64 = 1000;

/// Which HyStart detectors run (`hystart_detect`: 1 = ACK train, 2 = delay, 3 = both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HystartDetect {
    #[default]
    Both,
    AckTrain,
    Delay,
}

/// CUBIC's module parameters; defaults are Linux's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// Multiplicative decrease factor (Linux `beta`/1024; 717/1024 by default).
    /// Used as the nearest multiple of 1/1024.
    pub beta: f64,
    /// Cubic scaling constant C in packets/s^3 (Linux `bic_scale`*10/1024,
    /// bic_scale = 41 gives 0.4004). Used as the nearest integer bic_scale.
    pub c: f64,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    /// Hybrid slow start.
    pub hystart: bool,
    pub hystart_detect: HystartDetect,
    /// HyStart runs only once cwnd is at least this many packets.
    pub hystart_low_window: u32,
    /// Largest ACK spacing that still extends an ACK train (`hystart_ack_delta_us`).
    #[serde(with = "crate::units::dur_text")]
    pub hystart_ack_delta: Dur,
    /// HyStart++ (RFC 9406) instead of HyStart in the initial slow start.
    /// Written into the normalized scenario only when on (existing
    /// scenarios keep their hash).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hystart_plus_plus: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            beta: 717.0 / 1024.0,
            c: 0.4,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HystartDetect::Both,
            hystart_low_window: 16,
            hystart_ack_delta: Dur::from_us(2000),
            hystart_plus_plus: false,
        }
    }
}

impl CubicConfig {
    /// Linux `beta` (out of 1024).
    fn beta_int(&self) -> u32 {
        (self.beta * BETA_SCALE as f64).round() as u32
    }
    /// Linux `bic_scale` (C = bic_scale * 10 / 1024).
    fn bic_scale(&self) -> u32 {
        (self.c * 1024.0 / 10.0).round() as u32
    }
}

impl CcParams for CubicConfig {
    fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0 && (1..BETA_SCALE).contains(&self.beta_int())) {
            return Err(format!(
                "beta = {} is out of range: allowed 0 < beta < 1 (at least 1/1024 from either end; Linux keeps beta in 1/1024 steps)",
                self.beta
            ));
        }
        if !(self.c > 0.0 && self.c <= 100.0) || self.bic_scale() == 0 {
            return Err(format!(
                "c = {} is out of range: allowed 0 < c <= 100 (C = bic_scale*10/1024 with an integer bic_scale >= 1, so at least 0.005)",
                self.c
            ));
        }
        if self.hystart_ack_delta > Dur::from_secs(1) {
            return Err(format!(
                "hystart_ack_delta = {} is out of range: allowed 0s to 1s",
                format_duration(self.hystart_ack_delta)
            ));
        }
        Ok(())
    }
}

/// `tcp_mstamp` truncated to 32 bits, as `bictcp_clock_us` reads it.
fn clock_us(now: Time) -> u32 {
    now.us() as u32
}

/// Leading bits of cube roots: entry `i` approximates `cbrt(i << 18) - 1`,
/// hand-tuned upstream. These are the values of the table in tcp_cubic.c
/// `cubic_root`; they are needed as-is for K to come out bit-identical.
const CBRT_MSB: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168,
    170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213,
    215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245,
    246, 248, 250, 251, 252, 254,
];

/// Integer cube root with Linux's error (tcp_cubic.c `cubic_root`): a table
/// guess from the top six significant bits of `a`, then one Newton step
/// `x' = (2x + a/x^2) / 3` with `x^2` taken as `x(x-1)` and `/3` as `*341/1024`.
pub fn cubic_root(a: u64) -> u32 {
    // Number of significant bits (`fls64`).
    let bits = 64 - a.leading_zeros();
    if bits < 7 {
        // `a` < 64: the table answers directly.
        return (CBRT_MSB[a as usize] as u32 + 35) >> 6;
    }
    // About a third of the bits, minus one: the shift that leaves 4..6 bits.
    let third = ((bits * 84) >> 8) - 1;
    let top = (a >> (third * 3)) as usize;
    let guess = ((CBRT_MSB[top] as u32 + 10) << third) >> 6;
    let x2 = guess as u64 * (guess as u64 - 1);
    let sum = (2 * guess).wrapping_add((a / x2) as u32);
    sum.wrapping_mul(341) >> 10
}

/// The CUBIC rule: `struct bictcp` plus the precomputed module constants.
#[derive(Clone, Debug)]
pub struct CubicRule {
    // Parameters, precomputed as in `cubictcp_register`.
    beta: u32,
    /// `beta_scale`: Reno-estimate ACKs per packet, times 8 / cwnd.
    beta_scale: u32,
    /// `cube_rtt_scale` = bic_scale * 10 (C in 1/1024 units).
    cube_rtt_scale: u32,
    /// `cube_factor` = 2^40 / cube_rtt_scale.
    cube_factor: u64,
    fast_convergence: bool,
    tcp_friendliness: bool,
    hystart: bool,
    detect_train: bool,
    detect_delay: bool,
    low_window: u32,
    ack_delta_us: i32,

    // `struct bictcp`.
    /// ACKed packets per +1 cwnd.
    cnt: u32,
    /// Wmax, packets.
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffy of the last curve evaluation.
    last_time: u32,
    /// Plateau of the current curve, packets.
    origin: u32,
    /// Time from the epoch start to the plateau, 1/1024 s.
    k: u32,
    /// Minimum RTT, us (0 = none yet).
    delay_min: u32,
    /// Jiffy at which the current epoch began (0 = no epoch).
    epoch_start: u32,
    /// ACKed packets not yet credited to the Reno estimate.
    ack_cnt: u32,
    /// Reno-equivalent window estimate, packets.
    tcp_cwnd: u32,
    sample_cnt: u8,
    /// HyStart found its exit point.
    found: bool,
    /// Start of the HyStart round, us clock.
    round_start: u32,
    /// The round ends when snd_una passes this segment.
    end_seq: u32,
    /// Last ACK of the current ACK train, us clock.
    last_ack: u32,
    /// Minimum RTT of the round's first samples, us.
    curr_rtt: u32,

    /// Jiffy of the last transmission before the pipe drained, standing in for
    /// `tp->lsndtime` (see `pkts_acked`).
    lsndtime: u32,
}

impl CubicRule {
    /// `cubictcp_register` (constants) and `cubictcp_init`.
    pub fn new(cfg: &CubicConfig, init: &CcInit) -> Self {
        let beta = if crate::mutant::is(crate::mutant::Mutant::CubicBetaHalf) {
            BETA_SCALE / 2
        } else {
            cfg.beta_int()
        };
        let bic_scale = cfg.bic_scale();
        let cube_rtt_scale = bic_scale * 10;
        let mut r = CubicRule {
            beta,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64,
            fast_convergence: cfg.fast_convergence,
            tcp_friendliness: cfg.tcp_friendliness,
            hystart: cfg.hystart && !cfg.hystart_plus_plus,
            detect_train: cfg.hystart_detect != HystartDetect::Delay,
            detect_delay: cfg.hystart_detect != HystartDetect::AckTrain,
            low_window: cfg.hystart_low_window,
            ack_delta_us: cfg.hystart_ack_delta.us().min(i32::MAX as u64) as i32,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
            lsndtime: 0,
        };
        if r.hystart {
            // The connection has sent nothing yet: snd_nxt is segment 0.
            r.hystart_reset(init.now, 0);
        }
        r
    }

    /// `bictcp_reset`: forget the curve, Wmax, delay_min and HyStart's verdict.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.origin = 0;
        self.k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset`: start a new HyStart round.
    fn hystart_reset(&mut self, now: Time, snd_nxt: u32) {
        self.round_start = clock_us(now);
        self.last_ack = self.round_start;
        self.end_seq = snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: set `cnt` from the cubic curve and the Reno estimate.
    fn update(&mut self, now: Time, cwnd: u32, acked: u32) {
        let jif = jiffies(now);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        // Unchanged cwnd: recompute at most every HZ/32 jiffies.
        if self.last_cwnd == cwnd && (jif.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }

        // The curve is evaluated at most once per jiffy; an epoch reset
        // (epoch_start = 0) forces it.
        if !(self.epoch_start != 0 && jif == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = jif;

            if self.epoch_start == 0 {
                self.epoch_start = jif;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin = cwnd;
                } else {
                    // K = cbrt((Wmax - cwnd) / C) in 1/1024 s.
                    let diff = (self.last_max_cwnd - cwnd) as u64;
                    self.k = cubic_root(self.cube_factor.wrapping_mul(diff));
                    self.origin = self.last_max_cwnd;
                }
            }

            // t = time since the epoch began plus one delay_min, in 1/1024 s.
            let elapsed = jif.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
            let mut t = elapsed.wrapping_add(usecs_to_jiffies(self.delay_min) as u64);
            t <<= BICTCP_HZ;
            t /= HZ as u64;

            let k = self.k as u64;
            let offs = k.abs_diff(t);
            // C * |t - K|^3 in packets (the 2^-10 of C and 2^-30 of time^3).
            let delta = ((self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let target = if t < k {
                self.origin.wrapping_sub(delta)
            } else {
                self.origin.wrapping_add(delta)
            };

            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                // Hardly any growth at or above the target.
                cwnd.wrapping_mul(100)
            };

            // Before the first loss, grow at least 5% per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }

        // TCP friendliness: never grow slower than the Reno estimate.
        if self.tcp_friendliness {
            // Linux would loop forever on 0; only reachable with extreme beta.
            let per_pkt = ((cwnd.wrapping_mul(self.beta_scale)) >> 3).max(1);
            if self.ack_cnt > per_pkt {
                let n = (self.ack_cnt - 1) / per_pkt;
                self.ack_cnt -= n * per_pkt;
                self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }

        // At most one packet per two ACKed (1.5x per RTT).
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_ack_delay`: TSO/GRO cushion, min(1 ms, 4 GSO frames at the pacing rate), us.
    fn ack_delay_us(pacing_rate: Rate) -> u32 {
        let rate = pacing_rate.bytes_per_sec();
        if rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * USEC_PER_SEC / rate).min(USEC_PER_MSEC) as u32
    }

    /// `hystart_update`: look for the slow-start exit point.
    fn hystart_update(
        &mut self,
        now: Time,
        w: &mut Window,
        conn: &Conn,
        pacing_rate: Rate,
        delay: u32,
    ) {
        if after(conn.snd_una, self.end_seq) {
            self.hystart_reset(now, conn.snd_nxt);
        }
        if w.cwnd < self.low_window {
            return;
        }

        if self.detect_train {
            let now_us = clock_us(now);
            // ACKs closely spaced: the train goes on.
            if (now_us.wrapping_sub(self.last_ack) as i32) <= self.ack_delta_us {
                self.last_ack = now_us;
                let mut threshold = self.delay_min.wrapping_add(Self::ack_delay_us(pacing_rate));
                // Unpaced, a train longer than half delay_min already fills the pipe.
                if !conn.paced {
                    threshold >>= 1;
                }
                if now_us.wrapping_sub(self.round_start) > threshold {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }

        if self.detect_delay {
            self.curr_rtt = self.curr_rtt.min(delay);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh =
                    (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt > self.delay_min.wrapping_add(thresh) {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }
    }
}

impl WindowRule for CubicRule {
    /// `cubictcp_recalc_ssthresh`: end the epoch, remember Wmax (lowered
    /// further by fast convergence when the window shrank), cut to beta.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        self.epoch_start = 0;
        let cwnd = w.cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            ((cwnd as u64 * (BETA_SCALE + self.beta) as u64) / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        (((cwnd as u64 * self.beta as u64) / BETA_SCALE as u64) as u32).max(2)
    }

    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        let Some(acked) = w.limited_slow_start(acked, conn) else {
            return;
        };
        self.update(now, w.cwnd, acked);
        w.cong_avoid_ai(self.cnt, acked);
    }

    /// `cubictcp_acked`: delay_min and HyStart from the ACK's RTT sample.
    fn pkts_acked(
        &mut self,
        now: Time,
        w: &mut Window,
        rs: &RateSample,
        conn: &Conn,
        pacing_rate: Rate,
    ) {
        // Not in Linux: `cubictcp_cwnd_event` reads `tp->lsndtime`, which the
        // CC interface does not carry. The pipe drains only on an ACK, and the
        // last packet sent is then the most recently sent one this ACK covers,
        // sent `rtt_us` ago.
        if conn.in_flight == 0 {
            let sent = if rs.rtt_us >= 0 {
                now - Dur::from_us(rs.rtt_us as u64)
            } else {
                now
            };
            self.lsndtime = jiffies(sent);
        }

        if rs.rtt_us < 0 {
            return;
        }
        // Samples within a second of an epoch start (just after recovery) are ignored.
        if self.epoch_start != 0 && (jiffies(now).wrapping_sub(self.epoch_start) as i32) < HZ as i32
        {
            return;
        }
        let delay = (rs.rtt_us as u32).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && w.in_slow_start() && self.hystart {
            self.hystart_update(now, w, conn, pacing_rate, delay);
        }
    }

    /// `cubictcp_state`: an RTO forgets everything, HyStart included.
    fn set_state(&mut self, now: Time, _from: CaState, to: CaState, _w: &mut Window, conn: &Conn) {
        if to == CaState::Loss {
            self.reset();
            self.hystart_reset(now, conn.snd_nxt);
        }
    }

    /// `cubictcp_cwnd_event`: after idle, shift the epoch by the idle time
    /// (not past now) so the curve does not jump.
    fn cwnd_event(&mut self, now: Time, ev: WindowEvent, _w: &mut Window, _conn: &Conn) {
        if ev != WindowEvent::Core(CcEvent::TxStart) {
            return;
        }
        let jif = jiffies(now);
        let delta = jif.wrapping_sub(self.lsndtime) as i32;
        if self.epoch_start != 0 && delta > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
            if after(self.epoch_start, jif) {
                self.epoch_start = jif;
            }
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("cubic_wmax_pkts", self.last_max_cwnd as f64);
        out.num("cubic_k_ms", self.k as f64 * 1000.0 / 1024.0);
        out.num("cubic_origin_pkts", self.origin as f64);
        out.num(
            "cubic_epoch_start_s",
            if self.epoch_start == 0 {
                f64::NAN
            } else {
                self.epoch_start as f64 / HZ as f64
            },
        );
        out.num(
            "cubic_delay_min_ms",
            if self.delay_min == 0 {
                f64::NAN
            } else {
                self.delay_min as f64 / 1000.0
            },
        );
        out.num("cubic_cnt_pkts", self.cnt as f64);
        out.num("cubic_tcp_cwnd_pkts", self.tcp_cwnd as f64);
        out.num("hystart_found", if self.found { 1.0 } else { 0.0 });
    }
}

/// The registry's entry for `cc = "cubic"` (`cc::Algorithm`).
impl crate::cc::Algorithm for CubicConfig {
    const NAME: &'static str = "cubic";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_cubic.c (with HyStart); RFC 9438";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        if self.hystart_plus_plus {
            let h = crate::cc::hystart_pp::WithHystartPP {
                inner: CubicRule::new(self, init),
                h: Default::default(),
            };
            crate::cc::AnyCc::CubicPP(crate::cc::classic::Classic::new(h, init))
        } else {
            crate::cc::AnyCc::Cubic(crate::cc::classic::Classic::new(
                CubicRule::new(self, init),
                init,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::{Classic, INFINITE_SSTHRESH};
    use crate::cc::{CcConfig, CongestionControl};
    use crate::units::NS_PER_MS;

    const MSS: u32 = 1448;

    /// Feeds a `Classic<CubicRule>` synthetic ACKs: each ACK covers one
    /// packet, the sender is cwnd-limited, snd_nxt stays one cwnd ahead.
    struct Driver {
        cc: Classic<CubicRule>,
        now: Time,
        snd_una: u32,
        delivered: u64,
        paced: bool,
        srtt: Dur,
    }

    impl Driver {
        fn new(cfg: CubicConfig) -> Driver {
            let init = CcInit {
                now: Time::ZERO,
                mss: MSS,
                init_cwnd: 10,
                srtt: None,
                seed: 1,
                ecn_enabled: false,
            };
            Driver {
                cc: Classic::new(CubicRule::new(&cfg, &init), &init),
                now: Time::ZERO,
                snd_una: 0,
                delivered: 0,
                paced: true,
                srtt: Dur::from_ms(100),
            }
        }

        fn rule(&self) -> &CubicRule {
            &self.cc.rule
        }

        fn cwnd(&self) -> u32 {
            self.cc.win.cwnd
        }

        fn conn(&self, in_flight: u32) -> Conn {
            let cwnd = self.cc.win.cwnd;
            Conn {
                mss: MSS,
                init_cwnd: 10,
                in_flight,
                packets_out: in_flight,
                delivered: self.delivered,
                delivered_ce: 0,
                lost: 0,
                delivered_mstamp: self.now,
                srtt: Some(self.srtt),
                min_rtt: Some(self.srtt),
                ca_state: CaState::Open,
                is_cwnd_limited: true,
                max_packets_out: cwnd,
                app_limited: false,
                next_departure: self.now,
                snd_una: self.snd_una,
                snd_nxt: self.snd_una + cwnd,
                ecn_enabled: false,
                paced: self.paced,
                sent_since_state_change: 0,
                data_segs_out: 0,
                highest_sack: 0,
            }
        }

        /// One ACK of one packet at `t` carrying the RTT sample `rtt`.
        fn ack_at(&mut self, t: Time, rtt: Dur) {
            self.now = t;
            self.snd_una += 1;
            self.delivered += 1;
            let rs = RateSample {
                delivered: 1,
                interval_us: rtt.us() as i64,
                rtt_us: rtt.us() as i64,
                acked_sacked: 1,
                snd_una_advanced: true,
                prior_in_flight: self.cwnd(),
                ..RateSample::default()
            };
            let conn = self.conn(self.cwnd());
            self.cc.on_ack(t, &rs, &conn);
        }

        /// One round trip: a cwnd of ACKs spread evenly over `rtt`.
        fn round(&mut self, rtt: Dur) {
            let n = self.cwnd() as u64;
            let start = self.now;
            for i in 1..=n {
                self.ack_at(start + Dur(rtt.ns() * i / n), rtt);
            }
        }

        /// A fast-retransmit episode: Open -> Recovery -> Open, which leaves
        /// cwnd at the new ssthresh.
        fn loss(&mut self) {
            let conn = self.conn(self.cwnd());
            self.cc
                .on_state_change(self.now, CaState::Open, CaState::Recovery, &conn);
            self.cc
                .on_state_change(self.now, CaState::Recovery, CaState::Open, &conn);
        }

        /// Slow start to roughly `cwnd` packets with RTT `rtt`, then pin cwnd there.
        fn warm_up(&mut self, cwnd: u32, rtt: Dur) {
            while self.cwnd() < cwnd {
                self.round(rtt);
            }
            self.cc.win.cwnd = cwnd;
        }
    }

    fn no_hystart() -> CubicConfig {
        CubicConfig {
            hystart: false,
            ..CubicConfig::default()
        }
    }

    /// C as Linux applies it: cube_rtt_scale / 1024.
    const C_LINUX: f64 = 410.0 / 1024.0;

    #[test]
    fn integer_cube_root_is_within_linux_documented_error() {
        // Below 64 the table answers alone: within one of the true root.
        for a in 0..64u64 {
            let r = cubic_root(a) as f64;
            assert!((r - (a as f64).cbrt()).abs() < 1.0, "a = {a}: {r}");
        }
        // Linux documents an average error of about 0.195%. Over the range K
        // is computed in (cube_factor x (Wmax - cwnd) >= 2^31), and well below
        // it, the average stays under that and no value is off by 0.5%.
        let (mut sum, mut n) = (0.0, 0);
        for bits in 25..=64u32 {
            let lo = 1u64 << (bits - 1);
            for i in 0..500u64 {
                let a = lo + ((lo as u128 * i as u128 / 500) as u64);
                let exact = (a as f64).cbrt();
                let rel = (cubic_root(a) as f64 - exact).abs() / exact;
                assert!(rel < 0.005, "a = {a}: {} vs {exact}", cubic_root(a));
                sum += rel;
                n += 1;
            }
        }
        assert!(
            sum / n as f64 <= 0.00195,
            "average error {}",
            sum / n as f64
        );
        // Spot values of Linux's function (checked against a build of the
        // kernel's cubic_root): its truncations, not the exact roots.
        assert_eq!(cubic_root(u64::MAX), 2_641_850); // exact 2642245.9
        assert_eq!(cubic_root(1 << 63), 2_098_142); // exact 2097152
        assert_eq!(cubic_root(30 * ((1 << 40) / 410)), 4316); // K for Wmax - cwnd = 30
        assert_eq!(cubic_root(1000), 10);
        assert_eq!(cubic_root(315), 6); // exact 6.8
    }

    #[test]
    fn k_matches_cbrt_of_wmax_gap_over_c() {
        let init = CcInit {
            now: Time::ZERO,
            mss: MSS,
            init_cwnd: 10,
            srtt: None,
            seed: 0,
            ecn_enabled: false,
        };
        for (wmax, cwnd) in [
            (100u32, 70u32),
            (1000, 717),
            (20, 14),
            (10_000, 7002),
            (50, 49),
        ] {
            let mut r = CubicRule::new(&CubicConfig::default(), &init);
            r.last_max_cwnd = wmax;
            r.update(Time(5 * NS_PER_MS), cwnd, 1);
            let k_s = r.k as f64 / 1024.0;
            let want = ((wmax - cwnd) as f64 / 0.4).cbrt();
            assert!(
                (k_s - want).abs() / want < 0.01,
                "Wmax {wmax} cwnd {cwnd}: K = {k_s} s, cbrt = {want} s"
            );
            assert_eq!(r.origin, wmax);
        }
    }

    #[test]
    fn ssthresh_after_loss_is_seven_tenths_of_cwnd() {
        let mut d = Driver::new(no_hystart());
        d.warm_up(100, Dur::from_ms(100));
        d.loss();
        // 100 x 717 / 1024 = 70.02, truncated.
        assert_eq!(d.cc.win.ssthresh, 70);
        assert_eq!(d.cwnd(), 70);
        assert_eq!(d.rule().last_max_cwnd, 100);
        assert_eq!(d.rule().epoch_start, 0);
    }

    #[test]
    fn window_follows_the_cubic_curve_after_a_loss() {
        let rtt = Dur::from_ms(100);
        let mut d = Driver::new(no_hystart());
        d.warm_up(100, rtt);
        d.loss();
        assert_eq!(d.cwnd(), 70);
        d.round(rtt);
        let epoch = d.rule().epoch_start;
        let t0 = Time(epoch as u64 * NS_PER_MS);
        let k = ((100.0 - 70.0) / C_LINUX).cbrt();
        let w = |t: f64| C_LINUX * (t - k).powi(3) + 100.0;
        let mut checked = 0;
        while d.now < t0 + Dur::from_secs(7) {
            d.round(rtt);
            // Linux evaluates the curve one delay_min ahead and cnt spreads the
            // step over the next round trip, so cwnd tracks W at the present.
            let t = d.now.since(t0).secs_f64();
            if t >= 1.0 && (t.fract() < 0.1) {
                let want = w(t);
                let got = d.cwnd() as f64;
                assert!(
                    (got - want).abs() <= 2.0,
                    "t = {t:.2} s: cwnd {got}, W(t) = {want:.1}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 5, "only {checked} points checked");
        // Past K the window has passed Wmax again (convex region).
        assert!(d.cwnd() > 100);
    }

    #[test]
    fn fast_convergence_lowers_wmax_when_the_window_shrank() {
        for (fast, want) in [(true, 68), (false, 80)] {
            let mut d = Driver::new(CubicConfig {
                fast_convergence: fast,
                ..no_hystart()
            });
            d.warm_up(100, Dur::from_ms(100));
            d.loss();
            assert_eq!(d.rule().last_max_cwnd, 100);
            // Second loss below the previous Wmax: 80 x (1024 + 717) / 2048 = 68.
            d.cc.win.cwnd = 80;
            d.loss();
            assert_eq!(d.rule().last_max_cwnd, want, "fast_convergence {fast}");
            assert_eq!(d.cc.win.ssthresh, 56);
        }
    }

    #[test]
    fn growth_before_the_first_loss_is_capped_at_one_per_twenty_acks() {
        // No Wmax yet: the curve's origin is cwnd itself, so cnt would be huge;
        // Linux caps it at 20 (5% per RTT).
        let mut d = Driver::new(no_hystart());
        d.warm_up(100, Dur::from_ms(10));
        d.cc.win.ssthresh = 100;
        d.round(Dur::from_ms(10));
        assert_eq!(d.rule().cnt, 20);
        assert_eq!(d.cwnd(), 105);
    }

    #[test]
    fn tcp_friendly_region_grows_at_least_like_the_reno_estimate() {
        // Small window, short RTT: K = cbrt(6/0.4) = 2.5 s = 250 RTTs, so the
        // cubic curve is nearly flat and the Reno estimate sets the pace.
        let rtt = Dur::from_ms(10);
        let mut grown = [0u32; 2];
        for (i, friendly) in [true, false].into_iter().enumerate() {
            let mut d = Driver::new(CubicConfig {
                tcp_friendliness: friendly,
                ..no_hystart()
            });
            d.warm_up(20, rtt);
            d.loss();
            assert_eq!(d.cwnd(), 14);
            for _ in 0..100 {
                d.round(rtt);
            }
            grown[i] = d.cwnd() - 14;
            if friendly {
                // cwnd keeps up with the Reno estimate (within the packet
                // that cnt = cwnd / (tcp_cwnd - cwnd) leaves) ...
                assert!(d.cwnd() + 1 >= d.rule().tcp_cwnd);
            }
        }
        // ... which grows like AIMD with the same beta: 3 (1 - beta) / (1 + beta)
        // = 0.53 packets per RTT (Linux: one per cwnd x 15/8 ACKs).
        let beta = 717.0 / 1024.0;
        let reno = 100.0 * 3.0 * (1.0 - beta) / (1.0 + beta);
        assert!(
            grown[0] as f64 >= 0.95 * reno,
            "friendly growth {} < Reno estimate {reno:.1}",
            grown[0]
        );
        // The cubic curve alone is far slower here.
        assert!(
            grown[1] * 5 < grown[0],
            "without friendliness: {}",
            grown[1]
        );
    }

    #[test]
    fn hystart_delay_detection_exits_when_rtt_rises_past_threshold() {
        // Base RTT 40 ms: threshold = 40 + clamp(40/8, 4, 16) = 45 ms.
        // ACKs 2.5 ms apart never form an ACK train.
        let base = Dur::from_ms(40);
        for (rise, exits) in [(Dur::from_ms(8), true), (Dur::from_ms(4), false)] {
            let mut d = Driver::new(CubicConfig::default());
            let gap = Dur::from_us(2500);
            let rise_at = 64;
            let mut exit = None;
            let mut t = Time::ZERO;
            for _ in 0..1000 {
                t += gap;
                let rtt = if d.cwnd() >= rise_at {
                    base + rise
                } else {
                    base
                };
                let before = d.cc.win.ssthresh;
                d.ack_at(t, rtt);
                if before == INFINITE_SSTHRESH && d.cc.win.ssthresh != INFINITE_SSTHRESH {
                    exit = Some((d.cwnd(), d.rule().sample_cnt));
                    break;
                }
            }
            assert_eq!(d.rule().delay_min, 40_000);
            if exits {
                let (cwnd, samples) = exit.expect("HyStart should have exited slow start");
                assert!(d.rule().found);
                assert_eq!(d.cc.win.ssthresh, cwnd);
                assert_eq!(samples, HYSTART_MIN_SAMPLES);
                // Within one round (cwnd doubles at most) of the rise.
                assert!(
                    (rise_at..=2 * rise_at + 9).contains(&cwnd),
                    "exit at cwnd {cwnd}"
                );
            } else {
                assert_eq!(exit, None, "a 4 ms rise is below the 5 ms threshold");
                assert!(d.cwnd() > 900);
            }
        }
    }

    #[test]
    fn hystart_ack_train_exits_when_the_train_spans_delay_min() {
        // A continuous ACK stream 0.2 ms apart with a 20 ms RTT. Paced, the
        // threshold is delay_min + ack_delay = 20 ms + 1 ms (the 4-GSO-frame
        // cushion is capped at 1 ms at these rates); unpaced, half of that.
        for (paced, threshold_us) in [(true, 21_000u32), (false, 10_500)] {
            let mut d = Driver::new(CubicConfig {
                hystart_detect: HystartDetect::AckTrain,
                ..CubicConfig::default()
            });
            d.paced = paced;
            d.srtt = Dur::from_ms(20);
            let gap = Dur::from_us(200);
            let mut t = Time::ZERO;
            let mut exit = None;
            for _ in 0..5000 {
                t += gap;
                d.ack_at(t, Dur::from_ms(20));
                if d.rule().found {
                    exit = Some(clock_us(t) - d.rule().round_start);
                    break;
                }
            }
            let span = exit.expect("ACK train should end slow start");
            // The first ACK of the train that is more than threshold past the
            // round start.
            assert_eq!(span, (threshold_us / 200 + 1) * 200, "paced {paced}");
            assert_eq!(d.cc.win.ssthresh, d.cwnd());
            assert!(d.cwnd() as u64 > (threshold_us / 200) as u64);
        }
    }

    #[test]
    fn hystart_ack_delay_is_four_gso_frames_at_the_pacing_rate_capped_at_1ms() {
        assert_eq!(CubicRule::ack_delay_us(Rate::INF), 0);
        assert_eq!(CubicRule::ack_delay_us(Rate(0)), 0);
        // 4 x 65536 B at 10 Gbit/s (1.25e9 B/s) = 209 us.
        assert_eq!(CubicRule::ack_delay_us(Rate(10_000_000_000)), 209);
        assert_eq!(CubicRule::ack_delay_us(Rate(100_000_000)), 1000);
    }

    #[test]
    fn hystart_waits_for_the_low_window() {
        // An RTT jump while cwnd < 16 does not end slow start.
        let mut d = Driver::new(CubicConfig {
            hystart_detect: HystartDetect::Delay,
            ..CubicConfig::default()
        });
        let mut t = Time::ZERO;
        for i in 0..5 {
            t += Dur::from_ms(3);
            d.ack_at(t, Dur::from_ms(if i == 0 { 40 } else { 80 }));
        }
        assert!(d.cwnd() < 16);
        assert!(!d.rule().found);
        assert_eq!(d.cc.win.ssthresh, INFINITE_SSTHRESH);
    }

    #[test]
    fn rto_forgets_wmax_and_restarts_hystart() {
        let mut d = Driver::new(CubicConfig::default());
        d.warm_up(100, Dur::from_ms(100));
        d.cc.win.ssthresh = 100;
        d.loss();
        d.round(Dur::from_ms(100));
        assert_eq!(d.rule().last_max_cwnd, 100);
        assert!(d.rule().delay_min > 0);
        let cwnd = d.cwnd();
        let conn = d.conn(0);
        d.cc.on_state_change(d.now, CaState::Open, CaState::Loss, &conn);
        let r = d.rule();
        assert_eq!(
            (r.last_max_cwnd, r.epoch_start, r.delay_min, r.k),
            (0, 0, 0, 0)
        );
        assert!(!r.found);
        assert_eq!(r.end_seq, conn.snd_nxt);
        assert_eq!(r.round_start, clock_us(d.now));
        assert_eq!(r.curr_rtt, u32::MAX);
        // ssthresh was cut before the reset; cwnd restarts from in_flight + 1.
        assert_eq!(d.cc.win.ssthresh, cwnd * 717 / 1024);
        assert_eq!(d.cwnd(), 1);
    }

    #[test]
    fn idle_restart_shifts_the_epoch_by_the_idle_time() {
        let rtt = Dur::from_ms(50);
        let mut d = Driver::new(no_hystart());
        d.warm_up(100, rtt);
        d.loss();
        d.round(rtt);
        let epoch = d.rule().epoch_start;
        assert_ne!(epoch, 0);
        // The last ACK drains the pipe: its packet was sent one RTT earlier.
        d.now += Dur::from_ms(1);
        d.snd_una += 1;
        let rs = RateSample {
            rtt_us: rtt.us() as i64,
            acked_sacked: 1,
            snd_una_advanced: true,
            ..RateSample::default()
        };
        let conn = d.conn(0);
        d.cc.on_ack(d.now, &rs, &conn);
        let last_send = jiffies(d.now - rtt);
        // Idle for 2 s, then a new transmission.
        d.now += Dur::from_secs(2);
        d.cc.on_event(d.now, CcEvent::TxStart, &d.conn(0));
        let idle = jiffies(d.now) - last_send;
        assert_eq!(d.rule().epoch_start, epoch + idle);
        assert!(!after(d.rule().epoch_start, jiffies(d.now)));
        // Without an epoch nothing moves.
        d.loss();
        d.cc.on_event(d.now + Dur::from_secs(1), CcEvent::TxStart, &d.conn(0));
        assert_eq!(d.rule().epoch_start, 0);
    }

    #[test]
    fn delay_samples_right_after_an_epoch_start_are_ignored() {
        let rtt = Dur::from_ms(50);
        let mut d = Driver::new(no_hystart());
        d.warm_up(40, rtt);
        d.loss();
        d.round(rtt);
        assert_eq!(d.rule().delay_min, 50_000);
        // A lower RTT within 1 s of the epoch start is not taken ...
        d.ack_at(d.now + Dur::from_ms(1), Dur::from_ms(30));
        assert_eq!(d.rule().delay_min, 50_000);
        // ... one after that is.
        let t = Time(d.rule().epoch_start as u64 * NS_PER_MS) + Dur::from_secs(1);
        d.ack_at(t, Dur::from_ms(30));
        assert_eq!(d.rule().delay_min, 30_000);
    }

    #[test]
    fn config_defaults_are_linux_module_defaults() {
        let cfg: CubicConfig = crate::cc::parse_params(&serde_json::Value::Null).unwrap();
        assert_eq!(cfg, CubicConfig::default());
        let init = CcInit {
            now: Time::ZERO,
            mss: MSS,
            init_cwnd: 10,
            srtt: None,
            seed: 0,
            ecn_enabled: false,
        };
        let r = CubicRule::new(&cfg, &init);
        assert_eq!(r.beta, 717);
        assert_eq!(r.cube_rtt_scale, 410);
        assert_eq!(r.beta_scale, 15);
        assert_eq!(r.cube_factor, (1u64 << 40) / 410);
        assert_eq!(r.ack_delta_us, 2000);
        assert_eq!(r.low_window, 16);
        let json = CcConfig::parse("cubic", &serde_json::json!({}))
            .unwrap()
            .params_json();
        assert_eq!(json["hystart_ack_delta"], "2ms");
        assert_eq!(json["hystart_detect"], "both");
        let back = CcConfig::parse("cubic", &json).unwrap();
        assert_eq!(back, CcConfig::Cubic(cfg));
    }

    #[test]
    fn config_errors_name_the_parameter_and_range() {
        let err = |v: serde_json::Value| CcConfig::parse("cubic", &v).unwrap_err();
        for bad in [1.0, 0.0, -0.3, 1.5] {
            let e = err(serde_json::json!({ "beta": bad }));
            assert!(e.contains("beta") && e.contains("0 < beta < 1"), "{e}");
        }
        for bad in [0.0, -1.0, 0.001, 1e9] {
            let e = err(serde_json::json!({ "c": bad }));
            assert!(e.starts_with("c = ") && e.contains("0 < c <= 100"), "{e}");
        }
        let e = err(serde_json::json!({ "hystart_detect": "sometimes" }));
        assert!(
            e.contains("hystart_detect") && e.contains("ack_train"),
            "{e}"
        );
        let e = err(serde_json::json!({ "hystart_ack_delta": "2 parsecs" }));
        assert!(
            e.contains("hystart_ack_delta") && e.contains("duration"),
            "{e}"
        );
        let e = err(serde_json::json!({ "hystart_ack_delta": "2s" }));
        assert!(
            e.contains("hystart_ack_delta") && e.contains("0s to 1s"),
            "{e}"
        );
        let e = err(serde_json::json!({ "hystart_low_window": -1 }));
        assert!(e.contains("hystart_low_window"), "{e}");
        let e = err(serde_json::json!({ "bic_scale": 41 }));
        assert!(e.contains("bic_scale"), "{e}");
        // Values that round to Linux's integers are accepted.
        let ok = CcConfig::parse("cubic", &serde_json::json!({ "beta": 0.7, "c": 0.4 }));
        assert!(ok.is_ok());
    }

    #[test]
    fn state_columns_carry_units() {
        let mut d = Driver::new(no_hystart());
        d.warm_up(100, Dur::from_ms(100));
        d.loss();
        d.round(Dur::from_ms(100));
        let mut out = CcState::default();
        d.cc.write_state(&mut out);
        let get = |name: &str| {
            out.entries
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| match v {
                    crate::cc::StateValue::Num(x) => *x,
                    crate::cc::StateValue::Label(_) => f64::NAN,
                })
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        assert_eq!(get("cubic_wmax_pkts"), 100.0);
        assert_eq!(get("cubic_origin_pkts"), 100.0);
        assert!((get("cubic_k_ms") - 4217.0).abs() < 20.0);
        assert_eq!(get("cubic_delay_min_ms"), 100.0);
        assert_eq!(get("hystart_found"), 0.0);
        assert!(get("cubic_epoch_start_s") > 0.0);
        assert_eq!(d.cc.phase(), "CONG_AVOID");
        let fresh = Driver::new(CubicConfig::default());
        let mut out = CcState::default();
        fresh.cc.write_state(&mut out);
        assert!(out.entries.iter().any(|(n, v)| *n == "cubic_epoch_start_s"
            && matches!(v, crate::cc::StateValue::Num(x) if x.is_nan())));
    }
}
