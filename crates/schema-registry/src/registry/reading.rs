//! What the registry's operations share: the subject's versions and configs as the
//! store has them, schemas by id (parsed once), references resolved.

use std::collections::{HashMap, HashSet};

use spool_metadata::{RegistryConfigRecord, SchemaRegistryStore, SubjectVersionRecord};

use super::{
    NewSchema, Reference, Registry, StoredSchema, SubjectVersion, VersionSpec, store_error,
};
use crate::compatibility::Mode;
use crate::error::RegistryError;
use crate::schema::{ParsedSchema, Referenced, SchemaType, parse};

/// How many schemas one schema may refer to, directly or not.
const MAX_REFERENCES: usize = 1000;

impl<S: SchemaRegistryStore + Send + Sync + ?Sized> Registry<S> {
    pub(super) async fn config(
        &self,
        subject: &str,
    ) -> Result<RegistryConfigRecord, RegistryError> {
        self.store
            .registry_config(subject)
            .await
            .map_err(store_error)
    }

    pub(super) async fn writable(&self, subject: &str) -> Result<(), RegistryError> {
        if self.mode(Some(subject)).await? == Mode::ReadOnly {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        Ok(())
    }

    pub(super) async fn all_versions(
        &self,
        subject: &str,
    ) -> Result<Vec<SubjectVersionRecord>, RegistryError> {
        self.store
            .subject_versions(Some(subject))
            .await
            .map_err(store_error)
    }

    pub(super) async fn find_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> Result<SubjectVersionRecord, RegistryError> {
        let versions = self.all_versions(subject).await?;
        let visible: Vec<&SubjectVersionRecord> =
            versions.iter().filter(|v| deleted || !v.deleted).collect();
        if visible.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        }
        let found = match spec {
            VersionSpec::Latest => visible.last().copied(),
            VersionSpec::Number(number) => visible.iter().copied().find(|v| v.version == number),
        };
        found.cloned().ok_or_else(|| {
            RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "latest".to_owned(),
                VersionSpec::Number(number) => number.to_string(),
            })
        })
    }

    /// The live version whose schema has `fingerprint`, if any.
    pub(super) async fn live_version_with(
        &self,
        versions: &[SubjectVersionRecord],
        fingerprint: &str,
    ) -> Result<Option<SubjectVersion>, RegistryError> {
        let Some(id) = self.schema_id(fingerprint).await? else {
            return Ok(None);
        };
        let Some(found) = versions.iter().find(|v| !v.deleted && v.schema_id == id) else {
            return Ok(None);
        };
        Ok(Some(SubjectVersion {
            subject: found.subject.clone(),
            version: found.version,
            schema: self.stored(id).await?,
        }))
    }

    /// The schemas of the live versions, oldest first.
    pub(super) async fn live_schemas(
        &self,
        versions: &[SubjectVersionRecord],
    ) -> Result<Vec<ParsedSchema>, RegistryError> {
        let mut schemas = Vec::new();
        for version in versions.iter().filter(|v| !v.deleted) {
            schemas.push(self.parsed(version.schema_id).await?);
        }
        Ok(schemas)
    }

    pub(super) async fn stored(&self, id: i32) -> Result<StoredSchema, RegistryError> {
        if let Some(found) = lock(&self.stored).get(&id) {
            return Ok(found.clone());
        }
        let record = self
            .store
            .registry_schema(id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| RegistryError::SchemaNotFound(id.to_string()))?;
        let stored = StoredSchema {
            id,
            schema_type: SchemaType::from_name(Some(&record.schema_type))?,
            schema: record.schema,
            references: serde_json::from_str(&record.references).unwrap_or_default(),
        };
        lock(&self.stored).insert(id, stored.clone());
        Ok(stored)
    }

    /// The id of the schema with `fingerprint`, if it has one.
    pub(super) async fn schema_id(&self, fingerprint: &str) -> Result<Option<i32>, RegistryError> {
        if let Some(id) = lock(&self.ids).get(fingerprint) {
            return Ok(Some(*id));
        }
        let found = self
            .store
            .registry_schema_id(fingerprint)
            .await
            .map_err(store_error)?;
        if let Some(id) = found {
            lock(&self.ids).insert(fingerprint.to_owned(), id);
        }
        Ok(found)
    }

    /// Schema `id`, parsed (once): for the broker's own readers of records (table
    /// topics decode values with it).
    pub async fn parsed(&self, id: i32) -> Result<ParsedSchema, RegistryError> {
        if let Some(parsed) = self.cache().get(&id) {
            return Ok(parsed.clone());
        }
        let stored = self.stored(id).await?;
        let parsed = self
            .parse(&NewSchema {
                schema: stored.schema,
                schema_type: stored.schema_type,
                references: stored.references,
            })
            .await?;
        self.remember(id, parsed.clone());
        Ok(parsed)
    }

    /// `new` parsed, its references read from their subjects — and theirs, those
    /// referred to first, each name once.
    pub(super) async fn parse(&self, new: &NewSchema) -> Result<ParsedSchema, RegistryError> {
        let too_many = || {
            RegistryError::InvalidSchema(format!(
                "Invalid schema: more than {MAX_REFERENCES} references"
            ))
        };
        if new.references.len() > MAX_REFERENCES {
            return Err(too_many());
        }
        let mut resolved: Vec<Referenced> = Vec::new();
        let mut names: HashSet<String> = HashSet::new();
        // Depth-first, a reference's own references before it: (reference, expanded).
        let mut pending: Vec<(Reference, bool)> = new
            .references
            .iter()
            .rev()
            .map(|r| (r.clone(), false))
            .collect();
        while let Some((reference, expanded)) = pending.pop() {
            if names.contains(&reference.name) {
                continue;
            }
            let stored = self.referenced(&reference).await?;
            if expanded || stored.references.is_empty() {
                names.insert(reference.name.clone());
                resolved.push(Referenced {
                    name: reference.name,
                    schema: stored.schema,
                });
            } else if pending.len() + resolved.len() + stored.references.len() > MAX_REFERENCES {
                return Err(too_many());
            } else {
                pending.push((reference, true));
                pending.extend(stored.references.into_iter().rev().map(|r| (r, false)));
            }
        }
        parse(new.schema_type, &new.schema, &resolved)
    }

    /// The schema `reference` names (a soft-deleted version too: what refers to it
    /// keeps reading it).
    async fn referenced(&self, reference: &Reference) -> Result<StoredSchema, RegistryError> {
        let found = self
            .find_version(
                &reference.subject,
                VersionSpec::Number(reference.version),
                true,
            )
            .await
            .map_err(|_| {
                RegistryError::InvalidSchema(format!(
                    "Invalid schema: the reference {} (subject {}, version {}) is not registered",
                    reference.name, reference.subject, reference.version
                ))
            })?;
        self.stored(found.schema_id).await
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<i32, ParsedSchema>> {
        lock(&self.parsed)
    }

    pub(super) fn remember(&self, id: i32, parsed: ParsedSchema) {
        self.cache().insert(id, parsed);
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
