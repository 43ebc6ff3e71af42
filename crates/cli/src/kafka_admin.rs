//! A Kafka connection for the requests librdkafka's Rust binding does not offer:
//! ApiVersions and Metadata as they are (`spool cluster info`), ACLs
//! (Create/Describe/DeleteAcls), SCRAM credentials (KIP-554) and client quotas
//! (KIP-546). Written here because no maintained Rust crate sends them; it frames the
//! `kafka-protocol` crate's requests over one connection to the first bootstrap
//! broker that answers: TCP, or TLS ([`tls`]) for `SSL` and `SASL_SSL`, then a SASL
//! login ([`login`]: PLAIN or SCRAM) when `--sasl-mechanism` is given. Any broker of a
//! Spool cluster applies admin changes cluster-wide before it answers.

mod login;
mod tls;

use std::ops::RangeInclusive;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::ClientArgs;
use crate::error::CliError;

/// The largest response accepted (a DescribeAcls of a big cluster fits easily).
const MAX_RESPONSE: usize = 64 << 20;

/// A connection to the first bootstrap broker that answers, over TLS and logged in
/// as `--security-protocol` and `--sasl-mechanism` ask; and that broker's address.
/// `what` names the errand, for the error when none answers.
pub(crate) async fn connect(
    client: &ClientArgs,
    what: &str,
) -> Result<(Connection, String), CliError> {
    let (uses_tls, uses_sasl) = match client.protocol() {
        "PLAINTEXT" => (false, false),
        "SASL_PLAINTEXT" => (false, true),
        "SSL" => (true, false),
        "SASL_SSL" => (true, true),
        other => {
            return Err(CliError::Usage(format!(
                "--security-protocol {other}: expected PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL"
            )));
        }
    };
    let sasl = match (uses_sasl, client.sasl()) {
        (true, Some(mechanism)) => Some(mechanism),
        (true, None) => {
            return Err(CliError::Usage(format!(
                "--security-protocol {} needs --sasl-mechanism",
                client.protocol()
            )));
        }
        (false, _) => None,
    };
    let connector = if uses_tls {
        Some(tls::connector(client)?)
    } else {
        None
    };
    let mut last_error = String::from("no brokers given");
    for address in client
        .brokers
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        let opened = async {
            let stream = TcpStream::connect(address).await?;
            let stream: Box<dyn Io> = match &connector {
                Some(connector) => Box::new(tls::handshake(connector, address, stream).await?),
                None => Box::new(stream),
            };
            Ok::<_, std::io::Error>(stream)
        };
        match tokio::time::timeout(client.timeout(), opened).await {
            Ok(Ok(stream)) => {
                let mut connection = Connection {
                    stream,
                    correlation: 0,
                    timeout: client.timeout(),
                    versions: None,
                };
                if let Some(mechanism) = sasl {
                    login::login(&mut connection, mechanism, client).await?;
                }
                return Ok((connection, address.to_string()));
            }
            Ok(Err(error)) => last_error = format!("{address}: {error}"),
            Err(_) => last_error = format!("{address}: timed out"),
        }
    }
    Err(CliError::Unreachable {
        brokers: client.brokers.clone(),
        what: what.to_owned(),
        detail: last_error,
    })
}

/// What a connection runs over: TCP, or TLS over it.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// One Kafka connection, one request at a time.
pub(crate) struct Connection {
    stream: Box<dyn Io>,
    correlation: i32,
    timeout: Duration,
    /// The broker's ApiVersions answer, once asked: (key, min, max) per API.
    versions: Option<Vec<(i16, i16, i16)>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// The version to send `key` at: the highest in `ours` that the broker also
    /// speaks (asked once per connection with ApiVersions).
    pub(crate) async fn version_of(
        &mut self,
        key: ApiKey,
        ours: RangeInclusive<i16>,
    ) -> Result<i16, CliError> {
        if self.versions.is_none() {
            self.versions = Some(self.api_versions().await?);
        }
        let theirs = self
            .versions
            .iter()
            .flatten()
            .find(|(api, _, _)| *api == key as i16)
            .map(|&(_, min, max)| min..=max);
        let common = theirs
            .map(|theirs| (*ours.start()).max(*theirs.start())..=(*ours.end()).min(*theirs.end()));
        match common {
            Some(range) if !range.is_empty() => Ok(*range.end()),
            _ => Err(CliError::Failed(format!(
                "the broker does not speak {key:?} at a version this command knows ({}-{})",
                ours.start(),
                ours.end()
            ))),
        }
    }

    /// The broker's API versions: asked at v3, and at v0 if the broker is older.
    async fn api_versions(&mut self) -> Result<Vec<(i16, i16, i16)>, CliError> {
        let mut answer: ApiVersionsResponse = self.call(ApiVersionsRequest::default(), 3).await?;
        if answer.error_code == ResponseError::UnsupportedVersion.code() {
            answer = self.call(ApiVersionsRequest::default(), 0).await?;
        }
        if answer.error_code != 0 {
            return Err(CliError::Failed(format!(
                "the broker refused ApiVersions: {}",
                ResponseError::try_from_code(answer.error_code)
                    .map_or_else(String::new, |e| e.to_string())
            )));
        }
        Ok(answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect())
    }

    /// Sends `request` at `version` and reads its answer.
    pub(crate) async fn call<R>(
        &mut self,
        request: R,
        version: i16,
    ) -> Result<R::Response, CliError>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        let failed = |what: &str, detail: String| {
            CliError::Failed(format!(
                "{what} ({:?} v{version}): {detail}",
                ApiKey::try_from(R::KEY)
            ))
        };
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("spool-cli")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .and_then(|()| request.encode(&mut body, version))
            .map_err(|e| failed("cannot encode the request", e.to_string()))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
        frame.put_slice(&body);
        let exchange = async {
            self.stream.write_all(&frame).await?;
            let size = self.stream.read_u32().await?;
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size > MAX_RESPONSE {
                return Err(std::io::Error::other(format!(
                    "a {size}-byte response is too large"
                )));
            }
            let mut response = vec![0; size];
            self.stream.read_exact(&mut response).await?;
            Ok(Bytes::from(response))
        };
        let mut response = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| failed("no answer", "timed out".to_string()))?
            .map_err(|e| failed("the connection failed", e.to_string()))?;
        let header = ResponseHeader::decode(&mut response, R::Response::header_version(version))
            .map_err(|e| failed("cannot decode the response header", e.to_string()))?;
        if header.correlation_id != self.correlation {
            return Err(failed(
                "the answer does not match the request",
                format!("correlation id {}", header.correlation_id),
            ));
        }
        let decoded = R::Response::decode(&mut response, version)
            .map_err(|e| failed("cannot decode the response", e.to_string()))?;
        if response.has_remaining() {
            tracing::debug!(left = response.remaining(), "bytes after the response");
        }
        Ok(decoded)
    }
}

/// A Kafka error code as a message: its name in Kafka's table (`kafka_protocol`'s),
/// with a hint where the refusal has a usual cause.
pub(crate) fn error_name(code: i16) -> String {
    let Some(name) = spool_protocol::error_names::error_name(code) else {
        return format!("error {code}");
    };
    if code == ResponseError::ClusterAuthorizationFailed.code() {
        format!("{name} (this principal may not do that)")
    } else if code == ResponseError::SecurityDisabled.code() {
        format!("{name} (the broker runs without authorizer.enabled=true)")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_read_as_kafka_names() {
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_name(91), "RESOURCE_NOT_FOUND");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert!(error_name(54).starts_with("SECURITY_DISABLED (the broker runs without"));
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(9999), "error 9999");
    }
}
