//! The tables that grow with simulated time, kept on disk while a run goes
//! on (`metrics::stream`): each batch the core hands over is written at
//! once as an Arrow IPC file in the run's spill directory and dropped from
//! memory; writing the run's Parquet file reads the batches back one at a
//! time, each padded to the table's final columns. So a run holds one
//! batch of each growing table, never its history. The directory belongs
//! to the `Spill` and goes with it (a finished run's tables, an
//! interrupted run's batches alike).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use ccarena_sim::metrics::stream::{pad_to, schema_of, Sink};
use ccarena_sim::metrics::table::Table;

use crate::arrow::{into_record_batch, ipc_stream, to_record_batch, write_parquet_batches};

struct Part {
    path: PathBuf,
    rows: usize,
}

/// One run's spilled tables.
pub struct Spill {
    dir: PathBuf,
    /// Per table, its batches in order.
    parts: BTreeMap<String, Vec<Part>>,
    /// Per table, its columns as its last batch had them (all of them).
    schemas: BTreeMap<String, Table>,
    /// The first write that failed (a full disk): the run's tables are then
    /// incomplete, and the run fails with this.
    error: Option<String>,
}

impl Spill {
    /// A new, empty spill directory at `dir` (which must not exist).
    pub fn create(dir: &Path) -> std::io::Result<Spill> {
        std::fs::create_dir(dir)?;
        Ok(Spill {
            dir: dir.to_path_buf(),
            parts: BTreeMap::new(),
            schemas: BTreeMap::new(),
            error: None,
        })
    }

    fn put(&mut self, batch: Table) {
        if self.error.is_some() {
            return;
        }
        let name = batch.name.clone();
        let k = self.parts.get(&name).map_or(0, Vec::len);
        let path = self.dir.join(format!("{name}.{k:06}.arrow"));
        let rows = batch.rows();
        self.schemas.insert(name.clone(), schema_of(&batch));
        let written = (|| -> Result<(), String> {
            let rb = into_record_batch(batch).map_err(|e| e.to_string())?;
            let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut w = StreamWriter::try_new(BufWriter::new(file), &rb.schema())
                .map_err(|e| e.to_string())?;
            w.write(&rb).map_err(|e| e.to_string())?;
            w.finish().map_err(|e| e.to_string())?;
            w.into_inner()
                .map_err(|e| e.to_string())?
                .flush()
                .map_err(|e| format!("{}: {e}", path.display()))
        })();
        match written {
            Ok(()) => self
                .parts
                .entry(name)
                .or_default()
                .push(Part { path, rows }),
            Err(e) => self.error = Some(e),
        }
    }

    /// Why the run's tables are incomplete, if they are.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The tables held here.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.schemas.keys().map(String::as_str)
    }

    pub fn holds(&self, name: &str) -> bool {
        self.schemas.contains_key(name)
    }

    /// Rows of table `name`.
    pub fn rows(&self, name: &str) -> usize {
        self.parts
            .get(name)
            .map_or(0, |p| p.iter().map(|p| p.rows).sum())
    }

    /// Table `name`'s batches, read back one at a time and padded to its
    /// final columns.
    pub fn batches<'s>(
        &'s self,
        name: &'s str,
    ) -> impl Iterator<Item = Result<RecordBatch, String>> + 's {
        let schema = self.schemas.get(name);
        let parts = self.parts.get(name).map_or(&[][..], Vec::as_slice);
        parts.iter().map(move |p| {
            let schema = schema.expect("a table with parts has a schema");
            let file = File::open(&p.path).map_err(|e| format!("{}: {e}", p.path.display()))?;
            let mut r =
                StreamReader::try_new(BufReader::new(file), None).map_err(|e| e.to_string())?;
            let rb = r
                .next()
                .ok_or_else(|| format!("{}: no batch", p.path.display()))?
                .map_err(|e| e.to_string())?;
            if rb.num_columns() == schema.columns.len() {
                return Ok(rb);
            }
            let padded = pad_to(crate::arrow::from_record_batch(&rb, name)?, schema);
            into_record_batch(padded).map_err(|e| e.to_string())
        })
    }

    /// Table `name`'s columns (all of them: its last batch's).
    fn schema(&self, name: &str) -> Result<SchemaRef, String> {
        let t = self
            .schemas
            .get(name)
            .ok_or_else(|| format!("no table {name:?}"))?;
        Ok(to_record_batch(t).map_err(|e| e.to_string())?.schema())
    }

    /// Table `name` as a Parquet file written to `out`, batch by batch.
    pub fn write_parquet<W: Write + Send>(&self, name: &str, out: W) -> Result<(), String> {
        write_parquet_batches(self.schema(name)?, self.batches(name), out)
    }

    /// Table `name` as an Arrow IPC stream (`pyarrow.ipc.open_stream`).
    pub fn ipc_stream(&self, name: &str) -> Result<Vec<u8>, String> {
        ipc_stream(self.schema(name)?, self.batches(name))
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The core's `Sink` for a spill shared with the caller, which takes it
/// back when the run is over.
pub struct SpillSink(pub Arc<Mutex<Spill>>);

impl Sink for SpillSink {
    fn put(&mut self, batch: Table) {
        self.0.lock().expect("spill lock").put(batch);
    }
}
