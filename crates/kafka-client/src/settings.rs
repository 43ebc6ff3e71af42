//! Where a connection goes and how it logs in, by librdkafka's setting names.

use std::path::PathBuf;
use std::time::Duration;

use crate::ClientError;

/// PEM text: a file's path (`*.location`) or the text itself (`*.pem`).
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    File(PathBuf),
    Text(String),
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(path) => write!(f, "File({})", path.display()),
            Pem::Text(_) => f.write_str("Text(…)"),
        }
    }
}

/// A connection's settings.
#[derive(Clone)]
pub struct ClientSettings {
    /// Bootstrap brokers, `host:port` separated by commas.
    pub brokers: String,
    /// `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`.
    pub security_protocol: String,
    pub sasl_mechanism: Option<String>,
    pub sasl_username: Option<String>,
    pub sasl_password: Option<String>,
    /// The certificates the broker's is checked against (else the system's roots).
    pub ssl_ca: Option<Pem>,
    /// A client certificate and its key, for brokers that ask for one.
    pub ssl_certificate: Option<Pem>,
    pub ssl_key: Option<Pem>,
    /// How long connecting, and each request, may take.
    pub timeout: Duration,
    /// The client id requests carry.
    pub client_id: String,
}

impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("brokers", &self.brokers)
            .field("security_protocol", &self.security_protocol)
            .field("sasl_mechanism", &self.sasl_mechanism)
            .field("sasl_username", &self.sasl_username)
            .field("ssl_ca", &self.ssl_ca)
            .finish_non_exhaustive()
    }
}

/// The settings [`ClientSettings::from_config`] takes; a secret one is never shown.
pub const SETTINGS: &[(&str, bool)] = &[
    ("security.protocol", false),
    ("sasl.mechanism", false),
    ("sasl.mechanisms", false),
    ("sasl.username", false),
    ("sasl.password", true),
    ("ssl.ca.location", false),
    ("ssl.ca.pem", false),
    ("ssl.certificate.location", false),
    ("ssl.certificate.pem", false),
    ("ssl.key.location", false),
    ("ssl.key.pem", true),
    ("client.id", false),
    ("socket.timeout.ms", false),
];

/// Whether the setting `name` holds a secret (its value is never shown).
#[must_use]
pub fn is_secret(name: &str) -> bool {
    SETTINGS
        .iter()
        .any(|(known, secret)| *known == name && *secret)
}

impl ClientSettings {
    /// Plain TCP to `brokers`, no login, a 10 s timeout.
    #[must_use]
    pub fn plaintext(brokers: &str, client_id: &str) -> ClientSettings {
        ClientSettings {
            brokers: brokers.to_owned(),
            security_protocol: "PLAINTEXT".to_owned(),
            sasl_mechanism: None,
            sasl_username: None,
            sasl_password: None,
            ssl_ca: None,
            ssl_certificate: None,
            ssl_key: None,
            timeout: Duration::from_secs(10),
            client_id: client_id.to_owned(),
        }
    }

    /// The settings `config` gives by librdkafka's names (see [`SETTINGS`]); a name
    /// not among them is refused.
    pub fn from_config(
        brokers: &str,
        client_id: &str,
        config: &[(String, String)],
    ) -> Result<ClientSettings, ClientError> {
        let mut settings = ClientSettings::plaintext(brokers, client_id);
        for (name, value) in config {
            let value = value.clone();
            match name.as_str() {
                "security.protocol" => settings.security_protocol = value.to_uppercase(),
                "sasl.mechanism" | "sasl.mechanisms" => settings.sasl_mechanism = Some(value),
                "sasl.username" => settings.sasl_username = Some(value),
                "sasl.password" => settings.sasl_password = Some(value),
                "ssl.ca.location" => settings.ssl_ca = Some(Pem::File(value.into())),
                "ssl.ca.pem" => settings.ssl_ca = Some(Pem::Text(value)),
                "ssl.certificate.location" => {
                    settings.ssl_certificate = Some(Pem::File(value.into()));
                }
                "ssl.certificate.pem" => settings.ssl_certificate = Some(Pem::Text(value)),
                "ssl.key.location" => settings.ssl_key = Some(Pem::File(value.into())),
                "ssl.key.pem" => settings.ssl_key = Some(Pem::Text(value)),
                "client.id" => settings.client_id = value,
                "socket.timeout.ms" => {
                    let ms: u64 = value.parse().map_err(|_| {
                        ClientError::Usage(format!("socket.timeout.ms={value}: not a number"))
                    })?;
                    settings.timeout = Duration::from_millis(ms.max(1));
                }
                other => {
                    let known: Vec<&str> = SETTINGS.iter().map(|(name, _)| *name).collect();
                    return Err(ClientError::Usage(format!(
                        "{other}: not a client setting here (known: {})",
                        known.join(", ")
                    )));
                }
            }
        }
        settings.check()?;
        Ok(settings)
    }

    /// Whether the settings go together; what the connection uses: (TLS, SASL).
    pub(crate) fn check(&self) -> Result<(bool, bool), ClientError> {
        let (tls, sasl) = match self.security_protocol.as_str() {
            "PLAINTEXT" => (false, false),
            "SASL_PLAINTEXT" => (false, true),
            "SSL" => (true, false),
            "SASL_SSL" => (true, true),
            other => {
                return Err(ClientError::Usage(format!(
                    "security.protocol {other}: expected PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL"
                )));
            }
        };
        if sasl && self.sasl_mechanism.is_none() {
            return Err(ClientError::Usage(format!(
                "security.protocol {} needs sasl.mechanism",
                self.security_protocol
            )));
        }
        Ok((tls, sasl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn librdkafka_names_are_read_and_unknown_ones_refused() {
        let settings = ClientSettings::from_config(
            "a:1",
            "x",
            &config(&[
                ("security.protocol", "sasl_ssl"),
                ("sasl.mechanisms", "SCRAM-SHA-512"),
                ("sasl.username", "alice"),
                ("sasl.password", "secret"),
                ("ssl.ca.pem", "-----BEGIN CERTIFICATE-----"),
                ("socket.timeout.ms", "2500"),
            ]),
        )
        .expect("valid");
        assert_eq!(settings.security_protocol, "SASL_SSL");
        assert_eq!(settings.sasl_mechanism.as_deref(), Some("SCRAM-SHA-512"));
        assert_eq!(settings.timeout, Duration::from_millis(2500));
        assert!(matches!(settings.ssl_ca, Some(Pem::Text(_))));
        assert!(!format!("{settings:?}").contains("secret"));
        let unknown = ClientSettings::from_config("a:1", "x", &config(&[("acks", "all")]));
        assert!(matches!(unknown, Err(ClientError::Usage(m)) if m.starts_with("acks:")));
        let no_mechanism =
            ClientSettings::from_config("a:1", "x", &config(&[("security.protocol", "SASL_SSL")]));
        assert!(no_mechanism.is_err());
        assert!(is_secret("sasl.password") && !is_secret("sasl.username"));
    }
}
