//! YeAH-TCP (Baiocchi, Castellani and Vacirca, PFLDnet 2007), as Linux
//! net/ipv4/tcp_yeah.c: Scalable's fast growth while Vegas's estimate of
//! the flow's own queue stays under 80 packets and the RTT within 1/8 of
//! the base RTT ("fast mode"); Reno's growth and a precautionary drain of
//! the estimated queue otherwise ("slow mode"); on loss, a cut by the
//! estimated queue (between cwnd/8 and cwnd/2) unless long in slow mode.

use super::classic::{after, is_cwnd_limited, Window, WindowEvent, WindowRule};
use super::scalable::AI_CNT;
use super::vegas::VegasState;
use super::{CaState, CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// `TCP_YEAH_ALPHA`: packets of the flow's own queue that end fast mode.
const ALPHA: u32 = 80;
/// `TCP_YEAH_GAMMA`: fraction of the queue drained per RTT.
const GAMMA: u32 = 1;
/// `TCP_YEAH_DELTA`: log2 of the smallest loss cut (cwnd/8).
const DELTA: u32 = 3;
/// `TCP_YEAH_EPSILON`: log2 of the largest precautionary cut (cwnd/2).
const EPSILON: u32 = 1;
/// `TCP_YEAH_PHY`: RTT above base by more than base/8 ends fast mode.
const PHY: u32 = 8;
/// `TCP_YEAH_RHO`: RTTs in slow mode after which a loss halves (Reno).
const RHO: u32 = 16;
/// `TCP_YEAH_ZETA`: fast-mode RTTs that reset reno_count.
const ZETA: u32 = 50;

/// YeAH's constants are compiled in (no module parameters).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct YeahConfig {}

impl CcParams for YeahConfig {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `struct yeah`.
pub struct YeahRule {
    v: VegasState,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
}

impl YeahRule {
    pub fn new(_cfg: &YeahConfig) -> Self {
        YeahRule {
            v: VegasState::new(),
            last_q: 0,
            doing_reno_now: 0,
            reno_count: 2,
            fast_count: 0,
        }
    }
}

impl WindowRule for YeahRule {
    /// `tcp_yeah_ssthresh`: cut by the estimated queue, within [cwnd/8,
    /// cwnd/2], or by half after RHO RTTs in slow mode.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        let cwnd = w.cwnd;
        let reduction = if self.doing_reno_now < RHO {
            self.last_q.min((cwnd >> 1).max(2)).max(cwnd >> DELTA)
        } else {
            (cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        (cwnd as i32).wrapping_sub(reduction as i32).max(2) as u32
    }

    /// `tcp_yeah_init` after `tcp_vegas_init`: the MD arithmetic needs cwnd < 2^25.
    fn init(&mut self, w: &mut Window, _init: &CcInit) {
        w.clamp = w.clamp.min(u32::MAX / 128);
    }

    /// `tcp_yeah_cong_avoid`.
    fn cong_avoid(&mut self, _now: Time, w: &mut Window, mut acked: u32, conn: &Conn) {
        if !is_cwnd_limited(w, conn) {
            return;
        }
        if w.in_slow_start() {
            acked = w.slow_start(acked);
        }
        if acked > 0 {
            let cnt = if self.doing_reno_now == 0 {
                w.cwnd.min(AI_CNT) // Scalable
            } else {
                w.cwnd // Reno
            };
            w.cong_avoid_ai(cnt, acked);
        }
        // Once per RTT: Vegas's queue estimate.
        if after(conn.snd_una, self.v.beg_snd_nxt) {
            if self.v.cnt_rtt > 2 {
                let rtt = self.v.min_rtt;
                let base = self.v.base_rtt;
                let queue = ((w.cwnd as u64 * rtt.wrapping_sub(base) as u64) / rtt as u64) as u32;
                if queue > ALPHA || rtt.wrapping_sub(base) > base / PHY {
                    if queue > ALPHA && w.cwnd > self.reno_count {
                        let reduction = (queue / GAMMA).min(w.cwnd >> EPSILON);
                        w.cwnd = (w.cwnd - reduction).max(self.reno_count);
                        w.ssthresh = w.cwnd;
                    }
                    if self.reno_count <= 2 {
                        self.reno_count = (w.cwnd >> 1).max(2);
                    } else {
                        self.reno_count += 1;
                    }
                    self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
                } else {
                    self.fast_count += 1;
                    if self.fast_count > ZETA {
                        self.reno_count = 2;
                        self.fast_count = 0;
                    }
                    self.doing_reno_now = 0;
                }
                self.last_q = queue;
            }
            self.v.beg_snd_una = self.v.beg_snd_nxt;
            self.v.beg_snd_nxt = conn.snd_nxt;
            self.v.beg_snd_cwnd = w.cwnd;
            self.v.cnt_rtt = 0;
            self.v.min_rtt = 0x7fff_ffff;
        }
    }

    fn pkts_acked(&mut self, _now: Time, _w: &mut Window, rs: &RateSample, _conn: &Conn, _p: Rate) {
        self.v.pkts_acked(rs);
    }

    fn set_state(&mut self, _now: Time, _from: CaState, to: CaState, _w: &mut Window, conn: &Conn) {
        self.v.set_state(to, conn);
    }

    fn cwnd_event(&mut self, _now: Time, ev: WindowEvent, _w: &mut Window, conn: &Conn) {
        self.v.cwnd_event(ev, conn);
    }

    fn phase(&self, w: &Window) -> &'static str {
        if w.in_slow_start() {
            "SLOW_START"
        } else if self.doing_reno_now == 0 {
            "FAST"
        } else {
            "SLOW"
        }
    }

    fn write_state(&self, out: &mut CcState) {
        self.v.write_state(out);
        out.num("yeah_queue_pkts", self.last_q as f64);
        out.num("yeah_reno_count_pkts", self.reno_count as f64);
        out.num("yeah_slow_rtts", self.doing_reno_now as f64);
    }
}

/// The registry's entry for `cc = "yeah"` (`cc::Algorithm`).
impl crate::cc::Algorithm for YeahConfig {
    const NAME: &'static str = "yeah";
    const REFERENCE: &'static str =
        "Linux net/ipv4/tcp_yeah.c; Baiocchi, Castellani and Vacirca, PFLDnet 2007";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Yeah(crate::cc::classic::Classic::new(YeahRule::new(self), init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::testkit::{ack, conn, win};

    fn rtt_of(r: &mut YeahRule, w: &mut Window, c: &mut Conn, rtt_us: i64) {
        for _ in 0..5 {
            r.pkts_acked(Time::ZERO, w, &ack(1, rtt_us), c, Rate::INF);
        }
        c.snd_una = r.v.beg_snd_nxt + 1;
        c.snd_nxt = c.snd_una + w.cwnd;
        r.cong_avoid(Time::ZERO, w, 1, c);
    }

    #[test]
    fn fast_mode_until_the_own_queue_passes_80_packets_then_drain_it() {
        let mut r = YeahRule::new(&YeahConfig::default());
        let mut c = conn(1000);
        let mut w = win(1000, 500);
        // An RTT at the base RTT, 100 ms.
        rtt_of(&mut r, &mut w, &mut c, 99_999);
        assert_eq!((r.doing_reno_now, r.last_q), (0, 0));
        // Queue 1000 * 1 ms / 101 ms = 9 packets: fast (Scalable) mode.
        rtt_of(&mut r, &mut w, &mut c, 100_999);
        assert_eq!((r.doing_reno_now, r.last_q), (0, 9));
        // 1000 * 12 / 112 = 107 packets > 80: drain them, slow mode.
        let cwnd = w.cwnd;
        rtt_of(&mut r, &mut w, &mut c, 111_999);
        assert_eq!(r.last_q, (cwnd as u64 * 12_000 / 112_000) as u32);
        assert_eq!(w.cwnd, cwnd - r.last_q);
        assert_eq!(w.ssthresh, w.cwnd);
        assert_eq!(r.doing_reno_now, 1);
        assert_eq!(r.phase(&w), "SLOW");
        // A loss in slow mode early on cuts by the queue, at least cwnd/8.
        let t = r.ssthresh(Time::ZERO, &w, &c);
        assert_eq!(t, w.cwnd - r.last_q.max(w.cwnd >> 3));
    }
}
