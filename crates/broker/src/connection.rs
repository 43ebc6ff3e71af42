//! One client connection: frames in, responses out, in request order.
//!
//! Three tasks per connection. The reader cuts frames (size-checked before anything
//! is allocated for them) and queues them, so the client can pipeline. The worker
//! handles the queued requests one at a time, in order, as Kafka's broker does: two
//! produce requests for one partition on one connection are appended in the order
//! they were sent. The writer sends the replies, in the same order. A reply may be
//! [`Reply::Later`]: a produce whose appends are done and whose answer waits for
//! durability; the writer waits for it while the worker goes on, so requests in
//! flight share an fsync or an object upload. At most `max_in_flight_per_connection`
//! requests wait in the queue and as many replies behind the writer; reading pauses
//! beyond that.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use spool_protocol::frame::{self, SIZE_PREFIX_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{mpsc, watch};

use crate::handlers;
use crate::response::Response;
use crate::server::Shared;

/// What to do after a request.
pub(crate) enum Reply {
    /// Send this response.
    Send(Response),
    /// Send nothing (Produce with acks=0).
    Nothing,
    /// The request was unacceptable: close the connection.
    Close,
    /// The reply once this is done (a produce waiting for durability).
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Send(response) => f.debug_tuple("Send").field(response).finish(),
            Reply::Nothing => f.write_str("Nothing"),
            Reply::Close => f.write_str("Close"),
            Reply::Later(_) => f.write_str("Later"),
        }
    }
}

pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let in_flight = shared.started_config().max_in_flight_per_connection.max(1);
    let (requests, queued) = mpsc::channel::<Bytes>(in_flight);
    let (replies, pending) = mpsc::channel::<Reply>(in_flight);
    let (closing, mut closed) = watch::channel(false);
    let writer = tokio::spawn(write_replies(writer, pending, closing, peer));
    let worker = tokio::spawn(handle_in_order(queued, replies, peer, shared.clone()));
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    loop {
        match frame::check_frame(&buffer, shared.started_config().max_request_bytes) {
            Ok(Some(size)) => {
                buffer.advance(SIZE_PREFIX_LEN);
                let request = buffer.split_to(size).freeze();
                if let Some(metrics) = &shared.metrics {
                    metrics.request_bytes_in_flight.inc_by(gauge_bytes(size));
                }
                if requests.send(request).await.is_err() {
                    break;
                }
                continue;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%peer, %error, "closing connection: bad frame");
                break;
            }
        }
        let read = tokio::select! {
            read = tokio::time::timeout(shared.started_config().idle_timeout, reader.read_buf(&mut buffer)) => read,
            _ = stopped.changed() => break,
            _ = closed.changed() => break,
        };
        match read {
            Ok(Ok(0)) => break,
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::debug!(%peer, %error, "read failed");
                break;
            }
            Err(_) => {
                tracing::info!(%peer, "closing idle connection");
                break;
            }
        }
    }
    drop(requests);
    let _ = worker.await;
    let _ = writer.await;
}

/// Handles requests one at a time, in the order they arrived.
async fn handle_in_order(
    mut queued: mpsc::Receiver<Bytes>,
    replies: mpsc::Sender<Reply>,
    peer: SocketAddr,
    shared: Arc<Shared>,
) {
    while let Some(request) = queued.recv().await {
        let size = request.len();
        let reply = handlers::handle(request, peer, shared.clone()).await;
        if let Some(metrics) = &shared.metrics {
            metrics.request_bytes_in_flight.dec_by(gauge_bytes(size));
        }
        let close = matches!(reply, Reply::Close);
        if replies.send(reply).await.is_err() || close {
            break;
        }
    }
    // Requests left unhandled as the connection closes leave the in-flight count.
    queued.close();
    while let Ok(request) = queued.try_recv() {
        if let Some(metrics) = &shared.metrics {
            metrics
                .request_bytes_in_flight
                .dec_by(gauge_bytes(request.len()));
        }
    }
}

/// A request's size as the in-flight gauge counts it (frames are far below
/// `i64::MAX`: `socket.request.max.bytes` bounds them).
fn gauge_bytes(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

async fn write_replies(
    mut writer: OwnedWriteHalf,
    mut pending: mpsc::Receiver<Reply>,
    closing: watch::Sender<bool>,
    peer: SocketAddr,
) {
    while let Some(reply) = pending.recv().await {
        let reply = match reply {
            Reply::Later(answer) => answer.await,
            ready => ready,
        };
        match reply {
            Reply::Send(response) => {
                if let Err(error) = response.write_to(&mut writer).await {
                    tracing::debug!(%peer, %error, "write failed");
                    break;
                }
            }
            Reply::Nothing => {}
            Reply::Close | Reply::Later(_) => break,
        }
    }
    let _ = closing.send(true);
    let _ = writer.shutdown().await;
}
