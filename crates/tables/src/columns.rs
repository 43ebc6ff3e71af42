//! A registry schema's fields as Iceberg columns: an Avro record's fields, or a JSON
//! Schema object's properties, each an optional column of the nearest Iceberg type.
//! What has no Iceberg type of its own (a union of several types, a JSON Schema
//! alternative, an object without properties) is a text column holding the value as
//! JSON. Also: the columns a table lacks of a newer schema (compatible evolution adds
//! them).

use std::collections::HashMap;

use apache_avro::Schema as Avro;
use apache_avro::schema::Name;
use iceberg::spec::{
    ListType, MapType, NestedField, NestedFieldRef, PrimitiveType, StructType, Type,
};
use serde_json::Value;

use crate::error::TableError;

/// The deepest nesting of types followed (a recursive type stops there).
const MAX_DEPTH: usize = 32;

/// A value schema from the registry.
#[derive(Debug, Clone, Copy)]
pub enum ValueSchema<'a> {
    Avro(&'a Avro),
    Json(&'a Value),
}

/// Hands out field ids.
pub(crate) struct Ids(pub(crate) i32);

impl Ids {
    fn next(&mut self) -> i32 {
        self.0 += 1;
        self.0
    }
}

/// The value's fields as columns, with ids after `ids`.
pub(crate) fn value_columns(
    schema: ValueSchema<'_>,
    ids: &mut Ids,
) -> Result<Vec<NestedFieldRef>, TableError> {
    let Type::Struct(fields) = (match schema {
        ValueSchema::Avro(avro) => {
            let names = named_types(avro);
            avro_type(avro, &names, ids, 0)
        }
        ValueSchema::Json(document) => json_type(document, document, ids, 0),
    }) else {
        return Err(TableError::Schema(
            "table.schema=registry needs a value schema of a record (Avro) or an object with properties (JSON Schema)".to_owned(),
        ));
    };
    Ok(fields.fields().to_vec())
}

fn optional(ids: &mut Ids, name: &str, field_type: Type) -> NestedFieldRef {
    NestedField::optional(ids.next(), name, field_type).into()
}

fn text() -> Type {
    Type::Primitive(PrimitiveType::String)
}

/// Every named type (record, enum, fixed) defined in `schema`, by full name.
fn named_types(schema: &Avro) -> HashMap<Name, &Avro> {
    fn walk<'a>(schema: &'a Avro, names: &mut HashMap<Name, &'a Avro>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match schema {
            Avro::Record(record) if names.insert(record.name.clone(), schema).is_none() => {
                for field in &record.fields {
                    walk(&field.schema, names, depth + 1);
                }
            }
            Avro::Enum(e) => {
                names.insert(e.name.clone(), schema);
            }
            Avro::Fixed(f) => {
                names.insert(f.name.clone(), schema);
            }
            Avro::Array(array) => walk(&array.items, names, depth + 1),
            Avro::Map(map) => walk(&map.types, names, depth + 1),
            Avro::Union(union) => {
                for variant in union.variants() {
                    walk(variant, names, depth + 1);
                }
            }
            _ => {}
        }
    }
    let mut names = HashMap::new();
    walk(schema, &mut names, 0);
    names
}

fn avro_type(schema: &Avro, names: &HashMap<Name, &Avro>, ids: &mut Ids, depth: usize) -> Type {
    use PrimitiveType as P;
    if depth > MAX_DEPTH {
        return text();
    }
    let primitive = Type::Primitive;
    match schema {
        Avro::Boolean => primitive(P::Boolean),
        Avro::Int => primitive(P::Int),
        Avro::Long => primitive(P::Long),
        Avro::Float => primitive(P::Float),
        Avro::Double => primitive(P::Double),
        Avro::Bytes | Avro::Fixed(_) | Avro::Duration => primitive(P::Binary),
        Avro::Null | Avro::String | Avro::Enum(_) | Avro::Uuid | Avro::BigDecimal => text(),
        Avro::Date => primitive(P::Date),
        Avro::TimeMillis | Avro::TimeMicros => primitive(P::Time),
        Avro::TimestampMillis | Avro::TimestampMicros | Avro::TimestampNanos => {
            primitive(P::Timestamptz)
        }
        Avro::LocalTimestampMillis | Avro::LocalTimestampMicros | Avro::LocalTimestampNanos => {
            primitive(P::Timestamp)
        }
        Avro::Decimal(decimal) if decimal.precision <= 38 => primitive(P::Decimal {
            precision: u32::try_from(decimal.precision).unwrap_or(38),
            scale: u32::try_from(decimal.scale).unwrap_or(0),
        }),
        Avro::Decimal(_) => text(),
        Avro::Array(array) => Type::List(ListType::new(
            NestedField::list_element(
                ids.next(),
                avro_type(&array.items, names, ids, depth + 1),
                false,
            )
            .into(),
        )),
        Avro::Map(map) => {
            let key = NestedField::map_key_element(ids.next(), text());
            let value = avro_type(&map.types, names, ids, depth + 1);
            Type::Map(MapType::new(
                key.into(),
                NestedField::map_value_element(ids.next(), value, false).into(),
            ))
        }
        Avro::Union(union) => {
            let present: Vec<&Avro> = union
                .variants()
                .iter()
                .filter(|variant| !matches!(variant, Avro::Null))
                .collect();
            match present.as_slice() {
                [one] => avro_type(one, names, ids, depth + 1),
                _ => text(),
            }
        }
        Avro::Record(record) => Type::Struct(StructType::new(
            record
                .fields
                .iter()
                .map(|field| {
                    let field_type = avro_type(&field.schema, names, ids, depth + 1);
                    optional(ids, &field.name, field_type)
                })
                .collect(),
        )),
        Avro::Ref { name } => names
            .get(name)
            .map_or_else(text, |named| avro_type(named, names, ids, depth + 1)),
    }
}

fn json_type(schema: &Value, document: &Value, ids: &mut Ids, depth: usize) -> Type {
    use PrimitiveType as P;
    if depth > MAX_DEPTH {
        return text();
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        return target
            .strip_prefix('#')
            .and_then(|pointer| document.pointer(pointer))
            .map_or_else(text, |found| json_type(found, document, ids, depth + 1));
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(several)) => several
            .iter()
            .filter_map(Value::as_str)
            .filter(|name| *name != "null")
            .collect(),
        _ => Vec::new(),
    };
    match types.as_slice() {
        ["boolean"] => Type::Primitive(P::Boolean),
        ["integer"] => Type::Primitive(P::Long),
        ["number"] => Type::Primitive(P::Double),
        ["array"] => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let element = json_type(items, document, ids, depth + 1);
            Type::List(ListType::new(
                NestedField::list_element(ids.next(), element, false).into(),
            ))
        }
        ["object"] => match schema.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => Type::Struct(StructType::new(
                properties
                    .iter()
                    .map(|(name, property)| {
                        let field_type = json_type(property, document, ids, depth + 1);
                        optional(ids, name, field_type)
                    })
                    .collect(),
            )),
            _ => text(),
        },
        _ => text(),
    }
}

/// A column the table lacks: its parent's full name (`None` at the top) and the
/// field (its ids assigned again when it is added).
#[derive(Debug, Clone)]
pub(crate) struct Missing {
    pub(crate) parent: Option<String>,
    pub(crate) field: NestedFieldRef,
}

/// The fields of `wanted` that `have` lacks, by name, in structs at any depth (in
/// list elements and map values too).
pub(crate) fn missing(
    have: &StructType,
    wanted: &StructType,
    parent: Option<&str>,
) -> Vec<Missing> {
    let mut found = Vec::new();
    for field in wanted.fields() {
        let name = match parent {
            Some(parent) => format!("{parent}.{}", field.name),
            None => field.name.clone(),
        };
        match have.field_by_name(&field.name) {
            None => found.push(Missing {
                parent: parent.map(str::to_owned),
                field: field.clone(),
            }),
            Some(existing) => {
                found.extend(missing_within(
                    &existing.field_type,
                    &field.field_type,
                    &name,
                ));
            }
        }
    }
    found
}

fn missing_within(have: &Type, wanted: &Type, name: &str) -> Vec<Missing> {
    match (have, wanted) {
        (Type::Struct(have), Type::Struct(wanted)) => missing(have, wanted, Some(name)),
        (Type::List(have), Type::List(wanted)) => missing_within(
            &have.element_field.field_type,
            &wanted.element_field.field_type,
            &format!("{name}.element"),
        ),
        (Type::Map(have), Type::Map(wanted)) => missing_within(
            &have.value_field.field_type,
            &wanted.value_field.field_type,
            &format!("{name}.value"),
        ),
        _ => Vec::new(),
    }
}
