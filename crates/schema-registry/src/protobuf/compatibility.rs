//! Whether a Protobuf schema reads data written with another, by the rules
//! Confluent's registry applies (its `PACKAGE_CHANGED`, `MESSAGE_REMOVED`,
//! `FIELD_KIND_CHANGED`, `FIELD_SCALAR_KIND_CHANGED`, `FIELD_NAMED_TYPE_CHANGED`,
//! `REQUIRED_FIELD_ADDED`, `ONEOF_FIELD_REMOVED`, `MULTIPLE_FIELDS_MOVED_TO_ONEOF`):
//! compared message by message (by full name) and field by field (by number), since
//! the wire format knows only numbers and wire types. No crate checks this; it is
//! written here over `prost-reflect`'s descriptors.

use std::collections::HashMap;

use prost_reflect::{FileDescriptor, Kind, MessageDescriptor};

/// Why `reader` cannot read what `writer` wrote, if it cannot.
pub(super) fn reads(reader: &FileDescriptor, writer: &FileDescriptor) -> Result<(), String> {
    let mut problems = Vec::new();
    if reader.package_name() != writer.package_name() {
        problems.push(format!(
            "PACKAGE_CHANGED: {} became {}",
            writer.package_name(),
            reader.package_name()
        ));
    }
    let read: HashMap<String, MessageDescriptor> = messages(reader)
        .map(|message| (message.full_name().to_owned(), message))
        .collect();
    for written in messages(writer) {
        match read.get(written.full_name()) {
            Some(read) => compare_messages(read, &written, &mut problems),
            None => problems.push(format!("MESSAGE_REMOVED: {}", written.full_name())),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The file's messages, nested ones too (map entries are their fields' business).
fn messages(file: &FileDescriptor) -> impl Iterator<Item = MessageDescriptor> + '_ {
    let mut pending: Vec<MessageDescriptor> = file.messages().collect();
    std::iter::from_fn(move || {
        let next = pending.pop()?;
        pending.extend(next.child_messages().filter(|m| !m.is_map_entry()));
        Some(next)
    })
}

fn compare_messages(
    read: &MessageDescriptor,
    written: &MessageDescriptor,
    problems: &mut Vec<String>,
) {
    let name = read.full_name();
    for field in written.fields() {
        let Some(reading) = read.get_field(field.number()) else {
            if field.containing_oneof().is_some_and(|o| !o.is_synthetic()) {
                problems.push(format!("ONEOF_FIELD_REMOVED: {name}.{}", field.name()));
            }
            continue;
        };
        if let Some(change) = kind_change(&reading.kind(), &field.kind())
            .or_else(|| (reading.is_map() != field.is_map()).then_some("FIELD_KIND_CHANGED"))
        {
            problems.push(format!(
                "{change}: {name}.{} (field {}) was {} and is {}",
                reading.name(),
                field.number(),
                kind_name(&field.kind()),
                kind_name(&reading.kind())
            ));
        }
        if reading.is_required() && !field.is_required() {
            problems.push(format!("REQUIRED_FIELD_ADDED: {name}.{}", reading.name()));
        }
    }
    for reading in read.fields() {
        if reading.is_required() && written.get_field(reading.number()).is_none() {
            problems.push(format!("REQUIRED_FIELD_ADDED: {name}.{}", reading.name()));
        }
    }
    for oneof in read.oneofs().filter(|o| !o.is_synthetic()) {
        let moved_in = oneof
            .fields()
            .filter(|f| {
                written
                    .get_field(f.number())
                    .is_some_and(|w| w.containing_oneof().is_none_or(|o| o.is_synthetic()))
            })
            .count();
        if moved_in > 1 {
            problems.push(format!(
                "MULTIPLE_FIELDS_MOVED_TO_ONEOF: {name}.{}",
                oneof.name()
            ));
        }
    }
}

/// How a field's type changed in a way its wire data does not survive, if it did.
fn kind_change(read: &Kind, written: &Kind) -> Option<&'static str> {
    match (read, written) {
        (Kind::Message(r), Kind::Message(w)) => {
            (r.full_name() != w.full_name()).then_some("FIELD_NAMED_TYPE_CHANGED")
        }
        (Kind::Enum(r), Kind::Enum(w)) => {
            (r.full_name() != w.full_name()).then_some("FIELD_NAMED_TYPE_CHANGED")
        }
        (Kind::Message(_) | Kind::Enum(_), _) | (_, Kind::Message(_) | Kind::Enum(_)) => {
            Some("FIELD_KIND_CHANGED")
        }
        (r, w) => (scalar_family(r) != scalar_family(w)).then_some("FIELD_SCALAR_KIND_CHANGED"),
    }
}

/// Scalars whose encodings read as one another (the Protobuf guide's "compatible"
/// type changes): varints, zigzag varints, 32- and 64-bit fixed, length-delimited.
fn scalar_family(kind: &Kind) -> u8 {
    match kind {
        Kind::Int32 | Kind::Uint32 | Kind::Int64 | Kind::Uint64 | Kind::Bool => 0,
        Kind::Sint32 | Kind::Sint64 => 1,
        Kind::Fixed32 | Kind::Sfixed32 => 2,
        Kind::Fixed64 | Kind::Sfixed64 => 3,
        Kind::String | Kind::Bytes => 4,
        Kind::Float => 5,
        Kind::Double => 6,
        Kind::Message(_) | Kind::Enum(_) => 7,
    }
}

fn kind_name(kind: &Kind) -> String {
    match kind {
        Kind::Message(message) => message.full_name().to_owned(),
        Kind::Enum(enumeration) => enumeration.full_name().to_owned(),
        scalar => format!("{scalar:?}").to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ProtobufSchema;

    fn schema(body: &str) -> ProtobufSchema {
        ProtobufSchema::parse(&format!("syntax = \"proto3\"; package shop; {body}"), &[]).unwrap()
    }

    #[test]
    fn fields_added_or_removed_read_and_changed_kinds_do_not() {
        let v1 = schema("message Order { int64 id = 1; string note = 2; }");
        let added = schema("message Order { int64 id = 1; string note = 2; bool paid = 3; }");
        let removed = schema("message Order { int64 id = 1; }");
        let widened = schema("message Order { int32 id = 1; bytes note = 2; }");
        let changed = schema("message Order { string id = 1; string note = 2; }");
        assert!(added.reads(&v1).is_ok() && v1.reads(&added).is_ok());
        assert!(removed.reads(&v1).is_ok() && v1.reads(&removed).is_ok());
        assert!(
            widened.reads(&v1).is_ok(),
            "varint and length-delimited families"
        );
        let error = changed.reads(&v1).unwrap_err();
        assert!(error.contains("FIELD_SCALAR_KIND_CHANGED"), "{error}");
        let renamed = schema("message Purchase { int64 id = 1; }");
        assert!(renamed.reads(&v1).unwrap_err().contains("MESSAGE_REMOVED"));
        let moved = schema("message Order { oneof which { int64 id = 1; string note = 2; } }");
        assert!(
            moved
                .reads(&v1)
                .unwrap_err()
                .contains("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
        );
    }
}
