//! The JSON paths `value:$.path` names: `$` followed by `.name`, `['name']` or
//! `[index]` steps, leading to one value. Written here rather than taken from a
//! JSONPath crate because an index field names exactly one value (no wildcards,
//! filters or slices, which RFC 9535's crates all bring): the walk is a few lines
//! over `serde_json::Value`.

use serde_json::Value;

/// A parsed path, printed as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `$.a.b[0]['c d']`; the error says what was expected where.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        Ok(JsonPath {
            text: text.to_owned(),
            steps: parse(text)?,
        })
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at the path in `document`, if there is one.
    #[must_use]
    pub fn find<'a>(&self, document: &'a Value) -> Option<&'a Value> {
        walk(document, &self.steps)
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Name(String),
    Index(usize),
}

/// Parses `$.a.b[0]['c d']`; the error says what was expected where.
pub(crate) fn parse(path: &str) -> Result<Vec<Step>, String> {
    let rest = path
        .strip_prefix('$')
        .ok_or_else(|| format!("{path}: a JSON path starts with $"))?;
    let mut steps = Vec::new();
    let mut rest = rest;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (name, next) = after.split_at(end);
            if name.is_empty() {
                return Err(format!("{path}: a name is missing after a ."));
            }
            steps.push(Step::Name(name.to_owned()));
            rest = next;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| format!("{path}: a [ is not closed"))?;
            let (inside, next) = after.split_at(end);
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|q| q.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|q| q.strip_suffix('"')));
            match quoted {
                Some(name) => steps.push(Step::Name(name.to_owned())),
                None => steps.push(Step::Index(inside.parse().map_err(|_| {
                    format!("{path}: [{inside}] is neither an index nor a quoted name")
                })?)),
            }
            rest = next.get(1..).unwrap_or_default();
        } else {
            return Err(format!("{path}: expected . or [ at {rest}"));
        }
    }
    if steps.is_empty() {
        return Err(format!("{path}: the path names no field"));
    }
    Ok(steps)
}

/// The value at `steps` in `document`, if there is one.
pub(crate) fn walk<'a>(document: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(document, |value, step| match step {
        Step::Name(name) => value.as_object()?.get(name),
        Step::Index(index) => value.as_array()?.get(*index),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_steps() {
        assert_eq!(
            parse("$.order.items[2]['unit price']"),
            Ok(vec![
                Step::Name("order".into()),
                Step::Name("items".into()),
                Step::Index(2),
                Step::Name("unit price".into()),
            ])
        );
        assert_eq!(parse("$[\"a.b\"]"), Ok(vec![Step::Name("a.b".into())]));
        for bad in ["order.id", "$", "$.", "$.a..b", "$[x]", "$[1", "$.a b[0]x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_walk_finds_the_value_or_nothing() {
        let document: Value =
            serde_json::from_str(r#"{"a": {"b": [10, {"c": "x"}]}}"#).unwrap_or(Value::Null);
        let found = |path: &str| parse(path).ok().and_then(|s| walk(&document, &s).cloned());
        assert_eq!(found("$.a.b[0]"), Some(Value::from(10)));
        assert_eq!(found("$.a.b[1].c"), Some(Value::from("x")));
        assert_eq!(found("$.a.b[2]"), None);
        assert_eq!(found("$.a.c"), None);
        assert_eq!(found("$.a.b.c"), None);
    }
}
