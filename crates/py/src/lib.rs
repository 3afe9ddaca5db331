//! `ccarena._core`: the thin PyO3 layer over `ccarena-sim`.
//!
//! Strings in, strings and bytes out: scenarios cross as JSON; results stay
//! in Rust (`Run`) until written as Parquet or handed over as Arrow IPC. Python owns the public API
//! (`python/ccarena`); the stub `python/ccarena/_core.pyi` types this module.

pub mod arrow;
pub mod controller;
pub mod spill;

use ccarena_sim::cc::CcConfig;
use ccarena_sim::metrics::collect;
use ccarena_sim::metrics::schema::TABLES;
use ccarena_sim::metrics::stream::{Sink, BATCH_ROWS};
use ccarena_sim::metrics::table::{ColumnData, Table};
use ccarena_sim::qdisc::QdiscConfig;
use ccarena_sim::scenario::{self, Scenario};
use ccarena_sim::world;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

pyo3::create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario field is invalid. Attributes: `path` (the field, e.g. \"flows[1].rtt\") and \
     `message` (what is wrong and what is allowed); str() is \"<path>: <message>\"."
);

/// The one Rust error type that crosses into Python, mapped to `ScenarioError`.
fn scenario_error(py: Python<'_>, e: &scenario::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of
    // memory exhaustion; if it does, that error is the one to report.
    if let Err(set_err) = value
        .setattr("path", e.path.as_str())
        .and_then(|_| value.setattr("message", e.message.as_str()))
    {
        return set_err;
    }
    err
}

/// Validate and normalize a scenario given as JSON (the TOML file as
/// `tomllib` loads it); returns the normalized scenario as JSON and its
/// warnings, `(path, message)` pairs (`scenario::ScenarioWarning`).
#[pyfunction]
fn normalize(py: Python<'_>, input_json: &str) -> PyResult<(String, Vec<(String, String)>)> {
    scenario::normalize_json_with_warnings(input_json)
        .map(|(s, warnings)| {
            let pairs = warnings.into_iter().map(|w| (w.path, w.message));
            (s.to_json(), pairs.collect())
        })
        .map_err(|e| scenario_error(py, &e))
}

/// Events between two calls of `progress` (and two checks for Ctrl-C):
/// about a tenth of a second of simulation.
const PROGRESS_EVENTS: u64 = 1 << 20;

/// Simulate a normalized scenario (the output of `normalize`).
///
/// Returns a `Run` holding the tables ("summary", "flows", "samples",
/// "queue", "transitions", "links"); its `stats` are {"events",
/// "bottleneck_packets", "sim_time_ns"}; its `captures` list the
/// `[capture]` files, each {"name", "frames", "skipped", "pcapng"}. The GIL is released while the
/// simulation runs; every 2^20 events it is taken back to check for
/// signals (Ctrl-C stops the run with KeyboardInterrupt, nothing produced)
/// and to call `progress(sim_time_ns)` if given (an exception it raises
/// stops the run the same way). Neither changes the simulation's bits.
///
/// With `spill` (a directory that must not exist yet), the tables that
/// grow with simulated time ("samples", "queue", "transitions") leave the
/// core in batches while the run goes on and wait there on disk
/// (`spill.rs`), so memory does not grow with the run's duration; the
/// directory is the `Run`'s and is removed with it (or at once if the run
/// stops). The tables written are the same either way.
#[pyfunction]
#[pyo3(signature = (normalized_json, progress=None, spill=None))]
fn run(
    py: Python<'_>,
    normalized_json: &str,
    progress: Option<Py<PyAny>>,
    spill: Option<std::path::PathBuf>,
) -> PyResult<Run> {
    let scenario = Scenario::from_json(normalized_json).map_err(|e| scenario_error(py, &e))?;
    let spill = match spill {
        Some(dir) => Some(std::sync::Arc::new(std::sync::Mutex::new(
            spill::Spill::create(&dir).map_err(|e| {
                PyRuntimeError::new_err(format!("spill directory {}: {e}", dir.display()))
            })?,
        ))),
        None => None,
    };
    let mut stopped: Option<PyErr> = None;
    controller::take_error();
    // A Python controller's exception stops the run at the next check.
    let every = if scenario.flows.iter().any(|f| f.cc.name() == "python") {
        PROGRESS_EVENTS >> 10
    } else {
        PROGRESS_EVENTS
    };
    let results = py.detach(|| {
        let sink = spill.as_ref().map(|s| {
            let sink: Box<dyn Sink> = Box::new(spill::SpillSink(s.clone()));
            (sink, BATCH_ROWS)
        });
        world::run_streaming(
            &scenario,
            every,
            |now| {
                Python::attach(|py| {
                    let step = py.check_signals().and_then(|()| match &progress {
                        Some(f) => f.call1(py, (now.0,)).map(|_| ()),
                        None => Ok(()),
                    });
                    match step {
                        Ok(()) => !controller::failed(),
                        Err(e) => {
                            stopped = Some(e);
                            false
                        }
                    }
                })
            },
            sink,
        )
    });
    if let Some(e) = controller::take_error() {
        return Err(e);
    }
    let Some(results) = results else {
        return Err(stopped.expect("a run stops only on an error"));
    };
    let spill = spill.map(|s| {
        std::sync::Arc::try_unwrap(s)
            .ok()
            .expect("the run is over: the sink is gone")
            .into_inner()
            .expect("spill lock")
    });
    if let Some(e) = spill.as_ref().and_then(|s| s.error()) {
        return Err(PyRuntimeError::new_err(format!(
            "writing the run's tables failed: {e}"
        )));
    }
    Run::new(py, results, spill)
}

/// A finished run's results, held in Rust until Python writes or reads
/// them: `write(dir)` writes every table as `<dir>/<name>.parquet` (the GIL
/// released), `parquet(name)` / `ipc(name)` give one table's bytes, and
/// `rows(name, limit)` its first rows as dicts (what a terminal prints,
/// without loading pyarrow or pandas). `stats` and `captures` as `run`
/// describes them.
#[pyclass(module = "ccarena._core", frozen)]
pub struct Run {
    /// The tables held in memory.
    tables: Vec<Table>,
    /// The tables waiting on disk (`run` with `spill`), until `close`.
    spill: std::sync::Mutex<Option<spill::Spill>>,
    #[pyo3(get)]
    stats: Py<PyDict>,
    #[pyo3(get)]
    captures: Py<PyList>,
}

impl Run {
    fn new(py: Python<'_>, results: world::Results, spill: Option<spill::Spill>) -> PyResult<Run> {
        let st = PyDict::new(py);
        st.set_item("events", results.stats.events)?;
        st.set_item("bottleneck_packets", results.stats.bottleneck_packets)?;
        st.set_item("sim_time_ns", results.stats.sim_time_ns)?;
        let caps = PyList::empty(py);
        for c in results.captures {
            let d = PyDict::new(py);
            d.set_item("name", c.name)?;
            d.set_item("frames", c.frames)?;
            d.set_item("skipped", c.skipped)?;
            d.set_item("pcapng", PyBytes::new(py, &c.bytes))?;
            caps.append(d)?;
        }
        Ok(Run {
            tables: results.tables,
            spill: std::sync::Mutex::new(spill),
            stats: st.unbind(),
            captures: caps.unbind(),
        })
    }

    fn table(&self, name: &str) -> PyResult<&Table> {
        self.tables
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| PyValueError::new_err(format!("no table {name:?}")))
    }
}

impl Run {
    fn holds(&self, name: &str) -> bool {
        self.tables.iter().any(|t| t.name == name)
    }

    fn spill(&self) -> std::sync::MutexGuard<'_, Option<spill::Spill>> {
        self.spill.lock().expect("spill lock")
    }

    fn spilled(&self, name: &str) -> bool {
        self.spill().as_ref().is_some_and(|s| s.holds(name))
    }

    /// Table `name` as a Parquet file, from memory or from the spill.
    fn write_table<W: std::io::Write + Send>(&self, name: &str, out: W) -> PyResult<()> {
        match self.spill().as_ref() {
            Some(s) if s.holds(name) => s.write_parquet(name, out).map_err(parquet_error),
            _ => arrow::write_parquet(self.table(name)?, out).map_err(parquet_error),
        }
    }
}

fn parquet_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(format!("writing results as Parquet failed: {e}"))
}

#[pymethods]
impl Run {
    /// The tables' names, in the schema's order.
    fn names(&self) -> Vec<String> {
        TABLES
            .iter()
            .map(|d| d.name)
            .filter(|&n| self.holds(n) || self.spilled(n))
            .map(String::from)
            .collect()
    }

    /// The tables held in memory (`rows` reads only these); the others
    /// wait on disk until written.
    fn held(&self) -> Vec<String> {
        self.tables.iter().map(|t| t.name.clone()).collect()
    }

    /// Remove the tables waiting on disk (once written: `names` then lists
    /// only the tables held in memory). Dropping the run does the same.
    fn close(&self) {
        self.spill().take();
    }

    /// Rows of table `name`.
    fn num_rows(&self, name: &str) -> PyResult<usize> {
        match self.spill().as_ref() {
            Some(s) if s.holds(name) => Ok(s.rows(name)),
            _ => Ok(self.table(name)?.rows()),
        }
    }

    /// Write every table as `<directory>/<name>.parquet`.
    fn write(&self, py: Python<'_>, directory: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| {
            for name in self.names() {
                let path = directory.join(format!("{name}.parquet"));
                let file = std::fs::File::create(&path)
                    .map_err(|e| parquet_error(format!("{}: {e}", path.display())))?;
                self.write_table(&name, std::io::BufWriter::new(file))?;
            }
            Ok(())
        })
    }

    /// Table `name` as the bytes of a Parquet file (what `write` writes).
    fn parquet<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let mut bytes = Vec::new();
        py.detach(|| self.write_table(name, &mut bytes))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Table `name` as an Arrow IPC stream (`pyarrow.ipc.open_stream`).
    fn ipc<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| {
            let encoded = match self.spill().as_ref() {
                Some(s) if s.holds(name) => s.ipc_stream(name),
                _ => arrow::to_ipc_stream(self.table(name)?),
            };
            encoded.map_err(|e| {
                PyRuntimeError::new_err(format!("encoding results as Arrow failed: {e}"))
            })
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The first `limit` rows of table `name` (all with None), each a dict
    /// of column: value (float, int or str).
    #[pyo3(signature = (name, limit=None))]
    fn rows<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let t = self.table(name)?;
        let n = limit.map_or(t.rows(), |l| l.min(t.rows()));
        let out = PyList::empty(py);
        for i in 0..n {
            let d = PyDict::new(py);
            for c in &t.columns {
                match &c.data {
                    ColumnData::F64(v) => d.set_item(c.name.as_str(), v[i])?,
                    ColumnData::I64(v) => d.set_item(c.name.as_str(), v[i])?,
                    ColumnData::Str(v) => d.set_item(c.name.as_str(), v[i].as_str())?,
                }
            }
            out.append(d)?;
        }
        Ok(out)
    }
}

/// A simulation stepped from Python (`ccarena.gym`): `advance(until_ns)`
/// runs the events due by then and says whether the scenario goes on;
/// `results()` gives `run`'s tables once it has ended. Stepping does not
/// change the bits (`World::advance`).
#[pyclass(unsendable, module = "ccarena._core")]
pub struct Simulation {
    // Dropped before `scenario`, which it borrows (see `Drop`).
    world: Option<world::World<'static>>,
    scenario: *mut Scenario,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, normalized_json: &str) -> PyResult<Simulation> {
        let sc = Scenario::from_json(normalized_json).map_err(|e| scenario_error(py, &e))?;
        if sc.capture.is_some() {
            return Err(PyValueError::new_err(
                "a stepped simulation does not write captures: remove [capture]",
            ));
        }
        let scenario = Box::into_raw(Box::new(sc));
        // SAFETY: the scenario lives until `drop`, which drops the world first.
        let sc_ref: &'static Scenario = unsafe { &*scenario };
        Ok(Simulation {
            world: Some(world::World::new(sc_ref)),
            scenario,
        })
    }

    /// Run to simulated time `until_ns`; False once the scenario has ended.
    fn advance(&mut self, until_ns: u64) -> PyResult<bool> {
        let w = self
            .world
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the simulation's results were taken"))?;
        controller::take_error();
        let more = w.advance(ccarena_sim::units::Time(until_ns));
        if let Some(e) = controller::take_error() {
            return Err(e);
        }
        Ok(more)
    }

    /// `run`'s `Run`, once the scenario has ended.
    fn results(&mut self, py: Python<'_>) -> PyResult<Run> {
        let w = self
            .world
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the simulation's results were taken"))?;
        Run::new(py, w.into_results(), None)
    }
}

impl Drop for Simulation {
    fn drop(&mut self) {
        self.world = None;
        // SAFETY: allocated by `new` with Box::into_raw; nothing borrows it now.
        drop(unsafe { Box::from_raw(self.scenario) });
    }
}

/// A classic pcap file (tcpdump's, either byte order, micro- or
/// nanosecond timestamps) of Ethernet frames as a pcapng file with one
/// interface named `interface`, its times less `origin_ns` (never below
/// 0). Returns `(pcapng bytes, frames)`.
#[pyfunction]
fn pcap_to_pcapng<'py>(
    py: Python<'py>,
    pcap: &[u8],
    interface: &str,
    application: &str,
    comment: &str,
    origin_ns: u64,
) -> PyResult<(Bound<'py, PyBytes>, usize)> {
    ccarena_sim::capture::pcapng::pcap_to_pcapng(pcap, application, comment, interface, origin_ns)
        .map(|(b, n)| (PyBytes::new(py, &b), n))
        .map_err(PyValueError::new_err)
}

/// Bits the links of a normalized scenario can carry in `[from_ns,
/// to_ns)`: each link's rate integrated over its schedule, or its trace's
/// opportunities (`BottleneckSpec::capacity_bits`, the one definition both
/// backends' utilizations divide by); summed over the links, or link
/// `link`'s alone.
#[pyfunction]
#[pyo3(signature = (normalized_json, from_ns, to_ns, link=None))]
fn capacity_bits(
    py: Python<'_>,
    normalized_json: &str,
    from_ns: u64,
    to_ns: u64,
    link: Option<usize>,
) -> PyResult<f64> {
    let scenario = Scenario::from_json(normalized_json).map_err(|e| scenario_error(py, &e))?;
    let links = scenario.queue_links();
    let chosen = match link {
        None => &links[..],
        Some(l) if l < links.len() => &links[l..=l],
        Some(l) => return Err(PyValueError::new_err(format!("no link {l}"))),
    };
    Ok(chosen
        .iter()
        .map(|l| l.queue.capacity_bits(from_ns, to_ns))
        .sum())
}

/// What the links of a normalized scenario can carry over the whole run, in
/// bits (`BottleneckSpec::run_capacity_bits`: the scheduled rate plus the
/// token bucket it starts with, or a trace's opportunities), summed over
/// the links (`Scenario::run_capacity_bits`) or link `link`'s alone.
#[pyfunction]
#[pyo3(signature = (normalized_json, link=None))]
fn run_capacity_bits(py: Python<'_>, normalized_json: &str, link: Option<usize>) -> PyResult<f64> {
    let scenario = Scenario::from_json(normalized_json).map_err(|e| scenario_error(py, &e))?;
    match link {
        None => Ok(scenario.run_capacity_bits()),
        Some(l) => scenario
            .queue_links()
            .get(l)
            .map(|x| x.queue.run_capacity_bits(scenario.duration.0))
            .ok_or_else(|| PyValueError::new_err(format!("no link {l}"))),
    }
}

/// The estimated cost of running a normalized scenario
/// (`Scenario::cost`): {"bottleneck_packets", "line_packets", "events",
/// "sample_rows", "queue_rows", "packets_held", "table_bytes"}.
#[pyfunction]
fn cost<'py>(py: Python<'py>, normalized_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let scenario = Scenario::from_json(normalized_json).map_err(|e| scenario_error(py, &e))?;
    let c = scenario.cost();
    let d = PyDict::new(py);
    d.set_item("bottleneck_packets", c.bottleneck_packets)?;
    d.set_item("line_packets", c.line_packets)?;
    d.set_item("events", c.events)?;
    d.set_item("sample_rows", c.sample_rows)?;
    d.set_item("queue_rows", c.queue_rows)?;
    d.set_item("packets_held", c.packets_held)?;
    d.set_item("table_bytes", c.table_bytes)?;
    Ok(d)
}

/// The version of the simulator crate (the package version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The git commit of the source tree this extension was built from
/// ("unknown" outside a checkout; a trailing "+": with uncommitted changes).
#[pyfunction]
fn build_commit() -> &'static str {
    env!("CCARENA_BUILD_COMMIT")
}

/// Build every later world with a deliberately wrong model (`"none"`: the
/// model), to prove the conformance guard fails on it (tests/test_mutants.py).
/// Not part of the user surface; the process's own simulations only (a
/// sweep's worker processes do not inherit it).
#[pyfunction]
fn _set_mutant(name: &str) -> PyResult<()> {
    let m = ccarena_sim::mutant::Mutant::parse(name)
        .ok_or_else(|| PyValueError::new_err(format!("no mutant {name:?}")))?;
    ccarena_sim::mutant::set(m);
    Ok(())
}

/// The names `_set_mutant` takes, but "none".
#[pyfunction]
fn _mutants() -> Vec<&'static str> {
    ccarena_sim::mutant::Mutant::ALL
        .iter()
        .map(|m| m.name())
        .collect()
}

/// Every name accepted in a flow's `cc = "..."`.
#[pyfunction]
fn cc_names() -> Vec<&'static str> {
    CcConfig::NAMES.to_vec()
}

/// Every name accepted in `bottleneck.qdisc`.
#[pyfunction]
fn qdisc_names() -> Vec<&'static str> {
    QdiscConfig::NAMES.to_vec()
}

/// Where an algorithm's rules come from ("" for an unknown name).
#[pyfunction]
fn cc_reference(name: &str) -> &'static str {
    CcConfig::reference(name)
}

/// Where a queue discipline's rules come from ("" for an unknown name).
#[pyfunction]
fn qdisc_reference(name: &str) -> &'static str {
    QdiscConfig::reference(name)
}

/// The percentiles a `[hosts] latency` table holds its values at
/// (`net::host::PCT`, the one list).
#[pyfunction]
fn host_percentiles() -> Vec<f64> {
    ccarena_sim::net::host::PCT.to_vec()
}

/// The turnaround table the core draws from by default (`[hosts] latency
/// = "measured"`), us at `host_percentiles`: (sender, receiver).
#[pyfunction]
fn default_host_table() -> (Vec<f64>, Vec<f64>) {
    let t = ccarena_sim::net::host::Turnarounds::MEASURED;
    let us = |v: [u64; 18]| v.iter().map(|&ns| ns as f64 / 1e3).collect();
    (us(t.sender_ns), us(t.receiver_ns))
}

/// (column, type, unit, definition).
type ColumnSchema = (&'static str, &'static str, &'static str, &'static str);
/// (table, what a row is, its columns).
type TableSchema = (&'static str, &'static str, Vec<ColumnSchema>);

/// The result tables' fixed columns (`metrics::schema`, the one
/// definition both backends fill): a list of (table, row, [(column, type,
/// unit, definition), ...]) in the order a run returns the tables; types are
/// "int64", "float64" or "string".
#[pyfunction]
fn schema() -> Vec<TableSchema> {
    TABLES
        .iter()
        .map(|t| {
            let cols = t
                .columns
                .iter()
                .map(|c| (c.name, c.ty.name(), c.unit, c.doc))
                .collect();
            (t.name, t.row, cols)
        })
        .collect()
}

/// Jain's fairness index (RFC 5166) over the finite values; NaN when none
/// is finite or all are zero (`metrics::collect::jain`, the one definition).
#[pyfunction]
fn jain(values: Vec<f64>) -> f64 {
    collect::jain(&values)
}

/// The `ccarena-bottleneck` console script (the Linux backend's user-space
/// bottleneck, `ccarena_emu::cli`): its arguments are `sys.argv[1:]`; returns
/// the exit status. The bottleneck runs without the GIL: the process is its
/// own.
#[pyfunction]
fn bottleneck_cli(py: Python<'_>) -> PyResult<u8> {
    let argv: Vec<String> = py.import("sys")?.getattr("argv")?.extract()?;
    let args: Vec<String> = argv.into_iter().skip(1).collect();
    Ok(py.detach(move || ccarena_emu::cli::main(&args)))
}

/// glibc serves an allocation of 128 KiB or more from its own mapping,
/// returned when freed, but after such a free it raises that threshold to
/// the freed size: a run's batches of samples (`spill.rs`; columns of about
/// 512 KiB, allocated and freed once a batch) then come from the heap,
/// which keeps their memory and spreads, so a run's resident memory grew
/// with its duration (fig16's point, 1,500 s: 34 to 70 MiB while running,
/// 27 after `malloc_trim`). Fixing the threshold at its default keeps the
/// columns in mappings of their own. Other C libraries: nothing to do.
fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; 128 KiB is glibc's
    // own default for it.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    fix_mmap_threshold();
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("BATCH_ROWS", BATCH_ROWS)?;
    m.add_class::<Run>()?;
    m.add_class::<Simulation>()?;
    m.add_class::<controller::AckSample>()?;
    m.add_class::<controller::ConnView>()?;
    controller::register();
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(pcap_to_pcapng, m)?)?;
    m.add_function(wrap_pyfunction!(bottleneck_cli, m)?)?;
    m.add_function(wrap_pyfunction!(capacity_bits, m)?)?;
    m.add_function(wrap_pyfunction!(run_capacity_bits, m)?)?;
    m.add_function(wrap_pyfunction!(cost, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(build_commit, m)?)?;
    m.add_function(wrap_pyfunction!(_set_mutant, m)?)?;
    m.add_function(wrap_pyfunction!(_mutants, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(qdisc_names, m)?)?;
    m.add_function(wrap_pyfunction!(cc_reference, m)?)?;
    m.add_function(wrap_pyfunction!(qdisc_reference, m)?)?;
    m.add_function(wrap_pyfunction!(host_percentiles, m)?)?;
    m.add_function(wrap_pyfunction!(default_host_table, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(jain, m)?)?;
    Ok(())
}
