//! The client commands' errors, each with the exit code scripts can rely on and a
//! message that says what to do (`docs/cli.md` lists the codes).

use std::process::ExitCode;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The arguments make no sense together.
    #[error("{0}")]
    Usage(String),
    /// What was named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The cluster could not be reached in time.
    #[error(
        "cannot reach the cluster at {brokers} to {what}: {detail}. Is a broker running there? Set --brokers or SPOOL_BROKERS."
    )]
    Unreachable {
        brokers: String,
        what: String,
        detail: String,
    },
    /// The cluster answered, but refused or failed.
    #[error("{0}")]
    Failed(String),
    #[error("cannot {what}: {error}")]
    Kafka { what: String, error: KafkaError },
    #[error("cannot {what}: {error}")]
    Io { what: String, error: std::io::Error },
}

impl CliError {
    pub(crate) fn kafka(what: impl Into<String>, error: KafkaError) -> CliError {
        CliError::Kafka {
            what: what.into(),
            error,
        }
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
        let what = what.into();
        move |error| CliError::Io { what, error }
    }

    /// Turns transport failures into [`CliError::Unreachable`], or into a refused
    /// login when librdkafka said that one was why.
    pub(crate) fn with_brokers(self, brokers: &str) -> CliError {
        match self {
            CliError::Kafka { what, error } if is_unreachable(&error) => {
                match crate::client::refused_login() {
                    Some(reason) => CliError::Failed(format!(
                        "cannot {what}: the cluster at {brokers} refused the login or the TLS handshake: {reason}"
                    )),
                    None => CliError::Unreachable {
                        brokers: brokers.to_string(),
                        what,
                        detail: error.to_string(),
                    },
                }
            }
            other => other,
        }
    }

    /// The reader of our output went away (`spool consume t | head -3`): not a
    /// failure, the end of the output, as for any Unix tool.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io { error, .. } if error.kind() == std::io::ErrorKind::BrokenPipe)
    }

    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::Failed(_) | CliError::Kafka { .. } | CliError::Io { .. } => 1,
            CliError::Usage(_) => 2,
            CliError::NotFound(_) => 3,
            CliError::Unreachable { .. } => 4,
        })
    }
}

/// Whether librdkafka gave up for want of a broker to talk to.
pub(crate) fn is_unreachable(error: &KafkaError) -> bool {
    let code = match error {
        KafkaError::MetadataFetch(code)
        | KafkaError::AdminOp(code)
        | KafkaError::GroupListFetch(code)
        | KafkaError::OffsetFetch(code)
        | KafkaError::ConsumerCommit(code)
        | KafkaError::MessageProduction(code)
        | KafkaError::Flush(code)
        | KafkaError::Global(code) => *code,
        _ => return false,
    };
    matches!(
        code,
        RDKafkaErrorCode::OperationTimedOut
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::MessageTimedOut
            | RDKafkaErrorCode::RequestTimedOut
            | RDKafkaErrorCode::Resolve
    )
}
