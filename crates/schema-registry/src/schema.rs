//! Schemas by format: parsed (with the schemas they reference), put in a canonical
//! form — the text the registry stores and answers, so that the same schema written
//! twice is one schema with one id — and checked for whether one reads the other's
//! data.

use sha2::{Digest, Sha256};

use crate::avro;
use crate::error::RegistryError;

/// A schema's format, as `schemaType` names it (absent: AVRO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    Avro,
    Json,
    Protobuf,
}

impl SchemaType {
    /// The type named `name` (`None`: AVRO, Confluent's default).
    pub fn from_name(name: Option<&str>) -> Result<SchemaType, RegistryError> {
        match name.map(str::to_ascii_uppercase).as_deref() {
            None | Some("AVRO") => Ok(SchemaType::Avro),
            Some("JSON") => Ok(SchemaType::Json),
            Some("PROTOBUF") => Ok(SchemaType::Protobuf),
            Some(other) => Err(RegistryError::InvalidSchema(format!(
                "Invalid schema type {other}: AVRO, JSON and PROTOBUF are known"
            ))),
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Json => "JSON",
            SchemaType::Protobuf => "PROTOBUF",
        }
    }
}

/// A parsed schema and its canonical text.
#[derive(Debug, Clone)]
pub struct ParsedSchema {
    schema_type: SchemaType,
    canonical: String,
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Avro(avro::AvroSchema),
}

/// Parses `text` as a `schema_type` schema; `references` are the texts of the schemas
/// it refers to (resolved by the registry, in the order given).
pub fn parse(
    schema_type: SchemaType,
    text: &str,
    references: &[String],
) -> Result<ParsedSchema, RegistryError> {
    match schema_type {
        SchemaType::Avro => {
            let parsed = avro::AvroSchema::parse(text, references)?;
            Ok(ParsedSchema {
                schema_type,
                canonical: parsed.canonical().to_owned(),
                form: Form::Avro(parsed),
            })
        }
        SchemaType::Json | SchemaType::Protobuf => Err(RegistryError::InvalidSchema(format!(
            "{} schemas are not supported yet: AVRO is",
            schema_type.name()
        ))),
    }
}

impl ParsedSchema {
    #[must_use]
    pub fn schema_type(&self) -> SchemaType {
        self.schema_type
    }

    /// The text stored and answered for it.
    #[must_use]
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// What makes two schemas the same: the format, the canonical text and the
    /// references (as `subject/version` pairs), hashed.
    #[must_use]
    pub fn fingerprint(&self, references: &[(String, i32)]) -> String {
        let mut hash = Sha256::new();
        hash.update(self.schema_type.name());
        hash.update([0]);
        hash.update(&self.canonical);
        for (subject, version) in references {
            hash.update([0]);
            hash.update(subject);
            hash.update(version.to_be_bytes());
        }
        hash.finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Whether this schema reads data written with `writer`: why not, if not.
    pub fn reads(&self, writer: &ParsedSchema) -> Result<(), String> {
        match (&self.form, &writer.form) {
            (Form::Avro(reader), Form::Avro(writer)) => reader.reads(writer),
        }
    }
}
