//! Parameter tables of algorithms and disciplines (`cc_params`,
//! `[bottleneck.<qdisc>]`): serde with `deny_unknown_fields`, defaults in
//! `Default`, ranges checked once by `validate`.

use serde::de::DeserializeOwned;

pub trait Params: DeserializeOwned + Default {
    /// Check ranges; the message names the parameter and its allowed range.
    fn validate(&self) -> Result<(), String>;
}

/// Deserialize and validate a parameter table (JSON null when absent);
/// the error names the parameter.
pub fn parse_params<T: Params>(params: &serde_json::Value) -> Result<T, String> {
    let v = if params.is_null() {
        serde_json::Value::Object(Default::default())
    } else {
        params.clone()
    };
    let cfg: T = serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            inner
        } else {
            format!("{path}: {inner}")
        }
    })?;
    cfg.validate()?;
    Ok(cfg)
}
