//! What every client command shares: where the cluster is, how to print, and how to
//! make librdkafka clients for it. The commands use librdkafka (the `rdkafka` crate),
//! so that each of them also exercises the broker with a real client, and they work
//! against any Kafka-compatible cluster.

use std::time::Duration;

use std::sync::Mutex;

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, ConsumerContext, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientConfig, ClientContext};

use crate::error::CliError;
use crate::output::Format;

/// How long a failed call waits for librdkafka to say why a login or TLS handshake
/// failed, before the failure is taken for an unreachable cluster.
const REASON_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// A consumer of the CLI's clients.
pub(crate) type CliConsumer = StreamConsumer<CliContext>;

/// What librdkafka said of the last refused login or failed TLS handshake: its calls
/// then fail with only "transport failure", which would read as a broker that is
/// down. One process runs one command, so one note will do.
static REFUSED_LOGIN: Mutex<Option<String>> = Mutex::new(None);

/// The context of every librdkafka client of the CLI: notes a refused login or
/// TLS handshake ([`refused_login`]); librdkafka's other errors show only with
/// `RUST_LOG=librdkafka=debug` (the command's own error says what matters).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CliContext;

impl ClientContext for CliContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        // librdkafka says why a broker connection failed in a FAIL log line only.
        let login_failed = message.contains("SASL authentication error")
            || message.contains("SSL handshake failed");
        if facility == "FAIL" && login_failed {
            note_refused_login(message);
        }
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", "librdkafka: {facility} {message}");
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", "librdkafka: {facility} {message}");
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", "librdkafka: {facility} {message}");
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", "librdkafka: {facility} {message}");
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let refused = matches!(
            error.rdkafka_error_code(),
            Some(RDKafkaErrorCode::Authentication | RDKafkaErrorCode::SSL)
        );
        if refused {
            note_refused_login(reason);
        }
        tracing::debug!(target: "librdkafka", %error, reason, "client error");
    }
}

/// Notes why a login failed, without librdkafka's `[thrd:…]: ` prefix.
fn note_refused_login(reason: &str) {
    let reason = match reason.strip_prefix("[thrd:") {
        Some(rest) => rest.split_once("]: ").map_or(reason, |(_, said)| said),
        None => reason,
    };
    *REFUSED_LOGIN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason.to_owned());
}

impl ConsumerContext for CliContext {}

/// Why librdkafka could not log in or set up TLS, if it said so.
pub(crate) fn refused_login() -> Option<String> {
    REFUSED_LOGIN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

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
    /// with `--sasl-mechanism`, else PLAINTEXT). Every command speaks each of them.
    #[arg(long, global = true, env = "SPOOL_SECURITY_PROTOCOL")]
    pub(crate) security_protocol: Option<String>,
    /// PEM certificates that the broker's TLS certificate must chain to (default: the
    /// system's). The certificate must name the host of `--brokers` (an IP address
    /// as an IP SAN).
    #[arg(long, global = true, env = "SPOOL_SSL_CA_LOCATION")]
    pub(crate) ssl_ca_location: Option<std::path::PathBuf>,
    /// A PEM client certificate chain and its key, for brokers asking for one (mTLS).
    #[arg(long, global = true, env = "SPOOL_SSL_CERTIFICATE_LOCATION")]
    pub(crate) ssl_certificate_location: Option<std::path::PathBuf>,
    #[arg(long, global = true, env = "SPOOL_SSL_KEY_LOCATION")]
    pub(crate) ssl_key_location: Option<std::path::PathBuf>,
    /// Log in with SASL: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`, as
    /// `--sasl-username` with `--sasl-password` (or SPOOL_SASL_USERNAME and
    /// SPOOL_SASL_PASSWORD).
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
        // librdkafka is built with OpenSSL (vendored): TLS and SCRAM both work.
        config.set("security.protocol", self.protocol());
        let paths = [
            ("ssl.ca.location", &self.ssl_ca_location),
            ("ssl.certificate.location", &self.ssl_certificate_location),
            ("ssl.key.location", &self.ssl_key_location),
        ];
        for (key, path) in paths {
            if let Some(path) = path {
                config.set(key, path.display().to_string());
            }
        }
        if let Some(mechanism) = self.sasl() {
            config
                .set("sasl.mechanisms", mechanism)
                .set("sasl.username", self.sasl_username.as_deref().unwrap_or(""))
                .set("sasl.password", self.sasl_password.as_deref().unwrap_or(""));
        }
        config
    }

    pub(crate) fn admin(&self) -> Result<AdminClient<CliContext>, CliError> {
        self.config()
            .create_with_context(CliContext)
            .map_err(|e| CliError::kafka("create an admin client", e))
    }

    /// A client for one request at a time (metadata, group lists), outside any
    /// group; its calls' failures go through [`ClientArgs::failed`].
    pub(crate) fn requester(&self) -> Result<BaseConsumer<CliContext>, CliError> {
        // A group id (never joined) makes its poll serve the client's main queue too.
        self.config()
            .set("group.id", "spool-cli")
            .create_with_context(CliContext)
            .map_err(|e| CliError::kafka("create a client", e))
    }

    /// The error of `requester`'s call `what`. librdkafka hands its error events (a
    /// refused login among them) to the client's queue, which nothing serves while
    /// a call waits: they are served first, so that the error can say why.
    pub(crate) fn failed(
        &self,
        requester: &BaseConsumer<CliContext>,
        what: &str,
        error: KafkaError,
    ) -> CliError {
        // Each poll serves what is queued by then; a moment's polling lets a failed
        // login's or handshake's log line arrive (only the unreachable path waits).
        let deadline = std::time::Instant::now() + REASON_WAIT;
        while refused_login().is_none() && std::time::Instant::now() < deadline {
            let _ = requester.poll(std::time::Duration::from_millis(20));
        }
        CliError::kafka(what, error).with_brokers(&self.brokers)
    }

    pub(crate) fn admin_options(&self) -> AdminOptions {
        AdminOptions::new().request_timeout(Some(self.timeout()))
    }

    /// A consumer; with `group`, it acts for that group (offsets) without joining.
    pub(crate) fn consumer(&self, group: Option<&str>) -> Result<CliConsumer, CliError> {
        self.consumer_reporting_ends(group, false)
    }

    /// A consumer that, with `ends`, reports reaching the end of each partition.
    pub(crate) fn consumer_reporting_ends(
        &self,
        group: Option<&str>,
        ends: bool,
    ) -> Result<CliConsumer, CliError> {
        let mut config = self.config();
        config
            .set("group.id", group.unwrap_or("spool-cli"))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", ends.to_string());
        config
            .create_with_context(CliContext)
            .map_err(|e| CliError::kafka("create a consumer", e))
    }
}
