//! SASL exchanges (KIP-43, KIP-152): after SaslHandshake has chosen a mechanism, the
//! client's tokens — in SaslAuthenticate requests, or raw frames after a v0 handshake
//! — step the exchange until it succeeds or fails. The mechanisms' checks are
//! `spool_sasl`'s; this looks up what they check against.
//!
//! - `PLAIN`: checked against the user's stored SCRAM credential (no plaintext
//!   password is kept).
//! - `SCRAM-SHA-256`, `SCRAM-SHA-512`: the stored credential.
//! - `OAUTHBEARER`: one message, the token checked against the key set
//!   ([`super::oauth`]). A bad token fails at once with the reason (RFC 7628's error
//!   challenge and the client's empty reply would only delay the same answer).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spool_metadata::MetadataStore;
use spool_sasl::oauth::parse_client_response;
use spool_sasl::scram::{self, Credential, Mechanism, ServerExchange};

use super::oauth::TokenVerifier;

/// A mechanism a listener offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    Plain,
    Scram(Mechanism),
    OAuthBearer,
}

impl SaslMechanism {
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(mechanism) => mechanism.sasl_name(),
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        match name {
            "PLAIN" => Some(SaslMechanism::Plain),
            "OAUTHBEARER" => Some(SaslMechanism::OAuthBearer),
            _ => Mechanism::from_sasl_name(name).map(SaslMechanism::Scram),
        }
    }
}
/// Where a connection's exchange stands.
#[derive(Debug, Default)]
pub enum Exchange {
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
    pub fn expects_raw_token(&self) -> bool {
        matches!(
            self,
            Exchange::Chosen { raw: true, .. } | Exchange::Scram { raw: true, .. }
        )
    }
}

/// What a token did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this challenge; more tokens follow.
    Continue(Vec<u8>),
    /// Authenticated as this user; send these last bytes. `lifetime`: how long the
    /// credential itself is good for (an OAUTHBEARER token's).
    Done {
        user: String,
        last: Vec<u8>,
        lifetime: Option<Duration>,
    },
}

/// Why an exchange failed: the message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthFailure(pub String);

/// What an exchange checks against.
#[derive(Debug, Clone, Copy)]
pub struct Verifiers<'a> {
    /// SCRAM credentials (for PLAIN too).
    pub metadata: &'a Arc<dyn MetadataStore>,
    /// OAUTHBEARER's key set, when a listener offers it.
    pub tokens: Option<&'a TokenVerifier>,
}

/// Steps `exchange` with the client's `token`. On failure the exchange is back to
/// idle (the connection is closed after the answer anyway).
pub async fn step(
    exchange: &mut Exchange,
    token: &[u8],
    verifiers: Verifiers<'_>,
) -> Result<Step, AuthFailure> {
    let metadata = verifiers.metadata;
    match std::mem::take(exchange) {
        Exchange::Idle => Err(AuthFailure(
            "no SASL mechanism chosen: send SaslHandshake first".to_owned(),
        )),
        Exchange::Chosen {
            mechanism: SaslMechanism::Plain,
            ..
        } => plain(token, metadata).await,
        Exchange::Chosen {
            mechanism: SaslMechanism::OAuthBearer,
            ..
        } => oauth_bearer(token, verifiers.tokens).await,
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
                lifetime: None,
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
    let login = spool_sasl::plain::parse(token).map_err(|error| AuthFailure(error.to_string()))?;
    if !check_password(metadata, login.user, login.password).await? {
        return Err(invalid("PLAIN"));
    }
    Ok(Step::Done {
        user: login.user.to_owned(),
        last: Vec::new(),
        lifetime: None,
    })
}

/// Whether `password` is `user`'s, by the strongest SCRAM credential the user has (no
/// plaintext password is stored): SASL/PLAIN logins and the schema registry's HTTP
/// Basic check passwords this way. `false` for a user without credentials.
pub async fn check_password(
    metadata: &Arc<dyn MetadataStore>,
    user: &str,
    password: &[u8],
) -> Result<bool, AuthFailure> {
    let mut found = None;
    for mechanism in [Mechanism::Sha512, Mechanism::Sha256] {
        if let Some(credential) = credential(metadata, user, mechanism).await? {
            found = Some(credential);
            break;
        }
    }
    let Some(credential) = found else {
        return Ok(false);
    };
    // PBKDF2 over thousands of iterations: off the async threads.
    let password = password.to_vec();
    Ok(
        tokio::task::spawn_blocking(move || credential.matches_password(&password))
            .await
            .unwrap_or(false),
    )
}

async fn oauth_bearer(token: &[u8], tokens: Option<&TokenVerifier>) -> Result<Step, AuthFailure> {
    let response = parse_client_response(token).map_err(|error| AuthFailure(error.to_string()))?;
    let Some(tokens) = tokens else {
        return Err(AuthFailure("OAUTHBEARER is not enabled".to_owned()));
    };
    let verified = tokens
        .verify(&response.token)
        .await
        .map_err(|error| AuthFailure(format!("invalid OAUTHBEARER token: {error}")))?;
    // As Kafka: an authorization id, if given, must be the token's principal.
    if response
        .authzid
        .as_ref()
        .is_some_and(|authzid| *authzid != verified.principal)
    {
        return Err(AuthFailure(
            "the authorization id must be the token's principal or empty".to_owned(),
        ));
    }
    Ok(Step::Done {
        user: verified.principal,
        last: Vec::new(),
        lifetime: Some(credential_lifetime(verified.expires_at_ms)),
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

/// From now until `expires_at_ms` (ms since the Unix epoch); zero if that is past.
fn credential_lifetime(expires_at_ms: i64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let expires = Duration::from_millis(u64::try_from(expires_at_ms).unwrap_or(0));
    expires.saturating_sub(now)
}
