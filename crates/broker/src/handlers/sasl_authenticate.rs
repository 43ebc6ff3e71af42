//! SaslAuthenticate (key 36): one token of the exchange SaslHandshake began, and the
//! server's answer to it. Success marks the connection authenticated (v1+: with the
//! session's lifetime, KIP-368); a failure answers `SASL_AUTHENTICATION_FAILED` with a
//! message, and the connection is closed after `connection.failed.authentication.delay.ms`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::api::ApiDecl;
use crate::errors::code;
use crate::shared::Shared;
use spool_security::sasl::{self, Step};
use spool_security::session::Session;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::SaslAuthenticate,
    min: 0,
    max: 2,
};

/// The answer, and whether the connection is to be closed after it.
pub(crate) async fn handle(
    request: SaslAuthenticateRequest,
    session: &mut Session,
    shared: &Arc<Shared>,
) -> (ResponseKind, bool) {
    let failed = |error: i16, message: String| {
        (
            ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(error)
                    .with_error_message(Some(StrBytes::from_string(message))),
            ),
            true,
        )
    };
    if !session.listener.protocol.uses_sasl() || session.exchange.expects_raw_token() {
        return failed(
            code::ILLEGAL_SASL_STATE,
            "SaslAuthenticate without a SaslHandshake v1 before it".to_owned(),
        );
    }
    match sasl::step(
        &mut session.exchange,
        &request.auth_bytes,
        shared.login_verifiers(),
    )
    .await
    {
        Ok(Step::Continue(challenge)) => (
            ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(challenge)),
            ),
            false,
        ),
        Ok(Step::Done {
            user,
            last,
            lifetime,
        }) => match session.authenticated(&user, lifetime, Instant::now()) {
            Ok(lifetime_ms) => {
                tracing::debug!(user, listener = %session.listener.name, "authenticated");
                (
                    ResponseKind::SaslAuthenticate(
                        SaslAuthenticateResponse::default()
                            .with_auth_bytes(Bytes::from(last))
                            .with_session_lifetime_ms(lifetime_ms),
                    ),
                    false,
                )
            }
            Err(message) => failed(code::SASL_AUTHENTICATION_FAILED, message),
        },
        Err(failure) => {
            tracing::info!(listener = %session.listener.name, reason = %failure, "SASL authentication failed");
            failed(code::SASL_AUTHENTICATION_FAILED, failure.0)
        }
    }
}
