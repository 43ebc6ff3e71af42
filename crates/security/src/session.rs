//! A connection's security state: the listener it came in on, who it authenticated as,
//! where its SASL exchange stands, and when its session expires (KIP-368). The
//! connection's worker owns it and asks it, before each request, whether the request
//! may be handled at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;

use super::listeners::SecurityProtocol;
use super::sasl::{Exchange, SaslMechanism};

/// What a listener asks of its connections.
#[derive(Debug, Clone)]
pub struct ListenerPolicy {
    pub name: String,
    pub protocol: SecurityProtocol,
    /// `sasl.enabled.mechanisms`.
    pub mechanisms: Vec<SaslMechanism>,
    /// `connections.max.reauth.ms`: 0 for sessions that do not expire.
    pub max_reauth: Duration,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_delay: Duration,
}

/// Whether a request may be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Allow,
    /// Close the connection, and log why.
    Close(&'static str),
}

/// The most a frame may be before authentication: Kafka's
/// `sasl.server.max.receive.size` (CVE-2022-34917: unauthenticated clients made
/// brokers allocate from huge counts).
pub const PRE_AUTH_MAX_FRAME: usize = 512 * 1024;

/// Kafka's principal of a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

#[derive(Debug)]
pub struct Session {
    pub listener: Arc<ListenerPolicy>,
    /// `User:name` once authenticated (`User:ANONYMOUS` on listeners without SASL):
    /// a re-authentication must keep it.
    principal: Option<Arc<str>>,
    /// Read by the connection's reader: frames are small until this is set.
    authenticated: Arc<AtomicBool>,
    pub exchange: Exchange,
    expires: Option<Instant>,
    /// A quota's throttle (KIP-219): no request is read before this.
    muted_until: Option<Instant>,
}

impl Session {
    pub fn new(listener: Arc<ListenerPolicy>) -> Session {
        let open = !listener.protocol.uses_sasl();
        Session {
            principal: open.then(|| Arc::from(ANONYMOUS)),
            authenticated: Arc::new(AtomicBool::new(open)),
            exchange: Exchange::Idle,
            expires: None,
            muted_until: None,
            listener,
        }
    }

    /// On a listener without SASL, the principal of the client's TLS certificate
    /// (`User:` and the name `ssl.principal.mapping.rules` made of its subject). With
    /// SASL, the SASL login decides, as in Kafka.
    pub fn certificate_user(mut self, user: &str) -> Session {
        if !self.listener.protocol.uses_sasl() {
            self.principal = Some(Arc::from(format!("User:{user}")));
        }
        self
    }

    /// Who the connection authenticated as (`User:ANONYMOUS` before, and on
    /// listeners without SASL).
    pub fn principal(&self) -> Arc<str> {
        self.principal
            .clone()
            .unwrap_or_else(|| Arc::from(ANONYMOUS))
    }

    /// Mutes the connection for `throttle` from now (a client over its quota).
    pub fn mute(&mut self, throttle: Duration) {
        if !throttle.is_zero() {
            let until = Instant::now() + throttle;
            self.muted_until = Some(self.muted_until.map_or(until, |muted| muted.max(until)));
        }
    }

    /// Until when the connection is muted, if it is; the mute is then over.
    pub fn take_mute(&mut self) -> Option<Instant> {
        self.muted_until.take()
    }

    /// The flag the reader watches.
    pub fn authenticated_flag(&self) -> Arc<AtomicBool> {
        self.authenticated.clone()
    }

    /// Whether a request of `key` may be handled now.
    pub fn gate(&self, key: ApiKey, now: Instant) -> Gate {
        if !self.listener.protocol.uses_sasl()
            || matches!(key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)
        {
            return Gate::Allow;
        }
        if !self.authenticated.load(Ordering::Acquire) {
            return if key == ApiKey::ApiVersions {
                Gate::Allow
            } else {
                Gate::Close("a request other than ApiVersions or SASL before authentication")
            };
        }
        if self.expires.is_some_and(|expires| now >= expires) {
            return Gate::Close("the SASL session expired without re-authentication");
        }
        Gate::Allow
    }

    /// Records a successful authentication of `user` with a credential good for
    /// `credential_lifetime` (an OAUTHBEARER token's; `None` for passwords); the
    /// session's lifetime in ms, 0 for none. As Kafka: the shorter of the credential's
    /// lifetime and `connections.max.reauth.ms`. A re-authentication must be of the
    /// same principal.
    pub fn authenticated(
        &mut self,
        user: &str,
        credential_lifetime: Option<Duration>,
        now: Instant,
    ) -> Result<i64, String> {
        let principal: Arc<str> = Arc::from(format!("User:{user}"));
        if let Some(current) = &self.principal
            && *current != principal
        {
            return Err("a re-authentication cannot change the principal".to_owned());
        }
        self.principal = Some(principal);
        self.authenticated.store(true, Ordering::Release);
        let max_reauth = (!self.listener.max_reauth.is_zero()).then_some(self.listener.max_reauth);
        let lifetime = match (credential_lifetime, max_reauth) {
            (Some(credential), Some(max)) => Some(credential.min(max)),
            (one, other) => one.or(other),
        };
        self.expires = lifetime.map(|lifetime| now + lifetime);
        Ok(lifetime.map_or(0, |lifetime| {
            i64::try_from(lifetime.as_millis()).unwrap_or(i64::MAX)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(protocol: SecurityProtocol, reauth_ms: u64) -> Arc<ListenerPolicy> {
        Arc::new(ListenerPolicy {
            name: protocol.name().to_owned(),
            protocol,
            mechanisms: vec![SaslMechanism::Plain],
            max_reauth: Duration::from_millis(reauth_ms),
            failed_delay: Duration::from_millis(100),
        })
    }

    #[test]
    fn before_authentication_only_api_versions_and_sasl_pass() {
        let now = Instant::now();
        let session = Session::new(listener(SecurityProtocol::SaslPlaintext, 0));
        assert_eq!(session.gate(ApiKey::ApiVersions, now), Gate::Allow);
        assert_eq!(session.gate(ApiKey::SaslHandshake, now), Gate::Allow);
        assert!(matches!(
            session.gate(ApiKey::Metadata, now),
            Gate::Close(_)
        ));
        let open = Session::new(listener(SecurityProtocol::Plaintext, 0));
        assert_eq!(open.gate(ApiKey::Produce, now), Gate::Allow);
    }

    #[test]
    fn a_session_expires_and_keeps_its_principal() {
        let now = Instant::now();
        let mut session = Session::new(listener(SecurityProtocol::SaslSsl, 1000));
        assert_eq!(session.authenticated("alice", None, now), Ok(1000));
        assert_eq!(session.gate(ApiKey::Produce, now), Gate::Allow);
        let later = now + Duration::from_millis(1001);
        assert!(matches!(
            session.gate(ApiKey::Produce, later),
            Gate::Close(_)
        ));
        assert_eq!(session.gate(ApiKey::SaslHandshake, later), Gate::Allow);
        assert!(session.authenticated("mallory", None, later).is_err());
        assert_eq!(session.authenticated("alice", None, later), Ok(1000));
        assert_eq!(session.gate(ApiKey::Produce, later), Gate::Allow);
    }

    #[test]
    fn a_token_shortens_the_session() {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let mut session = Session::new(listener(SecurityProtocol::SaslSsl, 0));
        assert_eq!(
            session.authenticated("alice", Some(minute), now),
            Ok(60_000)
        );
        assert!(matches!(
            session.gate(ApiKey::Produce, now + minute),
            Gate::Close(_)
        ));
        // The shorter of the token's lifetime and connections.max.reauth.ms.
        let mut session = Session::new(listener(SecurityProtocol::SaslSsl, 1000));
        assert_eq!(session.authenticated("alice", Some(minute), now), Ok(1000));
        let mut session = Session::new(listener(SecurityProtocol::SaslSsl, 120_000));
        assert_eq!(
            session.authenticated("alice", Some(minute), now),
            Ok(60_000)
        );
    }
}
