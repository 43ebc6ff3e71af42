//! The schema registry's state: schemas by global id, each subject's versions, and the
//! compatibility level and mode of the registry and of subjects. Kept in the store so
//! that every broker of a cluster answers the same ids. The registry's rules (which
//! schema may be registered, what a delete may do) are the broker's; the store keeps
//! ids unique and never reused, and a subject's version numbers unique.

use crate::Result;

/// A schema, by its global id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySchemaRecord {
    pub id: i32,
    /// `AVRO`, `JSON` or `PROTOBUF`.
    pub schema_type: String,
    /// Its canonical text.
    pub schema: String,
    /// Its references, as JSON (`[{"name", "subject", "version"}]`).
    pub references: String,
    pub fingerprint: String,
}

/// A version of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectVersionRecord {
    pub subject: String,
    pub version: i32,
    pub schema_id: i32,
    /// Soft-deleted: kept, listed only when asked for deleted ones.
    pub deleted: bool,
}

/// The compatibility level and mode set on the registry (subject `""`) or a subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryConfigRecord {
    pub compatibility: Option<String>,
    pub mode: Option<String>,
}

/// One of a subject's (or the registry's) settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrySetting {
    Compatibility,
    Mode,
}

#[async_trait::async_trait]
pub trait SchemaRegistryStore {
    /// The id of the schema with `record.fingerprint`, made with the next id if there
    /// is none (`record.id` is ignored).
    async fn put_registry_schema(&self, record: &RegistrySchemaRecord) -> Result<i32>;
    /// Puts `record` under its own `record.id` (IMPORT mode: ids copied from another
    /// registry): `false` when that id holds another schema or the schema has another
    /// id. Ids made later come after every id imported.
    async fn import_registry_schema(&self, record: &RegistrySchemaRecord) -> Result<bool>;
    /// The id of the schema with `fingerprint`, if there is one.
    async fn registry_schema_id(&self, fingerprint: &str) -> Result<Option<i32>>;
    /// The schema with id `id`.
    async fn registry_schema(&self, id: i32) -> Result<Option<RegistrySchemaRecord>>;
    /// Adds a version; false when the subject has that version already (another
    /// broker registered at the same time: read again and retry).
    async fn put_subject_version(&self, record: &SubjectVersionRecord) -> Result<bool>;
    /// The versions of `subject` (of every subject when `None`), by subject and
    /// version, soft-deleted ones included.
    async fn subject_versions(&self, subject: Option<&str>) -> Result<Vec<SubjectVersionRecord>>;
    /// The versions (subject, version) that point at schema `id`.
    async fn versions_of_schema(&self, id: i32) -> Result<Vec<SubjectVersionRecord>>;
    /// Soft-deletes `version` of `subject` (every version when `None`); how many.
    async fn soft_delete_versions(&self, subject: &str, version: Option<i32>) -> Result<u64>;
    /// Removes soft-deleted `version` of `subject` (every soft-deleted version when
    /// `None`) for good; how many. A live version stays (registered meanwhile by
    /// another broker).
    async fn remove_versions(&self, subject: &str, version: Option<i32>) -> Result<u64>;
    /// What is set on `subject` (`""`: the registry).
    async fn registry_config(&self, subject: &str) -> Result<RegistryConfigRecord>;
    /// Sets (or, with `None`, clears) one setting of `subject`, leaving the other as
    /// it is (two brokers changing the level and the mode at once both keep theirs).
    async fn put_registry_setting(
        &self,
        subject: &str,
        setting: RegistrySetting,
        value: Option<&str>,
    ) -> Result<()>;
    /// Sets (or, with `None` fields, clears) what is set on `subject`.
    async fn put_registry_config(&self, subject: &str, config: &RegistryConfigRecord)
    -> Result<()>;
}
