//! The registry over the metadata store: what each of Confluent's operations does —
//! registering (the same schema again answers its id; a new one is checked against
//! the subject's versions at the subject's compatibility level), looking up, soft and
//! permanent deletes, compatibility levels and modes. Transport-free: the broker
//! answers HTTP with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use spool_metadata::{
    MetadataError, RegistryConfigRecord, RegistrySchemaRecord, RegistrySetting,
    SchemaRegistryStore, SubjectVersionRecord,
};

use crate::compatibility::{Compatibility, Mode};
use crate::error::RegistryError;
use crate::schema::{ParsedSchema, SchemaType};

mod importing;
mod reading;

pub use importing::Imported;

/// How many times a registration is tried again when another broker took the version
/// it meant to take.
const REGISTER_ATTEMPTS: usize = 5;

/// A schema another refers to: by its name in the referring schema, and the subject
/// and version it was registered as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: i32,
}

/// A schema as a client sends it.
#[derive(Debug, Clone)]
pub struct NewSchema {
    pub schema: String,
    pub schema_type: SchemaType,
    pub references: Vec<Reference>,
}

/// A schema as the registry keeps it, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSchema {
    pub id: i32,
    pub schema_type: SchemaType,
    /// The canonical text.
    pub schema: String,
    pub references: Vec<Reference>,
}

/// A version of a subject, with its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectVersion {
    pub subject: String,
    pub version: i32,
    pub schema: StoredSchema,
}

/// A version as a path names it: a number, or the latest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    Latest,
    Number(i32),
}

impl VersionSpec {
    /// `latest`, `-1` (the latest too) or a version from 1 up.
    pub fn parse(text: &str) -> Result<VersionSpec, RegistryError> {
        match text {
            "latest" | "-1" => Ok(VersionSpec::Latest),
            _ => match text.parse::<i32>() {
                Ok(number) if number >= 1 => Ok(VersionSpec::Number(number)),
                _ => Err(RegistryError::InvalidVersion(text.to_owned())),
            },
        }
    }
}

/// The registry, over a store `S`.
#[derive(Debug)]
pub struct Registry<S: ?Sized> {
    store: Arc<S>,
    /// Schemas parsed before, by id (ids never change what they name).
    parsed: Mutex<HashMap<i32, ParsedSchema>>,
    /// Schemas as stored, by id, and ids by fingerprint, read before: neither ever
    /// changes once made (a schema is never deleted, an id never reused), so lookups
    /// by id — every consumer's first record of a schema — are answered from memory.
    stored: Mutex<HashMap<i32, StoredSchema>>,
    ids: Mutex<HashMap<String, i32>>,
}

fn store_error(error: MetadataError) -> RegistryError {
    RegistryError::Store(error.to_string())
}

impl<S: SchemaRegistryStore + Send + Sync + ?Sized> Registry<S> {
    pub fn new(store: Arc<S>) -> Registry<S> {
        Registry {
            store,
            parsed: Mutex::new(HashMap::new()),
            stored: Mutex::new(HashMap::new()),
            ids: Mutex::new(HashMap::new()),
        }
    }

    /// Registers `new` under `subject`: its id, and whether the version is new. The
    /// same schema registered before under the subject answers that registration.
    pub async fn register(
        &self,
        subject: &str,
        new: &NewSchema,
    ) -> Result<SubjectVersion, RegistryError> {
        check_subject(subject)?;
        if self.mode(Some(subject)).await? == Mode::ReadOnly {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        let parsed = self.parse(new).await?;
        let fingerprint = parsed.fingerprint(&reference_keys(&new.references));
        for _ in 0..REGISTER_ATTEMPTS {
            let versions = self.all_versions(subject).await?;
            if let Some(found) = self.live_version_with(&versions, &fingerprint).await? {
                return Ok(found);
            }
            let earlier = self.live_schemas(&versions).await?;
            let level = self.compatibility(Some(subject)).await?;
            let problems = level.problems(&parsed, &earlier);
            if !problems.is_empty() {
                return Err(RegistryError::Incompatible {
                    subject: subject.to_owned(),
                    details: problems.join("; "),
                });
            }
            let record = RegistrySchemaRecord {
                id: 0,
                schema_type: parsed.schema_type().name().to_owned(),
                schema: parsed.canonical().to_owned(),
                references: serde_json::to_string(&new.references).unwrap_or_default(),
                fingerprint: fingerprint.clone(),
            };
            let id = self
                .store
                .put_registry_schema(&record)
                .await
                .map_err(store_error)?;
            let version = versions.iter().map(|v| v.version).max().unwrap_or(0) + 1;
            let added = self
                .store
                .put_subject_version(&SubjectVersionRecord {
                    subject: subject.to_owned(),
                    version,
                    schema_id: id,
                    deleted: false,
                })
                .await
                .map_err(store_error)?;
            if added {
                self.remember(id, parsed.clone());
                return Ok(SubjectVersion {
                    subject: subject.to_owned(),
                    version,
                    schema: StoredSchema {
                        id,
                        schema_type: parsed.schema_type(),
                        schema: parsed.canonical().to_owned(),
                        references: new.references.clone(),
                    },
                });
            }
        }
        Err(RegistryError::Store(format!(
            "subject {subject} kept changing while registering: try again"
        )))
    }

    /// The version of `subject` whose schema is `new` (soft-deleted ones too when
    /// `deleted`).
    pub async fn lookup(
        &self,
        subject: &str,
        new: &NewSchema,
        deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        let versions = self.all_versions(subject).await?;
        if !versions.iter().any(|v| deleted || !v.deleted) {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        }
        let parsed = self.parse(new).await?;
        let fingerprint = parsed.fingerprint(&reference_keys(&new.references));
        let not_found = || RegistryError::SchemaNotFound("not found".to_owned());
        let id = self.schema_id(&fingerprint).await?.ok_or_else(not_found)?;
        let found = versions
            .iter()
            .rev()
            .filter(|v| deleted || !v.deleted)
            .find(|v| v.schema_id == id)
            .ok_or_else(not_found)?;
        Ok(SubjectVersion {
            subject: subject.to_owned(),
            version: found.version,
            schema: self.stored(id).await?,
        })
    }

    /// The schema with id `id`.
    pub async fn schema(&self, id: i32) -> Result<StoredSchema, RegistryError> {
        self.stored(id).await
    }

    /// `schema` in the form a `format` parameter asks for: `serialized` turns a
    /// Protobuf schema into its descriptor in base64; other formats are answered as
    /// stored (Confluent's `resolved` and `ignore_extensions` are not built).
    pub async fn in_format(
        &self,
        mut schema: StoredSchema,
        format: Option<&str>,
    ) -> Result<StoredSchema, RegistryError> {
        if format == Some("serialized")
            && let Some(serialized) = self.parsed(schema.id).await?.serialized()
        {
            serialized.clone_into(&mut schema.schema);
        }
        Ok(schema)
    }

    /// The (subject, version) pairs registered with schema `id`, soft-deleted ones
    /// too when `deleted`.
    pub async fn versions_of_schema(
        &self,
        id: i32,
        deleted: bool,
    ) -> Result<Vec<(String, i32)>, RegistryError> {
        self.stored(id).await?;
        Ok(self
            .store
            .versions_of_schema(id)
            .await
            .map_err(store_error)?
            .into_iter()
            .filter(|v| deleted || !v.deleted)
            .map(|v| (v.subject, v.version))
            .collect())
    }

    /// Every subject with a version (soft-deleted ones too when `deleted`).
    pub async fn subjects(&self, deleted: bool) -> Result<Vec<String>, RegistryError> {
        let mut subjects: Vec<String> = self
            .store
            .subject_versions(None)
            .await
            .map_err(store_error)?
            .into_iter()
            .filter(|v| deleted || !v.deleted)
            .map(|v| v.subject)
            .collect();
        // In byte order on both backends (PostgreSQL's collation may order otherwise).
        subjects.sort_unstable();
        subjects.dedup();
        Ok(subjects)
    }

    /// The versions of `subject`, oldest first.
    pub async fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i32>, RegistryError> {
        let versions: Vec<i32> = self
            .all_versions(subject)
            .await?
            .into_iter()
            .filter(|v| deleted || !v.deleted)
            .map(|v| v.version)
            .collect();
        if versions.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        }
        Ok(versions)
    }

    /// Version `spec` of `subject`.
    pub async fn version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        let found = self.find_version(subject, spec, deleted).await?;
        Ok(SubjectVersion {
            subject: subject.to_owned(),
            version: found.version,
            schema: self.stored(found.schema_id).await?,
        })
    }

    /// Deletes every version of `subject`: soft first, then (`permanent`) for good.
    /// Answers the versions deleted.
    pub async fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
    ) -> Result<Vec<i32>, RegistryError> {
        self.writable(subject).await?;
        let versions = self.all_versions(subject).await?;
        if versions.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_owned()));
        }
        let live = versions.iter().any(|v| !v.deleted);
        let numbers = versions.iter().map(|v| v.version).collect();
        if permanent {
            if live {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_owned()));
            }
            self.store
                .remove_versions(subject, None)
                .await
                .map_err(store_error)?;
            self.store
                .put_registry_config(subject, &RegistryConfigRecord::default())
                .await
                .map_err(store_error)?;
            return Ok(numbers);
        }
        if !live {
            return Err(RegistryError::SubjectSoftDeleted(subject.to_owned()));
        }
        self.store
            .soft_delete_versions(subject, None)
            .await
            .map_err(store_error)?;
        Ok(versions
            .iter()
            .filter(|v| !v.deleted)
            .map(|v| v.version)
            .collect())
    }

    /// Deletes version `spec` of `subject`: soft first, then (`permanent`) for good.
    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
    ) -> Result<i32, RegistryError> {
        self.writable(subject).await?;
        let found = self.find_version(subject, spec, true).await?;
        if found.deleted && !permanent {
            return Err(RegistryError::VersionSoftDeleted {
                subject: subject.to_owned(),
                version: found.version,
            });
        }
        if permanent {
            if !found.deleted {
                return Err(RegistryError::VersionNotSoftDeleted {
                    subject: subject.to_owned(),
                    version: found.version,
                });
            }
            self.store
                .remove_versions(subject, Some(found.version))
                .await
                .map_err(store_error)?;
        } else {
            self.store
                .soft_delete_versions(subject, Some(found.version))
                .await
                .map_err(store_error)?;
        }
        Ok(found.version)
    }

    /// The compatibility level that applies to `subject` (the registry's when
    /// `None`): the subject's own, else the registry's, else BACKWARD.
    pub async fn compatibility(
        &self,
        subject: Option<&str>,
    ) -> Result<Compatibility, RegistryError> {
        Ok(self
            .configured_compatibility(subject, true)
            .await?
            .unwrap_or_default())
    }

    /// The level set on `subject` (the registry's when `None`); with
    /// `default_to_global`, the registry's when the subject has none.
    pub async fn configured_compatibility(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> Result<Option<Compatibility>, RegistryError> {
        let own = self.config(subject.unwrap_or("")).await?.compatibility;
        let level = match (own, subject) {
            (Some(level), _) => Some(level),
            (None, Some(_)) if default_to_global => self.config("").await?.compatibility,
            (None, _) => None,
        };
        level
            .map(|name| Compatibility::from_name(&name))
            .transpose()
    }

    /// Sets (or with `None`, clears) the level of `subject` (the registry's when
    /// `None`).
    pub async fn set_compatibility(
        &self,
        subject: Option<&str>,
        level: Option<Compatibility>,
    ) -> Result<(), RegistryError> {
        self.store
            .put_registry_setting(
                subject.unwrap_or(""),
                RegistrySetting::Compatibility,
                level.map(Compatibility::name),
            )
            .await
            .map_err(store_error)
    }

    /// The mode that applies to `subject` (the registry's when `None`).
    pub async fn mode(&self, subject: Option<&str>) -> Result<Mode, RegistryError> {
        let own = match subject {
            Some(subject) => self.config(subject).await?.mode,
            None => None,
        };
        match own.or(self.config("").await?.mode) {
            Some(name) => Mode::from_name(&name),
            None => Ok(Mode::default()),
        }
    }

    /// The mode set on `subject` itself, if one is.
    pub async fn configured_mode(&self, subject: &str) -> Result<Option<Mode>, RegistryError> {
        self.config(subject)
            .await?
            .mode
            .map(|name| Mode::from_name(&name))
            .transpose()
    }

    /// Sets (or with `None`, clears) the mode of `subject` (the registry's when
    /// `None`).
    pub async fn set_mode(
        &self,
        subject: Option<&str>,
        mode: Option<Mode>,
        force: bool,
    ) -> Result<(), RegistryError> {
        if mode == Some(Mode::Import) {
            self.may_import(subject, force).await?;
        }
        self.store
            .put_registry_setting(
                subject.unwrap_or(""),
                RegistrySetting::Mode,
                mode.map(Mode::name),
            )
            .await
            .map_err(store_error)
    }

    /// Why `new` may not follow version `spec` of `subject` (every live version with
    /// a transitive level, when `spec` is `None`); empty when it may.
    pub async fn compatibility_problems(
        &self,
        subject: &str,
        spec: Option<VersionSpec>,
        new: &NewSchema,
    ) -> Result<Vec<String>, RegistryError> {
        let parsed = self.parse(new).await?;
        let level = self.compatibility(Some(subject)).await?;
        let earlier = match spec {
            Some(spec) => {
                let found = self.find_version(subject, spec, false).await?;
                vec![self.parsed(found.schema_id).await?]
            }
            None => {
                self.live_schemas(&self.all_versions(subject).await?)
                    .await?
            }
        };
        Ok(level.problems(&parsed, &earlier))
    }
}

/// The references as the fingerprint takes them.
fn reference_keys(references: &[Reference]) -> Vec<(String, i32)> {
    references
        .iter()
        .map(|r| (r.subject.clone(), r.version))
        .collect()
}

/// Refuses a subject name Confluent refuses: empty, or with control characters.
fn check_subject(subject: &str) -> Result<(), RegistryError> {
    if subject.is_empty() || subject.chars().any(char::is_control) {
        return Err(RegistryError::BadRequest(format!(
            "Invalid subject {subject:?}"
        )));
    }
    Ok(())
}
