//! `[capture]`: the points, flows and packets written to capture files (pcapng).

use super::raw::RawCapture;
use super::{err, ScenarioError};
use crate::capture::{self, CaptureSpec, Direction, Point};

/// `[capture]`: points known and each given once, flows that exist, the
/// snap length and frame count within bounds.
pub(super) fn normalize_capture(
    rc: RawCapture,
    links: &[&str],
    nflows: usize,
) -> Result<CaptureSpec, ScenarioError> {
    let names = rc
        .at
        .map_or_else(|| vec!["sender".to_string()], |a| a.into_vec());
    if names.is_empty() {
        return err(
            "capture.at",
            "an empty list: name at least one point (\"sender\", \"receiver\" or a link)",
        );
    }
    let mut at = Vec::with_capacity(names.len());
    for n in names {
        let point = match n.as_str() {
            "sender" | "receiver" if links.contains(&n.as_str()) => {
                return err(
                    "capture.at",
                    format!("{n:?} names both the {n}s' interface and a link: rename the link"),
                )
            }
            "sender" => Point::Sender,
            "receiver" => Point::Receiver,
            l if links.contains(&l) => Point::Link(n.clone()),
            _ => {
                return err(
                    "capture.at",
                    format!(
                        "unknown point {n:?}: expected \"sender\", \"receiver\" or a link ({})",
                        links.join(", ")
                    ),
                )
            }
        };
        if at.contains(&point) {
            return err("capture.at", format!("{n:?} is given twice"));
        }
        at.push(point);
    }
    let flows = rc.flows.unwrap_or_default();
    for (k, &i) in flows.iter().enumerate() {
        if i as usize >= nflows {
            return err(
                "capture.flows",
                format!(
                    "flow {i} does not exist: the scenario has flows 0..{}",
                    nflows.saturating_sub(1)
                ),
            );
        }
        if flows[..k].contains(&i) {
            return err("capture.flows", format!("flow {i} is given twice"));
        }
    }
    let packets = match rc.packets {
        None => Direction::default(),
        Some(s) => Direction::parse(&s).map_or_else(
            || {
                err(
                    "capture.packets",
                    format!(
                        "unknown value {s:?}: expected one of {}",
                        Direction::NAMES.join(", ")
                    ),
                )
            },
            Ok,
        )?,
    };
    let snaplen = rc.snaplen.unwrap_or(capture::DEFAULT_SNAPLEN);
    if !(capture::MIN_SNAPLEN..=capture::MAX_SNAPLEN).contains(&snaplen) {
        return err(
            "capture.snaplen",
            format!(
                "{snaplen}: bytes kept per frame, {}..{} (every header fits in {})",
                capture::MIN_SNAPLEN,
                capture::MAX_SNAPLEN,
                capture::MIN_SNAPLEN
            ),
        );
    }
    let max_packets = rc.max_packets.unwrap_or(capture::DEFAULT_MAX_PACKETS);
    if !(1..=capture::MAX_MAX_PACKETS).contains(&max_packets) {
        return err(
            "capture.max_packets",
            format!(
                "{max_packets}: frames per file, 1..{}",
                capture::MAX_MAX_PACKETS
            ),
        );
    }
    Ok(CaptureSpec {
        at,
        flows,
        packets,
        snaplen,
        max_packets,
    })
}
