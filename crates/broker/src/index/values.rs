//! Record values as the index's `value:` fields read them. A value in the schema
//! registry's framing (a zero byte, then a schema id in four bytes) whose schema the
//! registry has is decoded with that schema — Avro, Protobuf or JSON Schema — into
//! the document the field's path walks; any other value is read as JSON
//! (`spool_index::JsonValues`). A build and a search read values alike, so a search
//! finds what the index took.
//!
//! Schemas are read from the registry once per id and kept: an id always names the
//! same schema. An id the registry does not have is read as JSON and asked again
//! after a minute (a value that only looks framed costs a lookup per distinct id, the
//! last [`MAX_UNKNOWN`] remembered). When the registry cannot be read, the record is
//! not taken (`IndexError::Unread`): its build round or search fails and is tried
//! again, rather than leaving it out of the index.
//!
//! Values are read on the blocking pool (builds and searches walk batches there): a
//! schema not yet kept is read there by blocking on the runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use spool_index::{IndexError, JsonValues, ValueReader};
use spool_metadata::MetadataStore;
use spool_schema_registry::{ParsedSchema, Registry, RegistryError};

/// How long an id the registry did not have is read as JSON before it is asked again.
const UNKNOWN_FOR: Duration = Duration::from_secs(60);
/// The most unknown ids remembered.
const MAX_UNKNOWN: usize = 4096;

/// The registry's schemas, kept by id, for reading values.
pub(crate) struct RegisteredValues {
    registry: Registry<dyn MetadataStore>,
    runtime: tokio::runtime::Handle,
    known: Mutex<HashMap<i32, Arc<ParsedSchema>>>,
    /// Ids the registry did not have, and when it was asked.
    unknown: Mutex<HashMap<i32, Instant>>,
}

impl std::fmt::Debug for RegisteredValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredValues").finish_non_exhaustive()
    }
}

impl RegisteredValues {
    /// Reads schemas from `metadata`'s registry through `runtime`.
    pub(crate) fn new(
        metadata: Arc<dyn MetadataStore>,
        runtime: tokio::runtime::Handle,
    ) -> RegisteredValues {
        RegisteredValues {
            registry: Registry::new(metadata),
            runtime,
            known: Mutex::new(HashMap::new()),
            unknown: Mutex::new(HashMap::new()),
        }
    }

    /// Schema `id`, if the registry has it.
    fn schema(&self, id: i32) -> Result<Option<Arc<ParsedSchema>>, IndexError> {
        if let Some(schema) = lock(&self.known).get(&id) {
            return Ok(Some(schema.clone()));
        }
        if lock(&self.unknown)
            .get(&id)
            .is_some_and(|asked| asked.elapsed() < UNKNOWN_FOR)
        {
            return Ok(None);
        }
        match self.runtime.block_on(self.registry.parsed(id)) {
            Ok(parsed) => {
                let parsed = Arc::new(parsed);
                lock(&self.known).insert(id, parsed.clone());
                Ok(Some(parsed))
            }
            Err(RegistryError::SchemaNotFound(_)) => {
                let mut unknown = lock(&self.unknown);
                if unknown.len() >= MAX_UNKNOWN {
                    unknown.clear();
                }
                unknown.insert(id, Instant::now());
                Ok(None)
            }
            Err(error) => Err(IndexError::Unread(format!("schema {id}: {error}"))),
        }
    }
}

impl ValueReader for RegisteredValues {
    fn document(&self, value: &[u8]) -> Result<Option<Value>, IndexError> {
        let [0, a, b, c, d, body @ ..] = value else {
            return JsonValues.document(value);
        };
        match self.schema(i32::from_be_bytes([*a, *b, *c, *d]))? {
            // A value its schema does not decode has no document.
            Some(schema) => Ok(schema.value_document(body).ok()),
            None => JsonValues.document(value),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use spool_metadata::{FaultyMetadata, SqliteStore};
    use spool_schema_registry::{NewSchema, SchemaType};

    use super::*;

    const ORDER: &str =
        r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;

    fn framed(id: i32, body: &[u8]) -> Vec<u8> {
        [&[0][..], &id.to_be_bytes(), body].concat()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn registered_values_decode_unknown_ids_read_as_json_and_an_absent_registry_fails() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn MetadataStore> = Arc::new(
            SqliteStore::open(&dir.path().join("meta.db"))
                .await
                .unwrap(),
        );
        let faulty = Arc::new(FaultyMetadata::new(store));
        let registry: Registry<dyn MetadataStore> = Registry::new(faulty.clone());
        let new = NewSchema {
            schema: ORDER.to_owned(),
            schema_type: SchemaType::Avro,
            references: Vec::new(),
        };
        let id = registry
            .register("orders-value", &new)
            .await
            .unwrap()
            .schema
            .id;
        let values = Arc::new(RegisteredValues::new(
            faulty.clone(),
            tokio::runtime::Handle::current(),
        ));
        // Readers run on the blocking pool, as builds and searches do.
        let read = |value: Vec<u8>| {
            let values = values.clone();
            tokio::task::spawn_blocking(move || values.document(&value))
        };
        // The Avro string "a7": length 2 (zigzag 4), then its bytes.
        let avro = framed(id, b"\x04a7");
        assert_eq!(
            read(avro.clone()).await.unwrap(),
            Ok(Some(serde_json::json!({"id": "a7"})))
        );
        // An id the registry does not have: the JSON after the framing.
        let json = framed(id + 100, br#"{"id": "j1"}"#);
        assert_eq!(
            read(json).await.unwrap(),
            Ok(Some(serde_json::json!({"id": "j1"})))
        );
        assert_eq!(read(b"not json".to_vec()).await.unwrap(), Ok(None));
        // While the registry cannot be read: a kept schema still decodes, a new id
        // fails (the record is read again later), and is not taken for unknown.
        faulty.set_down(true);
        assert!(read(avro).await.unwrap().is_ok_and(|doc| doc.is_some()));
        let new_id = framed(id + 1, b"\x02x");
        assert!(matches!(
            read(new_id.clone()).await.unwrap(),
            Err(IndexError::Unread(_))
        ));
        faulty.set_down(false);
        assert_eq!(
            read(new_id).await.unwrap(),
            Ok(None),
            "not JSON, not registered"
        );
    }
}
