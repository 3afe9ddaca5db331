//! `Table` -> Arrow record batch -> Arrow IPC stream bytes or a Parquet
//! file. No Python here, so it is tested with plain `cargo test`.

use std::io::Write;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use ccarena_sim::metrics::stream::BATCH_ROWS;
use ccarena_sim::metrics::table::{ColumnData, Table};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// One record batch holding every column of `table`: F64 -> Float64,
/// I64 -> Int64, Str -> Utf8 (Parquet dictionary-encodes repeated strings
/// by itself, so there is no gain in a dictionary type here). Columns are
/// non-nullable; missing values are NaN in float columns.
pub fn to_record_batch(table: &Table) -> Result<RecordBatch, ArrowError> {
    into_record_batch(table.clone())
}

/// `to_record_batch` of a table given away: its numbers become the
/// arrays' buffers without a copy.
pub fn into_record_batch(table: Table) -> Result<RecordBatch, ArrowError> {
    let rows = table.rows();
    let mut fields = Vec::with_capacity(table.columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(table.columns.len());
    for col in table.columns {
        let (dtype, array): (DataType, ArrayRef) = match col.data {
            ColumnData::F64(v) => (DataType::Float64, Arc::new(Float64Array::from(v))),
            ColumnData::I64(v) => (DataType::Int64, Arc::new(Int64Array::from(v))),
            ColumnData::Str(v) => (DataType::Utf8, Arc::new(StringArray::from_iter_values(v))),
        };
        fields.push(Field::new(col.name.as_str(), dtype, false));
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new(fields));
    // A table without columns still has a row count (zero).
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &options)
}

/// A record batch of `to_record_batch`'s types back as a table.
pub fn from_record_batch(rb: &RecordBatch, name: &str) -> Result<Table, String> {
    let mut t = Table::new(name);
    for (field, col) in rb.schema().fields().iter().zip(rb.columns()) {
        let any = col.as_any();
        let data = if let Some(a) = any.downcast_ref::<Float64Array>() {
            ColumnData::F64(a.values().to_vec())
        } else if let Some(a) = any.downcast_ref::<Int64Array>() {
            ColumnData::I64(a.values().to_vec())
        } else if let Some(a) = any.downcast_ref::<StringArray>() {
            ColumnData::Str(
                a.iter()
                    .map(|v| v.unwrap_or_default().to_string())
                    .collect(),
            )
        } else {
            return Err(format!(
                "column {} has type {}",
                field.name(),
                field.data_type()
            ));
        };
        t.push(field.name(), data);
    }
    Ok(t)
}

/// The Arrow IPC *stream* format (`pyarrow.ipc.open_stream`) of one table.
pub fn to_ipc_stream(table: &Table) -> Result<Vec<u8>, String> {
    let batch = to_record_batch(table).map_err(|e| e.to_string())?;
    ipc_stream(batch.schema(), [Ok(batch)])
}

/// Record batches of `schema` as one Arrow IPC stream.
pub fn ipc_stream(
    schema: SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch, String>>,
) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut buf, &schema).map_err(|e| e.to_string())?;
        for batch in batches {
            writer.write(&batch?).map_err(|e| e.to_string())?;
        }
        writer.finish().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// How every result table is written: zstd (level 1, as pyarrow's
/// default), row groups of `stream::BATCH_ROWS` rows (the writer holds
/// one row group's encoded columns until it is complete: the library's
/// million rows would be 30-60 MB of a long run's samples), the library's
/// defaults otherwise. Nothing in the file depends on when or where it was
/// written: the same table gives the same bytes (written from a spill,
/// batch by batch, the same rows and row groups; a page inside a row group
/// may end elsewhere).
fn parquet_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).expect("1 is a valid zstd level"),
        ))
        .set_max_row_group_row_count(Some(BATCH_ROWS))
        .build()
}

/// One table as a Parquet file written to `out` (the Arrow schema rides in
/// the file's metadata, so readers get the same types back).
pub fn write_parquet<W: Write + Send>(table: &Table, out: W) -> Result<(), String> {
    let batch = to_record_batch(table).map_err(|e| e.to_string())?;
    write_parquet_batches(batch.schema(), [Ok(batch)], out)
}

/// Record batches of `schema` as one Parquet file written to `out`, in row
/// groups of `BATCH_ROWS` whatever the batches' sizes.
pub fn write_parquet_batches<W: Write + Send>(
    schema: SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch, String>>,
    out: W,
) -> Result<(), String> {
    let mut writer =
        ArrowWriter::try_new(out, schema, Some(parquet_properties())).map_err(|e| e.to_string())?;
    for batch in batches {
        writer.write(&batch?).map_err(|e| e.to_string())?;
    }
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// One table as the bytes of a Parquet file.
pub fn to_parquet(table: &Table) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    write_parquet(table, &mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_ipc::reader::StreamReader;

    fn sample() -> Table {
        let mut t = Table::new("flows");
        t.i64("flow", vec![0, 1]);
        t.str("cc", vec!["reno".into(), "cubic".into()]);
        t.f64("fct_s", vec![1.5, f64::NAN]);
        t
    }

    #[test]
    fn stream_round_trips_names_types_and_values() {
        let bytes = to_ipc_stream(&sample()).unwrap();
        let mut reader = StreamReader::try_new(bytes.as_slice(), None).unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert!(reader.next().is_none());
        let schema = batch.schema();
        let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["flow", "cc", "fct_s"]);
        assert_eq!(schema.field(0).data_type(), &DataType::Int64);
        assert_eq!(schema.field(1).data_type(), &DataType::Utf8);
        assert_eq!(schema.field(2).data_type(), &DataType::Float64);
        let cc = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(cc.value(1), "cubic");
        let fct = batch
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!(fct.value(0), 1.5);
        assert!(fct.value(1).is_nan());
        assert_eq!(fct.null_count(), 0);
    }

    #[test]
    fn empty_table_keeps_its_columns() {
        let mut t = Table::new("transitions");
        t.f64("time_s", vec![]);
        t.str("to", vec![]);
        let batch = to_record_batch(&t).unwrap();
        assert_eq!(batch.num_rows(), 0);
        assert_eq!(batch.num_columns(), 2);
        assert!(!to_ipc_stream(&t).unwrap().is_empty());
    }

    #[test]
    fn same_table_gives_same_bytes() {
        assert_eq!(
            to_ipc_stream(&sample()).unwrap(),
            to_ipc_stream(&sample()).unwrap()
        );
        assert_eq!(
            to_parquet(&sample()).unwrap(),
            to_parquet(&sample()).unwrap()
        );
    }

    #[test]
    fn parquet_round_trips_names_types_and_values() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let bytes = bytes::Bytes::from(to_parquet(&sample()).unwrap());
        let mut reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert_eq!(batch, to_record_batch(&sample()).unwrap());
        let mut t = Table::new("transitions");
        t.f64("time_s", vec![]);
        t.str("to", vec![]);
        assert!(!to_parquet(&t).unwrap().is_empty());
    }
}
