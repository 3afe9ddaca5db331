//! One queueing link's fields (`[bottleneck]`, a `[[links]]` entry):
//! rate, buffer, queue discipline and its parameters, impairments.

use super::raw::{RawBottleneck, UnitStr};
use super::{
    check_step, duration_at, err, one_frame_rate, positive_rate_at, scaled_bytes, warn_long_jitter,
    warn_slow_rate, BottleneckSpec, ScenarioError, Warnings,
};
use crate::net::impair::LossConfig;
use crate::net::police::PolicerSpec;
use crate::qdisc::{Limit, QdiscConfig, QdiscEnv};
use crate::units::{self, Bytes, Dur, Rate, SizeSpec, Time};

/// Normalize one queueing link (`[bottleneck]`, or `[[links]]` entry
/// `prefix`): rate, buffer (BDP multiples of the rate and `bdp_rtt`, by
/// default the smallest of `rtts`, the base RTTs of the flows that cross
/// it), queue discipline, burst and rate schedule. Errors and warnings
/// (over a run of `duration`) name `<prefix>.<field>`.
pub(super) fn normalize_queue(
    prefix: &str,
    rb: &RawBottleneck,
    rtts: &[u64],
    mtu_wire: u32,
    duration: Dur,
    warn: &mut Warnings,
) -> Result<BottleneckSpec, ScenarioError> {
    let at = |field: &str| format!("{prefix}.{field}");
    let trace = match &rb.trace {
        None => None,
        Some(t) => {
            let spec = t.spec().map_err(|m| ScenarioError {
                path: at("trace"),
                message: m,
            })?;
            for (field, given) in [
                ("rate", rb.rate.is_some()),
                ("burst", rb.burst.is_some()),
                ("rate_schedule", rb.rate_schedule.is_some()),
            ] {
                if given {
                    return err(
                        at(field),
                        "a trace-driven link sends at its trace's delivery opportunities: remove this field or the trace",
                    );
                }
            }
            Some(spec)
        }
    };
    let rate =
        match (&rb.rate, &trace) {
            (_, Some(t)) => t.mean_rate(),
            (rate, None) => match rate {
                Some(r) => positive_rate_at(&at("rate"), r)?,
                None => return err(
                    at("rate"),
                    "missing: give the link's rate, e.g. rate = \"100Mbps\", or a delivery trace",
                ),
            },
        };
    let bdp_rtt = match rb.bdp_rtt.as_ref().map(|s| s.0.as_str()) {
        None | Some("min") => Dur(rtts.iter().copied().min().unwrap_or(0)),
        Some("max") => Dur(rtts.iter().copied().max().unwrap_or(0)),
        Some(s) => units::parse_duration(s).map_err(|m| ScenarioError {
            path: at("bdp_rtt"),
            message: format!("{m}, or \"min\" or \"max\""),
        })?,
    };
    // rate x RTT in 128 bits: a product past the 64-bit limit is refused,
    // not wrapped (`units::bdp` truncates).
    let bdp_wide = rate.0 as u128 * bdp_rtt.0 as u128 / (8 * units::NS_PER_S as u128);
    if bdp_wide as f64 >= units::MAX_SIZE_BYTES {
        return err(
            at("bdp_rtt"),
            format!(
                "the BDP, {} x {bdp_rtt}, is {:.3e} bytes: too large (at most {:.0e}); expected a shorter RTT",
                units::format_rate(rate),
                bdp_wide as f64,
                units::MAX_SIZE_BYTES
            ),
        );
    }
    let bdp = units::bdp(rate, bdp_rtt);
    let buffer_str = rb.buffer.clone().unwrap_or(UnitStr("1BDP".into()));
    let limit = resolve_buffer(&at("buffer"), &buffer_str.0, bdp, mtu_wire)?;
    let of_bdp = |s: Option<&UnitStr>| {
        s.is_some_and(|s| matches!(units::parse_size(&s.0), Ok(SizeSpec::Bdp(_))))
    };
    if bdp.0 == 0 && (of_bdp(Some(&buffer_str)) || of_bdp(rb.burst.as_ref())) {
        // Only a written duration can be zero: a flow's base RTT is not.
        warn.add(
            at("bdp_rtt"),
            format!(
                "{:?} makes the BDP 0 bytes, so a BDP multiple is one packet ({mtu_wire} bytes); expected the RTT the BDP is of, or \"min\"",
                rb.bdp_rtt.as_ref().map_or("", |s| s.0.as_str())
            ),
        );
    } else if let Ok(SizeSpec::Bdp(k)) = units::parse_size(&buffer_str.0) {
        if k * (bdp.0 as f64) < mtu_wire as f64 {
            warn.add(
                at("buffer"),
                format!(
                    "{:?} of a {}-byte BDP is less than one packet: the queue holds one ({mtu_wire} bytes)",
                    buffer_str.0, bdp.0
                ),
            );
        }
    }
    let overhead_bytes = match &rb.overhead {
        None => 0,
        Some(o) => match units::parse_size(&o.0).or_else(|m| err(at("overhead"), m))? {
            SizeSpec::Bytes(n) if n <= 1_000 => n,
            _ => {
                return err(
                    at("overhead"),
                    format!("{:?}: 0 to 1000 bytes of framing per packet", o.0),
                )
            }
        },
    };
    // The bucket holds at least one full packet as the link counts it.
    let frame = mtu_wire as u64 + overhead_bytes;
    let burst_bytes = match &rb.burst {
        None => frame,
        Some(b) => match units::parse_size(&b.0).or_else(|m| err(at("burst"), m))? {
            SizeSpec::Bytes(n) => n,
            SizeSpec::Packets(p) => scaled_bytes(&at("burst"), &b.0, p, mtu_wire as u64)?,
            SizeSpec::Bdp(k) => scaled_bytes(&at("burst"), &b.0, k, bdp.0)?,
        },
    };
    if burst_bytes < frame {
        return err(
            at("burst"),
            format!("{burst_bytes} bytes is smaller than one packet ({frame} bytes)"),
        );
    }
    let ecn = rb.ecn.unwrap_or(false);
    // Impairments of a network's links; the dumbbell has its [path] ones.
    if prefix == "bottleneck" && (rb.loss.is_some() || rb.jitter.is_some()) {
        let field = if rb.loss.is_some() { "loss" } else { "jitter" };
        return err(
            at(field),
            "the dumbbell's loss and jitter are the flows' ([path] or [[flows]]); a [[links]] link may have its own",
        );
    }
    let loss = rb.loss.clone().unwrap_or(LossConfig::None);
    loss.validate().map_err(|m| ScenarioError {
        path: at("loss"),
        message: m,
    })?;
    if let Some(w) = loss.warning() {
        warn.add(at("loss"), w);
    }
    if let Some(j) = &rb.jitter {
        j.validate().map_err(|m| ScenarioError {
            path: at("jitter"),
            message: m,
        })?;
        warn_long_jitter(&at("jitter"), j, duration, warn)?;
    }
    let jitter = rb.jitter.clone();
    let policer = match &rb.policer {
        None => None,
        Some(p) => {
            let rate = positive_rate_at(&at("policer.rate"), &p.rate)?;
            // Default depth: 10 ms at the rate, at least one frame.
            let burst = match &p.burst {
                None => (rate.0 / 800).max(mtu_wire as u64),
                Some(b) => {
                    match units::parse_size(&b.0).or_else(|m| err(at("policer.burst"), m))? {
                        SizeSpec::Bytes(n) => n,
                        SizeSpec::Packets(k) => {
                            scaled_bytes(&at("policer.burst"), &b.0, k, mtu_wire as u64)?
                        }
                        SizeSpec::Bdp(_) => {
                            return err(
                                at("policer.burst"),
                                "a policer's burst is bytes or packets",
                            )
                        }
                    }
                }
            };
            if burst < mtu_wire as u64 || burst > (rate.0 / 8).max(mtu_wire as u64) {
                return err(
                    at("policer.burst"),
                    format!(
                        "{burst} bytes: between one frame ({mtu_wire} bytes) and one second at the policer's rate"
                    ),
                );
            }
            warn_slow_rate(&at("policer.rate"), rate, mtu_wire as u64, duration, warn);
            Some(PolicerSpec {
                rate,
                burst: Bytes(burst),
            })
        }
    };
    let qdisc_name = rb.qdisc.clone().unwrap_or_else(|| "taildrop".into());
    let mut qdisc_params = serde_json::Value::Null;
    for (k, v) in &rb.qdisc_params {
        if !QdiscConfig::NAMES.contains(&k.as_str()) {
            return err(
                at(k),
                format!(
                    "unknown field; expected one of {}rate, buffer, bdp_rtt, qdisc, ecn, burst, rate_schedule, trace, policer, overhead, or a [{prefix}.<qdisc>] table ({})",
                    if prefix == "bottleneck" { "" } else { "name, delay, " },
                    QdiscConfig::NAMES.join(", ")
                ),
            );
        }
        if *k != qdisc_name {
            return err(
                at(k),
                format!("parameters for {k:?} but {prefix}.qdisc is {qdisc_name:?}"),
            );
        }
        if !v.is_object() {
            return err(at(k), "expected a table of parameters");
        }
        qdisc_params = v.clone();
    }
    let env = QdiscEnv {
        limit,
        rate,
        mtu_wire,
        ecn,
    };
    let qdisc = QdiscConfig::parse(&qdisc_name, &qdisc_params, &env).map_err(|m| {
        let path = if qdisc_params.is_null() {
            at("qdisc")
        } else {
            at(&qdisc_name)
        };
        ScenarioError { path, message: m }
    })?;

    let mut rate_schedule = Vec::new();
    for (k, (t, r)) in rb.rate_schedule.iter().flatten().enumerate() {
        let t = duration_at(&at(&format!("rate_schedule[{k}][0]")), t)?;
        let r = positive_rate_at(&at(&format!("rate_schedule[{k}][1]")), r)?;
        if let Some(&(prev, _)) = rate_schedule.last() {
            check_step(
                &at(&format!("rate_schedule[{k}][0]")),
                Time(t.0),
                prev,
                "rate",
            )?;
        }
        rate_schedule.push((Time(t.0), r));
    }

    // A bucket deeper than a second of transmission at the largest rate is
    // no longer a shaper (issue 10: 20 GiB on 100 Mbit/s gave utilization
    // 5571% and runs that did not end).
    let top_rate = Rate(
        rate_schedule
            .iter()
            .map(|&(_, r)| r.0)
            .fold(rate.0, u64::max),
    );
    let burst_max = (top_rate.0 / 8).max(frame);
    if burst_bytes > burst_max {
        return err(
            at("burst"),
            format!(
                "{burst_bytes} bytes is more than one second of transmission at {} ({burst_max} bytes)",
                units::format_rate(top_rate)
            ),
        );
    }

    let spec = BottleneckSpec {
        rate,
        buffer: buffer_str.0,
        limit,
        bdp,
        bdp_rtt,
        qdisc,
        ecn,
        burst: Bytes(burst_bytes),
        rate_schedule,
        trace,
        policer,
        overhead: Bytes(overhead_bytes),
        loss,
        jitter,
    };
    // A link that cannot send one frame in the run: what its bucket holds
    // at the start is all that crosses it (a trace link is left to its trace).
    if spec.trace.is_none() && spec.capacity_bits(0, duration.0) < (frame * 8) as f64 {
        let (field, what) = if spec.rate_schedule.is_empty() {
            ("rate", units::format_rate(rate))
        } else {
            let r = units::format_rate(rate);
            ("rate_schedule", format!("{r} with its schedule"))
        };
        warn.add(
            at(field),
            format!(
                "{what} carries less than one frame ({frame} bytes) in the run's {duration}: beyond the {burst_bytes} bytes its bucket starts with nothing crosses this link; expected at least {}",
                units::format_rate(one_frame_rate(frame, duration))
            ),
        );
    }
    Ok(spec)
}

/// Resolve `buffer` to a queue limit. An explicit size below one packet is an
/// error; a BDP multiple is never less than one full-size packet.
pub(super) fn resolve_buffer(
    path: &str,
    s: &str,
    bdp: Bytes,
    mtu_wire: u32,
) -> Result<Limit, ScenarioError> {
    match units::parse_size(s).or_else(|m| err(path, m))? {
        SizeSpec::Bytes(b) => {
            if b < mtu_wire as u64 {
                return err(
                    path,
                    format!("{s:?} is smaller than one packet ({mtu_wire} bytes on the wire)"),
                );
            }
            Ok(Limit::Bytes(b))
        }
        SizeSpec::Packets(p) => {
            if p < 1.0 || p.fract() != 0.0 {
                return err(
                    path,
                    format!("{s:?}: a packet limit must be a whole number of at least 1"),
                );
            }
            if p > u32::MAX as f64 {
                // Not capped by the cast (issue 39).
                return err(
                    path,
                    format!("{s:?}: a packet limit is at most {} packets", u32::MAX),
                );
            }
            Ok(Limit::Packets(p as u32))
        }
        SizeSpec::Bdp(k) => {
            if k <= 0.0 {
                return err(path, format!("{s:?} must be greater than zero"));
            }
            Ok(Limit::Bytes(
                scaled_bytes(path, s, k, bdp.0)?.max(mtu_wire as u64),
            ))
        }
    }
}
