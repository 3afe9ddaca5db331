//! Ethernet II / IPv4 / TCP headers as they are on the wire (RFC 791,
//! RFC 9293, RFC 7323 timestamps and window scale, RFC 2018 SACK, RFC 3168
//! ECN bits), with correct checksums. The payload is zeros: only its length
//! is known, and zeros add nothing to the ones'-complement sum, so the TCP
//! checksum is computed over the headers and the length alone.

/// TCP header flag bits (byte 13).
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// One end of a connection as the headers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub port: u16,
}

/// The TCP fields of one segment; `options` is already laid out (a multiple
/// of 4 bytes, at most 40).
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub options: &'a [u8],
    pub payload: u32,
}

const ETH_LEN: usize = 14;
const IP_LEN: usize = 20;

/// Ones'-complement sum of 16-bit big-endian words (an odd last byte is
/// padded with zero), not yet folded.
fn sum16(data: &[u8]) -> u32 {
    let mut s = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = chunks.remainder() {
        s += u32::from(*b) << 8;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xFFFF) + (s >> 16);
    }
    !(s as u16)
}

/// Write the frame's headers into `buf` (cleared first) and return the
/// frame's length on the wire (headers and payload). `ip_id` is the IPv4
/// identification, `tos` the IPv4 TOS byte (DSCP and the ECN bits).
pub fn write(
    buf: &mut Vec<u8>,
    src: &Endpoint,
    dst: &Endpoint,
    ip_id: u16,
    tos: u8,
    seg: &Segment<'_>,
) -> u32 {
    debug_assert!(seg.options.len().is_multiple_of(4) && seg.options.len() <= 40);
    let tcp_len = 20 + seg.options.len();
    let ip_total = IP_LEN + tcp_len + seg.payload as usize;
    buf.clear();
    // Ethernet II.
    buf.extend_from_slice(&dst.mac);
    buf.extend_from_slice(&src.mac);
    buf.extend_from_slice(&0x0800u16.to_be_bytes());
    // IPv4: version 4, 5 words, DF, TTL 64 (Linux's default), protocol 6.
    let ip = buf.len();
    buf.extend_from_slice(&[0x45, tos]);
    buf.extend_from_slice(&(ip_total as u16).to_be_bytes());
    buf.extend_from_slice(&ip_id.to_be_bytes());
    buf.extend_from_slice(&0x4000u16.to_be_bytes());
    buf.extend_from_slice(&[64, 6, 0, 0]);
    buf.extend_from_slice(&src.ip);
    buf.extend_from_slice(&dst.ip);
    let c = fold(sum16(&buf[ip..ip + IP_LEN]));
    buf[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    // TCP.
    let tcp = buf.len();
    buf.extend_from_slice(&src.port.to_be_bytes());
    buf.extend_from_slice(&dst.port.to_be_bytes());
    buf.extend_from_slice(&seg.seq.to_be_bytes());
    buf.extend_from_slice(&seg.ack.to_be_bytes());
    buf.push(((tcp_len / 4) as u8) << 4);
    buf.push(seg.flags);
    buf.extend_from_slice(&seg.window.to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    buf.extend_from_slice(seg.options);
    // Pseudo-header (addresses, protocol, TCP length), header; the zero
    // payload adds nothing.
    let tcp_total = tcp_len as u32 + seg.payload;
    let pseudo = sum16(&src.ip) + sum16(&dst.ip) + 6 + (tcp_total >> 16) + (tcp_total & 0xFFFF);
    let c = fold(pseudo + sum16(&buf[tcp..]));
    buf[tcp + 16..tcp + 18].copy_from_slice(&c.to_be_bytes());
    (ETH_LEN + ip_total) as u32
}

/// TCP options, laid out as Linux lays them (`tcp_options_write`).
pub mod options {
    /// SYN and SYN-ACK: MSS, SACK permitted, timestamps, NOP, window scale
    /// (20 bytes).
    pub fn syn(out: &mut Vec<u8>, mss: u16, tsval: u32, tsecr: u32, wscale: u8) {
        out.clear();
        out.extend_from_slice(&[2, 4]);
        out.extend_from_slice(&mss.to_be_bytes());
        out.extend_from_slice(&[4, 2, 8, 10]);
        out.extend_from_slice(&tsval.to_be_bytes());
        out.extend_from_slice(&tsecr.to_be_bytes());
        out.extend_from_slice(&[1, 3, 3, wscale]);
    }

    /// Any other segment: NOP, NOP, timestamps (12 bytes), then NOP, NOP,
    /// SACK with the blocks given (byte sequence numbers), if any.
    pub fn established(out: &mut Vec<u8>, tsval: u32, tsecr: u32, sack: &[(u32, u32)]) {
        out.clear();
        out.extend_from_slice(&[1, 1, 8, 10]);
        out.extend_from_slice(&tsval.to_be_bytes());
        out.extend_from_slice(&tsecr.to_be_bytes());
        if !sack.is_empty() {
            out.extend_from_slice(&[1, 1, 5, (2 + 8 * sack.len()) as u8]);
            for &(l, r) in sack {
                out.extend_from_slice(&l.to_be_bytes());
                out.extend_from_slice(&r.to_be_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(last: u8, port: u16) -> Endpoint {
        Endpoint {
            mac: [2, 0xcc, 0xa0, 0, 0, last],
            ip: [10, 201, 0, last],
            port,
        }
    }

    #[test]
    fn checksums_verify_to_zero_over_the_whole_segment() {
        let mut opts = Vec::new();
        options::established(&mut opts, 1234, 5678, &[(100, 200), (300, 400)]);
        assert_eq!(opts.len(), 12 + 4 + 16);
        let mut buf = Vec::new();
        let seg = Segment {
            seq: 0xFFFF_FF00,
            ack: 77,
            flags: tcp_flags::ACK | tcp_flags::PSH,
            window: 509,
            options: &opts,
            payload: 1448,
        };
        let wire = write(&mut buf, &ep(1, 40000), &ep(2, 6000), 9, 0x02, &seg);
        assert_eq!(wire, 14 + 20 + 20 + 32 + 1448);
        // The IPv4 header sums to 0xFFFF with its checksum in.
        assert_eq!(fold(sum16(&buf[14..34])), 0);
        // The TCP segment, with the payload's zeros materialized, too.
        let mut whole = buf[34..].to_vec();
        whole.resize(whole.len() + 1448, 0);
        let len = whole.len() as u32;
        let pseudo = sum16(&[10, 201, 0, 1]) + sum16(&[10, 201, 0, 2]) + 6 + len;
        assert_eq!(fold(pseudo + sum16(&whole)), 0);
        assert_eq!(
            buf[34 + 12] >> 4,
            13,
            "data offset: 20 bytes of header, 12 of timestamps, 20 of SACK"
        );
        assert_eq!(u16::from_be_bytes([buf[16], buf[17]]) as u32, wire - 14);
    }

    #[test]
    fn syn_options_are_twenty_bytes_as_the_simulator_counts_them() {
        let mut opts = Vec::new();
        options::syn(&mut opts, 1448, 1, 0, 7);
        assert_eq!(opts.len(), 20);
        assert_eq!(
            20 + 20 + opts.len() as u32,
            crate::packet::SYN_WIRE_LEN - crate::packet::LINK_FRAMING
        );
    }
}
