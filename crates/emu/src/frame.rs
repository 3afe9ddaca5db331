//! Ethernet frames to packet descriptors: just enough IPv4 and TCP parsing
//! to find the flow (its receiver's port), the kind (SYN, SYN-ACK, data,
//! pure ACK), the ECN codepoint and the size on the wire, plus the two edits
//! the bottleneck makes to a frame: setting CE when a qdisc marks it, and
//! clamping a receiver's advertised window to the flow's `rwnd`.

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
        p.set_wire_len(self.wire_len);
        p.payload = u16::try_from(self.payload).unwrap_or(u16::MAX); // offloads are off: frames are at most an MTU
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
    let h = tcp_header(frame)?;
    let ip = &frame[ETH_HLEN..];
    let tcp = &frame[h.at..ETH_HLEN + h.total];
    let doff = h.doff;
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
        wire_len: (ETH_HLEN + h.total) as u32,
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

/// Where an IPv4 frame's TCP header lies: its offset in the frame, its
/// length, and the IP packet's total length.
struct TcpHeader {
    at: usize,
    doff: usize,
    total: usize,
}

/// The TCP header of an Ethernet + IPv4 + TCP frame; `None` for anything
/// else (ARP, IPv6, UDP, fragments after the first, truncated or malformed
/// headers).
fn tcp_header(frame: &[u8]) -> Option<TcpHeader> {
    if frame.len() < ETH_HLEN + 20 || be16(frame, 12) != ETH_P_IP {
        return None;
    }
    let ip = &frame[ETH_HLEN..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = be16(ip, 2) as usize;
    if ip[0] >> 4 != 4 || ihl < 20 || total < ihl + 20 || total > ip.len() || ip[9] != IPPROTO_TCP {
        return None;
    }
    // A fragment other than the first has no TCP header.
    if be16(ip, 6) & 0x1fff != 0 {
        return None;
    }
    let at = ETH_HLEN + ihl;
    let doff = (frame[at + 12] >> 4) as usize * 4;
    (doff >= 20 && ihl + doff <= total).then_some(TcpHeader { at, doff, total })
}

/// The window scale option (RFC 7323, kind 3) of a SYN or SYN-ACK frame:
/// the shift its sender applies to the windows it advertises later, if
/// the other side offered scaling too; `None` without the option.
pub fn window_scale(frame: &[u8]) -> Option<u8> {
    let h = tcp_header(frame)?;
    let opts = &frame[h.at + 20..h.at + h.doff];
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = opts.get(i + 1).copied().unwrap_or(0) as usize;
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == 3 && len == 3 {
                    // At most 14 (RFC 7323 2.3).
                    return Some(opts[i + 2].min(14));
                }
                i += len;
            }
        }
    }
    None
}

/// Each flow's `rwnd` enforced on the windows its receiver advertises.
///
/// Linux 6.18 derives a receiver's window from its buffer: a buffer locked
/// with `SO_RCVBUF` to the flow's `rwnd` (which the kernel doubles for its
/// bookkeeping) advertised 1.2-1.24 times the `rwnd` once the kernel had
/// measured the payload's share of the buffer's memory, and it re-derives
/// the window from the buffer then, overriding `TCP_WINDOW_CLAMP` (measured
/// on the Linux backend: `rwnd` 100,000 B advertised 124,200 B; docs/
/// validation.md). So the bottleneck clamps the advertised window of a
/// flow with `rwnd` to it, as the simulator's fixed window is.
#[derive(Clone, Debug, Default)]
pub struct WindowClamps {
    /// Per flow: its `rwnd` in bytes, if any.
    max: Vec<Option<u64>>,
    /// Per flow: whether its SYN offered window scaling.
    syn_scales: Vec<bool>,
    /// Per flow: the receiver's window scale in effect.
    shift: Vec<u8>,
    /// Frames whose window was clamped.
    pub clamped: u64,
}

impl WindowClamps {
    pub fn new(max: Vec<Option<u64>>) -> WindowClamps {
        let n = max.len();
        WindowClamps {
            max,
            syn_scales: vec![false; n],
            shift: vec![0; n],
            clamped: 0,
        }
    }

    /// A frame of flow `f` from its sender: a SYN's scaling offer.
    pub fn from_sender(&mut self, f: usize, kind: Kind, frame: &[u8]) {
        if kind == Kind::Syn && self.max[f].is_some() {
            self.syn_scales[f] = window_scale(frame).is_some();
        }
    }

    /// A frame of flow `f` from its receiver: its window clamped to the
    /// flow's `rwnd`; true if the frame changed.
    pub fn from_receiver(&mut self, f: usize, kind: Kind, frame: &mut [u8]) -> bool {
        let Some(max) = self.max[f] else {
            return false;
        };
        let shift = if kind == Kind::SynAck {
            // Scaling is in effect only if both sides offered it; the
            // SYN-ACK's own window is never scaled.
            self.shift[f] = window_scale(frame)
                .filter(|_| self.syn_scales[f])
                .unwrap_or(0);
            0
        } else {
            self.shift[f]
        };
        let changed = clamp_window(frame, shift, max);
        self.clamped += u64::from(changed);
        changed
    }
}

/// Clamp the window a frame advertises, `shift` its scale (0 in a SYN or
/// SYN-ACK, whose window is never scaled), to at most `max_bytes`, rounded
/// down to the scale's unit but never to zero, and fix the TCP checksum
/// incrementally (RFC 1624, eqn. 3). True if the frame was changed.
pub fn clamp_window(frame: &mut [u8], shift: u8, max_bytes: u64) -> bool {
    let Some(TcpHeader { at, .. }) = tcp_header(frame) else {
        return false;
    };
    let old = be16(frame, at + 14);
    let cap = (max_bytes >> shift).clamp(1, u64::from(u16::MAX)) as u16;
    if old <= cap {
        return false;
    }
    frame[at + 14..at + 16].copy_from_slice(&cap.to_be_bytes());
    // HC' = ~(~HC + ~m + m'), in ones' complement arithmetic.
    let hc = be16(frame, at + 16);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(cap);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    frame[at + 16..at + 18].copy_from_slice(&(!(sum as u16)).to_be_bytes());
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
        assert_eq!(
            (p.flow, p.tag, p.wire_len(), p.payload),
            (3, 77, 1514, 1448)
        );
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
        assert_eq!(ack.wire_len(), 66);
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

    /// The TCP checksum over the pseudo-header and segment (RFC 793),
    /// computed in full; 0 when the frame's checksum field holds it.
    fn tcp_checksum_residue(f: &[u8]) -> u16 {
        let ip = &f[ETH_HLEN..];
        let total = be16(ip, 2) as usize;
        let seg = &ip[20..total];
        let mut sum: u32 = 0;
        let mut add = |b: &[u8]| {
            for c in b.chunks(2) {
                sum += (u32::from(c[0]) << 8) | u32::from(c.get(1).copied().unwrap_or(0));
            }
        };
        add(&ip[12..20]);
        add(&[0, IPPROTO_TCP]);
        add(&(seg.len() as u16).to_be_bytes());
        add(seg);
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// `f` with a valid TCP checksum.
    fn with_tcp_checksum(mut f: Vec<u8>) -> Vec<u8> {
        let at = ETH_HLEN + 20;
        f[at + 16..at + 18].copy_from_slice(&[0, 0]);
        let c = tcp_checksum_residue(&f);
        f[at + 16..at + 18].copy_from_slice(&c.to_be_bytes());
        assert_eq!(tcp_checksum_residue(&f), 0);
        f
    }

    #[test]
    fn a_window_is_clamped_with_a_valid_checksum() {
        let at = ETH_HLEN + 20;
        for (field, shift, max, want) in [
            (0xf2a8u16, 0u8, 4344u64, Some(4344u16)),
            (970, 7, 100_000, Some(781)), // 124,160 -> 99,968 bytes
            (700, 7, 100_000, None),      // 89,600: below the clamp
            (5, 14, 1000, Some(1)),       // never a zero window
        ] {
            let mut f = tcp_frame(6001, 40001, TCP_ACK, 0, 0);
            f[at + 14..at + 16].copy_from_slice(&field.to_be_bytes());
            let mut f = with_tcp_checksum(f);
            assert_eq!(clamp_window(&mut f, shift, max), want.is_some());
            assert_eq!(be16(&f, at + 14), want.unwrap_or(field));
            assert_eq!(
                tcp_checksum_residue(&f),
                0,
                "checksum after {field} -> {want:?}"
            );
        }
        // Not TCP: left alone.
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert!(!clamp_window(&mut arp, 0, 1));
    }

    #[test]
    fn the_window_scale_is_read_from_the_options() {
        let at = ETH_HLEN + 20;
        // 12 option bytes: MSS (4), NOP, window scale 7 (3), NOP, NOP, SACK-permitted (2).
        let mut f = tcp_frame(6001, 40001, TCP_SYN | TCP_ACK, 0, 0);
        f[at + 20..at + 32].copy_from_slice(&[2, 4, 5, 0xb4, 1, 3, 3, 7, 1, 1, 4, 2]);
        assert_eq!(window_scale(&f), Some(7));
        f[at + 25..at + 28].copy_from_slice(&[1, 1, 1]);
        assert_eq!(window_scale(&f), None, "no option");
        f[at + 20..at + 24].copy_from_slice(&[3, 3, 30, 0]);
        assert_eq!(window_scale(&f), Some(14), "at most 14");
        f[at + 20..at + 22].copy_from_slice(&[8, 40]);
        assert_eq!(window_scale(&f), None, "an option running past the header");
    }

    #[test]
    fn a_flows_rwnd_clamps_its_receivers_windows_at_their_scale() {
        let at = ETH_HLEN + 20;
        let ws = |flags: u8, shift: u8| {
            let mut f = tcp_frame(40001, 6001, flags, 0, 0);
            f[at + 20..at + 24].copy_from_slice(&[1, 3, 3, shift]);
            f
        };
        let window = |f: &[u8]| u32::from(be16(f, at + 14));
        let mut c = WindowClamps::new(vec![Some(100_000), None]);
        c.from_sender(0, Kind::Syn, &ws(TCP_SYN, 9));
        // The SYN-ACK's window is unscaled, and below the rwnd.
        let mut synack = ws(TCP_SYN | TCP_ACK, 7);
        synack[at + 14..at + 16].copy_from_slice(&64_240u16.to_be_bytes());
        assert!(!c.from_receiver(0, Kind::SynAck, &mut synack));
        // Then windows in units of 128 bytes: 124,200 -> 99,968.
        let mut ack = tcp_frame(6001, 40001, TCP_ACK, 0, 0);
        ack[at + 14..at + 16].copy_from_slice(&((124_200u32 >> 7) as u16).to_be_bytes());
        assert!(c.from_receiver(0, Kind::Ack, &mut ack));
        assert_eq!(window(&ack) << 7, 99_968);
        // A flow without rwnd is left alone.
        let mut other = ack.clone();
        other[at + 14..at + 16].copy_from_slice(&0xffffu16.to_be_bytes());
        assert!(!c.from_receiver(1, Kind::Ack, &mut other));
        assert_eq!(c.clamped, 1);
        // A SYN without scaling: the receiver's windows are not scaled.
        let mut c = WindowClamps::new(vec![Some(4_344)]);
        c.from_sender(0, Kind::Syn, &tcp_frame(40001, 6001, TCP_SYN, 0, 0));
        let mut synack = ws(TCP_SYN | TCP_ACK, 7);
        c.from_receiver(0, Kind::SynAck, &mut synack);
        let mut ack = tcp_frame(6001, 40001, TCP_ACK, 0, 0);
        ack[at + 14..at + 16].copy_from_slice(&5_792u16.to_be_bytes());
        assert!(c.from_receiver(0, Kind::Ack, &mut ack));
        assert_eq!(window(&ack), 4_344);
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
