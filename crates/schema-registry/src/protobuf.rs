//! Protobuf schemas, through `protox` (a Protobuf compiler in Rust) and
//! `prost-reflect`: a schema is `.proto` text or — as confluent-kafka's serializers
//! send it — a `FileDescriptorProto` in base64; either is compiled with the schemas
//! it imports (its references, by import name; Google's well-known types are built in).
//! Its identity is its descriptor, encoded without source positions or JSON names, so
//! the text and the base64 of one schema are one schema; the text answered is the one
//! first registered.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use prost::Message;
use prost_reflect::FileDescriptor;
use prost_reflect::prost_types::FileDescriptorProto;
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use crate::error::RegistryError;
use crate::schema::Referenced;

mod compatibility;

/// The file name a schema is compiled under (confluent-kafka renames it anyway).
const MAIN_FILE: &str = "default";

/// A compiled Protobuf schema.
#[derive(Debug, Clone)]
pub(crate) struct ProtobufSchema {
    file: FileDescriptor,
    serialized: String,
}

impl ProtobufSchema {
    pub(crate) fn parse(
        text: &str,
        references: &[Referenced],
    ) -> Result<ProtobufSchema, RegistryError> {
        let invalid = |error: &dyn std::fmt::Display| {
            RegistryError::InvalidSchema(format!("Invalid schema {text}: {error}"))
        };
        let mut files = vec![(MAIN_FILE.to_owned(), text.to_owned())];
        files.extend(
            references
                .iter()
                .map(|reference| (reference.name.clone(), reference.schema.clone())),
        );
        let mut resolver = ChainFileResolver::new();
        resolver.add(SchemaTexts { files });
        resolver.add(GoogleFileResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        compiler.include_source_info(false);
        compiler.open_file(MAIN_FILE).map_err(|e| invalid(&e))?;
        let pool = compiler.descriptor_pool();
        let file = pool
            .get_file_by_name(MAIN_FILE)
            .ok_or_else(|| invalid(&"nothing compiled"))?;
        let mut descriptor = file.file_descriptor_proto().clone();
        normalize(&mut descriptor);
        let serialized = STANDARD.encode(descriptor.encode_to_vec());
        Ok(ProtobufSchema { file, serialized })
    }

    /// The descriptor in base64: Confluent's `format=serialized`, and the identity.
    pub(crate) fn serialized(&self) -> &str {
        &self.serialized
    }

    pub(crate) fn reads(&self, writer: &ProtobufSchema) -> Result<(), String> {
        compatibility::reads(&self.file, &writer.file)
    }
}

/// What differs between two compilations of one schema without meaning anything.
fn normalize(descriptor: &mut FileDescriptorProto) {
    descriptor.source_code_info = None;
    if descriptor.syntax.as_deref() == Some("proto2") {
        descriptor.syntax = None;
    }
    for message in &mut descriptor.message_type {
        clear_json_names(message);
    }
}

fn clear_json_names(message: &mut prost_reflect::prost_types::DescriptorProto) {
    for field in message.field.iter_mut().chain(message.extension.iter_mut()) {
        field.json_name = None;
    }
    for nested in &mut message.nested_type {
        clear_json_names(nested);
    }
}

/// The schema and its references, by file name, as text or base64 descriptors.
struct SchemaTexts {
    files: Vec<(String, String)>,
}

impl FileResolver for SchemaTexts {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let Some((_, text)) = self.files.iter().find(|(file, _)| file == name) else {
            return Err(protox::Error::file_not_found(name));
        };
        match File::from_source(name, text) {
            Ok(file) => Ok(file),
            Err(not_text) => match STANDARD
                .decode(text.trim())
                .ok()
                .and_then(|bytes| FileDescriptorProto::decode(bytes.as_slice()).ok())
            {
                Some(mut descriptor) => {
                    descriptor.name = Some(name.to_owned());
                    Ok(File::from_file_descriptor_proto(descriptor))
                }
                None => Err(not_text),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORDER: &str = r#"syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  google.protobuf.Timestamp placed = 3;
}"#;

    #[test]
    fn text_and_base64_of_one_schema_are_one_schema() {
        let text = ProtobufSchema::parse(ORDER, &[]).unwrap();
        let reformatted =
            ProtobufSchema::parse(&ORDER.replace('\n', "\n\n  ").replace("= 1", "=1"), &[])
                .unwrap();
        assert_eq!(text.serialized(), reformatted.serialized());
        let base64 = ProtobufSchema::parse(text.serialized(), &[]).unwrap();
        assert_eq!(text.serialized(), base64.serialized());
        let other = ProtobufSchema::parse(&ORDER.replace("int64 id", "int32 id"), &[]).unwrap();
        assert_ne!(text.serialized(), other.serialized());
    }

    #[test]
    fn a_bad_schema_is_refused_and_imports_come_from_references() {
        let error = ProtobufSchema::parse("message {", &[]).unwrap_err();
        assert_eq!(error.error_code(), 42201, "{error}");
        let line = r#"syntax = "proto3"; package shop; import "item.proto"; message Line { shop.Item item = 1; }"#;
        assert!(
            ProtobufSchema::parse(line, &[]).is_err(),
            "item.proto unknown"
        );
        let item = Referenced {
            name: "item.proto".to_owned(),
            schema: r#"syntax = "proto3"; package shop; message Item { string sku = 1; }"#
                .to_owned(),
        };
        ProtobufSchema::parse(line, &[item]).unwrap();
    }
}
