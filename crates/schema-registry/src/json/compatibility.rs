//! Whether a JSON Schema reads what another accepted — whether every document valid
//! under the writer's schema is valid under the reader's — by the rules Confluent's
//! registry applies (its content models: a property the reader adds to a writer's
//! *open* model may already hold anything in old data, so it is a change; to a closed
//! one it is not). No crate checks this; it is written here over the JSON values.
//! Keywords the rules do not cover must be unchanged. The work is bounded: a pair of
//! `$ref` targets is compared once, and a check that takes more than [`MAX_STEPS`]
//! comparisons is refused (a schema is client input).

use std::cell::Cell;
use std::collections::HashSet;

use serde_json::{Map, Value};

use super::JsonSchema;

/// How deep `$ref`s are followed: recursive schemas stop here, taken as agreeing.
const MAX_DEPTH: usize = 32;
/// The most node comparisons one check makes.
const MAX_STEPS: usize = 100_000;

/// The keywords the rules below compare; annotations, which change nothing a schema
/// accepts, are [`ANNOTATIONS`]. Any other keyword must be unchanged.
const HANDLED: [&str; 23] = [
    "$ref",
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "pattern",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "uniqueItems",
    "anyOf",
    "oneOf",
];
const ANNOTATIONS: [&str; 12] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "examples",
    "default",
    "definitions",
    "$defs",
    "readOnly",
    "writeOnly",
    "deprecated",
];

pub(super) fn reads(reader: &JsonSchema, writer: &JsonSchema) -> Result<(), String> {
    let steps = Cell::new(0);
    let mut check = Check {
        reader,
        writer,
        problems: Vec::new(),
        steps: &steps,
        followed: HashSet::new(),
    };
    check.node(
        (&reader.document, &reader.document),
        (&writer.document, &writer.document),
        "#",
        0,
    );
    if check.problems.is_empty() {
        Ok(())
    } else {
        Err(check.problems.join("; "))
    }
}

struct Check<'a> {
    reader: &'a JsonSchema,
    writer: &'a JsonSchema,
    problems: Vec<String>,
    /// Comparisons made so far, by this check and the trial checks it made.
    steps: &'a Cell<usize>,
    /// The pairs of `$ref` targets compared (by address: they live in the documents).
    followed: HashSet<(usize, usize)>,
}

/// A schema node and the document its local `$ref`s point into.
type Node<'a> = (&'a Value, &'a Value);

impl Check<'_> {
    fn problem(&mut self, path: &str, what: &str) {
        self.problems.push(format!("{what} at {path}"));
    }

    fn node(&mut self, reader: Node<'_>, writer: Node<'_>, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        self.steps.set(self.steps.get() + 1);
        if self.steps.get() > MAX_STEPS {
            if self.steps.get() == MAX_STEPS + 1 {
                self.problem(path, "the schemas are too large to compare");
            }
            return;
        }
        let referenced = reader.1.get("$ref").is_some() || writer.1.get("$ref").is_some();
        let reader = match resolve(self.reader, reader) {
            Ok(node) => node,
            Err(unresolved) => return self.unresolved(unresolved, writer.1, path),
        };
        let writer = match resolve(self.writer, writer) {
            Ok(node) => node,
            Err(unresolved) => return self.unresolved(unresolved, reader.1, path),
        };
        if referenced
            && !self.followed.insert((
                std::ptr::from_ref(reader.1) as usize,
                std::ptr::from_ref(writer.1) as usize,
            ))
        {
            return;
        }
        // Equal text is equal meaning only where no `$ref` may point elsewhere.
        let same = reader.1 == writer.1 && !has_ref(reader.1);
        if accepts_anything(reader.1) || writer.1 == &Value::Bool(false) || same {
            return;
        }
        let (Some(r), Some(w)) = (reader.1.as_object(), writer.1.as_object()) else {
            // The reader is `false` (or not a schema) and the writer accepted something.
            return self.problem(path, "the reader accepts less (a false schema)");
        };
        if self.alternatives(reader, writer, path, depth) {
            return;
        }
        let unhandled = |key: &&String| {
            !HANDLED.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str())
        };
        for keyword in r.keys().chain(w.keys()).filter(unhandled) {
            if r.get(keyword) != w.get(keyword) {
                self.problem(path, &format!("{keyword} changed"));
            }
        }
        self.types(r, w, path);
        self.enums(r, w, path);
        self.bounds(r, w, path);
        if r.get("pattern").is_some() && r.get("pattern") != w.get("pattern") {
            self.problem(path, "PATTERN_ADDED or PATTERN_CHANGED");
        }
        self.properties(reader, writer, path, depth);
        self.items(reader, writer, path, depth);
    }

    /// `anyOf`/`oneOf`: each of the writer's alternatives must be read, by one of the
    /// reader's if it has them. Whether the schemas had alternatives to compare.
    fn alternatives(
        &mut self,
        reader: Node<'_>,
        writer: Node<'_>,
        path: &str,
        depth: usize,
    ) -> bool {
        for keyword in ["anyOf", "oneOf"] {
            let Some(w) = writer.1.as_object() else { break };
            if let Some(alternatives) = w.get(keyword).and_then(Value::as_array) {
                let rest = without(w, keyword);
                for (i, alternative) in alternatives.iter().enumerate() {
                    let merged = merge(&rest, alternative);
                    self.node(
                        reader,
                        (writer.0, &merged),
                        &format!("{path}/{keyword}/{i}"),
                        depth + 1,
                    );
                }
                return true;
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            let Some(r) = reader.1.as_object() else { break };
            if let Some(alternatives) = r.get(keyword).and_then(Value::as_array) {
                let rest = without(r, keyword);
                let readable = alternatives.iter().any(|alternative| {
                    let merged = merge(&rest, alternative);
                    let mut trial = Check {
                        reader: self.reader,
                        writer: self.writer,
                        problems: Vec::new(),
                        steps: self.steps,
                        followed: self.followed.clone(),
                    };
                    trial.node((reader.0, &merged), writer, path, depth + 1);
                    trial.problems.is_empty()
                });
                if !readable {
                    self.problem(path, &format!("COMBINED_TYPE_SUBSCHEMAS_CHANGED: no {keyword} alternative reads the writer's schema"));
                }
                return true;
            }
        }
        false
    }

    fn items(&mut self, reader: Node<'_>, writer: Node<'_>, path: &str, depth: usize) {
        let (r, w) = (reader.1, writer.1);
        match r.get("items") {
            Some(items) if items.is_object() || items.is_boolean() => {
                let written = w.get("items").unwrap_or(&Value::Bool(true));
                self.node(
                    (reader.0, items),
                    (writer.0, written),
                    &format!("{path}/items"),
                    depth + 1,
                );
            }
            Some(items) if Some(items) != w.get("items") => self.problem(path, "items changed"),
            _ => {}
        }
        if r.get("uniqueItems") == Some(&Value::Bool(true))
            && w.get("uniqueItems") != Some(&Value::Bool(true))
        {
            self.problem(path, "UNIQUE_ITEMS_ADDED");
        }
    }

    /// A `$ref` that names no document here: only the same `$ref` reads it.
    fn unresolved(&mut self, reference: &str, other: &Value, path: &str) {
        if other.get("$ref").and_then(Value::as_str) != Some(reference) {
            self.problem(path, &format!("$ref {reference} cannot be compared"));
        }
    }

    fn types(&mut self, r: &Map<String, Value>, w: &Map<String, Value>, path: &str) {
        let Some(read) = types(r) else { return };
        let Some(written) = types(w) else {
            return self.problem(
                path,
                "TYPE_NARROWED: the reader names types, the writer did not",
            );
        };
        for written in written {
            let covered =
                read.contains(&written) || (written == "integer" && read.contains(&"number"));
            if !covered {
                self.problem(
                    path,
                    &format!("TYPE_CHANGED: {written} is no longer accepted"),
                );
            }
        }
    }

    fn enums(&mut self, r: &Map<String, Value>, w: &Map<String, Value>, path: &str) {
        for keyword in ["enum", "const"] {
            let Some(read) = r.get(keyword) else { continue };
            let allowed = |value: &Value| match (keyword, read) {
                ("enum", Value::Array(values)) => values.contains(value),
                _ => read == value,
            };
            let written: Vec<&Value> = match (w.get("enum"), w.get("const")) {
                (_, Some(value)) => vec![value],
                (Some(Value::Array(values)), None) => values.iter().collect(),
                _ => return self.problem(path, &format!("ENUM_ARRAY_NARROWED: {keyword} added")),
            };
            if !written.into_iter().all(allowed) {
                self.problem(
                    path,
                    &format!("ENUM_ARRAY_NARROWED: {keyword} accepts fewer values"),
                );
            }
        }
    }

    /// Lower bounds may only fall and upper bounds only rise.
    fn bounds(&mut self, r: &Map<String, Value>, w: &Map<String, Value>, path: &str) {
        let lower = [
            "minimum",
            "exclusiveMinimum",
            "minLength",
            "minItems",
            "minProperties",
        ];
        let upper = [
            "maximum",
            "exclusiveMaximum",
            "maxLength",
            "maxItems",
            "maxProperties",
        ];
        for (keyword, is_lower) in lower
            .iter()
            .map(|k| (k, true))
            .chain(upper.iter().map(|k| (k, false)))
        {
            let Some(read) = r.get(*keyword).and_then(Value::as_f64) else {
                continue;
            };
            let tightened = match w.get(*keyword).and_then(Value::as_f64) {
                None => true,
                Some(written) if is_lower => read > written,
                Some(written) => read < written,
            };
            if tightened {
                self.problem(path, &format!("{keyword} tightened"));
            }
        }
        if let Some(read) = r.get("multipleOf").and_then(Value::as_f64) {
            let divides = w
                .get("multipleOf")
                .and_then(Value::as_f64)
                .is_some_and(|written| (written / read).fract() == 0.0);
            if !divides {
                self.problem(path, "MULTIPLE_OF_ADDED or MULTIPLE_OF_CHANGED");
            }
        }
    }

    fn properties(&mut self, reader: Node<'_>, writer: Node<'_>, path: &str, depth: usize) {
        let (Some(r), Some(w)) = (reader.1.as_object(), writer.1.as_object()) else {
            return;
        };
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let read_props = r
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY);
        let written_props = w
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY);
        let open = Value::Bool(true);
        let read_extra = r.get("additionalProperties").unwrap_or(&open);
        let written_extra = w.get("additionalProperties").unwrap_or(&open);
        for (name, written) in written_props {
            let property_path = format!("{path}/properties/{name}");
            match read_props.get(name) {
                Some(read) => self.node(
                    (reader.0, read),
                    (writer.0, written),
                    &property_path,
                    depth + 1,
                ),
                None if read_extra == &Value::Bool(false) => {
                    self.problem(&property_path, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL");
                }
                None => self.node(
                    (reader.0, read_extra),
                    (writer.0, written),
                    &property_path,
                    depth + 1,
                ),
            }
        }
        for (name, read) in read_props
            .iter()
            .filter(|(name, _)| !written_props.contains_key(*name))
        {
            let property_path = format!("{path}/properties/{name}");
            if written_extra == &Value::Bool(false) {
                continue;
            }
            let before = self.problems.len();
            let written = if written_extra.is_boolean() {
                &open
            } else {
                written_extra
            };
            self.node(
                (reader.0, read),
                (writer.0, written),
                &property_path,
                depth + 1,
            );
            if self.problems.len() > before {
                self.problems.truncate(before);
                self.problem(&property_path, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL");
            }
        }
        if written_extra != &Value::Bool(false) && read_extra != written_extra {
            if read_extra == &Value::Bool(false) {
                self.problem(path, "ADDITIONAL_PROPERTIES_REMOVED");
            } else {
                let written = if written_extra.is_boolean() {
                    &open
                } else {
                    written_extra
                };
                self.node(
                    (reader.0, read_extra),
                    (writer.0, written),
                    &format!("{path}/additionalProperties"),
                    depth + 1,
                );
            }
        }
        let required = |map: &Map<String, Value>| -> Vec<String> {
            map.get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let written_required = required(w);
        for name in required(r) {
            if !written_required.contains(&name) {
                self.problem(path, &format!("REQUIRED_PROPERTY_ADDED: {name}"));
            }
        }
    }
}

/// Whether a `$ref` is anywhere inside `schema`.
fn has_ref(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.contains_key("$ref") || map.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

/// A schema that accepts every document.
fn accepts_anything(schema: &Value) -> bool {
    schema == &Value::Bool(true)
        || schema.as_object().is_some_and(|map| {
            map.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "$schema"
                        | "$id"
                        | "title"
                        | "description"
                        | "$comment"
                        | "examples"
                        | "default"
                        | "definitions"
                        | "$defs"
                )
            })
        })
}

/// The types a schema names (`None`: any).
fn types(schema: &Map<String, Value>) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(one) => Some(vec![one.as_str()]),
        Value::Array(many) => Some(many.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn without(map: &Map<String, Value>, keyword: &str) -> Map<String, Value> {
    let mut rest = map.clone();
    rest.remove(keyword);
    rest
}

/// A combinator's alternative with its parent's other keywords (what both apply).
fn merge(parent: &Map<String, Value>, alternative: &Value) -> Value {
    match alternative {
        Value::Object(own) => {
            let mut merged = parent.clone();
            merged.extend(own.clone());
            Value::Object(merged)
        }
        other => other.clone(),
    }
}

/// Follows `node`'s `$ref` (within its document, or into a referenced one): the
/// document and node it names, or the `$ref` itself if it names nothing here.
fn resolve<'a>(schema: &'a JsonSchema, node: Node<'a>) -> Result<Node<'a>, &'a str> {
    let mut current = node;
    for _ in 0..MAX_DEPTH {
        let Some(reference) = current.1.get("$ref").and_then(Value::as_str) else {
            return Ok(current);
        };
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target_document = if base.is_empty() {
            current.0
        } else {
            schema.referenced(base).ok_or(reference)?
        };
        let target = if fragment.is_empty() {
            target_document
        } else {
            target_document.pointer(fragment).ok_or(reference)?
        };
        current = (target_document, target);
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::super::JsonSchema;

    fn schema(text: &str) -> JsonSchema {
        JsonSchema::parse(text, &[]).unwrap()
    }

    fn closed(properties: &str, required: &str) -> JsonSchema {
        schema(&format!(
            r#"{{"type":"object","properties":{{{properties}}},"required":[{required}],"additionalProperties":false}}"#
        ))
    }

    #[test]
    fn content_models_decide_what_adding_and_removing_properties_means() {
        let v1 = closed(r#""id":{"type":"integer"}"#, r#""id""#);
        let optional_added = closed(
            r#""id":{"type":"integer"},"email":{"type":"string"}"#,
            r#""id""#,
        );
        let required_added = closed(
            r#""id":{"type":"integer"},"email":{"type":"string"}"#,
            r#""id","email""#,
        );
        // Closed: old data has no email, so a new optional one reads it…
        assert!(optional_added.reads(&v1).is_ok());
        // …a required one does not, and the old closed schema refuses new data with it.
        assert!(
            required_added
                .reads(&v1)
                .unwrap_err()
                .contains("REQUIRED_PROPERTY_ADDED")
        );
        assert!(
            v1.reads(&optional_added)
                .unwrap_err()
                .contains("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        );
        // Open: old data may hold anything under a new name.
        let open_v1 = schema(r#"{"type":"object","properties":{"id":{"type":"integer"}}}"#);
        let open_added = schema(
            r#"{"type":"object","properties":{"id":{"type":"integer"},"email":{"type":"string"}}}"#,
        );
        assert!(
            open_added
                .reads(&open_v1)
                .unwrap_err()
                .contains("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
        );
        assert!(open_v1.reads(&open_added).is_ok());
    }

    #[test]
    fn types_enums_and_bounds_may_widen_and_not_narrow() {
        let integer = schema(r#"{"type":"integer","maximum":10}"#);
        let number = schema(r#"{"type":"number","maximum":100}"#);
        assert!(number.reads(&integer).is_ok());
        let error = integer.reads(&number).unwrap_err();
        assert!(
            error.contains("TYPE_CHANGED") && error.contains("maximum"),
            "{error}"
        );
        let two = schema(r#"{"enum":["a","b"]}"#);
        let three = schema(r#"{"enum":["a","b","c"]}"#);
        assert!(three.reads(&two).is_ok());
        assert!(
            two.reads(&three)
                .unwrap_err()
                .contains("ENUM_ARRAY_NARROWED")
        );
        let either = schema(r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#);
        let string = schema(r#"{"type":"string"}"#);
        assert!(either.reads(&string).is_ok());
        assert!(string.reads(&either).is_err());
        let by_ref = schema(
            r##"{"$defs":{"id":{"type":"string"}},"type":"object","properties":{"id":{"$ref":"#/$defs/id"}},"additionalProperties":false}"##,
        );
        let inline = schema(
            r#"{"type":"object","properties":{"id":{"type":"integer"}},"additionalProperties":false}"#,
        );
        assert!(by_ref.reads(&inline).unwrap_err().contains("TYPE_CHANGED"));
    }

    #[test]
    fn recursive_schemas_are_compared_in_bounded_work() {
        let tree = |title: &str| {
            schema(&format!(
                r##"{{"title":"{title}","type":"object","properties":{{"a":{{"$ref":"#"}},"b":{{"$ref":"#"}},"c":{{"$ref":"#"}}}}}}"##
            ))
        };
        let started = std::time::Instant::now();
        assert!(tree("new").reads(&tree("old")).is_ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn equal_text_with_references_that_differ_is_compared() {
        use crate::schema::Referenced;
        let with = |id_type: &str| {
            let id = Referenced {
                name: "id.json".to_owned(),
                schema: format!(r#"{{"type":"{id_type}"}}"#),
            };
            JsonSchema::parse(
                r#"{"type":"object","properties":{"id":{"$ref":"id.json"}},"additionalProperties":false}"#,
                &[id],
            )
            .unwrap()
        };
        assert!(with("number").reads(&with("integer")).is_ok());
        assert!(
            with("string")
                .reads(&with("integer"))
                .unwrap_err()
                .contains("TYPE_CHANGED")
        );
    }

    #[test]
    fn a_readers_alternatives_keep_its_other_keywords_and_unknown_keywords_must_not_change() {
        // The reader's alternatives apply with its `maxLength`: a longer writer is not read.
        let reader = schema(r#"{"maxLength":3,"anyOf":[{"type":"string"},{"type":"null"}]}"#);
        let writer = schema(r#"{"type":"string","maxLength":10}"#);
        assert!(reader.reads(&writer).is_err());
        let plain = schema(r#"{"type":"array","items":{"type":"integer"}}"#);
        let contains =
            schema(r#"{"type":"array","items":{"type":"integer"},"contains":{"const":1}}"#);
        assert!(
            contains
                .reads(&plain)
                .unwrap_err()
                .contains("contains changed")
        );
        let titled = schema(r#"{"type":"array","items":{"type":"integer"},"title":"numbers"}"#);
        assert!(titled.reads(&plain).is_ok(), "annotations change nothing");
    }
}
