//! Tables that grow with simulated time (`samples`, `queue`,
//! `transitions`) leave a run in batches: once a table has gathered
//! `batch_rows` rows they go to the run's [`Sink`], and the others go with
//! `samples` (`World::flush`), so a run holds at most one batch of each,
//! never its history. Without a sink a run keeps every row and returns
//! whole tables, as before there were batches.
//!
//! A batch holds the columns known when it left; `samples` gains a column
//! when a flow of another algorithm writes its first state row, so a
//! later batch can have more columns than an earlier one, never fewer and
//! never in another order. [`join`] pads the earlier batches (NaN for
//! numbers, "" for labels) to the last one's columns: the joined table is
//! the one a run without a sink returns, bit for bit.

use super::table::{Column, ColumnData, Table};

/// Where full batches go while the run goes on (the Python binding's
/// writes them to disk). The core never does I/O itself.
pub trait Sink {
    /// One batch of table `batch.name`, rows in the table's order.
    fn put(&mut self, batch: Table);
}

/// Rows a batch holds by default: 65,536 rows of `samples` are about
/// 20-40 MB with algorithm state columns.
pub const BATCH_ROWS: usize = 1 << 16;

/// Batches of one table joined into the table: each padded to the last
/// batch's columns. `None` for no batches.
pub fn join(batches: Vec<Table>) -> Option<Table> {
    let mut out = schema_of(batches.last()?);
    for b in batches {
        let rows = b.rows();
        let mut cols = b.columns.into_iter();
        for (i, col) in out.columns.iter_mut().enumerate() {
            match cols.next() {
                Some(c) => {
                    debug_assert_eq!(c.name, col.name, "batch {i} column order");
                    append(&mut col.data, c.data);
                }
                None => pad(&mut col.data, rows),
            }
        }
    }
    Some(out)
}

/// `batch` padded at the end with the columns of `schema` it lacks (the
/// columns the table gained after it left); `schema`'s rows are ignored.
pub fn pad_to(mut batch: Table, schema: &Table) -> Table {
    let rows = batch.rows();
    for c in schema.columns.iter().skip(batch.columns.len()) {
        let mut data = empty_like(&c.data);
        pad(&mut data, rows);
        batch.columns.push(Column {
            name: c.name.clone(),
            data,
        });
    }
    batch
}

/// A table's columns without its rows.
pub fn schema_of(t: &Table) -> Table {
    let mut s = Table::new(&t.name);
    s.columns = t
        .columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            data: empty_like(&c.data),
        })
        .collect();
    s
}

fn empty_like(d: &ColumnData) -> ColumnData {
    match d {
        ColumnData::F64(_) => ColumnData::F64(Vec::new()),
        ColumnData::I64(_) => ColumnData::I64(Vec::new()),
        ColumnData::Str(_) => ColumnData::Str(Vec::new()),
    }
}

fn append(to: &mut ColumnData, from: ColumnData) {
    match (to, from) {
        (ColumnData::F64(a), ColumnData::F64(b)) => a.extend(b),
        (ColumnData::I64(a), ColumnData::I64(b)) => a.extend(b),
        (ColumnData::Str(a), ColumnData::Str(b)) => a.extend(b),
        _ => panic!("a batch's column changed its type"),
    }
}

/// The value of a column a flow's algorithm does not write: NaN or ""
/// (`collect::DynColumns`). Integer columns are never missing.
fn pad(d: &mut ColumnData, rows: usize) {
    match d {
        ColumnData::F64(v) => v.resize(v.len() + rows, f64::NAN),
        ColumnData::Str(v) => v.resize(v.len() + rows, String::new()),
        ColumnData::I64(_) => panic!("an integer column cannot be missing from a batch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_batches_are_padded_at_the_end() {
        let mut a = Table::new("t");
        a.f64("x", vec![1.0, 2.0]);
        let mut b = Table::new("t");
        b.f64("x", vec![3.0]);
        b.str("mode", vec!["S".into()]);
        b.f64("y", vec![9.0]);
        let j = join(vec![a, b]).unwrap();
        assert_eq!(j.f64s("x"), [1.0, 2.0, 3.0]);
        assert_eq!(j.strs("mode"), ["", "", "S"]);
        assert!(j.f64s("y")[0].is_nan() && j.f64s("y")[1].is_nan() && j.f64s("y")[2] == 9.0);
        assert!(join(Vec::new()).is_none());
        let mut early = Table::new("t");
        early.f64("x", vec![5.0]);
        let p = pad_to(early, &schema_of(&j));
        assert_eq!(p.strs("mode"), [""]);
        assert_eq!(p.columns.len(), 3);
    }
}
