//! Whether a JSON Schema reads what another accepted — whether every document valid
//! under the writer's schema is valid under the reader's — by the rules Confluent's
//! registry applies (its content models: a property the reader adds to a writer's
//! *open* model may already hold anything in old data, so it is a change; to a closed
//! one it is not). No crate checks this; it is written here over the JSON values.
//! Keywords the rules do not cover must be unchanged.

use serde_json::{Map, Value};

use super::JsonSchema;

/// How deep `$ref`s are followed: recursive schemas stop here, taken as agreeing.
const MAX_DEPTH: usize = 32;

/// Keywords a reader may not change without a rule saying what the change means.
const UNCHANGED_KEYWORDS: [&str; 7] = [
    "allOf",
    "not",
    "if",
    "patternProperties",
    "dependencies",
    "dependentSchemas",
    "prefixItems",
];

pub(super) fn reads(reader: &JsonSchema, writer: &JsonSchema) -> Result<(), String> {
    let mut check = Check {
        reader,
        writer,
        problems: Vec::new(),
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
        let reader = match resolve(self.reader, reader) {
            Ok(node) => node,
            Err(unresolved) => return self.unresolved(unresolved, writer.1, path),
        };
        let writer = match resolve(self.writer, writer) {
            Ok(node) => node,
            Err(unresolved) => return self.unresolved(unresolved, reader.1, path),
        };
        if accepts_anything(reader.1) || writer.1 == &Value::Bool(false) || reader.1 == writer.1 {
            return;
        }
        let (Some(r), Some(w)) = (reader.1.as_object(), writer.1.as_object()) else {
            // The reader is `false` (or not a schema) and the writer accepted something.
            return self.problem(path, "the reader accepts less (a false schema)");
        };
        if self.alternatives(reader, writer, path, depth) {
            return;
        }
        for keyword in UNCHANGED_KEYWORDS {
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
                let readable = alternatives.iter().any(|alternative| {
                    let mut inner = Check {
                        reader: self.reader,
                        writer: self.writer,
                        problems: Vec::new(),
                    };
                    inner.node((reader.0, alternative), writer, path, depth + 1);
                    inner.problems.is_empty()
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
}
