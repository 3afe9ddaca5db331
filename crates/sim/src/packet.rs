//! Packet metadata. There is no payload: a packet is a small `Copy` header
//! that moves by value through links and queues.
//!
//! Sequence numbers count segments, not bytes: segment `i` of a flow carries
//! payload bytes `[i * mss, (i + 1) * mss)` (the last one may be shorter).
//! Linux counts its congestion window in segments too, and with a fixed MSS
//! the two numberings are equivalent.

use crate::units::Time;

/// Bytes of IPv4 + TCP headers with the timestamp option: 20 + 20 + 12.
pub const IP_TCP_TS_HEADER: u32 = 52;
/// Link framing counted by every link and queue: the 14-byte Ethernet
/// header, as Linux qdiscs count `skb->len` on an Ethernet device (no
/// preamble, FCS or inter-frame gap). A 1500-byte IP packet is 1514 bytes on
/// the wire; a pure ACK is 52 + 14 = 66 bytes (more with SACK blocks).
pub const LINK_FRAMING: u32 = 14;
/// Default MSS: a 1500-byte MTU minus 52 bytes of headers.
pub const DEFAULT_MSS: u32 = 1448;
/// SYN and SYN-ACK size on the wire (IP+TCP with MSS, SACK-permitted,
/// timestamps and window-scale options: 60 bytes) plus framing.
pub const SYN_WIRE_LEN: u32 = 60 + LINK_FRAMING;
/// Maximum SACK blocks an ACK carries next to the timestamp option (RFC 2018, Linux).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Syn,
    SynAck,
    Data,
    Ack,
}

/// The two ECN bits of the IP header (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl Ecn {
    pub fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// A SACK block in segment numbers: segments `start..end` were received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u32,
    pub end: u32,
}

pub mod flags {
    /// ECN-Echo (receiver saw CE).
    pub const ECE: u8 = 1;
    /// Congestion Window Reduced (sender reacted to ECE).
    pub const CWR: u8 = 2;
    /// A retransmitted data segment (for accounting only).
    pub const RETRANS: u8 = 4;
    /// Push: the segment ends an application write (`tcp/push.rs`).
    pub const PSH: u8 = 8;
    /// An ACK that advertises a window (`Packet::wnd`; `[hosts]
    /// advertised_window`).
    pub const WND: u8 = 16;
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub flow: u32,
    pub src_host: u16,
    pub dst_host: u16,
    pub kind: Kind,
    pub ecn: Ecn,
    pub flags: u8,
    pub sack_len: u8,
    /// Data: segment index. Ack: cumulative ACK (next segment expected).
    pub seq: u32,
    /// Bytes counted on links and in queues: IP packet plus link framing
    /// (at most 65066: an MSS is at most 65000); read it with `wire_len()`.
    wire_len16: u16,
    /// The RFC 7323 timestamp `ts` does not hold, the low 16 bits of the
    /// ms clock: an ACK's TSval (the receiver's clock), a data segment's
    /// TSecr (the sender's `ts_recent`, the last ACK's TSval), for the
    /// receiver's RTT (`tcp_rcv_rtt_measure_ts`); 0 on other packets.
    pub ts_other: u16,
    /// TCP payload bytes (0 for ACKs; an MSS is at most 65000).
    pub payload: u16,
    /// An ACK's advertised window in segments above its cumulative ACK
    /// (`flags::WND` set; at most 65535 segments, 95 MB at the default
    /// MSS): the sender may send up to `seq + wnd` (`tcp_wnd_end`).
    pub wnd: u16,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// Set by the queue that holds the packet, to measure its sojourn time.
    pub enqueued: Time,
    /// Opaque to the network and the hosts: the slot, in a side store, of
    /// what this descriptor stands for. The user-space bottleneck of the
    /// Linux backend keeps here the slot of the real frame, so a packet a
    /// qdisc drops or sends out of order is matched with its frame; a
    /// simulated capture (`capture`), the slot of the header fields fixed
    /// when the packet was sent; 0 otherwise.
    pub tag: u32,
    /// RFC 7323 timestamp the TCP model reads (`tcp::ts_clock`, ms): a data
    /// segment's TSval (the sender's clock when it left), an ACK's TSecr
    /// (the receiver's `ts_recent`); 0 on other packets.
    pub ts: u32,
}

impl Packet {
    pub fn data(flow: u32, seq: u32, payload: u32) -> Packet {
        debug_assert!(payload <= u32::from(u16::MAX));
        Packet {
            flow,
            src_host: 0,
            dst_host: 0,
            kind: Kind::Data,
            ecn: Ecn::NotEct,
            flags: 0,
            sack_len: 0,
            seq,
            wire_len16: (payload + IP_TCP_TS_HEADER + LINK_FRAMING) as u16,
            ts_other: 0,
            payload: payload as u16,
            wnd: 0,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            enqueued: Time::ZERO,
            tag: 0,
            ts: 0,
        }
    }

    /// A pure ACK; its size grows with the SACK option (2 bytes of kind and
    /// length plus 8 per block, padded to 4 with two NOPs).
    pub fn ack(flow: u32, cum_ack: u32, sack: &[SackBlock]) -> Packet {
        let n = sack.len().min(MAX_SACK_BLOCKS);
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        blocks[..n].copy_from_slice(&sack[..n]);
        let sack_opt = if n == 0 { 0 } else { 4 + 8 * n as u32 };
        Packet {
            flow,
            src_host: 0,
            dst_host: 0,
            kind: Kind::Ack,
            ecn: Ecn::NotEct,
            flags: 0,
            sack_len: n as u8,
            seq: cum_ack,
            wire_len16: (IP_TCP_TS_HEADER + sack_opt + LINK_FRAMING) as u16,
            ts_other: 0,
            payload: 0,
            wnd: 0,
            sack: blocks,
            enqueued: Time::ZERO,
            tag: 0,
            ts: 0,
        }
    }

    pub fn control(flow: u32, kind: Kind) -> Packet {
        let mut p = Packet::ack(flow, 0, &[]);
        p.kind = kind;
        p.set_wire_len(SYN_WIRE_LEN);
        p
    }

    /// Bytes counted on links and in queues: IP packet plus link framing.
    pub fn wire_len(&self) -> u32 {
        u32::from(self.wire_len16)
    }

    /// Set the size on the wire (a frame's, a handshake's); at most 65535.
    pub fn set_wire_len(&mut self, bytes: u32) {
        debug_assert!(bytes <= u32::from(u16::MAX));
        self.wire_len16 = bytes.min(u32::from(u16::MAX)) as u16;
    }

    pub fn sacks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }

    /// A SYN or SYN-ACK: not counted among a flow's segments.
    pub fn is_handshake(&self) -> bool {
        matches!(self.kind, Kind::Syn | Kind::SynAck)
    }

    pub fn has_flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// The right edge an ACK advertises (segments), if it advertises one.
    pub fn wnd_end(&self) -> Option<u32> {
        self.has_flag(flags::WND)
            .then(|| self.seq.saturating_add(u32::from(self.wnd)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_is_1514_bytes_on_the_wire() {
        assert_eq!(Packet::data(0, 0, DEFAULT_MSS).wire_len(), 1514);
    }

    #[test]
    fn ack_size_grows_with_sack_blocks() {
        assert_eq!(Packet::ack(0, 5, &[]).wire_len(), 66);
        let b = SackBlock { start: 7, end: 9 };
        assert_eq!(Packet::ack(0, 5, &[b]).wire_len(), 66 + 12);
        assert_eq!(Packet::ack(0, 5, &[b, b, b]).wire_len(), 66 + 28);
    }

    #[test]
    fn packet_stays_small() {
        assert!(
            std::mem::size_of::<Packet>() <= 64,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }
}
