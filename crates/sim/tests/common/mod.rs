//! Helpers shared by the integration tests: run a scenario written as
//! JSON, read string columns and phase transitions, compare runs bit for bit.
#![allow(dead_code)] // each test file uses its own subset

use ccarena_sim::metrics::table::{ColumnData, Table};
use ccarena_sim::scenario::normalize_json;
use ccarena_sim::world::{run, Results};

/// Normalize and run a scenario; a scenario error fails the test.
pub fn sim(j: serde_json::Value) -> Results {
    let sc = normalize_json(&j.to_string()).unwrap_or_else(|e| panic!("{e}"));
    run(&sc)
}

pub fn strs<'a>(t: &'a Table, col: &str) -> &'a [String] {
    match t.column(col) {
        Some(ColumnData::Str(v)) => v,
        other => panic!("no string column {col} in {}: {other:?}", t.name),
    }
}

/// (time, from, to) of one flow's phase transitions.
pub fn transitions(r: &Results, flow: i64) -> Vec<(f64, String, String)> {
    let t = r.table("transitions");
    let (time, f) = (t.f64s("time_s"), t.i64s("flow"));
    let (from, to) = (strs(t, "from"), strs(t, "to"));
    (0..t.rows())
        .filter(|&i| f[i] == flow)
        .map(|i| (time[i], from[i].clone(), to[i].clone()))
        .collect()
}

/// One flow's sampled values of `col` after `from_s` seconds (the steady
/// state a test judges, its start-up left out).
pub fn samples_after(r: &Results, flow: i64, col: &str, from_s: f64) -> Vec<f64> {
    let s = r.table("samples");
    let (t, f, v) = (s.f64s("time_s"), s.i64s("flow"), s.f64s(col));
    (0..s.rows())
        .filter(|&i| f[i] == flow && t[i] > from_s)
        .map(|i| v[i])
        .collect()
}

/// A column's values in a form that compares exactly: f64s as their bits
/// (so NaN equals NaN and 0.0 differs from -0.0), strings as they are.
#[derive(Debug, PartialEq)]
pub enum Bits {
    Num(Vec<u64>),
    Str(Vec<String>),
}

/// Every column of `t` as (name, exact values).
pub fn bits(t: &Table) -> Vec<(String, Bits)> {
    t.columns
        .iter()
        .map(|c| {
            let v = match &c.data {
                ColumnData::F64(v) => Bits::Num(v.iter().map(|x| x.to_bits()).collect()),
                ColumnData::I64(v) => Bits::Num(v.iter().map(|x| *x as u64).collect()),
                ColumnData::Str(v) => Bits::Str(v.clone()),
            };
            (c.name.clone(), v)
        })
        .collect()
}

/// Determinism: two runs produced the same tables, bit for bit. `what`
/// prefixes the failure message.
pub fn assert_identical(a: &Results, b: &Results, what: &str) {
    let names = |r: &Results| r.tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(a), names(b), "{what}tables");
    for (ta, tb) in a.tables.iter().zip(&b.tables) {
        assert_eq!(bits(ta), bits(tb), "{what}table {}", ta.name);
    }
}
