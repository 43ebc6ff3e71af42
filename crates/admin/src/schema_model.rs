//! The schema registry's JSON shapes for the console (`/api/schemas/…`); clients use
//! the registry's own listener (Confluent's REST API).

use serde::Serialize;

/// A subject with its live versions.
#[derive(Debug, Clone, Serialize)]
pub struct SubjectInfo {
    pub subject: String,
    /// `AVRO`, `JSON` or `PROTOBUF`: its latest version's.
    pub schema_type: String,
    pub versions: Vec<i32>,
    pub latest_id: i32,
    /// The level its new versions are checked at (its own, or the registry's).
    pub compatibility: String,
}

/// One version of a subject, with its schema.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaVersionInfo {
    pub subject: String,
    pub version: i32,
    pub id: i32,
    pub schema_type: String,
    pub schema: String,
    pub references: Vec<SchemaReferenceInfo>,
    /// The subject's other live versions, to move between them.
    pub versions: Vec<i32>,
    pub compatibility: String,
}

/// A schema a version refers to.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaReferenceInfo {
    pub name: String,
    pub subject: String,
    pub version: i32,
}
