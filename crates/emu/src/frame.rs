//! Ethernet frames to packet descriptors: just enough IPv4 and TCP parsing
//! to find the flow (its receiver's port), the kind (SYN, SYN-ACK, data,
//! pure ACK), the ECN codepoint and the size on the wire, plus the one edit
//! the bottleneck makes to a frame: setting CE when a qdisc marks it.

use ccarena_sim::packet::{Ecn, Kind, Packet};

pub const ETH_HLEN: usize = 14;
pub const ETH_P_IP: u16 = 0x0800;
pub const IPPROTO_TCP: u8 = 6;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_ACK: u8 = 0x10;

/// What the bottleneck needs to know of a TCP/IPv4 frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpFrame {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub ecn: Ecn,
    /// TCP payload bytes.
    pub payload: u32,
    /// The whole frame (Ethernet header included), as Linux qdiscs count `skb->len`.
    pub wire_len: u32,
}

impl TcpFrame {
    pub fn kind(&self) -> Kind {
        let syn = self.flags & TCP_SYN != 0;
        let ack = self.flags & TCP_ACK != 0;
        match (syn, ack) {
            (true, false) => Kind::Syn,
            (true, true) => Kind::SynAck,
            _ if self.payload > 0 || self.flags & TCP_FIN != 0 => Kind::Data,
            _ => Kind::Ack,
        }
    }

    /// The descriptor the simulator's shaper and qdiscs work on. `flow` is
    /// the run's flow index, `tag` the frame's slot in the frame store.
    pub fn to_packet(&self, flow: u32, tag: u32) -> Packet {
        let mut p = match self.kind() {
            Kind::Data => Packet::data(flow, 0, self.payload),
            Kind::Ack => Packet::ack(flow, 0, &[]),
            k => Packet::control(flow, k),
        };
        // Sizes and sequence numbers come from the frame, not from the
        // simulator's model of the headers.
        p.wire_len = self.wire_len;
        p.payload = self.payload;
        p.seq = if p.kind == Kind::Ack {
            self.ack
        } else {
            self.seq
        };
        p.ecn = self.ecn;
        p.tag = tag;
        p
    }
}

fn ecn_of(tos: u8) -> Ecn {
    match tos & 3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parse a frame as Ethernet + IPv4 + TCP; `None` for anything else (ARP,
/// IPv6, UDP, fragments, truncated or malformed headers), which the
/// bottleneck forwards untouched.
pub fn parse(frame: &[u8]) -> Option<TcpFrame> {
    if frame.len() < ETH_HLEN + 20 || be16(frame, 12) != ETH_P_IP {
        return None;
    }
    let ip = &frame[ETH_HLEN..];
    let ver_ihl = ip[0];
    if ver_ihl >> 4 != 4 {
        return None;
    }
    let ihl = (ver_ihl & 0x0f) as usize * 4;
    let total = be16(ip, 2) as usize;
    if ihl < 20 || total < ihl || total > ip.len() || ip[9] != IPPROTO_TCP {
        return None;
    }
    // A fragment other than the first has no TCP header.
    if be16(ip, 6) & 0x1fff != 0 {
        return None;
    }
    let tcp = &ip[ihl..total];
    if tcp.len() < 20 {
        return None;
    }
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    Some(TcpFrame {
        src: [ip[12], ip[13], ip[14], ip[15]],
        dst: [ip[16], ip[17], ip[18], ip[19]],
        sport: be16(tcp, 0),
        dport: be16(tcp, 2),
        seq: be32(tcp, 4),
        ack: be32(tcp, 8),
        flags: tcp[13],
        ecn: ecn_of(ip[1]),
        payload: (tcp.len() - doff) as u32,
        wire_len: (ETH_HLEN + total) as u32,
    })
}

/// The IPv4 header checksum (RFC 791) of `hdr`, its checksum field taken as zero.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for i in (0..hdr.len()).step_by(2) {
        if i == 10 {
            continue;
        }
        let hi = hdr[i] as u32;
        let lo = hdr.get(i + 1).copied().unwrap_or(0) as u32;
        sum += (hi << 8) | lo;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Write `ecn` into an IPv4 frame's TOS byte and fix the header checksum.
/// Returns false (and leaves the frame alone) when it is not IPv4.
pub fn set_ecn(frame: &mut [u8], ecn: Ecn) -> bool {
    if frame.len() < ETH_HLEN + 20 || be16(frame, 12) != ETH_P_IP {
        return false;
    }
    let ip = &mut frame[ETH_HLEN..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    if ihl < 20 || ihl > ip.len() {
        return false;
    }
    let bits = match ecn {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    };
    ip[1] = (ip[1] & !3) | bits;
    let c = ipv4_checksum(&ip[..ihl]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A TCP/IPv4 frame with the given flags, ports, payload and TOS byte,
    /// with a correct IP checksum and a 12-byte timestamp option.
    pub fn tcp_frame(sport: u16, dport: u16, flags: u8, payload: usize, tos: u8) -> Vec<u8> {
        let tcp_len = 32 + payload;
        let total = 20 + tcp_len;
        let mut f = vec![0u8; ETH_HLEN + total];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        let ip = &mut f[ETH_HLEN..];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64;
        ip[9] = IPPROTO_TCP;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 1, 1]);
        let c = ipv4_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let tcp = &mut ip[20..];
        tcp[0..2].copy_from_slice(&sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&dport.to_be_bytes());
        tcp[4..8].copy_from_slice(&1000u32.to_be_bytes());
        tcp[8..12].copy_from_slice(&2000u32.to_be_bytes());
        tcp[12] = 8 << 4; // 32-byte header
        tcp[13] = flags;
        f
    }

    #[test]
    fn full_data_segment_is_1514_bytes_of_one_flow() {
        let f = tcp_frame(40000, 6001, TCP_ACK, 1448, 0);
        assert_eq!(f.len(), 1514);
        let t = parse(&f).unwrap();
        assert_eq!((t.sport, t.dport), (40000, 6001));
        assert_eq!(t.payload, 1448);
        assert_eq!(t.wire_len, 1514);
        assert_eq!(t.kind(), Kind::Data);
        assert_eq!(t.src, [10, 0, 0, 1]);
        let p = t.to_packet(3, 77);
        assert_eq!((p.flow, p.tag, p.wire_len, p.payload), (3, 77, 1514, 1448));
        assert_eq!(p.seq, 1000);
    }

    #[test]
    fn kinds_from_flags() {
        let k = |flags, payload| parse(&tcp_frame(1, 2, flags, payload, 0)).unwrap().kind();
        assert_eq!(k(TCP_SYN, 0), Kind::Syn);
        assert_eq!(k(TCP_SYN | TCP_ACK, 0), Kind::SynAck);
        assert_eq!(k(TCP_ACK, 0), Kind::Ack);
        assert_eq!(k(TCP_ACK | TCP_FIN, 0), Kind::Data);
        let ack = parse(&tcp_frame(1, 2, TCP_ACK, 0, 0))
            .unwrap()
            .to_packet(0, 0);
        assert_eq!(ack.wire_len, 66);
        assert_eq!(ack.seq, 2000);
    }

    #[test]
    fn ecn_bits_are_read_and_written_with_a_valid_checksum() {
        let mut f = tcp_frame(1, 2, TCP_ACK, 100, 0x02);
        assert_eq!(parse(&f).unwrap().ecn, Ecn::Ect0);
        assert!(set_ecn(&mut f, Ecn::Ce));
        let t = parse(&f).unwrap();
        assert_eq!(t.ecn, Ecn::Ce);
        let ip = &f[ETH_HLEN..ETH_HLEN + 20];
        assert_eq!(ipv4_checksum(ip).to_be_bytes(), [ip[10], ip[11]]);
        assert_eq!(parse(&tcp_frame(1, 2, 0, 0, 0x01)).unwrap().ecn, Ecn::Ect1);
    }

    #[test]
    fn checksum_matches_a_known_header() {
        // The example header of RFC 1071 style checks: a header whose
        // checksum field holds its checksum sums to 0xffff.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&hdr), 0xb861);
    }

    #[test]
    fn other_frames_are_not_tcp() {
        // ARP
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert!(parse(&arp).is_none());
        // UDP
        let mut udp = tcp_frame(1, 2, 0, 10, 0);
        udp[ETH_HLEN + 9] = 17;
        assert!(parse(&udp).is_none());
        // Truncated: the IP total length says more than the frame holds.
        let f = tcp_frame(1, 2, TCP_ACK, 100, 0);
        assert!(parse(&f[..f.len() - 1]).is_none());
        // Too short for a TCP header.
        assert!(parse(&f[..ETH_HLEN + 20]).is_none());
        // A later fragment.
        let mut frag = tcp_frame(1, 2, TCP_ACK, 100, 0);
        frag[ETH_HLEN + 7] = 0x10;
        assert!(parse(&frag).is_none());
    }

    #[test]
    fn trailing_ethernet_padding_is_not_counted() {
        // A pure ACK is 66 bytes, above Ethernet's 60-byte minimum; a short
        // frame padded by the link keeps the IP length as its size.
        let mut f = tcp_frame(1, 2, TCP_ACK, 0, 0);
        f.extend_from_slice(&[0; 6]);
        assert_eq!(parse(&f).unwrap().wire_len, 66);
    }
}
