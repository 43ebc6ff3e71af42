//! IMPORT mode: schemas registered with the ids (and versions) another registry gave
//! them, so that records already written with those ids keep reading. No
//! compatibility check; the store refuses an id that holds another schema, and ids
//! made later come after the imported ones.

use spool_metadata::{RegistrySchemaRecord, SchemaRegistryStore, SubjectVersionRecord};

use super::{
    NewSchema, Registry, StoredSchema, SubjectVersion, check_subject, reference_keys, store_error,
};
use crate::compatibility::Mode;
use crate::error::RegistryError;

/// The highest id a schema may be imported with: ids made later come after it, and
/// must not run out.
const MAX_IMPORTED_ID: i32 = 1 << 30;

/// The id and version a schema is imported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub id: i32,
    /// `None`: the subject's next version.
    pub version: Option<i32>,
}

impl<S: SchemaRegistryStore + Send + Sync + ?Sized> Registry<S> {
    /// Registers `new` under `subject` with the id (and version) of `imported`; the
    /// subject (or the registry) must be in IMPORT mode.
    pub async fn import(
        &self,
        subject: &str,
        new: &NewSchema,
        imported: Imported,
    ) -> Result<SubjectVersion, RegistryError> {
        check_subject(subject)?;
        if self.mode(Some(subject)).await? != Mode::Import {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is not in import mode: a schema id or version is given only in IMPORT mode"
            )));
        }
        if !(1..=MAX_IMPORTED_ID).contains(&imported.id) || imported.version.is_some_and(|v| v < 1)
        {
            return Err(RegistryError::BadRequest(format!(
                "an imported schema's id is from 1 to {MAX_IMPORTED_ID}, its version from 1"
            )));
        }
        let parsed = self.parse(new).await?;
        let record = RegistrySchemaRecord {
            id: imported.id,
            schema_type: parsed.schema_type().name().to_owned(),
            schema: parsed.canonical().to_owned(),
            references: serde_json::to_string(&new.references).unwrap_or_default(),
            fingerprint: parsed.fingerprint(&reference_keys(&new.references)),
        };
        if !self
            .store
            .import_registry_schema(&record)
            .await
            .map_err(store_error)?
        {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Overwrite new schema with id {} is not permitted: the id holds another schema, or this schema has another id",
                imported.id
            )));
        }
        let versions = self.all_versions(subject).await?;
        let existing = versions.iter().find(|v| {
            !v.deleted
                && v.schema_id == imported.id
                && imported.version.is_none_or(|n| n == v.version)
        });
        let version = match existing {
            Some(found) => found.version,
            None => {
                let version = imported
                    .version
                    .unwrap_or_else(|| versions.iter().map(|v| v.version).max().unwrap_or(0) + 1);
                let added = self
                    .store
                    .put_subject_version(&SubjectVersionRecord {
                        subject: subject.to_owned(),
                        version,
                        schema_id: imported.id,
                        deleted: false,
                    })
                    .await
                    .map_err(store_error)?;
                if !added {
                    return Err(RegistryError::OperationNotPermitted(format!(
                        "Version {version} of subject {subject} holds another schema"
                    )));
                }
                version
            }
        };
        self.remember(imported.id, parsed.clone());
        Ok(SubjectVersion {
            subject: subject.to_owned(),
            version,
            schema: StoredSchema {
                id: imported.id,
                schema_type: parsed.schema_type(),
                schema: parsed.canonical().to_owned(),
                references: new.references.clone(),
            },
        })
    }

    /// Whether IMPORT mode may be set on `subject` (the registry when `None`): only
    /// where nothing is registered yet, unless `force`d.
    pub(super) async fn may_import(
        &self,
        subject: Option<&str>,
        force: bool,
    ) -> Result<(), RegistryError> {
        if force {
            return Ok(());
        }
        let registered = self
            .store
            .subject_versions(subject)
            .await
            .map_err(store_error)?;
        if registered.iter().any(|v| !v.deleted) {
            return Err(RegistryError::OperationNotPermitted(
                "Cannot import since found existing subjects: set IMPORT with force=true to import into them".to_owned(),
            ));
        }
        Ok(())
    }
}
