//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server side, and the
//! credentials they check: salt, iterations, StoredKey and ServerKey per user and
//! mechanism, never the password.
//!
//! Written by hand, as the research for this subsystem recommends: the crates that do
//! SCRAM either support SHA-256 only, keep the salted password, or report success on a
//! bad proof unless the caller checks again; the exchange is three messages, and the
//! primitives (HMAC, SHA-2, constant-time comparison) come from RustCrypto.
//!
//! What the server checks, with the CVEs that taught it:
//! - the client-final nonce is the combined nonce of this exchange (CVE-2024-56128);
//! - the channel binding echoes the client's GS2 header; no channel binding is offered;
//! - an authorization id other than the user is refused (CVE-2017-12610);
//! - the proof is compared in constant time (CVE-2021-38153).
//!
//! Like Kafka, user names are compared as their UTF-8 bytes (no SASLprep).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// A SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Sha256,
    Sha512,
}

impl Mechanism {
    pub const ALL: [Mechanism; 2] = [Mechanism::Sha256, Mechanism::Sha512];

    /// The SASL name: `SCRAM-SHA-256`.
    pub fn sasl_name(self) -> &'static str {
        match self {
            Mechanism::Sha256 => "SCRAM-SHA-256",
            Mechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_sasl_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL
            .into_iter()
            .find(|mechanism| mechanism.sasl_name() == name)
    }

    /// KIP-554's code: 1 for SHA-256, 2 for SHA-512.
    pub fn code(self) -> i8 {
        match self {
            Mechanism::Sha256 => 1,
            Mechanism::Sha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<Mechanism> {
        Mechanism::ALL
            .into_iter()
            .find(|mechanism| mechanism.code() == code)
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Mechanism::Sha512 => {
                let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
            Mechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's `Hi`: PBKDF2 with this HMAC, one block.
    pub(crate) fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut first = salt.to_vec();
        first.extend_from_slice(&1_u32.to_be_bytes());
        let mut u = self.hmac(password, &first);
        let mut result = u.clone();
        for _ in 1..iterations {
            u = self.hmac(password, &u);
            for (r, x) in result.iter_mut().zip(&u) {
                *r ^= x;
            }
        }
        result
    }
}

/// The fewest and most iterations a credential may have (Kafka's bounds).
pub const MIN_ITERATIONS: u32 = 4096;
pub const MAX_ITERATIONS: u32 = 16_384;

/// What the server keeps of a password for one mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub mechanism: Mechanism,
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// The credential of `password` with a fresh random salt.
    pub fn new(mechanism: Mechanism, password: &[u8], iterations: u32) -> Credential {
        let salt = random_bytes(24);
        let salted = mechanism.salted_password(password, &salt, iterations);
        Credential::from_salted_password(mechanism, salt, iterations, &salted)
    }

    /// The credential of a salted password (what KIP-554's AlterUserScramCredentials
    /// carries: the client salts, the broker derives the keys).
    pub fn from_salted_password(
        mechanism: Mechanism,
        salt: Vec<u8>,
        iterations: u32,
        salted: &[u8],
    ) -> Credential {
        let client_key = mechanism.hmac(salted, b"Client Key");
        Credential {
            mechanism,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted, b"Server Key"),
            salt,
            iterations,
        }
    }

    /// Whether `password` is the one this credential was made from (SASL/PLAIN checks
    /// passwords this way: no plaintext password is stored). In constant time.
    pub fn matches_password(&self, password: &[u8]) -> bool {
        let salted = self
            .mechanism
            .salted_password(password, &self.salt, self.iterations);
        let client_key = self.mechanism.hmac(&salted, b"Client Key");
        let stored_key = self.mechanism.hash(&client_key);
        bool::from(stored_key.ct_eq(&self.stored_key))
    }
}

/// For a client setting a user's credential through AlterUserScramCredentials (KIP-554
/// has the client salt the password): a fresh random salt and the salted password,
/// for mechanism 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512); `None` for another.
pub fn salt_password(
    mechanism: i8,
    password: &[u8],
    iterations: u32,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mechanism = Mechanism::from_code(mechanism)?;
    let salt = random_bytes(24);
    let salted = mechanism.salted_password(password, &salt, iterations);
    Some((salt, salted))
}

/// Random bytes from the operating system.
pub fn random_bytes(len: usize) -> Vec<u8> {
    let mut bytes = vec![0_u8; len];
    // The OS generator does not fail on Linux once booted; a broker that cannot get
    // randomness must not make predictable salts or nonces.
    #[allow(clippy::panic)]
    if let Err(error) = getrandom::getrandom(&mut bytes) {
        panic!("no randomness from the operating system: {error}");
    }
    bytes
}

/// Why an exchange failed; the message goes back to the client (it says what was
/// wrong with the exchange, never whether the user exists).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("the authorization id must be the user name or empty")]
    Authzid,
    #[error("SCRAM extensions are not supported (delegation tokens are not)")]
    Extension,
    #[error("authentication failed: invalid credentials")]
    InvalidCredentials,
    #[error("the nonce of the final message is not this exchange's")]
    Nonce,
}

/// The client's first message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    pub user: String,
    /// The GS2 header as sent (`n,,`), which the final message must echo.
    gs2_header: String,
    nonce: String,
    /// `n=…,r=…`: the part that goes into the AuthMessage.
    bare: String,
}

/// Parses the client-first message.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, ScramError> {
    let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
    let (cbind, rest) = text
        .split_once(',')
        .ok_or(ScramError::Malformed("no GS2 header"))?;
    match cbind {
        // `y`: the client could bind but thinks the server cannot; right, it cannot.
        "n" | "y" => {}
        flag if flag.starts_with("p=") => return Err(ScramError::ChannelBinding),
        _ => return Err(ScramError::Malformed("bad channel-binding flag")),
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(ScramError::Malformed("no authorization-id field"))?;
    let gs2_header = format!("{cbind},{authzid},");
    let mut user = None;
    let mut nonce = None;
    for (index, attribute) in bare.split(',').enumerate() {
        match (index, attribute.split_once('=')) {
            (0, Some(("n", value))) => user = Some(decode_name(value)?),
            (1, Some(("r", value))) if !value.is_empty() => nonce = Some(value.to_owned()),
            (0 | 1, _) => return Err(ScramError::Malformed("expected n= then r=")),
            _ => return Err(ScramError::Extension),
        }
    }
    let user = user.ok_or(ScramError::Malformed("no user name"))?;
    if user.is_empty() {
        return Err(ScramError::Malformed("empty user name"));
    }
    if let Some(authzid) = authzid.strip_prefix("a=") {
        if decode_name(authzid)? != user {
            return Err(ScramError::Authzid);
        }
    } else if !authzid.is_empty() {
        return Err(ScramError::Malformed("bad authorization-id field"));
    }
    Ok(ClientFirst {
        user,
        gs2_header,
        nonce: nonce.ok_or(ScramError::Malformed("no nonce"))?,
        bare: bare.to_owned(),
    })
}

/// `=2C` is `,` and `=3D` is `=` in a SCRAM name; any other `=` is an error.
fn decode_name(value: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('=') {
        out.push_str(rest.get(..at).unwrap_or_default());
        let escape = rest.get(at..at + 3);
        match escape {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed("bad escape in a name")),
        }
        rest = rest.get(at + 3..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(out)
}

/// A server-side exchange after the client's first message.
#[derive(Debug)]
pub struct ServerExchange {
    first: ClientFirst,
    credential: Credential,
    nonce: String,
    server_first: String,
}

impl ServerExchange {
    /// Starts an exchange for `first` with the user's credential; the server-first
    /// message to send.
    pub fn start(first: ClientFirst, credential: Credential) -> (ServerExchange, Vec<u8>) {
        // Letters and digits only, as Kafka's own nonces: librdkafka 2.0 sends back a
        // different nonce when this one holds base64's `+` or `/`.
        let server_nonce: String = random_bytes(24)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        let message = server_first.clone().into_bytes();
        (
            ServerExchange {
                first,
                credential,
                nonce,
                server_first,
            },
            message,
        )
    }

    pub fn user(&self) -> &str {
        &self.first.user
    }

    pub fn mechanism(&self) -> Mechanism {
        self.credential.mechanism
    }

    /// Checks the client-final message; the server-final message to send.
    pub fn finish(&self, message: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut attributes = without_proof.split(',');
        let binding = attributes
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or(ScramError::Malformed("expected c= first"))?;
        let nonce = attributes
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(ScramError::Malformed("expected r= second"))?;
        if attributes.next().is_some() {
            return Err(ScramError::Extension);
        }
        let binding = BASE64
            .decode(binding)
            .map_err(|_| ScramError::Malformed("channel binding is not base64"))?;
        if binding != self.first.gs2_header.as_bytes() {
            return Err(ScramError::ChannelBinding);
        }
        // librdkafka before 2.6.1 puts its own nonce in front once more
        // (confluentinc/librdkafka#4895); Kafka 3.8.1 to 3.9 let it through by
        // comparing the ending only. Spool takes that one form and no other: the
        // server nonce of this exchange is in it either way, so a replay still fails.
        let doubled = format!("{}{}", self.first.nonce, self.nonce);
        let exact = bool::from(nonce.as_bytes().ct_eq(self.nonce.as_bytes()));
        let librdkafka_form = bool::from(nonce.as_bytes().ct_eq(doubled.as_bytes()));
        if !(exact || librdkafka_form) {
            return Err(ScramError::Nonce);
        }
        let proof = BASE64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("the proof is not base64"))?;
        let auth_message = format!("{},{},{without_proof}", self.first.bare, self.server_first);
        let mechanism = self.credential.mechanism;
        let signature = mechanism.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::InvalidCredentials);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if !bool::from(
            mechanism
                .hash(&client_key)
                .ct_eq(&self.credential.stored_key),
        ) {
            return Err(ScramError::InvalidCredentials);
        }
        let server_signature = mechanism.hmac(&self.credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", BASE64.encode(server_signature)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client side, as RFC 5802 describes it, to drive the server.
    fn client_final(
        mechanism: Mechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
        gs2: &str,
    ) -> (String, Vec<u8>) {
        client_final_prefixed(
            mechanism,
            password,
            client_first_bare,
            server_first,
            gs2,
            "",
        )
    }

    /// [`client_final`] sending `prefix` before the nonce (old librdkafka's bug).
    fn client_final_prefixed(
        mechanism: Mechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
        gs2: &str,
        prefix: &str,
    ) -> (String, Vec<u8>) {
        let fields: Vec<&str> = server_first.split(',').collect();
        let nonce = fields[0].strip_prefix("r=").unwrap();
        let salt = BASE64
            .decode(fields[1].strip_prefix("s=").unwrap())
            .unwrap();
        let iterations: u32 = fields[2].strip_prefix("i=").unwrap().parse().unwrap();
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let without_proof = format!("c={},r={prefix}{nonce}", BASE64.encode(gs2));
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = mechanism.hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = mechanism.hmac(&salted, b"Server Key");
        let expected = mechanism.hmac(&server_key, auth.as_bytes());
        (
            format!("{without_proof},p={}", BASE64.encode(proof)),
            format!("v={}", BASE64.encode(expected)).into_bytes(),
        )
    }

    fn exchange(mechanism: Mechanism, stored: &str, given: &str) -> Result<(), ScramError> {
        let credential = Credential::new(mechanism, stored.as_bytes(), 4096);
        let first = parse_client_first(b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL").unwrap();
        let (exchange, server_first) = ServerExchange::start(first, credential);
        let server_first = String::from_utf8(server_first).unwrap();
        assert!(server_first.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"));
        let (final_message, expected) = client_final(
            mechanism,
            given,
            "n=alice,r=fyko+d2lbbFgONRv9qkxdawL",
            &server_first,
            "n,,",
        );
        let server_final = exchange.finish(final_message.as_bytes())?;
        assert_eq!(server_final, expected, "the server proves it knows the key");
        Ok(())
    }

    #[test]
    fn a_right_password_passes_and_a_wrong_one_does_not() {
        for mechanism in Mechanism::ALL {
            assert_eq!(exchange(mechanism, "secret", "secret"), Ok(()));
            assert_eq!(
                exchange(mechanism, "secret", "Secret"),
                Err(ScramError::InvalidCredentials)
            );
        }
    }

    #[test]
    fn salted_password_matches_rfc_7677_test_vector() {
        // RFC 7677 section 3: user "user", password "pencil".
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = Credential::from_salted_password(
            Mechanism::Sha256,
            salt.clone(),
            4096,
            &Mechanism::Sha256.salted_password(b"pencil", &salt, 4096),
        );
        let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let exchange = ServerExchange {
            nonce: "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_owned(),
            server_first: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".to_owned(),
            first,
            credential,
        };
        let server_final = exchange
            .finish(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        assert_eq!(
            server_final,
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec()
        );
    }

    #[test]
    fn a_replayed_or_altered_nonce_is_refused() {
        let credential = Credential::new(Mechanism::Sha256, b"pw", 4096);
        let first = parse_client_first(b"n,,n=bob,r=abc").unwrap();
        let (exchange, server_first) = ServerExchange::start(first, credential);
        let server_first = String::from_utf8(server_first).unwrap();
        // A proof computed for another exchange's nonce (a replay).
        let other = server_first.replace("r=abc", "r=abcX");
        let (final_message, _) =
            client_final(Mechanism::Sha256, "pw", "n=bob,r=abc", &other, "n,,");
        assert_eq!(
            exchange.finish(final_message.as_bytes()),
            Err(ScramError::Nonce)
        );
        // The right nonce but a channel binding that is not the GS2 header.
        let (final_message, _) =
            client_final(Mechanism::Sha256, "pw", "n=bob,r=abc", &server_first, "y,,");
        assert_eq!(
            exchange.finish(final_message.as_bytes()),
            Err(ScramError::ChannelBinding)
        );
    }

    #[test]
    fn old_librdkafkas_doubled_client_nonce_is_taken_and_nothing_else() {
        let credential = Credential::new(Mechanism::Sha256, b"pw", 4096);
        let first = parse_client_first(b"n,,n=bob,r=abc").unwrap();
        let (exchange, server_first) = ServerExchange::start(first, credential);
        let server_first = String::from_utf8(server_first).unwrap();
        let final_with = |prefix: &str| {
            client_final_prefixed(
                Mechanism::Sha256,
                "pw",
                "n=bob,r=abc",
                &server_first,
                "n,,",
                prefix,
            )
            .0
        };
        assert!(exchange.finish(final_with("abc").as_bytes()).is_ok());
        for other in ["abcabc", "x", "ab"] {
            assert_eq!(
                exchange.finish(final_with(other).as_bytes()),
                Err(ScramError::Nonce),
                "{other}"
            );
        }
    }

    #[test]
    fn client_first_messages_are_checked() {
        let first = parse_client_first(b"n,a=al=2Cice,n=al=2Cice,r=x").unwrap();
        assert_eq!(first.user, "al,ice");
        for (message, error) in [
            (&b"n,a=mallory,n=alice,r=x"[..], ScramError::Authzid),
            (b"p=tls-unique,,n=alice,r=x", ScramError::ChannelBinding),
            (b"n,,n=alice,r=x,tokenauth=true", ScramError::Extension),
            (b"n,,n=,r=x", ScramError::Malformed("empty user name")),
            (
                b"n,,n=a=2Xb,r=x",
                ScramError::Malformed("bad escape in a name"),
            ),
            (b"n,,r=x", ScramError::Malformed("expected n= then r=")),
            (b"garbage", ScramError::Malformed("no GS2 header")),
            (b"\xff\xfe", ScramError::Malformed("not UTF-8")),
        ] {
            assert_eq!(parse_client_first(message), Err(error), "{message:?}");
        }
    }

    #[test]
    fn plain_passwords_are_checked_against_the_scram_credential() {
        for mechanism in Mechanism::ALL {
            let credential = Credential::new(mechanism, b"hunter2", 4096);
            assert!(credential.matches_password(b"hunter2"));
            assert!(!credential.matches_password(b"hunter3"));
            assert!(
                !format!("{credential:?}").contains("key"),
                "keys are not logged"
            );
        }
    }
}
