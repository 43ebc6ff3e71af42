//! A `registry` table's values: the latest schema of the subject `TOPIC-value` (the
//! table's columns follow it), and each record's value decoded with the schema its
//! id names (Confluent's framing: magic byte 0, the id in four bytes), resolved to
//! the latest (Avro) or read as JSON (JSON Schema). A value that does not decode is
//! a dead letter, with the reason.

use std::collections::HashMap;
use std::sync::Arc;

use spool_metadata::MetadataStore;
use spool_schema_registry::{ParsedSchema, Registry, RegistryError, SchemaType, VersionSpec};
use spool_tables::{Datum, Row, ValueSchema};

/// The registry's view of one table topic's values.
pub(super) struct Values {
    registry: Arc<Registry<dyn MetadataStore>>,
    /// The latest schema of the subject: the table's columns.
    pub(super) latest: ParsedSchema,
    /// Writers' schemas met, by id.
    writers: HashMap<i32, ParsedSchema>,
}

impl Values {
    /// The latest schema of `topic`'s value subject; `None` while the subject has
    /// none (the table waits for its first schema).
    pub(super) async fn latest(
        registry: &Arc<Registry<dyn MetadataStore>>,
        topic: &str,
    ) -> Result<Option<Values>, String> {
        let subject = format!("{topic}-value");
        let version = match registry.version(&subject, VersionSpec::Latest, false).await {
            Ok(version) => version,
            Err(RegistryError::SubjectNotFound(_)) => return Ok(None),
            Err(error) => {
                return Err(format!(
                    "table.schema=registry: the subject {subject}: {error}"
                ));
            }
        };
        let latest = registry
            .parsed(version.schema.id)
            .await
            .map_err(|e| format!("the subject {subject}: {e}"))?;
        if latest.schema_type() == SchemaType::Protobuf {
            return Err(format!(
                "table.schema=registry reads Avro and JSON Schema subjects; {subject} is Protobuf"
            ));
        }
        Ok(Some(Values {
            registry: registry.clone(),
            latest,
            writers: HashMap::new(),
        }))
    }

    /// The latest schema as the table's columns see it.
    pub(super) fn schema(&self) -> Option<ValueSchema<'_>> {
        match (self.latest.avro(), self.latest.json_document()) {
            (Some(avro), _) => Some(ValueSchema::Avro(avro)),
            (None, Some(json)) => Some(ValueSchema::Json(json)),
            (None, None) => None,
        }
    }

    /// Each row's value decoded (or why it could not be).
    pub(super) async fn decode(&mut self, rows: &[Row]) -> Vec<Result<Datum, String>> {
        for row in rows {
            if let Some(id) = row.value.as_deref().and_then(schema_id)
                && !self.writers.contains_key(&id)
                && let Ok(parsed) = self.registry.parsed(id).await
            {
                self.writers.insert(id, parsed);
            }
        }
        rows.iter()
            .map(|row| self.decode_one(row.value.as_deref()))
            .collect()
    }

    fn decode_one(&self, value: Option<&[u8]>) -> Result<Datum, String> {
        let Some(value) = value else {
            return Ok(Datum::Null);
        };
        let id = schema_id(value)
            .ok_or("the value does not start with a schema id (magic byte 0 and four bytes)")?;
        let writer = self
            .writers
            .get(&id)
            .ok_or_else(|| format!("schema id {id} is not in the registry"))?;
        let body = value.get(5..).unwrap_or_default();
        match (
            writer.avro(),
            self.latest.avro(),
            self.latest.json_document(),
        ) {
            (Some(written), Some(read), _) => {
                Datum::decode_avro(written, read, body).map_err(|e| {
                    format!("the value does not decode with schema {id} read as the latest: {e}")
                })
            }
            (None, None, Some(_)) if writer.json_document().is_some() => {
                let json: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| format!("the value is not JSON: {e}"))?;
                Ok(Datum::from_json(json))
            }
            _ => Err(format!(
                "schema id {id} is a {} schema, the subject's latest a {} one",
                writer.schema_type().name(),
                self.latest.schema_type().name()
            )),
        }
    }
}

/// The schema id a value in Confluent's framing starts with.
fn schema_id(value: &[u8]) -> Option<i32> {
    match value {
        [0, a, b, c, d, ..] => Some(i32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}
