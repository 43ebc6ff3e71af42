//! A record's value as the table's columns take it: a tree of plain values, made
//! from an Avro datum (decoded with the writer's schema, resolved to the table's) or
//! a JSON document, whichever format the topic's subject has.

use std::collections::BTreeMap;

/// A value of a field.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    /// Integers; also dates (days), times and timestamps (microseconds).
    Long(i64),
    Double(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// A decimal's unscaled value.
    Decimal(i128),
    List(Vec<Datum>),
    /// A map's entries, or a record's fields, by name.
    Fields(BTreeMap<String, Datum>),
}

impl Datum {
    /// An Avro value (resolved to the table's schema) as a datum: times and
    /// timestamps in microseconds, dates in days.
    pub fn from_avro(value: apache_avro::types::Value) -> Datum {
        use apache_avro::types::Value;
        match value {
            Value::Null => Datum::Null,
            Value::Boolean(b) => Datum::Bool(b),
            Value::Int(n) | Value::Date(n) => Datum::Long(i64::from(n)),
            Value::TimeMillis(ms) => Datum::Long(i64::from(ms) * 1000),
            Value::Long(n)
            | Value::TimeMicros(n)
            | Value::TimestampMicros(n)
            | Value::LocalTimestampMicros(n) => Datum::Long(n),
            Value::TimestampMillis(ms) | Value::LocalTimestampMillis(ms) => {
                Datum::Long(ms.saturating_mul(1000))
            }
            Value::TimestampNanos(ns) | Value::LocalTimestampNanos(ns) => Datum::Long(ns / 1000),
            Value::Float(f) => Datum::Double(f64::from(f)),
            Value::Double(f) => Datum::Double(f),
            Value::Bytes(bytes) | Value::Fixed(_, bytes) => Datum::Bytes(bytes),
            Value::String(text) | Value::Enum(_, text) => Datum::Text(text),
            Value::Uuid(uuid) => Datum::Text(uuid.to_string()),
            Value::BigDecimal(decimal) => Datum::Text(decimal.to_string()),
            Value::Duration(duration) => Datum::Bytes(<[u8; 12]>::from(duration).to_vec()),
            Value::Decimal(decimal) => Vec::<u8>::try_from(&decimal)
                .ok()
                .and_then(|bytes| unscaled(&bytes))
                .map_or(Datum::Null, Datum::Decimal),
            Value::Union(_, inner) => Datum::from_avro(*inner),
            Value::Array(items) => Datum::List(items.into_iter().map(Datum::from_avro).collect()),
            Value::Map(entries) => Datum::Fields(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, Datum::from_avro(value)))
                    .collect(),
            ),
            Value::Record(fields) => Datum::Fields(
                fields
                    .into_iter()
                    .map(|(name, value)| (name, Datum::from_avro(value)))
                    .collect(),
            ),
        }
    }

    /// An Avro value's bytes (no framing) written with `written`, read as `read`.
    pub fn decode_avro(
        written: &apache_avro::Schema,
        read: &apache_avro::Schema,
        mut body: &[u8],
    ) -> Result<Datum, String> {
        apache_avro::from_avro_datum(written, &mut body, Some(read))
            .map(Datum::from_avro)
            .map_err(|e| e.to_string())
    }

    /// A JSON value as a datum.
    pub fn from_json(value: serde_json::Value) -> Datum {
        use serde_json::Value;
        match value {
            Value::Null => Datum::Null,
            Value::Bool(b) => Datum::Bool(b),
            Value::Number(number) => match number.as_i64() {
                Some(n) => Datum::Long(n),
                None => Datum::Double(number.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => Datum::Text(text),
            Value::Array(items) => Datum::List(items.into_iter().map(Datum::from_json).collect()),
            Value::Object(fields) => Datum::Fields(
                fields
                    .into_iter()
                    .map(|(name, value)| (name, Datum::from_json(value)))
                    .collect(),
            ),
        }
    }

    /// The datum as text, for a column of text that takes values of several types
    /// (an Avro union of several, a JSON Schema alternative): JSON for the others.
    pub(crate) fn to_text(&self) -> String {
        match self {
            Datum::Text(text) => text.clone(),
            other => other.to_json().to_string(),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Datum::Null => Value::Null,
            Datum::Bool(b) => Value::Bool(*b),
            Datum::Long(n) => Value::from(*n),
            Datum::Double(f) => Value::from(*f),
            Datum::Text(text) => Value::from(text.as_str()),
            Datum::Bytes(bytes) => Value::from(String::from_utf8_lossy(bytes).into_owned()),
            Datum::Decimal(n) => Value::from(n.to_string()),
            Datum::List(items) => Value::Array(items.iter().map(Datum::to_json).collect()),
            Datum::Fields(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(name, value)| (name.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A big-endian two's complement integer (an Avro decimal's bytes) of at most 16
/// bytes.
fn unscaled(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let negative = bytes[0] & 0x80 != 0;
    let mut full = [if negative { 0xff } else { 0 }; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_their_sign_and_times_become_microseconds() {
        assert_eq!(unscaled(&[0xff, 0x38]), Some(-200));
        assert_eq!(unscaled(&[0x01, 0x00]), Some(256));
        assert_eq!(unscaled(&[0; 17]), None);
        use apache_avro::types::Value;
        assert_eq!(
            Datum::from_avro(Value::TimestampMillis(1_500)),
            Datum::Long(1_500_000)
        );
        assert_eq!(
            Datum::from_avro(Value::Union(1, Box::new(Value::String("x".to_owned())))),
            Datum::Text("x".to_owned())
        );
        assert_eq!(
            Datum::from_json(serde_json::json!({"a": [1, 2.5, null]})).to_text(),
            r#"{"a":[1,2.5,null]}"#
        );
    }
}
