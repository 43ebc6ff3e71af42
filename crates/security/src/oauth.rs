//! OAUTHBEARER's broker side: the JSON Web Key Set tokens are checked against, where
//! it comes from (`sasl.oauthbearer.jwks.endpoint.url`: an `https://` or `http://`
//! URL, or a file), and keeping it fresh. What a token must satisfy is
//! `spool_sasl::jwt`'s.
//!
//! The set is read at start (a broker that cannot check tokens says so then, not at
//! the first login), then again every `sasl.oauthbearer.jwks.endpoint.refresh.ms` (a
//! file: whenever it changes, looked at every few seconds), and at once when a token
//! names a key the set lacks (an identity provider rotating its keys), at most once
//! per [`REFETCH_BACKOFF`]. A set that cannot be read again is logged, the previous
//! one kept, and the read tried again after the backoff. A set is at most
//! [`KEY_SET_MAX`] bytes however it is sent; redirects never go from `https` to
//! `http`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use spool_sasl::jwt::{self, TokenError, TokenRules, Verified};
use tokio::sync::watch;

/// The OAUTHBEARER settings.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// `sasl.oauthbearer.jwks.endpoint.url`: where the key set is.
    pub jwks_url: Option<String>,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms`.
    pub refresh: Duration,
    /// `sasl.oauthbearer.expected.audience`, comma-separated.
    pub audience: String,
    /// `sasl.oauthbearer.expected.issuer`.
    pub issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name`.
    pub principal_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds`.
    pub clock_skew_seconds: u64,
    /// `sasl.oauthbearer.unsecured.jwt.allowed`: take `alg: none` tokens (tests only).
    pub allow_unsecured: bool,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            jwks_url: None,
            refresh: Duration::from_secs(3600),
            audience: String::new(),
            issuer: None,
            principal_claim: "sub".to_owned(),
            clock_skew_seconds: 30,
            allow_unsecured: false,
        }
    }
}

/// The fewest ms between two reads of the key set for a key it lacks (Kafka's
/// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms` default is 100 ms; a login storm
/// with forged key ids must not become a storm of fetches).
pub const REFETCH_BACKOFF: Duration = Duration::from_secs(10);

/// How often a key file is looked at.
const FILE_CHECK_EVERY: Duration = Duration::from_secs(5);

/// The largest key set read: sets are a few KiB.
const KEY_SET_MAX: usize = 1024 * 1024;

/// Where the key set is.
#[derive(Debug, Clone)]
enum KeySource {
    Url(String),
    File(PathBuf),
}

impl KeySource {
    fn parse(value: &str) -> KeySource {
        if value.starts_with("https://") || value.starts_with("http://") {
            KeySource::Url(value.to_owned())
        } else {
            KeySource::File(PathBuf::from(
                value.strip_prefix("file://").unwrap_or(value),
            ))
        }
    }

    async fn read(&self, http: &reqwest::Client) -> Result<JwkSet, String> {
        let bytes = match self {
            KeySource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|error| format!("{}: {error}", path.display()))?,
            KeySource::Url(url) => fetch(http, url).await?,
        };
        if bytes.len() > KEY_SET_MAX {
            return Err(format!("the key set is over {KEY_SET_MAX} bytes"));
        }
        jwt::parse_key_set(&bytes)
    }

    fn stamp(&self) -> Option<SystemTime> {
        match self {
            KeySource::File(path) => std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            KeySource::Url(_) => None,
        }
    }
}

/// The key set at `url`, read up to [`KEY_SET_MAX`] bytes however the server sends it.
async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let failed = |error: reqwest::Error| format!("{url}: {error}");
    let mut response = http
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(failed)?;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > KEY_SET_MAX {
            return Err(format!("{url}: the key set is over {KEY_SET_MAX} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Up to 5 redirects, never from `https` down to `http`.
fn redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let downgrade = attempt.url().scheme() == "http"
            && attempt.previous().iter().any(|url| url.scheme() == "https");
        if downgrade || attempt.previous().len() >= 5 {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

/// Checks OAUTHBEARER tokens against the key set in force.
#[derive(Debug)]
pub struct TokenVerifier {
    source: Option<KeySource>,
    rules: TokenRules,
    refresh: Duration,
    http: reqwest::Client,
    /// The set in force (a watch channel: a reader never waits, and never sees a
    /// poisoned lock).
    keys: watch::Sender<Arc<JwkSet>>,
    /// Held through each read of the set: one read at a time, so the sets are
    /// installed in the order they were read.
    reads: tokio::sync::Mutex<Reads>,
}

/// When the set was read.
#[derive(Debug)]
struct Reads {
    /// The last read tried (the backoff counts from it).
    tried: Instant,
    /// The last that succeeded (the refresh interval counts from it).
    succeeded: Instant,
    /// The file's modification time then.
    stamp: Option<SystemTime>,
}

impl TokenVerifier {
    /// Reads the key set the settings name. Without one, only unsecured tokens can
    /// pass, so `sasl.oauthbearer.unsecured.jwt.allowed` must be set.
    pub async fn load(config: &OAuthConfig) -> Result<TokenVerifier, String> {
        let source = config.jwks_url.as_deref().map(KeySource::parse);
        if source.is_none() && !config.allow_unsecured {
            return Err(
                "OAUTHBEARER needs sasl.oauthbearer.jwks.endpoint.url (or, for \
                        tests, sasl.oauthbearer.unsecured.jwt.allowed=true)"
                    .to_owned(),
            );
        }
        // reqwest is built without a bundled crypto provider: ring, which the TLS
        // listeners use too, is the process's (whoever installs it first).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(redirects())
            .build()
            .map_err(|error| error.to_string())?;
        let stamp = source.as_ref().and_then(KeySource::stamp);
        let keys = match &source {
            Some(source) => source
                .read(&http)
                .await
                .map_err(|error| format!("sasl.oauthbearer.jwks.endpoint.url: {error}"))?,
            None => JwkSet { keys: Vec::new() },
        };
        let now = Instant::now();
        Ok(TokenVerifier {
            rules: TokenRules {
                principal_claim: config.principal_claim.clone(),
                audience: config
                    .audience
                    .split(',')
                    .map(str::trim)
                    .filter(|audience| !audience.is_empty())
                    .map(str::to_owned)
                    .collect(),
                issuer: config.issuer.clone(),
                clock_skew_seconds: config.clock_skew_seconds,
                allow_unsecured: config.allow_unsecured,
            },
            source,
            refresh: config.refresh,
            http,
            keys: watch::Sender::new(Arc::new(keys)),
            reads: tokio::sync::Mutex::new(Reads {
                tried: now,
                succeeded: now,
                stamp,
            }),
        })
    }

    /// Checks `token`; a key the set lacks has the set read again (unless it was
    /// tried within [`REFETCH_BACKOFF`]) before the token is refused.
    pub async fn verify(&self, token: &str) -> Result<Verified, TokenError> {
        let checked = jwt::verify(token, &self.current(), &self.rules, now_ms());
        if !matches!(checked, Err(TokenError::UnknownKey(_))) {
            return checked;
        }
        {
            let mut reads = self.reads.lock().await;
            if reads.tried.elapsed() >= REFETCH_BACKOFF {
                self.read_again(&mut reads, "a token names a key the set lacks")
                    .await;
            }
        }
        // Against the set as it is now: read here or by another login meanwhile.
        jwt::verify(token, &self.current(), &self.rules, now_ms())
    }

    fn current(&self) -> Arc<JwkSet> {
        self.keys.borrow().clone()
    }

    /// Reads the set again (the caller holds `reads`).
    async fn read_again(&self, reads: &mut Reads, why: &str) {
        let Some(source) = &self.source else {
            return;
        };
        reads.tried = Instant::now();
        let stamp = source.stamp();
        match source.read(&self.http).await {
            Ok(keys) => {
                tracing::info!(keys = keys.keys.len(), why, "OAUTHBEARER key set read");
                self.keys.send_replace(Arc::new(keys));
                reads.succeeded = Instant::now();
                reads.stamp = stamp;
            }
            Err(error) => {
                tracing::warn!(%error, "the OAUTHBEARER key set cannot be read; keeping the previous one");
            }
        }
    }

    /// Whether the set is due to be read again: its refresh interval passed (after a
    /// failed read, the backoff), or its file changed.
    fn due(&self, reads: &Reads) -> bool {
        let refresh_due = reads.succeeded.elapsed() >= self.refresh
            && reads.tried.elapsed() >= REFETCH_BACKOFF.min(self.refresh);
        let file_changed = matches!(&self.source, Some(source @ KeySource::File(_)) if source.stamp() != reads.stamp);
        refresh_due || file_changed
    }
}

/// Keeps the key set fresh until the broker stops.
pub async fn keep_fresh(verifier: Arc<TokenVerifier>, mut stopped: watch::Receiver<bool>) {
    if verifier.source.is_none() {
        return;
    }
    let every = FILE_CHECK_EVERY.min(verifier.refresh);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stopped.changed() => return,
        }
        let mut reads = verifier.reads.lock().await;
        if verifier.due(&reads) {
            verifier.read_again(&mut reads, "refresh").await;
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
