//! The result tables' columns: name, type, unit and definition of each, the
//! one contract both backends fill. The simulator fills the row types below
//! (`world.rs`, and the Linux bottleneck its queue rows); the Linux
//! backend's tables (`python/ccarena/linux/tables.py`) are checked against
//! the same definitions, exported as `_core.schema()`, and
//! `docs/results.md` prints them. A backend may add columns after these
//! (the samples table's per-algorithm state, the Linux backend's kernel
//! fields), never rename or drop one.

use super::table::{ColumnData, Table};
use std::fmt::Write;

/// A column's type as it leaves the simulator (Arrow Int64, Float64, Utf8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    I64,
    F64,
    Str,
}

impl ColType {
    pub fn name(self) -> &'static str {
        match self {
            ColType::I64 => "int64",
            ColType::F64 => "float64",
            ColType::Str => "string",
        }
    }
}

/// One column of a result table.
#[derive(Clone, Copy, Debug)]
pub struct ColumnDef {
    pub name: &'static str,
    pub ty: ColType,
    /// The unit ("s", "ms", "Mbit/s", "bytes", "packets", "segments",
    /// "fraction", "" for identifiers and labels).
    pub unit: &'static str,
    /// What the value is, in one or two sentences.
    pub doc: &'static str,
}

/// One result table: its name, what a row is, and its fixed columns.
#[derive(Clone, Copy, Debug)]
pub struct TableDef {
    pub name: &'static str,
    pub row: &'static str,
    pub columns: &'static [ColumnDef],
}

impl TableDef {
    /// The CSV header line: the column names (no newline).
    pub fn csv_header(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name).collect();
        names.join(",")
    }

    /// Does `table` hold these columns first, in this order and with these
    /// types? (Columns after them are a backend's additions.)
    pub fn check(&self, table: &Table) -> Result<(), String> {
        if table.name != self.name {
            return Err(format!("table {} is not {}", table.name, self.name));
        }
        for (k, def) in self.columns.iter().enumerate() {
            let Some(col) = table.columns.get(k) else {
                return Err(format!("{}: column {} missing", self.name, def.name));
            };
            let ty = match col.data {
                ColumnData::I64(_) => ColType::I64,
                ColumnData::F64(_) => ColType::F64,
                ColumnData::Str(_) => ColType::Str,
            };
            if col.name != def.name || ty != def.ty {
                return Err(format!(
                    "{}: column {k} is {} ({}), the schema says {} ({})",
                    self.name,
                    col.name,
                    ty.name(),
                    def.name,
                    def.ty.name()
                ));
            }
        }
        Ok(())
    }
}

/// A Rust type a column holds.
pub trait CellValue: Sized {
    const TYPE: ColType;
    fn into_column(v: Vec<Self>) -> ColumnData;
    /// The value as a CSV field (Rust's `Display`; NaN as `NaN`).
    fn write_csv(&self, out: &mut String);
}

impl CellValue for i64 {
    const TYPE: ColType = ColType::I64;
    fn into_column(v: Vec<i64>) -> ColumnData {
        ColumnData::I64(v)
    }
    fn write_csv(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl CellValue for f64 {
    const TYPE: ColType = ColType::F64;
    fn into_column(v: Vec<f64>) -> ColumnData {
        ColumnData::F64(v)
    }
    fn write_csv(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl CellValue for String {
    const TYPE: ColType = ColType::Str;
    fn into_column(v: Vec<String>) -> ColumnData {
        ColumnData::Str(v)
    }
    fn write_csv(&self, out: &mut String) {
        if self.contains([',', '"', '\n', '\r']) {
            let _ = write!(out, "\"{}\"", self.replace('"', "\"\""));
        } else {
            out.push_str(self);
        }
    }
}

/// Defines a table once: its row struct (one field per column), a
/// column-wise builder (`push` rows, then `into_table`), and its
/// `TableDef` constant with each column's unit and definition.
macro_rules! result_table {
    (
        $name:literal, $row_doc:literal, $Row:ident, $Cols:ident, $DEF:ident {
            $( $field:ident : $ty:ty, $unit:literal, $doc:literal; )*
        }
    ) => {
        #[doc = concat!("One row of the `", $name, "` table: ", $row_doc, ".")]
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $Row {
            $( #[doc = $doc] pub $field: $ty, )*
        }

        impl $Row {
            /// The row as a CSV line (no newline), columns in table order.
            pub fn csv_line(&self) -> String {
                let mut out = String::new();
                let mut first = true;
                $(
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    CellValue::write_csv(&self.$field, &mut out);
                )*
                let _ = first;
                out
            }
        }

        #[doc = concat!("The `", $name, "` table being filled row by row.")]
        #[derive(Clone, Debug, Default)]
        pub struct $Cols {
            $( $field: Vec<$ty>, )*
        }

        impl $Cols {
            pub fn with_capacity(n: usize) -> Self {
                $Cols { $( $field: Vec::with_capacity(n), )* }
            }

            pub fn push(&mut self, r: $Row) {
                $( self.$field.push(r.$field); )*
            }

            pub fn len(&self) -> usize {
                [$( self.$field.len() ),*][0]
            }

            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            pub fn into_table(self) -> Table {
                let mut t = Table::new($name);
                $( t.push(stringify!($field), <$ty as CellValue>::into_column(self.$field)); )*
                t
            }
        }

        pub const $DEF: TableDef = TableDef {
            name: $name,
            row: $row_doc,
            columns: &[
                $( ColumnDef {
                    name: stringify!($field),
                    ty: <$ty as CellValue>::TYPE,
                    unit: $unit,
                    doc: $doc,
                }, )*
            ],
        };
    };
}

result_table! {
    "summary", "the whole run", SummaryRow, SummaryCols, SUMMARY {
        duration_s: f64, "s", "Length of the run.";
        rate_mbps: f64, "Mbit/s", "The bottleneck's rate at the start (see `rate_schedule` for steps); in a network, the slowest link's.";
        flows: i64, "", "Flows that started (a successive flow whose turn never came is not counted).";
        utilization: f64, "fraction", "Payload bytes delivered in order to all receivers, as bits, over the bottleneck's capacity: its rate integrated over the rate schedule plus the token bucket it starts with. Never above 1. In a network, summed over the links (a flow's payload counts on every link it crosses) over the links' capacities summed; per link: the `links` table.";
        wire_utilization: f64, "fraction", "Bytes that left the bottleneck (headers and retransmissions included) over the same capacity (in a network, every link's over their sum).";
        jain: f64, "", "Jain's fairness index of the flows' goodputs (RFC 5166): (sum x)^2 / (n sum x^2), 1/n..1; flows without a goodput are left out.";
        retrans_rate: f64, "fraction", "Segments retransmitted over segments sent, all flows.";
        mean_rtt_ms: f64, "ms", "Mean smoothed RTT over every ACK of every flow (Linux backend: the sampled srtt weighted by the bytes delivered in each interval).";
        qdelay_mean_ms: f64, "ms", "Mean time packets spent in the bottleneck (qdisc and shaper), over every packet that left it (in a network, every packet's time in each link's queue).";
        qdelay_p50_ms: f64, "ms", "Median of the same sojourn times.";
        qdelay_p95_ms: f64, "ms", "95th percentile of the same sojourn times.";
        qdelay_p99_ms: f64, "ms", "99th percentile of the same sojourn times.";
        drops: i64, "packets", "Packets the bottleneck dropped (overflow, AQM and policer, handshake packets included); in a network, all links'.";
        bottleneck_pkts: i64, "packets", "Packets that left the bottleneck (in a network, the sum over its links).";
        max_backlog_bytes: i64, "bytes", "Largest backlog of the bottleneck during the run (in a network, of any link).";
        max_backlog_pkts: i64, "packets", "Largest backlog of the bottleneck during the run, in packets (in a network, of any link).";
    }
}

result_table! {
    "flows", "one flow over the run", FlowRow, FlowCols, FLOWS {
        flow: i64, "", "The flow's index in the run (0..), in the order the scenario's `[[flows]]` expand.";
        group: i64, "", "Index of the `[[flows]]` entry it was expanded from.";
        label: String, "", "The entry's label (its algorithm when none is given).";
        cc: String, "", "Congestion control algorithm.";
        rtt_ms: f64, "ms", "Base RTT: propagation delay, forward plus reverse, at the start.";
        start_s: f64, "s", "When the flow started (its SYN).";
        end_s: f64, "s", "When it completed (sized flows), else the end of the run.";
        size_bytes: i64, "bytes", "Bytes to send; -1 for a bulk flow.";
        bytes: i64, "bytes", "Payload delivered in order to the receiving application by the end.";
        bytes_acked: i64, "bytes", "Payload the sender saw cumulatively acknowledged.";
        goodput_mbps: f64, "Mbit/s", "`bytes` as bits over the flow's active time (`end_s - start_s`).";
        segs_sent: i64, "segments", "Data segments sent, retransmissions included.";
        segs_retrans: i64, "segments", "Data segments retransmitted.";
        retrans_rate: f64, "fraction", "`segs_retrans / segs_sent`.";
        srtt_mean_ms: f64, "ms", "Mean smoothed RTT over every ACK (Linux backend: the sampled srtt weighted by bytes delivered per interval); NaN for a flow that delivered nothing (no data ACKed, so no smoothed RTT).";
        min_rtt_ms: f64, "ms", "Smallest RTT sample, the handshake's included; NaN for a flow without one (it delivered nothing and its handshake did not complete).";
        fct_s: f64, "s", "Flow completion time of a sized flow, from its SYN to the ACK of its last byte; NaN for a bulk flow or one not done.";
        drops: i64, "segments", "Data segments lost: dropped by a link (queue overflow, AQM or policer) or by random loss on the data path.";
        drops_overflow: i64, "segments", "Dropped by the bottleneck because its queue was full.";
        drops_aqm: i64, "segments", "Dropped by the queue discipline's AQM.";
        drops_policer: i64, "segments", "Dropped by a link's policer (exceeding its rate and burst).";
        drops_random: i64, "segments", "Lost on the data path by the scenario's random loss.";
        acks_lost: i64, "packets", "ACKs lost on the ACK path: by the scenario's random loss, or dropped by a link of the flow's reverse route (two-way traffic).";
        marks: i64, "segments", "Segments the bottleneck marked CE (ECN).";
        rto_count: i64, "", "Retransmission timeouts.";
        segs_in_network: i64, "segments", "Data segments still on the data path, in a link's queue or on its delay line at the end (conservation: `segs_sent = segs_received + drops + segs_in_network`). Null on the Linux backend.";
        segs_received: i64, "segments", "Data segments that reached the receiver. Null on the Linux backend.";
        host: i64, "", "The sender host the flow belongs to (CAKE's per-host isolation).";
        route: String, "", "The links it crosses, in order, joined by `>` (`bottleneck` in the dumbbell).";
        ack_interval_mean_us: f64, "us", "Mean gap between ACK arrivals at the sender (Linux backend: between the ACK frames the bottleneck released to it).";
        ack_interval_cv: f64, "", "Standard deviation of those gaps over their mean: about 1 or less for a steady ACK clock, larger when ACKs arrive bunched (ACK compression: two-way traffic, aggregation).";
    }
}

result_table! {
    "samples", "one flow over one sample interval (only flows active in it)", SampleRow, SampleCols, SAMPLES {
        time_s: f64, "s", "End of the interval.";
        flow: i64, "", "The flow's index.";
        group: i64, "", "Its `[[flows]]` entry.";
        goodput_mbps: f64, "Mbit/s", "Payload delivered in order to the receiver during the interval, as a rate. It can exceed the link's rate: a retransmission that fills a hole releases all the out-of-order data the receiver holds behind it at once (BBRv1 at 300 ms RTT under 1% loss: 10.2 times a 10 Mbit/s link in one 100 ms interval).";
        delivered_bytes: i64, "bytes", "Payload delivered in order since the flow started.";
        cwnd_pkts: f64, "packets", "Congestion window at the end of the interval.";
        inflight_pkts: f64, "packets", "Segments in flight (sent, not acknowledged, not marked lost).";
        srtt_ms: f64, "ms", "Smoothed RTT.";
        min_rtt_ms: f64, "ms", "Smallest RTT sample so far.";
        pacing_rate_mbps: f64, "Mbit/s", "Pacing rate; NaN when the flow is not paced.";
        delivery_rate_mbps: f64, "Mbit/s", "The latest delivery-rate sample (Linux `tcp_rate.c`).";
        retrans_segs: i64, "segments", "Retransmissions so far.";
        queue_backlog_bytes: i64, "bytes", "The flow's bytes in the bottleneck queue (in a network, in all its links' queues).";
    }
}

result_table! {
    "queue", "one link over one sample interval", QueueRow, QueueCols, QUEUE {
        time_s: f64, "s", "End of the interval.";
        link: String, "", "The link (`bottleneck` in the dumbbell; a row per link and interval in a network).";
        backlog_bytes: i64, "bytes", "Bytes in the link's queue (qdisc and the packet waiting for tokens).";
        backlog_pkts: i64, "packets", "Packets in the bottleneck.";
        sojourn_mean_ms: f64, "ms", "Mean sojourn time of the packets that left during the interval; NaN if none did.";
        sojourn_max_ms: f64, "ms", "Largest of those sojourn times.";
        drops: i64, "packets", "Packets dropped since the start (cumulative; handshake packets included).";
        drops_overflow: i64, "segments", "Data segments dropped because the queue was full, since the start.";
        drops_aqm: i64, "segments", "Data segments the AQM dropped, since the start.";
        drops_policer: i64, "segments", "Data segments the link's policer dropped, since the start.";
        marks: i64, "segments", "Segments marked CE, since the start.";
        wire_utilization: f64, "fraction", "Bytes that left during the interval over the interval's capacity (rate integrated over the schedule).";
    }
}

result_table! {
    "transitions", "one change of a flow's congestion-control state", TransitionRow, TransitionCols, TRANSITIONS {
        time_s: f64, "s", "When the state changed (Linux backend: at sampling resolution).";
        flow: i64, "", "The flow's index.";
        from: String, "", "The state left (\"\" at the start).";
        to: String, "", "The state entered (SLOW_START, CONG_AVOID, RECOVERY, LOSS, CWR; BBR's modes).";
    }
}

result_table! {
    "links", "one link over the run (the dumbbell has one, `bottleneck`)", LinkRow, LinkCols, LINKS {
        link: String, "", "The link's name.";
        rate_mbps: f64, "Mbit/s", "Its rate at the start.";
        delay_ms: f64, "ms", "Its propagation delay after the queue (0 in the dumbbell, whose delays are the flows' own).";
        flows: i64, "", "Flows that started and cross it.";
        utilization: f64, "fraction", "Payload delivered in order by the flows crossing it, as bits, over its capacity (rate integrated over its schedule plus its starting bucket).";
        wire_utilization: f64, "fraction", "Bytes that left its queue over the same capacity.";
        qdelay_mean_ms: f64, "ms", "Mean sojourn time in its queue, over every packet that left it.";
        qdelay_p50_ms: f64, "ms", "Median of the same sojourn times.";
        qdelay_p95_ms: f64, "ms", "95th percentile of the same sojourn times.";
        qdelay_p99_ms: f64, "ms", "99th percentile of the same sojourn times.";
        drops: i64, "packets", "Packets it dropped (queue overflow, AQM and policer).";
        packets: i64, "packets", "Packets that left its queue.";
        max_backlog_bytes: i64, "bytes", "Largest backlog of its queue.";
        max_backlog_pkts: i64, "packets", "Largest backlog of its queue, in packets.";
    }
}

/// Every result table, in the order a run returns them.
pub const TABLES: [TableDef; 6] = [SUMMARY, FLOWS, SAMPLES, QUEUE, TRANSITIONS, LINKS];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_table_matches_its_definition_and_a_renamed_one_does_not() {
        let mut c = TransitionCols::default();
        c.push(TransitionRow {
            time_s: 1.5,
            flow: 2,
            from: String::new(),
            to: "SLOW_START".into(),
        });
        let t = c.into_table();
        assert_eq!(t.rows(), 1);
        TRANSITIONS.check(&t).unwrap();
        let mut bad = t.clone();
        bad.columns[3].name = "into".into();
        assert!(TRANSITIONS.check(&bad).unwrap_err().contains("into"));
        assert!(FLOWS.check(&t).is_err());
    }

    #[test]
    fn csv_lines_follow_the_header_and_quote_what_needs_it() {
        let r = TransitionRow {
            time_s: 0.25,
            flow: 1,
            from: "a,b".into(),
            to: "say \"x\"".into(),
        };
        assert_eq!(TRANSITIONS.csv_header(), "time_s,flow,from,to");
        assert_eq!(r.csv_line(), "0.25,1,\"a,b\",\"say \"\"x\"\"\"");
        let q = QueueRow {
            sojourn_mean_ms: f64::NAN,
            ..Default::default()
        };
        assert_eq!(q.csv_line().split(',').count(), QUEUE.columns.len());
        assert!(q.csv_line().contains("NaN"));
    }

    #[test]
    fn names_are_unique_and_every_column_is_described() {
        for t in TABLES {
            let mut names: Vec<_> = t.columns.iter().map(|c| c.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), t.columns.len(), "{}", t.name);
            assert!(t.columns.iter().all(|c| c.doc.ends_with('.')), "{}", t.name);
        }
    }
}
