//! The receiver's ACK decisions against the kernel's, on the kernel's own
//! arrivals.
//!
//! `tests/kernel/*.csv` are receiver captures of one Linux run each (the
//! Linux backend, kernel 6.18.44 at `CONFIG_HZ=250`, 10 Mbit/s): four of a
//! Reno flow with a 3-segment window (`rwnd = "4344B"`) on a 100 ms path,
//! three of a CUBIC flow with a 5-segment window on a 60 ms path; in both
//! about a fifth of the ACKs wait for the delayed-ACK timer. The simulator's
//! receiver (`tcp::receiver`, `tcp::delack`) is fed the same segments at the
//! same instants; its ACKs must cover the same segments as the kernel's and
//! leave at the same time, within 2 ms, at the best of 40 phases of the
//! kernel's 4 ms tick (the one thing a capture does not show).
//! docs/validation.md, "A case next to it: a 3-segment window".

use ccarena_sim::packet::{flags, Packet};
use ccarena_sim::tcp::delack::Jiffies;
use ccarena_sim::tcp::receiver::{AckOptions, EcnEcho, Receiver};
use ccarena_sim::units::{Dur, Time};

const MSS: u32 = 1448;
const TOLERANCE_NS: u64 = 2_000_000;

struct Capture {
    synack: Time,
    /// Arrivals: time, segment, PSH.
    data: Vec<(Time, u32, bool)>,
    /// ACKs that left: time, first segment not covered.
    acks: Vec<(Time, u32)>,
}

fn load(text: &str) -> Capture {
    let mut c = Capture {
        synack: Time::ZERO,
        data: Vec::new(),
        acks: Vec::new(),
    };
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let t = Time(f[0].parse().unwrap());
        let seg: u32 = f[2].parse().unwrap();
        match f[1] {
            "synack" => c.synack = t,
            "data" | "psh" => c.data.push((t, seg, f[1] == "psh")),
            "ack" => c.acks.push((t, seg)),
            _ => {}
        }
    }
    c
}

/// The simulator's ACKs for the capture's arrivals, its tick at `phase`.
fn replay(c: &Capture, window_segs: u64, phase: Dur) -> Vec<(Time, u32)> {
    let opts = AckOptions {
        delack: Some(Jiffies::new(250, phase)),
        ..AckOptions::default()
    };
    let mut r = Receiver::new(
        0,
        EcnEcho::Rfc3168,
        opts,
        MSS,
        Some(window_segs * u64::from(MSS)),
    );
    r.on_syn(c.synack);
    let mut acks = Vec::new();
    let fire_until = |r: &mut Receiver, acks: &mut Vec<(Time, u32)>, t: Time| {
        while let Some(d) = r.deadline().filter(|&d| d <= t) {
            if let Some(a) = r.on_timer(d) {
                acks.push((d, a.seq));
            }
        }
    };
    for &(t, seg, psh) in &c.data {
        fire_until(&mut r, &mut acks, t);
        let mut p = Packet::data(0, seg, MSS);
        if psh {
            p.flags |= flags::PSH;
        }
        for a in r.on_data(t, &p).into_iter().flatten() {
            acks.push((t, a.seq));
        }
    }
    fire_until(&mut r, &mut acks, Time(u64::MAX));
    acks
}

/// ACKs whose coverage one side has and the other not, and those of both
/// whose times differ by more than the tolerance; ACKs of segments
/// `from..` only.
fn compare(kernel: &[(Time, u32)], sim: &[(Time, u32)], from: u32) -> (usize, usize) {
    let last = kernel.iter().map(|a| a.1).max().unwrap();
    let kernel: Vec<_> = kernel.iter().filter(|a| a.1 > from).collect();
    let sim: Vec<_> = sim.iter().filter(|a| a.1 > from && a.1 <= last).collect();
    let mut unmatched = 0;
    let mut late = 0;
    for &&(t, seg) in &kernel {
        match sim.iter().find(|a| a.1 == seg) {
            None => unmatched += 1,
            Some(a) if a.0 .0.abs_diff(t.0) > TOLERANCE_NS => late += 1,
            Some(_) => {}
        }
    }
    unmatched += sim
        .iter()
        .filter(|a| !kernel.iter().any(|k| k.1 == a.1))
        .count();
    (unmatched, late)
}

/// Every run of `runs` at the best tick phase: the same ACKs, and at
/// most two of them more than 2 ms from the kernel's.
fn agrees(runs: &[&str], window_segs: u64, from: u32) {
    for (i, text) in runs.iter().enumerate() {
        let c = load(text);
        assert!(c.acks.len() > 100 && c.data.len() > 200);
        let timer_acks = c
            .acks
            .iter()
            .filter(|a| {
                let arrived = c.data.iter().find(|d| d.1 + 1 == a.1).unwrap().0;
                a.0.since(arrived) > Dur::from_ms(30)
            })
            .count();
        assert!(timer_acks >= 20, "run {}: the timer is exercised", i + 1);
        let best = (0..40u64)
            .map(|k| compare(&c.acks, &replay(&c, window_segs, Dur(k * 100_000)), from))
            .min()
            .unwrap();
        assert_eq!(best.0, 0, "run {}: ACK coverage differs", i + 1);
        assert!(
            best.1 <= 2,
            "run {}: {} of {} ACKs more than 2 ms from the kernel's",
            i + 1,
            best.1,
            c.acks.len()
        );
    }
}

#[test]
fn the_receivers_acks_are_the_kernels_on_its_own_arrivals() {
    let runs = [
        include_str!("kernel/reno-3seg-run1.csv"),
        include_str!("kernel/reno-3seg-run2.csv"),
        include_str!("kernel/reno-3seg-run3.csv"),
        include_str!("kernel/reno-3seg-run4.csv"),
    ];
    agrees(&runs, 3, 0);
}

#[test]
fn with_a_5_segment_window_after_the_first_round_too() {
    // The kernel ACKed the first round's third segment at once, which the
    // half-window rule (2 quick ACKs) does not; its cause is not yet
    // known (docs/validation.md), so this compares from the second round.
    let runs = [
        include_str!("kernel/cubic-5seg-run1.csv"),
        include_str!("kernel/cubic-5seg-run2.csv"),
        include_str!("kernel/cubic-5seg-run3.csv"),
    ];
    agrees(&runs, 5, 5);
}
