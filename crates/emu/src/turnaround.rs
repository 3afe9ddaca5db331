//! The hosts' turnarounds, measured in every run: what the simulator's
//! `[hosts] latency` table holds (`ccarena_sim::net::host`), taken at the
//! bottleneck as `scripts/host_latency.py` takes it from a frame trace.
//!
//! - sender: an ACK due towards the senders -> the first data frame of the
//!   same flow that arrives after it (the ACK-clocked send it triggered),
//!   on flows whose senders do not pace (a paced one waits for its timer);
//! - receiver: a data frame due towards the receivers -> the ACK that
//!   covers exactly it.
//!
//! Both count from the frame's scheduled release, so the bottleneck's own
//! lateness is in, and turnarounds of 1 ms or more (delayed ACKs, a full
//! window) are protocol waits, not noise, and are left out. A run's table
//! is the values at the simulator's 18 percentiles
//! (`ccarena_sim::net::host::PCT`), interpolated between samples as numpy's
//! `percentile` does. The host's turnaround depends on the machine (the
//! same cell gave medians of 72 us on one of this project's 2-vCPU machines
//! and 30 us on another, docs/validation.md), so `ccarena conformance` runs
//! the simulator with the table its kernel runs measured.

use ccarena_sim::net::host::PCT;
use ccarena_sim::packet::{Kind, Packet};
use std::collections::VecDeque;

/// How the meter pairs frames, recorded with every table (`meter`): 1
/// counted an ACK from the frame whose end it equals; 2 (2026-11-27) from
/// the last frame it answers (the retransmission that filled a hole), and
/// not when an out-of-order frame released a held ACK.
pub const METER_REVISION: u32 = 2;
/// Longer turnarounds are protocol waits, not noise (ns).
pub const CUT_NS: u64 = 1_000_000;
/// Data frames remembered per flow until an ACK covers them.
const MAX_PENDING: usize = 4096;

pub struct TurnaroundMeter {
    /// Per flow: its sender paces, so the data that follows an ACK waits
    /// for the pacing timer, not for the host: no sender samples.
    paced: Vec<bool>,
    /// Per flow: when the newest ACK released to its sender was due, until
    /// a data frame answers it.
    ack_due: Vec<Option<u64>>,
    /// Per flow: (start and end sequence numbers, due) of the data frames
    /// released to its receiver and not yet covered, oldest first.
    data_due: Vec<VecDeque<(u32, u32, u64)>>,
    sender: Vec<u32>,
    receiver: Vec<u32>,
}

/// `a` lies before `b` in sequence space (RFC 1982 wrap-around).
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl TurnaroundMeter {
    /// For flows whose senders pace or not (`FlowSpec::sender_paces`).
    pub fn new(paced: Vec<bool>) -> TurnaroundMeter {
        let flows = paced.len();
        TurnaroundMeter {
            paced,
            ack_due: vec![None; flows],
            data_due: vec![VecDeque::new(); flows],
            sender: Vec::new(),
            receiver: Vec::new(),
        }
    }

    /// The bottleneck released packet `p` (a frame's descriptor: `seq` the
    /// TCP sequence number, or an ACK's acknowledgment number, as
    /// `TcpFrame::to_packet` sets it) towards the senders (`to_senders`) or
    /// the receivers; it was due at `due` (ns).
    pub fn released(&mut self, to_senders: bool, p: &Packet, due: u64) {
        let i = p.flow as usize;
        if to_senders {
            if p.payload == 0 && !self.paced[i] {
                self.ack_due[i] = Some(due);
            }
        } else if p.payload > 0 {
            let end = p.seq.wrapping_add(u32::from(p.payload));
            let q = &mut self.data_due[i];
            // A retransmission (not beyond the newest end remembered)
            // replaces what is remembered for its end; a segment first
            // seen now (its original lost before the bottleneck released
            // it) goes into its place by end; new data is appended
            // without a search.
            let mut at = q.len();
            if q.back().is_some_and(|&(_, last, _)| !before(last, end)) {
                if let Some(e) = q.iter_mut().rev().find(|e| e.1 == end) {
                    e.2 = due;
                    return;
                }
                at = q.partition_point(|&(_, e, _)| before(e, end));
            }
            q.insert(at, (p.seq, end, due));
            if q.len() > MAX_PENDING {
                q.pop_front();
            }
        }
    }

    /// Packet `p` arrived at `now` (ns) from the senders (`from_senders`) or
    /// the receivers.
    pub fn arrived(&mut self, from_senders: bool, p: &Packet, now: u64) {
        let i = p.flow as usize;
        if from_senders {
            if p.payload > 0 {
                if let Some(t0) = self.ack_due[i].take() {
                    let d = now.saturating_sub(t0);
                    if d < CUT_NS {
                        self.sender.push(d as u32);
                    }
                }
            }
        } else if p.kind == Kind::Ack {
            let (q, ack) = (&mut self.data_due[i], p.seq);
            // The ACK answers the last-released frame it covers: after a
            // hole, the retransmission that filled it, not the in-order
            // frame below the ACK that waited for it (counting from that
            // one put the recovery's wait, up to the 1 ms cut, into the
            // table: docs/validation.md, "The turnaround meter's hole").
            let mut t0 = 0;
            while q.front().is_some_and(|&(_, end, _)| before(end, ack)) {
                t0 = t0.max(q.pop_front().expect("just seen").2);
            }
            if q.front().is_some_and(|&(_, end, _)| end == ack) {
                t0 = t0.max(q.pop_front().expect("just seen").2);
                // A frame beyond a hole already released (the next one
                // remembered does not start at the ACK): the receiver was
                // holding this ACK (a delayed ACK) and the out-of-order
                // arrival sent it, so it answers that frame, not this one.
                let gap = q
                    .front()
                    .is_some_and(|&(start, _, d)| d <= now && start != ack);
                let d = now.saturating_sub(t0);
                if d < CUT_NS && !gap {
                    self.receiver.push(d as u32);
                }
            }
        }
    }

    /// The table of the run so far: values (us) at `PCT` of each side and
    /// the sample counts; `null` values for a side without samples.
    pub fn table(&self) -> serde_json::Value {
        serde_json::json!({
            "sender_us": percentiles(&self.sender),
            "receiver_us": percentiles(&self.receiver),
            "sender_n": self.sender.len(),
            "receiver_n": self.receiver.len(),
            "meter": METER_REVISION,
        })
    }
}

/// The values at `PCT` (us), linear between order statistics (numpy's
/// default); None without samples.
fn percentiles(samples: &[u32]) -> Option<Vec<f64>> {
    if samples.is_empty() {
        return None;
    }
    let mut v: Vec<u32> = samples.to_vec();
    v.sort_unstable();
    let n = v.len();
    Some(
        PCT.iter()
            .map(|&p| {
                let x = p / 100.0 * (n - 1) as f64;
                let lo = x.floor() as usize;
                let hi = (lo + 1).min(n - 1);
                let (a, b) = (v[lo] as f64, v[hi] as f64);
                (a + (b - a) * (x - lo as f64)) / 1e3
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(flow: u32, seq: u32) -> Packet {
        let mut p = Packet::data(flow, 0, 1448);
        p.seq = seq;
        p
    }

    fn ack(ack: u32) -> Packet {
        Packet::ack(0, ack, &[])
    }

    #[test]
    fn pairs_an_ack_with_the_data_it_clocks_out_and_data_with_its_ack() {
        let mut m = TurnaroundMeter::new(vec![false, false]);
        // Sender side: ACK due at 1000, data of the same flow at 41_000;
        // flow 1's data does not answer flow 0's ACK; a second data frame
        // answers nothing.
        m.released(true, &ack(100), 1_000);
        m.arrived(true, &data(1, 0), 20_000);
        m.arrived(true, &data(0, 100), 41_000);
        m.arrived(true, &data(0, 1548), 45_000);
        assert_eq!(m.sender, vec![40_000]);
        // Receiver side: two segments out, an ACK covering exactly the
        // first 30 us after it was due, then one covering both 2 ms late
        // (a delayed ACK: left out).
        m.released(false, &data(0, 0), 100_000);
        m.released(false, &data(0, 1448), 101_000);
        m.arrived(false, &ack(1448), 130_000);
        m.arrived(false, &ack(2896), 2_200_000);
        assert_eq!(m.receiver, vec![30_000]);
    }

    #[test]
    fn a_retransmission_counts_from_its_own_release() {
        let mut m = TurnaroundMeter::new(vec![false]);
        m.released(false, &data(0, 0), 0);
        m.released(false, &data(0, 1448), 10);
        m.released(false, &data(0, 0), 500_000); // the first, again
        assert_eq!(m.data_due[0].len(), 2);
        m.arrived(false, &ack(1448), 530_000);
        assert_eq!(m.receiver, vec![30_000]);
    }

    #[test]
    fn an_ack_that_fills_a_hole_counts_from_the_retransmission() {
        // Segment 0 is lost; 1..=3 go out and are acknowledged as
        // duplicates of 0; 0 is retransmitted at 900 us and its ACK covers
        // all four 30 us later. The sample is those 30 us, not the 900 us
        // segment 3 (whose end the ACK equals) waited for the hole.
        let mut m = TurnaroundMeter::new(vec![false]);
        m.released(false, &data(0, 0), 0);
        for k in 1..=3u32 {
            m.released(false, &data(0, k * 1448), u64::from(k) * 10_000);
            m.arrived(false, &ack(0), u64::from(k) * 10_000 + 30_000);
        }
        m.released(false, &data(0, 0), 900_000);
        m.arrived(false, &ack(4 * 1448), 930_000);
        assert_eq!(m.receiver, vec![30_000]);
        // In order, a delayed ACK of two frames counts from the second.
        m.released(false, &data(0, 4 * 1448), 1_000_000);
        m.released(false, &data(0, 5 * 1448), 1_010_000);
        m.arrived(false, &ack(6 * 1448), 1_050_000);
        assert_eq!(m.receiver, vec![30_000, 40_000]);
        // Segment 6 goes out, 7 is lost, 8 arrives 700 us later: the
        // receiver's delayed ACK of 6 leaves on 8's arrival (a duplicate
        // for 8, exactly 6's end for the meter): no sample.
        m.released(false, &data(0, 6 * 1448), 2_000_000);
        m.released(false, &data(0, 8 * 1448), 2_700_000);
        m.arrived(false, &ack(7 * 1448), 2_730_000);
        assert_eq!(m.receiver, vec![30_000, 40_000]);
        // At a high rate the next in-order frame is out before the ACK of
        // the previous one: still a sample.
        m.released(false, &data(0, 7 * 1448), 3_000_000);
        m.arrived(false, &ack(9 * 1448), 3_030_000);
        m.released(false, &data(0, 9 * 1448), 3_100_000);
        m.released(false, &data(0, 10 * 1448), 3_110_000);
        m.arrived(false, &ack(10 * 1448), 3_135_000);
        assert_eq!(m.receiver, vec![30_000, 40_000, 30_000, 35_000]);
    }

    #[test]
    fn a_paced_flow_gives_no_sender_samples() {
        let mut m = TurnaroundMeter::new(vec![true]);
        m.released(true, &ack(100), 1_000);
        m.arrived(true, &data(0, 100), 41_000);
        assert!(m.sender.is_empty());
        assert!(m.table()["sender_us"].is_null());
    }

    #[test]
    fn an_ack_past_remembered_data_forgets_it_across_the_wrap() {
        let mut m = TurnaroundMeter::new(vec![false]);
        let s0 = u32::MAX - 1000;
        m.released(false, &data(0, s0), 0);
        m.released(false, &data(0, s0.wrapping_add(1448)), 10);
        // Covers the second one exactly: the first is forgotten, not paired.
        m.arrived(false, &ack(s0.wrapping_add(2896)), 50_010);
        assert_eq!(m.receiver, vec![50_000]);
        assert!(m.data_due[0].is_empty());
    }

    #[test]
    fn percentiles_interpolate_as_numpy() {
        // numpy.percentile(range(1, 11) * 1000 ns, PCT) / 1e3
        let v: Vec<u32> = (1..=10).map(|k| k * 1000).collect();
        let p = percentiles(&v).unwrap();
        assert_eq!(p.len(), PCT.len());
        assert_eq!(p[0], 1.0);
        assert!((p[8] - 5.5).abs() < 1e-12); // the median
        assert!((p[12] - 9.1).abs() < 1e-12); // the 90th
        assert!((p[17] - 9.991).abs() < 1e-12); // the 99.9th
        assert!(percentiles(&[]).is_none());
    }
}
