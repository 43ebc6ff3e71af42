//! The client's side of SCRAM (RFC 5802), for Spool's own CLI: librdkafka as the CLI
//! builds it has no OpenSSL and so no SCRAM, and no maintained crate does SCRAM-SHA-512
//! as a client without one. The primitives are [`crate::scram`]'s.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use subtle::ConstantTimeEq;

use crate::scram::{MAX_ITERATIONS, Mechanism, ScramError, random_bytes};

/// The GS2 header of a client without channel binding or authorization id.
const GS2_HEADER: &str = "n,,";

/// An exchange under way, from the client's side.
pub struct ClientExchange {
    mechanism: Mechanism,
    password: Vec<u8>,
    nonce: String,
    client_first_bare: String,
    /// The server signature the server-final message must carry.
    expected: Option<Vec<u8>>,
}

impl std::fmt::Debug for ClientExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientExchange")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

impl ClientExchange {
    /// Starts an exchange as `user`; the client-first message to send.
    pub fn start(mechanism: Mechanism, user: &str, password: &[u8]) -> (ClientExchange, Vec<u8>) {
        let nonce: String = random_bytes(24)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let client_first_bare = format!("n={name},r={nonce}");
        let message = format!("{GS2_HEADER}{client_first_bare}").into_bytes();
        (
            ClientExchange {
                mechanism,
                password: password.to_vec(),
                nonce,
                client_first_bare,
                expected: None,
            },
            message,
        )
    }

    /// Answers the server-first message; the client-final message to send.
    pub fn respond(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text =
            std::str::from_utf8(server_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let mut fields = text.split(',');
        let nonce = fields
            .next()
            .and_then(|f| f.strip_prefix("r="))
            .ok_or(ScramError::Malformed("expected r= first"))?;
        let salt = fields
            .next()
            .and_then(|f| f.strip_prefix("s="))
            .and_then(|salt| BASE64.decode(salt).ok())
            .ok_or(ScramError::Malformed("expected a base64 s= second"))?;
        let iterations: u32 = fields
            .next()
            .and_then(|f| f.strip_prefix("i="))
            .and_then(|i| i.parse().ok())
            .ok_or(ScramError::Malformed("expected i= third"))?;
        // The server's nonce must extend ours; a server asking for more work than
        // any credential has is refused rather than obeyed.
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError::Nonce);
        }
        if iterations == 0 || iterations > MAX_ITERATIONS {
            return Err(ScramError::Malformed("iterations out of range"));
        }
        let mechanism = self.mechanism;
        let salted = mechanism.salted_password(&self.password, &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(GS2_HEADER));
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(key, sig)| key ^ sig)
            .collect();
        let server_key = mechanism.hmac(&salted, b"Server Key");
        self.expected = Some(mechanism.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server proves it knew the credential.
    pub fn finish(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let text =
            std::str::from_utf8(server_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or(ScramError::Malformed("expected a base64 v="))?;
        let expected = self
            .expected
            .as_ref()
            .ok_or(ScramError::Malformed("no server-first message answered"))?;
        if bool::from(signature.ct_eq(expected)) {
            Ok(())
        } else {
            Err(ScramError::InvalidCredentials)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::{Credential, ServerExchange, parse_client_first};

    fn login(mechanism: Mechanism, stored: &str, given: &str) -> Result<(), ScramError> {
        let credential = Credential::new(mechanism, stored.as_bytes(), 4096);
        let (mut client, first) = ClientExchange::start(mechanism, "al,i=ce", given.as_bytes());
        let first = parse_client_first(&first)?;
        assert_eq!(first.user, "al,i=ce");
        let (server, server_first) = ServerExchange::start(first, credential);
        let client_final = client.respond(&server_first)?;
        let server_final = server.finish(&client_final)?;
        client.finish(&server_final)
    }

    #[test]
    fn the_client_logs_in_against_the_server() {
        for mechanism in Mechanism::ALL {
            assert_eq!(login(mechanism, "secret", "secret"), Ok(()));
            assert_eq!(
                login(mechanism, "secret", "wrong"),
                Err(ScramError::InvalidCredentials)
            );
        }
    }

    #[test]
    fn the_client_refuses_a_bad_server() {
        let (mut client, _) = ClientExchange::start(Mechanism::Sha256, "alice", b"secret");
        let nonce = client.nonce.clone();
        assert_eq!(
            client.respond(format!("r=other{nonce},s=c2FsdA==,i=4096").as_bytes()),
            Err(ScramError::Nonce)
        );
        assert_eq!(
            client.respond(format!("r={nonce},s=c2FsdA==,i=4096").as_bytes()),
            Err(ScramError::Nonce),
            "the server must add to the nonce"
        );
        assert!(
            client
                .respond(format!("r={nonce}x,s=c2FsdA==,i=99999999").as_bytes())
                .is_err()
        );
        assert!(
            client
                .respond(format!("r={nonce}x,s=c2FsdA==,i=4096").as_bytes())
                .is_ok()
        );
        assert_eq!(
            client.finish(b"v=bm90IHRoZSBzaWduYXR1cmU="),
            Err(ScramError::InvalidCredentials)
        );
    }
}
