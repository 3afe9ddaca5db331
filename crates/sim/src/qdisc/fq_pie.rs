//! FQ-PIE as Linux net/sched/sch_fq_pie.c (Linux 5.6+): packets hashed onto
//! `flows` queues, each with its own PIE state (`pie_vars`) under shared
//! parameters; DRR++ over a list of new flows before a list of old flows,
//! a quantum of bytes per turn (as FQ-CoDel's); PIE's early drop (or, with
//! `ecn` while the flow's probability is at most `ecn_prob` percent, a CE
//! mark) at enqueue on the flow's own backlog; every `tupdate` one timer
//! updates every flow's probability (`fq_pie_timer`), the first 500 ms
//! after start.
//!
//! Limits: `limit` packets over all flows (10240); Linux 6.1 counts
//! `memory_limit` (32 MiB) but does not enforce it (`overmemory` is only a
//! statistic), and neither does this model. `bottleneck.buffer` in
//! packets is `limit`; in bytes, a byte limit over all flows (wire bytes).
//! Classification as FQ-CoDel's ([`super::flow_hash`] of the flow id).

use super::drr::FlowLists;
use super::pie::{PieConfig, PieParams, PieVars, MAX_PROB};
use super::{
    check_range, flow_hash, reciprocal_scale, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscEnv,
    QdiscParams,
};
use crate::packet::Packet;
use crate::units::{Bytes, Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// sch_fq_pie.c `fq_pie_init`: the first update runs HZ/2 after start.
const FIRST_UPDATE: Dur = Dur::from_ms(500);

/// `[bottleneck.fq_pie]`: tc-fq_pie's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqPieConfig {
    pub target: String,
    pub tupdate: String,
    /// Weights of the delay's distance to target and trend, in 1/16.
    pub alpha: u32,
    pub beta: u32,
    /// Number of queues, 1..=65536.
    pub flows: u32,
    /// DRR quantum in bytes; absent: the wire MTU (1514).
    pub quantum: Option<u32>,
    /// Packet limit; absent: `bottleneck.buffer`.
    pub limit: Option<u32>,
    /// CE-mark instead of dropping while a flow's probability is at most
    /// `ecn_prob` percent; absent: off (Linux's default), or on with
    /// `bottleneck.ecn`.
    pub ecn: Option<bool>,
    pub ecn_prob: u32,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
}

impl Default for FqPieConfig {
    /// `fq_pie_init` with `pie_params_init`.
    fn default() -> Self {
        FqPieConfig {
            target: "15ms".into(),
            tupdate: "15ms".into(),
            alpha: 2,
            beta: 20,
            flows: 1024,
            quantum: None,
            limit: None,
            ecn: None,
            ecn_prob: 10,
            bytemode: false,
            dq_rate_estimator: false,
        }
    }
}

impl FqPieConfig {
    fn pie(&self) -> PieConfig {
        PieConfig {
            target: self.target.clone(),
            tupdate: self.tupdate.clone(),
            limit: None,
            alpha: self.alpha,
            beta: self.beta,
            ecn: None,
            bytemode: self.bytemode,
            dq_rate_estimator: self.dq_rate_estimator,
        }
    }
}

impl QdiscParams for FqPieConfig {
    fn validate(&self) -> Result<(), String> {
        self.pie().validate()?;
        check_range("flows", self.flows, 1, 65536)?;
        if let Some(q) = self.quantum {
            check_range("quantum", q, 1, 1 << 20)?;
        }
        if let Some(l) = self.limit {
            check_range("limit", l, 1, 1 << 20)?;
        }
        check_range("ecn_prob", self.ecn_prob, 0, 100)?;
        Ok(())
    }
}

/// The discipline as the scenario resolved it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FqPieSetup {
    pub config: FqPieConfig,
    pub limit: Limit,
    pub quantum: u32,
    pub ecn: bool,
    pub mtu: u32,
}

impl FqPieSetup {
    pub fn resolve(config: FqPieConfig, env: &QdiscEnv) -> Result<Self, String> {
        Ok(FqPieSetup {
            limit: config.limit.map_or(env.limit, Limit::Packets),
            quantum: config.quantum.unwrap_or(env.mtu_wire),
            ecn: env.ecn(config.ecn, false),
            mtu: env.mtu_wire,
            config,
        })
    }
}

/// `struct fq_pie_flow`.
struct Flow {
    vars: PieVars,
    deficit: i64,
    backlog: u64,
    q: VecDeque<Packet>,
    listed: bool,
}

pub struct FqPie {
    p: PieParams,
    ecn: bool,
    ecn_prob: u64,
    quantum: i64,
    limit: Limit,
    flows: Vec<Flow>,
    /// DRR++'s `new_flows` and `old_flows`.
    lists: FlowLists,
    packets: u32,
    bytes: u64,
    next_update: Time,
}

impl FqPie {
    pub fn new(s: &FqPieSetup) -> Self {
        FqPie {
            p: PieParams::new(&s.config.pie(), s.mtu),
            ecn: s.ecn,
            ecn_prob: s.config.ecn_prob as u64,
            quantum: s.quantum as i64,
            limit: s.limit,
            flows: (0..s.config.flows)
                .map(|_| Flow {
                    vars: PieVars::new(),
                    deficit: 0,
                    backlog: 0,
                    q: VecDeque::new(),
                    listed: false,
                })
                .collect(),
            lists: FlowLists::default(),
            packets: 0,
            bytes: 0,
            next_update: Time::ZERO + FIRST_UPDATE,
        }
    }

    /// `fq_pie_timer`: every flow's probability from its own backlog.
    fn run_timer(&mut self, now: Time) {
        while self.next_update <= now {
            for f in &mut self.flows {
                self.p.calculate_probability(&mut f.vars, f.backlog);
            }
            self.next_update += self.p.tupdate;
        }
    }

    /// A flow's drop probability as a fraction (reported, tests).
    pub fn prob(&self, flow: u32) -> f64 {
        let idx = reciprocal_scale(flow_hash(flow), self.flows.len() as u32) as usize;
        self.flows[idx].vars.prob as f64 / MAX_PROB as f64
    }
}

impl Qdisc for FqPie {
    /// `fq_pie_qdisc_enqueue`.
    fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx) {
        self.run_timer(now);
        let idx = reciprocal_scale(flow_hash(pkt.flow), self.flows.len() as u32) as usize;
        let full = match self.limit {
            Limit::Packets(n) => self.packets >= n,
            Limit::Bytes(b) => self.bytes + pkt.wire_len() as u64 > b,
        };
        let f = &mut self.flows[idx];
        if full {
            f.vars.accu_prob = 0;
            ctx.drop(pkt, DropCause::Overflow);
            return;
        }
        let accept = !self
            .p
            .drop_early(&mut f.vars, f.backlog, pkt.wire_len(), ctx)
            || (self.ecn
                && f.vars.prob <= (MAX_PROB / 100) * self.ecn_prob
                && set_ce(&mut pkt, ctx));
        if !accept {
            f.vars.accu_prob = 0;
            ctx.drop(pkt, DropCause::Aqm);
            return;
        }
        self.packets += 1;
        self.bytes += pkt.wire_len() as u64;
        if !f.listed {
            f.listed = true;
            f.deficit = self.quantum;
            f.backlog = 0;
            self.lists.add_new(idx);
        }
        f.backlog += pkt.wire_len() as u64;
        f.q.push_back(pkt);
    }

    /// `fq_pie_qdisc_dequeue`: DRR++, then the flow's PIE dequeue bookkeeping.
    fn dequeue(&mut self, now: Time, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.run_timer(now);
        loop {
            let (from_new, idx) = self.lists.head()?;
            if self.flows[idx].deficit <= 0 {
                self.flows[idx].deficit += self.quantum;
                self.lists.rotate(from_new);
                continue;
            }
            let Some(pkt) = self.flows[idx].q.pop_front() else {
                if !self.lists.retire(from_new) {
                    self.flows[idx].listed = false;
                }
                continue;
            };
            self.packets -= 1;
            self.bytes -= pkt.wire_len() as u64;
            let f = &mut self.flows[idx];
            f.deficit -= pkt.wire_len() as i64;
            f.backlog -= pkt.wire_len() as u64;
            self.p.process_dequeue(&mut f.vars, now, &pkt, f.backlog);
            return Some(pkt);
        }
    }

    fn backlog_bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    fn backlog_packets(&self) -> u32 {
        self.packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{env, pkt, Bench};

    #[test]
    fn each_flow_has_its_own_probability_from_its_own_queue() {
        let s = FqPieSetup::resolve(FqPieConfig::default(), &env(Limit::Packets(10_240))).unwrap();
        let mut b = Bench::new(FqPie::new(&s), 1);
        // Flow 1 keeps a standing queue 100 ms deep; flow 2 sends one packet
        // now and then. Drain at 1 packet per ms for 2 s.
        let mut seq = (0u32, 0u32);
        for ms in 0..2000u64 {
            let now = Time::ZERO + Dur::from_ms(ms);
            while b.q.flows[reciprocal_scale(flow_hash(1), 1024) as usize]
                .q
                .len()
                < 100
            {
                b.enqueue(now, pkt(1, seq.0));
                seq.0 += 1;
            }
            if ms % 50 == 0 {
                b.enqueue(now, pkt(2, seq.1));
                seq.1 += 1;
            }
            b.dequeue(now);
        }
        assert!(
            b.q.prob(1) > 0.05,
            "the standing flow's probability {}",
            b.q.prob(1)
        );
        assert_eq!(b.q.prob(2), 0.0, "the sparse flow's");
    }
}
