//! JSON Schemas, through `jsonschema`: a schema is checked against its draft's
//! meta-schema and compiled with the schemas it refers to (its references, by the
//! `$ref` URL naming them), so that a bad keyword or a `$ref` to nothing is refused.
//! The canonical text is the client's JSON written out compactly with its keys in one
//! order, as for Avro.

use std::sync::Arc;

use serde_json::Value;

use crate::error::RegistryError;
use crate::schema::Referenced;

mod compatibility;

/// A parsed JSON Schema, with the documents its `$ref`s may name.
#[derive(Debug, Clone)]
pub(crate) struct JsonSchema {
    document: Arc<Value>,
    references: Arc<Vec<(String, Value)>>,
    canonical: String,
}

impl JsonSchema {
    pub(crate) fn document(&self) -> &Value {
        &self.document
    }

    pub(crate) fn parse(
        text: &str,
        references: &[Referenced],
    ) -> Result<JsonSchema, RegistryError> {
        let invalid = |error: &dyn std::fmt::Display| {
            RegistryError::InvalidSchema(format!("Invalid schema {text}: {error}"))
        };
        let document: Value = serde_json::from_str(text).map_err(|e| invalid(&e))?;
        if !document.is_object() && !document.is_boolean() {
            return Err(invalid(&"a JSON Schema is an object or a boolean"));
        }
        jsonschema::meta::validate(&document).map_err(|e| invalid(&e))?;
        let mut documents = Vec::with_capacity(references.len());
        for reference in references {
            let referenced: Value =
                serde_json::from_str(&reference.schema).map_err(|e| invalid(&e))?;
            documents.push((reference.name.clone(), referenced));
        }
        let references = Arc::new(documents);
        jsonschema::options()
            .with_retriever(ReferencedDocuments(Arc::clone(&references)))
            .build(&document)
            .map_err(|e| invalid(&e))?;
        let canonical = serde_json::to_string(&document).map_err(|e| invalid(&e))?;
        Ok(JsonSchema {
            document: Arc::new(document),
            references,
            canonical,
        })
    }

    pub(crate) fn canonical(&self) -> &str {
        &self.canonical
    }

    pub(crate) fn reads(&self, writer: &JsonSchema) -> Result<(), String> {
        compatibility::reads(self, writer)
    }

    /// The document a `$ref` names before its `#`: a reference's, if one has that
    /// name (or ends in `/name`).
    fn referenced(&self, name: &str) -> Option<&Value> {
        find_reference(&self.references, name)
    }
}

fn find_reference<'a>(references: &'a [(String, Value)], uri: &str) -> Option<&'a Value> {
    references
        .iter()
        .find(|(name, _)| uri == name || uri.ends_with(&format!("/{name}")))
        .map(|(_, document)| document)
}

/// Hands `jsonschema` the referenced documents; nothing is fetched from anywhere else.
struct ReferencedDocuments(Arc<Vec<(String, Value)>>);

impl jsonschema::Retrieve for ReferencedDocuments {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        find_reference(&self.0, uri.as_str())
            .cloned()
            .ok_or_else(|| format!("{} is not among the schema's references", uri.as_str()).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_schema_written_differently_has_one_canonical_text() {
        let one = JsonSchema::parse(
            r#"{"type": "object", "properties": {"id": {"type": "integer"}}}"#,
            &[],
        )
        .unwrap();
        let two = JsonSchema::parse(
            r#"{"properties":{"id":{"type":"integer"}},"type":"object"}"#,
            &[],
        )
        .unwrap();
        assert_eq!(one.canonical(), two.canonical());
    }

    #[test]
    fn a_bad_schema_or_a_ref_to_nothing_is_refused() {
        for bad in [
            "not json",
            r#"{"type": "whatever"}"#,
            r#"{"minLength": -1}"#,
            r#"{"$ref": "address.json"}"#,
        ] {
            let error = JsonSchema::parse(bad, &[]).unwrap_err();
            assert_eq!(error.error_code(), 42201, "{bad}: {error}");
        }
        let address = Referenced {
            name: "address.json".to_owned(),
            schema: r#"{"type":"object","properties":{"city":{"type":"string"}}}"#.to_owned(),
        };
        JsonSchema::parse(r#"{"$ref": "address.json"}"#, &[address]).unwrap();
    }
}
