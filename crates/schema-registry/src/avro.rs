//! Avro schemas, through `apache-avro` (the Apache project's Rust implementation):
//! parsed (and so validated) with their references; compatibility is the
//! specification's reader/writer resolution. The canonical text is the client's JSON
//! written out compactly with its attributes in one order: whitespace and attribute
//! order no longer matter, and nothing the client wrote (docs, defaults, custom
//! properties) is lost — `apache-avro`'s own serialization drops some of them.
//! A value written with a schema is read as a JSON document (for the message index's
//! `value:` fields).

use apache_avro::Schema;
use apache_avro::schema_compatibility::SchemaCompatibility;
use apache_avro::types::Value;

use crate::error::RegistryError;

/// A parsed Avro schema.
#[derive(Debug, Clone)]
pub(crate) struct AvroSchema {
    schema: Schema,
    /// The schemas it refers to, parsed with it: a value's decoder looks names up
    /// in them.
    referenced: Vec<Schema>,
    canonical: String,
}

impl AvroSchema {
    pub(crate) fn parse(text: &str, references: &[&str]) -> Result<AvroSchema, RegistryError> {
        let invalid = |error: &dyn std::fmt::Display| {
            RegistryError::InvalidSchema(format!("Invalid schema {text}: {error}"))
        };
        let (schema, referenced) = if references.is_empty() {
            (
                Schema::parse_str(text).map_err(|e| invalid(&e))?,
                Vec::new(),
            )
        } else {
            let mut texts = references.to_vec();
            texts.push(text);
            let mut parsed = Schema::parse_list(texts).map_err(|e| invalid(&e))?;
            let schema = parsed.pop().ok_or_else(|| invalid(&"nothing parsed"))?;
            (schema, parsed)
        };
        let canonical = serde_json::from_str::<serde_json::Value>(text)
            .and_then(|json| serde_json::to_string(&json))
            .map_err(|e| invalid(&e))?;
        Ok(AvroSchema {
            schema,
            referenced,
            canonical,
        })
    }

    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }

    pub(crate) fn canonical(&self) -> &str {
        &self.canonical
    }

    pub(crate) fn reads(&self, writer: &AvroSchema) -> Result<(), String> {
        SchemaCompatibility::can_read(&writer.schema, &self.schema)
            .map_err(|error| error.to_string())
    }

    /// A value written with this schema (Avro's binary encoding, no framing) as a
    /// JSON document: records and maps as objects, arrays as arrays, a union as its
    /// branch, an enum as its symbol, numbers (dates and times too) as numbers,
    /// strings and UUIDs as strings. Bytes, fixed, decimals, durations and floats
    /// that are not finite have no JSON form here and are null.
    pub(crate) fn document(&self, mut body: &[u8]) -> Result<serde_json::Value, String> {
        let value = if self.referenced.is_empty() {
            apache_avro::from_avro_datum(&self.schema, &mut body, None)
        } else {
            let mut schemata: Vec<&Schema> = self.referenced.iter().collect();
            schemata.push(&self.schema);
            apache_avro::from_avro_datum_schemata(&self.schema, schemata, &mut body, None)
        };
        value.map(json_of).map_err(|error| error.to_string())
    }
}

fn json_of(value: Value) -> serde_json::Value {
    use serde_json::Value as Json;
    let number = |n: i64| Json::Number(n.into());
    match value {
        Value::Boolean(b) => Json::Bool(b),
        Value::Int(n) | Value::Date(n) | Value::TimeMillis(n) => number(i64::from(n)),
        Value::Long(n)
        | Value::TimeMicros(n)
        | Value::TimestampMillis(n)
        | Value::TimestampMicros(n)
        | Value::TimestampNanos(n)
        | Value::LocalTimestampMillis(n)
        | Value::LocalTimestampMicros(n)
        | Value::LocalTimestampNanos(n) => number(n),
        // A float as it prints (0.1, not the 0.10000000149011612 of its f64).
        Value::Float(f) => float(f.to_string().parse().unwrap_or(f64::NAN)),
        Value::Double(f) => float(f),
        Value::String(text) | Value::Enum(_, text) => Json::String(text),
        Value::Uuid(uuid) => Json::String(uuid.to_string()),
        Value::Union(_, inner) => json_of(*inner),
        Value::Array(items) => Json::Array(items.into_iter().map(json_of).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .into_iter()
                .map(|(key, value)| (key, json_of(value)))
                .collect(),
        ),
        Value::Record(fields) => Json::Object(
            fields
                .into_iter()
                .map(|(name, value)| (name, json_of(value)))
                .collect(),
        ),
        Value::Null
        | Value::Bytes(_)
        | Value::Fixed(..)
        | Value::Decimal(_)
        | Value::BigDecimal(_)
        | Value::Duration(_) => Json::Null,
    }
}

fn float(f: f64) -> serde_json::Value {
    serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_schema_written_differently_has_one_canonical_text() {
        let one = AvroSchema::parse(
            r#"{"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"}]}"#,
            &[],
        )
        .unwrap();
        let two = AvroSchema::parse(
            r#"{"fields":[{"type":"long","name":"id"}],"name":"User","type":"record"}"#,
            &[],
        )
        .unwrap();
        assert_eq!(one.canonical(), two.canonical());
        let other = AvroSchema::parse(
            r#"{"type":"record","name":"User","fields":[{"name":"id","type":"int"}]}"#,
            &[],
        )
        .unwrap();
        assert_ne!(one.canonical(), other.canonical());
        // What only a doc tells apart is two schemas, and the doc is kept.
        let documented = AvroSchema::parse(
            r#"{"type":"record","name":"User","doc":"a user","fields":[{"name":"id","type":"long"}]}"#,
            &[],
        )
        .unwrap();
        assert_ne!(one.canonical(), documented.canonical());
        assert!(documented.canonical().contains("a user"));
    }

    #[test]
    fn a_bad_schema_is_refused_as_confluent_refuses_it() {
        let error = AvroSchema::parse(r#"{"type":"record","name":"X"}"#, &[]).unwrap_err();
        assert_eq!(error.error_code(), 42201, "{error}");
        assert!(AvroSchema::parse("not json", &[]).is_err());
    }

    #[test]
    fn a_schema_reads_through_its_references() {
        let address = r#"{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}"#;
        let order = r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"to","type":"shop.Address"}]}"#;
        let parsed = AvroSchema::parse(order, &[address]).unwrap();
        assert!(parsed.canonical().contains("Order"));
        assert!(AvroSchema::parse(order, &[]).is_err(), "Address unknown");
    }

    #[test]
    fn a_value_reads_as_a_json_document_through_its_references() {
        let address = r#"{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}"#;
        let order = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
            {"name":"id","type":"long"},
            {"name":"to","type":"shop.Address"},
            {"name":"note","type":["null","string"]},
            {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}},
            {"name":"weight","type":"float"},
            {"name":"tags","type":{"type":"array","items":"string"}},
            {"name":"raw","type":"bytes"}]}"#;
        let parsed = AvroSchema::parse(order, &[address]).unwrap();
        // id 42 (zigzag 84), "Oslo", the union's branch 1 "hi", PAID, 0.5f32,
        // ["a"], bytes [7].
        let mut body = vec![84, 8];
        body.extend_from_slice(b"Oslo");
        body.extend_from_slice(&[2, 4]);
        body.extend_from_slice(b"hi");
        body.push(2);
        body.extend_from_slice(&0.5_f32.to_le_bytes());
        body.extend_from_slice(&[2, 2, b'a', 0, 2, 7]);
        let document = parsed.document(&body).unwrap();
        assert_eq!(
            document,
            serde_json::json!({"id": 42, "to": {"city": "Oslo"}, "note": "hi",
                "state": "PAID", "weight": 0.5, "tags": ["a"], "raw": null})
        );
        assert!(parsed.document(&body[..3]).is_err(), "cut short");
    }
}
