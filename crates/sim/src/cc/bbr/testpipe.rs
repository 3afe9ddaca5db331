//! A fake fixed-capacity pipe for testing BBR versions without the TCP core.
//!
//! One bulk sender, a FIFO bottleneck of `rate` with an unlimited buffer,
//! `rtt` of propagation split evenly between the directions, one ACK per
//! packet. The sender sends while inflight < cwnd, no earlier than the
//! pacing rate allows (EDT: the next departure is the previous one plus
//! mss / pacing rate). Rate samples are built as Linux's tcp_rate.c does
//! (`tcp_rate_skb_sent`, `tcp_rate_skb_delivered`, `tcp_rate_gen`): the
//! interval is the longer of the send and ACK phases, and samples shorter
//! than min_rtt are invalid. Optional impairments: a token-bucket policer
//! in front of the bottleneck (dropped packets are reported as lost with
//! the next ACK after their notional ACK time and are never resent), and a
//! step in one-way delay that models a standing queue of other traffic.
//! The connection stays in CA Open throughout.

use crate::cc::{AckOutcome, CaState, CcInit, CongestionControl, Conn, RateSample};
use crate::units::{Bytes, Dur, Rate, Time, NS_PER_S};
use std::collections::VecDeque;

/// The time `s` seconds after the start, for the tests' run limits.
pub fn secs(s: f64) -> Time {
    Time((s * NS_PER_S as f64) as u64)
}

#[derive(Clone, Debug)]
pub struct Policer {
    pub rate: Rate,
    pub burst_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct PipeConfig {
    /// Bottleneck rate, payload bits per second.
    pub rate: Rate,
    /// Base round-trip time.
    pub rtt: Dur,
    pub mss: u32,
    pub init_cwnd: u32,
    pub policer: Option<Policer>,
    /// From this send time on, add this one-way delay (a standing queue).
    pub extra_delay: Option<(Time, Dur)>,
}

impl PipeConfig {
    /// `rate_mbps`, `rtt_ms`, 1448-byte packets, initial cwnd 10.
    pub fn new(rate_mbps: u64, rtt_ms: u64) -> Self {
        PipeConfig {
            rate: Rate(rate_mbps * 1_000_000),
            rtt: Dur::from_ms(rtt_ms),
            mss: 1448,
            init_cwnd: 10,
            policer: None,
            extra_delay: None,
        }
    }
}

#[derive(Clone, Debug)]
struct Pkt {
    send: Time,
    /// When its ACK arrives, or for a dropped packet when it is given up.
    ack_at: Time,
    dropped: bool,
    // tcp_rate_skb_sent snapshot:
    delivered: u64,
    delivered_mstamp: Time,
    first_tx: Time,
    app_limited: bool,
}

/// What a test sees after each ACK.
pub struct AckView<'a> {
    pub now: Time,
    pub rs: &'a RateSample,
    pub conn: &'a Conn,
    pub out: AckOutcome,
}

pub struct Pipe {
    pub cfg: PipeConfig,
    pub now: Time,
    q: VecDeque<Pkt>,
    /// When the bottleneck finishes its current packet.
    link_free: Time,
    /// Earliest departure time of the next packet.
    next_send: Time,
    delivered: u64,
    delivered_mstamp: Time,
    first_tx: Time,
    lost: u64,
    /// Dropped packets given up but not yet reported.
    pending_losses: u32,
    /// `tp->app_limited`: 0, or the delivered count ending the bubble.
    app_limited: u64,
    min_rtt: Option<Dur>,
    srtt: Option<Dur>,
    /// Policer tokens in bit-nanoseconds (bytes x 8e9), and when last filled.
    tokens: u128,
    tokens_at: Time,
}

impl Pipe {
    pub fn new(cfg: PipeConfig) -> Self {
        let tokens = cfg
            .policer
            .as_ref()
            .map_or(0, |p| p.burst_bytes as u128 * 8 * NS_PER_S as u128);
        Pipe {
            cfg,
            now: Time::ZERO,
            q: VecDeque::new(),
            link_free: Time::ZERO,
            next_send: Time::ZERO,
            delivered: 0,
            delivered_mstamp: Time::ZERO,
            first_tx: Time::ZERO,
            lost: 0,
            pending_losses: 0,
            app_limited: 0,
            min_rtt: None,
            srtt: None,
            tokens,
            tokens_at: Time::ZERO,
        }
    }

    /// What the CC is created with: the handshake measured the base RTT.
    pub fn init(&self, seed: u64) -> CcInit {
        CcInit {
            now: Time::ZERO,
            mss: self.cfg.mss,
            init_cwnd: self.cfg.init_cwnd,
            srtt: Some(self.cfg.rtt),
            seed,
            ecn_enabled: false,
        }
    }

    pub fn in_flight(&self) -> u32 {
        self.q.len() as u32
    }

    /// The connection as the CC sees it now.
    pub fn conn(&self) -> Conn {
        Conn {
            mss: self.cfg.mss,
            init_cwnd: self.cfg.init_cwnd,
            in_flight: self.in_flight(),
            packets_out: self.in_flight(),
            delivered: self.delivered,
            delivered_ce: 0,
            lost: self.lost,
            delivered_mstamp: self.delivered_mstamp,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            ca_state: CaState::Open,
            is_cwnd_limited: true,
            max_packets_out: self.in_flight(),
            app_limited: self.app_limited != 0,
            next_departure: self.next_send.max(self.now),
            snd_una: 0,
            snd_nxt: 0,
            ecn_enabled: false,
            paced: true,
            sent_since_state_change: 0,
            data_segs_out: 0,
            highest_sack: 0,
        }
    }

    fn extra_delay(&self, t: Time) -> Dur {
        match self.cfg.extra_delay {
            Some((from, d)) if t >= from => d,
            _ => Dur::ZERO,
        }
    }

    /// The policer admits a packet arriving at `t`.
    fn police(&mut self, t: Time) -> bool {
        let Some(p) = self.cfg.policer.clone() else {
            return true;
        };
        let cap = p.burst_bytes as u128 * 8 * NS_PER_S as u128;
        let dt = t.since(self.tokens_at).ns() as u128;
        self.tokens = (self.tokens + dt * p.rate.bps() as u128).min(cap);
        self.tokens_at = t;
        let cost = self.cfg.mss as u128 * 8 * NS_PER_S as u128;
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    fn send<C: CongestionControl>(&mut self, cc: &C) {
        let now = self.now;
        if self.q.is_empty() {
            self.first_tx = now;
            self.delivered_mstamp = now;
        }
        let half = Dur(self.cfg.rtt.ns() / 2);
        let arrive = now + half + self.extra_delay(now);
        let admitted = self.police(arrive);
        let ack_at = if admitted {
            let tx = self.cfg.rate.tx_time(Bytes(self.cfg.mss as u64));
            let departure = arrive.max(self.link_free) + tx;
            self.link_free = departure;
            departure + half
        } else {
            arrive + half
        };
        self.q.push_back(Pkt {
            send: now,
            ack_at,
            dropped: !admitted,
            delivered: self.delivered,
            delivered_mstamp: self.delivered_mstamp,
            first_tx: self.first_tx,
            app_limited: self.app_limited != 0,
        });
        self.next_send = now + cc.pacing_rate().tx_time(Bytes(self.cfg.mss as u64));
    }

    /// Process the packet at the head of the queue; returns the ACK's view
    /// if it was delivered.
    fn ack<C: CongestionControl>(&mut self, cc: &mut C, f: &mut impl FnMut(&AckView, &C)) {
        let now = self.now;
        let prior_in_flight = self.in_flight();
        let p = self.q.pop_front().expect("an outstanding packet");
        if p.dropped {
            self.pending_losses += 1;
            return;
        }
        let losses = std::mem::take(&mut self.pending_losses);
        self.lost += losses as u64;
        self.delivered += 1;
        // RTT sample, before tcp_rate_gen (tcp_ack_update_rtt).
        let rtt = now.since(p.send);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.srtt = Some(self.srtt.map_or(rtt, |s| Dur((s.ns() * 7 + rtt.ns()) / 8)));
        // tcp_rate_skb_delivered.
        self.first_tx = p.send;
        let send_us = p.send.us().saturating_sub(p.first_tx.us());
        // tcp_rate_gen.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        self.delivered_mstamp = now;
        let ack_us = now.us().saturating_sub(p.delivered_mstamp.us());
        let mut interval_us = send_us.max(ack_us) as i64;
        if interval_us < self.min_rtt.map_or(0, |m| m.us()) as i64 {
            interval_us = -1;
        }
        let rs = RateSample {
            prior_delivered: p.delivered,
            delivered: (self.delivered - p.delivered) as i64,
            interval_us,
            rtt_us: rtt.us() as i64,
            losses,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: p.app_limited,
            snd_una_advanced: true,
            ..Default::default()
        };
        let conn = self.conn();
        let out = cc.on_ack(now, &rs, &conn);
        if out.mark_app_limited {
            self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
        }
        f(
            &AckView {
                now,
                rs: &rs,
                conn: &conn,
                out,
            },
            cc,
        );
    }

    /// Run until `until`, calling `f` after every delivered ACK.
    pub fn run<C: CongestionControl>(
        &mut self,
        cc: &mut C,
        until: Time,
        mut f: impl FnMut(&AckView, &C),
    ) {
        loop {
            let t_send = if self.in_flight() < cc.cwnd() {
                self.next_send.max(self.now)
            } else {
                Time::NEVER
            };
            let t_ack = self
                .q
                .front()
                .map_or(Time::NEVER, |p| p.ack_at.max(self.now));
            let t = t_send.min(t_ack);
            if t > until {
                self.now = until;
                return;
            }
            self.now = t;
            if t_ack <= t_send {
                self.ack(cc, &mut f);
            } else {
                self.send(cc);
            }
        }
    }

    /// Run until `to`, and return the lengths (ms, by ACK times) of the
    /// spans during which `inside` holds, for spans starting at or after `from`.
    pub fn span_lengths<C: CongestionControl>(
        &mut self,
        cc: &mut C,
        from: Time,
        to: Time,
        inside: impl Fn(&C) -> bool,
    ) -> Vec<f64> {
        let mut out = vec![];
        let mut start: Option<Time> = None;
        self.run(cc, to, |v, c| match (start, inside(c)) {
            (None, true) => start = Some(v.now),
            (Some(s), false) => {
                if s >= from {
                    out.push(v.now.since(s).ms_f64());
                }
                start = None;
            }
            _ => {}
        });
        out
    }
}
