//! Delivery-rate estimation, as Linux net/ipv4/tcp_rate.c
//! (draft-cheng-iccrg-delivery-rate-estimation): a snapshot in every packet
//! sent (`tcp_rate_skb_sent`), the newest delivered packet chosen as the
//! sample's reference (`tcp_rate_skb_delivered`), and once per ACK the
//! sample itself (`tcp_rate_gen`), with app-limited marking
//! (`tcp_rate_check_app_limited`). Timestamps are in microseconds, as Linux
//! keeps them, so interval truncation matches.

use super::scoreboard::{seg, Seg, TxSnapshot};
use crate::cc::RateSample;
use crate::units::{Rate, Time};

/// Connection-wide delivery counters (fields of `struct tcp_sock`).
#[derive(Clone, Debug, Default)]
pub struct DeliveryState {
    /// Packets delivered (cumulatively ACKed or SACKed), `tp->delivered`.
    pub delivered: u64,
    pub delivered_ce: u64,
    /// Time of the latest increase of `delivered`.
    pub delivered_mstamp: Time,
    /// Send time of the most recently delivered packet's reference window.
    pub first_tx_mstamp: Time,
    /// 0, or the `delivered` count at which the app-limited bubble ends.
    pub app_limited: u64,
    /// Latest non-app-limited-or-faster sample, for reporting (`tcp_info.delivery_rate`).
    pub rate_delivered: u64,
    pub rate_interval_us: u64,
}

/// The reference packet of the ACK being processed.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleRef {
    have: bool,
    prior_delivered: u64,
    prior_delivered_ce: u64,
    prior_mstamp: Time,
    tx_mstamp: Time,
    tx_seq: u32,
    send_interval_us: u64,
    is_app_limited: bool,
    is_retrans: bool,
    tx_in_flight: u32,
    tx_lost: u64,
}

impl DeliveryState {
    /// `tcp_rate_skb_sent`: the snapshot for a packet sent now.
    /// `packets_out` is the count before this packet; `in_flight_after` and
    /// `lost` feed the BBRv3 fields.
    pub fn on_send(
        &mut self,
        now: Time,
        packets_out: u32,
        in_flight_after: u32,
        lost: u64,
    ) -> TxSnapshot {
        if packets_out == 0 {
            // Nothing in flight: start the first sample interval now.
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            delivered_mstamp: self.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            lost,
            in_flight: in_flight_after,
            is_app_limited: self.app_limited != 0,
        }
    }

    /// `tcp_rate_skb_delivered` for segment `seq` newly (S)ACKed; `sacked`
    /// is true when it was delivered by a SACK (its snapshot is then spent).
    pub fn on_delivered(
        &mut self,
        r: &mut SampleRef,
        seq: u32,
        s: &mut Seg,
        sacked: bool,
        ce: bool,
    ) {
        self.delivered += 1;
        if ce {
            self.delivered_ce += 1;
        }
        if !s.has(seg::SNAPSHOT) {
            return;
        }
        let newer =
            !r.have || s.tx_time > r.tx_mstamp || (s.tx_time == r.tx_mstamp && seq > r.tx_seq);
        if newer {
            r.have = true;
            r.prior_delivered = s.tx.delivered;
            r.prior_delivered_ce = s.tx.delivered_ce;
            r.prior_mstamp = s.tx.delivered_mstamp;
            r.is_app_limited = s.tx.is_app_limited;
            r.is_retrans = s.has(seg::RETRANS | seg::EVER_RETRANS);
            r.tx_in_flight = s.tx.in_flight;
            r.tx_lost = s.tx.lost;
            r.tx_mstamp = s.tx_time;
            r.tx_seq = seq;
            // Send phase: from the start of this packet's window to its send.
            r.send_interval_us = s.tx_time.us().saturating_sub(s.tx.first_tx_mstamp.us());
            self.first_tx_mstamp = s.tx_time;
        }
        if sacked {
            s.flags &= !seg::SNAPSHOT;
        }
    }

    /// `tcp_rate_gen`: build the ACK's rate sample. `newly_delivered` and
    /// `newly_lost` are this ACK's counts; `min_rtt_us` is `tcp_min_rtt`.
    #[allow(clippy::too_many_arguments)]
    pub fn generate(
        &mut self,
        now: Time,
        r: &SampleRef,
        newly_delivered: u32,
        newly_lost: u32,
        prior_in_flight: u32,
        rtt_us: i64,
        min_rtt_us: u64,
        lost_total: u64,
    ) -> RateSample {
        // The app-limited bubble ends once its packets are delivered.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if newly_delivered > 0 {
            self.delivered_mstamp = now;
        }
        let mut rs = RateSample {
            acked_sacked: newly_delivered,
            losses: newly_lost,
            prior_in_flight,
            rtt_us,
            delivered: -1,
            interval_us: -1,
            ..RateSample::default()
        };
        if !r.have {
            return rs;
        }
        rs.prior_delivered = r.prior_delivered;
        rs.prior_delivered_ce = r.prior_delivered_ce;
        rs.is_app_limited = r.is_app_limited;
        rs.is_retrans = r.is_retrans;
        rs.tx_in_flight = r.tx_in_flight;
        rs.lost = lost_total.saturating_sub(r.tx_lost) as u32;
        rs.delivered = (self.delivered - r.prior_delivered) as i64;
        rs.delivered_ce = (self.delivered_ce - r.prior_delivered_ce) as i64;
        // The longer of the send and ACK phases guards against ACK compression.
        let ack_us = now.us().saturating_sub(r.prior_mstamp.us());
        let interval = r.send_interval_us.max(ack_us);
        // Intervals shorter than min RTT are unreliable (tcp_rate_gen).
        if interval < min_rtt_us {
            return rs;
        }
        rs.interval_us = interval as i64;
        if !rs.is_app_limited
            || rs.delivered as u64 * self.rate_interval_us >= self.rate_delivered * interval
        {
            self.rate_delivered = rs.delivered as u64;
            self.rate_interval_us = interval;
        }
        rs
    }

    /// Latest delivery-rate estimate (`tcp_info.delivery_rate`), payload bits.
    pub fn delivery_rate(&self, mss: u32) -> Rate {
        if self.rate_interval_us == 0 {
            return Rate(0);
        }
        Rate(crate::units::div128(
            self.rate_delivered as u128 * mss as u128 * 8 * 1_000_000,
            self.rate_interval_us as u128,
        ) as u64)
    }

    /// `tcp_rate_check_app_limited`, once the caller has checked that the
    /// sender has nothing to send, in-flight is below cwnd, and all lost
    /// packets were retransmitted.
    pub fn mark_app_limited(&mut self, in_flight: u32) {
        self.app_limited = (self.delivered + in_flight as u64).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg_sent(d: &mut DeliveryState, t: u64, packets_out: u32) -> Seg {
        let tx = d.on_send(Time(t), packets_out, packets_out + 1, 0);
        Seg {
            tx_time: Time(t),
            flags: seg::SNAPSHOT,
            tx,
        }
    }

    #[test]
    fn steady_pipe_gives_the_bottleneck_rate() {
        // One packet sent every 100 us, each ACKed 10 ms after it was sent:
        // the pipe delivers 10 packets per ms.
        let mut d = DeliveryState::default();
        let mut segs: Vec<Seg> = Vec::new();
        let mut last = RateSample::default();
        for k in 0..400usize {
            let now = k as u64 * 100_000;
            if k >= 100 {
                let i = k - 100;
                let mut r = SampleRef::default();
                d.on_delivered(&mut r, i as u32, &mut segs[i], false, false);
                last = d.generate(Time(now), &r, 1, 0, 100, 10_000, 10_000, 0);
            }
            let in_flight = (k.min(100)) as u32;
            segs.push(seg_sent(&mut d, now, in_flight));
        }
        assert!(last.is_valid());
        let pkts_per_ms = last.delivered as f64 / (last.interval_us as f64 / 1000.0);
        assert!((pkts_per_ms - 10.0).abs() < 0.2, "{last:?}");
    }

    #[test]
    fn app_limited_bubble_ends_after_its_packets() {
        let mut d = DeliveryState {
            delivered: 100,
            ..DeliveryState::default()
        };
        d.mark_app_limited(5);
        assert_eq!(d.app_limited, 105);
        let s = seg_sent(&mut d, 0, 5);
        assert!(s.tx.is_app_limited);
        d.delivered = 106;
        d.generate(Time(1), &SampleRef::default(), 1, 0, 0, -1, 0, 0);
        assert_eq!(d.app_limited, 0);
    }

    #[test]
    fn short_intervals_are_discarded() {
        let mut d = DeliveryState::default();
        let mut s = seg_sent(&mut d, 0, 0);
        let mut r = SampleRef::default();
        d.on_delivered(&mut r, 0, &mut s, false, false);
        let rs = d.generate(Time(5_000_000), &r, 1, 0, 1, 5_000, 10_000, 0);
        assert_eq!(rs.interval_us, -1);
        assert_eq!(rs.delivered, 1);
    }
}
