//! Broker-side schema validation (`confluent.value.schema.validation`,
//! `confluent.key.schema.validation`, Confluent Server's names): each produced
//! record's value (key) must start with Confluent's magic byte and the id of a schema
//! registered under the topic's subject (`{topic}-value`, `{topic}-key`:
//! TopicNameStrategy). A batch with a record that does not is refused whole with
//! `INVALID_RECORD`, naming each such record (KIP-467). Null values and keys pass:
//! a tombstone carries no schema.
//!
//! The ids of each subject are cached: an id the cache does not know rereads the
//! subject from the metadata store — waiting, if the last read is more recent than
//! [`REREAD_AFTER`], until it is not (so a producer of bad ids is slowed down rather
//! than turned into a stream of store reads) — so an id another broker registered a
//! moment ago is known at its first record; a version deleted stops validating within
//! [`FRESH_FOR`].

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
        // Each refused record once, with every reason.
        let mut refused: std::collections::BTreeMap<usize, String> = Default::default();
        for (part, on) in [(Part::Value, validation.value), (Part::Key, validation.key)] {
            if !on {
                continue;
            }
            let subject = format!("{topic}-{}", part.name());
            let mut known = self.ids(&subject, false)?;
            // Ids this batch carries that the store, read again, did not have.
            let mut unknown = HashSet::new();
            for (index, record) in records.iter().enumerate() {
                let Some(bytes) = part.of(record) else {
                    continue;
                };
                let problem = match schema_id(bytes) {
                    None => Some(format!(
                        "the record's {} does not start with a schema id (magic byte 0, then 4 bytes)",
                        part.name()
                    )),
                    Some(id) if known.contains(&id) => None,
                    Some(id) => {
                        if !unknown.contains(&id) {
                            known = self.ids(&subject, true)?;
                        }
                        (!known.contains(&id)).then(|| {
                            unknown.insert(id);
                            format!(
                                "schema id {id} of the record's {} is not registered under subject {subject}",
                                part.name()
                            )
                        })
                    }
                };
                if let Some(problem) = problem {
                    refused
                        .entry(index)
                        .and_modify(|reasons| {
                            reasons.push_str("; ");
                            reasons.push_str(&problem);
                        })
                        .or_insert(problem);
                }
            }
        }
        if refused.is_empty() {
            Ok(())
        } else {
            Err(Invalid::Records(refused.into_iter().collect()))
        }
    }

    /// The ids of `subject`'s live versions: cached, or read from the store when
    /// stale (or, with `missed`, when an id was not among them and the last read is
    /// not too recent).
    fn ids(&self, subject: &str, missed: bool) -> Result<Arc<HashSet<i32>>, Invalid> {
        let cached = self.cache().get(subject).cloned();
        if let Some(known) = &cached {
            let age = known.read_at.elapsed();
            if age < FRESH_FOR && !missed {
                return Ok(known.ids.clone());
            }
            if missed && age < REREAD_AFTER {
                // On the blocking pool: a short wait, then the store again (unless
                // another batch read it meanwhile).
                std::thread::sleep(REREAD_AFTER - age);
                if let Some(fresher) = self.cache().get(subject)
                    && fresher.read_at > known.read_at
                {
                    return Ok(fresher.ids.clone());
                }
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

/// The part of a record that carries a schema id.
#[derive(Debug, Clone, Copy)]
enum Part {
    Key,
    Value,
}

impl Part {
    /// As the subject's suffix names it.
    fn name(self) -> &'static str {
        match self {
            Part::Key => "key",
            Part::Value => "value",
        }
    }

    /// The record's key or value (`None`: null, which passes).
    fn of<'a>(self, record: &KeyedRecord<'a>) -> Option<&'a [u8]> {
        match self {
            Part::Key => record.key,
            Part::Value => record.value,
        }
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
