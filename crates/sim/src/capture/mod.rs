//! Packet captures of a simulated run (`[capture]`): pcapng files with the
//! frames a tcpdump would have seen at a point of the network, with real
//! Ethernet/IPv4/TCP headers in simulated time.
//!
//! Points: `sender` (the senders' interface: data and SYNs as the sender
//! hands them to its link, ACKs as they arrive, where tcpdump on a Linux
//! sender taps them), `receiver` (the same at the receivers) and any
//! queueing link (the packets its queue sends, after the shaper and the
//! queue discipline, before the link's delay).
//!
//! The simulator's packets count segments and carry no TCP header; the
//! headers are made here, per flow:
//! - addresses as the Linux backend's: senders 10.201.0.1, receivers
//!   10.201.0.2, receiver port 35000 + i (`PORT_BASE`; past the last port,
//!   10.201.k.2 for the k-th 30,536 flows), sender port 49000 + i mod 8000;
//!   the MACs of its two veths. Wireshark registers no dissector on
//!   35000-44320 and 48899-56999, so the zeros of the payload are shown as
//!   TCP payload, not read as some protocol;
//! - byte sequence numbers from a per-flow initial sequence number, the
//!   application's segment boundaries (`App::bytes_in`: a write's last
//!   segment is short) and SACK blocks in bytes;
//! - RFC 7323 timestamps in milliseconds of simulated time: TSval is the
//!   sending host's clock (`tcp::rtt::ts_clock`), TSecr its `ts_recent`: a
//!   data segment's TSval and an ACK's TSecr are the ones the TCP model
//!   carries (`Packet::ts`; the receiver's `ts_recent` follows
//!   `tcp_replace_ts_recent`), a SYN-ACK echoes the SYN and a sender's
//!   segment the newest ACK's TSval;
//! - the receive window a receiver advertises when it sends the ACK
//!   (`Receiver::advertised_window`; never shrinking, `tcp_select_window`),
//!   a sender's 64 KB; the MSS option and the window scales as the Linux
//!   backend's SYNs show them (MSS 1460 for 1448-byte segments, scales 10
//!   and 11);
//! - ECN: the IP header's two bits, ECE and CWR (a SYN asks for ECN with
//!   ECE and CWR when the flow uses it).
//!
//! A capture never changes the simulation: the fields it needs at a later
//! point ride in a side table, found through the packet's `tag` (which the
//! simulator does not otherwise use).

pub mod frame;
pub mod pcapng;

use crate::app::App;
use crate::packet::{flags, Ecn, Kind, Packet};
use crate::tcp::receiver::Receiver;
use crate::tcp::rtt::ts_clock;
use crate::units::Time;
use frame::{options, tcp_flags, Endpoint, Segment};
use serde::{Deserialize, Serialize};

/// Where a capture taps the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Point {
    Sender,
    Receiver,
    /// A queueing link, by name (the dumbbell's is "bottleneck").
    Link(String),
}

impl Point {
    /// The name of its file (`<name>.pcapng`) and interface.
    pub fn name(&self) -> &str {
        match self {
            Point::Sender => "sender",
            Point::Receiver => "receiver",
            Point::Link(n) => n,
        }
    }
}

/// Which direction's packets are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Both.
    #[default]
    All,
    /// Sender to receiver: data segments and SYNs.
    Data,
    /// Receiver to sender: ACKs and SYN-ACKs.
    Acks,
}

impl Direction {
    pub const NAMES: [&'static str; 3] = ["all", "data", "acks"];

    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "all" => Some(Direction::All),
            "data" => Some(Direction::Data),
            "acks" => Some(Direction::Acks),
            _ => None,
        }
    }

    fn keeps(self, p: &Packet) -> bool {
        let forward = matches!(p.kind, Kind::Data | Kind::Syn);
        match self {
            Direction::All => true,
            Direction::Data => forward,
            Direction::Acks => !forward,
        }
    }
}

pub const DEFAULT_SNAPLEN: u32 = 128;
pub const MIN_SNAPLEN: u32 = 96;
pub const MAX_SNAPLEN: u32 = 262_144;
pub const DEFAULT_MAX_PACKETS: u64 = 2_000_000;
pub const MAX_MAX_PACKETS: u64 = 100_000_000;

/// `[capture]` as a normalized scenario holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaptureSpec {
    /// One file per point.
    pub at: Vec<Point>,
    /// The flows captured; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<u32>,
    pub packets: Direction,
    /// Bytes kept of each frame (its headers take at most 94).
    pub snaplen: u32,
    /// Frames per file; later ones are not written (tcpdump's `-c`).
    pub max_packets: u64,
}

/// One finished capture file.
#[derive(Clone, Debug)]
pub struct CaptureFile {
    /// The point's name: the file is `<name>.pcapng`.
    pub name: String,
    pub bytes: Vec<u8>,
    pub frames: u64,
    /// Frames not written once `max_packets` was reached.
    pub skipped: u64,
}

/// Flow i's receiver listens on port `PORT_BASE + i`, as on the Linux
/// backend (`linux/backend.py`, `ccarena-bottleneck --port-base`).
pub const PORT_BASE: u16 = 35_000;
const PORTS: u32 = 65_536 - PORT_BASE as u32;

/// Window scales (`tcp_select_initial_window`: shift until `tcp_rmem[2]`
/// fits 16 bits): a sender's with Linux 6.18's default 32 MB, a receiver's
/// with the Linux backend's 64 MB (which `tcp::rcvbuf::MAX_CLAMP` assumes).
/// Both as measured on the Linux backend's SYNs.
const SENDER_WSCALE: u8 = 10;
const RECEIVER_WSCALE: u8 = 11;
/// The timestamp option's bytes: the MSS option advertises the segment
/// size without them (1460 on a 1500-byte MTU, for 1448-byte segments).
const TS_OPTION: u32 = 12;
/// What a sender, which receives no data, advertises: 64 KB in whole
/// segments of its advertised MSS (`tcp_select_initial_window`).
fn sender_window(mss: u32) -> u32 {
    let adv = mss.max(1) + TS_OPTION;
    (65_535 / adv) * adv
}

/// The fields of a packet that a later point needs, fixed when it was sent.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    tsval: u32,
    tsecr: u32,
    /// Advertised window, bytes.
    window: u32,
    ip_id: u16,
}

#[derive(Clone, Debug)]
struct FlowState {
    captured: bool,
    snd: Endpoint,
    rcv: Endpoint,
    /// Initial sequence numbers: the sender's and the receiver's.
    iss: u32,
    irs: u32,
    mss: u32,
    ecn: bool,
    /// IPv4 identification of the last packet each end sent (Linux counts
    /// per socket for DF packets).
    ip_id: [u16; 2],
    /// The sender's `ts_recent`, and the SYN's TSval the SYN-ACK echoes
    /// (the receiver's `ts_recent` afterwards rides in each ACK).
    snd_ts_recent: u32,
    syn_tsval: u32,
    /// The right edge of the receiver's last offered window, payload bytes.
    rcv_right_edge: u64,
}

struct Tap {
    point: Point,
    /// Link index for a link point.
    link: Option<u32>,
    writer: pcapng::Writer,
    skipped: u64,
}

/// What a run does at each capture point. The world is generic over it:
/// a run without `[capture]` uses `NoCapture`, whose empty methods compile
/// away (no branch on the per-packet path), a run with one `Capture`.
pub trait Taps {
    /// The sender of `p.flow` hands `p` to its link (a capture tags it).
    fn sender_sends(&mut self, _now: Time, _p: &mut Packet, _app: &App) {}
    /// An ACK or SYN-ACK reaches its sender.
    fn sender_receives(&mut self, _now: Time, _p: &Packet, _app: &App) {}
    /// A data segment or SYN reaches its receiver.
    fn receiver_receives(&mut self, _now: Time, _p: &Packet, _app: &App) {}
    /// The receiver sends `p` (an ACK or the SYN-ACK; a capture tags it).
    fn receiver_sends(&mut self, _now: Time, _p: &mut Packet, _rcv: &Receiver, _app: &App) {}
    /// Whether any tap sits at a link.
    fn at_links(&self) -> bool {
        false
    }
    /// Link `link`'s queue sends `p`.
    fn link_sends(&mut self, _now: Time, _link: u32, _p: &Packet, _app: &App) {}
    /// The files written.
    fn finish(self) -> Vec<CaptureFile>;
}

/// No capture: every tap does nothing.
pub struct NoCapture;

impl Taps for NoCapture {
    fn finish(self) -> Vec<CaptureFile> {
        Vec::new()
    }
}

/// A run's captures, fed by the world at each point.
pub struct Capture {
    spec: CaptureSpec,
    taps: Vec<Tap>,
    flows: Vec<FlowState>,
    /// Side table: `sent[tag - 1]` for a packet of a captured flow.
    sent: Vec<Sent>,
    buf: Vec<u8>,
    opts: Vec<u8>,
    sack: Vec<(u32, u32)>,
}

impl Capture {
    /// `links`: the scenario's queueing links' names, by index; `flows`:
    /// each flow's segment size and whether it asks for ECN.
    pub fn new(
        spec: &CaptureSpec,
        links: &[&str],
        flows: &[(u32, bool)],
        comment: &str,
    ) -> Capture {
        let taps = spec
            .at
            .iter()
            .map(|p| {
                let mut writer = pcapng::Writer::new(
                    concat!("ccarena ", env!("CARGO_PKG_VERSION"), " (simulator)"),
                    comment,
                    spec.snaplen,
                );
                writer.add_interface(p.name());
                Tap {
                    point: p.clone(),
                    link: match p {
                        Point::Link(n) => links.iter().position(|l| l == n).map(|k| k as u32),
                        _ => None,
                    },
                    writer,
                    skipped: 0,
                }
            })
            .collect();
        let states = flows
            .iter()
            .enumerate()
            .map(|(i, &(mss, ecn))| {
                let i32 = i as u32;
                FlowState {
                    captured: spec.flows.is_empty() || spec.flows.contains(&i32),
                    snd: Endpoint {
                        mac: [0x02, 0xcc, 0xa0, 0, 0, 1],
                        ip: [10, 201, 0, 1],
                        port: 49_000 + (i32 % 8000) as u16,
                    },
                    rcv: Endpoint {
                        mac: [0x02, 0xcc, 0xa0, 0, 0, 2],
                        ip: [10, 201, (i32 / PORTS) as u8, 2],
                        port: PORT_BASE + (i32 % PORTS) as u16,
                    },
                    // Any fixed per-flow values will do (Linux derives them
                    // from a keyed hash and a clock, `secure_tcp_seq`).
                    iss: i32.wrapping_mul(0x9E37_79B9).wrapping_add(0x1000_0000),
                    irs: i32.wrapping_mul(0x85EB_CA6B).wrapping_add(0x2000_0000),
                    mss,
                    ecn,
                    ip_id: [0, 0],
                    snd_ts_recent: 0,
                    syn_tsval: 0,
                    rcv_right_edge: 0,
                }
            })
            .collect();
        Capture {
            spec: spec.clone(),
            taps,
            flows: states,
            sent: Vec::new(),
            buf: Vec::with_capacity(128),
            opts: Vec::with_capacity(40),
            sack: Vec::with_capacity(3),
        }
    }

    fn wants(&self, flow: u32) -> bool {
        self.flows.get(flow as usize).is_some_and(|f| f.captured)
    }

    fn tap_host(&mut self, point: Point, now: Time, p: &Packet, app: &App) {
        for k in 0..self.taps.len() {
            if self.taps[k].point == point {
                self.write(k, now, p, app);
            }
        }
    }

    fn write(&mut self, k: usize, now: Time, p: &Packet, app: &App) {
        if !self.spec.packets.keeps(p) {
            return;
        }
        if self.taps[k].writer.frames() >= self.spec.max_packets {
            self.taps[k].skipped += 1;
            return;
        }
        let sent = self.sent[p.tag as usize - 1];
        let f = &mut self.flows[p.flow as usize];
        let mss = f.mss;
        let byte = |seg: u32| app.bytes_in(seg, mss) as u32;
        let forward = matches!(p.kind, Kind::Data | Kind::Syn);
        let mut fl = 0u8;
        let (seq, ack) = match p.kind {
            Kind::Syn => {
                fl |= tcp_flags::SYN;
                if f.ecn {
                    fl |= tcp_flags::ECE | tcp_flags::CWR;
                }
                (f.iss, 0)
            }
            Kind::SynAck => {
                fl |= tcp_flags::SYN | tcp_flags::ACK;
                if f.ecn {
                    fl |= tcp_flags::ECE;
                }
                (f.irs, f.iss.wrapping_add(1))
            }
            Kind::Data => {
                fl |= tcp_flags::ACK;
                if p.has_flag(flags::PSH) {
                    fl |= tcp_flags::PSH;
                }
                if p.has_flag(flags::CWR) {
                    fl |= tcp_flags::CWR;
                }
                (
                    f.iss.wrapping_add(1).wrapping_add(byte(p.seq)),
                    f.irs.wrapping_add(1),
                )
            }
            Kind::Ack => {
                fl |= tcp_flags::ACK;
                if p.has_flag(flags::ECE) {
                    fl |= tcp_flags::ECE;
                }
                (
                    f.irs.wrapping_add(1),
                    f.iss.wrapping_add(1).wrapping_add(byte(p.seq)),
                )
            }
        };
        let wscale = if forward {
            SENDER_WSCALE
        } else {
            RECEIVER_WSCALE
        };
        if p.is_handshake() {
            let adv_mss = (mss + TS_OPTION).min(u32::from(u16::MAX)) as u16;
            options::syn(&mut self.opts, adv_mss, sent.tsval, sent.tsecr, wscale);
        } else {
            self.sack.clear();
            let base = f.iss.wrapping_add(1);
            for b in p.sacks() {
                self.sack.push((
                    base.wrapping_add(byte(b.start)),
                    base.wrapping_add(byte(b.end)),
                ));
            }
            options::established(&mut self.opts, sent.tsval, sent.tsecr, &self.sack);
        }
        // A SYN's window is not scaled (RFC 7323 2.2); others are rounded
        // up to the scale's unit (`__tcp_select_window`).
        let window = if p.is_handshake() {
            sent.window.min(65_535)
        } else {
            sent.window.div_ceil(1 << wscale).min(65_535)
        } as u16;
        let tos = match p.ecn {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        };
        let (src, dst) = if forward {
            (f.snd, f.rcv)
        } else {
            (f.rcv, f.snd)
        };
        let seg = Segment {
            seq,
            ack,
            flags: fl,
            window,
            options: &self.opts,
            payload: u32::from(p.payload),
        };
        let wire = frame::write(&mut self.buf, &src, &dst, sent.ip_id, tos, &seg);
        // The payload's bytes are zeros, as many as the snap length keeps.
        let keep = wire.min(self.spec.snaplen) as usize;
        if keep > self.buf.len() {
            self.buf.resize(keep, 0);
        }
        self.taps[k].writer.frame(0, now.0, &self.buf, wire);
    }
}

impl Taps for Capture {
    /// The sender of flow `i` hands `p` to its link (`p` gets its tag).
    fn sender_sends(&mut self, now: Time, p: &mut Packet, app: &App) {
        if !self.wants(p.flow) {
            return;
        }
        let f = &mut self.flows[p.flow as usize];
        f.ip_id[0] = f.ip_id[0].wrapping_add(1);
        let sent = Sent {
            // A data segment's TSval as the TCP model stamped it.
            tsval: if p.kind == Kind::Data {
                p.ts
            } else {
                ts_clock(now)
            },
            tsecr: if p.kind == Kind::Syn {
                0
            } else {
                f.snd_ts_recent
            },
            window: sender_window(f.mss),
            ip_id: f.ip_id[0],
        };
        self.sent.push(sent);
        p.tag = self.sent.len() as u32;
        self.tap_host(Point::Sender, now, p, app);
    }
    /// An ACK (or SYN-ACK) of flow `p.flow` reaches its sender.
    fn sender_receives(&mut self, now: Time, p: &Packet, app: &App) {
        if !self.wants(p.flow) || p.tag == 0 {
            return;
        }
        self.tap_host(Point::Sender, now, p, app);
        let tsval = self.sent[p.tag as usize - 1].tsval;
        let f = &mut self.flows[p.flow as usize];
        f.snd_ts_recent = f.snd_ts_recent.max(tsval);
    }
    /// A data segment or SYN reaches the receiver.
    fn receiver_receives(&mut self, now: Time, p: &Packet, app: &App) {
        if !self.wants(p.flow) || p.tag == 0 || !matches!(p.kind, Kind::Data | Kind::Syn) {
            return;
        }
        self.tap_host(Point::Receiver, now, p, app);
        if p.kind == Kind::Syn {
            let tsval = self.sent[p.tag as usize - 1].tsval;
            self.flows[p.flow as usize].syn_tsval = tsval;
        }
    }
    /// The receiver sends `p` (an ACK or the SYN-ACK) advertising `window`
    /// bytes (`p` gets its tag).
    fn receiver_sends(&mut self, now: Time, p: &mut Packet, rcv: &Receiver, app: &App) {
        if !self.wants(p.flow) {
            return;
        }
        let window = rcv.advertised_window();
        let f = &mut self.flows[p.flow as usize];
        f.ip_id[1] = f.ip_id[1].wrapping_add(1);
        // `tcp_select_window`: the offered window never shrinks (its right
        // edge never moves left), and with scaling it is rounded up to the
        // scale's unit (`__tcp_select_window`).
        let acked = if p.kind == Kind::Ack {
            app.bytes_in(p.seq, f.mss)
        } else {
            0
        };
        let window = if p.kind == Kind::Ack {
            let unit = 1u64 << RECEIVER_WSCALE;
            (window.div_ceil(unit) * unit).max(f.rcv_right_edge.saturating_sub(acked))
        } else {
            window // the SYN-ACK's, not scaled
        };
        f.rcv_right_edge = acked + window;
        let sent = Sent {
            tsval: ts_clock(now),
            // The receiver's `ts_recent`, as its ACK carries it.
            tsecr: if p.kind == Kind::Ack {
                p.ts
            } else {
                f.syn_tsval
            },
            window: window.min(u64::from(u32::MAX)) as u32,
            ip_id: f.ip_id[1],
        };
        self.sent.push(sent);
        p.tag = self.sent.len() as u32;
        self.tap_host(Point::Receiver, now, p, app);
    }
    /// Link `link`'s queue sends `p`.
    fn link_sends(&mut self, now: Time, link: u32, p: &Packet, app: &App) {
        if !self.wants(p.flow) || p.tag == 0 {
            return;
        }
        for k in 0..self.taps.len() {
            if self.taps[k].link == Some(link) {
                self.write(k, now, p, app);
            }
        }
    }
    /// Whether any tap sits at a link (the world skips the per-link hook
    /// otherwise).
    fn at_links(&self) -> bool {
        self.taps.iter().any(|t| t.link.is_some())
    }
    /// The files, one per point, in the order `at` lists them.
    fn finish(self) -> Vec<CaptureFile> {
        self.taps
            .into_iter()
            .map(|t| CaptureFile {
                name: t.point.name().to_string(),
                frames: t.writer.frames(),
                skipped: t.skipped,
                bytes: t.writer.into_bytes(),
            })
            .collect()
    }
}
