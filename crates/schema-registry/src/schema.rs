//! Schemas by format: parsed (with the schemas they reference), put in a canonical
//! form — the text the registry stores and answers, so that the same schema written
//! twice is one schema with one id — and checked for whether one reads the other's
//! data.

use sha2::{Digest, Sha256};

use crate::error::RegistryError;
use crate::{avro, json, protobuf};

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

/// A schema another refers to, as the registry resolved it: the name the referring
/// schema uses for it (a Protobuf import, a JSON Schema `$ref` URL; Avro refers by
/// type name) and its stored text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referenced {
    pub name: String,
    pub schema: String,
}

/// A parsed schema and its canonical text.
#[derive(Debug, Clone)]
pub struct ParsedSchema {
    schema_type: SchemaType,
    canonical: String,
    /// What makes two texts one schema: the canonical text, except for Protobuf,
    /// whose text is kept as the client wrote it and whose identity is its descriptor.
    identity: String,
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Avro(avro::AvroSchema),
    Json(json::JsonSchema),
    Protobuf(protobuf::ProtobufSchema),
}

/// Parses `text` as a `schema_type` schema; `references` are the schemas it refers to,
/// transitively, those referred to first (resolved by the registry).
pub fn parse(
    schema_type: SchemaType,
    text: &str,
    references: &[Referenced],
) -> Result<ParsedSchema, RegistryError> {
    let (canonical, identity, form) = match schema_type {
        SchemaType::Avro => {
            let texts: Vec<&str> = references.iter().map(|r| r.schema.as_str()).collect();
            let parsed = avro::AvroSchema::parse(text, &texts)?;
            let canonical = parsed.canonical().to_owned();
            (canonical.clone(), canonical, Form::Avro(parsed))
        }
        SchemaType::Json => {
            let parsed = json::JsonSchema::parse(text, references)?;
            let canonical = parsed.canonical().to_owned();
            (canonical.clone(), canonical, Form::Json(parsed))
        }
        SchemaType::Protobuf => {
            let parsed = protobuf::ProtobufSchema::parse(text, references)?;
            let identity = parsed.serialized().to_owned();
            (text.trim().to_owned(), identity, Form::Protobuf(parsed))
        }
    };
    Ok(ParsedSchema {
        schema_type,
        canonical,
        identity,
        form,
    })
}

impl ParsedSchema {
    #[must_use]
    pub fn schema_type(&self) -> SchemaType {
        self.schema_type
    }

    /// The Avro schema, for an Avro one (its references resolved).
    #[must_use]
    pub fn avro(&self) -> Option<&apache_avro::Schema> {
        match &self.form {
            Form::Avro(parsed) => Some(parsed.schema()),
            Form::Json(_) | Form::Protobuf(_) => None,
        }
    }

    /// The JSON Schema document, for a JSON Schema one.
    #[must_use]
    pub fn json_document(&self) -> Option<&serde_json::Value> {
        match &self.form {
            Form::Json(parsed) => Some(parsed.document()),
            Form::Avro(_) | Form::Protobuf(_) => None,
        }
    }

    /// A value written with this schema — what follows the schema id in Confluent's
    /// framing — as a JSON document: JSON Schema's as it is, Avro's and Protobuf's
    /// decoded (docs/index.md says how each type reads).
    pub fn value_document(&self, body: &[u8]) -> Result<serde_json::Value, String> {
        match &self.form {
            Form::Avro(parsed) => parsed.document(body),
            Form::Protobuf(parsed) => parsed.document(body),
            Form::Json(_) => serde_json::from_slice(body).map_err(|e| e.to_string()),
        }
    }

    /// The text stored and answered for it.
    #[must_use]
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// The schema in Confluent's `format=serialized`: for Protobuf, its
    /// `FileDescriptorProto` in base64 (what confluent-kafka's Protobuf deserializers
    /// ask for); other formats have none.
    #[must_use]
    pub fn serialized(&self) -> Option<&str> {
        match &self.form {
            Form::Protobuf(parsed) => Some(parsed.serialized()),
            Form::Avro(_) | Form::Json(_) => None,
        }
    }

    /// What makes two schemas the same: the format, the identity (the canonical text;
    /// a Protobuf schema's descriptor) and the references (as `subject/version`
    /// pairs), hashed.
    #[must_use]
    pub fn fingerprint(&self, references: &[(String, i32)]) -> String {
        let mut hash = Sha256::new();
        hash.update(self.schema_type.name());
        hash.update([0]);
        hash.update(&self.identity);
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
            (Form::Json(reader), Form::Json(writer)) => reader.reads(writer),
            (Form::Protobuf(reader), Form::Protobuf(writer)) => reader.reads(writer),
            _ => Err(format!(
                "a {} schema does not read {} data",
                self.schema_type.name(),
                writer.schema_type.name()
            )),
        }
    }
}
