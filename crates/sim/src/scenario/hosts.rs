//! `[hosts]`: how the end hosts behave, each switch a Linux mechanism the
//! simulator models (on by default), and the hosts' timing noise.

use super::raw::RawHosts;
use super::{err, ScenarioError};
use crate::net::host::{HostLatency, RunSpeed, Turnarounds, PCT};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `[hosts]`; a field a normalized scenario lacks takes its default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostsSpec {
    pub latency: HostLatency,
    /// Senders hold a partial TSO burst back for the next ACK
    /// (`tcp_tso_should_defer`), as Linux does; `false` sends at once.
    pub tso_defer: bool,
    /// Receivers hold duplicate ACKs back while data is out of order
    /// (`tcp_comp_sack_*`), as Linux does; `false` ACKs every segment.
    pub sack_compress: bool,
    /// Senders mark PSH at the end of each application write and receivers
    /// ACK such a segment at once (`tcp::push`), as Linux does; `false`: no
    /// PSH, an ACK per two segments.
    pub push_acks: bool,
    /// Receivers ACK every segment that grows their receive window
    /// (`tcp_grow_window`; `tcp::rcvbuf`), as Linux does; `false`: only the
    /// first 16 segments are ACKed singly.
    pub window_acks: bool,
    /// Receivers advertise their window on every ACK and senders keep
    /// within it (`tcp_select_window`, `tcp_snd_wnd_test`), as Linux does:
    /// while a hole holds the cumulative ACK, out-of-order data takes the
    /// receive buffer's room and the right edge stops moving. On by
    /// default since model version 18, with the write queue's buffers sized
    /// when written (`tcp/push.rs`): the conformance matrix's every-run
    /// flow-metrics at q < 0.05 fall from 25 to 5 (docs/model.md, "The
    /// advertised window"). Without `rcv_rtt_timestamps` (DRS on the
    /// handshake's RTT) a deep queue would make the window hold back
    /// senders the kernel does not. `false`: only a fixed `rwnd` limits
    /// (the model before).
    pub advertised_window: bool,
    /// The receiver's RTT, which DRS measures its rounds by, from RFC 7323
    /// timestamps as Linux 6.16+ keeps it (`tcp_rcv_rtt_measure_ts`,
    /// `tcp_rcv_rtt_update`: a sample per new TSecr; a smaller one latches,
    /// a larger one moves the estimate by 1/8): it sees the queue. On by
    /// default (model version 16); `false`: the handshake's RTT (the model
    /// before).
    pub rcv_rtt_timestamps: bool,
    /// RFC 7323 timestamps give an RTT sample on an ACK of retransmitted
    /// data that has no timed one (`tcp_ack_update_rtt`), as Linux does;
    /// `false`: no sample there (the model before version 9).
    pub timestamps: bool,
    /// Receivers time their delayed ACKs as Linux does (`tcp/delack.rs`):
    /// the timeout adapts to the gaps between segments, doubles after the
    /// timer sent an ACK (at most the handshake's RTT), and runs on the
    /// kernel's jiffies; quick-ACK mode restarts after a gap longer than
    /// the RTO, an old duplicate or a Not-ECT segment of an ECN flow.
    /// `false`: exactly 40 ms (the model before version 12).
    pub delack: bool,
    /// The kernel's tick rate (`CONFIG_HZ`) the delayed-ACK timer counts
    /// in: 100, 250, 300 or 1000; 250 is the Linux backend's kernel.
    pub hz: u32,
    /// How fast this run's hosts are beside the table (`net::host::RunSpeed`):
    /// `"drawn"` scales the turnarounds by a factor drawn from the seed,
    /// spread as the kernel's runs of one scenario are (sd 6.7%); `"fixed"`
    /// keeps the table (the model before version 14); a number is the
    /// factor.
    pub run_speed: RunSpeed,
}

/// `CONFIG_HZ` values Linux offers.
pub const HZ_VALUES: [u32; 4] = [100, 250, 300, 1000];

impl Default for HostsSpec {
    fn default() -> HostsSpec {
        HostsSpec {
            latency: HostLatency::default(),
            tso_defer: true,
            sack_compress: true,
            push_acks: true,
            window_acks: true,
            advertised_window: true,
            rcv_rtt_timestamps: true,
            timestamps: true,
            delack: true,
            hz: 250,
            run_speed: RunSpeed::Drawn,
        }
    }
}

/// `[hosts]` as written -> `HostsSpec`.
pub(super) fn normalize(raw: RawHosts) -> Result<HostsSpec, ScenarioError> {
    let linux = HostsSpec::default();
    Ok(HostsSpec {
        latency: match raw.latency {
            None => linux.latency,
            Some(v) => latency(&v)?,
        },
        tso_defer: raw.tso_defer.unwrap_or(linux.tso_defer),
        sack_compress: raw.sack_compress.unwrap_or(linux.sack_compress),
        push_acks: raw.push_acks.unwrap_or(linux.push_acks),
        window_acks: raw.window_acks.unwrap_or(linux.window_acks),
        advertised_window: raw.advertised_window.unwrap_or(linux.advertised_window),
        rcv_rtt_timestamps: raw.rcv_rtt_timestamps.unwrap_or(linux.rcv_rtt_timestamps),
        timestamps: raw.timestamps.unwrap_or(linux.timestamps),
        delack: raw.delack.unwrap_or(linux.delack),
        hz: match raw.hz {
            None => linux.hz,
            Some(v) => match v.as_u64().and_then(|h| u32::try_from(h).ok()) {
                Some(hz) if HZ_VALUES.contains(&hz) => hz,
                _ => {
                    return err(
                        "hosts.hz",
                        format!(
                            "expected one of {} (the kernel's CONFIG_HZ), got {v}",
                            HZ_VALUES.map(|h| h.to_string()).join(", ")
                        ),
                    )
                }
            },
        },
        run_speed: match raw.run_speed {
            None => linux.run_speed,
            Some(v) => run_speed(&v)?,
        },
    })
}

/// `[hosts] run_speed`: a name, or a factor from 0.1 to 10.
fn run_speed(v: &Value) -> Result<RunSpeed, ScenarioError> {
    let want = format!(
        "one of {}, or a factor from 0.1 to 10",
        RunSpeed::NAMES.join(", ")
    );
    match v {
        Value::String(s) if s == "drawn" => Ok(RunSpeed::Drawn),
        Value::String(s) if s == "fixed" => Ok(RunSpeed::Fixed),
        Value::Number(n) => match n.as_f64().filter(|f| (0.1..=10.0).contains(f)) {
            Some(f) => Ok(RunSpeed::Factor(f)),
            None => err("hosts.run_speed", format!("expected {want}, got {v}")),
        },
        _ => err("hosts.run_speed", format!("expected {want}, got {v}")),
    }
}

/// `[hosts] latency`: a name, or the table a user measured on their own
/// Linux backend (`scripts/host_latency.py --toml`): for the sender and the
/// receiver, 18 values in microseconds at the percentiles of `PCT`,
/// non-decreasing.
fn latency(v: &Value) -> Result<HostLatency, ScenarioError> {
    const PATH: &str = "hosts.latency";
    let m = match v {
        Value::String(s) => {
            return HostLatency::parse(s).map_or_else(
                || {
                    err(
                        PATH,
                        format!("unknown value {s:?}: expected {}", expected()),
                    )
                },
                Ok,
            )
        }
        Value::Object(m) => m,
        _ => return err(PATH, format!("expected {}", expected())),
    };
    if let Some(k) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "sender_us" | "receiver_us"))
    {
        return err(
            format!("{PATH}.{k}"),
            "unknown field: expected sender_us and receiver_us",
        );
    }
    let side = |name: &str| -> Result<[u64; 18], ScenarioError> {
        let path = format!("{PATH}.{name}");
        let pcts = PCT.map(|p| p.to_string()).join(", ");
        let want = format!("18 turnarounds in us at the percentiles {pcts}");
        let list = match m.get(name) {
            Some(Value::Array(a)) if a.len() == PCT.len() => a,
            Some(Value::Array(a)) => {
                return err(path, format!("expected {want}, got {} values", a.len()))
            }
            Some(_) => return err(path, format!("expected a list of {want}")),
            None => return err(path, format!("missing: expected {want}")),
        };
        let mut out = [0u64; 18];
        for (k, x) in list.iter().enumerate() {
            let us = x.as_f64().filter(|u| (0.0..=100_000.0).contains(u));
            let Some(us) = us else {
                return err(
                    format!("{path}[{k}]"),
                    format!("expected microseconds from 0 to 100000, got {x}"),
                );
            };
            out[k] = (us * 1e3).round() as u64;
            if k > 0 && out[k] < out[k - 1] {
                return err(format!("{path}[{k}]"), "percentiles must not decrease");
            }
        }
        Ok(out)
    };
    Ok(HostLatency::Table(Box::new(Turnarounds {
        sender_ns: side("sender_us")?,
        receiver_ns: side("receiver_us")?,
    })))
}

/// What `[hosts] latency` may be.
fn expected() -> String {
    format!(
        "one of {}, or a table {{ sender_us = [...], receiver_us = [...] }}",
        HostLatency::NAMES.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(l: Value) -> Result<HostsSpec, ScenarioError> {
        normalize(serde_json::from_value(json!({ "latency": l })).unwrap())
    }

    fn path_of(l: Value) -> String {
        with(l).expect_err("should fail").path
    }

    #[test]
    fn a_latency_table_is_read_in_microseconds_and_checked() {
        let ok: Vec<f64> = (0..18).map(|k| 20.0 + k as f64).collect();
        let h = with(json!({"sender_us": ok, "receiver_us": ok})).unwrap();
        let HostLatency::Table(t) = &h.latency else {
            panic!("a table")
        };
        assert_eq!((t.sender_ns[0], t.receiver_ns[17]), (20_000, 37_000));
        let e = with(json!({"sender_us": &ok[..17], "receiver_us": ok})).unwrap_err();
        assert_eq!(e.path, "hosts.latency.sender_us");
        assert!(e.message.contains("got 17 values"), "{}", e.message);
        let mut down = ok.clone();
        down[5] = 1.0;
        assert_eq!(
            path_of(json!({"sender_us": ok, "receiver_us": down})),
            "hosts.latency.receiver_us[5]"
        );
        let mut neg = ok.clone();
        neg[0] = -1.0;
        assert_eq!(
            path_of(json!({"sender_us": neg, "receiver_us": ok})),
            "hosts.latency.sender_us[0]"
        );
        assert_eq!(
            path_of(json!({"sender_us": ok})),
            "hosts.latency.receiver_us"
        );
        assert_eq!(
            path_of(json!({"sender_us": ok, "receiver_us": ok, "x": 1})),
            "hosts.latency.x"
        );
        assert_eq!(path_of(json!("fast")), "hosts.latency");
        assert_eq!(path_of(json!(3)), "hosts.latency");
        assert_eq!(with(json!("none")).unwrap().latency, HostLatency::None);
    }

    #[test]
    fn run_speed_is_a_name_or_a_factor() {
        let rs = |v: Value| normalize(serde_json::from_value(json!({ "run_speed": v })).unwrap());
        assert_eq!(rs(json!("drawn")).unwrap().run_speed, RunSpeed::Drawn);
        assert_eq!(rs(json!("fixed")).unwrap().run_speed, RunSpeed::Fixed);
        assert_eq!(rs(json!(1.5)).unwrap().run_speed, RunSpeed::Factor(1.5));
        for bad in [json!("fast"), json!(0), json!(11), json!(true)] {
            let e = rs(bad).unwrap_err();
            assert_eq!(e.path, "hosts.run_speed");
            assert!(e.message.contains("drawn, fixed"), "{}", e.message);
        }
    }
}
