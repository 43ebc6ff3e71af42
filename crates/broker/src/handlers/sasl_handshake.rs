//! SaslHandshake (key 17): the client names a SASL mechanism; the answer lists the
//! listener's. v0: the tokens then come as bare frames; v1: in SaslAuthenticate.
//! On a listener without SASL, or in the middle of an exchange: `ILLEGAL_SASL_STATE`.

use kafka_protocol::messages::{ApiKey, ResponseKind, SaslHandshakeRequest, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;

use super::api::ApiDecl;
use crate::errors::code;
use spool_security::sasl::{Exchange, SaslMechanism};
use spool_security::session::Session;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::SaslHandshake,
    min: 0,
    max: 1,
};

pub(crate) fn handle(
    request: &SaslHandshakeRequest,
    version: i16,
    session: &mut Session,
) -> ResponseKind {
    let offered: Vec<StrBytes> = session
        .listener
        .mechanisms
        .iter()
        .map(|mechanism| StrBytes::from_static_str(mechanism.name()))
        .collect();
    let answer = |error: i16| {
        ResponseKind::SaslHandshake(
            SaslHandshakeResponse::default()
                .with_error_code(error)
                .with_mechanisms(offered.clone()),
        )
    };
    if !session.listener.protocol.uses_sasl() || !matches!(session.exchange, Exchange::Idle) {
        return answer(code::ILLEGAL_SASL_STATE);
    }
    let wanted = SaslMechanism::from_name(request.mechanism.as_str())
        .filter(|mechanism| session.listener.mechanisms.contains(mechanism));
    let Some(mechanism) = wanted else {
        return answer(code::UNSUPPORTED_SASL_MECHANISM);
    };
    session.exchange = Exchange::Chosen {
        mechanism,
        raw: version == 0,
    };
    answer(code::NONE)
}
