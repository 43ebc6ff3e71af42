//! A partition's Parquet file for the table: rows written as they are read (the
//! writer keeps one row group at a time and rolls to a new file past the table's
//! target size), closed into the files Iceberg knows, each described in JSON so that
//! another broker's commit can add it.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, StructArray};
use arrow_schema::{ArrowError, DataType, SchemaRef};
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::spec::{DataFileFormat, serialize_data_file_to_json};
use iceberg::table::Table;
use iceberg::writer::base_writer::data_file_writer::{DataFileWriter, DataFileWriterBuilder};
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::arrays::{array, fits};
use crate::datum::Datum;
use crate::error::TableError;
use crate::key_value::{Row, columns_of, to_batch};
use crate::registry::{KAFKA_COLUMN, REASON_COLUMN};

/// Rows in a row group: bounds what a writer holds (about 32 MiB of 1 KiB records).
const ROW_GROUP_ROWS: usize = 32 * 1024;

/// A Parquet file written and closed, waiting to be committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub location: String,
    /// Iceberg's description of the file (its `DataFile`, as JSON).
    pub data_file: String,
    pub record_count: u64,
    pub size_bytes: u64,
}

/// The file (or files, past the target size) of one partition's rows.
pub struct PartitionFile {
    writer:
        DataFileWriter<ParquetWriterBuilder, DefaultLocationGenerator, DefaultFileNameGenerator>,
    arrow_schema: SchemaRef,
    table: Table,
}

impl std::fmt::Debug for PartitionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionFile").finish_non_exhaustive()
    }
}

impl PartitionFile {
    /// A new file for `partition`'s rows from `first_offset`, under `table`'s data
    /// location, in its current schema.
    pub async fn create(
        table: &Table,
        partition: i32,
        first_offset: i64,
    ) -> Result<PartitionFile, TableError> {
        let schema = table.metadata().current_schema().clone();
        let arrow_schema = Arc::new(schema_to_arrow_schema(&schema)?);
        let locations = DefaultLocationGenerator::new(table.metadata())?;
        // A name of its own per file: two leaders of one partition never write over
        // each other's.
        let names = DefaultFileNameGenerator::new(
            format!("p{partition}-o{first_offset}"),
            Some(uuid_suffix()),
            DataFileFormat::Parquet,
        );
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let parquet = ParquetWriterBuilder::new(properties, schema);
        let rolling = RollingFileWriterBuilder::new_with_default_file_size(
            parquet,
            table.file_io().clone(),
            locations,
            names,
        );
        let writer = DataFileWriterBuilder::new(rolling).build(None).await?;
        Ok(PartitionFile {
            writer,
            arrow_schema,
            table: table.clone(),
        })
    }

    /// Adds `rows` (in offset order, after those written before).
    pub async fn write(&mut self, rows: &[Row]) -> Result<(), TableError> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch = to_batch(&self.arrow_schema, rows)?;
        Ok(self.writer.write(batch).await?)
    }

    /// Whether `value` (a record's decoded value) fits the file's value columns
    /// (a `registry` table's); why not.
    pub fn check(&self, value: &Datum) -> Result<(), String> {
        let Datum::Fields(fields) = value else {
            return if matches!(value, Datum::Null) {
                Ok(())
            } else {
                Err("the value is no record".to_owned())
            };
        };
        self.value_fields().try_for_each(|field| {
            fields
                .get(field.name())
                .map_or(Ok(()), |datum| fits(field.data_type(), datum, field.name()))
        })
    }

    fn value_fields(&self) -> impl Iterator<Item = &arrow_schema::FieldRef> {
        self.arrow_schema
            .fields()
            .iter()
            .filter(|field| field.name() != KAFKA_COLUMN)
    }

    /// Adds records of a `registry` table: `rows` (their values left out) with
    /// their decoded `values`, each of which [`PartitionFile::check`] passed.
    pub async fn write_decoded(
        &mut self,
        rows: &[Row],
        values: &[Datum],
    ) -> Result<(), TableError> {
        if rows.is_empty() {
            return Ok(());
        }
        let null = Datum::Null;
        let mut columns = Vec::with_capacity(self.arrow_schema.fields().len());
        for field in self.arrow_schema.fields() {
            if field.name() == KAFKA_COLUMN {
                let DataType::Struct(kafka) = field.data_type() else {
                    return Err(ArrowError::SchemaError("kafka is no struct".to_owned()).into());
                };
                columns.push(Arc::new(StructArray::try_new(
                    kafka.clone(),
                    columns_of(kafka, rows)?,
                    None,
                )?) as ArrayRef);
                continue;
            }
            let of_field: Vec<&Datum> = values
                .iter()
                .map(|value| match value {
                    Datum::Fields(fields) => fields.get(field.name()).unwrap_or(&null),
                    _ => &null,
                })
                .collect();
            columns.push(array(field.data_type(), &of_field)?);
        }
        let batch = RecordBatch::try_new(self.arrow_schema.clone(), columns)?;
        Ok(self.writer.write(batch).await?)
    }

    /// Adds dead letters (a dead-letter table's rows): each record whole, and why
    /// it could not be written into the table.
    pub async fn write_dead_letters(
        &mut self,
        rows: &[Row],
        reasons: &[String],
    ) -> Result<(), TableError> {
        if rows.is_empty() {
            return Ok(());
        }
        let record_fields: arrow_schema::Fields = self
            .arrow_schema
            .fields()
            .iter()
            .filter(|field| field.name() != REASON_COLUMN)
            .cloned()
            .collect();
        let mut columns = columns_of(&record_fields, rows)?;
        let position = self
            .arrow_schema
            .index_of(REASON_COLUMN)
            .map_err(TableError::from)?;
        columns.insert(
            position,
            Arc::new(StringArray::from_iter_values(reasons.iter())) as ArrayRef,
        );
        let batch = RecordBatch::try_new(self.arrow_schema.clone(), columns)?;
        Ok(self.writer.write(batch).await?)
    }

    /// Closes the file: what was written (nothing when no row was).
    pub async fn close(mut self) -> Result<Vec<WrittenFile>, TableError> {
        let metadata = self.table.metadata();
        let partition_type = metadata.default_partition_type().clone();
        let version = metadata.format_version();
        self.writer
            .close()
            .await?
            .into_iter()
            .map(|data_file| {
                let location = data_file.file_path().to_owned();
                let record_count = data_file.record_count();
                let size_bytes = data_file.file_size_in_bytes();
                Ok(WrittenFile {
                    data_file: serialize_data_file_to_json(data_file, &partition_type, version)?,
                    location,
                    record_count,
                    size_bytes,
                })
            })
            .collect()
    }
}

/// A random suffix for a file's name.
fn uuid_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
