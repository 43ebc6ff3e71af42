//! What every client command shares: where the cluster is, how to print, and how to
//! make librdkafka clients for it. The commands use librdkafka (the `rdkafka` crate),
//! so that each of them also exercises the broker with a real client, and they work
//! against any Kafka-compatible cluster.

use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::StreamConsumer;

use crate::error::CliError;
use crate::output::Format;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ClientArgs {
    /// Bootstrap brokers, comma-separated host:port.
    #[arg(
        long,
        global = true,
        env = "SPOOL_BROKERS",
        default_value = "127.0.0.1:9092"
    )]
    pub(crate) brokers: String,
    /// Output: `human` tables or `json` for scripts.
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    pub(crate) format: Format,
    /// How long to wait for the cluster, in seconds.
    #[arg(long, global = true, default_value_t = 10)]
    pub(crate) timeout: u64,
    /// `PLAINTEXT`, `SASL_PLAINTEXT`, `SSL` or `SASL_SSL` (by default SASL_PLAINTEXT
    /// with `--sasl-mechanism`, else PLAINTEXT). TLS is for `user`, `acl`, `quota` and
    /// `cluster info` only: the other commands' librdkafka is built without OpenSSL.
    #[arg(long, global = true, env = "SPOOL_SECURITY_PROTOCOL")]
    pub(crate) security_protocol: Option<String>,
    /// PEM certificates that the broker's TLS certificate must chain to (default: the
    /// system's).
    #[arg(long, global = true, env = "SPOOL_SSL_CA_LOCATION")]
    pub(crate) ssl_ca_location: Option<std::path::PathBuf>,
    /// A PEM client certificate chain and its key, for brokers asking for one (mTLS).
    #[arg(long, global = true, env = "SPOOL_SSL_CERTIFICATE_LOCATION")]
    pub(crate) ssl_certificate_location: Option<std::path::PathBuf>,
    #[arg(long, global = true, env = "SPOOL_SSL_KEY_LOCATION")]
    pub(crate) ssl_key_location: Option<std::path::PathBuf>,
    /// Log in with SASL: `PLAIN`, or `SCRAM-SHA-256`/`SCRAM-SHA-512` for `user`,
    /// `acl`, `quota` and `cluster info` (the other commands' librdkafka has no
    /// SCRAM without OpenSSL).
    #[arg(long, global = true, env = "SPOOL_SASL_MECHANISM")]
    pub(crate) sasl_mechanism: Option<String>,
    #[arg(long, global = true, env = "SPOOL_SASL_USERNAME")]
    pub(crate) sasl_username: Option<String>,
    #[arg(
        long,
        global = true,
        env = "SPOOL_SASL_PASSWORD",
        hide_env_values = true
    )]
    pub(crate) sasl_password: Option<String>,
}

impl ClientArgs {
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout.max(1))
    }

    /// The SASL mechanism asked for, if any (an empty one is none).
    pub(crate) fn sasl(&self) -> Option<&str> {
        self.sasl_mechanism.as_deref().filter(|m| !m.is_empty())
    }

    /// The security protocol: as given, or SASL_PLAINTEXT with a SASL mechanism and
    /// PLAINTEXT without.
    pub(crate) fn protocol(&self) -> &str {
        match self.security_protocol.as_deref().filter(|p| !p.is_empty()) {
            Some(protocol) => protocol,
            None if self.sasl().is_some() => "SASL_PLAINTEXT",
            None => "PLAINTEXT",
        }
    }

    /// The librdkafka configuration every client starts from.
    pub(crate) fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.brokers)
            .set("client.id", "spool-cli")
            .set("log_level", "3")
            .set(
                "socket.connection.setup.timeout.ms",
                self.timeout().as_millis().to_string(),
            );
        // librdkafka refuses SSL and SCRAM itself, naming the missing OpenSSL.
        config.set("security.protocol", self.protocol());
        if let Some(mechanism) = self.sasl() {
            config
                .set("sasl.mechanisms", mechanism)
                .set("sasl.username", self.sasl_username.as_deref().unwrap_or(""))
                .set("sasl.password", self.sasl_password.as_deref().unwrap_or(""));
        }
        config
    }

    pub(crate) fn admin(&self) -> Result<AdminClient<DefaultClientContext>, CliError> {
        self.config()
            .create()
            .map_err(|e| CliError::kafka("create an admin client", e))
    }

    pub(crate) fn admin_options(&self) -> AdminOptions {
        AdminOptions::new().request_timeout(Some(self.timeout()))
    }

    /// A consumer; with `group`, it acts for that group (offsets) without joining.
    pub(crate) fn consumer(&self, group: Option<&str>) -> Result<StreamConsumer, CliError> {
        self.consumer_reporting_ends(group, false)
    }

    /// A consumer that, with `ends`, reports reaching the end of each partition.
    pub(crate) fn consumer_reporting_ends(
        &self,
        group: Option<&str>,
        ends: bool,
    ) -> Result<StreamConsumer, CliError> {
        let mut config = self.config();
        config
            .set("group.id", group.unwrap_or("spool-cli"))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", ends.to_string());
        config
            .create()
            .map_err(|e| CliError::kafka("create a consumer", e))
    }
}
