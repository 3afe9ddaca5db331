//! Columnar result tables, the form results leave the simulator in. The
//! Python bindings turn each into an Arrow record batch; nothing here knows
//! about Arrow or files.

/// One column's values.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Str(Vec<String>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::F64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub data: ColumnData,
}

/// A named table whose columns all have the same length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
}

impl Table {
    pub fn new(name: &str) -> Self {
        Table {
            name: name.to_string(),
            columns: Vec::new(),
        }
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.data.len())
    }

    pub fn push(&mut self, name: &str, data: ColumnData) {
        debug_assert!(
            self.columns.is_empty() || data.len() == self.rows(),
            "column {name} has the wrong length"
        );
        self.columns.push(Column {
            name: name.to_string(),
            data,
        });
    }

    pub fn f64(&mut self, name: &str, v: Vec<f64>) {
        self.push(name, ColumnData::F64(v));
    }

    pub fn i64(&mut self, name: &str, v: Vec<i64>) {
        self.push(name, ColumnData::I64(v));
    }

    pub fn str(&mut self, name: &str, v: Vec<String>) {
        self.push(name, ColumnData::Str(v));
    }

    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .map(|c| &c.data)
    }

    /// A float column by name (panics if absent: for tests and summaries).
    pub fn f64s(&self, name: &str) -> &[f64] {
        match self.column(name) {
            Some(ColumnData::F64(v)) => v,
            other => panic!("no f64 column {name} in {} ({other:?})", self.name),
        }
    }

    pub fn strs(&self, name: &str) -> &[String] {
        match self.column(name) {
            Some(ColumnData::Str(v)) => v,
            other => panic!("no string column {name} in {} ({other:?})", self.name),
        }
    }

    pub fn i64s(&self, name: &str) -> &[i64] {
        match self.column(name) {
            Some(ColumnData::I64(v)) => v,
            other => panic!("no i64 column {name} in {} ({other:?})", self.name),
        }
    }
}
