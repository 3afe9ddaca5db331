//! sch_fq as a bottleneck (Linux net/sched/sch_fq.c): per-flow fair
//! queueing at a router. Forwarded packets carry no socket and no send
//! time, so each flow is an "orphan" hashed onto 1024 buckets
//! (`orphan_mask`), served round robin by credit: new flows first with
//! `initial_quantum` (10 MTU), then old ones, `quantum` (2 MTU) per turn; a
//! flow idle longer than `flow_refill_delay` (40 ms) comes back with at
//! least a quantum (`fq_enqueue`, `fq_dequeue`). At most `flow_limit`
//! (100) packets per flow and `limit` (10000) in all; the packet over
//! either is dropped. With `maxrate`, each flow is paced at it at the
//! bottleneck (`time_next_packet`, throttled flows waiting in order of
//! their next time; below `low_rate_threshold` a packet per turn);
//! `ce_threshold` CE-marks a packet dequeued that long after it was due.
//!
//! `buffer` in packets is `limit`; in bytes a byte limit over all flows.
//! Not modelled: the horizon (packets have no send time here), garbage
//! collection of idle flows (Linux does it only from 2048 flows on).

use super::drr::FlowLists;
use super::{
    check_range, flow_hash, param_dur, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscEnv,
    QdiscParams,
};
use crate::packet::Packet;
use crate::units::{parse_rate, Bytes, Dur, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// `orphan_mask` + 1.
const BUCKETS: u32 = 1024;
/// `low_rate_threshold`: 550 kbit/s, bytes/s.
const LOW_RATE_THRESHOLD: u64 = 550_000 / 8;

/// `[bottleneck.fq]`: tc-fq's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqConfig {
    /// Packet limit; absent: `bottleneck.buffer`.
    pub limit: Option<u32>,
    /// Packets per flow.
    pub flow_limit: u32,
    /// Bytes per round-robin turn; absent: 2 MTU.
    pub quantum: Option<u32>,
    /// A new flow's first credit; absent: 10 MTU.
    pub initial_quantum: Option<u32>,
    /// Idle time after which a flow returns with at least a quantum.
    pub flow_refill_delay: String,
    /// Pace each flow at this rate (e.g. "10Mbps"); absent: no pacing.
    pub maxrate: Option<String>,
    /// CE-mark packets dequeued this long after they were due; absent: off.
    pub ce_threshold: Option<String>,
}

impl Default for FqConfig {
    /// `fq_init`.
    fn default() -> Self {
        FqConfig {
            limit: None,
            flow_limit: 100,
            quantum: None,
            initial_quantum: None,
            flow_refill_delay: "40ms".into(),
            maxrate: None,
            ce_threshold: None,
        }
    }
}

impl FqConfig {
    fn parsed(&self) -> Result<(Dur, Option<Rate>, Option<Dur>), String> {
        let refill = param_dur(
            "flow_refill_delay",
            &self.flow_refill_delay,
            Dur::ZERO,
            Dur::from_secs(10),
        )?;
        let maxrate = match &self.maxrate {
            None => None,
            Some(s) => {
                let r = parse_rate(s).map_err(|e| format!("maxrate: {e}"))?;
                if r.0 == 0 {
                    return Err("maxrate: must be above 0".into());
                }
                Some(r)
            }
        };
        let ce = match &self.ce_threshold {
            None => None,
            Some(s) => Some(param_dur("ce_threshold", s, Dur::ZERO, Dur::from_secs(10))?),
        };
        Ok((refill, maxrate, ce))
    }
}

impl QdiscParams for FqConfig {
    fn validate(&self) -> Result<(), String> {
        self.parsed()?;
        if let Some(l) = self.limit {
            check_range("limit", l, 1, u32::MAX)?;
        }
        check_range("flow_limit", self.flow_limit, 1, u32::MAX)?;
        if let Some(q) = self.quantum {
            check_range("quantum", q, 1, 1 << 20)?;
        }
        if let Some(q) = self.initial_quantum {
            check_range("initial_quantum", q, 1, 1 << 20)?;
        }
        Ok(())
    }
}

/// The discipline as the scenario resolved it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FqSetup {
    pub config: FqConfig,
    pub limit: Limit,
    pub quantum: u32,
    pub initial_quantum: u32,
}

impl FqSetup {
    pub fn resolve(config: FqConfig, env: &QdiscEnv) -> Result<Self, String> {
        Ok(FqSetup {
            limit: config.limit.map_or(env.limit, Limit::Packets),
            quantum: config.quantum.unwrap_or((2 * env.mtu_wire).min(1 << 20)),
            initial_quantum: config
                .initial_quantum
                .unwrap_or((10 * env.mtu_wire).min(1 << 20)),
            config,
        })
    }
}

/// `struct fq_flow`.
struct Flow {
    q: VecDeque<Packet>,
    credit: i64,
    /// When it was last detached (`f->age`).
    age: Time,
    created: bool,
    /// Off every list (`fq_flow_is_detached`).
    detached: bool,
    time_next_packet: Time,
}

pub struct Fq {
    limit: Limit,
    flow_limit: u32,
    quantum: i64,
    initial_quantum: i64,
    refill: Dur,
    maxrate: Option<Rate>,
    ce_threshold: Option<Dur>,
    flows: Vec<Flow>,
    /// DRR++'s `new_flows` and `old_flows`.
    lists: FlowLists,
    /// Throttled flows by their next send time (`q->delayed`).
    delayed: BTreeSet<(Time, u32)>,
    packets: u32,
    bytes: u64,
}

impl Fq {
    pub fn new(s: &FqSetup) -> Self {
        let (refill, maxrate, ce_threshold) = s.config.parsed().expect("validated fq config");
        Fq {
            limit: s.limit,
            flow_limit: s.config.flow_limit,
            quantum: s.quantum as i64,
            initial_quantum: s.initial_quantum as i64,
            refill,
            maxrate,
            ce_threshold,
            flows: (0..BUCKETS)
                .map(|_| Flow {
                    q: VecDeque::new(),
                    credit: 0,
                    age: Time::ZERO,
                    created: false,
                    detached: true,
                    time_next_packet: Time::ZERO,
                })
                .collect(),
            lists: FlowLists::default(),
            delayed: BTreeSet::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// `fq_check_throttled`: flows whose time has come go to old_flows.
    fn check_throttled(&mut self, now: Time) {
        while let Some(&(t, i)) = self.delayed.first() {
            if t > now {
                break;
            }
            self.delayed.pop_first();
            self.lists.add_old(i as usize);
        }
    }
}

impl Qdisc for Fq {
    /// `fq_enqueue` (an orphan's classification: the flow's hash, masked).
    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx) {
        let full = match self.limit {
            Limit::Packets(n) => self.packets >= n,
            Limit::Bytes(b) => self.bytes + pkt.wire_len() as u64 > b,
        };
        if full {
            ctx.drop(pkt, DropCause::Overflow);
            return;
        }
        let idx = (flow_hash(pkt.flow) & (BUCKETS - 1)) as usize;
        let (initial, quantum, refill) = (self.initial_quantum, self.quantum, self.refill);
        let f = &mut self.flows[idx];
        if !f.created {
            f.created = true;
            f.credit = initial;
        }
        if f.q.len() as u32 >= self.flow_limit {
            ctx.drop(pkt, DropCause::Overflow);
            return;
        }
        if f.detached {
            f.detached = false;
            self.lists.add_new(idx);
            if now.since(f.age) > refill {
                f.credit = f.credit.max(quantum);
            }
        }
        self.packets += 1;
        self.bytes += pkt.wire_len() as u64;
        // `time_to_send`: no send time on a forwarded packet, so now.
        let mut pkt = pkt;
        pkt.enqueued = now;
        f.q.push_back(pkt);
    }

    /// `fq_dequeue`.
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx) -> Option<Packet> {
        if self.packets == 0 {
            return None;
        }
        self.check_throttled(now);
        loop {
            let (from_new, idx) = self.lists.head()?;
            if self.flows[idx].credit <= 0 {
                self.flows[idx].credit += self.quantum;
                self.lists.rotate(from_new);
                continue;
            }
            let Some(head) = self.flows[idx].q.front() else {
                if !self.lists.retire(from_new) {
                    self.flows[idx].detached = true;
                    self.flows[idx].age = now;
                }
                continue;
            };
            let due = head.enqueued.max(self.flows[idx].time_next_packet);
            if now < due {
                self.lists.pop(from_new);
                let f = &mut self.flows[idx];
                f.time_next_packet = due;
                self.delayed.insert((due, idx as u32));
                continue;
            }
            let mut pkt = self.flows[idx].q.pop_front().expect("peeked");
            if let Some(ce) = self.ce_threshold {
                if now.since(due) > ce {
                    set_ce(&mut pkt, ctx);
                }
            }
            self.packets -= 1;
            self.bytes -= pkt.wire_len() as u64;
            let f = &mut self.flows[idx];
            let mut plen = pkt.wire_len() as i64;
            f.credit -= plen;
            if let Some(rate) = self.maxrate {
                // A forwarded packet's rate is the qdisc's maxrate alone.
                let bps = rate.bytes_per_sec();
                if bps <= LOW_RATE_THRESHOLD {
                    f.credit = 0;
                } else {
                    plen = plen.max(self.quantum);
                    if f.credit > 0 {
                        return Some(pkt);
                    }
                }
                let mut len =
                    (plen as u128 * 1_000_000_000 / bps.max(1) as u128).min(1_000_000_000) as u64;
                if f.time_next_packet > Time::ZERO {
                    len -= (len / 2).min(now.since(f.time_next_packet).0);
                }
                f.time_next_packet = now + Dur(len);
            }
            return Some(pkt);
        }
    }

    fn backlog_bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    fn backlog_packets(&self) -> u32 {
        self.packets
    }

    fn next_ready(&self) -> Option<Time> {
        if self.lists.is_empty() {
            self.delayed.first().map(|&(t, _)| t)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{env, pkt, Bench};

    fn fq(params: serde_json::Value) -> Fq {
        let s = FqSetup::resolve(
            serde_json::from_value(params).unwrap(),
            &env(Limit::Packets(10_000)),
        )
        .unwrap();
        Fq::new(&s)
    }

    #[test]
    fn backlogged_flows_share_by_quantum_and_a_new_flow_goes_first() {
        let mut b = Bench::new(fq(serde_json::json!({})), 1);
        for s in 0..100 {
            b.enqueue(Time::ZERO, pkt(1, s));
            b.enqueue(Time::ZERO, pkt(2, s));
        }
        let mut count = [0u32; 4];
        for _ in 0..100 {
            count[b.dequeue(Time::ZERO).unwrap().flow as usize] += 1;
        }
        assert!(count[1].abs_diff(count[2]) <= 10, "{count:?}");
        // A newcomer is served within its first turn, ahead of the old flows.
        b.enqueue(Time::ZERO, pkt(3, 0));
        let mut k = 0;
        while b.dequeue(Time::ZERO).unwrap().flow != 3 {
            k += 1;
        }
        assert!(k <= 2, "{k} packets before the newcomer");
    }

    #[test]
    fn a_flow_over_its_limit_drops_and_others_do_not() {
        let mut b = Bench::new(fq(serde_json::json!({"flow_limit": 10})), 1);
        for s in 0..20 {
            b.enqueue(Time::ZERO, pkt(1, s));
        }
        b.enqueue(Time::ZERO, pkt(2, 0));
        assert_eq!(b.drops(), 10);
        assert_eq!(b.q.backlog_packets(), 11);
    }

    #[test]
    fn maxrate_paces_each_flow_after_its_initial_quantum() {
        let mut b = Bench::new(fq(serde_json::json!({"maxrate": "12Mbps"})), 1);
        for s in 0..30 {
            b.enqueue(Time::ZERO, pkt(1, s));
        }
        // The first 10 packets (initial_quantum = 10 MTU) leave at once, the
        // next 20 at 12 Mbit/s (1.5 MB/s), a quantum (2 packets) per 2.02 ms.
        let mut t = Time::ZERO;
        let mut sent = 0;
        while sent < 30 {
            if b.dequeue(t).is_some() {
                sent += 1;
                if sent == 10 {
                    assert_eq!(t, Time::ZERO);
                }
            } else {
                t = b.q.next_ready().expect("throttled");
            }
        }
        let ms = t.0 as f64 / 1e6;
        let want = 20.0 * 1514.0 / 1.5e6 * 1e3;
        assert!(
            (ms - want).abs() < 2.1,
            "30 packets took {ms} ms, expected about {want}"
        );
    }
}
