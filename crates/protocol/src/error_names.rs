//! Kafka's names of its error codes (`UNKNOWN_TOPIC_OR_PARTITION` for 3), from
//! `kafka_protocol`'s table: for metrics labels, admin answers and the CLI's messages.

use kafka_protocol::ResponseError;

/// Kafka's name of `code`: `NONE` for 0, `None` for a code its table does not have.
pub fn error_name(code: i16) -> Option<String> {
    match ResponseError::try_from_code(code) {
        None => Some("NONE".to_owned()),
        Some(ResponseError::Unknown(_)) => None,
        Some(error) => Some(screaming_snake_case(&error.to_string())),
    }
}

/// `UnknownTopicOrPartition` → `UNKNOWN_TOPIC_OR_PARTITION`.
fn screaming_snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}
