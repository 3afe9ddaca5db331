//! Python controllers (`cc = "python"`): a `ccarena.Controller` subclass
//! that the simulator calls on every ACK (`on_ack(sample, conn)`), on a
//! loss episode (`on_loss(kind, conn)`) and on an ECN echo (`on_ecn`),
//! reading back its `cwnd` (packets) and `pacing_rate` (bytes/s, None =
//! unpaced) after each call. Its `state()` dict becomes sample columns.
//!
//! An exception in a controller is kept (the first of the run, on the
//! thread running it); the controller stops calling Python, and the run
//! raises it when it stops (`take_error`).

use ccarena_sim::cc::external::{self, PythonConfig};
use ccarena_sim::cc::{AckOutcome, CaState, CcInit, CcState, CongestionControl, Conn, RateSample};
use ccarena_sim::units::{Rate, Time};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;

thread_local! {
    static ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// The first exception a controller raised on this thread since the last call.
pub fn take_error() -> Option<PyErr> {
    ERROR.with(|e| e.borrow_mut().take())
}

/// A controller raised on this thread (the run stops at its next check).
pub fn failed() -> bool {
    ERROR.with(|e| e.borrow().is_some())
}

/// Keep `e`, raised by flow `flow`'s `hook`, as a `ccarena.errors.ControllerError`
/// naming both, with the original as its cause.
fn keep_from(py: Python<'_>, flow: u32, hook: &str, e: PyErr) {
    let msg = format!("flow {flow}: the controller's {hook} raised {e}");
    let wrapped = py
        .import("ccarena.errors")
        .and_then(|m| m.getattr("ControllerError"))
        .and_then(|cls| cls.call1((msg,)))
        .map(|v| {
            let w = PyErr::from_value(v);
            w.set_cause(py, Some(e.clone_ref(py)));
            w
        })
        .unwrap_or(e);
    keep(wrapped);
}

fn keep(e: PyErr) {
    ERROR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
        }
    });
}

/// State-column names live for the process (a column name is `&'static str`);
/// each distinct name is leaked once.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashMap<String, &'static str>>> = Mutex::new(None);
    let mut g = NAMES.lock().expect("intern lock");
    let m = g.get_or_insert_with(HashMap::new);
    if let Some(s) = m.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_string().into_boxed_str());
    m.insert(name.to_string(), s);
    s
}

fn state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Disorder => "disorder",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

fn secs(t: Time) -> f64 {
    t.0 as f64 / 1e9
}

/// What one ACK told the sender (`sample` of `on_ack`).
#[pyclass(frozen, module = "ccarena._core", name = "AckSample")]
pub struct AckSample {
    /// Simulated time, s.
    #[pyo3(get)]
    now: f64,
    /// Packets newly ACKed or SACKed.
    #[pyo3(get)]
    acked: u32,
    /// Packets newly marked lost.
    #[pyo3(get)]
    lost: u32,
    /// RTT of the most recently sent newly ACKed packet, s (None: no sample).
    #[pyo3(get)]
    rtt: Option<f64>,
    /// Delivery rate of this ACK's sample, bytes/s (None: invalid sample).
    #[pyo3(get)]
    delivery_rate: Option<f64>,
    /// The sample was taken while the sender was application-limited.
    #[pyo3(get)]
    app_limited: bool,
    /// The ACK carried ECN-Echo.
    #[pyo3(get)]
    ece: bool,
    /// Packets in flight before this ACK.
    #[pyo3(get)]
    prior_in_flight: u32,
}

/// The connection as the controller may read it (`conn`).
#[pyclass(frozen, module = "ccarena._core", name = "ConnView")]
pub struct ConnView {
    #[pyo3(get)]
    flow: u32,
    #[pyo3(get)]
    now: f64,
    /// Bytes per segment.
    #[pyo3(get)]
    mss: u32,
    #[pyo3(get)]
    in_flight: u32,
    #[pyo3(get)]
    delivered: u64,
    #[pyo3(get)]
    lost: u64,
    #[pyo3(get)]
    delivered_ce: u64,
    /// Smoothed RTT and windowed minimum RTT, s (None before a sample).
    #[pyo3(get)]
    srtt: Option<f64>,
    #[pyo3(get)]
    min_rtt: Option<f64>,
    /// "open" | "disorder" | "cwr" | "recovery" | "loss".
    #[pyo3(get)]
    ca_state: &'static str,
    #[pyo3(get)]
    cwnd_limited: bool,
    #[pyo3(get)]
    app_limited: bool,
}

impl ConnView {
    fn new(flow: u32, now: Time, c: &Conn) -> ConnView {
        ConnView {
            flow,
            now: secs(now),
            mss: c.mss,
            in_flight: c.in_flight,
            delivered: c.delivered,
            lost: c.lost,
            delivered_ce: c.delivered_ce,
            srtt: c.srtt.map(|d| d.0 as f64 / 1e9),
            min_rtt: c.min_rtt.map(|d| d.0 as f64 / 1e9),
            ca_state: state_name(c.ca_state),
            cwnd_limited: c.is_cwnd_limited,
            app_limited: c.app_limited,
        }
    }
}

/// One flow's Python controller behind the `CongestionControl` trait.
pub struct PyController {
    obj: Py<PyAny>,
    flow: u32,
    mss: u32,
    cwnd: u32,
    pacing: Rate,
    phase: &'static str,
}

impl PyController {
    /// Read back `cwnd`, `pacing_rate` and `phase` after a call.
    fn read_control(&mut self, py: Python<'_>) -> PyResult<()> {
        let o = self.obj.bind(py);
        let cwnd: f64 = o.getattr("cwnd")?.extract()?;
        if !cwnd.is_finite() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "flow {}: cwnd = {cwnd}: expected a finite number of packets",
                self.flow
            )));
        }
        self.cwnd = cwnd.clamp(1.0, u32::MAX as f64) as u32;
        let p = o.getattr("pacing_rate")?;
        self.pacing = if p.is_none() {
            Rate::INF
        } else {
            let bps: f64 = p.extract()?;
            if !(bps > 0.0 && bps.is_finite()) {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "flow {}: pacing_rate = {bps}: expected bytes/s > 0, or None",
                    self.flow
                )));
            }
            Rate::from_bytes_per_sec(bps.min(u64::MAX as f64 / 8.0) as u64)
        };
        let ph = o.getattr("phase")?;
        self.phase = if ph.is_none() {
            ""
        } else {
            intern(&ph.extract::<String>()?)
        };
        Ok(())
    }

    fn call(&mut self, hook: &str, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()>) {
        if failed() {
            return;
        }
        Python::attach(|py| {
            let o = self.obj.clone_ref(py);
            let r = f(py, o.bind(py)).and_then(|()| self.read_control(py));
            if let Err(e) = r {
                keep_from(py, self.flow, hook, e);
            }
        });
    }
}

impl CongestionControl for PyController {
    fn on_ack(&mut self, now: Time, rs: &RateSample, conn: &Conn) -> AckOutcome {
        let flow = self.flow;
        let mss = self.mss;
        self.call("on_ack", |py, o| {
            let rate = (rs.is_valid() && rs.delivered > 0)
                .then(|| rs.delivered as f64 * mss as f64 * 1e6 / rs.interval_us as f64);
            let s = AckSample {
                now: secs(now),
                acked: rs.acked_sacked,
                lost: rs.losses,
                rtt: (rs.rtt_us >= 0).then(|| rs.rtt_us as f64 / 1e6),
                delivery_rate: rate,
                app_limited: rs.is_app_limited,
                ece: rs.is_ece,
                prior_in_flight: rs.prior_in_flight,
            };
            let s = Py::new(py, s)?;
            let c = Py::new(py, ConnView::new(flow, now, conn))?;
            o.call_method1("on_ack", (s.clone_ref(py), c.clone_ref(py)))?;
            if rs.is_ece {
                o.call_method1("on_ecn", (s, c))?;
            }
            Ok(())
        });
        AckOutcome::default()
    }

    fn on_state_change(&mut self, now: Time, from: CaState, to: CaState, conn: &Conn) {
        let kind = match to {
            CaState::Recovery if from < CaState::Recovery => "recovery",
            CaState::Loss if from != CaState::Loss => "rto",
            _ => return,
        };
        let flow = self.flow;
        self.call("on_loss", |py, o| {
            let c = Py::new(py, ConnView::new(flow, now, conn))?;
            o.call_method1("on_loss", (kind, c))?;
            Ok(())
        });
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Rate {
        self.pacing
    }

    fn wants_pacing(&self) -> bool {
        self.pacing != Rate::INF
    }

    fn phase(&self) -> &'static str {
        self.phase
    }

    fn write_state(&self, out: &mut CcState) {
        if failed() {
            return;
        }
        Python::attach(|py| {
            let r = (|| -> PyResult<()> {
                let st = self.obj.bind(py).call_method0("state")?;
                let d = st.cast::<pyo3::types::PyDict>()?;
                for (k, v) in d.iter() {
                    let name: String = k.extract()?;
                    let v: f64 = if v.is_none() { f64::NAN } else { v.extract()? };
                    out.num(intern(&name), v);
                }
                Ok(())
            })();
            if let Err(e) = r {
                keep_from(py, self.flow, "state()", e);
            }
        });
    }
}

/// The factory `ccarena_sim::cc::external` calls at each connection's
/// establishment: `ccarena.controller._instantiate(class, kwargs, flow,
/// init)` builds the instance and calls its `on_start`.
fn build(cfg: &PythonConfig, init: &CcInit, flow: u32) -> Box<dyn CongestionControl + Send> {
    let mut c = PyController {
        obj: Python::attach(|py| py.None()),
        flow,
        mss: init.mss,
        cwnd: init.init_cwnd,
        pacing: Rate::INF,
        phase: "",
    };
    if failed() {
        return Box::new(c);
    }
    Python::attach(|py| {
        let r = (|| -> PyResult<()> {
            let kwargs = serde_json::to_string(&cfg.kwargs).expect("json map");
            let info = pyo3::types::PyDict::new(py);
            info.set_item("now", secs(init.now))?;
            info.set_item("mss", init.mss)?;
            info.set_item("init_cwnd", init.init_cwnd)?;
            info.set_item("srtt", init.srtt.map(|d| d.0 as f64 / 1e9))?;
            info.set_item("ecn", init.ecn_enabled)?;
            let obj = py
                .import("ccarena.controller")?
                .call_method1("_instantiate", (cfg.class.as_str(), kwargs, flow, info))?;
            c.obj = obj.unbind();
            c.read_control(py)
        })();
        if let Err(e) = r {
            keep_from(py, flow, "constructor", e);
        }
    });
    Box::new(c)
}

/// Register the factory (at import of `ccarena._core`).
pub fn register() {
    external::register(Box::new(build));
}
