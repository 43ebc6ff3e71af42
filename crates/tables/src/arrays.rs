//! Data as Arrow columns of the table's types: whether a record's datum fits them
//! (a value that does not is the record's dead letter, with the reason), and the
//! arrays of the records that do.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array,
    Int64Array, LargeBinaryArray, LargeStringArray, ListArray, MapArray, StringArray, StructArray,
    Time64MicrosecondArray, TimestampMicrosecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{ArrowError, DataType, Fields, TimeUnit};

use crate::datum::Datum;

/// Whether `datum` fits a column of `data_type`; why not, naming the field at `path`.
pub(crate) fn fits(data_type: &DataType, datum: &Datum, path: &str) -> Result<(), String> {
    let wrong = || {
        Err(format!(
            "{path}: a {} does not fit a column of {data_type}",
            kind(datum)
        ))
    };
    match (data_type, datum) {
        (_, Datum::Null) | (DataType::Utf8 | DataType::LargeUtf8, _) => Ok(()),
        (DataType::Boolean, Datum::Bool(_))
        | (DataType::Int64 | DataType::Time64(_) | DataType::Timestamp(..), Datum::Long(_))
        | (DataType::Float32 | DataType::Float64, Datum::Double(_) | Datum::Long(_))
        | (DataType::Binary | DataType::LargeBinary, Datum::Bytes(_) | Datum::Text(_))
        | (DataType::Decimal128(..), Datum::Decimal(_)) => Ok(()),
        (DataType::Int32 | DataType::Date32, Datum::Long(n)) => {
            if i32::try_from(*n).is_ok() {
                Ok(())
            } else {
                Err(format!("{path}: {n} does not fit a column of {data_type}"))
            }
        }
        (DataType::List(element), Datum::List(items)) => items
            .iter()
            .try_for_each(|item| fits(element.data_type(), item, &format!("{path}[]"))),
        (DataType::Struct(fields), Datum::Fields(values)) => fields.iter().try_for_each(|field| {
            values.get(field.name()).map_or(Ok(()), |value| {
                fits(
                    field.data_type(),
                    value,
                    &format!("{path}.{}", field.name()),
                )
            })
        }),
        (DataType::Map(entries, _), Datum::Fields(values)) => {
            let DataType::Struct(pair) = entries.data_type() else {
                return wrong();
            };
            let value_type = pair.get(1).map(|field| field.data_type().clone());
            let Some(value_type) = value_type else {
                return wrong();
            };
            values
                .iter()
                .try_for_each(|(key, value)| fits(&value_type, value, &format!("{path}[{key}]")))
        }
        _ => wrong(),
    }
}

fn kind(datum: &Datum) -> &'static str {
    match datum {
        Datum::Null => "null",
        Datum::Bool(_) => "boolean",
        Datum::Long(_) => "integer",
        Datum::Double(_) => "number",
        Datum::Text(_) => "string",
        Datum::Bytes(_) => "byte string",
        Datum::Decimal(_) => "decimal",
        Datum::List(_) => "list",
        Datum::Fields(_) => "record",
    }
}

/// The column of `data_type` holding `values`, each of which [`fits`] it.
pub(crate) fn array(data_type: &DataType, values: &[&Datum]) -> Result<ArrayRef, ArrowError> {
    let long = |datum: &&Datum| match datum {
        Datum::Long(n) => Some(*n),
        _ => None,
    };
    let int = |datum: &&Datum| long(datum).and_then(|n| i32::try_from(n).ok());
    let double = |datum: &&Datum| match datum {
        Datum::Double(f) => Some(*f),
        #[allow(clippy::cast_precision_loss)]
        Datum::Long(n) => Some(*n as f64),
        _ => None,
    };
    let text = |datum: &&Datum| (!matches!(datum, Datum::Null)).then(|| datum.to_text());
    Ok(match data_type {
        DataType::Boolean => Arc::new(BooleanArray::from_iter(values.iter().map(|d| match d {
            Datum::Bool(b) => Some(*b),
            _ => None,
        }))),
        DataType::Int32 => Arc::new(Int32Array::from_iter(values.iter().map(int))),
        DataType::Int64 => Arc::new(Int64Array::from_iter(values.iter().map(long))),
        #[allow(clippy::cast_possible_truncation)]
        DataType::Float32 => Arc::new(Float32Array::from_iter(
            values.iter().map(|d| double(d).map(|f| f as f32)),
        )),
        DataType::Float64 => Arc::new(Float64Array::from_iter(values.iter().map(double))),
        DataType::Utf8 => Arc::new(StringArray::from_iter(values.iter().map(text))),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(values.iter().map(text))),
        DataType::Binary | DataType::LargeBinary => {
            let bytes = values.iter().map(|d| match d {
                Datum::Bytes(bytes) => Some(bytes.as_slice()),
                Datum::Text(text) => Some(text.as_bytes()),
                _ => None,
            });
            let array: ArrayRef = Arc::new(LargeBinaryArray::from_iter(bytes));
            if matches!(data_type, DataType::Binary) {
                arrow_cast_binary(&array)?
            } else {
                array
            }
        }
        DataType::Date32 => Arc::new(Date32Array::from_iter(values.iter().map(int))),
        DataType::Time64(TimeUnit::Microsecond) => {
            Arc::new(Time64MicrosecondArray::from_iter(values.iter().map(long)))
        }
        DataType::Timestamp(TimeUnit::Microsecond, zone) => Arc::new(
            TimestampMicrosecondArray::from_iter(values.iter().map(long))
                .with_timezone_opt(zone.clone()),
        ),
        DataType::Decimal128(precision, scale) => {
            let unscaled = values.iter().map(|d| match d {
                Datum::Decimal(n) => Some(*n),
                _ => None,
            });
            Arc::new(
                Decimal128Array::from_iter(unscaled)
                    .with_precision_and_scale(*precision, *scale)?,
            )
        }
        DataType::List(element) => {
            let items: Vec<&Datum> = values
                .iter()
                .flat_map(|d| match d {
                    Datum::List(items) => items.iter().collect(),
                    _ => Vec::new(),
                })
                .collect();
            let lengths = values.iter().map(|d| match d {
                Datum::List(items) => items.len(),
                _ => 0,
            });
            Arc::new(ListArray::try_new(
                element.clone(),
                OffsetBuffer::from_lengths(lengths),
                array(element.data_type(), &items)?,
                nulls(values),
            )?)
        }
        DataType::Struct(fields) => struct_array(fields, values)?,
        DataType::Map(entries, sorted) => {
            let DataType::Struct(pair) = entries.data_type() else {
                return Err(ArrowError::SchemaError(format!("{data_type}: no entries")));
            };
            let mut keys: Vec<Datum> = Vec::new();
            let mut items: Vec<&Datum> = Vec::new();
            let mut lengths = Vec::with_capacity(values.len());
            for value in values {
                let Datum::Fields(map) = value else {
                    lengths.push(0);
                    continue;
                };
                lengths.push(map.len());
                for (key, item) in map {
                    keys.push(Datum::Text(key.clone()));
                    items.push(item);
                }
            }
            let key_refs: Vec<&Datum> = keys.iter().collect();
            let (key_field, value_field) = match (pair.first(), pair.get(1)) {
                (Some(key), Some(value)) => (key, value),
                _ => return Err(ArrowError::SchemaError(format!("{data_type}: no entries"))),
            };
            let entries_array = StructArray::try_new(
                pair.clone(),
                vec![
                    array(key_field.data_type(), &key_refs)?,
                    array(value_field.data_type(), &items)?,
                ],
                None,
            )?;
            Arc::new(MapArray::try_new(
                entries.clone(),
                OffsetBuffer::from_lengths(lengths),
                entries_array,
                nulls(values),
                *sorted,
            )?)
        }
        other => {
            return Err(ArrowError::NotYetImplemented(format!("columns of {other}")));
        }
    })
}

/// A struct column of `fields` from records (a field a record lacks is null).
pub(crate) fn struct_array(fields: &Fields, values: &[&Datum]) -> Result<ArrayRef, ArrowError> {
    let null = Datum::Null;
    let children = fields
        .iter()
        .map(|field| {
            let of_field: Vec<&Datum> = values
                .iter()
                .map(|d| match d {
                    Datum::Fields(map) => map.get(field.name()).unwrap_or(&null),
                    _ => &null,
                })
                .collect();
            array(field.data_type(), &of_field)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if fields.is_empty() {
        return Ok(Arc::new(StructArray::new_empty_fields(
            values.len(),
            nulls(values),
        )));
    }
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        children,
        nulls(values),
    )?))
}

/// Which of `values` are present (`None` when all are).
fn nulls(values: &[&Datum]) -> Option<NullBuffer> {
    let present: Vec<bool> = values.iter().map(|d| !matches!(d, Datum::Null)).collect();
    if present.iter().all(|p| *p) {
        None
    } else {
        Some(NullBuffer::from(present))
    }
}

fn arrow_cast_binary(array: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    use arrow_array::Array;
    let large = array
        .as_any()
        .downcast_ref::<LargeBinaryArray>()
        .ok_or_else(|| ArrowError::CastError("not binary".to_owned()))?;
    Ok(Arc::new(arrow_array::BinaryArray::from_iter(large.iter())))
}
