//! One client connection: frames in, responses out, in request order.
//!
//! The reader task cuts frames (size-checked before anything is allocated for them)
//! and starts a task per request, so a long-polling fetch does not hold back the
//! requests behind it; the writer sends the responses strictly in request order, as
//! Kafka clients require. At most `max_in_flight_per_connection` requests are in
//! flight; reading pauses beyond that.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use spool_protocol::frame::{self, SIZE_PREFIX_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot, watch};

use crate::handlers;
use crate::server::Shared;

/// What to do after a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Send this response (already framed).
    Send(Bytes),
    /// Send nothing (Produce with acks=0).
    Nothing,
    /// The request was unacceptable: close the connection.
    Close,
}

pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let in_flight = shared.config.max_in_flight_per_connection.max(1);
    let (replies, pending) = mpsc::channel::<oneshot::Receiver<Reply>>(in_flight);
    let (closing, mut closed) = watch::channel(false);
    let writer = tokio::spawn(write_replies(writer, pending, closing, peer));
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    loop {
        match frame::check_frame(&buffer, shared.config.max_request_bytes) {
            Ok(Some(size)) => {
                buffer.advance(SIZE_PREFIX_LEN);
                let request = buffer.split_to(size).freeze();
                let (reply, receiver) = oneshot::channel();
                if replies.send(receiver).await.is_err() {
                    break;
                }
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = reply.send(handlers::handle(request, shared).await);
                });
                continue;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%peer, %error, "closing connection: bad frame");
                break;
            }
        }
        let read = tokio::select! {
            read = tokio::time::timeout(shared.config.idle_timeout, reader.read_buf(&mut buffer)) => read,
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
    drop(replies);
    let _ = writer.await;
}

async fn write_replies(
    mut writer: OwnedWriteHalf,
    mut pending: mpsc::Receiver<oneshot::Receiver<Reply>>,
    closing: watch::Sender<bool>,
    peer: SocketAddr,
) {
    while let Some(next) = pending.recv().await {
        match next.await {
            Ok(Reply::Send(bytes)) => {
                if let Err(error) = writer.write_all(&bytes).await {
                    tracing::debug!(%peer, %error, "write failed");
                    break;
                }
            }
            Ok(Reply::Nothing) => {}
            Ok(Reply::Close) | Err(_) => break,
        }
    }
    let _ = closing.send(true);
    let _ = writer.shutdown().await;
}
