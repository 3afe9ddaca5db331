//! DualPI2 (RFC 9332), as Linux net/sched/sch_dualpi2.c (mainline since
//! 6.18): the L4S queue's coupled AQM.
//!
//! Two FIFOs under one packet limit. ECT(1) and CE packets (`ecn_mask`
//! "l4s_ect") go to the L queue, the rest to the C queue
//! (`dualpi2_skb_classify`). Every `tupdate` a PI controller moves the base
//! probability p' by alpha x (delay - target) + beta x (delay - previous
//! delay), the delay being the older of the two queues' head packets
//! (`calculate_probability`, `get_queue_delays`). At dequeue, a classic
//! packet is dropped (or, ECT, CE-marked) with probability p'^2, drawn as
//! two rolls against p'; an L4S packet is marked with the coupled
//! probability k p', and also whenever its own sojourn exceeds the step
//! threshold (1 ms; `do_step_aqm`). Above p' = 1/k ("overload") L4S
//! packets are dropped with p'^2 and marked otherwise (`drop_overload`).
//! No probabilistic drop or mark with less than two MTUs queued. A byte
//! WRR gives the C queue `c_protection` (10%) of the link when both are
//! backlogged, starting in the L queue's favour (`dequeue_packet`).
//!
//! `buffer`: in packets, the shared limit (Linux default 10000); in bytes,
//! a byte limit over both queues counted in wire bytes (Linux's
//! `memlimit` counts socket-buffer sizes). `drop_early` (the AQM at
//! enqueue) and the non-AQM "LLLL" class of tc filters are not offered.
//! The controller's timer is not a timer: each enqueue and dequeue first
//! runs the updates that fell due, each with the queue delays at its own
//! time (the queues did not change in between).

use super::{check_range, param_dur, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscParams};
use crate::packet::{Ecn, Packet};
use crate::units::{Bytes, Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `MAX_PROB`: 2^32 - 1 stands for 100%.
const MAX_PROB: u64 = u32::MAX as u64;

/// Which ECN codepoints go to the L queue (`ecn_mask`); CE always does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// ECT(1) (Linux's default, 1).
    #[default]
    L4sEct,
    /// ECT(0) (2).
    ClaEct,
    /// Any ECT (3).
    AnyEct,
}

/// `[bottleneck.dualpi2]`: tc-dualpi2's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Config {
    /// Shared packet limit; absent: `bottleneck.buffer`.
    pub limit: Option<u32>,
    /// Target queueing delay of the classic queue.
    pub target: String,
    /// Period of the PI update.
    pub tupdate: String,
    /// Integral gain, Hz (tc `alpha`, kept in 1/256 Hz).
    pub alpha: f64,
    /// Proportional gain, Hz (tc `beta`, kept in 1/256 Hz).
    pub beta: f64,
    /// Coupling factor k: the L4S probability is k p'.
    pub coupling_factor: u32,
    /// The L queue's native step: mark above this sojourn.
    pub step_thresh: String,
    /// The step applies only with at least this many L packets queued ahead.
    pub min_qlen_step: u32,
    /// The C queue's share when both are backlogged, percent.
    pub c_protection: u32,
    pub ecn_mask: EcnMask,
    /// In overload (k p' > 1) drop L4S packets with p'^2 (else only mark).
    pub drop_overload: bool,
}

impl Default for DualPi2Config {
    /// `dualpi2_reset_default`.
    fn default() -> Self {
        DualPi2Config {
            limit: None,
            target: "15ms".into(),
            tupdate: "16ms".into(),
            alpha: 41.0 / 256.0,
            beta: 819.0 / 256.0,
            coupling_factor: 2,
            step_thresh: "1ms".into(),
            min_qlen_step: 0,
            c_protection: 10,
            ecn_mask: EcnMask::L4sEct,
            drop_overload: true,
        }
    }
}

impl DualPi2Config {
    fn durations(&self) -> Result<(Dur, Dur, Dur), String> {
        Ok((
            param_dur("target", &self.target, Dur::from_us(1), Dur::from_secs(10))?,
            param_dur(
                "tupdate",
                &self.tupdate,
                Dur::from_us(1),
                Dur::from_secs(10),
            )?,
            param_dur(
                "step_thresh",
                &self.step_thresh,
                Dur::ZERO,
                Dur::from_secs(10),
            )?,
        ))
    }

    /// `dualpi2_scale_alpha_beta` of the 1/256 Hz value tc sends.
    fn gain(hz: f64) -> u64 {
        let v256 = (hz * 256.0).round() as u64;
        (v256 * MAX_PROB / 4) / 1_000_000_000
    }
}

impl QdiscParams for DualPi2Config {
    fn validate(&self) -> Result<(), String> {
        self.durations()?;
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            // tc keeps them in 1/256 Hz below 2^23 (TCA_DUALPI2_ALPHA/BETA range).
            if !(v.is_finite() && (0.0..=60.0).contains(&v)) {
                return Err(format!(
                    "{name}: {v} is outside the allowed range 0..=60 (Hz)"
                ));
            }
        }
        if let Some(l) = self.limit {
            check_range("limit", l, 1, u32::MAX)?;
        }
        check_range("coupling_factor", self.coupling_factor, 1, 255)?;
        check_range("c_protection", self.c_protection, 0, 100)?;
        Ok(())
    }
}

/// One queued packet and whether the step AQM applies to it.
struct Entry {
    pkt: Packet,
    apply_step: bool,
}

pub struct DualPi2 {
    target: u64,
    tupdate: Dur,
    alpha: u64,
    beta: u64,
    k: u64,
    step_thresh: Dur,
    min_qlen_step: u32,
    ecn_mask: EcnMask,
    drop_overload: bool,
    /// WRR weights (c_protection and 100 - c_protection).
    wc: i64,
    wl: i64,
    mtu: u32,
    limit: Limit,
    /// Base probability p', MAX_PROB = 1.
    prob: u64,
    last_qdelay: u64,
    next_update: Time,
    credit: i64,
    l: VecDeque<Entry>,
    c: VecDeque<Entry>,
    bytes: u64,
}

impl DualPi2 {
    /// `cfg` must have passed `validate`.
    pub fn new(cfg: &DualPi2Config, limit: Limit, mtu: u32) -> Self {
        let (target, tupdate, step) = cfg.durations().expect("validated dualpi2 config");
        let wc = cfg.c_protection as i64;
        let mut q = DualPi2 {
            target: target.0,
            tupdate,
            alpha: DualPi2Config::gain(cfg.alpha),
            beta: DualPi2Config::gain(cfg.beta),
            k: cfg.coupling_factor as u64,
            step_thresh: step,
            min_qlen_step: cfg.min_qlen_step,
            ecn_mask: cfg.ecn_mask,
            drop_overload: cfg.drop_overload,
            wc,
            wl: 100 - wc,
            mtu,
            limit: cfg.limit.map_or(limit, Limit::Packets),
            prob: 0,
            last_qdelay: 0,
            next_update: Time::ZERO + tupdate,
            credit: 0,
            l: VecDeque::new(),
            c: VecDeque::new(),
            bytes: 0,
        };
        q.reset_credit();
        q
    }

    /// Base probability p' as a fraction (reported).
    pub fn prob(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// `dualpi2_calculate_c_protection`: start in the L queue's favour.
    fn reset_credit(&mut self) {
        self.credit = self.mtu as i64 * (self.wc - self.wl);
    }

    fn is_l4s(&self, ecn: Ecn) -> bool {
        match ecn {
            Ecn::Ce => true,
            Ecn::Ect1 => matches!(self.ecn_mask, EcnMask::L4sEct | EcnMask::AnyEct),
            Ecn::Ect0 => matches!(self.ecn_mask, EcnMask::ClaEct | EcnMask::AnyEct),
            Ecn::NotEct => false,
        }
    }

    fn head_age(q: &VecDeque<Entry>, at: Time) -> u64 {
        q.front().map_or(0, |e| at.since(e.pkt.enqueued).0)
    }

    /// `dualpi2_timer` for every update due by `now`.
    fn run_timer(&mut self, now: Time) {
        while self.next_update <= now {
            let at = self.next_update;
            let qdelay = Self::head_age(&self.l, at).max(Self::head_age(&self.c, at));
            // `calculate_probability`: the sum of both terms over 64, truncated.
            let delta = (self.alpha as i128 * (qdelay as i128 - self.target as i128)
                + self.beta as i128 * (qdelay as i128 - self.last_qdelay as i128))
                / 64;
            let mut p = (self.prob as i128 + delta).clamp(0, MAX_PROB as i128) as u64;
            if !self.drop_overload {
                p = p.min(MAX_PROB / self.k);
            }
            self.prob = p;
            self.last_qdelay = qdelay;
            self.next_update = at + self.tupdate;
        }
    }

    /// `dualpi2_roll`: true with probability `p` / MAX_PROB.
    fn roll(p: u64, ctx: &mut QdiscCtx) -> bool {
        (ctx.rng.next_u32() as u64) <= p
    }

    /// The PI part at dequeue (`must_drop` with its classic and scalable
    /// marking): Some(drop) or None (keep; marked if the AQM says so).
    fn pi_must_drop(&self, l4s: bool, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        if self.bytes < 2 * self.mtu as u64 {
            return false;
        }
        let overload = self.k * self.prob > MAX_PROB;
        if l4s {
            if !overload {
                if Self::roll(self.k * self.prob, ctx) {
                    return !set_ce(pkt, ctx);
                }
                false
            } else if self.drop_overload && Self::roll(self.prob, ctx) && Self::roll(self.prob, ctx)
            {
                true
            } else {
                !set_ce(pkt, ctx)
            }
        } else if Self::roll(self.prob, ctx) && Self::roll(self.prob, ctx) {
            overload || !set_ce(pkt, ctx)
        } else {
            false
        }
    }
}

impl Qdisc for DualPi2 {
    /// `dualpi2_qdisc_enqueue`.
    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx) {
        self.run_timer(now);
        let full = match self.limit {
            Limit::Packets(n) => (self.l.len() + self.c.len()) as u64 >= n as u64,
            Limit::Bytes(b) => self.bytes + pkt.wire_len() as u64 > b,
        };
        if full {
            ctx.drop(pkt, DropCause::Overflow);
            return;
        }
        self.bytes += pkt.wire_len() as u64;
        if self.is_l4s(pkt.ecn) {
            let apply_step = self.l.len() as u32 >= self.min_qlen_step;
            self.l.push_back(Entry { pkt, apply_step });
        } else {
            self.c.push_back(Entry {
                pkt,
                apply_step: false,
            });
        }
    }

    /// `dualpi2_qdisc_dequeue`: WRR pick, then the AQM; a dropped packet
    /// leaves the credit as it was and the next one is tried.
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx) -> Option<Packet> {
        self.run_timer(now);
        loop {
            let (from_l, change) = if !self.l.is_empty() && (self.c.is_empty() || self.credit <= 0)
            {
                (true, if self.c.is_empty() { 0 } else { self.wc })
            } else if !self.c.is_empty() {
                (false, if self.l.is_empty() { 0 } else { -self.wl })
            } else {
                self.reset_credit();
                return None;
            };
            let Entry {
                mut pkt,
                apply_step,
            } = if from_l {
                self.l.pop_front()
            } else {
                self.c.pop_front()
            }
            .expect("picked a non-empty queue");
            self.bytes -= pkt.wire_len() as u64;
            let l4s = from_l;
            if self.pi_must_drop(l4s, &mut pkt, ctx) {
                ctx.drop(pkt, DropCause::Aqm);
                continue;
            }
            // `do_step_aqm`: the L queue's own threshold, on the packet's sojourn.
            if l4s
                && apply_step
                && now.since(pkt.enqueued) > self.step_thresh
                && !set_ce(&mut pkt, ctx)
            {
                ctx.drop(pkt, DropCause::Aqm);
                continue;
            }
            self.credit += change * pkt.wire_len() as i64;
            return Some(pkt);
        }
    }

    fn backlog_bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    fn backlog_packets(&self) -> u32 {
        (self.l.len() + self.c.len()) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{pkt, Bench};

    fn q() -> DualPi2 {
        DualPi2::new(&DualPi2Config::default(), Limit::Packets(10_000), 1514)
    }

    fn with(ecn: Ecn, flow: u32, seq: u32) -> Packet {
        let mut p = pkt(flow, seq);
        p.ecn = ecn;
        p
    }

    #[test]
    fn ect1_goes_to_the_l_queue_and_the_c_queue_gets_a_tenth_when_both_are_full() {
        let mut b = Bench::new(q(), 1);
        for s in 0..1000 {
            b.enqueue(Time::ZERO, with(Ecn::Ect1, 1, s));
            b.enqueue(Time::ZERO, with(Ecn::Ect0, 2, s));
            b.enqueue(Time::ZERO, with(Ecn::NotEct, 3, s));
        }
        assert_eq!((b.q.l.len(), b.q.c.len()), (1000, 2000));
        // Dequeue at time zero (no sojourn, no PI update yet): the byte WRR alone.
        let mut l = 0;
        for _ in 0..1000 {
            let p = b.dequeue(Time::ZERO).unwrap();
            l += (p.flow == 1) as u32;
        }
        // The C queue's share is c_protection = 10% (equal packet sizes).
        assert!((895..=905).contains(&l), "{l} of 1000 from the L queue");
        assert_eq!(b.drops(), 0);
    }

    #[test]
    fn the_step_marks_l4s_packets_older_than_one_ms_and_only_those() {
        let mut b = Bench::new(q(), 1);
        b.enqueue(Time::ZERO, with(Ecn::Ect1, 1, 0));
        b.enqueue(Time::ZERO, with(Ecn::Ect1, 1, 1));
        b.enqueue(Time::ZERO, with(Ecn::Ect0, 2, 0));
        let now = Time::ZERO + Dur::from_us(900);
        assert_eq!(b.dequeue(now).unwrap().ecn, Ecn::Ect1);
        let now = Time::ZERO + Dur::from_us(1100);
        assert_eq!(b.dequeue(now).unwrap().ecn, Ecn::Ce);
        // The classic packet waited as long: no step for it.
        assert_eq!(b.dequeue(now).unwrap().ecn, Ecn::Ect0);
        assert_eq!(b.marks(), 1);
    }

    #[test]
    fn the_pi_controller_integrates_the_delay_error_and_couples_k_p_and_p_squared() {
        let mut d = q();
        // A standing classic queue: the first update (16 ms after start)
        // sees its head 16 ms old, 1 ms above target and 16 ms up.
        for s in 0..100 {
            let mut p = with(Ecn::Ect0, 2, s);
            p.enqueued = Time::ZERO;
            d.c.push_back(Entry {
                pkt: p,
                apply_step: false,
            });
            d.bytes += p.wire_len() as u64;
        }
        d.run_timer(Time::ZERO + Dur::from_ms(16) - Dur(1));
        assert_eq!(d.prob, 0, "nothing before the first update at 16 ms");
        d.run_timer(Time::ZERO + Dur::from_ms(16));
        let want = (44 * 1_000_000 + 879 * 16_000_000) / 64;
        assert_eq!(d.prob, want);
        // The classic probability is p'^2 and the L4S one 2 p': measure both.
        d.prob = MAX_PROB / 10;
        let mut rng = crate::rng::Rng::stream(3, "t");
        let mut events = Vec::new();
        let (mut c_hits, mut l_hits) = (0, 0);
        for i in 0..20_000 {
            let mut ctx = QdiscCtx {
                events: &mut events,
                rng: &mut rng,
            };
            let mut p = with(Ecn::Ect0, 2, i);
            c_hits += (!d.pi_must_drop(false, &mut p, &mut ctx) && p.ecn == Ecn::Ce) as u32;
            let mut p = with(Ecn::Ect1, 1, i);
            l_hits += (!d.pi_must_drop(true, &mut p, &mut ctx) && p.ecn == Ecn::Ce) as u32;
        }
        let (pc, pl) = (c_hits as f64 / 20_000.0, l_hits as f64 / 20_000.0);
        assert!((pc - 0.01).abs() < 0.003, "classic {pc}, expected 0.1^2");
        assert!((pl - 0.2).abs() < 0.015, "L4S {pl}, expected 2 x 0.1");
    }
}
