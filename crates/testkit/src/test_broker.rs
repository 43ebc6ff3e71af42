//! A broker for tests: port 0, its own temporary data directory, stopped on drop of
//! the runtime; and a raw Kafka client that speaks frames through `kafka-protocol`.
//! Test helpers panic on failure, as a test should.
#![allow(clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use spool_broker::{Broker, BrokerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A running broker on a free port with a fresh data directory.
#[derive(Debug)]
pub struct TestBroker {
    broker: Option<Broker>,
    data: tempfile::TempDir,
}

impl TestBroker {
    /// Starts a broker on 127.0.0.1, port 0.
    pub async fn start() -> TestBroker {
        let data = tempfile::tempdir().expect("temp dir");
        TestBroker::start_in(data).await
    }

    /// Starts a broker with some settings by their Kafka names.
    pub async fn start_with(settings: &[(&str, &str)]) -> TestBroker {
        let data = tempfile::tempdir().expect("temp dir");
        TestBroker::start_configured(data, settings).await
    }

    /// Starts a broker with `settings` and a SCRAM user (`--bootstrap-user`), for
    /// listeners that ask for SASL.
    pub async fn start_secured(settings: &[(&str, &str)], user: (&str, &str)) -> TestBroker {
        let data = tempfile::tempdir().expect("temp dir");
        let mut config = TestBroker::config(&data, None, settings);
        config.security.bootstrap_user = Some((user.0.to_owned(), user.1.to_owned()));
        let broker = Broker::builder(config)
            .start()
            .await
            .expect("broker starts");
        TestBroker {
            broker: Some(broker),
            data,
        }
    }

    /// Starts a broker on an existing data directory (to test restarts).
    pub async fn start_in(data: tempfile::TempDir) -> TestBroker {
        TestBroker::start_configured(data, &[]).await
    }

    /// Starts a broker in shared-storage mode over `objects` (shared with other
    /// brokers, or with later runs), with its metadata in `metadata` (a data
    /// directory's SQLite file when `None`: then restarts need the same data dir).
    pub async fn start_shared(
        data: tempfile::TempDir,
        objects: spool_broker::ObjectStorage,
        metadata: Option<spool_broker::MetadataUrl>,
        settings: &[(&str, &str)],
    ) -> TestBroker {
        let config = TestBroker::config(&data, metadata, settings);
        let broker = Broker::builder(config)
            .objects(objects)
            .start()
            .await
            .expect("broker starts");
        TestBroker {
            broker: Some(broker),
            data,
        }
    }

    /// [`TestBroker::start_shared`] with `metadata` as the metadata store (a test
    /// wraps it to make it fail).
    pub async fn start_shared_on(
        data: tempfile::TempDir,
        objects: spool_broker::ObjectStorage,
        metadata: std::sync::Arc<dyn spool_broker::MetadataStore>,
        settings: &[(&str, &str)],
    ) -> TestBroker {
        let config = TestBroker::config(&data, None, settings);
        let broker = Broker::builder(config)
            .objects(objects)
            .metadata(metadata)
            .start()
            .await
            .expect("broker starts");
        TestBroker {
            broker: Some(broker),
            data,
        }
    }

    fn config(
        data: &tempfile::TempDir,
        metadata: Option<spool_broker::MetadataUrl>,
        settings: &[(&str, &str)],
    ) -> BrokerConfig {
        let mut config = BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data.path().to_path_buf(),
            metadata_url: metadata,
            ..BrokerConfig::default()
        };
        config.admin.listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
        config.admin.listen_required = true;
        for (name, value) in settings {
            config
                .set(name, value)
                .unwrap_or_else(|e| panic!("setting {name}: {e}"));
        }
        config
    }

    async fn start_configured(data: tempfile::TempDir, settings: &[(&str, &str)]) -> TestBroker {
        let config = TestBroker::config(&data, None, settings);
        let broker = Broker::builder(config)
            .start()
            .await
            .expect("broker starts");
        TestBroker {
            broker: Some(broker),
            data,
        }
    }

    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.broker
            .as_ref()
            .map_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)), Broker::local_addr)
    }

    /// The address of the listener named `name` (of `listeners`).
    #[must_use]
    pub fn listener_addr(&self, name: &str) -> SocketAddr {
        self.broker
            .as_ref()
            .and_then(|broker| broker.listener_addr(name))
            .unwrap_or_else(|| panic!("the broker has no listener {name}"))
    }

    /// The admin listener's address (`http://` it for health, `/metrics`, the REST
    /// API and the console).
    #[must_use]
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.broker.as_ref().and_then(Broker::admin_addr)
    }

    #[must_use]
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Stops the broker cleanly and hands back its data directory.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(broker) = self.broker.take() {
            broker.shutdown().await.expect("clean shutdown");
        }
        self.data
    }

    /// The broker itself, for its in-process API.
    #[must_use]
    pub fn broker(&self) -> Option<&Broker> {
        self.broker.as_ref()
    }

    pub async fn client(&self) -> RawClient {
        RawClient::connect(self.addr()).await
    }
}

/// A minimal Kafka client over one connection: sends a request, reads its response.
#[derive(Debug)]
pub struct RawClient {
    stream: TcpStream,
    next_correlation: i32,
}

impl RawClient {
    pub async fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).await.expect("connect");
        RawClient {
            stream,
            next_correlation: 1,
        }
    }

    /// Sends `request` at `version` and decodes the response.
    pub async fn call(&mut self, request: RequestKind, version: i16) -> ResponseKind {
        let key = api_key(&request);
        let correlation = self.send(&request, version).await;
        let mut frame = self.read_frame().await.expect("a response");
        let header = ResponseHeader::decode(&mut frame, key.response_header_version(version))
            .expect("header");
        assert_eq!(
            header.correlation_id, correlation,
            "responses come back in order"
        );
        ResponseKind::decode(key, &mut frame, version).expect("response body")
    }

    /// Encodes and sends a request without waiting; returns its correlation id.
    pub async fn send(&mut self, request: &RequestKind, version: i16) -> i32 {
        let key = api_key(request);
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(StrBytes::from_static_str("spool-test")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .expect("encode header");
        request.encode(&mut body, version).expect("encode body");
        self.send_raw(&body).await;
        correlation
    }

    /// Sends `payload` as one frame (size prefix added).
    pub async fn send_raw(&mut self, payload: &[u8]) {
        let mut frame = BytesMut::with_capacity(payload.len() + 4);
        frame.put_i32(i32::try_from(payload.len()).expect("frame size"));
        frame.put_slice(payload);
        self.stream.write_all(&frame).await.expect("write");
    }

    /// Sends bytes as they are, no framing.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// The next response frame, or `None` when the broker closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await.ok()?;
        let size = usize::try_from(i32::from_be_bytes(size)).ok()?;
        let mut frame = vec![0; size];
        self.stream.read_exact(&mut frame).await.ok()?;
        Some(Bytes::from(frame))
    }

    /// Whether the broker has closed this connection (reads end within two seconds).
    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(
                std::time::Duration::from_secs(2),
                self.stream.read(&mut byte)
            )
            .await,
            Ok(Ok(0) | Err(_))
        )
    }
}

/// The correlation id of a response frame.
#[must_use]
pub fn correlation_of(frame: &Bytes) -> i32 {
    let mut bytes = frame.clone();
    bytes.get_i32()
}

fn api_key(request: &RequestKind) -> ApiKey {
    match request {
        RequestKind::Produce(_) => ApiKey::Produce,
        RequestKind::Fetch(_) => ApiKey::Fetch,
        RequestKind::ListOffsets(_) => ApiKey::ListOffsets,
        RequestKind::Metadata(_) => ApiKey::Metadata,
        RequestKind::ApiVersions(_) => ApiKey::ApiVersions,
        RequestKind::CreateTopics(_) => ApiKey::CreateTopics,
        RequestKind::DeleteTopics(_) => ApiKey::DeleteTopics,
        RequestKind::DeleteRecords(_) => ApiKey::DeleteRecords,
        RequestKind::CreatePartitions(_) => ApiKey::CreatePartitions,
        RequestKind::DescribeConfigs(_) => ApiKey::DescribeConfigs,
        RequestKind::AlterConfigs(_) => ApiKey::AlterConfigs,
        RequestKind::IncrementalAlterConfigs(_) => ApiKey::IncrementalAlterConfigs,
        RequestKind::FindCoordinator(_) => ApiKey::FindCoordinator,
        RequestKind::JoinGroup(_) => ApiKey::JoinGroup,
        RequestKind::SyncGroup(_) => ApiKey::SyncGroup,
        RequestKind::Heartbeat(_) => ApiKey::Heartbeat,
        RequestKind::LeaveGroup(_) => ApiKey::LeaveGroup,
        RequestKind::OffsetCommit(_) => ApiKey::OffsetCommit,
        RequestKind::OffsetFetch(_) => ApiKey::OffsetFetch,
        RequestKind::ListGroups(_) => ApiKey::ListGroups,
        RequestKind::DescribeGroups(_) => ApiKey::DescribeGroups,
        RequestKind::DeleteGroups(_) => ApiKey::DeleteGroups,
        RequestKind::OffsetDelete(_) => ApiKey::OffsetDelete,
        RequestKind::InitProducerId(_) => ApiKey::InitProducerId,
        RequestKind::OffsetForLeaderEpoch(_) => ApiKey::OffsetForLeaderEpoch,
        RequestKind::AddPartitionsToTxn(_) => ApiKey::AddPartitionsToTxn,
        RequestKind::AddOffsetsToTxn(_) => ApiKey::AddOffsetsToTxn,
        RequestKind::EndTxn(_) => ApiKey::EndTxn,
        RequestKind::TxnOffsetCommit(_) => ApiKey::TxnOffsetCommit,
        RequestKind::DescribeTransactions(_) => ApiKey::DescribeTransactions,
        RequestKind::ListTransactions(_) => ApiKey::ListTransactions,
        RequestKind::SaslHandshake(_) => ApiKey::SaslHandshake,
        RequestKind::SaslAuthenticate(_) => ApiKey::SaslAuthenticate,
        RequestKind::DescribeUserScramCredentials(_) => ApiKey::DescribeUserScramCredentials,
        RequestKind::AlterUserScramCredentials(_) => ApiKey::AlterUserScramCredentials,
        RequestKind::DescribeAcls(_) => ApiKey::DescribeAcls,
        RequestKind::CreateAcls(_) => ApiKey::CreateAcls,
        RequestKind::DeleteAcls(_) => ApiKey::DeleteAcls,
        RequestKind::DescribeClientQuotas(_) => ApiKey::DescribeClientQuotas,
        RequestKind::AlterClientQuotas(_) => ApiKey::AlterClientQuotas,
        other => panic!("RawClient does not know the key of {other:?}"),
    }
}
