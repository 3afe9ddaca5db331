//! CAKE as Linux net/sched/sch_cake.c (6.1).
//!
//! What is modelled, as Linux does it:
//! * Tins: `besteffort` (one tin) and `diffserv3` (Best Effort, Bulk at
//!   1/16 of the rate and quantum weight, Voice at 1/4). Our packets carry
//!   no DSCP, so every packet reads as DSCP 0 and lands in the Best Effort
//!   tin (tin 0 in both modes); diffserv3 then behaves as besteffort except
//!   for its tin bookkeeping.
//! * Flow queues: 1024 per tin, 8-way set-associative on the flow hash
//!   (`cake_hash`), with host queues for per-host fairness looked up the
//!   same way. The flow hash is [`super::flow_hash`] of the flow id
//!   (standing for Linux's hash of the 5-tuple, symmetric like Linux's so a
//!   connection's data and ACKs share a queue); host hashes are
//!   [`super::host_hash`] of the packet's `src_host` / `dst_host`, the same
//!   function for both as Linux's address-sorted hash makes them.
//! * Flow isolation modes, `triple-isolate` by default: in the dual and
//!   triple modes a flow's DRR quantum is divided by the number of bulk
//!   flows of its source or destination host (the larger), with Linux's
//!   random dithering (`cake_get_flow_quantum`).
//! * DRR++ with sparse, bulk and decaying flow lists and states
//!   (`cake_dequeue`); DRR over tins by tin quantum when unshaped.
//! * COBALT per flow: CoDel with target/interval per tin
//!   (`cake_set_rate`), Linux's 1/sqrt(count) cache and Newton steps, count
//!   decay instead of reset, ECN marking of ECT packets (CAKE always marks
//!   when it can, so `bottleneck.ecn` has no effect), and BLUE's drop probability raised on overflow and
//!   lowered on empty queues. The last packet of a queue is never dropped.
//!   As in Linux, a queue's COBALT state starts with 1/sqrt(count) at 0,
//!   so the very first congestion episode of each queue signals one
//!   packet after the sojourn first exceeds target instead of an interval
//!   later (`cobalt_vars_init` zeroes it; the cache value 1.0 only appears
//!   once count has moved).
//! * The deficit-time shaper (`bandwidth`): each packet advances the global
//!   and per-tin schedules by its adjusted length over the rate, and a
//!   failsafe schedule by 1.5 times that; `dequeue` returns nothing until
//!   the schedule is due and [`Qdisc::next_ready`] tells the caller when
//!   (Linux's watchdog). Overhead compensation: `overhead` (the 14-byte
//!   Ethernet header is removed first, as Linux does once overhead is set),
//!   `mpu`, `atm` / `ptm` framing. Without `bandwidth` CAKE does not shape
//!   and the bottleneck link's own rate applies.
//! * The ACK filter (`ack_filter = "conservative"` or `"aggressive"`), see
//!   [`Cake::ack_filter`].
//! * Buffer limit (`cake_reconfigure`): `memlimit` if given; otherwise
//!   4 x rate x interval (at least 4 MiB) when shaped, unlimited when not;
//!   then at most `limit` packets x MTU. `bottleneck.buffer` in bytes is
//!   the `memlimit`; in packets it is that packet `limit` (Linux's is 10240).
//!   On overflow the longest queue across tins loses its head packet and
//!   its BLUE probability goes up (`cake_drop`).
//! * `ingress` mode: dropped packets are charged to the shaper and bulk
//!   flows tighten COBALT's over-target test.
//!
//! Simplifications: memory is counted in wire bytes, not `skb->truesize`;
//! the longest queue is found by a scan of the active queues (ties to the
//! lowest tin and queue index) instead of Linux's max-heap, which can only
//! differ between queues of equal backlog; packets are never GSO
//! super-packets, so `split_gso` has nothing to do; no `autorate-ingress`,
//! `nat`, `wash`, `fwmark`, tc filters, or the precedence / diffserv4 /
//! diffserv8 tin sets; the ACK filter assumes timestamps never go backwards
//! (our ACKs carry none).
//!
//! Layout, along sch_cake.c's parts: `tins` (tin sets, per-tin rates, tin
//! choice), `hash` (flow hash, host isolation, flow lists), `cobalt`
//! (CoDel + BLUE), `shaper` (overhead, schedules), `ack_filter`; this file
//! holds the configuration and the enqueue / dequeue glue.

mod ack_filter;
mod cobalt;
mod hash;
mod shaper;
mod tins;

pub use ack_filter::AckFilterMode;
pub use cobalt::CobaltVars;
pub use hash::FlowMode;
pub use shaper::Framing;
pub use tins::Diffserv;

use super::{
    check_range, param_bytes, param_dur, set_ce, DropCause, Limit, Qdisc, QdiscCtx, QdiscEnv,
    QdiscParams,
};
use crate::packet::Packet;
use crate::units::{parse_rate, Bytes, Dur, Time};
use hash::{FlowSet, DECAYING, NEW, NIL, OLD};
use serde::{Deserialize, Serialize};
use tins::Tin;

/// sch_cake.c `cake_init`: packet limit.
const DEFAULT_LIMIT: u32 = 10240;

/// `[bottleneck.cake]`: tc-cake's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CakeConfig {
    /// Shaper rate; absent: unlimited (the bottleneck link sets the rate).
    pub bandwidth: Option<String>,
    /// Expected RTT: COBALT's interval before per-tin adjustment.
    pub rtt: String,
    /// COBALT target before per-tin adjustment.
    pub target: String,
    pub diffserv: Diffserv,
    pub flow_mode: FlowMode,
    /// Bytes added to each packet for the shaper, after removing the
    /// Ethernet header (tc `overhead`, -64..=256); absent: raw lengths.
    pub overhead: Option<i32>,
    /// Minimum packet size for the shaper (tc `mpu`).
    pub mpu: u32,
    /// Cell framing for the shaper.
    pub atm: Framing,
    pub ack_filter: AckFilterMode,
    /// Byte limit (tc `memlimit`); absent: from `bottleneck.buffer` (module doc).
    pub memlimit: Option<String>,
    /// Ingress mode (tc `ingress`).
    pub ingress: bool,
}

impl Default for CakeConfig {
    /// sch_cake.c `cake_init`.
    fn default() -> Self {
        CakeConfig {
            bandwidth: None,
            rtt: "100ms".into(),
            target: "5ms".into(),
            diffserv: Diffserv::Diffserv3,
            flow_mode: FlowMode::TripleIsolate,
            overhead: None,
            mpu: 0,
            atm: Framing::None,
            ack_filter: AckFilterMode::None,
            memlimit: None,
            ingress: false,
        }
    }
}

impl CakeConfig {
    fn durations(&self) -> Result<(Dur, Dur), String> {
        Ok((
            param_dur("rtt", &self.rtt, Dur::from_us(1), Dur::from_secs(3600))?,
            param_dur(
                "target",
                &self.target,
                Dur::from_us(1),
                Dur::from_secs(3600),
            )?,
        ))
    }

    /// Shaper rate in bytes per second; 0 = unlimited.
    fn rate_bytes(&self) -> Result<u64, String> {
        match &self.bandwidth {
            None => Ok(0),
            Some(s) => {
                let r = parse_rate(s).map_err(|e| format!("bandwidth: {e}"))?;
                if r.0 < 8 {
                    return Err(format!(
                        "bandwidth: {s:?} is below the allowed minimum of 1 byte/s"
                    ));
                }
                Ok(r.bytes_per_sec())
            }
        }
    }
}

impl QdiscParams for CakeConfig {
    fn validate(&self) -> Result<(), String> {
        self.durations()?;
        self.rate_bytes()?;
        if let Some(o) = self.overhead {
            check_range("overhead", o, -64, 256)?;
        }
        check_range("mpu", self.mpu, 0, 256)?;
        if let Some(m) = &self.memlimit {
            let b = param_bytes("memlimit", m, 1514)?;
            check_range("memlimit", b, 1, u32::MAX as u64)?;
        }
        Ok(())
    }
}

/// The config with `bottleneck` applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CakeSetup {
    pub config: CakeConfig,
    /// Packet limit (Linux's `sch->limit`).
    pub limit: u32,
    /// Configured byte limit (`memlimit`); 0 = none.
    pub memlimit: u32,
    pub mtu: u32,
}

impl CakeSetup {
    pub fn resolve(config: CakeConfig, env: &QdiscEnv) -> Result<Self, String> {
        let (limit, mut memlimit) = match env.limit {
            Limit::Packets(n) => (n, 0),
            Limit::Bytes(b) => (DEFAULT_LIMIT, b.min(u32::MAX as u64) as u32),
        };
        if let Some(m) = &config.memlimit {
            memlimit = param_bytes("memlimit", m, env.mtu_wire)? as u32;
        }
        Ok(CakeSetup {
            config,
            limit,
            memlimit,
            mtu: env.mtu_wire,
        })
    }
}

pub struct Cake {
    tins: Vec<Tin>,
    mode: u8,
    ack_filter: AckFilterMode,
    overhead: Option<i32>,
    mpu: u32,
    atm: Framing,
    ingress: bool,
    rate_ns: u64,
    rate_shft: u16,
    time_next_packet: i64,
    failsafe_next_packet: i64,
    buffer_used: u64,
    buffer_limit: u64,
    cur_tin: usize,
    qlen: u32,
    backlog: u64,
    /// When a held-back packet may go (Linux's watchdog), after a dequeue
    /// that returned nothing although packets are queued.
    wake: Option<Time>,
}

impl Cake {
    /// `cake_init` + `cake_reconfigure`. `s` must come from a validated config.
    pub fn new(s: &CakeSetup) -> Self {
        let c = &s.config;
        let (rtt, target) = c.durations().expect("validated cake config");
        let rate = c.rate_bytes().expect("validated cake config");
        // cake_change takes rtt and target in us.
        let (interval_us, target_us) = (rtt.us().max(1), target.us().max(1));
        let (t_ns, i_ns) = (target_us * 1000, interval_us * 1000);
        let tins = tins::configure(c.diffserv, rate, s.mtu, t_ns, i_ns);
        let buffer_limit = if s.memlimit != 0 {
            s.memlimit as u64
        } else if rate != 0 {
            ((rate * interval_us / 250_000) as u32).max(4 << 20) as u64
        } else {
            u32::MAX as u64
        };
        let buffer_limit = buffer_limit.min((s.limit as u64 * s.mtu as u64).max(s.memlimit as u64));
        Cake {
            rate_ns: tins[0].tin_rate_ns,
            rate_shft: tins[0].tin_rate_shft,
            tins,
            mode: c.flow_mode.bits(),
            ack_filter: c.ack_filter,
            overhead: c.overhead,
            mpu: c.mpu,
            atm: c.atm,
            ingress: c.ingress,
            time_next_packet: 0,
            failsafe_next_packet: 0,
            buffer_used: 0,
            buffer_limit,
            cur_tin: 0,
            qlen: 0,
            backlog: 0,
            wake: None,
        }
    }

    /// The byte limit in force.
    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }

    /// COBALT target and interval of a tin, ns.
    pub fn tin_target_interval(&self, tin: usize) -> (u64, u64) {
        let p = &self.tins[tin].cparams;
        (p.target, p.interval)
    }

    /// `cake_dequeue_one`: the head of queue `idx` of tin `tin`.
    fn dequeue_one(&mut self, tin: usize, idx: usize) -> Option<Packet> {
        let b = &mut self.tins[tin];
        let p = b.flows[idx].q.pop_front()?;
        let len = p.wire_len();
        b.backlogs[idx] -= len;
        b.tin_backlog -= len;
        self.backlog -= len as u64;
        self.buffer_used -= len as u64;
        self.qlen -= 1;
        Some(p)
    }

    /// `cake_drop`: drop the head of the longest queue across tins and
    /// raise its BLUE probability.
    fn drop_longest(&mut self, now: i64, ctx: &mut QdiscCtx) {
        let mut best: Option<(u32, usize, usize)> = None;
        for (t, b) in self.tins.iter().enumerate() {
            for list in [NEW, OLD] {
                let mut i = b.lists.head[list];
                while i != NIL {
                    let bl = b.backlogs[i as usize];
                    let better = match best {
                        None => bl > 0,
                        Some((m, bt, bi)) => bl > m || (bl == m && (t, i as usize) < (bt, bi)),
                    };
                    if better {
                        best = Some((bl, t, i as usize));
                    }
                    i = b.flows[i as usize].link.next;
                }
            }
        }
        let Some((_, t, idx)) = best else {
            return;
        };
        let b = &mut self.tins[t];
        let pkt = b.flows[idx]
            .q
            .pop_front()
            .expect("longest queue has packets");
        let cparams = b.cparams;
        if b.flows[idx].cvars.queue_full(&cparams, now) {
            b.unresponsive_flow_count += 1;
        }
        let len = pkt.wire_len();
        b.backlogs[idx] -= len;
        b.tin_backlog -= len;
        self.backlog -= len as u64;
        self.buffer_used -= len as u64;
        self.qlen -= 1;
        if self.ingress {
            self.advance_shaper(t, &pkt, now, true);
        }
        ctx.drop(pkt, DropCause::Overflow);
    }
}

impl Qdisc for Cake {
    /// `cake_enqueue`.
    fn enqueue(&mut self, now_t: Time, pkt: Packet, ctx: &mut QdiscCtx) {
        let now = now_t.0 as i64;
        // All packets read as DSCP 0: tin 0 in besteffort and diffserv3.
        let tin = 0;
        let mode = self.mode;
        let idx = self.tins[tin].hash(&pkt, mode);
        // Keep the shaper's schedule from going stale across idle periods.
        if self.tins[tin].tin_backlog == 0 {
            self.shaper_resume(tin, now);
        }
        let len = pkt.wire_len();
        self.tins[tin].flows[idx].q.push_back(pkt);
        let ack = match self.ack_filter {
            AckFilterMode::None => None,
            m => Self::ack_filter(&self.tins[tin].flows[idx].q, m == AckFilterMode::Aggressive)
                .and_then(|i| self.tins[tin].flows[idx].q.remove(i)),
        };
        let ack_len = ack.as_ref().map_or(0, |a| a.wire_len());
        if let Some(a) = ack {
            self.buffer_used = self.buffer_used + len as u64 - ack_len as u64;
            if self.ingress {
                self.advance_shaper(tin, &a, now, true);
            }
            ctx.drop(a, DropCause::Aqm);
        } else {
            self.qlen += 1;
            self.buffer_used += len as u64;
        }
        let b = &mut self.tins[tin];
        b.backlogs[idx] = b.backlogs[idx] + len - ack_len;
        b.tin_backlog = b.tin_backlog + len - ack_len;
        self.backlog = self.backlog + len as u64 - ack_len as u64;

        // Flow chain: a new or decaying flow becomes sparse with a fresh
        // quantum; a sparse-waiting one turns out to be bulk.
        match b.flows[idx].set {
            FlowSet::None | FlowSet::Decaying => {
                if b.flows[idx].set == FlowSet::None {
                    b.push_back(NEW, idx);
                } else {
                    b.decaying_flow_count -= 1;
                    b.move_tail(idx, NEW);
                }
                b.flows[idx].set = FlowSet::Sparse;
                b.sparse_flow_count += 1;
                b.flows[idx].deficit = b.flow_quantum(idx, mode, ctx) as i32;
            }
            FlowSet::SparseWait => {
                b.flows[idx].set = FlowSet::Bulk;
                b.sparse_flow_count -= 1;
                b.bulk_flow_count += 1;
                b.inc_srchost(idx, mode);
                b.inc_dsthost(idx, mode);
            }
            _ => {}
        }
        while self.buffer_used > self.buffer_limit {
            self.drop_longest(now, ctx);
        }
    }

    /// `cake_dequeue`.
    fn dequeue(&mut self, now_t: Time, ctx: &mut QdiscCtx) -> Option<Packet> {
        let now = now_t.0 as i64;
        let mode = self.mode;
        self.wake = None;
        let mut first_flow = true;
        'begin: loop {
            if self.qlen == 0 {
                return None;
            }
            // Global hard shaper.
            if self.shaper_holds(now) {
                return None;
            }
            // Choose a tin.
            if !self.choose_tin(now) {
                return None;
            }
            let tin = self.cur_tin;
            'retry: loop {
                let b = &mut self.tins[tin];
                let idx = match (first_flow, b.first(DECAYING)) {
                    (true, Some(i)) => i,
                    _ => match b.first(NEW).or(b.first(OLD)).or(b.first(DECAYING)) {
                        Some(i) => i,
                        None => continue 'begin,
                    },
                };
                first_flow = false;
                // DRR++: a flow out of deficit goes to the back of old_flows.
                if b.flows[idx].deficit <= 0 {
                    if b.flows[idx].set == FlowSet::Sparse {
                        if !b.flows[idx].q.is_empty() {
                            b.sparse_flow_count -= 1;
                            b.bulk_flow_count += 1;
                            b.inc_srchost(idx, mode);
                            b.inc_dsthost(idx, mode);
                            b.flows[idx].set = FlowSet::Bulk;
                        } else {
                            b.flows[idx].set = FlowSet::SparseWait;
                        }
                    }
                    let q = b.flow_quantum(idx, mode, ctx);
                    b.flows[idx].deficit += q as i32;
                    b.move_tail(idx, OLD);
                    continue 'retry;
                }
                // Take a packet through COBALT.
                let pkt = loop {
                    let Some(mut pkt) = self.dequeue_one(tin, idx) else {
                        let b = &mut self.tins[tin];
                        let cparams = b.cparams;
                        if b.flows[idx].cvars.queue_empty(&cparams, now) {
                            b.unresponsive_flow_count -= 1;
                        }
                        let (cv, set) = (b.flows[idx].cvars, b.flows[idx].set);
                        if cv.p_drop != 0 || cv.count != 0 || now < cv.drop_next {
                            // Keep it listed until its AQM state has decayed.
                            b.move_tail(idx, DECAYING);
                            match set {
                                FlowSet::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_srchost(idx, mode);
                                    b.dec_dsthost(idx, mode);
                                    b.decaying_flow_count += 1;
                                }
                                FlowSet::Sparse | FlowSet::SparseWait => {
                                    b.sparse_flow_count -= 1;
                                    b.decaying_flow_count += 1;
                                }
                                _ => {}
                            }
                            b.flows[idx].set = FlowSet::Decaying;
                        } else {
                            b.unlink(idx);
                            match set {
                                FlowSet::Sparse | FlowSet::SparseWait => b.sparse_flow_count -= 1,
                                FlowSet::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_srchost(idx, mode);
                                    b.dec_dsthost(idx, mode);
                                }
                                _ => b.decaying_flow_count -= 1,
                            }
                            b.flows[idx].set = FlowSet::None;
                        }
                        continue 'begin;
                    };
                    let b = &mut self.tins[tin];
                    let bulk = if self.ingress {
                        b.bulk_flow_count as u32
                    } else {
                        0
                    };
                    let cparams = b.cparams;
                    let v = b.flows[idx]
                        .cvars
                        .should_drop(&cparams, now, &pkt, bulk, ctx);
                    // The last packet of a queue is sent even if COBALT said drop.
                    if !v.drop || b.flows[idx].q.is_empty() {
                        if v.ce {
                            set_ce(&mut pkt, ctx);
                        }
                        break pkt;
                    }
                    if self.ingress {
                        let len = self.advance_shaper(tin, &pkt, now, true) as i32;
                        let b = &mut self.tins[tin];
                        b.flows[idx].deficit -= len;
                        b.tin_deficit -= len;
                        ctx.drop(pkt, DropCause::Aqm);
                        continue 'retry;
                    }
                    ctx.drop(pkt, DropCause::Aqm);
                };
                let len = self.advance_shaper(tin, &pkt, now, false) as i32;
                let b = &mut self.tins[tin];
                b.flows[idx].deficit -= len;
                b.tin_deficit -= len;
                return Some(pkt);
            }
        }
    }

    fn backlog_bytes(&self) -> Bytes {
        Bytes(self.backlog)
    }

    fn backlog_packets(&self) -> u32 {
        self.qlen
    }

    fn next_ready(&self) -> Option<Time> {
        if self.qlen > 0 {
            self.wake
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{
        assert_same_seed_same_drops, drive, env, mean_secs, Bench, Source,
    };
    use crate::qdisc::{parse_params, QdiscConfig};
    use crate::units::Rate;

    pub(super) const RATE: Rate = Rate(100_000_000);

    fn setup(params: serde_json::Value, limit: Limit) -> CakeSetup {
        CakeSetup::resolve(parse_params(&params).unwrap(), &env(limit)).unwrap()
    }

    pub(super) fn cake(params: serde_json::Value, limit: Limit) -> Cake {
        Cake::new(&setup(params, limit))
    }

    pub(super) fn host_src(flow: u32, src: u16, dst: u16, every: Dur) -> Source {
        Source {
            src_host: src,
            dst_host: dst,
            ..Source::new(flow, every)
        }
    }

    #[test]
    fn queue_never_exceeds_its_limit_under_overload() {
        // cake_enqueue: while buffer_used > buffer_limit, cake_drop.
        for (limit, bytes) in [
            (Limit::Bytes(100_000), 100_000u64),
            (Limit::Packets(50), 50 * 1514),
        ] {
            let mut b = Bench::new(cake(serde_json::Value::Null, limit), 1);
            assert_eq!(b.q.buffer_limit(), bytes);
            let src: Vec<Source> = (0..6).map(|f| Source::new(f, Dur::from_us(40))).collect();
            let out = drive(&mut b, &src, RATE, Time(1_000_000_000));
            assert!(out.max_backlog.0 <= bytes, "{out:?}");
            assert!(b.drops() > 1000);
        }
    }

    #[test]
    fn sparse_flow_sees_near_zero_sojourn_next_to_a_bulk_flow() {
        // DRR++ (cake_dequeue): a flow arriving with an empty queue is put on
        // new_flows and served next, so it waits at most one packet time.
        let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(1_000_000)), 1);
        let bulk = Source::new(1, Dur::from_us(100));
        let sparse = Source {
            payload: 200,
            start: Time(1_000_000),
            ..Source::new(2, Dur::from_ms(10))
        };
        let out = drive(&mut b, &[bulk, sparse], RATE, Time(2_000_000_000));
        let one_mtu = RATE.tx_time(Bytes(1514));
        let s = out.sojourns_of(2);
        assert!(s.len() > 190 && s.iter().all(|&d| d <= one_mtu));
        assert!(mean_secs(&out.sojourns_of(1)[1000..]) > 0.002);
    }

    #[test]
    fn buffer_limit_rules() {
        // cake_reconfigure: memlimit, else 4 x rate x interval (>= 4 MiB)
        // when shaped, else unlimited; then at most limit x MTU.
        let s = |p, l| cake(p, l).buffer_limit();
        assert_eq!(
            s(serde_json::Value::Null, Limit::Packets(10240)),
            10240 * 1514
        );
        assert_eq!(s(serde_json::Value::Null, Limit::Packets(100)), 100 * 1514);
        assert_eq!(s(serde_json::Value::Null, Limit::Bytes(300_000)), 300_000);
        let shaped = serde_json::json!({"bandwidth": "100Mbps"});
        assert_eq!(s(shaped.clone(), Limit::Packets(10240)), 5_000_000);
        let slow = serde_json::json!({"bandwidth": "10Mbps"});
        assert_eq!(s(slow, Limit::Packets(10240)), 4 << 20);
        let m = serde_json::json!({"memlimit": "2MB"});
        assert_eq!(s(m, Limit::Packets(100)), 2_000_000);
    }

    #[test]
    fn same_seed_gives_same_drops() {
        let run = |seed| {
            let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(80_000)), seed);
            let src: Vec<Source> = (0..4)
                .map(|f| host_src(f, f as u16 % 2, 9, Dur::from_us(70)))
                .collect();
            drive(&mut b, &src, RATE, Time(1_000_000_000));
            b.trail()
        };
        assert_same_seed_same_drops(run, 1, Some(2), 101);
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        let e = env(Limit::Bytes(1_000_000));
        let bad = [
            (serde_json::json!({"rtt": "-1ms"}), "rtt:"),
            (serde_json::json!({"target": "0s"}), "target:"),
            (serde_json::json!({"bandwidth": "fast"}), "bandwidth:"),
            (serde_json::json!({"overhead": 300}), "overhead:"),
            (serde_json::json!({"mpu": 1000}), "mpu:"),
            (serde_json::json!({"memlimit": "0B"}), "memlimit:"),
            (serde_json::json!({"flow_mode": "triple"}), "flow_mode:"),
            (serde_json::json!({"diffserv": "diffserv9"}), "diffserv:"),
            (serde_json::json!({"ack_filter": "yes"}), "ack_filter:"),
            (
                serde_json::json!({"bandwith": "1Mbps"}),
                "unknown field `bandwith`",
            ),
        ];
        for (p, name) in bad {
            let err = QdiscConfig::parse("cake", &p, &e).unwrap_err();
            assert!(err.contains(name), "{p}: {err}");
        }
        let c = QdiscConfig::parse(
            "cake",
            &serde_json::json!({"flow_mode": "dual-dsthost", "diffserv": "besteffort"}),
            &e,
        )
        .unwrap();
        assert_eq!(c.name(), "cake");
        let _ = c.build();
    }
}
