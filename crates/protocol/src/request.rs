//! Turning a frame into a request: header first (to learn the API and version and to
//! be able to answer), then the body, after the wire guard has checked its counts.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::wire_guard::{self, GuardError};

/// A decoded request header with the undecoded body after it.
#[derive(Debug)]
pub struct Envelope {
    pub api_key: ApiKey,
    /// The version the body is decoded and handled as.
    pub version: i16,
    /// The version the client sent, answered in: `version` unless the request is of
    /// a version Kafka 4 removed ([`bridge`]).
    pub client_version: i16,
    pub header: RequestHeader,
    pub body: Bytes,
}

/// Why a frame is not a request Spool can decode.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("frame of {0} bytes is too short for a request header")]
    TooShort(usize),
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    #[error("malformed {api_key:?} v{version} request header: {reason}")]
    MalformedHeader {
        api_key: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("{api_key:?} v{version} request refused by the wire guard: {source}")]
    Guard {
        api_key: ApiKey,
        version: i16,
        #[source]
        source: GuardError,
    },
    #[error("Spool does not decode {0:?} requests")]
    NoShape(ApiKey),
    #[error("malformed {api_key:?} v{version} request: {reason}")]
    MalformedBody {
        api_key: ApiKey,
        version: i16,
        reason: String,
    },
}

/// Decodes the request header of `frame`.
pub fn decode_header(mut frame: Bytes) -> Result<Envelope, RequestError> {
    if frame.len() < 8 {
        return Err(RequestError::TooShort(frame.len()));
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api_key = ApiKey::try_from(key).map_err(|()| RequestError::UnknownApiKey(key))?;
    let header_version = api_key.request_header_version(version);
    let header = RequestHeader::decode(&mut frame, header_version).map_err(|error| {
        RequestError::MalformedHeader {
            api_key,
            version,
            reason: error.to_string(),
        }
    })?;
    Ok(Envelope {
        api_key,
        version,
        client_version: version,
        header,
        body: frame,
    })
}

/// A request of a version Kafka 4 removed (KIP-896), checked by the wire guard at
/// that version and converted to the lowest version decoded today
/// ([`crate::legacy`]); `envelope.version` becomes that version, `client_version`
/// stays. Other requests are left as they are.
pub fn bridge(envelope: &mut Envelope) -> Result<(), RequestError> {
    let (api_key, version) = (envelope.api_key, envelope.version);
    if !crate::legacy::is_bridged(api_key, version) {
        return Ok(());
    }
    guard(api_key, version, &envelope.body)?;
    envelope.body =
        crate::legacy::request_up(api_key, version, &envelope.body).map_err(|error| {
            RequestError::MalformedBody {
                api_key,
                version,
                reason: error.reason,
            }
        })?;
    envelope.version = crate::legacy::handled_as(api_key, version);
    Ok(())
}

/// The correlation id of a frame, if it has one, for answering requests whose header
/// could not be decoded in full.
#[must_use]
pub fn correlation_id(frame: &[u8]) -> Option<i32> {
    let mut bytes = frame.get(4..8)?;
    Some(bytes.get_i32())
}

/// Decodes the body of a request whose header was decoded, after checking its
/// structure with the wire guard.
pub fn decode_body(envelope: &Envelope) -> Result<RequestKind, RequestError> {
    let (api_key, version) = (envelope.api_key, envelope.version);
    guard(api_key, version, &envelope.body)?;
    let mut body = envelope.body.clone();
    RequestKind::decode(api_key, &mut body, version).map_err(|error| RequestError::MalformedBody {
        api_key,
        version,
        reason: error.to_string(),
    })
}

/// Checks the structure of a body of `api_key` at `version` with the wire guard.
fn guard(api_key: ApiKey, version: i16, body: &[u8]) -> Result<(), RequestError> {
    let shape =
        wire_guard::shapes::shape_of(api_key as i16).ok_or(RequestError::NoShape(api_key))?;
    wire_guard::check(shape, version, body).map_err(|source| RequestError::Guard {
        api_key,
        version,
        source,
    })?;
    Ok(())
}
