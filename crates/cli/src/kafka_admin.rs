//! The CLI's own Kafka connection ([`spool_kafka_client`]), for the requests
//! librdkafka's Rust binding does not offer (ACLs, SCRAM credentials, quotas,
//! ApiVersions and Metadata as they are), made from the command's flags. Any broker
//! of a Spool cluster applies admin changes cluster-wide before it answers.

use spool_kafka_client::settings::Pem;
use spool_kafka_client::{ClientError, ClientSettings};
pub(crate) use spool_kafka_client::{Connection, error_name};

use crate::client::ClientArgs;
use crate::error::CliError;

/// A connection to the first bootstrap broker that answers, over TLS and logged in
/// as `--security-protocol` and `--sasl-mechanism` ask; and that broker's address.
/// `what` names the errand, for the error when none answers.
pub(crate) async fn connect(
    client: &ClientArgs,
    what: &str,
) -> Result<(Connection, String), CliError> {
    let settings = ClientSettings {
        security_protocol: client.protocol().to_owned(),
        sasl_mechanism: client.sasl().map(str::to_owned),
        sasl_username: client.sasl_username.clone(),
        sasl_password: client.sasl_password.clone(),
        ssl_ca: client.ssl_ca_location.clone().map(Pem::File),
        ssl_certificate: client.ssl_certificate_location.clone().map(Pem::File),
        ssl_key: client.ssl_key_location.clone().map(Pem::File),
        timeout: client.timeout(),
        ..ClientSettings::plaintext(&client.brokers, "spool-cli")
    };
    Ok(spool_kafka_client::connect(&settings, what).await?)
}

impl From<ClientError> for CliError {
    fn from(error: ClientError) -> CliError {
        match error {
            ClientError::Usage(message) => CliError::Usage(message),
            ClientError::Unreachable {
                brokers,
                what,
                detail,
            } => CliError::Unreachable {
                brokers,
                what,
                detail,
            },
            ClientError::Failed(message) => CliError::Failed(message),
        }
    }
}
