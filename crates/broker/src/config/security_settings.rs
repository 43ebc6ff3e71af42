//! The settings of `spool_security`'s configuration, by Kafka's names: listeners and
//! their protocols, SASL, TLS, the authorizer and OAUTHBEARER. Rows of the broker's
//! one settings table (`super::all_settings`).

use std::path::PathBuf;
use std::time::Duration;

use spool_security::config::{ClientAuth, principals};
use spool_security::listeners;
use spool_security::principal::PrincipalRules;

use super::{Setting, expected, millis_or_zero};

fn path(value: &str) -> Option<PathBuf> {
    (!value.is_empty()).then(|| PathBuf::from(value))
}

fn shown(path: Option<&PathBuf>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

pub(super) const SECURITY_SETTINGS: [Setting; 14] = [
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
            listeners::parse_endpoints(v)?;
            c.security.advertised_listeners = (!v.trim().is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "listener.security.protocol.map",
        dynamic: false,
        get: |c| c.security.protocol_map.clone(),
        set: |c, v| {
            listeners::parse_protocol_map(v)?;
            c.security.protocol_map = v.to_owned();
            Ok(())
        },
    },
    Setting {
        name: "sasl.enabled.mechanisms",
        dynamic: false,
        get: |c| c.security.sasl_mechanisms.clone(),
        set: |c, v| {
            spool_security::enabled_mechanisms(v)?;
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
            PrincipalRules::parse(v)?;
            c.security.principal_mapping_rules = v.to_owned();
            Ok(())
        },
    },
];

fn optional(value: &str) -> Option<String> {
    (!value.trim().is_empty()).then(|| value.trim().to_owned())
}

pub(super) const OAUTH_SETTINGS: [Setting; 7] = [
    Setting {
        name: "sasl.oauthbearer.jwks.endpoint.url",
        dynamic: false,
        get: |c| c.security.oauth.jwks_url.clone().unwrap_or_default(),
        set: |c, v| {
            c.security.oauth.jwks_url = optional(v);
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        dynamic: false,
        get: |c| c.security.oauth.refresh.as_millis().to_string(),
        set: |c, v| {
            let refresh = millis_or_zero(v)?;
            if refresh < Duration::from_secs(1) {
                return Err(expected(v, "at least 1000 ms"));
            }
            c.security.oauth.refresh = refresh;
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.expected.audience",
        dynamic: false,
        get: |c| c.security.oauth.audience.clone(),
        set: |c, v| {
            c.security.oauth.audience = v.to_owned();
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.expected.issuer",
        dynamic: false,
        get: |c| c.security.oauth.issuer.clone().unwrap_or_default(),
        set: |c, v| {
            c.security.oauth.issuer = optional(v);
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.sub.claim.name",
        dynamic: false,
        get: |c| c.security.oauth.principal_claim.clone(),
        set: |c, v| {
            if v.trim().is_empty() {
                return Err(expected(v, "a claim name"));
            }
            c.security.oauth.principal_claim = v.trim().to_owned();
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.clock.skew.seconds",
        dynamic: false,
        get: |c| c.security.oauth.clock_skew_seconds.to_string(),
        set: |c, v| {
            c.security.oauth.clock_skew_seconds = v
                .parse()
                .ok()
                .filter(|seconds| *seconds <= 3600)
                .ok_or_else(|| expected(v, "0 to 3600 seconds"))?;
            Ok(())
        },
    },
    Setting {
        name: "sasl.oauthbearer.unsecured.jwt.allowed",
        dynamic: false,
        get: |c| c.security.oauth.allow_unsecured.to_string(),
        set: |c, v| {
            c.security.oauth.allow_unsecured =
                v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
];
