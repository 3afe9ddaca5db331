//! What a congestion control sees: the TCP core builds these on every ACK
//! and loss, the algorithms only read them.

use crate::units::{Dur, Rate, Time};

/// Linux's congestion-avoidance state (`enum tcp_ca_state`, include/net/tcp.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// Nothing outstanding is known lost.
    #[default]
    Open,
    /// SACKs show reordering or holes, but nothing is marked lost yet.
    Disorder,
    /// Reducing cwnd because of ECN (or a local congestion signal).
    Cwr,
    /// Fast recovery after a loss detected by SACK/RACK.
    Recovery,
    /// Retransmission timeout: everything outstanding is presumed lost.
    Loss,
}

/// One delivery-rate sample, as Linux `struct rate_sample` (include/net/tcp.h)
/// filled by `tcp_rate_gen` (net/ipv4/tcp_rate.c), with the fields the BBRv3
/// tree adds (`tx_in_flight`, `lost`, `is_ece`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` when the sample's reference packet was sent.
    pub prior_delivered: u64,
    pub prior_delivered_ce: u64,
    /// Packets delivered over the sample interval; negative when the sample is invalid.
    pub delivered: i64,
    /// Of those, delivered with CE marks.
    pub delivered_ce: i64,
    /// Sample interval in microseconds (max of send and ACK phases); -1 when invalid.
    pub interval_us: i64,
    /// RTT of the most recently sent newly-(S)ACKed never-retransmitted packet, us; -1 if none.
    pub rtt_us: i64,
    /// Packets newly marked lost by this ACK.
    pub losses: u32,
    /// Packets newly cumulatively ACKed or SACKed by this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// The reference packet was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// The reference packet was a retransmission.
    pub is_retrans: bool,
    /// The ACK was probably delayed by the receiver.
    pub is_ack_delayed: bool,
    /// Packets in flight just after the reference packet was sent (BBRv3 tree `tcp_set_tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost since the reference packet was sent (BBRv3 tree: `tp->lost - tx.lost`).
    pub lost: u32,
    /// The ACK carried ECN-Echo.
    pub is_ece: bool,
    /// The ACK covers a tail-loss-probe retransmission (v3 `is_acking_tlp_retrans_seq`).
    pub is_acking_tlp_retrans_seq: bool,
    /// The ACK advanced the cumulative ACK point (Linux `FLAG_SND_UNA_ADVANCED`).
    pub snd_una_advanced: bool,
    /// Packets this ACK removed from the retransmission queue, SACKed ones
    /// included (`tcp_clean_rtx_queue`'s count, `ack_sample.pkts_acked`).
    pub pkts_acked: u32,
    /// The recovery state when the ACK arrived, before it was processed
    /// (`icsk_ca_state` as `pkts_acked` hooks read it).
    pub prior_ca_state: CaState,
    /// `tcp_ack` took its slow path (`CA_ACK_SLOWPATH`): the ACK did not
    /// advance snd_una, or carried SACK blocks or ECE. A pure in-order ACK
    /// takes the fast path (header prediction); a window change also leaves
    /// it, which the simulator does not follow (the two paths differ only
    /// after duplicate ACKs, see Westwood+).
    pub slow_path: bool,
}

impl RateSample {
    /// `rs->interval_us > 0 && rs->delivered > 0`-style validity used by BBR.
    pub fn is_valid(&self) -> bool {
        self.delivered >= 0 && self.interval_us > 0
    }
}

/// A packet the loss detector just marked lost, with what it recorded when it
/// was sent (the BBRv3 tree passes the skb to `skb_marked_lost`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LostPacket {
    /// Segments in the lost packet (Linux `tcp_skb_pcount`; always 1 here).
    pub pcount: u32,
    /// Packets in flight just after it was sent.
    pub tx_in_flight: u32,
    /// `tp->delivered` when it was sent.
    pub tx_delivered: u64,
    /// `tp->lost` when it was sent.
    pub tx_lost: u64,
    /// It was sent while application-limited.
    pub is_app_limited: bool,
    /// The TCP stack still holds its send-time snapshot (not yet consumed by a SACK).
    pub has_tx_snapshot: bool,
    /// Its sequence number, in segments (the skb's `seq`).
    pub seq: u32,
    /// The lost transmission was a retransmission (`TCPCB_SACKED_RETRANS`).
    pub retrans: bool,
}

/// Read-only view of the connection that every hook receives
/// (the fields of `struct tcp_sock` the Linux algorithms read).
#[derive(Clone, Copy, Debug)]
pub struct Conn {
    pub mss: u32,
    pub init_cwnd: u32,
    /// `tcp_packets_in_flight()` now (after the ACK or loss being reported).
    pub in_flight: u32,
    /// Packets sent and not yet cumulatively ACKed (`tp->packets_out`).
    pub packets_out: u32,
    /// Total packets delivered (`tp->delivered`).
    pub delivered: u64,
    pub delivered_ce: u64,
    /// Total packets marked lost (`tp->lost`).
    pub lost: u64,
    /// Time of the latest delivery increase (`tp->delivered_mstamp`).
    pub delivered_mstamp: Time,
    pub srtt: Option<Dur>,
    /// Windowed minimum RTT (`tcp_min_rtt()`).
    pub min_rtt: Option<Dur>,
    pub ca_state: CaState,
    /// The sender used its whole cwnd recently (`tp->is_cwnd_limited`).
    pub is_cwnd_limited: bool,
    /// Largest packets_out in the last window (`tp->max_packets_out`).
    pub max_packets_out: u32,
    /// The connection is in an app-limited bubble (`tp->app_limited != 0`).
    pub app_limited: bool,
    /// Earliest departure time of the next packet (`tp->tcp_wstamp_ns`).
    pub next_departure: Time,
    /// Cumulative ACK point, in segments (`tp->snd_una`).
    pub snd_una: u32,
    /// Next new segment to send (`tp->snd_nxt`).
    pub snd_nxt: u32,
    /// ECN was negotiated on this connection.
    pub ecn_enabled: bool,
    /// The sender's pacing is done by sch_fq (`SK_PACING_FQ`) or internally;
    /// CUBIC's HyStart halves its ACK-train threshold when unpaced.
    pub paced: bool,
    /// Segments sent since the last change of `ca_state` (PRR's `prr_out`
    /// while in Recovery).
    pub sent_since_state_change: u32,
    /// Data segments sent, retransmissions included (`tp->data_segs_out`).
    pub data_segs_out: u64,
    /// One past the highest segment acknowledged, cumulatively or by SACK
    /// (`tcp_highest_sack_seq`).
    pub highest_sack: u32,
}

/// Events outside the ACK path (Linux `enum tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcEvent {
    /// First transmission when nothing is in flight (restart after idle).
    TxStart,
    /// The receiver saw a CE mark (ECN), and one without.
    EcnIsCe,
    EcnNoCe,
    /// New data after an idle period longer than the RTO
    /// (`tcp_cwnd_restart`, only for algorithms without `cong_control`).
    CwndRestart {
        idle: Dur,
        rto: Dur,
    },
    /// A tail-loss-probe retransmission repaired a lost tail packet (the
    /// BBRv3 tree's `CA_EVENT_TLP_RECOVERY`, sent before the CWR episode
    /// starts); `orig_app_limited` is the repaired packet's send-time
    /// app-limited flag (`tp->tlp_orig_data_app_limited`).
    TlpRecovery {
        orig_app_limited: bool,
    },
}

/// What the CC asks of the TCP core after an ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Mark the connection app-limited now (BBR in PROBE_RTT does this to
    /// keep low-rate samples out of its bandwidth filter).
    pub mark_app_limited: bool,
}

/// How the TCP core sizes a burst (a TSO/GSO super-packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsoPolicy {
    /// Linux `tcp_tso_autosize`, with this minimum segment count
    /// (`ca_ops->min_tso_segs`, else sysctl tcp_min_tso_segs = 2).
    Autosize { min_segs: u32 },
    /// The CC chooses the burst size (`ca_ops->tso_segs`, BBRv2/v3).
    Fixed(u32),
}

/// What a congestion control needs at creation.
#[derive(Clone, Copy, Debug)]
pub struct CcInit {
    pub now: Time,
    pub mss: u32,
    pub init_cwnd: u32,
    /// RTT measured by the handshake, if any.
    pub srtt: Option<Dur>,
    /// Seed of this flow's CC random stream.
    pub seed: u64,
    pub ecn_enabled: bool,
}

/// Pacing rate from `bytes_per_sec` in Linux's `sk_pacing_rate` unit.
pub fn rate_from_linux(bytes_per_sec: u64) -> Rate {
    Rate::from_bytes_per_sec(bytes_per_sec)
}
