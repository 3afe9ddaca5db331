//! sch_cake.c's tins: the tin sets (`cake_config_*`), `cake_set_rate`, `cake_dequeue`'s tin choice.

use super::cobalt::CobaltParams;
use super::hash::{Flow, Host, Lists, CAKE_QUEUES};
use super::Cake;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Diffserv {
    Besteffort,
    Diffserv3,
}

pub(super) struct Tin {
    pub(super) flows: Vec<Flow>,
    pub(super) backlogs: Vec<u32>,
    pub(super) tags: Vec<u32>,
    pub(super) hosts: Vec<Host>,
    pub(super) flow_quantum: u16,
    pub(super) cparams: CobaltParams,
    pub(super) bulk_flow_count: u16,
    pub(super) sparse_flow_count: u16,
    pub(super) decaying_flow_count: u16,
    pub(super) unresponsive_flow_count: u16,
    pub(super) lists: Lists,
    pub(super) time_next_packet: i64,
    pub(super) tin_rate_ns: u64,
    pub(super) tin_rate_shft: u16,
    pub(super) tin_quantum: u16,
    pub(super) tin_deficit: i32,
    pub(super) tin_backlog: u32,
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
}

/// `cake_config_besteffort` / `cake_config_diffserv3`: the tins of a
/// diffserv mode, each with its share of the rate and its tin quantum.
pub(super) fn configure(diffserv: Diffserv, rate: u64, mtu: u32, t_ns: u64, i_ns: u64) -> Vec<Tin> {
    let mut tins: Vec<Tin> = Vec::new();
    match diffserv {
        Diffserv::Besteffort => {
            let mut t = Tin::new();
            t.set_rate(rate, mtu, t_ns, i_ns);
            t.tin_quantum = 65535;
            tins.push(t);
        }
        Diffserv::Diffserv3 => {
            // cake_config_diffserv3: Best Effort, Bulk (1/16), Voice (1/4).
            for (shift, quantum) in [(0, 1024u16), (4, 64), (2, 256)] {
                let mut t = Tin::new();
                t.set_rate(rate >> shift, mtu, t_ns, i_ns);
                t.tin_quantum = quantum;
                tins.push(t);
            }
        }
    }
    tins
}

impl Cake {
    /// `cake_dequeue`'s choice of tin, into `cur_tin`; false when there is
    /// none to serve (`dequeue` returns nothing).
    pub(super) fn choose_tin(&mut self, now: i64) -> bool {
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
                            return false;
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
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::qdisc::cake::tests::cake;
    use crate::qdisc::Limit;

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
}
