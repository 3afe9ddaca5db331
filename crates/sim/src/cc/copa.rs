//! Copa (Arun and Balakrishnan, NSDI 2018), with the constants of the
//! authors' implementation (genericCC, "auto:0.5" with slow start): a
//! target rate 1 / (delta x d_q) from the queueing delay d_q (RTTstanding
//! less RTTmin; RTTstanding: the least RTT over the last srtt/2; RTTmin:
//! over the last 10 s); each ACKed packet moves cwnd by v / (delta x cwnd)
//! toward it, the velocity v doubling once the direction has held for three
//! windows (the paper's rule; genericCC doubles at once) and capped at
//! delta x cwnd; slow start (+1 per packet) until the rate passes the
//! target; pacing at 2 cwnd / RTTstanding. Competitive mode: when the
//! queue has not been nearly empty (d_q under 0.1 of the last 4 RTTs' RTT
//! range) for 5 RTTs, 1/delta grows by one per RTT and halves on a loss (at
//! most once per RTT, at least 2); back to delta = 0.5 once the queue
//! empties. A retransmission timeout restarts slow start from the initial
//! window (genericCC's 2 s reset). cwnd in 2^-20 packets, integers only.

use super::{AckOutcome, CaState, CcInit, CcParams, CcState, CongestionControl, Conn, RateSample};
use crate::units::{Dur, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const FRAC: i64 = 1 << 20;
const MIN_CWND: i64 = 2;
const RTT_MIN_WINDOW: Dur = Dur::from_secs(10);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CopaConfig {
    /// 1/delta in default mode (packets of standing queue; paper: delta = 0.5).
    pub inv_delta: u32,
    /// Switch to competitive mode when buffer-filling flows share the queue.
    pub competitive: bool,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig {
            inv_delta: 2,
            competitive: true,
        }
    }
}

impl CcParams for CopaConfig {
    fn validate(&self) -> Result<(), String> {
        if !(1..=1000).contains(&self.inv_delta) {
            return Err(format!("inv_delta = {}: allowed 1 to 1000", self.inv_delta));
        }
        Ok(())
    }
}

/// A sliding-window minimum (or maximum) of RTT samples.
#[derive(Default)]
struct RttWindow {
    q: VecDeque<(Time, u64)>,
    max: bool,
}

impl RttWindow {
    fn push(&mut self, t: Time, v: u64) {
        while let Some(&(_, b)) = self.q.back() {
            if (!self.max && b >= v) || (self.max && b <= v) {
                self.q.pop_back();
            } else {
                break;
            }
        }
        self.q.push_back((t, v));
    }
    /// The extreme over (now - span, now], keeping at least the newest sample.
    fn get(&mut self, now: Time, span: Dur) -> Option<u64> {
        while self.q.len() > 1 && now.since(self.q[0].0) > span {
            self.q.pop_front();
        }
        self.q.front().map(|&(_, v)| v)
    }
}

pub struct Copa {
    mss: u32,
    init_cwnd: i64,
    default_inv_delta: i64,
    competitive_enabled: bool,
    cwnd: i64,
    inv_delta: i64,
    competitive: bool,
    slow_start: bool,
    v: i64,
    /// RttWindow tracking: the window ends when snd_una passes `win_end`.
    win_end: u32,
    win_start_cwnd: i64,
    last_dir_up: Option<bool>,
    same_dir: u32,
    rtt_min: RttWindow,
    rtt_standing: RttWindow,
    recent_min: RttWindow,
    recent_max: RttWindow,
    last_nearly_empty: Time,
    last_delta_up: Time,
    last_loss_cut: Time,
    started: Time,
    pacing: Rate,
    state: CaState,
}

impl Copa {
    pub fn new(cfg: &CopaConfig, init: &CcInit) -> Self {
        Copa {
            mss: init.mss,
            init_cwnd: init.init_cwnd as i64,
            default_inv_delta: cfg.inv_delta as i64,
            competitive_enabled: cfg.competitive,
            cwnd: init.init_cwnd as i64 * FRAC,
            inv_delta: cfg.inv_delta as i64,
            competitive: false,
            slow_start: true,
            v: 1,
            win_end: 0,
            win_start_cwnd: init.init_cwnd as i64 * FRAC,
            last_dir_up: None,
            same_dir: 0,
            rtt_min: RttWindow::default(),
            rtt_standing: RttWindow::default(),
            recent_min: RttWindow::default(),
            recent_max: RttWindow {
                q: VecDeque::new(),
                max: true,
            },
            last_nearly_empty: init.now,
            last_delta_up: init.now,
            last_loss_cut: init.now,
            started: init.now,
            pacing: Rate::INF,
            state: CaState::Open,
        }
    }

    fn pkts(&self) -> i64 {
        (self.cwnd / FRAC).max(MIN_CWND)
    }
}

impl CongestionControl for Copa {
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        let srtt = conn.srtt.unwrap_or(Dur::from_ms(100));
        if rs.rtt_us >= 0 {
            let rtt = rs.rtt_us.max(1) as u64;
            for w in [
                &mut self.rtt_min,
                &mut self.rtt_standing,
                &mut self.recent_min,
                &mut self.recent_max,
            ] {
                w.push(now, rtt);
            }
        }
        let span_min = RTT_MIN_WINDOW.min(now.since(self.started).max(Dur::from_us(1)));
        let (Some(rtt_min), Some(standing)) = (
            self.rtt_min.get(now, span_min),
            self.rtt_standing.get(now, Dur(srtt.0 / 2)),
        ) else {
            return AckOutcome::default();
        };
        let d_q = standing.saturating_sub(rtt_min);

        // Competitive-mode detection: nearly empty within the last 5 RTTs.
        let four = Dur(4 * srtt.0);
        let (lo, hi) = (
            self.recent_min.get(now, four).unwrap_or(rtt_min),
            self.recent_max.get(now, four).unwrap_or(rtt_min),
        );
        if lo.saturating_sub(rtt_min) * 10 <= hi.saturating_sub(rtt_min) {
            self.last_nearly_empty = now;
        }
        let competing =
            self.competitive_enabled && now.since(self.last_nearly_empty) > Dur(5 * srtt.0);
        if competing && !self.competitive {
            self.competitive = true;
        } else if !competing && self.competitive {
            self.competitive = false;
            self.inv_delta = self.default_inv_delta;
        }
        if self.competitive && now.since(self.last_delta_up) >= srtt {
            self.inv_delta += 1;
            self.last_delta_up = now;
        }

        let acked = rs.acked_sacked as i64;
        // The target window: standing RTT x target rate = (1/delta) RTTstanding / d_q.
        let below_target = d_q == 0
            || (self.cwnd as i128 * d_q as i128)
                < (self.inv_delta as i128 * standing as i128 * FRAC as i128);
        if self.slow_start {
            if below_target {
                self.cwnd += acked * FRAC;
            } else {
                self.slow_start = false;
            }
        }
        if !self.slow_start && acked > 0 {
            let step = self.v * self.inv_delta * acked * FRAC / self.pkts();
            self.cwnd = if below_target {
                self.cwnd + step
            } else {
                (self.cwnd - step).max(MIN_CWND * FRAC)
            };
            // v <= delta x cwnd.
            if self.v * self.inv_delta > self.pkts() {
                self.v = (self.v / 2).max(1);
            }
        }
        // Once per window: the direction, and the velocity.
        if conn.snd_una > self.win_end {
            if !self.slow_start {
                let up = self.cwnd > self.win_start_cwnd;
                if self.last_dir_up == Some(up) {
                    self.same_dir += 1;
                    if self.same_dir >= 3 {
                        self.v *= 2;
                    }
                } else {
                    self.v = 1;
                    self.same_dir = 0;
                }
                self.last_dir_up = Some(up);
            }
            self.win_end = conn.snd_nxt;
            self.win_start_cwnd = self.cwnd;
        }
        // Pacing at twice cwnd per standing RTT.
        let bps = (2 * self.pkts() as u128 * self.mss as u128 * 1_000_000 / standing.max(1) as u128)
            .min(u64::MAX as u128 / 8) as u64;
        self.pacing = Rate::from_bytes_per_sec(bps);
        AckOutcome::default()
    }

    fn on_state_change(&mut self, now: Time, from: CaState, to: CaState, conn: &Conn) {
        match to {
            // A loss: in competitive mode 1/delta halves, at most once per RTT.
            CaState::Recovery if from < CaState::Recovery => {
                let srtt = conn.srtt.unwrap_or(Dur::from_ms(100));
                if self.competitive && now.since(self.last_loss_cut) >= srtt {
                    self.inv_delta = (self.inv_delta / 2).max(2);
                    self.last_loss_cut = now;
                }
            }
            // A timeout starts over (genericCC's reset).
            CaState::Loss if from != CaState::Loss => {
                self.cwnd = self.init_cwnd * FRAC;
                self.slow_start = true;
                self.v = 1;
                self.same_dir = 0;
                self.last_dir_up = None;
            }
            _ => {}
        }
        self.state = to;
    }

    fn cwnd(&self) -> u32 {
        self.pkts().min(u32::MAX as i64) as u32
    }

    fn pacing_rate(&self) -> Rate {
        self.pacing
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    fn phase(&self) -> &'static str {
        match (self.slow_start, self.competitive) {
            (true, _) => "SLOW_START",
            (false, false) => "DEFAULT",
            (false, true) => "COMPETITIVE",
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num("copa_velocity", self.v as f64);
        out.num("copa_inv_delta", self.inv_delta as f64);
        out.num("copa_cwnd_pkts", self.cwnd as f64 / FRAC as f64);
    }
}

/// The registry's entry for `cc = "copa"` (`cc::Algorithm`).
impl crate::cc::Algorithm for CopaConfig {
    const NAME: &'static str = "copa";
    const REFERENCE: &'static str =
        "Copa: Arun and Balakrishnan, NSDI 2018, with genericCC's constants (no kernel module)";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Copa(Copa::new(self, init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, init};

    /// A Copa past slow start, with RTTmin 20 ms and a standing RTT of
    /// `standing_us` from the ACK stream.
    fn copa_at(cwnd: i64, standing_us: i64) -> (Copa, Conn) {
        let mut c = Copa::new(&CopaConfig::default(), &init(Time::ZERO, None));
        c.slow_start = false;
        c.cwnd = cwnd * FRAC;
        let mut k = conn(cwnd as u32);
        k.srtt = Some(Dur::from_ms(20));
        // RTTmin's sample leaves the standing window (srtt/2 = 10 ms) later.
        c.on_ack(Time::ZERO + Dur::from_ms(1), &ack(0, 20_000), &k);
        c.on_ack(Time::ZERO + Dur::from_ms(15), &ack(0, standing_us), &k);
        c.on_ack(Time::ZERO + Dur::from_ms(16), &ack(0, standing_us), &k);
        (c, k)
    }

    #[test]
    fn the_window_moves_toward_one_over_delta_queued_packets() {
        // d_q = 2 ms, standing 22 ms: target window 2 x 22 / 2 = 22 packets.
        let (mut c, k) = copa_at(10, 22_000);
        let before = c.cwnd;
        c.on_ack(Time::ZERO + Dur::from_ms(17), &ack(1, 22_000), &k);
        // Below target: + v / (delta cwnd) = 1 x 2 / 10 packet.
        assert_eq!(c.cwnd - before, 2 * FRAC / 10);
        let (mut c, k) = copa_at(40, 22_000);
        let before = c.cwnd;
        c.on_ack(Time::ZERO + Dur::from_ms(17), &ack(1, 22_000), &k);
        assert_eq!(before - c.cwnd, 2 * FRAC / 40);
    }

    #[test]
    fn velocity_doubles_after_three_windows_in_one_direction_and_resets_on_a_turn() {
        let (mut c, mut k) = copa_at(10, 22_000);
        let mut t = Time::ZERO + Dur::from_ms(17);
        let window = |c: &mut Copa, k: &mut Conn, t: &mut Time, rtt: i64| {
            k.snd_una = c.win_end + 1;
            k.snd_nxt = k.snd_una + 10;
            *t += Dur::from_ms(1);
            c.on_ack(*t, &ack(1, rtt), k);
        };
        // Growing (below target) window after window.
        let mut vs = vec![];
        for _ in 0..6 {
            window(&mut c, &mut k, &mut t, 22_000);
            vs.push(c.v);
        }
        assert_eq!(vs[..3], [1, 1, 1], "{vs:?}");
        assert!(vs[5] > vs[3] && vs[3] >= 2, "{vs:?}");
        // A standing queue far above target (the earlier samples out of the
        // standing window): the direction turns, v resets.
        t += Dur::from_ms(20);
        window(&mut c, &mut k, &mut t, 200_000);
        window(&mut c, &mut k, &mut t, 200_000);
        assert_eq!(c.v, 1);
    }
}
