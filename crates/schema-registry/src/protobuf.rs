//! Protobuf schemas, through `protox` (a Protobuf compiler in Rust) and
//! `prost-reflect`: a schema is `.proto` text or — as confluent-kafka's serializers
//! send it — a `FileDescriptorProto` in base64; either is compiled with the schemas
//! it imports (its references, by import name; Google's well-known types are built in).
//! Its identity is its descriptor, encoded without source positions or JSON names, so
//! the text and the base64 of one schema are one schema; the text answered is the one
//! first registered. A value written with a schema is read as a JSON document (for
//! the message index's `value:` fields).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::{DynamicMessage, FileDescriptor, MessageDescriptor, SerializeOptions};
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

    /// A value in Confluent's Protobuf framing after the schema id — the message's
    /// indexes in the schema, then the message — as its proto3 JSON form, except
    /// that fields keep the names the schema gives them, 64-bit integers are
    /// numbers and fields at their default are written (a `0` or `""` is found).
    pub(crate) fn document(&self, body: &[u8]) -> Result<serde_json::Value, String> {
        let (indexes, message) = message_indexes(body)?;
        let descriptor = self.message(&indexes)?;
        let decoded = DynamicMessage::decode(descriptor, message).map_err(|e| e.to_string())?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .stringify_64_bit_integers(false)
            .skip_default_fields(false);
        decoded
            .serialize_with_options(serde_json::value::Serializer, &options)
            .map_err(|e| e.to_string())
    }

    /// The message `indexes` names: the first a message of the file, each next one
    /// nested in the one before.
    fn message(&self, indexes: &[usize]) -> Result<MessageDescriptor, String> {
        let missing = || format!("the schema has no message {indexes:?}");
        let (first, nested) = indexes.split_first().ok_or_else(missing)?;
        let mut message = self.file.messages().nth(*first).ok_or_else(missing)?;
        for index in nested {
            let child = message.child_messages().nth(*index);
            message = child.ok_or_else(missing)?;
        }
        Ok(message)
    }
}

/// Confluent's message indexes at the start of `body` and what follows them: a
/// count and that many indexes, zigzag varints; a count of 0 is the first message
/// (`[0]`). A count is never believed past the bytes there are.
fn message_indexes(body: &[u8]) -> Result<(Vec<usize>, &[u8]), String> {
    let mut rest = body;
    let count = zigzag(&mut rest)?;
    if count == 0 {
        return Ok((vec![0], rest));
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|count| *count <= rest.len())
        .ok_or_else(|| format!("{count} message indexes in {} bytes", rest.len()))?;
    let mut indexes = Vec::with_capacity(count);
    for _ in 0..count {
        let index = zigzag(&mut rest)?;
        indexes.push(usize::try_from(index).map_err(|_| format!("message index {index}"))?);
    }
    Ok((indexes, rest))
}

/// A zigzag varint (at most 10 bytes) taken from the front of `bytes`.
fn zigzag(bytes: &mut &[u8]) -> Result<i64, String> {
    let mut value = 0_u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            #[allow(clippy::cast_possible_wrap)] // zigzag: the sign is the low bit
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err("the message indexes are cut short".to_owned())
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

    #[test]
    fn a_value_reads_as_a_json_document_by_its_message_indexes() {
        let schema = r#"syntax = "proto3";
package shop;
message Other { string x = 1; }
message Order {
  int64 id = 1;
  string customer = 2;
  Status status = 3;
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; }
  repeated Line lines = 4;
}"#;
        let parsed = ProtobufSchema::parse(schema, &[]).unwrap();
        // Order (message 1): id 42, customer "ann", lines [{sku "a"}]; status left
        // at its default.
        let order = [8, 42, 18, 3, b'a', b'n', b'n', 34, 3, 10, 1, b'a'];
        let framed = |indexes: &[u8]| [indexes, &order[..]].concat();
        let document = parsed.document(&framed(&[2, 2])).unwrap();
        assert_eq!(
            document,
            serde_json::json!({"id": 42, "customer": "ann", "status": "NEW",
                "lines": [{"sku": "a"}]})
        );
        // A count of 0 is the first message; [1, 0] the first nested in Order.
        let other = parsed.document(&[0, 10, 1, b'z']).unwrap();
        assert_eq!(other, serde_json::json!({"x": "z"}));
        let line = parsed.document(&[4, 2, 0, 10, 1, b'q']).unwrap();
        assert_eq!(line, serde_json::json!({"sku": "q"}));
        for bad in [&[2_u8, 8][..], &[0xff; 11], &[200, 1, 2], &[]] {
            assert!(parsed.document(bad).is_err(), "{bad:?}");
        }
    }
}
