//! A connection for the admin requests librdkafka's Rust binding does not offer: ACLs
//! (Create/Describe/DeleteAcls), SCRAM credentials (KIP-554) and client quotas
//! (KIP-546). Written here because no maintained Rust crate sends them; it frames the
//! `kafka-protocol` crate's requests over one TCP connection to the first bootstrap
//! broker, after a SASL PLAIN login when `--sasl-mechanism PLAIN` is given. Any broker
//! of a Spool cluster applies these changes cluster-wide before it answers.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::ClientArgs;
use crate::error::CliError;

/// The largest response accepted (a DescribeAcls of a big cluster fits easily).
const MAX_RESPONSE: usize = 64 << 20;

pub(crate) struct AdminConnection {
    stream: TcpStream,
    correlation: i32,
    timeout: Duration,
}

impl AdminConnection {
    /// Connects to the first bootstrap broker, and logs in if SASL is asked for.
    pub(crate) async fn open(client: &ClientArgs) -> Result<AdminConnection, CliError> {
        let address = client
            .brokers
            .split(',')
            .map(str::trim)
            .find(|a| !a.is_empty())
            .ok_or_else(|| CliError::Usage("--brokers names no broker".to_owned()))?;
        let unreachable = |detail: String| CliError::Unreachable {
            brokers: client.brokers.clone(),
            what: "connect".to_owned(),
            detail,
        };
        let stream = tokio::time::timeout(client.timeout(), TcpStream::connect(address))
            .await
            .map_err(|_| unreachable("timed out".to_owned()))?
            .map_err(|e| unreachable(e.to_string()))?;
        let mut connection = AdminConnection {
            stream,
            correlation: 0,
            timeout: client.timeout(),
        };
        if let Some(mechanism) = client.sasl() {
            connection.login(mechanism, client).await?;
        }
        Ok(connection)
    }

    async fn login(&mut self, mechanism: &str, client: &ClientArgs) -> Result<(), CliError> {
        if mechanism != "PLAIN" {
            return Err(CliError::Usage(format!(
                "--sasl-mechanism {mechanism}: the CLI logs in with PLAIN only"
            )));
        }
        let (Some(user), Some(password)) = (&client.sasl_username, &client.sasl_password) else {
            return Err(CliError::Usage(
                "--sasl-mechanism needs --sasl-username and --sasl-password".to_owned(),
            ));
        };
        let handshake =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        let ResponseKind::SaslHandshake(answer) =
            self.call(RequestKind::SaslHandshake(handshake), 1).await?
        else {
            return Err(CliError::Failed("not a SaslHandshake answer".to_owned()));
        };
        if answer.error_code != 0 {
            return Err(CliError::Failed(format!(
                "the broker does not take SASL PLAIN here (error {})",
                answer.error_code
            )));
        }
        let token = format!("\0{user}\0{password}");
        let authenticate =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token.into_bytes()));
        let ResponseKind::SaslAuthenticate(answer) = self
            .call(RequestKind::SaslAuthenticate(authenticate), 2)
            .await?
        else {
            return Err(CliError::Failed("not a SaslAuthenticate answer".to_owned()));
        };
        if answer.error_code != 0 {
            let why = answer
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default();
            return Err(CliError::Failed(format!("login as {user} failed: {why}")));
        }
        Ok(())
    }

    /// Sends `request` at `version` and reads its answer.
    pub(crate) async fn call(
        &mut self,
        request: RequestKind,
        version: i16,
    ) -> Result<ResponseKind, CliError> {
        let key = api_key(&request)?;
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("spool-cli")));
        let mut body = BytesMut::new();
        let encoded = header
            .encode(&mut body, key.request_header_version(version))
            .and_then(|()| request.encode(&mut body, version));
        encoded.map_err(|e| CliError::Failed(format!("cannot encode the request: {e}")))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
        frame.extend_from_slice(&body);
        let exchange = async {
            self.stream.write_all(&frame).await?;
            let length = self.stream.read_u32().await? as usize;
            if length > MAX_RESPONSE {
                return Err(std::io::Error::other(format!("a {length}-byte answer")));
            }
            let mut answer = vec![0_u8; length];
            self.stream.read_exact(&mut answer).await?;
            Ok(Bytes::from(answer))
        };
        let mut answer = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CliError::Failed("the broker did not answer in time".to_owned()))?
            .map_err(|error| {
                CliError::Failed(format!(
                    "the broker closed the connection ({error}): is this listener's principal allowed, and is the broker new enough?"
                ))
            })?;
        let header = ResponseHeader::decode(&mut answer, key.response_header_version(version))
            .map_err(|e| CliError::Failed(format!("cannot read the answer: {e}")))?;
        if header.correlation_id != self.correlation {
            return Err(CliError::Failed("an answer to another request".to_owned()));
        }
        let response = ResponseKind::decode(key, &mut answer, version)
            .map_err(|e| CliError::Failed(format!("cannot read the answer: {e}")))?;
        Ok(response)
    }
}

fn api_key(request: &RequestKind) -> Result<ApiKey, CliError> {
    Ok(match request {
        RequestKind::SaslHandshake(_) => ApiKey::SaslHandshake,
        RequestKind::SaslAuthenticate(_) => ApiKey::SaslAuthenticate,
        RequestKind::CreateAcls(_) => ApiKey::CreateAcls,
        RequestKind::DescribeAcls(_) => ApiKey::DescribeAcls,
        RequestKind::DeleteAcls(_) => ApiKey::DeleteAcls,
        RequestKind::DescribeUserScramCredentials(_) => ApiKey::DescribeUserScramCredentials,
        RequestKind::AlterUserScramCredentials(_) => ApiKey::AlterUserScramCredentials,
        RequestKind::DescribeClientQuotas(_) => ApiKey::DescribeClientQuotas,
        RequestKind::AlterClientQuotas(_) => ApiKey::AlterClientQuotas,
        _ => {
            return Err(CliError::Failed(
                "not an admin request of this client".to_owned(),
            ));
        }
    })
}

/// A Kafka error code as a message: the name where Spool answers it.
pub(crate) fn error_name(code: i16) -> String {
    let name = match code {
        29 => "TOPIC_AUTHORIZATION_FAILED",
        30 => "GROUP_AUTHORIZATION_FAILED",
        31 => "CLUSTER_AUTHORIZATION_FAILED (this principal may not do that)",
        42 => "INVALID_REQUEST",
        54 => "SECURITY_DISABLED (the broker runs without authorizer.enabled=true)",
        58 => "SASL_AUTHENTICATION_FAILED",
        91 => "RESOURCE_NOT_FOUND",
        92 => "DUPLICATE_RESOURCE",
        93 => "UNACCEPTABLE_CREDENTIAL",
        33 => "UNSUPPORTED_SASL_MECHANISM",
        _ => return format!("error {code}"),
    };
    name.to_owned()
}
