//! SASL exchanges (KIP-43, KIP-152): after SaslHandshake has chosen a mechanism, the
//! client's tokens — in SaslAuthenticate requests, or raw frames after a v0 handshake
//! — step the exchange until it succeeds or fails.
//!
//! - `PLAIN`: `[authzid] NUL user NUL password`, checked against the user's stored
//!   SCRAM credential (no plaintext password is kept); an authzid other than the user
//!   is refused (CVE-2017-12610).
//! - `SCRAM-SHA-256`, `SCRAM-SHA-512`: see [`super::scram`].

use std::sync::Arc;

use spool_metadata::MetadataStore;

use super::scram::{self, Credential, Mechanism, ServerExchange};

/// A mechanism a listener offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SaslMechanism {
    Plain,
    Scram(Mechanism),
}

impl SaslMechanism {
    pub(crate) fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(mechanism) => mechanism.sasl_name(),
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<SaslMechanism> {
        if name == "PLAIN" {
            return Some(SaslMechanism::Plain);
        }
        Mechanism::from_sasl_name(name).map(SaslMechanism::Scram)
    }
}

/// Where a connection's exchange stands.
#[derive(Debug, Default)]
pub(crate) enum Exchange {
    /// No exchange under way (before the handshake, or after one ended).
    #[default]
    Idle,
    /// The handshake chose a mechanism; `raw`: tokens come as bare frames (v0).
    Chosen { mechanism: SaslMechanism, raw: bool },
    /// SCRAM's server-first message went out.
    Scram {
        exchange: Box<ServerExchange>,
        raw: bool,
    },
}

impl Exchange {
    /// Whether the next frame is a bare token (after a v0 handshake).
    pub(crate) fn expects_raw_token(&self) -> bool {
        matches!(
            self,
            Exchange::Chosen { raw: true, .. } | Exchange::Scram { raw: true, .. }
        )
    }
}

/// What a token did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send this challenge; more tokens follow.
    Continue(Vec<u8>),
    /// Authenticated as this user; send these last bytes.
    Done { user: String, last: Vec<u8> },
}

/// Why an exchange failed: the message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct AuthFailure(pub(crate) String);

/// The longest user name or password PLAIN takes (as Redpanda).
const PLAIN_FIELD_MAX: usize = 255;

/// Steps `exchange` with the client's `token`. On failure the exchange is back to
/// idle (the connection is closed after the answer anyway).
pub(crate) async fn step(
    exchange: &mut Exchange,
    token: &[u8],
    metadata: &Arc<dyn MetadataStore>,
) -> Result<Step, AuthFailure> {
    match std::mem::take(exchange) {
        Exchange::Idle => Err(AuthFailure(
            "no SASL mechanism chosen: send SaslHandshake first".to_owned(),
        )),
        Exchange::Chosen {
            mechanism: SaslMechanism::Plain,
            ..
        } => plain(token, metadata).await,
        Exchange::Chosen {
            mechanism: SaslMechanism::Scram(mechanism),
            raw,
        } => {
            let first = scram::parse_client_first(token).map_err(|e| AuthFailure(e.to_string()))?;
            let credential = credential(metadata, &first.user, mechanism)
                .await?
                .ok_or_else(|| invalid(mechanism.sasl_name()))?;
            let (server, challenge) = ServerExchange::start(first, credential);
            *exchange = Exchange::Scram {
                exchange: Box::new(server),
                raw,
            };
            Ok(Step::Continue(challenge))
        }
        Exchange::Scram {
            exchange: server, ..
        } => {
            let last = server.finish(token).map_err(|error| match error {
                scram::ScramError::InvalidCredentials => invalid(server.mechanism().sasl_name()),
                other => AuthFailure(other.to_string()),
            })?;
            Ok(Step::Done {
                user: server.user().to_owned(),
                last,
            })
        }
    }
}

/// Kafka's words for a bad user or password, the same whichever it was.
fn invalid(mechanism: &str) -> AuthFailure {
    AuthFailure(format!(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    ))
}

async fn plain(token: &[u8], metadata: &Arc<dyn MetadataStore>) -> Result<Step, AuthFailure> {
    let mut fields = token.split(|byte| *byte == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(AuthFailure(
            "malformed PLAIN message: expected [authzid] NUL user NUL password".to_owned(),
        ));
    };
    let user = std::str::from_utf8(user)
        .map_err(|_| AuthFailure("the PLAIN user name is not UTF-8".to_owned()))?;
    if user.is_empty() || user.len() > PLAIN_FIELD_MAX || password.len() > PLAIN_FIELD_MAX {
        return Err(AuthFailure(format!(
            "PLAIN user names and passwords are 1 to {PLAIN_FIELD_MAX} bytes"
        )));
    }
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(AuthFailure(
            "the authorization id must be the user name or empty".to_owned(),
        ));
    }
    // The strongest credential the user has.
    let mut found = None;
    for mechanism in [Mechanism::Sha512, Mechanism::Sha256] {
        if let Some(credential) = credential(metadata, user, mechanism).await? {
            found = Some(credential);
            break;
        }
    }
    let Some(credential) = found else {
        return Err(invalid("PLAIN"));
    };
    // PBKDF2 over thousands of iterations: off the async threads.
    let password = password.to_vec();
    let matches = tokio::task::spawn_blocking(move || credential.matches_password(&password))
        .await
        .unwrap_or(false);
    if !matches {
        return Err(invalid("PLAIN"));
    }
    Ok(Step::Done {
        user: user.to_owned(),
        last: Vec::new(),
    })
}

/// A user's stored credential for `mechanism`.
async fn credential(
    metadata: &Arc<dyn MetadataStore>,
    user: &str,
    mechanism: Mechanism,
) -> Result<Option<Credential>, AuthFailure> {
    let record = metadata
        .credential(user, mechanism.code())
        .await
        .map_err(|error| {
            tracing::warn!(%error, "cannot read a SCRAM credential");
            AuthFailure("the credential store cannot be read; try again".to_owned())
        })?;
    Ok(record.and_then(|record| {
        Some(Credential {
            mechanism,
            salt: record.salt,
            iterations: u32::try_from(record.iterations).ok()?,
            stored_key: record.stored_key,
            server_key: record.server_key,
        })
    }))
}
