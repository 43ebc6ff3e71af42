//! Avro schemas, through `apache-avro` (the Apache project's Rust implementation):
//! parsed (and so validated) with their references; compatibility is the
//! specification's reader/writer resolution. The canonical text is the client's JSON
//! written out compactly with its attributes in one order: whitespace and attribute
//! order no longer matter, and nothing the client wrote (docs, defaults, custom
//! properties) is lost — `apache-avro`'s own serialization drops some of them.

use apache_avro::Schema;
use apache_avro::schema_compatibility::SchemaCompatibility;

use crate::error::RegistryError;

/// A parsed Avro schema.
#[derive(Debug, Clone)]
pub(crate) struct AvroSchema {
    schema: Schema,
    canonical: String,
}

impl AvroSchema {
    pub(crate) fn parse(text: &str, references: &[&str]) -> Result<AvroSchema, RegistryError> {
        let invalid = |error: &dyn std::fmt::Display| {
            RegistryError::InvalidSchema(format!("Invalid schema {text}: {error}"))
        };
        let schema = if references.is_empty() {
            Schema::parse_str(text).map_err(|e| invalid(&e))?
        } else {
            let mut texts = references.to_vec();
            texts.push(text);
            Schema::parse_list(texts)
                .map_err(|e| invalid(&e))?
                .pop()
                .ok_or_else(|| invalid(&"nothing parsed"))?
        };
        let canonical = serde_json::from_str::<serde_json::Value>(text)
            .and_then(|json| serde_json::to_string(&json))
            .map_err(|e| invalid(&e))?;
        Ok(AvroSchema { schema, canonical })
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
}
