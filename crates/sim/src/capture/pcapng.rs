//! pcapng files (draft-ietf-opsawg-pcapng, "PCAP Next Generation Capture
//! File Format"): a Section Header Block, one Interface Description Block
//! per capture point, then one Enhanced Packet Block per frame, all
//! little-endian. Timestamps are nanoseconds (`if_tsresol` = 9).
//!
//! And classic pcap files read (the format tcpdump writes; `pcap-savefile`
//! (5)), so a capture taken by tcpdump on the Linux backend becomes the
//! same kind of file the simulator writes.

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Option codes: end of options, comment, `shb_userappl`, `if_name`,
/// `if_tsresol`.
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

fn push_option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len() + pad4(value.len()) - value.len(), 0);
}

/// A block: type, total length, body (padded to 4 bytes), total length.
fn push_block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    debug_assert_eq!(body.len() % 4, 0);
    let total = (12 + body.len()) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
}

/// One pcapng file being written, in memory: a section and its
/// interfaces, then frames in the order they are given.
#[derive(Clone, Debug)]
pub struct Writer {
    buf: Vec<u8>,
    interfaces: u32,
    snaplen: u32,
    frames: u64,
}

impl Writer {
    /// A section written by `application`, with `comment`; frames are cut
    /// to `snaplen` bytes.
    pub fn new(application: &str, comment: &str, snaplen: u32) -> Writer {
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes()); // major version
        body.extend_from_slice(&0u16.to_le_bytes()); // minor version
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        if !comment.is_empty() {
            push_option(&mut body, OPT_COMMENT, comment.as_bytes());
        }
        push_option(&mut body, SHB_USERAPPL, application.as_bytes());
        push_option(&mut body, OPT_END, &[]);
        let mut buf = Vec::new();
        push_block(&mut buf, SHB, &body);
        Writer {
            buf,
            interfaces: 0,
            snaplen,
            frames: 0,
        }
    }

    /// Describe an Ethernet interface named `name`; returns its id.
    pub fn add_interface(&mut self, name: &str) -> u32 {
        let mut body = Vec::new();
        body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes()); // reserved
        body.extend_from_slice(&self.snaplen.to_le_bytes());
        push_option(&mut body, IF_NAME, name.as_bytes());
        push_option(&mut body, IF_TSRESOL, &[9]); // 10^-9 s
        push_option(&mut body, OPT_END, &[]);
        push_block(&mut self.buf, IDB, &body);
        self.interfaces += 1;
        self.interfaces - 1
    }

    /// A frame of `orig_len` bytes seen at `ts_ns` on `interface`, of
    /// which `data` are kept (cut to the snap length).
    pub fn frame(&mut self, interface: u32, ts_ns: u64, data: &[u8], orig_len: u32) {
        debug_assert!(interface < self.interfaces);
        let kept = data.len().min(self.snaplen as usize);
        let total = (32 + pad4(kept)) as u32;
        let b = &mut self.buf;
        b.extend_from_slice(&EPB.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&interface.to_le_bytes());
        b.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        b.extend_from_slice(&(kept as u32).to_le_bytes());
        b.extend_from_slice(&orig_len.max(kept as u32).to_le_bytes());
        b.extend_from_slice(&data[..kept]);
        b.resize(b.len() + pad4(kept) - kept, 0);
        b.extend_from_slice(&total.to_le_bytes());
        self.frames += 1;
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// One captured frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub interface: u32,
    pub ts_ns: u64,
    /// The bytes kept (at most the snap length).
    pub data: Vec<u8>,
    /// The frame's length on the wire.
    pub orig_len: u32,
}

/// The frames of a pcapng file this module wrote (one little-endian
/// section, nanosecond timestamps). For tests and tools; other writers'
/// files may use options this reader does not interpret.
pub fn read_pcapng(bytes: &[u8]) -> Result<Vec<Frame>, String> {
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
    let mut frames = Vec::new();
    let mut o = 0;
    while o < bytes.len() {
        if o + 12 > bytes.len() {
            return Err(format!("a block header cut short at byte {o}"));
        }
        let (kind, len) = (u32_at(o), u32_at(o + 4) as usize);
        if len < 12 || len % 4 != 0 || o + len > bytes.len() || u32_at(o + len - 4) as usize != len
        {
            return Err(format!("a block of bad length {len} at byte {o}"));
        }
        if o == 0 && (kind != SHB || u32_at(8) != BYTE_ORDER_MAGIC) {
            return Err("not a little-endian pcapng section".into());
        }
        if kind == EPB {
            let (iface, hi, lo, kept, orig) = (
                u32_at(o + 8),
                u32_at(o + 12),
                u32_at(o + 16),
                u32_at(o + 20),
                u32_at(o + 24),
            );
            let start = o + 28;
            if start + kept as usize > o + len - 4 {
                return Err(format!(
                    "a frame of {kept} bytes overruns its block at byte {o}"
                ));
            }
            let ts = (u64::from(hi) << 32) | u64::from(lo);
            frames.push(Frame {
                interface: iface,
                ts_ns: ts,
                data: bytes[start..start + kept as usize].to_vec(),
                orig_len: orig,
            });
        }
        o += len;
    }
    Ok(frames)
}

/// A classic pcap file: its link type, snap length and frames (interface 0).
pub struct PcapFile {
    pub linktype: u32,
    pub snaplen: u32,
    pub frames: Vec<Frame>,
}

/// Read a classic pcap file (either byte order, microsecond or
/// nanosecond timestamps).
pub fn read_pcap(bytes: &[u8]) -> Result<PcapFile, String> {
    if bytes.len() < 24 {
        return Err(format!(
            "{} bytes: too short for a pcap file header (24)",
            bytes.len()
        ));
    }
    let magic = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"));
    let (le, nanos) = match magic {
        0xA1B2_C3D4 => (true, false),
        0xA1B2_3C4D => (true, true),
        0xD4C3_B2A1 => (false, false),
        0x4D3C_B2A1 => (false, true),
        m => return Err(format!("magic number {m:#010x}: not a pcap file")),
    };
    let u32_at = |o: usize| -> u32 {
        let a: [u8; 4] = bytes[o..o + 4].try_into().expect("4 bytes");
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let snaplen = u32_at(16);
    let linktype = u32_at(20) & 0x0FFF_FFFF;
    let mut frames = Vec::new();
    let mut o = 24;
    while o < bytes.len() {
        if o + 16 > bytes.len() {
            return Err(format!("a record header cut short at byte {o}"));
        }
        let (sec, frac, incl, orig) = (u32_at(o), u32_at(o + 4), u32_at(o + 8), u32_at(o + 12));
        let start = o + 16;
        let end = start + incl as usize;
        if end > bytes.len() {
            return Err(format!(
                "a record of {incl} bytes cut short at byte {start}"
            ));
        }
        let ns = u64::from(sec) * 1_000_000_000 + u64::from(frac) * if nanos { 1 } else { 1000 };
        frames.push(Frame {
            interface: 0,
            ts_ns: ns,
            data: bytes[start..end].to_vec(),
            orig_len: orig,
        });
        o = end;
    }
    Ok(PcapFile {
        linktype,
        snaplen,
        frames,
    })
}

/// A classic pcap file's Ethernet frames as a pcapng section with one
/// interface named `interface`, timestamps less `origin_ns` (never below
/// 0); and its number of frames.
pub fn pcap_to_pcapng(
    bytes: &[u8],
    application: &str,
    comment: &str,
    interface: &str,
    origin_ns: u64,
) -> Result<(Vec<u8>, usize), String> {
    let pcap = read_pcap(bytes)?;
    if pcap.linktype != u32::from(LINKTYPE_ETHERNET) {
        return Err(format!(
            "link type {}: only Ethernet (1) is converted",
            pcap.linktype
        ));
    }
    let mut w = Writer::new(application, comment, pcap.snaplen.max(1));
    let id = w.add_interface(interface);
    for f in &pcap.frames {
        w.frame(id, f.ts_ns.saturating_sub(origin_ns), &f.data, f.orig_len);
    }
    Ok((w.into_bytes(), pcap.frames.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }

    /// Walk the blocks: every block's two length fields agree and the
    /// blocks tile the file exactly.
    fn blocks(b: &[u8]) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        let mut o = 0;
        while o < b.len() {
            let (kind, len) = (u32_at(b, o), u32_at(b, o + 4) as usize);
            assert_eq!(len % 4, 0);
            assert_eq!(
                u32_at(b, o + len - 4) as usize,
                len,
                "trailing length of block at {o}"
            );
            out.push((kind, o));
            o += len;
        }
        assert_eq!(o, b.len());
        out
    }

    #[test]
    fn blocks_tile_the_file_and_frames_are_cut_to_the_snap_length() {
        let mut w = Writer::new("ccarena test", "a comment", 64);
        let i = w.add_interface("sender");
        w.frame(i, 1_500_000_123, &[7u8; 100], 1514);
        w.frame(i, 1_500_000_124, &[8u8; 3], 3);
        let b = w.into_bytes();
        let read = read_pcapng(&b).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(
            (read[0].ts_ns, read[0].data.len(), read[0].orig_len),
            (1_500_000_123, 64, 1514)
        );
        assert_eq!(read[1].data, vec![8u8; 3]);
        let bl = blocks(&b);
        assert_eq!(
            bl.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![SHB, IDB, EPB, EPB]
        );
        assert_eq!(u32_at(&b, 8), BYTE_ORDER_MAGIC);
        let e = bl[2].1;
        let ts = (u64::from(u32_at(&b, e + 12)) << 32) | u64::from(u32_at(&b, e + 16));
        assert_eq!(ts, 1_500_000_123);
        assert_eq!(u32_at(&b, e + 20), 64, "captured length");
        assert_eq!(u32_at(&b, e + 24), 1514, "original length");
        let e2 = bl[3].1;
        assert_eq!(u32_at(&b, e2 + 4), 32 + 4, "3 bytes padded to 4");
    }

    #[test]
    fn a_pcap_file_converts_with_its_timestamps_and_lengths() {
        let mut p = Vec::new();
        for v in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 262_144, 1] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        for (sec, usec, data) in [(10u32, 5u32, vec![1u8; 60]), (11, 999_999, vec![2u8; 54])] {
            for v in [sec, usec, data.len() as u32, 1514] {
                p.extend_from_slice(&v.to_le_bytes());
            }
            p.extend_from_slice(&data);
        }
        let f = read_pcap(&p).unwrap();
        assert_eq!(f.frames.len(), 2);
        assert_eq!(f.frames[0].ts_ns, 10_000_005_000);
        assert_eq!(f.frames[1].ts_ns, 11_999_999_000);
        let (ng, n) = pcap_to_pcapng(&p, "t", "", "eth0", 10_000_000_000).unwrap();
        assert_eq!((blocks(&ng).len(), n), (4, 2));
        let read = read_pcapng(&ng).unwrap();
        assert_eq!(
            (read[0].ts_ns, read[1].ts_ns),
            (5_000, 1_999_999_000),
            "times from the origin"
        );
        assert!(read_pcap(&p[..30]).is_err());
        assert!(read_pcap(&ng).is_err(), "pcapng is not classic pcap");
    }
}
