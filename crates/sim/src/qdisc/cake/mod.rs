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

use super::{
    check_range, flow_hash, host_hash, param_bytes, param_dur, set_ce, DropCause, Limit, Qdisc,
    QdiscCtx, QdiscEnv, QdiscParams,
};
use crate::packet::{flags, Kind, Packet, LINK_FRAMING};
use crate::units::{parse_rate, Bytes, Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const CAKE_QUEUES: usize = 1024;
const CAKE_SET_WAYS: usize = 8;
/// sch_cake.c `cake_init`: packet limit.
const DEFAULT_LIMIT: u32 = 10240;

/// tc-cake's flow isolation keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlowMode {
    #[serde(rename = "flowblind")]
    FlowBlind,
    #[serde(rename = "srchost")]
    SrcHost,
    #[serde(rename = "dsthost")]
    DstHost,
    #[serde(rename = "hosts")]
    Hosts,
    #[serde(rename = "flows")]
    Flows,
    #[serde(rename = "dual-srchost")]
    DualSrcHost,
    #[serde(rename = "dual-dsthost")]
    DualDstHost,
    #[serde(rename = "triple-isolate")]
    TripleIsolate,
}

impl FlowMode {
    /// pkt_sched.h CAKE_FLOW_*: bit 1 source host, bit 2 destination
    /// host, bit 4 flows.
    fn bits(self) -> u8 {
        match self {
            FlowMode::FlowBlind => 0,
            FlowMode::SrcHost => 1,
            FlowMode::DstHost => 2,
            FlowMode::Hosts => 3,
            FlowMode::Flows => 4,
            FlowMode::DualSrcHost => 5,
            FlowMode::DualDstHost => 6,
            FlowMode::TripleIsolate => 7,
        }
    }
}

const FLOW_SRC_IP: u8 = 1;
const FLOW_DST_IP: u8 = 2;
const FLOW_FLOWS: u8 = 4;
/// `cake_dsrc`: per-source-host fairness (dual-srchost, triple-isolate).
fn dsrc(mode: u8) -> bool {
    mode & 5 == 5
}
/// `cake_ddst`: per-destination-host fairness (dual-dsthost, triple-isolate).
fn ddst(mode: u8) -> bool {
    mode & 6 == 6
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Diffserv {
    Besteffort,
    Diffserv3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckFilterMode {
    None,
    Conservative,
    Aggressive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    None,
    Atm,
    Ptm,
}

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

// ---------------------------------------------------------------------------
// COBALT

/// sch_cake.c `struct cobalt_params`, times in ns.
#[derive(Clone, Copy, Debug, Default)]
struct CobaltParams {
    interval: u64,
    target: u64,
    mtu_time: u64,
    p_inc: u32,
    p_dec: u32,
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
struct Verdict {
    drop: bool,
    /// The packet is ECT and CoDel chose to signal: CE-mark it if it is sent.
    ce: bool,
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
        t + super::reciprocal_scale(interval as u32, rec_inv_sqrt) as i64
    }

    /// `cobalt_queue_full`: an overflow drop hit this queue. True when BLUE
    /// just became active.
    fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
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
    fn queue_empty(&mut self, p: &CobaltParams, now: i64) -> bool {
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
    fn should_drop(
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

// ---------------------------------------------------------------------------
// Flow lists (Linux list_head, by index)

const NIL: u16 = u16::MAX;
const NEW: usize = 0;
const OLD: usize = 1;
const DECAYING: usize = 2;

#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u16,
    next: u16,
    /// Which list, or NIL.
    list: u16,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            prev: NIL,
            next: NIL,
            list: NIL,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Lists {
    head: [u16; 3],
    tail: [u16; 3],
}

impl Default for Lists {
    fn default() -> Self {
        Lists {
            head: [NIL; 3],
            tail: [NIL; 3],
        }
    }
}

// ---------------------------------------------------------------------------
// Queues, hosts, tins

/// sch_cake.c CAKE_SET_*.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum FlowSet {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, but in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Default)]
struct Flow {
    q: VecDeque<Packet>,
    deficit: i32,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: FlowSet,
    link: Link,
}

#[derive(Clone, Copy, Default)]
struct Host {
    srchost_tag: u32,
    dsthost_tag: u32,
    srchost_bulk_flow_count: u16,
    dsthost_bulk_flow_count: u16,
}

struct Tin {
    flows: Vec<Flow>,
    backlogs: Vec<u32>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    flow_quantum: u16,
    cparams: CobaltParams,
    bulk_flow_count: u16,
    sparse_flow_count: u16,
    decaying_flow_count: u16,
    unresponsive_flow_count: u16,
    lists: Lists,
    time_next_packet: i64,
    tin_rate_ns: u64,
    tin_rate_shft: u16,
    tin_quantum: u16,
    tin_deficit: i32,
    tin_backlog: u32,
}

impl Tin {
    fn new() -> Self {
        Tin {
            flows: (0..CAKE_QUEUES).map(|_| Flow::default()).collect(),
            backlogs: vec![0; CAKE_QUEUES],
            tags: vec![0; CAKE_QUEUES],
            hosts: vec![Host::default(); CAKE_QUEUES],
            flow_quantum: 1514,
            cparams: CobaltParams::default(),
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            lists: Lists::default(),
            time_next_packet: 0,
            tin_rate_ns: 0,
            tin_rate_shft: 0,
            tin_quantum: 0,
            tin_deficit: 0,
            tin_backlog: 0,
        }
    }

    /// `cake_set_rate`: shaper rate (bytes/s, 0 = none), flow quantum and
    /// COBALT parameters of this tin.
    fn set_rate(&mut self, rate: u64, mtu: u32, target_ns: u64, rtt_est_ns: u64) {
        const MIN_RATE: u64 = 64;
        let mut rate_shft: u16 = 0;
        let mut rate_ns: u64 = 0;
        self.flow_quantum = 1514;
        if rate != 0 {
            self.flow_quantum = (rate >> 12).clamp(300, 1514) as u16;
            rate_shft = 34;
            rate_ns = (1_000_000_000u64 << rate_shft) / rate.max(MIN_RATE);
            while rate_ns >> 34 != 0 {
                rate_ns >>= 1;
                rate_shft -= 1;
            }
        }
        self.tin_rate_ns = rate_ns;
        self.tin_rate_shft = rate_shft;
        let byte_target_ns = (mtu as u64 * rate_ns) >> rate_shft;
        let target = (byte_target_ns * 3 / 2).max(target_ns);
        self.cparams = CobaltParams {
            target,
            interval: (rtt_est_ns + target - target_ns).max(target * 2),
            mtu_time: byte_target_ns,
            p_inc: 1 << 24, // 1/256
            p_dec: 1 << 20, // 1/4096
        };
    }

    fn active(&self) -> bool {
        self.sparse_flow_count + self.bulk_flow_count > 0
    }

    fn first(&self, list: usize) -> Option<usize> {
        let h = self.lists.head[list];
        (h != NIL).then_some(h as usize)
    }

    fn push_back(&mut self, list: usize, i: usize) {
        let tail = self.lists.tail[list];
        self.flows[i].link = Link {
            prev: tail,
            next: NIL,
            list: list as u16,
        };
        if tail == NIL {
            self.lists.head[list] = i as u16;
        } else {
            self.flows[tail as usize].link.next = i as u16;
        }
        self.lists.tail[list] = i as u16;
    }

    /// `list_del_init`.
    fn unlink(&mut self, i: usize) {
        let Link { prev, next, list } = self.flows[i].link;
        if list == NIL {
            return;
        }
        let list = list as usize;
        if prev == NIL {
            self.lists.head[list] = next;
        } else {
            self.flows[prev as usize].link.next = next;
        }
        if next == NIL {
            self.lists.tail[list] = prev;
        } else {
            self.flows[next as usize].link.prev = prev;
        }
        self.flows[i].link = Link::default();
    }

    /// `list_move_tail`.
    fn move_tail(&mut self, i: usize, list: usize) {
        self.unlink(i);
        self.push_back(list, i);
    }

    fn inc_srchost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].srchost as usize];
        if dsrc(mode) && (h.srchost_bulk_flow_count as usize) < CAKE_QUEUES {
            h.srchost_bulk_flow_count += 1;
        }
    }
    fn dec_srchost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].srchost as usize];
        if dsrc(mode) && h.srchost_bulk_flow_count > 0 {
            h.srchost_bulk_flow_count -= 1;
        }
    }
    fn inc_dsthost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].dsthost as usize];
        if ddst(mode) && (h.dsthost_bulk_flow_count as usize) < CAKE_QUEUES {
            h.dsthost_bulk_flow_count += 1;
        }
    }
    fn dec_dsthost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].dsthost as usize];
        if ddst(mode) && h.dsthost_bulk_flow_count > 0 {
            h.dsthost_bulk_flow_count -= 1;
        }
    }

    /// `cake_get_flow_quantum`: the tin's flow quantum divided by the
    /// flow's host load, dithered with a random 16-bit value.
    fn flow_quantum(&self, i: usize, mode: u8, ctx: &mut QdiscCtx) -> u16 {
        let f = &self.flows[i];
        let mut host_load: u16 = 1;
        if dsrc(mode) {
            host_load = host_load.max(self.hosts[f.srchost as usize].srchost_bulk_flow_count);
        }
        if ddst(mode) {
            host_load = host_load.max(self.hosts[f.dsthost as usize].dsthost_bulk_flow_count);
        }
        let dither = (ctx.rng.next_u32() >> 16) as u64;
        ((self.flow_quantum as u64 * quantum_div(host_load) as u64 + dither) >> 16) as u16
    }

    /// `cake_hash`: the queue of a packet, with 8-way set association, and
    /// host queues for the dual/triple modes.
    fn hash(&mut self, pkt: &Packet, mode: u8) -> usize {
        if mode == 0 {
            return 0;
        }
        let srchost_hash = host_hash(pkt.src_host);
        let dsthost_hash = host_hash(pkt.dst_host);
        let mut fh = if mode & FLOW_FLOWS != 0 {
            flow_hash(pkt.flow)
        } else {
            0
        };
        if mode & FLOW_FLOWS == 0 {
            if mode & FLOW_SRC_IP != 0 {
                fh ^= srchost_hash;
            }
            if mode & FLOW_DST_IP != 0 {
                fh ^= dsthost_hash;
            }
        }
        let reduced = fh as usize % CAKE_QUEUES;
        if self.tags[reduced] == fh && self.flows[reduced].set != FlowSet::None {
            return reduced;
        }
        let inner = reduced % CAKE_SET_WAYS;
        let outer = reduced - inner;
        let mut allocate_src = false;
        let mut allocate_dst = false;
        let mut k = inner;
        let mut found = None;
        // A queue of the set already reserved for this flow?
        for _ in 0..CAKE_SET_WAYS {
            if self.tags[outer + k] == fh {
                if self.flows[outer + k].set == FlowSet::None {
                    allocate_src = dsrc(mode);
                    allocate_dst = ddst(mode);
                }
                found = Some(k);
                break;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        // Else an empty one.
        if found.is_none() {
            for _ in 0..CAKE_SET_WAYS {
                if self.flows[outer + k].set == FlowSet::None {
                    allocate_src = dsrc(mode);
                    allocate_dst = ddst(mode);
                    found = Some(k);
                    break;
                }
                k = (k + 1) % CAKE_SET_WAYS;
            }
        }
        // Else collide into the home queue and take it over.
        if found.is_none() {
            allocate_src = dsrc(mode);
            allocate_dst = ddst(mode);
            if self.flows[outer + k].set == FlowSet::Bulk {
                self.dec_srchost(outer + k, mode);
                self.dec_dsthost(outer + k, mode);
            }
        }
        let idx = outer + k;
        self.tags[idx] = fh;
        if allocate_src {
            let hidx = self.host_slot(srchost_hash, true);
            self.flows[idx].srchost = hidx as u16;
            if self.flows[idx].set == FlowSet::Bulk {
                self.inc_srchost(idx, mode);
            }
        }
        if allocate_dst {
            let hidx = self.host_slot(dsthost_hash, false);
            self.flows[idx].dsthost = hidx as u16;
            if self.flows[idx].set == FlowSet::Bulk {
                self.inc_dsthost(idx, mode);
            }
        }
        idx
    }

    /// The host queue of a host hash: one tagged with it in its set, else
    /// one without bulk flows (else the last way tried), which is re-tagged.
    fn host_slot(&mut self, h: u32, src: bool) -> usize {
        let idx = h as usize % CAKE_QUEUES;
        let inner = idx % CAKE_SET_WAYS;
        let outer = idx - inner;
        let tag = |host: &Host| {
            if src {
                host.srchost_tag
            } else {
                host.dsthost_tag
            }
        };
        let count = |host: &Host| {
            if src {
                host.srchost_bulk_flow_count
            } else {
                host.dsthost_bulk_flow_count
            }
        };
        let mut k = inner;
        for _ in 0..CAKE_SET_WAYS {
            if tag(&self.hosts[outer + k]) == h {
                return outer + k;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        for _ in 0..CAKE_SET_WAYS {
            if count(&self.hosts[outer + k]) == 0 {
                break;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        let host = &mut self.hosts[outer + k];
        if src {
            host.srchost_tag = h;
        } else {
            host.dsthost_tag = h;
        }
        outer + k
    }
}

/// `quantum_div[]`: 65535 / n, with entry 0 = 65535.
fn quantum_div(n: u16) -> u16 {
    u16::MAX.checked_div(n).unwrap_or(u16::MAX)
}

/// `before()` / `after()` on sequence numbers (here segment numbers).
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
fn seq_after(a: u32, b: u32) -> bool {
    seq_before(b, a)
}

/// ACKs and SYN-ACKs travel against the data.
fn reverse_direction(k: Kind) -> bool {
    matches!(k, Kind::Ack | Kind::SynAck)
}

/// `cake_tcph_sack_compare`: is `b`'s SACK information at least `a`'s?
/// -1: `a` has something `b` lacks (or a D-SACK), 0: the same, 1: `b` has more.
fn sack_compare(a: &Packet, b: &Packet) -> i32 {
    let (sa, sb) = (a.sacks(), b.sacks());
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for x in sa {
        if seq_before(x.start, a.seq) {
            return -1; // D-SACK: always keep
        }
        bytes_a = bytes_a.wrapping_add(x.end.wrapping_sub(x.start));
        let mut found = false;
        for y in sb {
            if first {
                bytes_b = bytes_b.wrapping_add(y.end.wrapping_sub(y.start));
            }
            if !seq_after(y.start, x.start) && !seq_before(y.end, x.end) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    if bytes_b > bytes_a {
        1
    } else {
        0
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
        let mut tins: Vec<Tin> = Vec::new();
        match c.diffserv {
            Diffserv::Besteffort => {
                let mut t = Tin::new();
                t.set_rate(rate, s.mtu, t_ns, i_ns);
                t.tin_quantum = 65535;
                tins.push(t);
            }
            Diffserv::Diffserv3 => {
                // cake_config_diffserv3: Best Effort, Bulk (1/16), Voice (1/4).
                for (shift, quantum) in [(0, 1024u16), (4, 64), (2, 256)] {
                    let mut t = Tin::new();
                    t.set_rate(rate >> shift, s.mtu, t_ns, i_ns);
                    t.tin_quantum = quantum;
                    tins.push(t);
                }
            }
        }
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

    /// `cake_calc_overhead`: the length the shaper charges.
    fn adjusted_len(&self, wire_len: u32) -> u32 {
        let mut len = wire_len as i32;
        if let Some(o) = self.overhead {
            // Strip the Ethernet header (the network offset), then add `overhead`.
            len -= LINK_FRAMING as i32;
            len += o;
        }
        let mut len = len.max(self.mpu as i32) as u32;
        match self.atm {
            Framing::None => {}
            Framing::Atm => len = len.div_ceil(48) * 53,
            Framing::Ptm => len += len.div_ceil(64),
        }
        len
    }

    /// `cake_advance_shaper`: charge a packet to the tin and global
    /// schedules; returns its adjusted length.
    fn advance_shaper(&mut self, tin: usize, pkt: &Packet, now: i64, drop: bool) -> u32 {
        let len = self.adjusted_len(pkt.wire_len());
        if self.rate_ns != 0 {
            let b = &mut self.tins[tin];
            let tin_dur = ((len as u64 * b.tin_rate_ns) >> b.tin_rate_shft) as i64;
            let global_dur = ((len as u64 * self.rate_ns) >> self.rate_shft) as i64;
            let failsafe_dur = global_dur + (global_dur >> 1);
            if b.time_next_packet < now {
                b.time_next_packet += tin_dur;
            } else if b.time_next_packet < now + tin_dur {
                b.time_next_packet = now + tin_dur;
            }
            self.time_next_packet += global_dur;
            if !drop {
                self.failsafe_next_packet += failsafe_dur;
            }
        }
        len
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

    /// `cake_ack_filter`: after `pkt` joined the tail of queue `q`, find an
    /// older pure ACK of the same connection and direction that it makes
    /// redundant: no more cumulative ACK, SACK blocks covered by the new
    /// one's, same ECE/CWR flags as the other eligible ACKs. Conservative
    /// mode drops the oldest eligible ACK only once two are found;
    /// aggressive mode also drops a single eligible ACK sitting right in
    /// front of the new one with the same ECE/CWR. Returns its position.
    fn ack_filter(q: &VecDeque<Packet>, aggressive: bool) -> Option<usize> {
        let n = q.len();
        if n < 2 {
            return None;
        }
        let t = &q[n - 1];
        // The trigger needs ACK without SYN; in our model only pure ACKs
        // can share a 5-tuple with other pure ACKs (data flows the other way).
        if t.kind != Kind::Ack {
            return None;
        }
        let ecn_bits = |p: &Packet| p.flags & (flags::ECE | flags::CWR);
        let mut elig: Option<usize> = None;
        let mut elig_flags = 0;
        let mut num_found = 0;
        for (i, c) in q.iter().enumerate().take(n - 1) {
            let same_tuple = c.flow == t.flow
                && c.src_host == t.src_host
                && c.dst_host == t.dst_host
                && reverse_direction(c.kind);
            if !same_tuple {
                continue;
            }
            // An ECE/CWR change ends the run of droppable ACKs before it.
            if elig.is_some() && ecn_bits(c) != elig_flags {
                elig = None;
                num_found -= 1;
            }
            // Only pure ACKs (no SYN, no data), not acking beyond the trigger.
            if c.kind != Kind::Ack || c.payload != 0 || seq_after(c.seq, t.seq) {
                continue;
            }
            let sack = sack_compare(c, t);
            if sack < 0 || (c.seq == t.seq && sack == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(i);
                elig_flags = ecn_bits(c);
            }
            num_found += 1;
            if num_found > 1 {
                return elig;
            }
        }
        match elig {
            Some(i) if aggressive && i == n - 2 && elig_flags == ecn_bits(t) => Some(i),
            _ => None,
        }
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
            let b = &mut self.tins[tin];
            if b.time_next_packet < now {
                b.time_next_packet = now;
            }
            if self.qlen == 0 {
                if self.time_next_packet < now {
                    self.failsafe_next_packet = now;
                    self.time_next_packet = now;
                } else if self.time_next_packet > now && self.failsafe_next_packet > now {
                    let next = self.time_next_packet.min(self.failsafe_next_packet);
                    self.wake = Some(Time(next as u64));
                }
            }
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
            if self.time_next_packet > now && self.failsafe_next_packet > now {
                let next = self.time_next_packet.min(self.failsafe_next_packet);
                self.wake = Some(Time(next as u64));
                return None;
            }
            // Choose a tin.
            if self.rate_ns == 0 {
                // Unshaped: DRR over tins.
                let (mut wrapped, mut empty) = (false, true);
                loop {
                    let b = &mut self.tins[self.cur_tin];
                    if b.tin_deficit >= 0 && b.active() {
                        break;
                    }
                    if b.tin_deficit <= 0 {
                        b.tin_deficit += b.tin_quantum as i32;
                    }
                    if b.active() {
                        empty = false;
                    }
                    self.cur_tin += 1;
                    if self.cur_tin >= self.tins.len() {
                        self.cur_tin = 0;
                        if wrapped {
                            if empty {
                                return None;
                            }
                        } else {
                            wrapped = true;
                        }
                    }
                }
            } else {
                // Shaped: highest-priority tin that is due, else the earliest.
                let mut best_time = i64::MAX;
                let mut best_tin = 0;
                for (t, b) in self.tins.iter().enumerate() {
                    if b.active() {
                        let time_to_pkt = b.time_next_packet - now;
                        if time_to_pkt <= 0 || time_to_pkt <= best_time {
                            best_time = time_to_pkt;
                            best_tin = t;
                        }
                    }
                }
                self.cur_tin = best_tin;
                if !self.tins[best_tin].active() {
                    return None;
                }
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
    use crate::packet::{Ecn, SackBlock};
    use crate::qdisc::testkit::{
        assert_same_seed_same_drops, drive, env, mean_secs, pkt, Bench, Source,
    };
    use crate::qdisc::{parse_params, QdiscConfig, QdiscEvent};
    use crate::units::Rate;

    const RATE: Rate = Rate(100_000_000);

    fn setup(params: serde_json::Value, limit: Limit) -> CakeSetup {
        CakeSetup::resolve(parse_params(&params).unwrap(), &env(limit)).unwrap()
    }

    fn cake(params: serde_json::Value, limit: Limit) -> Cake {
        Cake::new(&setup(params, limit))
    }

    fn host_src(flow: u32, src: u16, dst: u16, every: Dur) -> Source {
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
    fn triple_isolate_shares_per_host_first() {
        // cake_get_flow_quantum: in triple-isolate a flow's quantum is divided
        // by its host's bulk-flow count, so host A with one flow and host B
        // with four (to distinct destination hosts) get half the link each.
        let srcs: Vec<Source> = std::iter::once(host_src(0, 1, 10, Dur::from_us(60)))
            .chain((1..5).map(|f| host_src(f, 2, 11, Dur::from_us(60))))
            .collect();
        let mut b = Bench::new(cake(serde_json::Value::Null, Limit::Bytes(1_000_000)), 1);
        let out = drive(&mut b, &srcs, RATE, Time(3_000_000_000));
        let a = out.bytes(0) as f64;
        let hb: f64 = (1..5).map(|f| out.bytes(f) as f64).sum();
        assert!((a / hb - 1.0).abs() < 0.03, "A {a} B {hb}");
        // Within host B the four flows share equally.
        for f in 1..5 {
            let x = out.bytes(f) as f64 / (hb / 4.0);
            assert!((x - 1.0).abs() < 0.05, "flow {f}: {x}");
        }
        // Per-flow isolation instead: A gets a fifth.
        let mut b = Bench::new(
            cake(
                serde_json::json!({"flow_mode": "flows"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        let out = drive(&mut b, &srcs, RATE, Time(3_000_000_000));
        let a = out.bytes(0) as f64;
        let total: f64 = (0..5).map(|f| out.bytes(f) as f64).sum();
        assert!((a / total - 0.2).abs() < 0.01, "{}", a / total);
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

    #[test]
    fn shaper_holds_the_configured_rate_with_overhead() {
        // cake_advance_shaper: each packet advances the schedule by its
        // adjusted length / rate; dequeue waits for it (next_ready).
        for (params, adj) in [
            (serde_json::json!({"bandwidth": "20Mbps"}), 1514.0),
            // overhead 38 (tc's "ethernet" keyword): 1514 - 14 + 38.
            (
                serde_json::json!({"bandwidth": "20Mbps", "overhead": 38}),
                1538.0,
            ),
        ] {
            let mut b = Bench::new(cake(params, Limit::Bytes(10_000_000)), 1);
            let src = Source::new(0, Dur::from_us(240)); // 50 Mbps offered
            let out = drive(&mut b, &[src], RATE, Time(2_000_000_000));
            let wire_rate = out.bytes(0) as f64 * 8.0 / 2.0;
            let want = 20e6 * 1514.0 / adj;
            assert!(
                (wire_rate / want - 1.0).abs() < 0.01,
                "{wire_rate} vs {want}"
            );
        }
    }

    #[test]
    fn overhead_mpu_and_cell_framing_adjust_the_length() {
        // cake_calc_overhead.
        let c = |p: serde_json::Value| cake(p, Limit::Bytes(1_000_000));
        assert_eq!(c(serde_json::Value::Null).adjusted_len(1514), 1514);
        assert_eq!(
            c(serde_json::json!({"overhead": 10})).adjusted_len(1514),
            1510
        );
        // ATM: 48-byte cells of 53 bytes.
        let atm = c(serde_json::json!({"overhead": 10, "atm": "atm"}));
        assert_eq!(atm.adjusted_len(1514), 1510usize.div_ceil(48) as u32 * 53);
        // PTM: one byte per 64 or part thereof.
        let ptm = c(serde_json::json!({"overhead": 10, "atm": "ptm"}));
        assert_eq!(ptm.adjusted_len(1514), 1510 + 24);
        // MPU: a 66-byte ACK less its Ethernet header is raised to 64.
        let mpu = c(serde_json::json!({"overhead": 0, "mpu": 64}));
        assert_eq!(mpu.adjusted_len(66), 64);
    }

    #[test]
    fn per_tin_target_and_interval_follow_the_rate() {
        // cake_set_rate: target = max(1.5 x MTU time, 5 ms), interval =
        // max(rtt + target - 5 ms, 2 target); unshaped: 5 ms and 100 ms.
        let q = cake(serde_json::Value::Null, Limit::Bytes(1_000_000));
        assert_eq!(q.tin_target_interval(0), (5_000_000, 100_000_000));
        let q = cake(
            serde_json::json!({"bandwidth": "1Mbps"}),
            Limit::Bytes(1_000_000),
        );
        let (t, i) = q.tin_target_interval(0);
        // 1514 B at 125000 B/s = 12.112 ms; x 1.5 = 18.168 ms.
        assert!((t as f64 / 18.168e6 - 1.0).abs() < 1e-3, "{t}");
        assert_eq!(i, 100_000_000 + t - 5_000_000);
        // diffserv3's Bulk tin runs at 1/16 of the rate.
        let (tb, _) = q.tin_target_interval(1);
        assert!((tb as f64 / (16.0 * 18.168e6) - 1.0).abs() < 1e-3, "{tb}");
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
    fn set_associative_hashing_gives_a_set_of_eight_before_colliding() {
        // cake_hash: a flow takes a free way of its 8-way set; the ninth
        // flow of a full set collides into its home queue.
        let home = |f: u32| flow_hash(f) as usize % CAKE_QUEUES;
        let target = home(0);
        let flows: Vec<u32> = (0u32..).filter(|&f| home(f) == target).take(9).collect();
        let mut b = Bench::new(
            cake(
                serde_json::json!({"flow_mode": "flows"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        for &f in &flows {
            b.enqueue(Time(0), pkt(f, 0));
        }
        let set = target - target % CAKE_SET_WAYS;
        let used: Vec<usize> = (0..CAKE_QUEUES)
            .filter(|&i| !b.q.tins[0].flows[i].q.is_empty())
            .collect();
        assert_eq!(used, (set..set + 8).collect::<Vec<_>>());
        assert_eq!(b.q.tins[0].flows[target].q.len(), 2);
    }

    fn ack(flow: u32, cum: u32, sack: &[SackBlock]) -> Packet {
        let mut a = Packet::ack(flow, cum, sack);
        a.src_host = 5;
        a.dst_host = 6;
        a
    }

    fn queued(b: &Bench<Cake>) -> Vec<u32> {
        let t = &b.q.tins[0];
        (0..CAKE_QUEUES)
            .flat_map(|i| t.flows[i].q.iter().map(|p| p.seq))
            .collect()
    }

    #[test]
    fn conservative_ack_filter_drops_the_oldest_of_two_redundant_acks() {
        // cake_ack_filter: drop only once two eligible ACKs are queued.
        let mut b = Bench::new(
            cake(
                serde_json::json!({"ack_filter": "conservative"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        b.enqueue(Time(0), ack(3, 1, &[]));
        b.enqueue(Time(0), ack(3, 2, &[]));
        assert_eq!(b.drops(), 0);
        b.enqueue(Time(0), ack(3, 3, &[]));
        assert_eq!(queued(&b), vec![2, 3]);
        b.enqueue(Time(0), ack(3, 4, &[]));
        assert_eq!(queued(&b), vec![3, 4]);
        assert_eq!(b.aqm_drops(), 2);
        assert_eq!(b.q.backlog_packets(), 2);
        assert_eq!(b.q.backlog_bytes(), Bytes(2 * 66));
    }

    #[test]
    fn aggressive_ack_filter_drops_a_single_redundant_ack_in_front() {
        let mut b = Bench::new(
            cake(
                serde_json::json!({"ack_filter": "aggressive"}),
                Limit::Bytes(1_000_000),
            ),
            1,
        );
        b.enqueue(Time(0), ack(3, 1, &[]));
        b.enqueue(Time(0), ack(3, 2, &[]));
        assert_eq!(queued(&b), vec![2]);
        // A data packet of the same flow never triggers the filter.
        b.enqueue(Time(0), pkt(3, 9));
        assert_eq!(b.drops(), 1);
    }

    #[test]
    fn ack_filter_keeps_acks_with_information_the_new_one_lacks() {
        // cake_tcph_sack_compare: an older ACK whose SACK blocks the new one
        // does not cover, a D-SACK, or a change of ECE/CWR is kept.
        let blk = |s, e| SackBlock { start: s, end: e };
        let conservative = || {
            Bench::new(
                cake(
                    serde_json::json!({"ack_filter": "aggressive"}),
                    Limit::Bytes(1_000_000),
                ),
                1,
            )
        };
        // Same cumulative ACK, new SACK covers and extends the old: drop.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 9)]));
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 10)]));
        assert_eq!(b.drops(), 1);
        // New SACK block elsewhere: the old one says something new: keep.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(7, 9)]));
        b.enqueue(Time(0), ack(3, 5, &[blk(11, 12)]));
        assert_eq!(b.drops(), 0);
        // D-SACK (block below the cumulative ACK): keep.
        let mut b = conservative();
        b.enqueue(Time(0), ack(3, 5, &[blk(2, 3)]));
        b.enqueue(Time(0), ack(3, 6, &[blk(2, 3)]));
        assert_eq!(b.drops(), 0);
        // ECE differs between the two: keep.
        let mut b = conservative();
        let mut a = ack(3, 5, &[]);
        a.flags = flags::ECE;
        b.enqueue(Time(0), a);
        b.enqueue(Time(0), ack(3, 6, &[]));
        assert_eq!(b.drops(), 0);
        // An ACK of another connection is never a candidate.
        let mut b = conservative();
        b.enqueue(Time(0), ack(4, 5, &[]));
        b.enqueue(Time(0), ack(3, 6, &[]));
        assert_eq!(b.drops(), 0);
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
