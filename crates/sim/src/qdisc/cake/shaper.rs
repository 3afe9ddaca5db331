//! sch_cake.c's shaper: `cake_calc_overhead`, `cake_advance_shaper`, the `time_next_packet`s.

use super::Cake;
use crate::packet::{Packet, LINK_FRAMING};
use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    None,
    Atm,
    Ptm,
}

impl Cake {
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
    pub(super) fn advance_shaper(&mut self, tin: usize, pkt: &Packet, now: i64, drop: bool) -> u32 {
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

    /// `cake_enqueue` into an empty tin: keep the shaper's schedule from
    /// going stale across idle periods; with the qdisc empty and the global
    /// schedule still ahead, set the watchdog.
    pub(super) fn shaper_resume(&mut self, tin: usize, now: i64) {
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

    /// `cake_dequeue`'s global hard shaper: true, with the watchdog set,
    /// while neither the schedule nor the failsafe schedule is due.
    pub(super) fn shaper_holds(&mut self, now: i64) -> bool {
        if self.time_next_packet > now && self.failsafe_next_packet > now {
            let next = self.time_next_packet.min(self.failsafe_next_packet);
            self.wake = Some(Time(next as u64));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::qdisc::cake::tests::{cake, RATE};
    use crate::qdisc::testkit::{drive, Bench, Source};
    use crate::qdisc::Limit;
    use crate::units::{Dur, Time};

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
}
