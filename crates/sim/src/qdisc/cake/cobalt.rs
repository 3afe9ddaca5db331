//! sch_cake.c's COBALT AQM (CoDel + BLUE): `struct cobalt_vars`, `cobalt_params`, `cobalt_*`.

use crate::packet::Packet;
use crate::qdisc::QdiscCtx;

/// sch_cake.c `struct cobalt_params`, times in ns.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CobaltParams {
    pub(super) interval: u64,
    pub(super) target: u64,
    pub(super) mtu_time: u64,
    pub(super) p_inc: u32,
    pub(super) p_dec: u32,
}

/// sch_cake.c `struct cobalt_vars`, times in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    pub count: u32,
    /// 1/sqrt(count) in Q0.32.
    pub rec_inv_sqrt: u32,
    pub drop_next: i64,
    pub blue_timer: i64,
    /// BLUE drop probability in Q0.32.
    pub p_drop: u32,
    pub dropping: bool,
}

/// `cobalt_newton_step` on a Q0.32 value.
const fn newton_step(count: u32, x: u32) -> u32 {
    let x2 = ((x as u64 * x as u64) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub(count as u64 * x2 as u64);
    val >>= 2;
    (val.wrapping_mul(x as u64) >> (32 - 2 + 1)) as u32
}

/// `cobalt_cache_init`: 1/sqrt(count) for count < 16 after four Newton
/// steps from the previous entry, entry 0 = 1.0.
const INV_SQRT_CACHE: [u32; 16] = {
    let mut c = [0u32; 16];
    let mut x = u32::MAX;
    c[0] = x;
    let mut n = 1;
    while n < 16 {
        let mut i = 0;
        while i < 4 {
            x = newton_step(n as u32, x);
            i += 1;
        }
        c[n] = x;
        n += 1;
    }
    c
};

/// What COBALT decided for a dequeued packet.
pub(super) struct Verdict {
    pub(super) drop: bool,
    /// The packet is ECT and CoDel chose to signal: CE-mark it if it is sent.
    pub(super) ce: bool,
}

impl CobaltVars {
    /// `cobalt_invsqrt`.
    fn invsqrt(&mut self) {
        if self.count < 16 {
            self.rec_inv_sqrt = INV_SQRT_CACHE[self.count as usize];
        } else {
            self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
        }
    }

    /// `cobalt_control`: t + interval/sqrt(count) (interval taken as u32, as Linux).
    fn control(t: i64, interval: u64, rec_inv_sqrt: u32) -> i64 {
        t + crate::qdisc::reciprocal_scale(interval as u32, rec_inv_sqrt) as i64
    }

    /// `cobalt_queue_full`: an overflow drop hit this queue. True when BLUE
    /// just became active.
    pub(super) fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut up = false;
        if (now - self.blue_timer) as u64 > p.target {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = u32::MAX;
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: the queue was served but empty. True when BLUE
    /// just went quiet.
    pub(super) fn queue_empty(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut down = false;
        if self.p_drop != 0 && (now - self.blue_timer) as u64 > p.target {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now - self.drop_next >= 0 {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop`.
    pub(super) fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        pkt: &Packet,
        bulk_flows: u32,
        ctx: &mut QdiscCtx,
    ) -> Verdict {
        let sojourn = (now - pkt.enqueued.0 as i64) as u64;
        let mut schedule = now - self.drop_next;
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;
        let mut v = Verdict {
            drop: false,
            ce: false,
        };
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = Self::control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            // Mark if possible (INET_ECN_set_ce), otherwise drop.
            v.ce = pkt.ecn.is_ect();
            v.drop = !v.ce;
            self.count = self.count.saturating_add(1);
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now - self.drop_next;
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now - self.drop_next;
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        // BLUE, deliberately without ECN.
        if self.p_drop != 0 && ctx.rng.next_u32() < self.p_drop {
            v.drop = true;
        }
        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now + p.interval as i64;
        } else if schedule > 0 && !v.drop {
            self.drop_next = now;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::cake::hash::CAKE_QUEUES;
    use crate::qdisc::cake::tests::{cake, RATE};
    use crate::qdisc::testkit::{drive, pkt, Bench, Source};
    use crate::qdisc::{DropCause, Limit, QdiscEvent};
    use crate::units::{Dur, Time};

    #[test]
    fn cobalt_marks_ect_and_drops_not_ect() {
        // cobalt_should_drop: when CoDel's schedule is due, INET_ECN_set_ce
        // or else drop. CAKE has no ecn switch: ECT packets are always marked.
        let src = Source {
            ecn: Ecn::Ect0,
            ..Source::new(0, Dur::from_us(100))
        };
        let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(10_000_000)), 1);
        let out = drive(&mut b, &[src], RATE, Time(2_000_000_000));
        assert!(out.marks[&0] > 10, "{out:?}");
        assert_eq!(b.drops(), 0);
        let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(10_000_000)), 1);
        let out = drive(
            &mut b,
            &[Source::new(0, Dur::from_us(100))],
            RATE,
            Time(2_000_000_000),
        );
        assert!(b.aqm_drops() > 10 && out.marks.is_empty());
    }

    #[test]
    fn blue_drops_ect_packets_of_a_flow_that_overflows_the_buffer() {
        // cobalt_queue_full raises p_drop by 1/256 per overflow (once per
        // target); BLUE then drops at dequeue with that probability,
        // deliberately without ECN.
        let src = Source {
            ecn: Ecn::Ect0,
            ..Source::new(0, Dur::from_us(50))
        };
        let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(60_000)), 1);
        drive(&mut b, &[src], RATE, Time(2_000_000_000));
        let overflow = b
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    QdiscEvent::Drop {
                        cause: DropCause::Overflow,
                        ..
                    }
                )
            })
            .count();
        assert!(overflow > 0);
        assert!(b.aqm_drops() > 100, "{}", b.aqm_drops());
        let idx = (0..CAKE_QUEUES)
            .find(|&i| b.q.tins[0].flows[i].cvars.p_drop > 0)
            .expect("a queue with BLUE active");
        assert!(b.q.tins[0].unresponsive_flow_count >= 1, "{idx}");
    }

    #[test]
    fn cobalt_count_decays_instead_of_resetting() {
        // cobalt_should_drop: below target, a due schedule lowers count by one
        // per interval/sqrt(count) instead of clearing it (CoDel would reset).
        let p = CobaltParams {
            interval: 100_000_000,
            target: 5_000_000,
            mtu_time: 0,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        };
        let mut v = CobaltVars {
            count: 10,
            rec_inv_sqrt: INV_SQRT_CACHE[10],
            drop_next: 0,
            ..Default::default()
        };
        let mut rng = crate::rng::Rng::stream(1, "t");
        let mut ev = Vec::new();
        let mut ctx = QdiscCtx {
            events: &mut ev,
            rng: &mut rng,
        };
        let mut p0 = pkt(0, 0);
        p0.enqueued = Time(1_000);
        let now = 1_000 + 1_000_000; // sojourn 1 ms < target
        let d = v.should_drop(&p, now, &p0, 0, &mut ctx);
        assert!(!d.drop);
        assert!(v.count > 0 && v.count < 10, "{}", v.count);
        assert!(v.drop_next > now);
    }

    #[test]
    fn a_fresh_queue_signals_on_its_second_packet_over_target() {
        // Linux 6.1 quirk kept on purpose: cobalt_vars_init zeroes
        // rec_inv_sqrt, so the first time a queue goes over target its
        // drop_next = now + interval * 0 and the next packet still over
        // target is signalled; afterwards count has moved and the cache
        // gives 1/sqrt(count), so later episodes wait an interval.
        let p = CobaltParams {
            interval: 100_000_000,
            target: 5_000_000,
            mtu_time: 0,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        };
        let mut v = CobaltVars::default();
        let mut rng = crate::rng::Rng::stream(1, "t");
        let mut ev = Vec::new();
        let mut ctx = QdiscCtx {
            events: &mut ev,
            rng: &mut rng,
        };
        let mut p0 = pkt(0, 0);
        p0.enqueued = Time(0);
        let over =
            |t: i64, v: &mut CobaltVars, ctx: &mut QdiscCtx| v.should_drop(&p, t, &p0, 0, ctx).drop;
        assert!(!over(10_000_000, &mut v, &mut ctx));
        assert!(over(10_100_000, &mut v, &mut ctx));
        assert_eq!(v.count, 2);
        // Next signal interval/sqrt(2) (cache entry) after the first.
        let next = v.drop_next - 10_100_000;
        assert!((next as f64 / 70.7e6 - 1.0).abs() < 0.02, "{next}");
    }

    #[test]
    fn inverse_square_root_cache_is_linuxs() {
        // cobalt_cache_init: entries 0 and 1 are ~1.0, then close to 1/sqrt(n).
        assert_eq!(INV_SQRT_CACHE[0], u32::MAX);
        assert!(INV_SQRT_CACHE[1] > 0xffff_fff0);
        for (n, &c) in INV_SQRT_CACHE.iter().enumerate().skip(2) {
            let exact = 1.0 / (n as f64).sqrt();
            let got = c as f64 / 4294967296.0;
            assert!((got - exact).abs() / exact < 0.02, "{n}: {got} vs {exact}");
        }
    }
}
