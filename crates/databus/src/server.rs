//! Databus's listener: local clients' connections, their requests read in order,
//! answered side by side, the answers written back in the order the requests came
//! (Kafka's rule for one connection). A produce request is queued before the next
//! request is read, so one connection's batches for a partition keep their order.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;
use spool_protocol::request::{decode_body, decode_header};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

use crate::Bus;
use crate::produce::Accepted;
use crate::routing;

/// The largest request read (Kafka's `socket.request.max.bytes`).
const MAX_REQUEST: u32 = 100 << 20;
/// Requests of one connection answered side by side at most.
const IN_FLIGHT: usize = 64;

/// What a request's answer is.
enum Reply {
    Send(Bytes),
    /// acks=0: nothing.
    Nothing,
    /// The request could not be answered: the client reconnects and retries.
    Close,
}

/// Accepts connections until `stopped`.
pub(crate) async fn serve(
    bus: Arc<Bus>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(bus.clone(), stream, peer));
                }
                Err(error) => tracing::warn!(%error, "accept failed"),
            },
            _ = stopped.changed() => return,
        }
    }
}

async fn connection(bus: Arc<Bus>, stream: TcpStream, peer: SocketAddr) {
    let (mut reader, mut writer) = stream.into_split();
    let (queue, mut answers) = mpsc::channel::<oneshot::Receiver<Reply>>(IN_FLIGHT);
    let writing = tokio::spawn(async move {
        while let Some(answer) = answers.recv().await {
            match answer.await {
                Ok(Reply::Send(bytes)) => {
                    if writer.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Ok(Reply::Nothing) => {}
                Ok(Reply::Close) | Err(_) => return,
            }
        }
    });
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(error) => {
                tracing::info!(%peer, %error, "closing a client connection");
                break;
            }
        };
        let (done, answer) = oneshot::channel();
        if queue.send(answer).await.is_err() {
            break;
        }
        start(&bus, frame, done);
    }
    drop(queue);
    let _ = writing.await;
}

/// One frame (after its size), `None` at a clean end of the stream. The buffer grows
/// as bytes come, never to a size only claimed.
async fn read_frame(reader: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Option<Bytes>> {
    let size = match reader.read_u32().await {
        Ok(size) => size,
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    };
    if size > MAX_REQUEST {
        return Err(std::io::Error::other(format!(
            "a {size}-byte request is too large"
        )));
    }
    let mut frame = Vec::new();
    reader.take(u64::from(size)).read_to_end(&mut frame).await?;
    if frame.len() != size as usize {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    }
    Ok(Some(Bytes::from(frame)))
}

/// Decodes a request and starts answering it; a produce request is queued now.
fn start(bus: &Arc<Bus>, frame: Bytes, done: oneshot::Sender<Reply>) {
    let envelope = match decode_header(frame) {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(%error, "closing a client connection: undecodable request header");
            let _ = done.send(Reply::Close);
            return;
        }
    };
    let (key, version, correlation) = (
        envelope.api_key,
        envelope.version,
        envelope.header.correlation_id,
    );
    let client = envelope.header.client_id.clone();
    let request = match decode_body(&envelope) {
        Ok(request) => request,
        Err(error) => {
            tracing::warn!(%error, "closing a client connection: a request Databus cannot read");
            let _ = done.send(Reply::Close);
            return;
        }
    };
    let bus = bus.clone();
    let request = match request {
        RequestKind::Produce(produce) => match bus.merger.accept(&bus, produce) {
            Accepted::Merged(answer) => {
                tokio::spawn(async move {
                    let reply = match answer.await {
                        Some(response) => encode(key, version, correlation, &response),
                        None => Reply::Nothing,
                    };
                    let _ = done.send(reply);
                });
                return;
            }
            Accepted::AsIs(produce) => RequestKind::Produce(produce),
        },
        other => other,
    };
    tokio::spawn(async move {
        let reply = match routing::answer(&bus, key, request, version, client.as_ref()).await {
            Ok(response) => encode(key, version, correlation, &response),
            Err(error) => {
                tracing::warn!(api = ?key, %error, "closing a client connection: no answer from upstream");
                Reply::Close
            }
        };
        let _ = done.send(reply);
    });
}

/// A framed answer: size, header, body.
fn encode(key: ApiKey, version: i16, correlation: i32, response: &ResponseKind) -> Reply {
    let mut body = BytesMut::new();
    let encoded = ResponseHeader::default()
        .with_correlation_id(correlation)
        .encode(&mut body, key.response_header_version(version))
        .and_then(|()| response.encode(&mut body, version));
    if let Err(error) = encoded {
        tracing::warn!(api = ?key, %error, "cannot encode an answer; closing the connection");
        return Reply::Close;
    }
    let Ok(size) = u32::try_from(body.len()) else {
        return Reply::Close;
    };
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.extend_from_slice(&size.to_be_bytes());
    frame.extend_from_slice(&body);
    Reply::Send(frame.freeze())
}
