//! PIE (RFC 8033) as Linux net/sched/sch_pie.c with include/net/pie.h.
//!
//! A FIFO whose enqueue drops (or, with `ecn` while the probability is at
//! most 10%, CE-marks) with a probability that a PI controller moves every
//! `tupdate` from the queueing delay's distance to `target` and its trend
//! (RFC 8033 §4.2, with Linux's auto-tuning of alpha/beta by the size of
//! the probability). Drops are derandomized as Linux does: a packet can
//! only be dropped once the probability accumulated since the last drop
//! reaches 0.85 and always is by 8.5. Nothing is dropped during the burst
//! allowance (150 ms, counted down at dequeues), below half the target
//! with a small probability, or with less than two MTUs queued.
//!
//! The queueing delay is, as Linux's default (`dq_rate_estimator` off),
//! the sojourn of the last dequeued packet; with `dq_rate_estimator` it is
//! the backlog over a drain rate measured over 16 KiB dequeue cycles
//! (RFC 8033 §5.2). Time is Linux's psched clock (64 ns ticks).
//!
//! The update timer is not a timer: every enqueue and dequeue first runs
//! the updates that fell due since the last call, each at its own time
//! (the queue did not change in between, so the result is the timer's).
//! As Linux's, the first update comes 500 ms after start (HZ/2), then every
//! `tupdate`; Linux rounds tupdate up to whole jiffies (16 ms for 15 ms
//! with HZ = 250), we take it as given.
//!
//! `buffer` mapping: Linux counts a packet `limit` (1000). A `buffer` in
//! packets is that limit; one in bytes is enforced as a byte limit (as
//! bfifo). An explicit `limit` key (packets) overrides `buffer`.

use super::fifo::Fifo;
use super::{check_range, param_dur, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscParams};
use crate::packet::Packet;
use crate::units::{Bytes, Dur, Time};
use serde::{Deserialize, Serialize};

/// pie.h `MAX_PROB`: probability 1 in the 56-bit fixed point.
pub const MAX_PROB: u64 = u64::MAX >> 8;
const DTIME_INVALID: u64 = u64::MAX;
const DQCOUNT_INVALID: u64 = u64::MAX;
/// pie.h `QUEUE_THRESHOLD`: bytes of a drain-rate measurement cycle.
const QUEUE_THRESHOLD: u64 = 16384;
const PIE_SCALE: u32 = 8;
/// include/net/pkt_sched.h: psched ticks are 2^6 ns.
const PSCHED_SHIFT: u32 = 6;
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// sch_pie.c `pie_init`: the first update runs HZ/2 after start.
const FIRST_UPDATE: Dur = Dur::from_ms(500);

fn ticks(t: Time) -> u64 {
    t.0 >> PSCHED_SHIFT
}
fn ticks_dur(d: Dur) -> u64 {
    d.0 >> PSCHED_SHIFT
}

/// `[bottleneck.pie]`: tc-pie's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PieConfig {
    /// Target queueing delay.
    pub target: String,
    /// Period of the probability update.
    pub tupdate: String,
    /// Packet limit; absent: `bottleneck.buffer`.
    pub limit: Option<u32>,
    /// Weight of the delay's distance to target, in 1/16 (tc `alpha`, 0..=32).
    pub alpha: u32,
    /// Weight of the delay's trend, in 1/16 (tc `beta`, 0..=32).
    pub beta: u32,
    /// CE-mark ECT packets while the probability is at most 10%; absent:
    /// off (Linux's default), or on with `bottleneck.ecn`.
    pub ecn: Option<bool>,
    /// Scale the probability by packet size (smaller packets drop less).
    pub bytemode: bool,
    /// Estimate the delay from a measured drain rate instead of timestamps.
    pub dq_rate_estimator: bool,
}

impl Default for PieConfig {
    /// pie.h `pie_params_init`.
    fn default() -> Self {
        PieConfig {
            target: "15ms".into(),
            tupdate: "15ms".into(),
            limit: None,
            alpha: 2,
            beta: 20,
            ecn: None,
            bytemode: false,
            dq_rate_estimator: false,
        }
    }
}

impl PieConfig {
    fn durations(&self) -> Result<(Dur, Dur), String> {
        Ok((
            param_dur("target", &self.target, Dur::from_us(1), Dur::from_secs(10))?,
            param_dur(
                "tupdate",
                &self.tupdate,
                Dur::from_ms(1),
                Dur::from_secs(10),
            )?,
        ))
    }
}

impl QdiscParams for PieConfig {
    fn validate(&self) -> Result<(), String> {
        self.durations()?;
        if let Some(l) = self.limit {
            check_range("limit", l, 1, u32::MAX)?;
        }
        // tc q_pie.c refuses alpha or beta above 32.
        check_range("alpha", self.alpha, 0, 32)?;
        check_range("beta", self.beta, 0, 32)?;
        Ok(())
    }
}

/// pie.h `struct pie_vars`, times in psched ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct PieVars {
    pub qdelay: u64,
    pub qdelay_old: u64,
    pub burst_time: u64,
    pub dq_tstamp: u64,
    /// Drop probability, MAX_PROB = 1.
    pub prob: u64,
    /// Probability accumulated since the last drop (derandomization).
    pub accu_prob: u64,
    pub dq_count: u64,
    pub avg_dq_rate: u32,
    pub backlog_old: u32,
}

impl PieVars {
    /// pie.h `pie_vars_init` on a zeroed struct.
    pub(crate) fn new() -> Self {
        let mut v = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
            backlog_old: 0,
        };
        v.restart();
        v
    }

    /// pie.h `pie_vars_init`: a fresh burst allowance and measurement cycle.
    fn restart(&mut self) {
        self.burst_time = ticks_dur(Dur::from_ms(150));
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }
}

/// pie.h `struct pie_params`: what sch_pie and sch_fq_pie share; the
/// functions of include/net/pie.h and sch_pie.c work on one queue's
/// `PieVars` with these.
#[derive(Clone, Debug)]
pub(crate) struct PieParams {
    /// Psched ticks.
    pub target: u64,
    pub tupdate: Dur,
    pub alpha: u32,
    pub beta: u32,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
    /// sch_pie: mtu = clamp(psched_mtu, 1, 1 MiB).
    pub mtu: u32,
}

impl PieParams {
    /// `cfg` must have passed `validate`.
    pub(crate) fn new(cfg: &PieConfig, mtu: u32) -> Self {
        let (target, tupdate) = cfg.durations().expect("validated pie config");
        PieParams {
            // pie_change: target in us, converted to ticks.
            target: ticks_dur(Dur::from_us(target.us())),
            tupdate,
            alpha: cfg.alpha,
            beta: cfg.beta,
            bytemode: cfg.bytemode,
            dq_rate_estimator: cfg.dq_rate_estimator,
            mtu: mtu.clamp(1, 1 << 20),
        }
    }
}

pub struct Pie {
    p: PieParams,
    ecn: bool,
    next_update: Time,
    vars: PieVars,
    q: Fifo,
}

impl Pie {
    /// `cfg` must have passed `validate`.
    pub fn new(cfg: &PieConfig, limit: Limit, ecn: bool, mtu: u32) -> Self {
        Pie {
            p: PieParams::new(cfg, mtu),
            ecn,
            next_update: Time::ZERO + FIRST_UPDATE,
            vars: PieVars::new(),
            q: Fifo::new(limit),
        }
    }

    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    /// The drop probability as a fraction.
    pub fn prob(&self) -> f64 {
        self.vars.prob as f64 / MAX_PROB as f64
    }

    /// Run every probability update due by `now`.
    fn run_timer(&mut self, now: Time) {
        while self.next_update <= now {
            self.p
                .calculate_probability(&mut self.vars, self.q.backlog_bytes().0);
            self.next_update += self.p.tupdate;
        }
    }
}

impl PieParams {
    /// sch_pie.c `pie_drop_early`.
    pub(crate) fn drop_early(
        &self,
        v: &mut PieVars,
        backlog: u64,
        packet_size: u32,
        ctx: &mut QdiscCtx,
    ) -> bool {
        // Burst allowance left: no early drop.
        if v.burst_time > 0 {
            return false;
        }
        // Delay under half the target and a small probability: no early drop.
        if v.qdelay < self.target / 2 && v.prob < MAX_PROB / 5 {
            return false;
        }
        // Fewer than two MTUs queued, like RED's min_th.
        if backlog < 2 * self.mtu as u64 {
            return false;
        }
        let local_prob = if self.bytemode && packet_size <= self.mtu {
            packet_size as u64 * (v.prob / self.mtu as u64)
        } else {
            v.prob
        };
        if local_prob == 0 {
            v.accu_prob = 0;
        } else {
            v.accu_prob = v.accu_prob.wrapping_add(local_prob);
        }
        if v.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if v.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (ctx.rng.next_u64() >> 8) < local_prob {
            v.accu_prob = 0;
            return true;
        }
        false
    }

    /// sch_pie.c `pie_process_dequeue`: the delay sample and the burst
    /// allowance countdown (and the drain-rate measurement when enabled).
    pub(crate) fn process_dequeue(&self, v: &mut PieVars, now: Time, pkt: &Packet, backlog: u64) {
        let now = ticks(now);
        let dtime: u32;
        if !self.dq_rate_estimator {
            v.qdelay = if backlog != 0 {
                now.wrapping_sub(ticks(pkt.enqueued))
            } else {
                0
            };
            dtime = if v.dq_tstamp != DTIME_INVALID {
                now.wrapping_sub(v.dq_tstamp) as u32
            } else {
                0
            };
            v.dq_tstamp = now;
            if dtime == 0 {
                return;
            }
        } else {
            // Start a cycle once about ten packets are queued.
            if backlog >= QUEUE_THRESHOLD && v.dq_count == DQCOUNT_INVALID {
                v.dq_tstamp = now;
                v.dq_count = 0;
            }
            if v.dq_count == DQCOUNT_INVALID {
                return;
            }
            v.dq_count += pkt.wire_len() as u64;
            if v.dq_count < QUEUE_THRESHOLD {
                return;
            }
            let count = (v.dq_count << PIE_SCALE) as u32;
            dtime = now.wrapping_sub(v.dq_tstamp) as u32;
            if dtime == 0 {
                return;
            }
            let count = count / dtime;
            v.avg_dq_rate = if v.avg_dq_rate == 0 {
                count
            } else {
                (v.avg_dq_rate - (v.avg_dq_rate >> 3)) + (count >> 3)
            };
            // Below the threshold keep the last rate; else start a new cycle.
            if backlog < QUEUE_THRESHOLD {
                v.dq_count = DQCOUNT_INVALID;
            } else {
                v.dq_count = 0;
                v.dq_tstamp = now;
            }
        }
        if v.burst_time > 0 {
            v.burst_time = v.burst_time.saturating_sub(dtime as u64);
        }
    }

    /// sch_pie.c `pie_calculate_probability` (RFC 8033 §4.2 with Linux's
    /// scaling of alpha and beta and its non-linear steps).
    pub(crate) fn calculate_probability(&self, v: &mut PieVars, backlog: u64) {
        let backlog = backlog as u32;
        let (qdelay, qdelay_old);
        if self.dq_rate_estimator {
            qdelay_old = v.qdelay;
            v.qdelay_old = v.qdelay;
            qdelay = (backlog << PIE_SCALE)
                .checked_div(v.avg_dq_rate)
                .unwrap_or(0) as u64;
        } else {
            qdelay = v.qdelay;
            qdelay_old = v.qdelay_old;
        }
        // A zero delay with packets queued: the backlog is tiny, keep the probability.
        let mut update_prob = !(qdelay == 0 && backlog != 0);

        // alpha, beta in 1/16 units of "per second", scaled to the tick.
        let mut alpha = (self.alpha as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        let mut beta = (self.beta as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        // RFC 8033 §4.2 auto-tuning: smaller steps at smaller probabilities.
        if v.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while v.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta = (alpha as i64).wrapping_mul(qdelay.wrapping_sub(self.target) as i64);
        delta =
            delta.wrapping_add((beta as i64).wrapping_mul(qdelay.wrapping_sub(qdelay_old) as i64));
        let oldprob = v.prob;
        // Above 10%, rise by at most 2% per update.
        if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Beyond 250 ms of delay, add 2% per update.
        if qdelay > ticks_dur(Dur::from_ms(250)) {
            delta += (MAX_PROB / 50) as i64;
        }
        v.prob = v.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if v.prob < oldprob {
                v.prob = MAX_PROB;
                update_prob = false;
            }
        } else if v.prob > oldprob {
            v.prob = 0;
        }
        // Two updates without any delay: decay the probability by 1/64.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            v.prob -= v.prob / 64;
        }
        v.qdelay = qdelay;
        v.backlog_old = backlog;
        // Delay low for two updates and no probability left: start over.
        if v.qdelay < self.target / 2
            && v.qdelay_old < self.target / 2
            && v.prob == 0
            && (!self.dq_rate_estimator || v.avg_dq_rate > 0)
        {
            v.restart();
        }
        if !self.dq_rate_estimator {
            v.qdelay_old = qdelay;
        }
    }
}

impl Qdisc for Pie {
    /// sch_pie.c `pie_qdisc_enqueue`.
    fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx) {
        self.run_timer(now);
        if !self.q.fits(&pkt) {
            self.vars.accu_prob = 0;
            ctx.drop(pkt, DropCause::Overflow);
            return;
        }
        let backlog = self.q.backlog_bytes().0;
        let accept = !self.p.drop_early(&mut self.vars, backlog, pkt.wire_len(), ctx)
            // Mark instead while the probability is at most 10%.
            || (self.ecn && self.vars.prob <= MAX_PROB / 10 && set_ce(&mut pkt, ctx));
        if accept {
            self.q.push(pkt);
        } else {
            self.vars.accu_prob = 0;
            ctx.drop(pkt, DropCause::Aqm);
        }
    }

    /// sch_pie.c `pie_qdisc_dequeue`.
    fn dequeue(&mut self, now: Time, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.run_timer(now);
        let p = self.q.pop()?;
        self.p
            .process_dequeue(&mut self.vars, now, &p, self.q.backlog_bytes().0);
        Some(p)
    }

    fn backlog_bytes(&self) -> Bytes {
        self.q.backlog_bytes()
    }

    fn backlog_packets(&self) -> u32 {
        self.q.backlog_packets()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{
        assert_same_seed_same_drops, drive, ect, env, mean_secs, pkt, Bench, Source,
    };
    use crate::qdisc::{parse_params, QdiscConfig};
    use crate::units::Rate;

    const RATE: Rate = Rate(100_000_000);

    fn pie(params: serde_json::Value, limit: Limit) -> Pie {
        let c = QdiscConfig::parse("pie", &params, &env(limit)).unwrap();
        let QdiscConfig::Pie {
            config,
            limit,
            ecn,
            mtu,
        } = c
        else {
            panic!()
        };
        Pie::new(&config, limit, ecn, mtu)
    }

    #[test]
    fn unresponsive_overload_is_held_near_the_target_delay() {
        // RFC 8033 §4.2: the PI controller raises the drop probability until
        // the queueing delay settles at target (15 ms). A constant 110% load
        // needs p = 1 - 1/1.1 = 9.1% of its packets dropped.
        let mut b = Bench::new(pie(serde_json::Value::Null, Limit::Packets(10_000)), 1);
        let src = Source::new(0, Dur::from_ns(110_109)); // 110 Mbps of 1514 B
        let out = drive(&mut b, &[src], RATE, Time(20_000_000_000));
        let s = out.sojourns_of(0);
        let late = mean_secs(&s[s.len() / 2..]);
        assert!((late - 0.015).abs() < 0.003, "mean sojourn {late}");
        let sent = 20e9 / 110_109.0;
        let f = b.aqm_drops() as f64 / sent;
        assert!((f - 0.0909).abs() < 0.01, "drop fraction {f}");
        // Derandomization drops less often than the probability says (no
        // drop until 0.85 has accumulated), so p settles above that fraction.
        assert!(b.q.prob() > 0.0909, "p = {}", b.q.prob());
    }

    #[test]
    fn queue_never_exceeds_its_limit_under_overload() {
        // pie_qdisc_enqueue: qlen >= limit is dropped (bytes: bfifo rule).
        for limit in [Limit::Packets(100), Limit::Bytes(120_000)] {
            let mut b = Bench::new(pie(serde_json::Value::Null, limit), 1);
            let src: Vec<Source> = (0..4).map(|f| Source::new(f, Dur::from_us(30))).collect();
            let out = drive(&mut b, &src, RATE, Time(2_000_000_000));
            match limit {
                Limit::Packets(n) => assert!(out.max_backlog_pkts <= n),
                Limit::Bytes(n) => assert!(out.max_backlog.0 <= n),
            }
            assert!(b.drops() > 1000);
        }
    }

    /// A PIE with forced state: probability `prob`, burst allowance spent,
    /// and `k` packets queued (dequeues keep that backlog).
    fn forced(params: serde_json::Value, prob: u64, k: u32) -> Bench<Pie> {
        let mut b = Bench::new(pie(params, Limit::Packets(10_000)), 11);
        for i in 0..k {
            b.q.q.push(pkt(0, i));
        }
        b.q.vars.prob = prob;
        b.q.vars.burst_time = 0;
        b.q.vars.qdelay = b.q.p.target;
        b.q.next_update = Time::NEVER;
        b
    }

    #[test]
    fn nothing_is_dropped_during_the_burst_allowance() {
        // pie_drop_early: burst_time > 0 => no early drop, whatever the probability.
        let mut b = forced(serde_json::Value::Null, MAX_PROB / 2, 20);
        b.q.vars.burst_time = 1;
        for i in 0..1000 {
            b.enqueue(Time(1000), pkt(1, i));
        }
        assert_eq!(b.drops(), 0);
        b.q.vars.burst_time = 0;
        for i in 0..1000 {
            b.enqueue(Time(1000), pkt(1, i));
        }
        assert!(b.drops() > 300);
    }

    #[test]
    fn burst_allowance_is_spent_by_dequeues_after_150_ms() {
        // pie_vars_init: 150 ms; pie_process_dequeue subtracts the time
        // between dequeues.
        let mut b = Bench::new(pie(serde_json::Value::Null, Limit::Packets(10_000)), 1);
        for i in 0..2000 {
            b.enqueue(Time(0), pkt(0, i));
        }
        let mut t = Time(0);
        while b.q.vars.burst_time > 0 {
            t += Dur::from_ms(1);
            b.dequeue(t);
        }
        // The first dequeue only stamps; 150 ms later the allowance is gone.
        assert_eq!(t, Time(151_000_000));
    }

    #[test]
    fn derandomized_drops_follow_the_accumulated_probability() {
        // pie_drop_early: each packet adds prob to accu_prob; no drop below
        // 0.85, certain drop at 8.5, in between a drop with probability
        // prob, after which accu_prob restarts. With prob = 1% the spacing
        // N between drops is n0 = 85 packets plus a geometric(1%) wait cut
        // at 850: E[N] = n0 + sum_{j=0}^{n1-n0-1} (1-q)^j, q = prob.
        let prob = MAX_PROB / 100;
        let mut b = forced(serde_json::Value::Null, prob, 20);
        let n = 300_000;
        for i in 0..n {
            b.enqueue(Time(1000), pkt(1, i));
            if b.q.backlog_packets() > 20 {
                b.q.q.pop();
            }
        }
        let n0 = ((MAX_PROB / 100) * 85).div_ceil(prob);
        let n1 = ((MAX_PROB / 2) * 17).div_ceil(prob);
        let q = prob as f64 / (1u64 << 56) as f64;
        let tail: f64 = (0..n1 - n0).map(|j| (1.0 - q).powi(j as i32)).sum();
        let mean = n0 as f64 + tail;
        // Var[N] = Var[geometric part]: about (1-q)/q^2.
        let var = (1.0 - q) / (q * q);
        let want = n as f64 / mean;
        let sd = (n as f64 * var / mean.powi(3)).sqrt();
        let got = b.aqm_drops() as f64;
        assert!((got - want).abs() < 4.0 * sd, "{got} vs {want} (sd {sd})");
    }

    #[test]
    fn ecn_marks_while_the_probability_is_at_most_ten_percent() {
        // pie_qdisc_enqueue: with ecn an ECT packet chosen for an early drop
        // is CE-marked if prob <= 10%, dropped above.
        let p = serde_json::json!({"ecn": true});
        let mut b = forced(p.clone(), MAX_PROB / 20, 20);
        for i in 0..2000 {
            b.enqueue(Time(1000), ect(pkt(1, i)));
        }
        assert!(
            b.marks() > 50 && b.drops() == 0,
            "{} {}",
            b.marks(),
            b.drops()
        );
        let mut b = forced(p, MAX_PROB / 5, 20);
        for i in 0..2000 {
            b.enqueue(Time(1000), ect(pkt(1, i)));
        }
        assert!(b.drops() > 100 && b.marks() == 0);
        // Not-ECT packets are dropped even at a low probability.
        let mut b = forced(serde_json::json!({"ecn": true}), MAX_PROB / 20, 20);
        for i in 0..2000 {
            b.enqueue(Time(1000), pkt(1, i));
        }
        assert!(b.drops() > 50 && b.marks() == 0);
    }

    #[test]
    fn probability_rises_above_target_and_decays_without_delay() {
        // RFC 8033 §4.2: p += alpha (qdelay - target) + beta (qdelay - qdelay_old);
        // pie_calculate_probability: two updates at zero delay decay p by 1/64.
        let mut q = pie(serde_json::Value::Null, Limit::Packets(1000));
        q.vars.qdelay = ticks_dur(Dur::from_ms(40));
        q.vars.qdelay_old = ticks_dur(Dur::from_ms(40));
        let mut last = 0.0;
        for _ in 0..40 {
            q.p.calculate_probability(&mut q.vars, 100_000);
            assert!(q.prob() > last);
            last = q.prob();
        }
        // No delay any more: the probability falls every update until it
        // reaches 0, and then the state restarts (a fresh burst allowance).
        q.vars.qdelay = 0;
        q.vars.burst_time = 0;
        let mut n = 0;
        while q.vars.prob > 0 {
            let p = q.vars.prob;
            q.p.calculate_probability(&mut q.vars, 0);
            assert!(q.vars.prob < p);
            n += 1;
            assert!(n < 10_000);
        }
        assert_eq!(q.vars.burst_time, 0);
        q.p.calculate_probability(&mut q.vars, 0);
        assert_eq!(q.vars.burst_time, ticks_dur(Dur::from_ms(150)));
    }

    #[test]
    fn updates_start_after_half_a_second_and_repeat_every_tupdate() {
        // sch_pie.c `pie_init` arms the timer at HZ/2, `pie_timer` re-arms it every tupdate.
        let mut b = Bench::new(pie(serde_json::Value::Null, Limit::Packets(10_000)), 1);
        b.enqueue(Time(0), pkt(0, 0));
        b.dequeue(Time(499_000_000));
        assert_eq!(b.q.next_update, Time(500_000_000));
        b.dequeue(Time(560_000_000));
        assert_eq!(b.q.next_update, Time(575_000_000));
    }

    #[test]
    fn rate_estimator_measures_the_drain_rate() {
        // RFC 8033 §5.2 / pie_process_dequeue: over cycles of 16 KiB the
        // dequeue rate is averaged (bytes per tick << 8); qdelay = backlog / rate.
        let mut b = Bench::new(
            pie(
                serde_json::json!({"dq_rate_estimator": true}),
                Limit::Packets(10_000),
            ),
            1,
        );
        for i in 0..400 {
            b.enqueue(Time(0), pkt(0, i));
        }
        // Drain at 100 Mbps: one 1514 B packet per 121.12 us.
        let mut t = Time(0);
        for _ in 0..300 {
            t += RATE.tx_time(Bytes(1514));
            b.dequeue(t);
        }
        let rate = b.q.vars.avg_dq_rate as f64 / 256.0 * PSCHED_TICKS_PER_SEC as f64 * 8.0;
        assert!((rate / 1e8 - 1.0).abs() < 0.02, "{rate}");
    }

    #[test]
    fn same_seed_gives_same_drops() {
        let run = |seed| {
            let mut b = Bench::new(pie(serde_json::Value::Null, Limit::Packets(500)), seed);
            let src: Vec<Source> = (0..2).map(|f| Source::new(f, Dur::from_us(200))).collect();
            drive(&mut b, &src, RATE, Time(3_000_000_000));
            b.trail()
        };
        assert_same_seed_same_drops(run, 1, Some(2), 101);
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        let bad = [
            (serde_json::json!({"target": "-15ms"}), "target:"),
            (serde_json::json!({"tupdate": "0ms"}), "tupdate:"),
            (serde_json::json!({"alpha": 33}), "alpha:"),
            (serde_json::json!({"beta": 64}), "beta:"),
            (serde_json::json!({"limit": 0}), "limit:"),
            (
                serde_json::json!({"taget": "15ms"}),
                "unknown field `taget`",
            ),
        ];
        for (p, name) in bad {
            let e = parse_params::<PieConfig>(&p).unwrap_err();
            assert!(e.contains(name), "{p}: {e}");
        }
        let mut e = env(Limit::Bytes(100_000));
        e.ecn = true;
        let c = QdiscConfig::parse("pie", &serde_json::Value::Null, &e).unwrap();
        assert!(matches!(
            c,
            QdiscConfig::Pie {
                limit: Limit::Bytes(100_000),
                ecn: true,
                ..
            }
        ));
        assert_eq!(c.name(), "pie");
        let _ = c.build();
    }
}
