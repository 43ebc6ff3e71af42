//! The `key_value` table: a record's partition, offset, timestamp, key, value and
//! headers, as columns any engine reads without knowing the records' format.

use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, Int32Array, Int64Array, LargeBinaryArray, ListArray, RecordBatch, StructArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, SchemaRef};
use iceberg::spec::{ListType, NestedField, PrimitiveType, Schema, StructType, Type};

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
    let primitive = Type::Primitive;
    let header = StructType::new(vec![
        NestedField::required(8, "key", primitive(PrimitiveType::String)).into(),
        NestedField::optional(9, "value", primitive(PrimitiveType::Binary)).into(),
    ]);
    let headers = ListType::new(NestedField::list_element(7, Type::Struct(header), true).into());
    Ok(Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "partition", primitive(PrimitiveType::Int)).into(),
            NestedField::required(2, "offset", primitive(PrimitiveType::Long)).into(),
            NestedField::required(3, "timestamp", primitive(PrimitiveType::Timestamptz)).into(),
            NestedField::optional(4, "key", primitive(PrimitiveType::Binary)).into(),
            NestedField::optional(5, "value", primitive(PrimitiveType::Binary)).into(),
            NestedField::required(6, "headers", Type::List(headers)).into(),
        ])
        .build()?)
}

/// `rows` as a batch of `schema` (the table's schema in Arrow's terms, field ids kept).
pub(crate) fn to_batch(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch, TableError> {
    let timestamp_type = schema.field(2).data_type().clone();
    let timestamps = TimestampMicrosecondArray::from_iter_values(
        rows.iter().map(|row| row.timestamp_ms.saturating_mul(1000)),
    )
    .with_data_type(timestamp_type);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(
            rows.iter().map(|row| row.partition),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|row| row.offset),
        )),
        Arc::new(timestamps),
        Arc::new(LargeBinaryArray::from_iter(
            rows.iter().map(|row| row.key.as_deref()),
        )),
        Arc::new(LargeBinaryArray::from_iter(
            rows.iter().map(|row| row.value.as_deref()),
        )),
        headers(schema, rows)?,
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// The headers column: a list of (key, value) structs per row.
fn headers(schema: &SchemaRef, rows: &[Row]) -> Result<ArrayRef, TableError> {
    let DataType::List(element) = schema.field(5).data_type() else {
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
