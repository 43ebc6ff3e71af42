//! Label values, written out only when `/metrics` is scraped: an API key, an error
//! code and free text are kept as they are on the request path and named here.

use std::fmt::Write;

use kafka_protocol::messages::ApiKey;
use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};

/// A Kafka API, named as Kafka's request metrics name it (`Produce`, `Fetch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ApiName(pub(crate) ApiKey);

impl EncodeLabelValue for ApiName {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        write!(encoder, "{:?}", self.0)
    }
}

/// A Kafka error code, named as Kafka's `Errors` enum names it
/// (`NOT_LEADER_OR_FOLLOWER`); a code Kafka does not know is written as its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ErrorName(pub(crate) i16);

impl EncodeLabelValue for ErrorName {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(&error_name(self.0))
    }
}

/// Kafka's name of an error code: `UNKNOWN_TOPIC_OR_PARTITION` for 3; the number for
/// a code Kafka's table does not have.
pub(crate) fn error_name(code: i16) -> String {
    spool_protocol::error_names::error_name(code).unwrap_or_else(|| code.to_string())
}

/// Free text (a topic or group name) as a label value: the text format has no
/// escaping of its own in the encoder, and a group id may hold `"`, `\` or a newline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Text(pub(crate) String);

impl EncodeLabelValue for Text {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_named_as_kafka_names_them() {
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(9999), "9999");
    }
}
