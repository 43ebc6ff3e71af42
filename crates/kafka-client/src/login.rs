//! The SASL login of a connection (KIP-152's SaslHandshake v1 and SaslAuthenticate):
//! PLAIN, or SCRAM-SHA-256/512 with `spool_sasl`'s client side, checking the server's
//! final signature too.

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use spool_sasl::scram::Mechanism;
use spool_sasl::scram_client::ClientExchange;

use crate::{ClientError, ClientSettings, Connection, error_name};

/// Logs `connection` in with `mechanism` as `sasl.username`.
pub(crate) async fn login(
    connection: &mut Connection,
    mechanism: &str,
    client: &ClientSettings,
) -> Result<(), ClientError> {
    let scram = Mechanism::from_sasl_name(mechanism);
    if mechanism != "PLAIN" && scram.is_none() {
        return Err(ClientError::Usage(format!(
            "sasl.mechanism {mechanism}: this client logs in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
        )));
    }
    let (Some(user), Some(password)) = (&client.sasl_username, &client.sasl_password) else {
        return Err(ClientError::Usage(
            "sasl.mechanism needs sasl.username and sasl.password".to_owned(),
        ));
    };
    let handshake: SaslHandshakeResponse = connection
        .call(
            SaslHandshakeRequest::default()
                .with_mechanism(StrBytes::from_string(mechanism.to_owned())),
            1,
        )
        .await?;
    if handshake.error_code != 0 {
        let offered: Vec<String> = handshake
            .mechanisms
            .iter()
            .map(ToString::to_string)
            .collect();
        return Err(ClientError::Failed(format!(
            "the broker does not take SASL {mechanism} here ({}); it offers {}",
            error_name(handshake.error_code),
            offered.join(", ")
        )));
    }
    let Some(scram) = scram else {
        let token = format!("\0{user}\0{password}").into_bytes();
        authenticate(connection, token, user).await?;
        return Ok(());
    };
    let (mut exchange, first) = ClientExchange::start(scram, user, password.as_bytes());
    let server_first = authenticate(connection, first, user).await?;
    let client_final = exchange
        .respond(&server_first)
        .map_err(|error| ClientError::Failed(format!("login as {user} failed: {error}")))?;
    let server_final = authenticate(connection, client_final, user).await?;
    exchange.finish(&server_final).map_err(|_| {
        ClientError::Failed(format!(
            "login as {user}: the broker could not prove it knows the credential"
        ))
    })
}

/// One SaslAuthenticate round; the broker's bytes.
async fn authenticate(
    connection: &mut Connection,
    token: Vec<u8>,
    user: &str,
) -> Result<Bytes, ClientError> {
    let answer: SaslAuthenticateResponse = connection
        .call(
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token)),
            1,
        )
        .await?;
    if answer.error_code != 0 {
        let why = answer
            .error_message
            .map(|m| m.to_string())
            .unwrap_or_default();
        return Err(ClientError::Failed(format!(
            "login as {user} failed: {why}"
        )));
    }
    Ok(answer.auth_bytes)
}
