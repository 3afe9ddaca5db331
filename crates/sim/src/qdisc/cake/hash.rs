//! sch_cake.c's flow hashing: `cake_hash`, host isolation (`cake_get_flow_quantum`), flow lists.

use super::cobalt::CobaltVars;
use super::tins::Tin;
use crate::packet::Packet;
use crate::qdisc::{flow_hash, host_hash, QdiscCtx};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub(super) const CAKE_QUEUES: usize = 1024;
const CAKE_SET_WAYS: usize = 8;

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
    pub(super) fn bits(self) -> u8 {
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

// ---------------------------------------------------------------------------
// Flow lists (Linux list_head, by index)

pub(super) const NIL: u16 = u16::MAX;
pub(super) const NEW: usize = 0;
pub(super) const OLD: usize = 1;
pub(super) const DECAYING: usize = 2;

#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    prev: u16,
    pub(super) next: u16,
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
pub(super) struct Lists {
    pub(super) head: [u16; 3],
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
// Flow queues and hosts

/// sch_cake.c CAKE_SET_*.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum FlowSet {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, but in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Default)]
pub(super) struct Flow {
    pub(super) q: VecDeque<Packet>,
    pub(super) deficit: i32,
    pub(super) cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    pub(super) set: FlowSet,
    pub(super) link: Link,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Host {
    srchost_tag: u32,
    dsthost_tag: u32,
    srchost_bulk_flow_count: u16,
    dsthost_bulk_flow_count: u16,
}

impl Tin {
    pub(super) fn first(&self, list: usize) -> Option<usize> {
        let h = self.lists.head[list];
        (h != NIL).then_some(h as usize)
    }

    pub(super) fn push_back(&mut self, list: usize, i: usize) {
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
    pub(super) fn unlink(&mut self, i: usize) {
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
    pub(super) fn move_tail(&mut self, i: usize, list: usize) {
        self.unlink(i);
        self.push_back(list, i);
    }

    pub(super) fn inc_srchost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].srchost as usize];
        if dsrc(mode) && (h.srchost_bulk_flow_count as usize) < CAKE_QUEUES {
            h.srchost_bulk_flow_count += 1;
        }
    }
    pub(super) fn dec_srchost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].srchost as usize];
        if dsrc(mode) && h.srchost_bulk_flow_count > 0 {
            h.srchost_bulk_flow_count -= 1;
        }
    }
    pub(super) fn inc_dsthost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].dsthost as usize];
        if ddst(mode) && (h.dsthost_bulk_flow_count as usize) < CAKE_QUEUES {
            h.dsthost_bulk_flow_count += 1;
        }
    }
    pub(super) fn dec_dsthost(&mut self, i: usize, mode: u8) {
        let h = &mut self.hosts[self.flows[i].dsthost as usize];
        if ddst(mode) && h.dsthost_bulk_flow_count > 0 {
            h.dsthost_bulk_flow_count -= 1;
        }
    }

    /// `cake_get_flow_quantum`: the tin's flow quantum divided by the
    /// flow's host load, dithered with a random 16-bit value.
    pub(super) fn flow_quantum(&self, i: usize, mode: u8, ctx: &mut QdiscCtx) -> u16 {
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
    pub(super) fn hash(&mut self, pkt: &Packet, mode: u8) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::cake::tests::{cake, host_src, RATE};
    use crate::qdisc::testkit::{drive, pkt, Bench, Source};
    use crate::qdisc::Limit;
    use crate::units::{Dur, Time};

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
}
