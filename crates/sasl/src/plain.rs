//! PLAIN (RFC 4616): `[authzid] NUL user NUL password`. The broker checks the password
//! against the user's stored SCRAM credential, so no plaintext password is kept.

/// The longest user name or password PLAIN takes (as Redpanda).
pub const FIELD_MAX: usize = 255;

/// A PLAIN message, parsed.
#[derive(PartialEq, Eq)]
pub struct PlainLogin<'a> {
    pub user: &'a str,
    pub password: &'a [u8],
}

impl std::fmt::Debug for PlainLogin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainLogin")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a PLAIN message is refused; the message goes back to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    #[error("malformed PLAIN message: expected [authzid] NUL user NUL password")]
    Malformed,
    #[error("the PLAIN user name is not UTF-8")]
    NotUtf8,
    #[error("PLAIN user names and passwords are 1 to {FIELD_MAX} bytes")]
    Length,
    /// An authorization id other than the user (CVE-2017-12610).
    #[error("the authorization id must be the user name or empty")]
    Authzid,
}

/// Parses a PLAIN message.
pub fn parse(message: &[u8]) -> Result<PlainLogin<'_>, PlainError> {
    let mut fields = message.split(|byte| *byte == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(PlainError::Malformed);
    };
    let user = std::str::from_utf8(user).map_err(|_| PlainError::NotUtf8)?;
    if user.is_empty() || user.len() > FIELD_MAX || password.len() > FIELD_MAX {
        return Err(PlainError::Length);
    }
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(PlainError::Authzid);
    }
    Ok(PlainLogin { user, password })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_and_without_an_authzid() {
        let login = parse(b"\0alice\0secret").unwrap();
        assert_eq!((login.user, login.password), ("alice", &b"secret"[..]));
        assert_eq!(parse(b"alice\0alice\0secret").unwrap().user, "alice");
    }

    #[test]
    fn refuses_what_kafka_refuses() {
        assert_eq!(parse(b"mallory\0alice\0secret"), Err(PlainError::Authzid));
        assert_eq!(parse(b"\0alice\0secret\0more"), Err(PlainError::Malformed));
        assert_eq!(parse(b"alice"), Err(PlainError::Malformed));
        assert_eq!(parse(b"\0\0secret"), Err(PlainError::Length));
        assert_eq!(parse(b"\0\xff\0secret"), Err(PlainError::NotUtf8));
        let long = [b"\0alice\0".as_slice(), &[b'x'; 256]].concat();
        assert_eq!(parse(&long), Err(PlainError::Length));
    }
}
