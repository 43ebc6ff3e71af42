//! Broker-side schema validation (`confluent.value.schema.validation`,
//! `confluent.key.schema.validation`, Confluent Server's names): each produced
//! record's value (key) must start with Confluent's magic byte and the id of a schema
//! registered under the topic's subject (`{topic}-value`, `{topic}-key`:
//! TopicNameStrategy). A batch with a record that does not is refused whole with
//! `INVALID_RECORD`, naming each such record (KIP-467). Null values and keys pass:
//! a tombstone carries no schema.
//!
//! The ids of each subject are cached: an id the cache does not know rereads the
//! subject from the metadata store (at most every [`REREAD_AFTER`]), so an id another
//! broker registered a moment ago is known at its first record; a version deleted
//! stops validating within [`FRESH_FOR`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spool_metadata::MetadataStore;
use spool_protocol::keyed::{BatchRecords, KeyedRecord};

/// How long a subject's ids are trusted without reading the store again.
const FRESH_FOR: Duration = Duration::from_secs(30);
/// The least time between two reads of one subject for unknown ids (a producer
/// sending bad ids does not turn into a stream of store reads).
const REREAD_AFTER: Duration = Duration::from_millis(200);
/// Confluent's wire format: magic byte 0, then the schema id (4 bytes, big-endian).
const MAGIC_BYTE: u8 = 0;

/// Which parts of a topic's records must carry a registered schema id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SchemaValidation {
    pub(crate) key: bool,
    pub(crate) value: bool,
}

impl SchemaValidation {
    pub(crate) fn any(self) -> bool {
        self.key || self.value
    }
}

/// Why a record was refused, or that the store could not be read.
#[derive(Debug)]
pub(crate) enum Invalid {
    /// (index of the record in its batch, why).
    Records(Vec<(usize, String)>),
    /// The batch's records do not parse.
    Corrupt,
    /// The metadata store did not answer: retriable.
    StoreUnavailable,
}

/// The schema ids registered under each subject, as last read from the store.
#[derive(Debug)]
pub(crate) struct SchemaIds {
    store: Arc<dyn MetadataStore>,
    subjects: Mutex<HashMap<String, Known>>,
}

#[derive(Debug, Clone)]
struct Known {
    ids: Arc<HashSet<i32>>,
    read_at: Instant,
}

impl SchemaIds {
    pub(crate) fn new(store: Arc<dyn MetadataStore>) -> SchemaIds {
        SchemaIds {
            store,
            subjects: Mutex::new(HashMap::new()),
        }
    }

    /// Checks every record of `records` (a batch's, inflated) of `topic`. Blocking:
    /// an unknown id reads the store (from the blocking pool).
    pub(crate) fn check(
        &self,
        topic: &str,
        validation: SchemaValidation,
        records: &BatchRecords,
    ) -> Result<(), Invalid> {
        let records = records.records().map_err(|_| Invalid::Corrupt)?;
        let mut refused = Vec::new();
        for (part, on, subject) in [
            ("value", validation.value, format!("{topic}-value")),
            ("key", validation.key, format!("{topic}-key")),
        ] {
            if !on {
                continue;
            }
            let mut known = self.ids(&subject, false)?;
            for (index, record) in records.iter().enumerate() {
                let Some(bytes) = part_of(record, part) else {
                    continue;
                };
                let problem = match schema_id(bytes) {
                    None => Some(format!(
                        "the record's {part} does not start with a schema id (magic byte 0, then 4 bytes)"
                    )),
                    Some(id) if known.contains(&id) => None,
                    Some(id) => {
                        known = self.ids(&subject, true)?;
                        (!known.contains(&id)).then(|| {
                            format!("schema id {id} of the record's {part} is not registered under subject {subject}")
                        })
                    }
                };
                if let Some(problem) = problem {
                    refused.push((index, problem));
                }
            }
        }
        if refused.is_empty() {
            Ok(())
        } else {
            refused.sort_by_key(|(index, _)| *index);
            Err(Invalid::Records(refused))
        }
    }

    /// The ids of `subject`'s live versions: cached, or read from the store when
    /// stale (or, with `missed`, when an id was not among them and the last read is
    /// not too recent).
    fn ids(&self, subject: &str, missed: bool) -> Result<Arc<HashSet<i32>>, Invalid> {
        let cached = self.cache().get(subject).cloned();
        if let Some(known) = &cached {
            let age = known.read_at.elapsed();
            if age < FRESH_FOR && (!missed || age < REREAD_AFTER) {
                return Ok(known.ids.clone());
            }
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(cached.map(|known| known.ids).unwrap_or_default());
        };
        let versions = runtime
            .block_on(self.store.subject_versions(Some(subject)))
            .map_err(|error| {
                tracing::warn!(%subject, %error, "cannot read a subject's schema ids to validate records");
                Invalid::StoreUnavailable
            })?;
        let ids: Arc<HashSet<i32>> = Arc::new(
            versions
                .into_iter()
                .filter(|version| !version.deleted)
                .map(|version| version.schema_id)
                .collect(),
        );
        self.cache().insert(
            subject.to_owned(),
            Known {
                ids: ids.clone(),
                read_at: Instant::now(),
            },
        );
        Ok(ids)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.subjects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn part_of<'a>(record: &KeyedRecord<'a>, part: &str) -> Option<&'a [u8]> {
    if part == "value" {
        record.value
    } else {
        record.key
    }
}

/// The schema id after the magic byte, if the bytes start with one.
fn schema_id(bytes: &[u8]) -> Option<i32> {
    match bytes {
        [MAGIC_BYTE, a, b, c, d, ..] => Some(i32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_follows_the_magic_byte() {
        assert_eq!(schema_id(&[0, 0, 0, 1, 2, 9, 9]), Some(258));
        assert_eq!(schema_id(&[0, 0, 0, 1]), None, "too short");
        assert_eq!(schema_id(&[1, 0, 0, 0, 1]), None, "another magic byte");
        assert_eq!(schema_id(b"plain text"), None);
    }
}
