//! The security settings, by Kafka's names: listeners and their protocols, SASL, TLS.
//! Read by the one settings table of `crate::config`.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Setting, expected, millis_or_zero};

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
    pub(crate) fn authorizer(&self) -> super::authorizer::AuthorizerSettings {
        super::authorizer::AuthorizerSettings {
            enabled: self.authorizer_enabled,
            super_users: principals(&self.super_users),
            allow_if_no_acl: self.allow_if_no_acl,
        }
    }
}

/// The principals of a `super.users` value.
fn principals(value: &str) -> std::collections::HashSet<String> {
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

fn path(value: &str) -> Option<PathBuf> {
    (!value.is_empty()).then(|| PathBuf::from(value))
}

fn shown(path: Option<&PathBuf>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

pub(crate) const SECURITY_SETTINGS: [Setting; 14] = [
    Setting {
        name: "listeners",
        dynamic: false,
        get: |c| c.security.listeners.clone().unwrap_or_default(),
        set: |c, v| {
            c.security.listeners = (!v.trim().is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "advertised.listeners",
        dynamic: false,
        get: |c| c.security.advertised_listeners.clone().unwrap_or_default(),
        set: |c, v| {
            super::listeners::parse_endpoints(v)?;
            c.security.advertised_listeners = (!v.trim().is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "listener.security.protocol.map",
        dynamic: false,
        get: |c| c.security.protocol_map.clone(),
        set: |c, v| {
            super::listeners::parse_protocol_map(v)?;
            c.security.protocol_map = v.to_owned();
            Ok(())
        },
    },
    Setting {
        name: "sasl.enabled.mechanisms",
        dynamic: false,
        get: |c| c.security.sasl_mechanisms.clone(),
        set: |c, v| {
            super::enabled_mechanisms(v)?;
            c.security.sasl_mechanisms = v.to_owned();
            Ok(())
        },
    },
    Setting {
        name: "connections.max.reauth.ms",
        dynamic: false,
        get: |c| c.security.max_reauth.as_millis().to_string(),
        set: |c, v| {
            c.security.max_reauth = millis_or_zero(v)?;
            Ok(())
        },
    },
    Setting {
        name: "connection.failed.authentication.delay.ms",
        dynamic: false,
        get: |c| c.security.failed_auth_delay.as_millis().to_string(),
        set: |c, v| {
            c.security.failed_auth_delay = millis_or_zero(v)?;
            Ok(())
        },
    },
    Setting {
        name: "ssl.certificate.location",
        dynamic: false,
        get: |c| shown(c.security.certificate.as_ref()),
        set: |c, v| {
            c.security.certificate = path(v);
            Ok(())
        },
    },
    Setting {
        name: "ssl.key.location",
        dynamic: false,
        get: |c| shown(c.security.key.as_ref()),
        set: |c, v| {
            c.security.key = path(v);
            Ok(())
        },
    },
    Setting {
        name: "ssl.ca.location",
        dynamic: false,
        get: |c| shown(c.security.ca.as_ref()),
        set: |c, v| {
            c.security.ca = path(v);
            Ok(())
        },
    },
    Setting {
        name: "ssl.client.auth",
        dynamic: false,
        get: |c| {
            let name = match c.security.client_auth {
                ClientAuth::None => "none",
                ClientAuth::Requested => "requested",
                ClientAuth::Required => "required",
            };
            name.to_owned()
        },
        set: |c, v| {
            c.security.client_auth = match v {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                _ => return Err(expected(v, "none, requested or required")),
            };
            Ok(())
        },
    },
    Setting {
        name: "authorizer.enabled",
        dynamic: false,
        get: |c| c.security.authorizer_enabled.to_string(),
        set: |c, v| {
            c.security.authorizer_enabled = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "super.users",
        dynamic: false,
        get: |c| c.security.super_users.clone(),
        set: |c, v| {
            if let Some(bad) = principals(v).iter().find(|p| !p.starts_with("User:")) {
                return Err(expected(
                    bad,
                    "principals of the form User:name, ;-separated",
                ));
            }
            c.security.super_users = v.to_owned();
            Ok(())
        },
    },
    Setting {
        name: "allow.everyone.if.no.acl.found",
        dynamic: false,
        get: |c| c.security.allow_if_no_acl.to_string(),
        set: |c, v| {
            c.security.allow_if_no_acl = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "ssl.principal.mapping.rules",
        dynamic: false,
        get: |c| c.security.principal_mapping_rules.clone(),
        set: |c, v| {
            super::principal::PrincipalRules::parse(v)?;
            c.security.principal_mapping_rules = v.to_owned();
            Ok(())
        },
    },
];
