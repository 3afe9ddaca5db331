"""The simulator's tables (summary, flows, samples, queue, transitions) from
what the Linux run's processes wrote, with the same column names where the
quantity exists (NaN or null where it does not), and the self-checks.

Where a quantity is measured differently from the simulator:

- goodput: bytes the receiving application read, per interval and over the
  flow's active time (the simulator counts in-order payload at the
  receiver; the same thing).
- ``srtt_mean_ms``: the mean of the sampled ``tcpi_rtt``, each sample
  weighted by the bytes delivered in its interval (the simulator averages
  srtt over every ACK); ``mean_rtt_ms`` in the summary likewise, over all
  flows. A sized flow's row for the interval it completed in holds its
  ``TCP_INFO`` at completion (its socket is closed when the sampler comes),
  as the simulator's row holds the state the flow ended in.
- ``segs_sent``/``segs_retrans``: ``tcpi_data_segs_out`` and
  ``tcpi_total_retrans`` at the end of the flow.
- ``fct_s``: from the SYN to the receiver's close (which follows the ACK of
  the last byte by about a one-way delay less than the simulator's end).
- ``transitions``: changes of the state label between samples (BBR mode
  from its gains; Open/Recovery/Loss/CWR from ``tcpi_ca_state``; slow start
  from cwnd < ssthresh), so only at the sampling resolution.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd
import pyarrow as pa

from ..results import conform, schemas
from ..stats import jain
from .tcpinfo import bbr_mode, ca_state_name

__all__ = ["THRESHOLDS", "build_tables", "info_at", "self_check"]

NAN = float("nan")
QDELAY_COLUMNS = ("qdelay_mean_ms", "qdelay_p50_ms", "qdelay_p95_ms", "qdelay_p99_ms")
INFINITE_SSTHRESH = 0x7FFFFFFF

# Self-check thresholds (docs/validation.md explains them). A run over any
# of them is marked trustworthy = false and the summary says why.
THRESHOLDS = {
    # Release lateness of the bottleneck against its schedule, microseconds.
    "lateness_p99_us": 250.0,
    "lateness_max_us": 20_000.0,
    # Frames lost outside the qdisc: socket buffers, veth queues, oversize
    # frames (offloads on). Any such loss makes the run untrustworthy.
    "frames_lost_outside_qdisc": 0,
    # CPU load of one process (1.0 = one core busy all the run).
    "process_cpu_load": 0.9,
    # Share of the whole machine busy during the run (a warning only: the
    # lateness and loss checks measure whether it did harm).
    "host_cpu_busy": 0.95,
    # Share of the run's CPUs' time taken by processes other than the run's
    # (docs/validation.md, "Other work"): it slows the hosts' TCP and the
    # bottleneck and moves the result while the lateness checks pass.
    "others_cpu_share": 0.05,
}


def _f(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return NAN
    return x


def _ms_from_us(v: Any) -> float:
    x = _f(v)
    return x / 1e3 if not math.isnan(x) else NAN


def _mbps_from_Bps(v: Any) -> float:
    x = _f(v)
    if math.isnan(x) or x >= 2**63:
        return NAN
    return x * 8 / 1e6


def _phase(cc: str, row: dict[str, Any]) -> str:
    """The state label the simulator would write (at sampling resolution)."""
    if cc == "bbr1":
        pg, cg = row.get("bbr_pacing_gain"), row.get("bbr_cwnd_gain")
        if pg is None or cg is None:
            return ""
        return bbr_mode(pg, cg)[0]
    st = ca_state_name(row.get("ca_state"))
    if st in ("Recovery", "Loss", "CWR"):
        return {"Recovery": "RECOVERY", "Loss": "LOSS", "CWR": "CWR"}[st]
    cwnd, ssth = row.get("snd_cwnd"), row.get("snd_ssthresh")
    if cwnd is None or ssth is None:
        return ""
    return "SLOW_START" if cwnd < ssth else "CONG_AVOID"


def _ns(seconds: float) -> int:
    return max(round(seconds * 1e9), 0)


def _wire_bits(queue: pd.DataFrame, sc_json: str, interval: float, link: int) -> float:
    """Bits link ``link`` sent during the run, from its per-interval
    utilization (its rows of the queue table), each interval's capacity
    from the core (``capacity_bits``: the simulator's own definition; the
    last interval may be shorter): what the bottleneck sent up to the end
    of the run, not after."""
    from .._core import capacity_bits

    if not len(queue):
        return 0.0
    t = queue["time_s"].to_numpy()
    starts = [max(t[0] - interval, 0.0), *t[:-1]]
    return float(
        sum(
            0.0 if math.isnan(u) else u * capacity_bits(sc_json, _ns(a), _ns(b), link)
            for u, a, b in zip(queue["wire_utilization"], starts, t, strict=True)
        )
    )


def _weighted_mean(pairs: list[tuple[float, float]]) -> float:
    """Mean of (value, weight) pairs; unweighted when no weight is positive."""
    if not pairs:
        return NAN
    w = sum(max(x[1], 0.0) for x in pairs)
    if w <= 0:
        return sum(x[0] for x in pairs) / len(pairs)
    return sum(v * max(k, 0.0) for v, k in pairs) / w


def _actual_start(spec: dict[str, Any], sent: dict[str, Any]) -> float | None:
    """When the flow started (s): its scheduled start, or for a successive
    flow the moment it sent its SYN (None if it never started)."""
    if spec.get("after"):
        return sent.get("syn_s")
    return spec["start_ns"] / 1e9


def info_at(
    t: float, sampled: dict[str, Any] | None, sender: dict[str, Any], duration: float
) -> dict[str, Any]:
    """A flow's TCP_INFO for its samples row at ``t``: the sampler's read,
    or, where its socket had closed before the sampler came, the sender's
    last read at the close (``final``): when the flow completed in the
    interval (the receiver's close arrived), as the simulator's row for the
    interval holds the state it ended in (without it the interval's bytes
    carry no srtt, and a short flow's srtt mean lost its last, most queued,
    part); and at the run's end, where every flow closes at the instant of
    the sampler's last read and may close first."""
    if sampled:
        return sampled
    done = sender.get("done_s")
    if (done is not None and done <= t) or t >= duration - 1e-9:
        return sender.get("final") or {}
    return {}


def build_tables(sc: dict[str, Any], raw: dict[str, Any]) -> dict[str, pa.Table]:
    flows_spec = sc["flows"]
    nflows = len(flows_spec)
    duration = sc["duration_ns"] / 1e9
    interval = sc["sample_interval_ns"] / 1e9
    # The links (the dumbbell's one bottleneck, or a network's) and each
    # flow's route through them, as the core sees them.
    link_specs = sc.get("links") or [{"name": "bottleneck", "delay_ns": 0, **sc["bottleneck"]}]
    names = [str(x["name"]) for x in link_specs]
    routes = [list(f.get("route") or [0]) for f in flows_spec]
    snd = {f["flow"]: f for f in raw["sender"]["flows"]}
    rcv = {f["flow"]: f for f in raw["receiver"]["flows"]}
    bn = raw["bottleneck"]
    bn_flows = {f["flow"]: f for f in bn["flows"]}

    # ---- samples: receiver byte counts x sender tcp_info x bottleneck backlog
    counts = pd.DataFrame(raw["receiver"]["counts"], columns=["time_s", "flow", "bytes"])
    info = pd.DataFrame(raw["sender"]["samples"])
    fq = pd.read_csv(io.StringIO(raw["flow_queue_csv"]))
    rows = []
    by_time_flow_info = (
        {(round(r["time_s"], 9), r["flow"]): r for r in info.to_dict("records")} if len(info) else {}
    )
    by_time_flow_q = {(round(r["time_s"], 9), int(r["flow"])): r for r in fq.to_dict("records")}
    last_bytes = [0] * nflows
    srtts: list[list[tuple[float, float]]] = [[] for _ in range(nflows)]
    transitions = []
    last_phase = [""] * nflows
    starts = [_actual_start(spec, snd.get(i, {})) for i, spec in enumerate(flows_spec)]
    times = sorted(set(counts["time_s"].astype(float)))
    prev_time = dict(zip(times, [0.0, *times[:-1]], strict=True))
    for r in counts.sort_values(["time_s", "flow"]).to_dict("records"):
        t, i, b = float(r["time_s"]), int(r["flow"]), int(r["bytes"])
        spec = flows_spec[i]
        dt = t - prev_time[t]
        done = snd.get(i, {}).get("done_s")
        # As the simulator: a row for each flow active during the interval.
        began = starts[i]
        if began is None or began > t + 1e-9 or (done is not None and done <= t - dt):
            last_bytes[i] = b
            continue
        ti = info_at(t, by_time_flow_info.get((round(t, 9), i)), snd.get(i, {}), duration)
        q = by_time_flow_q.get((round(t, 9), i), {})
        delta = b - last_bytes[i]
        goodput = delta * 8 / dt / 1e6 if dt > 0 else NAN
        last_bytes[i] = b
        rtt = _ms_from_us(ti.get("rtt_us"))
        if ti and not math.isnan(rtt) and rtt > 0:
            # Weighted by the bytes delivered in the interval: the simulator
            # averages srtt over ACKs, which come with the data.
            srtts[i].append((rtt, float(delta)))
        unacked = ti.get("unacked")
        inflight = (
            unacked - ti.get("sacked", 0) - ti.get("lost", 0) + ti.get("retrans", 0)
            if unacked is not None
            else NAN
        )
        ssth = ti.get("snd_ssthresh")
        row = {
            "time_s": t,
            "flow": i,
            "group": int(spec["group"]),
            "goodput_mbps": goodput,
            "delivered_bytes": b,
            "cwnd_pkts": _f(ti.get("snd_cwnd")),
            "inflight_pkts": _f(inflight),
            "srtt_ms": rtt,
            "min_rtt_ms": _ms_from_us(ti.get("min_rtt_us")),
            "pacing_rate_mbps": _mbps_from_Bps(ti.get("pacing_rate")),
            "delivery_rate_mbps": _mbps_from_Bps(ti.get("delivery_rate")),
            "retrans_segs": ti.get("total_retrans"),
            "queue_backlog_bytes": q.get("queue_backlog_bytes"),
            "ssthresh_pkts": NAN if ssth is None or ssth >= INFINITE_SSTHRESH else float(ssth),
            "ca_state": ca_state_name(ti.get("ca_state")) if ti else "",
            "bytes_acked": ti.get("bytes_acked"),
        }
        if spec["cc"] == "bbr1":
            pg, cg = ti.get("bbr_pacing_gain"), ti.get("bbr_cwnd_gain")
            mode, phase = bbr_mode(pg, cg) if pg is not None and cg is not None else ("", "")
            row.update(
                {
                    "bbr_mode": mode,
                    "bbr_phase": phase,
                    "bbr_pacing_gain": _f(pg),
                    "bbr_cwnd_gain": _f(cg),
                    # tcp_info's bbr_bw is `bbr_bw()`: for BBRv1 lt_bw while it
                    # uses it, so the bandwidth in use, not the max filter.
                    "bbr_bw_mbps": _mbps_from_Bps(ti.get("bbr_bw_bytes_per_s")),
                    "bbr_min_rtt_ms": _ms_from_us(ti.get("bbr_min_rtt_us")),
                }
            )
        if ti:
            ph = _phase(spec["cc"], ti)
            if ph and ph != last_phase[i]:
                transitions.append({"time_s": t, "flow": i, "from": last_phase[i], "to": ph})
                last_phase[i] = ph
        rows.append(row)
    samples = pd.DataFrame(rows, columns=None if rows else list(schemas()["samples"].names))
    for col in ("bbr_mode", "bbr_phase"):
        if col in samples:
            samples[col] = samples[col].fillna("")
    if "bytes_acked" in samples:
        samples["bytes_acked"] = samples["bytes_acked"].astype("Int64")

    # ---- flows
    frows = []
    total_sent = total_retx = 0
    goodputs = []
    all_srtt: list[tuple[float, float]] = []
    for i, spec in enumerate(flows_spec):
        s, r, b = snd.get(i, {}), rcv.get(i, {}), bn_flows.get(i, {})
        fin = s.get("final") or {}
        start = starts[i] if starts[i] is not None else spec["start_ns"] / 1e9
        size = spec.get("size_bytes")
        done = s.get("done_s")
        # Bytes by the end of the run: the receiver's count at the last sample.
        c = counts[counts.flow == i]
        bytes_end = int(c["bytes"].iloc[-1]) if len(c) else int(r.get("bytes", 0))
        end = done if done is not None and done <= duration else duration
        active = end - start
        goodput = bytes_end * 8 / active / 1e6 if active > 0 else NAN
        sent = fin.get("data_segs_out")
        retx = fin.get("total_retrans")
        fct = done - s["syn_s"] if done is not None and "syn_s" in s else NAN
        frows.append(
            {
                "flow": i,
                "group": int(spec["group"]),
                "label": spec["label"],
                "cc": spec["cc"],
                "rtt_ms": spec["rtt_ns"] / 1e6,
                "start_s": start,
                "end_s": end,
                "size_bytes": int(size) if size is not None else -1,
                "bytes": bytes_end,
                "bytes_acked": fin.get("bytes_acked"),
                "goodput_mbps": goodput,
                "segs_sent": sent,
                "segs_retrans": retx,
                "retrans_rate": retx / sent if sent else (0.0 if sent == 0 else NAN),
                "srtt_mean_ms": _weighted_mean(srtts[i]),
                "min_rtt_ms": _ms_from_us(fin.get("min_rtt_us")),
                "fct_s": fct,
                "drops": b.get("drops"),
                "drops_overflow": b.get("drops_overflow"),
                "drops_aqm": b.get("drops_aqm"),
                "drops_policer": b.get("drops_policer", 0),
                "drops_random": b.get("drops_random"),
                "acks_lost": b.get("acks_lost"),
                "marks": b.get("marks"),
                "rto_count": fin.get("total_rto"),
                "segs_in_network": None,
                "segs_received": None,
                "host": int(spec.get("host", 0)),
                "route": ">".join(names[k] for k in routes[i]),
                "ack_interval_mean_us": _f(b.get("ack_interval_mean_us")),
                "ack_interval_cv": _f(b.get("ack_interval_cv")),
                "cc_kernel": s.get("cc_set", ""),
                "error": s.get("error", "") or r.get("error", ""),
            }
        )
        total_sent += sent or 0
        total_retx += retx or 0
        goodputs.append(goodput)
        all_srtt += srtts[i]
    flows = pd.DataFrame(frows)

    # ---- queue: a row per link and interval
    queue = pd.read_csv(io.StringIO(raw["queue_csv"]))
    if "link" in queue:
        queue["link"] = queue["link"].astype(str)

    # ---- links, and the summary over them
    from .._core import run_capacity_bits

    sc_json = json.dumps(sc)  # serialized once for the core's capacity functions
    capacity = run_capacity_bits(sc_json)
    bb = bn["bottleneck"]
    link_stats = bn.get("links") or [{"link": "bottleneck", **bb}]
    lrows = []
    payload_bits = wire_bits = 0.0
    drops_end = 0
    for k, (ls, st) in enumerate(zip(link_specs, link_stats, strict=True)):
        q = queue[queue["link"] == names[k]] if "link" in queue else queue
        on = [i for i in range(nflows) if k in routes[i] and starts[i] is not None]
        link_bytes = sum(int(frows[i]["bytes"]) for i in on)
        cap = run_capacity_bits(sc_json, k)
        wire = _wire_bits(q, sc_json, interval, k)
        # Drops by the end of the run (the bottleneck keeps going a little longer).
        drops = int(q["drops"].iloc[-1]) if len(q) else int(st["drops"])
        payload_bits += link_bytes * 8
        wire_bits += wire
        drops_end += drops
        lrows.append(
            {
                "link": names[k],
                "rate_mbps": ls["rate_bps"] / 1e6,
                "delay_ms": ls.get("delay_ns", 0) / 1e6,
                "flows": len(on),
                "utilization": link_bytes * 8 / cap if cap > 0 else NAN,
                "wire_utilization": wire / cap if cap > 0 else NAN,
                **{m: _f(st[m]) for m in QDELAY_COLUMNS},
                "drops": drops,
                "packets": int(st["departures"]),
                "max_backlog_bytes": int(st["max_backlog_bytes"]),
                "max_backlog_pkts": int(st["max_backlog_pkts"]),
            }
        )
    links = pd.DataFrame(lrows)
    summary = pd.DataFrame(
        [
            {
                "duration_s": duration,
                "rate_mbps": min(x["rate_bps"] for x in link_specs) / 1e6,
                "flows": nflows,
                # Over the links: a flow's payload counts on each link it crosses.
                "utilization": payload_bits / capacity,
                "wire_utilization": wire_bits / capacity if capacity > 0 else NAN,
                "jain": jain(goodputs),
                "retrans_rate": total_retx / total_sent if total_sent else 0.0,
                "mean_rtt_ms": _weighted_mean(all_srtt),
                "qdelay_mean_ms": _f(bb["qdelay_mean_ms"]),
                "qdelay_p50_ms": _f(bb["qdelay_p50_ms"]),
                "qdelay_p95_ms": _f(bb["qdelay_p95_ms"]),
                "qdelay_p99_ms": _f(bb["qdelay_p99_ms"]),
                "drops": drops_end,
                "bottleneck_pkts": int(bb["departures"]),
                "max_backlog_bytes": int(bb["max_backlog_bytes"]),
                "max_backlog_pkts": int(bb["max_backlog_pkts"]),
            }
        ]
    )
    trans = pd.DataFrame(transitions, columns=list(schemas()["transitions"].names))
    # Every table through the results schema: its columns, in its order and types.
    return {
        name: conform(name, df)
        for name, df in (
            ("summary", summary),
            ("flows", flows),
            ("samples", samples),
            ("queue", queue),
            ("transitions", trans),
            ("links", links),
        )
    }


def self_check(sc: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The self-check values, the thresholds, the warnings and the verdict."""
    bn = raw["bottleneck"]
    lat = bn["lateness_us"]
    ncpu = raw.get("ncpu", 1)

    def load(d: dict[str, Any]) -> float:
        wall = _f(d.get("wall_s"))
        cpu = _f(d.get("cpu_user_s")) + _f(d.get("cpu_sys_s"))
        return cpu / wall if wall and wall > 0 else NAN

    lost_outside = (
        int(bn["rx_socket_drops"]) + int(bn["send_nobuf_drops"]) + int(bn["veth_tx_drops"])
        + int(bn["frames_oversize"])
    )  # fmt: skip
    values = {
        "lateness_p50_us": _f(lat.get("p50")),
        "lateness_p99_us": _f(lat.get("p99")),
        "lateness_p999_us": _f(lat.get("p999")),
        "lateness_max_us": _f(lat.get("max")),
        "lateness_max_at_s": _f(lat.get("max_at_s")),
        "releases_late_over_1ms": _f(lat.get("over_1ms")),
        "frames_lost_outside_qdisc": float(lost_outside),
        "bottleneck_cpu_load": _f(bn.get("cpu_load")),
        "sender_cpu_load": load(raw["sender"]),
        "receiver_cpu_load": load(raw["receiver"]),
        "host_cpu_busy": _f(raw.get("host_cpu_busy")),
        "others_cpu_share": _f(raw.get("others_cpu_share")),
    }
    warnings = []
    th = THRESHOLDS
    if values["lateness_p99_us"] > th["lateness_p99_us"]:
        warnings.append(
            f"bottleneck release lateness p99 {values['lateness_p99_us']:.0f} us "
            f"> {th['lateness_p99_us']:.0f} us"
        )
    if values["lateness_max_us"] > th["lateness_max_us"]:
        warnings.append(
            f"bottleneck release lateness max {values['lateness_max_us'] / 1e3:.1f} ms "
            f"> {th['lateness_max_us'] / 1e3:.0f} ms"
        )
    if lost_outside > th["frames_lost_outside_qdisc"]:
        warnings.append(
            f"{lost_outside} frames lost outside the qdisc (socket buffers {bn['rx_socket_drops']}, "
            f"send {bn['send_nobuf_drops']}, veth {bn['veth_tx_drops']}, oversize {bn['frames_oversize']})"
        )
    for who in ("bottleneck", "sender", "receiver"):
        v = values[f"{who}_cpu_load"]
        if v > th["process_cpu_load"]:
            warnings.append(f"{who} used {v:.0%} of a core (> {th['process_cpu_load']:.0%})")
    if values["others_cpu_share"] > th["others_cpu_share"]:
        warnings.append(
            f"other work took {values['others_cpu_share']:.0%} of the run's CPUs (> "
            f"{th['others_cpu_share']:.0%}), where the bottleneck, the hosts' TCP and the traffic run"
        )
    if values["host_cpu_busy"] > th["host_cpu_busy"]:
        # Not a verdict by itself: lateness and losses above measure the harm.
        warnings.append(
            f"the machine was {values['host_cpu_busy']:.0%} busy ({ncpu} CPUs; other work competes) "
            "(informational)"
        )
    for f in raw["sender"]["flows"] + raw["receiver"]["flows"]:
        if f.get("error"):
            warnings.append(f"flow {f['flow']}: {f['error']}")
    if not bn.get("sched_fifo"):
        warnings.append("the bottleneck did not get SCHED_FIFO (informational)")
    trustworthy = not any("informational" not in w for w in warnings)
    json_values = {k: (None if math.isnan(v) else v) for k, v in values.items()}
    return {
        "trustworthy": trustworthy,
        "warnings": warnings,
        "values": json_values,
        "thresholds": dict(THRESHOLDS),
    }
