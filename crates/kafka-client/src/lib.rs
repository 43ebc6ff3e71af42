//! A Kafka connection for the requests librdkafka's Rust binding does not offer: the
//! CLI's admin requests (ACLs, SCRAM credentials, quotas, ApiVersions and Metadata as
//! they are) and the mirror's fetches of raw record batches. Written here because no
//! maintained Rust crate sends them; it frames the `kafka-protocol` crate's requests
//! over one connection to the first bootstrap broker that answers: TCP, or TLS
//! ([`tls`]) for `SSL` and `SASL_SSL`, then a SASL login ([`login`]: PLAIN or SCRAM).
//! Settings go by librdkafka's names ([`ClientSettings::from_config`]).

mod connection;
mod login;
pub mod settings;
mod tls;

use kafka_protocol::error::ResponseError;

pub use self::connection::{Connection, connect};
pub use self::settings::ClientSettings;

/// Why a connection or a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The settings are wrong (a missing password, an unreadable certificate, …).
    #[error("{0}")]
    Usage(String),
    /// No bootstrap broker answered.
    #[error("cannot reach {brokers} to {what}: {detail}")]
    Unreachable {
        brokers: String,
        what: String,
        detail: String,
    },
    /// A broker answered, but refused or failed.
    #[error("{0}")]
    Failed(String),
}

/// A Kafka error code as a message: its name in Kafka's table (`kafka_protocol`'s),
/// with a hint where the refusal has a usual cause.
#[must_use]
pub fn error_name(code: i16) -> String {
    let Some(name) = spool_protocol::error_names::error_name(code) else {
        return format!("error {code}");
    };
    if code == ResponseError::ClusterAuthorizationFailed.code() {
        format!("{name} (this principal may not do that)")
    } else if code == ResponseError::SecurityDisabled.code() {
        format!("{name} (the broker runs without authorizer.enabled=true)")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_read_as_kafka_names() {
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_name(91), "RESOURCE_NOT_FOUND");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert!(error_name(54).starts_with("SECURITY_DISABLED (the broker runs without"));
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(9999), "error 9999");
    }
}
