//! The registry's errors, each with the HTTP status and the error code Confluent's
//! Schema Registry answers for it (clients branch on the code: `40401` a subject not
//! found, `409` incompatible, …). The one place they are mapped.

/// What went wrong, as Confluent's registry tells it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    #[error("Schema {0} not found")]
    SchemaNotFound(String),
    #[error("Subject '{0}' was soft deleted. Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    #[error(
        "Subject '{subject}' Version {version} was soft deleted. Set permanent=true to delete permanently"
    )]
    VersionSoftDeleted { subject: String, version: i32 },
    #[error(
        "Subject '{subject}' Version {version} was not deleted first before being permanently deleted"
    )]
    VersionNotSoftDeleted { subject: String, version: i32 },
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectCompatibilityNotConfigured(String),
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotConfigured(String),
    #[error("{0}")]
    InvalidSchema(String),
    #[error(
        "The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""
    )]
    InvalidVersion(String),
    #[error(
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
    )]
    InvalidCompatibilityLevel,
    #[error("Invalid mode. Valid values are READWRITE, READONLY, IMPORT")]
    InvalidMode,
    #[error("{0}")]
    OperationNotPermitted(String),
    #[error("One or more references exist to the schema {{subject={subject},version={version}}}")]
    ReferenceExists { subject: String, version: i32 },
    #[error(
        "Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{details}]"
    )]
    Incompatible { subject: String, details: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("Error in the backend data store - {0}")]
    Store(String),
}

impl RegistryError {
    /// The HTTP status it is answered with.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            RegistryError::SubjectNotFound(_)
            | RegistryError::VersionNotFound(_)
            | RegistryError::SchemaNotFound(_)
            | RegistryError::SubjectSoftDeleted(_)
            | RegistryError::SubjectNotSoftDeleted(_)
            | RegistryError::VersionSoftDeleted { .. }
            | RegistryError::VersionNotSoftDeleted { .. }
            | RegistryError::SubjectCompatibilityNotConfigured(_)
            | RegistryError::SubjectModeNotConfigured(_) => 404,
            RegistryError::Incompatible { .. } => 409,
            RegistryError::InvalidSchema(_)
            | RegistryError::InvalidVersion(_)
            | RegistryError::InvalidCompatibilityLevel
            | RegistryError::InvalidMode
            | RegistryError::OperationNotPermitted(_)
            | RegistryError::ReferenceExists { .. } => 422,
            RegistryError::BadRequest(_) => 400,
            RegistryError::Unauthorized => 401,
            RegistryError::Forbidden(_) => 403,
            RegistryError::Store(_) => 500,
        }
    }

    /// Confluent's error code: the status, or the status and two digits.
    #[must_use]
    pub fn error_code(&self) -> u32 {
        match self {
            RegistryError::SubjectNotFound(_) => 40401,
            RegistryError::VersionNotFound(_) => 40402,
            RegistryError::SchemaNotFound(_) => 40403,
            RegistryError::SubjectSoftDeleted(_) => 40404,
            RegistryError::SubjectNotSoftDeleted(_) => 40405,
            RegistryError::VersionSoftDeleted { .. } => 40406,
            RegistryError::VersionNotSoftDeleted { .. } => 40407,
            RegistryError::SubjectCompatibilityNotConfigured(_) => 40408,
            RegistryError::SubjectModeNotConfigured(_) => 40409,
            RegistryError::InvalidSchema(_) => 42201,
            RegistryError::InvalidVersion(_) => 42202,
            RegistryError::InvalidCompatibilityLevel => 42203,
            RegistryError::InvalidMode => 42204,
            RegistryError::OperationNotPermitted(_) => 42205,
            RegistryError::ReferenceExists { .. } => 42206,
            RegistryError::Store(_) => 50001,
            other => u32::from(other.status()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_confluents() {
        let cases = [
            (RegistryError::SubjectNotFound("s".into()), 404, 40401),
            (RegistryError::SchemaNotFound("7".into()), 404, 40403),
            (
                RegistryError::Incompatible {
                    subject: "s".into(),
                    details: String::new(),
                },
                409,
                409,
            ),
            (RegistryError::InvalidSchema("x".into()), 422, 42201),
            (RegistryError::Store("down".into()), 500, 50001),
        ];
        for (error, status, code) in cases {
            assert_eq!(
                (error.status(), error.error_code()),
                (status, code),
                "{error}"
            );
        }
        assert_eq!(
            RegistryError::SubjectNotFound("orders-value".into()).to_string(),
            "Subject 'orders-value' not found."
        );
    }
}
