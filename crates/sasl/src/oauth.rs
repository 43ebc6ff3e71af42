//! OAUTHBEARER's client response (RFC 7628 §3.1, as Kafka uses it in KIP-255 and
//! KIP-342): a GS2 header, then `key=value` pairs each ended by `\x01`, and one more
//! `\x01`:
//!
//! ```text
//! n,a=alice,\x01auth=Bearer eyJ...\x01traceId=42\x01\x01
//! ```
//!
//! `auth` carries the token; other keys are SASL extensions (KIP-342), kept for the
//! broker to log or ignore. The token itself is [`crate::jwt`]'s business.

/// Kafka's bound on a whole client response is the pre-authentication frame limit;
/// this one is on the token alone, well above what identity providers issue.
pub const TOKEN_MAX: usize = 64 * 1024;

/// The most extensions a response may carry.
pub const EXTENSIONS_MAX: usize = 32;

/// A client response, parsed.
#[derive(PartialEq, Eq)]
pub struct ClientResponse {
    /// `a=` of the GS2 header: the user the client asks to act as, if it says.
    pub authzid: Option<String>,
    /// The bearer token (a JWT for Spool).
    pub token: String,
    /// KIP-342's extensions, in the order sent.
    pub extensions: Vec<(String, String)>,
}

impl std::fmt::Debug for ClientResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientResponse")
            .field("authzid", &self.authzid)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

/// Why a client response is refused; the message goes back to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    #[error("malformed OAUTHBEARER message: {0}")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("the OAUTHBEARER token is longer than {TOKEN_MAX} bytes")]
    TokenTooLong,
    #[error("more than {EXTENSIONS_MAX} OAUTHBEARER extensions")]
    TooManyExtensions,
}

const SEPARATOR: char = '\u{1}';

/// Parses a client response.
pub fn parse_client_response(message: &[u8]) -> Result<ClientResponse, OAuthError> {
    let text = std::str::from_utf8(message).map_err(|_| OAuthError::Malformed("not UTF-8"))?;
    let (header, pairs) = text
        .split_once(SEPARATOR)
        .ok_or(OAuthError::Malformed("no key-value pairs"))?;
    let authzid = gs2_authzid(header)?;
    let pairs = pairs
        .strip_suffix(SEPARATOR)
        .ok_or(OAuthError::Malformed("the message does not end with \\x01"))?;
    let mut token = None;
    let mut extensions = Vec::new();
    // Each pair ends with the separator, so the last piece is empty.
    let mut pieces = pairs.split(SEPARATOR);
    let last = pieces.next_back();
    if last != Some("") {
        return Err(OAuthError::Malformed(
            "a key-value pair is not ended by \\x01",
        ));
    }
    for pair in pieces {
        let (key, value) = pair
            .split_once('=')
            .ok_or(OAuthError::Malformed("a pair without ="))?;
        if key.is_empty() || !key.bytes().all(|byte| byte.is_ascii_alphabetic()) {
            return Err(OAuthError::Malformed("a key that is not letters"));
        }
        if !value.bytes().all(is_value_byte) {
            return Err(OAuthError::Malformed("a value with a control character"));
        }
        if key == "auth" {
            if token.is_some() {
                return Err(OAuthError::Malformed("auth twice"));
            }
            token = Some(bearer_token(value)?);
        } else {
            if extensions.len() == EXTENSIONS_MAX {
                return Err(OAuthError::TooManyExtensions);
            }
            extensions.push((key.to_owned(), value.to_owned()));
        }
    }
    Ok(ClientResponse {
        authzid,
        token: token.ok_or(OAuthError::Malformed("no auth pair"))?,
        extensions,
    })
}

/// The authorization id of a GS2 header (`n,,` or `n,a=alice,`).
fn gs2_authzid(header: &str) -> Result<Option<String>, OAuthError> {
    let rest = match header.split_once(',') {
        Some(("n" | "y", rest)) => rest,
        Some((flag, _)) if flag.starts_with("p=") => return Err(OAuthError::ChannelBinding),
        _ => return Err(OAuthError::Malformed("bad GS2 header")),
    };
    let authzid = rest
        .strip_suffix(',')
        .ok_or(OAuthError::Malformed("bad GS2 header"))?;
    if authzid.is_empty() {
        return Ok(None);
    }
    let name = authzid
        .strip_prefix("a=")
        .ok_or(OAuthError::Malformed("bad authorization-id field"))?;
    if name.is_empty() || name.contains(',') {
        return Err(OAuthError::Malformed("bad authorization-id field"));
    }
    // `=2C` is `,` and `=3D` is `=` in a GS2 name.
    Ok(Some(name.replace("=2C", ",").replace("=3D", "=")))
}

/// `Bearer <token>` (the scheme in any case, RFC 6750); the token's characters are
/// base64url and `.`, as a JWT's.
fn bearer_token(value: &str) -> Result<String, OAuthError> {
    let (scheme, token) = value
        .split_once(' ')
        .ok_or(OAuthError::Malformed("auth is not \"Bearer <token>\""))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(OAuthError::Malformed("auth is not \"Bearer <token>\""));
    }
    let token = token.trim_matches(' ');
    if token.len() > TOKEN_MAX {
        return Err(OAuthError::TokenTooLong);
    }
    let allowed = |byte: u8| byte.is_ascii_alphanumeric() || b"-._~+/=".contains(&byte);
    if token.is_empty() || !token.bytes().all(allowed) {
        return Err(OAuthError::Malformed(
            "the token holds characters a token cannot",
        ));
    }
    Ok(token.to_owned())
}

/// RFC 7628's value characters: visible ASCII, space, tab, CR and LF.
fn is_value_byte(byte: u8) -> bool {
    matches!(byte, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_clients_send() {
        // librdkafka and Kafka's Java client: `n,,` and the token.
        let response = parse_client_response(b"n,,\x01auth=Bearer abc.def.ghi\x01\x01").unwrap();
        assert_eq!(response.token, "abc.def.ghi");
        assert_eq!(response.authzid, None);
        // An authorization id, a scheme in another case, extensions (KIP-342).
        let response = parse_client_response(
            b"n,a=alice,\x01auth=bearer abc..\x01traceId=42\x01tenant=a b\x01\x01",
        )
        .unwrap();
        assert_eq!(response.authzid.as_deref(), Some("alice"));
        assert_eq!(response.token, "abc..");
        assert_eq!(
            response.extensions,
            vec![
                ("traceId".to_owned(), "42".to_owned()),
                ("tenant".to_owned(), "a b".to_owned())
            ]
        );
        let escaped = parse_client_response(b"n,a=a=2Cb=3D,\x01auth=Bearer t\x01\x01").unwrap();
        assert_eq!(escaped.authzid.as_deref(), Some("a,b="));
    }

    #[test]
    fn refuses_malformed_responses() {
        for bad in [
            &b""[..],
            b"\x01",
            b"n,,\x01\x01",
            b"n,,\x01auth=Bearer t\x01",
            b"n,,\x01auth=Bearer t",
            b"n,,\x01auth=Basic dXNlcg==\x01\x01",
            b"n,,\x01auth=Bearer \x01\x01",
            b"n,,\x01auth=Bearer t\x01auth=Bearer u\x01\x01",
            b"n,,\x01auth=Bearer t\x01x-y=1\x01\x01",
            b"n,,\x01auth=Bearer t\x01k=\x02\x01\x01",
            b"n,,\x01auth=Bearer t\x01novalue\x01\x01",
            b"n,alice,\x01auth=Bearer t\x01\x01",
            b"n,a=,\x01auth=Bearer t\x01\x01",
            b"q,,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t<script>\x01\x01",
            b"n,,\x01auth=Bearer \xff\x01\x01",
        ] {
            assert!(
                matches!(parse_client_response(bad), Err(OAuthError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_client_response(b"p=tls-unique,,\x01auth=Bearer t\x01\x01"),
            Err(OAuthError::ChannelBinding)
        );
        let long = format!("n,,\x01auth=Bearer {}\x01\x01", "a".repeat(TOKEN_MAX + 1));
        assert_eq!(
            parse_client_response(long.as_bytes()),
            Err(OAuthError::TokenTooLong)
        );
        let many: String = (0..=EXTENSIONS_MAX).map(|_| "k=v\x01").collect();
        let many = format!("n,,\x01auth=Bearer t\x01{many}\x01");
        assert_eq!(
            parse_client_response(many.as_bytes()),
            Err(OAuthError::TooManyExtensions)
        );
    }
}
