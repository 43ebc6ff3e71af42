//! The security settings, by Kafka's names: listeners and their protocols, SASL, TLS.
//! The broker's settings table (`spool_broker`'s `config`) reads and writes them.

use std::path::PathBuf;
use std::time::Duration;

/// `ssl.client.auth`: whether a TLS listener asks clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// Asked for, and checked when given.
    Requested,
    /// Connections without a valid one are refused.
    Required,
}

/// The security settings.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// `listeners`: `None` for one PLAINTEXT listener on `--listen`.
    pub listeners: Option<String>,
    /// `advertised.listeners`.
    pub advertised_listeners: Option<String>,
    /// `listener.security.protocol.map`.
    pub protocol_map: String,
    /// `sasl.enabled.mechanisms`.
    pub sasl_mechanisms: String,
    /// `connections.max.reauth.ms`: 0 for sessions that never expire.
    pub max_reauth: Duration,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_auth_delay: Duration,
    /// `ssl.certificate.location`: the PEM certificate chain of TLS listeners.
    pub certificate: Option<PathBuf>,
    /// `ssl.key.location`: its PEM private key.
    pub key: Option<PathBuf>,
    /// `ssl.ca.location`: PEM certificates that client certificates must chain to.
    pub ca: Option<PathBuf>,
    /// `ssl.client.auth`.
    pub client_auth: ClientAuth,
    /// `ssl.principal.mapping.rules`: how a client certificate's subject becomes a
    /// user name.
    pub principal_mapping_rules: String,
    /// `--bootstrap-user NAME:PASSWORD`: a SCRAM credential (both mechanisms) set at
    /// start if the user has none.
    pub bootstrap_user: Option<(String, String)>,
    /// `authorizer.enabled`: whether ACLs are enforced (off: every request allowed).
    pub authorizer_enabled: bool,
    /// `super.users`: `User:name` principals allowed everything, `;`-separated.
    pub super_users: String,
    /// `allow.everyone.if.no.acl.found`: the decision for a resource no binding names.
    pub allow_if_no_acl: bool,
    /// `sasl.oauthbearer.*`.
    pub oauth: super::oauth::OAuthConfig,
}

impl SecurityConfig {
    /// What the authorizer is built with.
    pub fn authorizer(&self) -> super::authorizer::AuthorizerSettings {
        super::authorizer::AuthorizerSettings {
            enabled: self.authorizer_enabled,
            super_users: principals(&self.super_users),
            allow_if_no_acl: self.allow_if_no_acl,
        }
    }
}

/// The principals of a `super.users` value.
pub fn principals(value: &str) -> std::collections::HashSet<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|principal| !principal.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            listeners: None,
            advertised_listeners: None,
            protocol_map: String::new(),
            sasl_mechanisms: "SCRAM-SHA-256,SCRAM-SHA-512".to_owned(),
            max_reauth: Duration::ZERO,
            failed_auth_delay: Duration::from_millis(100),
            certificate: None,
            key: None,
            ca: None,
            client_auth: ClientAuth::None,
            principal_mapping_rules: "DEFAULT".to_owned(),
            bootstrap_user: None,
            authorizer_enabled: false,
            super_users: String::new(),
            allow_if_no_acl: false,
            oauth: super::oauth::OAuthConfig::default(),
        }
    }
}
