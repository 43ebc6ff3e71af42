//! What a topic indexes (`index.fields`) and the values a record has for each.
//!
//! - `key`: the record's key, as its bytes;
//! - `header:NAME`: the value of each header named NAME (a record with the header
//!   twice has two values);
//! - `value:$.path`: the scalar at the path of the value's document, as text: a
//!   string's characters, a number as JSON writes it, `true` or `false`. Null,
//!   objects and arrays are not indexed. What a value's document is, a
//!   [`ValueReader`] says: [`JsonValues`] reads a value that is a JSON object or
//!   array (or JSON in the schema registry's wire format: a zero byte and a 4-byte
//!   schema id before it); the broker's reader also decodes values written with the
//!   registry's Avro and Protobuf schemas.
//!
//! A query's value is compared with these bytes exactly.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::IndexError;
use crate::json_path::JsonPath;

/// The most fields a topic may index.
pub const MAX_FIELDS: usize = 16;

/// What a record's value is to the `value:` fields: a JSON document, or none.
pub trait ValueReader {
    /// The document of `value` (`None`: it has none, as a value that is not JSON);
    /// an error when that cannot be told now (the registry its schema is in cannot be
    /// read), so that the record is read again later rather than left out.
    fn document(&self, value: &[u8]) -> Result<Option<Value>, IndexError>;
}

/// Values read as JSON objects or arrays, framed for the schema registry or not.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonValues;

impl ValueReader for JsonValues {
    fn document(&self, value: &[u8]) -> Result<Option<Value>, IndexError> {
        Ok(parse_json(Some(value)))
    }
}

/// One indexed field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexField {
    Key,
    Header(String),
    Value(JsonPath),
}

/// A record as the index sees it.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a [u8], Option<&'a [u8]>)],
}

impl IndexField {
    /// Parses one field: `key`, `header:NAME` or `value:$.path`.
    pub fn parse(text: &str) -> Result<IndexField, IndexError> {
        let text = text.trim();
        if text == "key" {
            return Ok(IndexField::Key);
        }
        if let Some(name) = text.strip_prefix("header:") {
            if name.is_empty() {
                return Err(IndexError::BadField("header: needs a header name".into()));
            }
            return Ok(IndexField::Header(name.to_owned()));
        }
        if let Some(path) = text.strip_prefix("value:") {
            return JsonPath::parse(path)
                .map(IndexField::Value)
                .map_err(IndexError::BadField);
        }
        Err(IndexError::BadField(format!(
            "{text}: expected key, header:NAME or value:$.path"
        )))
    }

    /// The field's values in `record`, in the order they appear. `json` is the
    /// record's value parsed as JSON (once per record, shared by the value fields).
    pub fn values<'a>(
        &self,
        record: &RecordView<'a>,
        json: Option<&'a Value>,
        into: &mut Vec<Cow<'a, [u8]>>,
    ) {
        match self {
            IndexField::Key => into.extend(record.key.map(Cow::Borrowed)),
            IndexField::Header(name) => into.extend(
                record
                    .headers
                    .iter()
                    .filter(|(key, _)| *key == name.as_bytes())
                    .filter_map(|(_, value)| value.map(Cow::Borrowed)),
            ),
            IndexField::Value(path) => {
                let text = json.and_then(|document| path.find(document));
                match text {
                    Some(Value::String(text)) => into.push(Cow::Borrowed(text.as_bytes())),
                    Some(Value::Number(number)) => {
                        into.push(Cow::Owned(number.to_string().into_bytes()));
                    }
                    Some(Value::Bool(true)) => into.push(Cow::Borrowed(b"true")),
                    Some(Value::Bool(false)) => into.push(Cow::Borrowed(b"false")),
                    _ => {}
                }
            }
        }
    }

    /// Whether `record` has `value` for this field (`reader` reads its value, for a
    /// `value:` field).
    pub fn matches(
        &self,
        record: &RecordView<'_>,
        value: &[u8],
        reader: &dyn ValueReader,
    ) -> Result<bool, IndexError> {
        let json = match (self, record.value) {
            (IndexField::Value(_), Some(bytes)) => reader.document(bytes)?,
            _ => None,
        };
        let mut values = Vec::new();
        self.values(record, json.as_ref(), &mut values);
        Ok(values.iter().any(|found| found.as_ref() == value))
    }

    /// Whether the field reads the record's value as JSON.
    #[must_use]
    pub fn reads_json(&self) -> bool {
        matches!(self, IndexField::Value(_))
    }
}

impl fmt::Display for IndexField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexField::Key => f.write_str("key"),
            IndexField::Header(name) => write!(f, "header:{name}"),
            IndexField::Value(path) => write!(f, "value:{}", path.as_str()),
        }
    }
}

/// A record's value as JSON, if it is a JSON object or array (in the schema
/// registry's wire format or not); `None` otherwise.
#[must_use]
pub fn parse_json(value: Option<&[u8]>) -> Option<Value> {
    let value = value?;
    let text = match value {
        // The schema registry's wire format: magic 0, a 4-byte schema id, then JSON.
        [0, _, _, _, _, rest @ ..] => rest,
        _ => value,
    };
    let first = text.iter().find(|byte| !byte.is_ascii_whitespace())?;
    if *first != b'{' && *first != b'[' {
        return None;
    }
    serde_json::from_slice(text).ok()
}

/// A topic's `index.fields`: at most [`MAX_FIELDS`] distinct fields, in the order
/// written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexFields(Vec<IndexField>);

impl IndexFields {
    /// Parses a comma-separated list; empty text is no field.
    pub fn parse(text: &str) -> Result<IndexFields, IndexError> {
        let mut fields: Vec<IndexField> = Vec::new();
        for part in text.split(',').filter(|part| !part.trim().is_empty()) {
            let field = IndexField::parse(part)?;
            if fields.contains(&field) {
                return Err(IndexError::BadField(format!("{field} is named twice")));
            }
            fields.push(field);
        }
        if fields.len() > MAX_FIELDS {
            return Err(IndexError::BadField(format!(
                "{} fields: at most {MAX_FIELDS}",
                fields.len()
            )));
        }
        Ok(IndexFields(fields))
    }

    #[must_use]
    pub fn fields(&self) -> &[IndexField] {
        &self.0
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a field reads records' headers.
    #[must_use]
    pub fn reads_headers(&self) -> bool {
        self.0
            .iter()
            .any(|field| matches!(field, IndexField::Header(_)))
    }

    /// The field written as `name` (`key`, `header:NAME`, `value:$.path`).
    #[must_use]
    pub fn position(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|field| field.to_string() == name)
    }

    /// Every field's values of `record`, by field: `each(field index, value)`;
    /// `reader` reads its value for the `value:` fields. Per record on the index's
    /// build path: nothing is allocated but a value's document (and a number's text).
    pub fn each_value(
        &self,
        record: &RecordView<'_>,
        reader: &dyn ValueReader,
        mut each: impl FnMut(usize, &[u8]),
    ) -> Result<(), IndexError> {
        let json = match record.value {
            Some(value) if self.0.iter().any(IndexField::reads_json) => reader.document(value)?,
            _ => None,
        };
        for (index, field) in self.0.iter().enumerate() {
            match field {
                IndexField::Key => {
                    if let Some(key) = record.key {
                        each(index, key);
                    }
                }
                IndexField::Header(name) => {
                    for (key, value) in record.headers {
                        if *key == name.as_bytes()
                            && let Some(value) = value
                        {
                            each(index, value);
                        }
                    }
                }
                IndexField::Value(_) => {
                    let mut values = Vec::new();
                    field.values(record, json.as_ref(), &mut values);
                    for value in &values {
                        each(index, value);
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for IndexFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, field) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{field}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        headers: &'a [(&'a [u8], Option<&'a [u8]>)],
    ) -> RecordView<'a> {
        RecordView {
            key,
            value,
            headers,
        }
    }

    #[test]
    fn fields_parse_and_print_as_written() {
        let fields = IndexFields::parse("key, header:order-id,value:$.user.id").unwrap_or_default();
        assert_eq!(fields.to_string(), "key,header:order-id,value:$.user.id");
        assert_eq!(fields.position("header:order-id"), Some(1));
        assert_eq!(IndexFields::parse(""), Ok(IndexFields::default()));
        for bad in ["keys", "header:", "value:user.id", "key,key"] {
            assert!(IndexFields::parse(bad).is_err(), "{bad}");
        }
        let many = (0..17).map(|i| format!("header:h{i}")).collect::<Vec<_>>();
        assert!(IndexFields::parse(&many.join(",")).is_err());
    }

    #[test]
    fn each_field_yields_the_records_values() {
        let fields =
            IndexFields::parse("key,header:h,value:$.n,value:$.s,value:$.o").unwrap_or_default();
        let headers: [(&[u8], Option<&[u8]>); 3] =
            [(b"h", Some(b"1")), (b"x", Some(b"2")), (b"h", Some(b"3"))];
        let value = br#"{"n": 42, "s": "text", "o": {"a": 1}}"#;
        let mut seen = Vec::new();
        let taken = fields.each_value(
            &record(Some(b"k"), Some(value), &headers),
            &JsonValues,
            |i, v| seen.push((i, String::from_utf8_lossy(v).into_owned())),
        );
        assert_eq!(taken, Ok(()));
        assert_eq!(
            seen,
            [
                (0, "k".to_owned()),
                (1, "1".to_owned()),
                (1, "3".to_owned()),
                (2, "42".to_owned()),
                (3, "text".to_owned()),
            ]
        );
    }

    #[test]
    fn registry_framed_json_and_non_json_values() {
        let field = IndexField::parse("value:$.id").unwrap_or(IndexField::Key);
        let mut framed = vec![0, 0, 0, 0, 7];
        framed.extend_from_slice(br#"{"id": "a1"}"#);
        let matches =
            |value: Option<&[u8]>| field.matches(&record(None, value, &[]), b"a1", &JsonValues);
        assert_eq!(matches(Some(&framed)), Ok(true));
        assert_eq!(matches(Some(b"plain id a1")), Ok(false));
        assert_eq!(matches(None), Ok(false));
        assert_eq!(matches(Some(br#"{"id": "a12"}"#)), Ok(false));
    }

    /// A reader that knows one document, and fails for a value `?`.
    struct Known;

    impl ValueReader for Known {
        fn document(&self, value: &[u8]) -> Result<Option<Value>, IndexError> {
            match value {
                b"?" => Err(IndexError::Unread("the registry is away".to_owned())),
                b"avro" => Ok(Some(serde_json::json!({"id": 7}))),
                _ => Ok(None),
            }
        }
    }

    #[test]
    fn a_reader_gives_the_document_and_its_failure_stops_the_record() {
        let fields = IndexFields::parse("key,value:$.id").unwrap_or_default();
        let mut seen = Vec::new();
        let taken = fields.each_value(&record(Some(b"k"), Some(b"avro"), &[]), &Known, |i, v| {
            seen.push((i, v.to_vec()));
        });
        assert_eq!(taken, Ok(()));
        assert_eq!(seen, [(0, b"k".to_vec()), (1, b"7".to_vec())]);
        let failed = fields.each_value(&record(Some(b"k"), Some(b"?"), &[]), &Known, |_, _| {});
        assert!(failed.is_err());
        // A field that does not read values does not ask the reader.
        let keys = IndexFields::parse("key").unwrap_or_default();
        assert_eq!(
            keys.each_value(&record(None, Some(b"?"), &[]), &Known, |_, _| {}),
            Ok(())
        );
    }
}
