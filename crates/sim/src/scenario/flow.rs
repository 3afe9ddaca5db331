//! `[[flows]]` entries: each expanded to its flows, with the `[path]`
//! defaults, routes, pacing, workloads and schedules resolved.

use super::raw::{RawFlow, RawPath, UnitStr};
use super::topology::LinkNames;
use super::{
    check_step, duration_at, err, positive_duration_at, positive_rate_at, scaled_bytes,
    warn_long_jitter, warn_slow_rate, After, FlowSpec, Pacing, PacingMode, ScenarioError, Warnings,
    MAX_FLOWS,
};
use crate::cc::CcConfig;
use crate::net::impair::{JitterConfig, LossConfig};
use crate::packet::{DEFAULT_MSS, IP_TCP_TS_HEADER, LINK_FRAMING};
use crate::units::{self, Bytes, Dur, Rate, SizeSpec, Time};

/// Default access-link rate: fast enough that sender bursts stay bursts.
const DEFAULT_ACCESS_RATE: Rate = Rate(40_000_000_000);
const DEFAULT_INIT_CWND: u32 = 10;

pub(super) fn check_split(path: &str, s: f64) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&s) {
        return err(
            path,
            format!("{s} is outside 0..1 (the share of the RTT on the forward path)"),
        );
    }
    Ok(())
}

pub(super) fn expand_flow(
    g: usize,
    rf: &RawFlow,
    path: &RawPath,
    net: &LinkNames,
    duration: Dur,
    out: &mut Vec<FlowSpec>,
    warn: &mut Warnings,
) -> Result<(), ScenarioError> {
    let at = |field: &str| format!("flows[{g}].{field}");
    let route = net.route(&at("route"), rf.route.as_deref())?;
    let reverse_route = match &rf.reverse_route {
        None => vec![],
        Some(r) => net.route(&at("reverse_route"), Some(r))?,
    };
    if let Some(k) = reverse_route.iter().position(|l| route.contains(l)) {
        return err(
            format!("flows[{g}].reverse_route[{k}]"),
            format!(
                "{:?} carries the flow's data: a link is one-way, its ACKs need another (e.g. \"{}-back\")",
                net.names[reverse_route[k] as usize], net.names[reverse_route[k] as usize]
            ),
        );
    }
    let delay_of = |links: &[u32]| Dur(links.iter().map(|&l| net.delays[l as usize].0).sum());
    // The links' own propagation delays, one way; the ACKs return over the
    // reverse route's links, or else an uncongested path of the same length.
    let route_delay = delay_of(&route);
    let back_delay = if reverse_route.is_empty() {
        route_delay
    } else {
        delay_of(&reverse_route)
    };
    let cc = match &rf.cc {
        Some(c) => c.clone(),
        None => {
            return err(
                at("cc"),
                format!("missing: choose one of {}", CcConfig::NAMES.join(", ")),
            )
        }
    };
    let params = rf.cc_params.clone().unwrap_or(serde_json::Value::Null);
    let cfg = CcConfig::parse(&cc, &params).map_err(|m| {
        let field = if m.starts_with("unknown congestion control") {
            "cc"
        } else {
            "cc_params"
        };
        ScenarioError {
            path: at(field),
            message: m,
        }
    })?;
    let count = rf.count.unwrap_or(1);
    if count < 1 {
        return err(
            at("count"),
            format!("{count} flows: count must be at least 1"),
        );
    }
    // On a route whose links have delays, `rtt` is what the flow adds to
    // them (its access links) and may be zero.
    let own_rtt = |field: &str, r: &UnitStr| {
        if route_delay + back_delay > Dur::ZERO {
            duration_at(field, r)
        } else {
            positive_duration_at(field, r)
        }
    };
    let rtt = match (&rf.rtt, &path.rtt) {
        (Some(r), _) => own_rtt(&at("rtt"), r)?,
        (None, Some(r)) => own_rtt("path.rtt", r)?,
        (None, None) if route_delay + back_delay > Dur::ZERO => Dur::ZERO,
        (None, None) => {
            return err(
                at("rtt"),
                "missing: give rtt here or a default under [path], e.g. rtt = \"20ms\"",
            )
        }
    };
    let base_rtt = rtt + route_delay + back_delay;
    let split = rf.rtt_split.or(path.rtt_split).unwrap_or(0.5);
    check_split(&at("rtt_split"), split)?;
    let access_rate = match (&rf.access_rate, &path.access_rate) {
        (Some(r), _) => positive_rate_at(&at("access_rate"), r)?,
        (None, Some(r)) => positive_rate_at("path.access_rate", r)?,
        (None, None) => DEFAULT_ACCESS_RATE,
    };
    let access_at = if rf.access_rate.is_none() && path.access_rate.is_some() {
        "path.access_rate".to_string()
    } else {
        at("access_rate")
    };
    let start = match &rf.start {
        Some(s) => duration_at(&at("start"), s)?,
        None => Dur::ZERO,
    };
    if start >= duration {
        return err(
            at("start"),
            format!("starts at {start}, not before the end of the run ({duration})"),
        );
    }
    let mss = rf.mss.unwrap_or(DEFAULT_MSS as i64);
    if !(88..=65_000).contains(&mss) {
        return err(at("mss"), format!("{mss} is outside 88..65000 bytes"));
    }
    let mss = mss as u32;
    let frame = (mss + IP_TCP_TS_HEADER + LINK_FRAMING) as u64;
    warn_slow_rate(&access_at, access_rate, frame, duration, warn);
    let size = match &rf.size {
        None => None,
        Some(s) => match units::parse_size(&s.0).or_else(|m| err(at("size"), m))? {
            SizeSpec::Bytes(0) => return err(at("size"), "must be greater than zero"),
            SizeSpec::Bytes(b) => Some(b),
            SizeSpec::Packets(p) if p >= 1.0 => {
                Some(scaled_bytes(&at("size"), &s.0, p, mss as u64)?)
            }
            _ => {
                return err(
                    at("size"),
                    format!("{:?}: give a size in bytes (e.g. \"1MB\") or packets", s.0),
                )
            }
        },
    };
    let rwnd = match &rf.rwnd {
        None => None,
        Some(s) => match units::parse_size(&s.0).or_else(|m| err(at("rwnd"), m))? {
            SizeSpec::Bytes(b) if b >= mss as u64 => Some(b),
            SizeSpec::Packets(p) if p >= 1.0 => {
                Some(scaled_bytes(&at("rwnd"), &s.0, p, mss as u64)?)
            }
            SizeSpec::Bdp(_) => return err(
                at("rwnd"),
                "a receive window is given in bytes or packets (BDP multiples apply to the buffer)",
            ),
            _ => {
                return err(
                    at("rwnd"),
                    format!("{:?} is smaller than one segment ({mss} bytes)", s.0),
                )
            }
        },
    };
    let mut chunks = Vec::new();
    if let Some(cs) = &rf.chunks {
        if rf.size.is_some() {
            return err(
                at("size"),
                "give either size or chunks (a flow's size is the sum of its chunks)",
            );
        }
        if cs.is_empty() {
            return err(
                at("chunks"),
                "an empty list: give at least one [offset, bytes] pair",
            );
        }
        let mut last = Dur::ZERO;
        for (k, (off, bytes)) in cs.iter().enumerate() {
            let off = duration_at(&format!("flows[{g}].chunks[{k}][0]"), off)?;
            if off < last {
                return err(
                    format!("flows[{g}].chunks[{k}][0]"),
                    "chunk offsets must not decrease",
                );
            }
            last = off;
            let b = match units::parse_size(&bytes.0)
                .or_else(|m| err(format!("flows[{g}].chunks[{k}][1]"), m))?
            {
                SizeSpec::Bytes(b) if b > 0 => b,
                _ => {
                    return err(
                        format!("flows[{g}].chunks[{k}][1]"),
                        "a chunk is a positive number of bytes, e.g. \"20KB\"",
                    )
                }
            };
            chunks.push((off, Bytes(b)));
        }
        if start + last >= duration {
            return err(
                at("chunks"),
                "the last chunk is written after the end of the run",
            );
        }
    }
    let size = if chunks.is_empty() {
        size
    } else {
        // Each chunk is below the size limit; their sum may not be (it
        // wrapped past the 64-bit limit).
        let total: u128 = chunks.iter().map(|c| c.1 .0 as u128).sum();
        if total as f64 >= units::MAX_SIZE_BYTES {
            return err(
                at("chunks"),
                format!(
                    "the chunks add up to {:.3e} bytes: too large (at most {:.0e})",
                    total as f64,
                    units::MAX_SIZE_BYTES
                ),
            );
        }
        Some(total as u64)
    };
    let repeat = match &rf.repeat {
        None => None,
        Some(r) => {
            if rf.size.is_none() {
                return err(
                    at("repeat"),
                    "successive flows need a size (e.g. size = \"1MB\")",
                );
            }
            let gap = match &r.gap {
                Some(gap) => duration_at(&at("repeat.gap"), gap)?,
                None => Dur::ZERO,
            };
            // Until the end: each flow lasts at least one RTT plus the gap.
            let bound = (duration - start).0 / gap.0.max(rtt.0).max(1) + 1;
            let n = match r.count {
                Some(c) if c < 1 => return err(at("repeat.count"), format!("{c}: at least 1")),
                Some(c) => c as u64,
                None => bound,
            };
            Some((gap, n))
        }
    };
    let pacing = parse_pacing(&at("pacing"), rf.pacing.as_ref())?;
    if let Some(r) = pacing.max_rate {
        warn_slow_rate(&at("pacing.max_rate"), r, frame, duration, warn);
    }
    let init_cwnd = rf.init_cwnd.unwrap_or(DEFAULT_INIT_CWND as i64);
    if !(1..=10_000).contains(&init_cwnd) {
        return err(
            at("init_cwnd"),
            format!("{init_cwnd} is outside 1..10000 packets"),
        );
    }
    let pick = |own: &Option<LossConfig>,
                dflt: &Option<LossConfig>,
                field: &str|
     -> Result<(LossConfig, String), ScenarioError> {
        let (l, p) = match (own, dflt) {
            (Some(l), _) => (l.clone(), at(field)),
            (None, Some(l)) => (l.clone(), format!("path.{field}")),
            (None, None) => return Ok((LossConfig::None, String::new())),
        };
        l.validate().map_err(|m| ScenarioError {
            path: p.clone(),
            message: m,
        })?;
        Ok((l, p))
    };
    let (loss, loss_at) = pick(&rf.loss, &path.loss, "loss")?;
    let (ack_loss, ack_loss_at) = pick(&rf.ack_loss, &path.ack_loss, "ack_loss")?;
    for (l, p) in [(&loss, loss_at), (&ack_loss, ack_loss_at)] {
        if let Some(w) = l.warning() {
            warn.add(p, w);
        }
    }
    let mut pick_jitter = |own: &Option<JitterConfig>, dflt: &Option<JitterConfig>, field: &str| {
        let (j, p) = match (own, dflt) {
            (Some(j), _) => (j.clone(), at(field)),
            (None, Some(j)) => (j.clone(), format!("path.{field}")),
            (None, None) => return Ok(None),
        };
        j.validate().map_err(|m| ScenarioError {
            path: p.clone(),
            message: m,
        })?;
        warn_long_jitter(&p, &j, duration, warn)?;
        Ok(Some(j))
    };
    let jitter = pick_jitter(&rf.jitter, &path.jitter, "jitter")?;
    let ack_jitter = pick_jitter(&rf.ack_jitter, &path.ack_jitter, "ack_jitter")?;
    let stop = match &rf.stop {
        None => None,
        Some(_) if size.is_some() || !chunks.is_empty() => {
            return err(
                at("stop"),
                "only a bulk flow stops at a time (this one has a size or chunks)",
            )
        }
        Some(t) => {
            let t = duration_at(&at("stop"), t)?;
            if t <= start {
                return err(
                    at("stop"),
                    format!("stops at {t}, not after its start ({start})"),
                );
            }
            Some(Time(t.0))
        }
    };
    let mut rtt_schedule = Vec::new();
    for (k, (t, r)) in rf.rtt_schedule.iter().flatten().enumerate() {
        let t = duration_at(&format!("flows[{g}].rtt_schedule[{k}][0]"), t)?;
        let r = positive_duration_at(&format!("flows[{g}].rtt_schedule[{k}][1]"), r)?;
        if let Some(&(prev, _)) = rtt_schedule.last() {
            let at = format!("flows[{g}].rtt_schedule[{k}][0]");
            check_step(&at, Time(t.0), prev, "RTT")?;
        }
        rtt_schedule.push((Time(t.0), r));
    }
    let host = match rf.host {
        Some(h) if !(0..=65_535).contains(&h) => {
            return err(at("host"), format!("{h} is outside 0..65535"))
        }
        h => h,
    };
    let fwd = rtt.mul_f64(split);
    let (gap, chain) = repeat.unwrap_or((Dur::ZERO, 1));
    // Checked: count x repeat.count may overflow u64 (issue 10: it wrapped
    // to 0 and validation then tried to allocate gigabytes).
    let total = (count as u64)
        .checked_mul(chain)
        .and_then(|n| n.checked_add(out.len() as u64));
    if total.is_none_or(|n| n > MAX_FLOWS as u64) {
        let field = if rf.repeat.as_ref().is_some_and(|r| r.count.is_some()) && chain > 1 {
            "repeat.count"
        } else {
            "count"
        };
        return err(
            at(field),
            format!("{count} x {chain} flows: the scenario would have more than {MAX_FLOWS} flows"),
        );
    }
    for _ in 0..count {
        for k in 0..chain {
            let id = out.len() as u32;
            let after = (k > 0).then(|| After { flow: id - 1, gap });
            out.push(FlowSpec {
                id,
                group: g as u32,
                label: rf.label.clone().unwrap_or_else(|| {
                    format!("{}-{}", cfg.name(), units::format_duration(base_rtt))
                }),
                cc: cfg.clone(),
                rtt: base_rtt,
                fwd_delay: fwd,
                rev_delay: rtt - fwd,
                access_rate,
                start: Time(start.0),
                size: size.map(Bytes),
                pacing: pacing.clone(),
                rwnd: rwnd.map(Bytes),
                // ECN on by default only where the algorithm needs it (Linux
                // `tcp_ca_needs_ecn`: DCTCP, Prague).
                ecn: rf.ecn.unwrap_or(cfg.ecn().needs),
                mss,
                init_cwnd: init_cwnd as u32,
                host: host.map_or(id, |h| h as u32),
                after,
                chunks: chunks.clone(),
                loss: loss.clone(),
                ack_loss: ack_loss.clone(),
                jitter: jitter.clone(),
                ack_jitter: ack_jitter.clone(),
                rtt_schedule: rtt_schedule.clone(),
                rtt_split: split,
                stop,
                route: route.clone(),
                reverse_route: reverse_route.clone(),
            });
        }
    }
    Ok(())
}

pub(super) fn pacing_mode(path: &str, s: &str) -> Result<PacingMode, ScenarioError> {
    match s {
        "fq" => Ok(PacingMode::Fq),
        "internal" => Ok(PacingMode::Internal),
        "none" => Ok(PacingMode::None),
        _ => err(
            path,
            format!("unknown pacing {s:?}; expected \"fq\", \"internal\" or \"none\""),
        ),
    }
}

pub(super) fn parse_pacing(
    path: &str,
    v: Option<&serde_json::Value>,
) -> Result<Pacing, ScenarioError> {
    use serde_json::Value;
    let mut p = Pacing {
        mode: PacingMode::Fq,
        max_rate: None,
    };
    match v {
        None => {}
        Some(Value::String(s)) => p.mode = pacing_mode(path, s)?,
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let sub = format!("{path}.{k}");
                match (k.as_str(), v) {
                    ("mode", Value::String(s)) => p.mode = pacing_mode(&sub, s)?,
                    ("max_rate", Value::String(s)) => {
                        p.max_rate = Some(positive_rate_at(&sub, &UnitStr(s.clone()))?);
                    }
                    ("mode" | "max_rate", other) => {
                        return err(sub, format!("expected a quoted string, got {other}"));
                    }
                    _ => return err(sub, "unknown field; expected mode or max_rate"),
                }
            }
        }
        Some(other) => {
            return err(path, format!("expected \"fq\", \"internal\", \"none\" or a table {{ mode, max_rate }}, got {other}"))
        }
    }
    Ok(p)
}
