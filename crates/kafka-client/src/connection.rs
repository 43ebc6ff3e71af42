//! One Kafka connection: opened (TCP, TLS, SASL login), then one request at a time.

use std::ops::RangeInclusive;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, RequestKind, ResponseHeader,
    ResponseKind,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use spool_protocol::wire_guard;
use spool_protocol::wire_guard::response_shapes::response_shape_of;

use crate::{ClientError, ClientSettings, login, tls};

/// The largest response accepted (a DescribeAcls of a big cluster, a fetch of many
/// partitions, fit easily).
const MAX_RESPONSE: usize = 64 << 20;

/// A connection to the first bootstrap broker that answers, and that broker's
/// address. `what` names the errand, for the error when none answers.
pub async fn connect(
    settings: &ClientSettings,
    what: &str,
) -> Result<(Connection, String), ClientError> {
    settings.check()?;
    let mut last_error = String::from("no brokers given");
    for address in settings
        .brokers
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        match Connection::open(settings, address).await {
            Ok(connection) => return Ok((connection, address.to_owned())),
            Err(ClientError::Unreachable { detail, .. }) => last_error = detail,
            Err(other) => return Err(other),
        }
    }
    Err(ClientError::Unreachable {
        brokers: settings.brokers.clone(),
        what: what.to_owned(),
        detail: last_error,
    })
}

/// What a connection runs over: TCP, or TLS over it.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Io for T {}

/// One Kafka connection, one request at a time.
pub struct Connection {
    stream: Box<dyn Io>,
    correlation: i32,
    timeout: Duration,
    client_id: StrBytes,
    /// The broker's ApiVersions answer, once asked: (key, min, max) per API.
    versions: Option<Vec<(i16, i16, i16)>>,
    /// Decode only answers whose structure can be checked first
    /// ([`Connection::guarded_only`]).
    guarded_only: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection to `address` (`host:port`), over TLS and logged in as `settings`
    /// ask. A broker that cannot be reached is [`ClientError::Unreachable`].
    pub async fn open(settings: &ClientSettings, address: &str) -> Result<Connection, ClientError> {
        let (uses_tls, uses_sasl) = settings.check()?;
        let connector = if uses_tls {
            Some(tls::connector(settings)?)
        } else {
            None
        };
        let opened = async {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            let stream: Box<dyn Io> = match &connector {
                Some(connector) => Box::new(tls::handshake(connector, address, stream).await?),
                None => Box::new(stream),
            };
            Ok::<_, std::io::Error>(stream)
        };
        let unreachable = |detail: String| ClientError::Unreachable {
            brokers: address.to_owned(),
            what: "connect".to_owned(),
            detail,
        };
        let stream = match tokio::time::timeout(settings.timeout, opened).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(unreachable(format!("{address}: {error}"))),
            Err(_) => return Err(unreachable(format!("{address}: timed out"))),
        };
        let mut connection = Connection {
            stream,
            correlation: 0,
            timeout: settings.timeout,
            client_id: StrBytes::from_string(settings.client_id.clone()),
            versions: None,
            guarded_only: false,
        };
        if uses_sasl && let Some(mechanism) = &settings.sasl_mechanism {
            login::login(&mut connection, mechanism, settings).await?;
        }
        Ok(connection)
    }

    /// From now on, refuses to decode an answer whose structure cannot be checked
    /// first (`spool_protocol::wire_guard::response_shapes`): for a connection to a
    /// broker that is not trusted as much as the cluster's own (the mirror's source).
    pub fn guarded_only(&mut self) {
        self.guarded_only = true;
    }

    /// How long each request may take from now on.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The version to send `key` at: the highest in `ours` that the broker also
    /// speaks (asked once per connection with ApiVersions).
    pub async fn version_of(
        &mut self,
        key: ApiKey,
        ours: RangeInclusive<i16>,
    ) -> Result<i16, ClientError> {
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
            _ => Err(ClientError::Failed(format!(
                "the broker does not speak {key:?} at a version this client knows ({}-{})",
                ours.start(),
                ours.end()
            ))),
        }
    }

    /// The broker's API versions, (key, min, max) per API (asked once per
    /// connection).
    pub async fn versions(&mut self) -> Result<Vec<(i16, i16, i16)>, ClientError> {
        if self.versions.is_none() {
            self.versions = Some(self.api_versions().await?);
        }
        Ok(self.versions.clone().unwrap_or_default())
    }

    /// The broker's API versions: asked at v2 (the last version whose answer the
    /// guard describes), and at v0 if the broker is older. An older broker answers
    /// v2 in v0's shape with UNSUPPORTED_VERSION (KIP-511): the error code, first in
    /// every version, is read before the shape is checked.
    async fn api_versions(&mut self) -> Result<Vec<(i16, i16, i16)>, ClientError> {
        let body = self.exchange(ApiVersionsRequest::default(), 2).await?;
        let answer: ApiVersionsResponse =
            if leading_error_code(&body) == Some(ResponseError::UnsupportedVersion.code()) {
                self.call(ApiVersionsRequest::default(), 0).await?
            } else {
                self.decode::<ApiVersionsRequest>(body, 2)?
            };
        if answer.error_code != 0 {
            return Err(ClientError::Failed(format!(
                "the broker refused ApiVersions: {}",
                crate::error_name(answer.error_code)
            )));
        }
        Ok(answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect())
    }

    /// Sends `request` at `version` and reads its answer.
    pub async fn call<R>(&mut self, request: R, version: i16) -> Result<R::Response, ClientError>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        let body = self.exchange(request, version).await?;
        self.decode::<R>(body, version)
    }

    /// Sends `request` at `version`; answers the response's body (its header read and
    /// matched to the request), not yet decoded.
    async fn exchange<R>(&mut self, request: R, version: i16) -> Result<Bytes, ClientError>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: HeaderVersion,
    {
        let failed = failure::<R>(version);
        let versions = (
            R::header_version(version),
            R::Response::header_version(version),
        );
        self.exchange_with(R::KEY, version, versions, None, |body| {
            request.encode(body, version).map_err(|e| e.to_string())
        })
        .await
        .map_err(|(what, detail)| failed(what, detail))
    }

    /// Sends any request (`kind` of API `key`) at `version`, in the name of
    /// `client_id` (else this connection's), and reads its answer, checked before it
    /// is decoded where its structure is described (a proxy forwarding what its
    /// clients sent).
    pub async fn call_kind(
        &mut self,
        key: ApiKey,
        kind: &RequestKind,
        version: i16,
        client_id: Option<&StrBytes>,
    ) -> Result<ResponseKind, ClientError> {
        let failed = |what: &str, detail: String| {
            ClientError::Failed(format!("{what} ({key:?} v{version}): {detail}"))
        };
        let versions = (
            key.request_header_version(version),
            key.response_header_version(version),
        );
        let mut body = self
            .exchange_with(key as i16, version, versions, client_id, |body| {
                kind.encode(body, version).map_err(|e| e.to_string())
            })
            .await
            .map_err(|(what, detail)| failed(what, detail))?;
        self.check_shape(key as i16, version, &body)
            .map_err(|(what, detail)| failed(what, detail))?;
        ResponseKind::decode(key, &mut body, version)
            .map_err(|e| failed("cannot decode the response", e.to_string()))
    }

    /// Sends the request `encode` writes (API `key` at `version`, with the header
    /// versions given) and answers the response's body; a failure as what failed and
    /// why.
    async fn exchange_with(
        &mut self,
        key: i16,
        version: i16,
        (request_header, response_header): (i16, i16),
        client_id: Option<&StrBytes>,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), String>,
    ) -> Result<Bytes, (&'static str, String)> {
        self.correlation = self.correlation.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(key)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(client_id.unwrap_or(&self.client_id).clone()));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, request_header)
            .map_err(|e| e.to_string())
            .and_then(|()| encode(&mut body))
            .map_err(|e| ("cannot encode the request", e))?;
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
            .map_err(|_| ("no answer", "timed out".to_string()))?
            .map_err(|e| ("the connection failed", e.to_string()))?;
        let header = ResponseHeader::decode(&mut response, response_header)
            .map_err(|e| ("cannot decode the response header", e.to_string()))?;
        if header.correlation_id != self.correlation {
            return Err((
                "the answer does not match the request",
                format!("correlation id {}", header.correlation_id),
            ));
        }
        Ok(response)
    }

    /// Walks a response body of API `key` at `version` where its structure is
    /// described; an undescribed one passes unless this connection is
    /// [`Connection::guarded_only`]. A failure as what failed and why.
    fn check_shape(
        &self,
        key: i16,
        version: i16,
        body: &[u8],
    ) -> Result<(), (&'static str, String)> {
        match response_shape_of(key, version) {
            Some(shape) => wire_guard::check(shape, version, body)
                .map(|_| ())
                .map_err(|e| ("the response is malformed", e.to_string())),
            None if self.guarded_only => Err((
                "cannot check the response before decoding it",
                "this version is not described".to_owned(),
            )),
            None => Ok(()),
        }
    }

    /// Decodes a response's body, its structure walked first where it is described:
    /// kafka-protocol sizes arrays from their counts on the wire, so no count may pass
    /// the bytes.
    fn decode<R>(&self, mut response: Bytes, version: i16) -> Result<R::Response, ClientError>
    where
        R: Request,
        R::Response: Decodable,
    {
        let failed = failure::<R>(version);
        self.check_shape(R::KEY, version, &response)
            .map_err(|(what, detail)| failed(what, detail))?;
        let decoded = R::Response::decode(&mut response, version)
            .map_err(|e| failed("cannot decode the response", e.to_string()))?;
        if response.has_remaining() {
            tracing::debug!(left = response.remaining(), "bytes after the response");
        }
        Ok(decoded)
    }
}

/// How a failed request of `R` at `version` reads.
fn failure<R: Request>(version: i16) -> impl Fn(&str, String) -> ClientError {
    move |what, detail| {
        ClientError::Failed(format!(
            "{what} ({:?} v{version}): {detail}",
            ApiKey::try_from(R::KEY)
        ))
    }
}

/// The error code a response body begins with (ApiVersions' in every version).
fn leading_error_code(body: &[u8]) -> Option<i16> {
    Some(i16::from_be_bytes(body.get(..2)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{RequestHeader, ResponseHeader};
    use tokio::net::TcpListener;

    use super::*;

    /// A broker that speaks ApiVersions up to v1 and answers a newer version as Kafka
    /// does: in v0's shape, with UNSUPPORTED_VERSION.
    async fn old_broker(listener: TcpListener) {
        let (mut stream, _) = listener.accept().await.unwrap();
        loop {
            let Ok(size) = stream.read_u32().await else {
                return;
            };
            let mut request = vec![0; usize::try_from(size).unwrap()];
            stream.read_exact(&mut request).await.unwrap();
            let mut request = Bytes::from(request);
            let header = RequestHeader::decode(&mut request, 1).unwrap();
            let unsupported = header.request_api_version > 1;
            let answer = ApiVersionsResponse::default()
                .with_error_code(if unsupported {
                    ResponseError::UnsupportedVersion.code()
                } else {
                    0
                })
                .with_api_keys(vec![
                    ApiVersion::default()
                        .with_api_key(ApiKey::ApiVersions as i16)
                        .with_max_version(1),
                    ApiVersion::default()
                        .with_api_key(ApiKey::Metadata as i16)
                        .with_max_version(5),
                ]);
            let mut body = BytesMut::new();
            ResponseHeader::default()
                .with_correlation_id(header.correlation_id)
                .encode(&mut body, 0)
                .unwrap();
            answer.encode(&mut body, 0).unwrap();
            stream
                .write_u32(u32::try_from(body.len()).unwrap())
                .await
                .unwrap();
            stream.write_all(&body).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_broker_older_than_api_versions_v2_is_asked_again_at_v0() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let broker = tokio::spawn(old_broker(listener));
        let settings = ClientSettings::from_config(&address, "test", &[]).unwrap();
        let mut connection = Connection::open(&settings, &address).await.unwrap();
        connection.guarded_only();
        let version = connection
            .version_of(ApiKey::Metadata, 1..=8)
            .await
            .expect("the v0 answer is read");
        assert_eq!(version, 5);
        drop(connection);
        broker.await.unwrap();
    }
}
