//! Column builders for the per-interval samples: fixed columns for every
//! flow, plus each congestion control's own named state columns, merged into
//! one table (NaN or "" where a flow's algorithm lacks a column).

use super::table::{ColumnData, Table};
use crate::cc::{CcState, StateValue};

enum Dyn {
    Num(Vec<f64>),
    Label(Vec<&'static str>),
}

/// Builds a table whose set of columns grows as rows introduce new names.
#[derive(Default)]
pub struct DynColumns {
    names: Vec<&'static str>,
    cols: Vec<Dyn>,
    rows: usize,
    scratch: CcState,
}

impl DynColumns {
    /// Append one row from a CC's state; columns it does not write are padded.
    pub fn push_row(&mut self, fill: impl FnOnce(&mut CcState)) {
        let mut st = std::mem::take(&mut self.scratch);
        st.entries.clear();
        fill(&mut st);
        for &(name, v) in &st.entries {
            let i = match self.names.iter().position(|&n| n == name) {
                Some(i) => i,
                None => {
                    self.names.push(name);
                    self.cols.push(match v {
                        StateValue::Num(_) => Dyn::Num(vec![f64::NAN; self.rows]),
                        StateValue::Label(_) => Dyn::Label(vec![""; self.rows]),
                    });
                    self.names.len() - 1
                }
            };
            match (&mut self.cols[i], v) {
                (Dyn::Num(c), StateValue::Num(x)) if c.len() == self.rows => c.push(x),
                (Dyn::Label(c), StateValue::Label(x)) if c.len() == self.rows => c.push(x),
                _ => {} // a name written twice or with two types in one row: keep the first
            }
        }
        self.rows += 1;
        for c in &mut self.cols {
            match c {
                Dyn::Num(v) if v.len() < self.rows => v.push(f64::NAN),
                Dyn::Label(v) if v.len() < self.rows => v.push(""),
                _ => {}
            }
        }
        self.scratch = st;
    }

    /// Rows gathered so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Move the rows gathered so far into `t`'s columns (every column known
    /// yet, in the order of first appearance); the names and types stay,
    /// so later rows fill the same columns (`stream`: a batch).
    /// The columns start again with room for `reserve` rows.
    pub fn take_into(&mut self, t: &mut Table, reserve: usize) {
        for (&name, c) in self.names.iter().zip(&mut self.cols) {
            let data = match c {
                Dyn::Num(v) => ColumnData::F64(std::mem::replace(v, Vec::with_capacity(reserve))),
                Dyn::Label(v) => ColumnData::Str(
                    std::mem::replace(v, Vec::with_capacity(reserve))
                        .into_iter()
                        .map(String::from)
                        .collect(),
                ),
            };
            t.push(name, data);
        }
        self.rows = 0;
    }
}

/// Jain's fairness index (RFC 5166): (sum x)^2 / (n sum x^2), in 1/n..=1,
/// over the finite values (a flow without a goodput is left out); NaN when
/// none is finite or all are zero. The one definition: the Linux backend's
/// tables and the Python statistics call it through `_core.jain`.
pub fn jain(xs: &[f64]) -> f64 {
    let (mut n, mut s, mut s2) = (0.0, 0.0, 0.0);
    for &x in xs.iter().filter(|x| x.is_finite()) {
        n += 1.0;
        s += x;
        s2 += x * x;
    }
    if n == 0.0 || s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (n * s2)
}

/// Mean and spread of a stream of values in constant memory (Welford's
/// update): ACK inter-arrival times at a sender, whose coefficient of
/// variation shows ACK compression (ACKs bunched by a queue or a link
/// layer arrive in bursts: many short gaps and a few long ones).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunningStats {
    n: u64,
    mean: f64,
    m2: f64,
}

impl RunningStats {
    pub fn add(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    /// The mean; NaN before any value.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.mean
        }
    }

    /// Standard deviation over mean (population); NaN before two values.
    pub fn cv(&self) -> f64 {
        if self.n < 2 || self.mean == 0.0 {
            return f64::NAN;
        }
        (self.m2 / self.n as f64).sqrt() / self.mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_stats_give_the_mean_and_the_coefficient_of_variation() {
        let mut r = RunningStats::default();
        assert!(r.mean().is_nan() && r.cv().is_nan());
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            r.add(x);
        }
        // Mean 5, population standard deviation 2.
        assert!((r.mean() - 5.0).abs() < 1e-12 && (r.cv() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_1_over_n_for_one_hog() {
        assert!((jain(&[5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[9.0, 0.0, 0.0]) - 1.0 / 3.0).abs() < 1e-12);
        // Values without a goodput are left out; none at all gives NaN.
        assert!((jain(&[5.0, f64::NAN, 5.0]) - 1.0).abs() < 1e-12);
        assert!(jain(&[f64::NAN]).is_nan() && jain(&[0.0, 0.0]).is_nan() && jain(&[]).is_nan());
    }

    #[test]
    fn columns_are_padded_across_algorithms() {
        let mut d = DynColumns::default();
        d.push_row(|s| s.num("a", 1.0));
        d.push_row(|s| {
            s.label("mode", "X");
            s.num("a", 2.0);
        });
        d.push_row(|_| {});
        let mut t = Table::new("t");
        t.f64("time_s", vec![0.0, 1.0, 2.0]);
        d.take_into(&mut t, 0);
        assert_eq!(t.f64s("a")[..2], [1.0, 2.0]);
        assert!(t.f64s("a")[2].is_nan());
        assert_eq!(
            t.column("mode"),
            Some(&ColumnData::Str(vec!["".into(), "X".into(), "".into()]))
        );
    }
}
