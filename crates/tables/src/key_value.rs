//! The `key_value` table: a record's partition, offset, timestamp, key, value and
//! headers, as columns any engine reads without knowing the records' format.

use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, Int32Array, Int64Array, LargeBinaryArray, ListArray, RecordBatch, StructArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Fields, SchemaRef};
use iceberg::spec::{
    ListType, NestedField, NestedFieldRef, PrimitiveType, Schema, StructType, Type,
};

use crate::error::TableError;

/// A record as a row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch (the record's timestamp).
    pub timestamp_ms: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<Header>,
}

/// A record header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub key: String,
    pub value: Option<Vec<u8>>,
}

/// The table's columns, with Iceberg's field ids.
pub fn key_value_schema() -> Result<Schema, TableError> {
    Ok(Schema::builder().with_fields(record_fields(true)).build()?)
}

/// A record's columns (ids 1 to 9): partition, offset, timestamp, key, the value
/// when `with_value`, and headers.
pub(crate) fn record_fields(with_value: bool) -> Vec<NestedFieldRef> {
    let primitive = Type::Primitive;
    let header = StructType::new(vec![
        NestedField::required(8, "key", primitive(PrimitiveType::String)).into(),
        NestedField::optional(9, "value", primitive(PrimitiveType::Binary)).into(),
    ]);
    let headers = ListType::new(NestedField::list_element(7, Type::Struct(header), true).into());
    let mut fields: Vec<NestedFieldRef> = vec![
        NestedField::required(1, "partition", primitive(PrimitiveType::Int)).into(),
        NestedField::required(2, "offset", primitive(PrimitiveType::Long)).into(),
        NestedField::required(3, "timestamp", primitive(PrimitiveType::Timestamptz)).into(),
        NestedField::optional(4, "key", primitive(PrimitiveType::Binary)).into(),
        NestedField::optional(5, "value", primitive(PrimitiveType::Binary)).into(),
        NestedField::required(6, "headers", Type::List(headers)).into(),
    ];
    if !with_value {
        fields.retain(|field| field.name != "value");
    }
    fields
}

/// `rows` as a batch of `schema` (the table's schema in Arrow's terms, field ids kept).
pub(crate) fn to_batch(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch, TableError> {
    Ok(RecordBatch::try_new(
        schema.clone(),
        columns_of(schema.fields(), rows)?,
    )?)
}

/// The columns `fields` name (partition, offset, timestamp, key, value, headers) of
/// `rows`: a `key_value` table's, or the `kafka` struct of a `registry` table.
pub(crate) fn columns_of(fields: &Fields, rows: &[Row]) -> Result<Vec<ArrayRef>, TableError> {
    fields
        .iter()
        .map(|field| -> Result<ArrayRef, TableError> {
            Ok(match field.name().as_str() {
                "partition" => Arc::new(Int32Array::from_iter_values(
                    rows.iter().map(|row| row.partition),
                )),
                "offset" => Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|row| row.offset),
                )),
                "timestamp" => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        rows.iter().map(|row| row.timestamp_ms.saturating_mul(1000)),
                    )
                    .with_data_type(field.data_type().clone()),
                ),
                "key" => Arc::new(LargeBinaryArray::from_iter(
                    rows.iter().map(|row| row.key.as_deref()),
                )),
                "value" => Arc::new(LargeBinaryArray::from_iter(
                    rows.iter().map(|row| row.value.as_deref()),
                )),
                "headers" => headers(field.data_type(), rows)?,
                other => {
                    return Err(arrow_schema::ArrowError::SchemaError(format!(
                        "no column {other} of a record"
                    ))
                    .into());
                }
            })
        })
        .collect()
}

/// The headers column: a list of (key, value) structs per row.
fn headers(data_type: &DataType, rows: &[Row]) -> Result<ArrayRef, TableError> {
    let DataType::List(element) = data_type else {
        return Err(
            arrow_schema::ArrowError::SchemaError("headers is not a list".to_owned()).into(),
        );
    };
    let DataType::Struct(fields) = element.data_type() else {
        return Err(
            arrow_schema::ArrowError::SchemaError("a header is not a struct".to_owned()).into(),
        );
    };
    let all = || rows.iter().flat_map(|row| row.headers.iter());
    let mut keys = StringBuilder::new();
    let mut values = LargeBinaryBuilder::new();
    for header in all() {
        keys.append_value(&header.key);
        values.append_option(header.value.as_deref());
    }
    let structs = StructArray::try_new(
        fields.clone(),
        vec![Arc::new(keys.finish()), Arc::new(values.finish())],
        None,
    )?;
    let offsets = OffsetBuffer::from_lengths(rows.iter().map(|row| row.headers.len()));
    Ok(Arc::new(ListArray::try_new(
        element.clone(),
        offsets,
        Arc::new(structs),
        None,
    )?))
}
