//! The schema registry as the console reads it (`/api/schemas/…`): subjects, their
//! versions and a schema, from the metadata store.

use spool_admin::{ApiError, SchemaReferenceInfo, SchemaVersionInfo, StatusCode, SubjectInfo};
use spool_schema_registry::{Registry, RegistryError, VersionSpec};

use crate::schema_registry::BrokerRegistry;
use crate::shared::Shared;

pub(super) async fn subjects(shared: &Shared) -> Result<Vec<SubjectInfo>, ApiError> {
    let registry = registry(shared);
    let mut subjects = Vec::new();
    for subject in registry.subjects(false).await.map_err(api_error)? {
        // A subject deleted since it was listed is left out.
        let latest = match registry.version(&subject, VersionSpec::Latest, false).await {
            Ok(latest) => latest,
            Err(RegistryError::SubjectNotFound(_) | RegistryError::VersionNotFound(_)) => continue,
            Err(error) => return Err(api_error(error)),
        };
        subjects.push(SubjectInfo {
            versions: registry
                .versions(&subject, false)
                .await
                .map_err(api_error)?,
            compatibility: compatibility(&registry, &subject).await?,
            schema_type: latest.schema.schema_type.name().to_owned(),
            latest_id: latest.schema.id,
            subject,
        });
    }
    Ok(subjects)
}

pub(super) async fn version(
    shared: &Shared,
    subject: &str,
    version: &str,
) -> Result<SchemaVersionInfo, ApiError> {
    let registry = registry(shared);
    let spec = VersionSpec::parse(version).map_err(api_error)?;
    let found = registry
        .version(subject, spec, false)
        .await
        .map_err(api_error)?;
    Ok(SchemaVersionInfo {
        subject: found.subject,
        version: found.version,
        id: found.schema.id,
        schema_type: found.schema.schema_type.name().to_owned(),
        schema: found.schema.schema,
        references: found
            .schema
            .references
            .into_iter()
            .map(|r| SchemaReferenceInfo {
                name: r.name,
                subject: r.subject,
                version: r.version,
            })
            .collect(),
        versions: registry.versions(subject, false).await.map_err(api_error)?,
        compatibility: compatibility(&registry, subject).await?,
    })
}

fn registry(shared: &Shared) -> BrokerRegistry {
    Registry::new(shared.metadata().clone())
}

async fn compatibility(registry: &BrokerRegistry, subject: &str) -> Result<String, ApiError> {
    Ok(registry
        .compatibility(Some(subject))
        .await
        .map_err(api_error)?
        .name()
        .to_owned())
}

fn api_error(error: RegistryError) -> ApiError {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = if status == StatusCode::NOT_FOUND {
        "not_found"
    } else {
        "schema_registry"
    };
    ApiError::new(status, kind, error.to_string())
}
