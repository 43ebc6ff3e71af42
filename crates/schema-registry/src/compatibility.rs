//! Compatibility levels and modes, by Confluent's names, and the check a new schema
//! passes against a subject's earlier ones.

use crate::error::RegistryError;
use crate::schema::ParsedSchema;

/// Which earlier schemas a new version must agree with, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compatibility {
    /// Readers of the new schema read data written with the latest one.
    #[default]
    Backward,
    BackwardTransitive,
    /// Readers of the latest schema read data written with the new one.
    Forward,
    ForwardTransitive,
    /// Both.
    Full,
    FullTransitive,
    None,
}

impl Compatibility {
    /// The level named `name` (any case), as `PUT /config` takes it.
    pub fn from_name(name: &str) -> Result<Compatibility, RegistryError> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "BACKWARD" => Compatibility::Backward,
            "BACKWARD_TRANSITIVE" => Compatibility::BackwardTransitive,
            "FORWARD" => Compatibility::Forward,
            "FORWARD_TRANSITIVE" => Compatibility::ForwardTransitive,
            "FULL" => Compatibility::Full,
            "FULL_TRANSITIVE" => Compatibility::FullTransitive,
            "NONE" => Compatibility::None,
            _ => return Err(RegistryError::InvalidCompatibilityLevel),
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Compatibility::Backward => "BACKWARD",
            Compatibility::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Compatibility::Forward => "FORWARD",
            Compatibility::ForwardTransitive => "FORWARD_TRANSITIVE",
            Compatibility::Full => "FULL",
            Compatibility::FullTransitive => "FULL_TRANSITIVE",
            Compatibility::None => "NONE",
        }
    }

    /// Whether `new` may follow `earlier` (oldest first) at this level: the reasons
    /// it may not, empty when it may.
    #[must_use]
    pub fn problems(self, new: &ParsedSchema, earlier: &[ParsedSchema]) -> Vec<String> {
        let (backward, forward, transitive) = match self {
            Compatibility::None => return Vec::new(),
            Compatibility::Backward => (true, false, false),
            Compatibility::BackwardTransitive => (true, false, true),
            Compatibility::Forward => (false, true, false),
            Compatibility::ForwardTransitive => (false, true, true),
            Compatibility::Full => (true, true, false),
            Compatibility::FullTransitive => (true, true, true),
        };
        let checked: &[ParsedSchema] = if transitive {
            earlier
        } else {
            earlier.last().map(std::slice::from_ref).unwrap_or_default()
        };
        let mut problems = Vec::new();
        for old in checked.iter().rev() {
            if backward && let Err(problem) = new.reads(old) {
                problems.push(format!(
                    "the new schema cannot read data written with an earlier one: {problem}"
                ));
            }
            if forward && let Err(problem) = old.reads(new) {
                problems.push(format!(
                    "an earlier schema cannot read data written with the new one: {problem}"
                ));
            }
        }
        problems
    }
}

/// What a subject (or the whole registry) accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    ReadWrite,
    /// No registration, deletion or config change.
    ReadOnly,
    /// Registration with the id and version given (migrating another registry in).
    Import,
}

impl Mode {
    pub fn from_name(name: &str) -> Result<Mode, RegistryError> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "READWRITE" => Mode::ReadWrite,
            "READONLY" => Mode::ReadOnly,
            "IMPORT" => Mode::Import,
            _ => return Err(RegistryError::InvalidMode),
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::Import => "IMPORT",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{SchemaType, parse};

    fn avro(text: &str) -> ParsedSchema {
        parse(SchemaType::Avro, text, &[]).unwrap()
    }

    fn user(fields: &str) -> ParsedSchema {
        avro(&format!(
            r#"{{"type":"record","name":"User","fields":[{{"name":"id","type":"long"}}{fields}]}}"#
        ))
    }

    #[test]
    fn each_level_checks_the_schemas_it_names_in_the_direction_it_names() {
        let v1 = user("");
        let with_default = user(r#",{"name":"email","type":"string","default":""}"#);
        let without_default = user(r#",{"name":"email","type":"string"}"#);
        // A field added with a default: backward and forward.
        for level in [
            Compatibility::Backward,
            Compatibility::Forward,
            Compatibility::Full,
        ] {
            assert!(
                level
                    .problems(&with_default, std::slice::from_ref(&v1))
                    .is_empty(),
                "{level:?}"
            );
        }
        // Added without a default: old data cannot be read (not backward), old readers
        // ignore it (forward).
        assert!(
            !Compatibility::Backward
                .problems(&without_default, std::slice::from_ref(&v1))
                .is_empty()
        );
        assert!(
            Compatibility::Forward
                .problems(&without_default, std::slice::from_ref(&v1))
                .is_empty()
        );
        assert!(
            !Compatibility::Full
                .problems(&without_default, std::slice::from_ref(&v1))
                .is_empty()
        );
        assert!(
            Compatibility::None
                .problems(&without_default, std::slice::from_ref(&v1))
                .is_empty()
        );
        // Transitive levels look past the latest: once the field is there with a
        // default, dropping the default reads the latest's data, not v1's.
        let history = [v1.clone(), with_default];
        assert!(
            Compatibility::Backward
                .problems(&without_default, &history)
                .is_empty()
        );
        assert!(
            !Compatibility::BackwardTransitive
                .problems(&without_default, &history)
                .is_empty()
        );
        let int_id =
            avro(r#"{"type":"record","name":"User","fields":[{"name":"id","type":"int"}]}"#);
        // int → long promotes (backward, reading int with long), not the reverse.
        let long_id = v1;
        assert!(
            Compatibility::Backward
                .problems(&long_id, std::slice::from_ref(&int_id))
                .is_empty()
        );
        assert!(
            !Compatibility::Forward
                .problems(&long_id, &[int_id])
                .is_empty()
        );
    }

    #[test]
    fn names_read_in_any_case_and_bad_ones_are_refused() {
        assert_eq!(
            Compatibility::from_name("full_transitive").unwrap(),
            Compatibility::FullTransitive
        );
        assert_eq!(
            Compatibility::from_name("sideways")
                .unwrap_err()
                .error_code(),
            42203
        );
        assert_eq!(Mode::from_name("readonly").unwrap(), Mode::ReadOnly);
        assert_eq!(Mode::from_name("x").unwrap_err().error_code(), 42204);
    }
}
