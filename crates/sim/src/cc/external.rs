//! A congestion control written outside the simulator crate: the Python
//! package's `ccarena.Controller` subclasses (`cc = "python"`). The crate
//! knows only the configuration (the class and its keyword parameters);
//! the embedding registers, once per process, how to build a controller
//! from it ([`register`]), and the controller is any [`CongestionControl`].
//! The per-ACK path of the native algorithms keeps its enum dispatch; only
//! this variant goes through a `Box<dyn>`.

use super::{CcInit, CongestionControl};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// `cc = "python"`'s parameters: `class` ("module:Class" or
/// "path/to/file.py:Class") and any further keyword arguments for its
/// constructor, passed as they are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PythonConfig {
    pub class: String,
    #[serde(flatten)]
    pub kwargs: serde_json::Map<String, serde_json::Value>,
}

impl PythonConfig {
    pub fn from_params(params: &serde_json::Value) -> Result<PythonConfig, String> {
        let Some(obj) = params.as_object() else {
            return Err(
                "python needs cc_params = { class = \"module:Class\" } (a ccarena.Controller subclass)".into(),
            );
        };
        let mut kwargs = obj.clone();
        let class = match kwargs.remove("class") {
            Some(serde_json::Value::String(s)) => s,
            Some(other) => {
                return Err(format!(
                    "class: {other}: expected a string \"module:Class\""
                ))
            }
            None => return Err(
                "class: missing: name the controller, e.g. class = \"mycc:MyCC\" or \"cc.py:MyCC\""
                    .into(),
            ),
        };
        let (module, name) = class.rsplit_once(':').unwrap_or(("", ""));
        let ident = |s: &str| {
            !s.is_empty()
                && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
        };
        if module.is_empty() || !ident(name) {
            return Err(format!(
                "class = {class:?}: expected \"module:Class\" or \"path/to/file.py:Class\""
            ));
        }
        Ok(PythonConfig { class, kwargs })
    }
}

/// Builds a controller for one flow when its connection is established.
pub type Factory =
    dyn Fn(&PythonConfig, &CcInit, u32) -> Box<dyn CongestionControl + Send> + Send + Sync;

static FACTORY: OnceLock<Box<Factory>> = OnceLock::new();

/// Register the embedding's factory (the Python bindings do, at import).
/// The first registration wins.
pub fn register(f: Box<Factory>) {
    let _ = FACTORY.set(f);
}

/// Whether a factory is registered (a scenario naming a Python controller
/// is refused without one).
pub fn available() -> bool {
    FACTORY.get().is_some()
}

/// Build flow `flow`'s controller; the scenario was refused at validation
/// if no factory is registered.
pub fn build(cfg: &PythonConfig, init: &CcInit, flow: u32) -> Box<dyn CongestionControl + Send> {
    let f = FACTORY
        .get()
        .expect("a python controller is validated only when a factory is registered");
    f(cfg, init, flow)
}

/// A controller's table is read by `PythonConfig::from_params`, and only
/// where the embedding can build one.
impl crate::cc::ReadParams for PythonConfig {
    fn read(params: &serde_json::Value) -> Result<Self, String> {
        let c = PythonConfig::from_params(params)?;
        if !available() {
            return Err("python controllers run through the Python package (ccarena.run, the ccarena command)".into());
        }
        Ok(c)
    }
}

/// The registry's entry for `cc = "python"` (`cc::Algorithm`).
impl crate::cc::Algorithm for PythonConfig {
    const NAME: &'static str = "python";
    const REFERENCE: &'static str = "your own: a ccarena.Controller subclass, cc_params = { class = \"module:Class\" } (docs/controllers.md)";
    fn build(&self, init: &crate::cc::CcInit, flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::External(build(self, init, flow))
    }
}
