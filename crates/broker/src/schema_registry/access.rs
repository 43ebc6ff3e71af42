//! Who may use the registry, when the broker authenticates its clients (a SASL
//! listener): HTTP Basic with a user's SCRAM password (checked as SASL/PLAIN checks
//! it) on every request; any user who logs in may read; writing needs the Kafka ACL
//! that producing to the subject's topic needs (`WRITE` on topic `T` for subjects
//! `T-key` and `T-value`, TopicNameStrategy's), and `ALTER` on the cluster for any
//! other subject, for the registry-wide config and for every mode (IMPORT hands out
//! ids, which are the whole registry's). Super users may do
//! everything; with `authorizer.enabled=false` every user may. Without SASL
//! listeners, the registry is as open as the broker's listeners are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts, Path, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use spool_schema_registry::RegistryError;
use spool_security::acl::Operation;

use super::Peer;
use super::routes::Failure;
use crate::shared::Shared;

/// How long a checked password is taken as right without checking it again (a
/// PBKDF2 per request would cost milliseconds each): a changed or removed credential
/// stops working within this.
const VERIFIED_FOR: Duration = Duration::from_secs(60);

/// The registry's gate.
pub(crate) struct Gate {
    shared: Arc<Shared>,
    /// Logins checked lately: a hash of user and password, and when.
    verified: Mutex<HashMap<[u8; 32], Instant>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

impl Gate {
    pub(crate) fn new(shared: Arc<Shared>) -> Gate {
        Gate {
            shared,
            verified: Mutex::new(HashMap::new()),
        }
    }

    async fn logs_in(&self, user: &str, password: &str) -> bool {
        let key: [u8; 32] = Sha256::new()
            .chain_update(user)
            .chain_update([0])
            .chain_update(password)
            .finalize()
            .into();
        if self
            .cache()
            .get(&key)
            .is_some_and(|at| at.elapsed() < VERIFIED_FOR)
        {
            return true;
        }
        let matches =
            spool_security::sasl::check_password(self.shared.metadata(), user, password.as_bytes())
                .await
                .unwrap_or(false);
        let mut cache = self.cache();
        cache.retain(|_, at| at.elapsed() < VERIFIED_FOR);
        if matches {
            cache.insert(key, Instant::now());
        }
        matches
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The middleware: a login, then the right to what the request does.
pub(super) async fn guard(
    State(gate): State<Arc<Gate>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    let Some((user, password)) = basic_login(&request) else {
        return unauthorized();
    };
    if !gate.logs_in(&user, &password).await {
        tracing::info!(%user, %peer, "a schema registry login failed");
        return unauthorized();
    }
    let (mut parts, body) = request.into_parts();
    let subject = Path::<HashMap<String, String>>::from_request_parts(&mut parts, &())
        .await
        .ok()
        .and_then(|Path(params)| params.get("subject").cloned());
    if let Some(needed) = write_needs(&parts.method, parts.uri.path(), subject.as_deref()) {
        let access = gate
            .shared
            .authorizer()
            .access(Arc::from(format!("User:{user}")), peer.ip());
        let allowed = match &needed {
            Needs::TopicWrite(topic) => access.topic(Operation::Write, topic),
            Needs::ClusterAlter => access.cluster(Operation::Alter),
        };
        if !allowed {
            let what = match &needed {
                Needs::TopicWrite(topic) => format!("WRITE on topic {topic}"),
                Needs::ClusterAlter => "ALTER on the cluster".to_owned(),
            };
            return Failure::from(RegistryError::Forbidden(format!(
                "User {user} may not change this: it needs {what}"
            )))
            .into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// What a request that changes the registry needs.
enum Needs {
    TopicWrite(String),
    ClusterAlter,
}

/// `None` for a request that only reads (lookups and compatibility checks are POSTs
/// that read).
fn write_needs(method: &Method, path: &str, subject: Option<&str>) -> Option<Needs> {
    let writes = match *method {
        Method::PUT | Method::DELETE => true,
        // Registering; `POST /subjects/{s}` looks up, `/compatibility/…` checks.
        Method::POST => path.starts_with("/subjects/") && path.ends_with("/versions"),
        _ => false,
    };
    if !writes {
        return None;
    }
    if path.starts_with("/mode") {
        return Some(Needs::ClusterAlter);
    }
    let topic = subject.and_then(|subject| {
        subject
            .strip_suffix("-value")
            .or_else(|| subject.strip_suffix("-key"))
            .filter(|topic| !topic.is_empty())
    });
    Some(topic.map_or(Needs::ClusterAlter, |topic| {
        Needs::TopicWrite(topic.to_owned())
    }))
}

/// The user and password of an `Authorization: Basic` header.
fn basic_login(request: &Request) -> Option<(String, String)> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

fn unauthorized() -> Response {
    let mut answer = Failure::from(RegistryError::Unauthorized).into_response();
    answer.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Basic realm=\"spool-schema-registry\""),
    );
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_need_the_subjects_topic_or_the_cluster() {
        let needs = |method: Method, path: &str, subject: Option<&str>| match write_needs(
            &method, path, subject,
        ) {
            None => "read".to_owned(),
            Some(Needs::TopicWrite(topic)) => format!("topic {topic}"),
            Some(Needs::ClusterAlter) => "cluster".to_owned(),
        };
        assert_eq!(
            needs(Method::GET, "/subjects/a-value/versions", Some("a-value")),
            "read"
        );
        assert_eq!(
            needs(Method::POST, "/subjects/a-value", Some("a-value")),
            "read"
        );
        assert_eq!(
            needs(
                Method::POST,
                "/compatibility/subjects/a-value/versions",
                Some("a-value")
            ),
            "read"
        );
        assert_eq!(
            needs(
                Method::POST,
                "/subjects/orders-value/versions",
                Some("orders-value")
            ),
            "topic orders"
        );
        assert_eq!(
            needs(Method::DELETE, "/subjects/k-key", Some("k-key")),
            "topic k"
        );
        assert_eq!(
            needs(
                Method::POST,
                "/subjects/shop%2Fitem.proto/versions",
                Some("shop/item.proto")
            ),
            "cluster"
        );
        assert_eq!(needs(Method::PUT, "/config", None), "cluster");
        assert_eq!(
            needs(Method::PUT, "/mode/-value", Some("-value")),
            "cluster"
        );
    }
}
