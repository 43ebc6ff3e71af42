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
//!
//! On a TLS listener the handshake comes first (within the idle timeout), and stored
//! records go through the TLS stream rather than `sendfile`. On a SASL listener the
//! worker's [`Session`] lets nothing but ApiVersions and the SASL requests through
//! until the client has authenticated, and the reader takes frames of at most
//! [`PRE_AUTH_MAX_FRAME`] bytes until then.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use spool_protocol::frame::{self, SIZE_PREFIX_LEN};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::handlers;
use crate::response::{Reply, ResponseWriter, SocketWriter};
use crate::shared::Shared;
use spool_security::ListenerSetup;
use spool_security::session::{PRE_AUTH_MAX_FRAME, Session};
use spool_share::session::ConnectionId;

/// The number the next accepted connection gets.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// Serves a connection accepted on `listener`: the TLS handshake first where the
/// listener asks for it.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    listener: ListenerSetup,
    shared: Arc<Shared>,
    stopped: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let session = Session::new(listener.policy.clone());
    let Some(tls) = &listener.tls else {
        let (reader, writer) = stream.into_split();
        return run(
            reader,
            SocketWriter::Plain(writer),
            peer,
            session,
            shared,
            stopped,
        )
        .await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.current());
    let handshake = tokio::time::timeout(
        shared.started_config().idle_timeout,
        acceptor.accept(stream),
    )
    .await;
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::info!(%peer, %error, listener = %listener.policy.name, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, "TLS handshake timed out");
            return;
        }
    };
    // mTLS: a client certificate names the principal.
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first());
    let session = match certificate.map(|der| tls.user_of(der)) {
        None => session,
        Some(Ok(user)) => session.certificate_user(&user),
        Some(Err(why)) => {
            tracing::info!(%peer, why, "closing connection: its certificate names no principal");
            return;
        }
    };
    let (reader, writer) = tokio::io::split(stream);
    run(
        reader,
        SocketWriter::Tls(writer),
        peer,
        session,
        shared,
        stopped,
    )
    .await;
}

async fn run(
    mut reader: impl AsyncRead + Unpin,
    writer: SocketWriter,
    peer: SocketAddr,
    session: Session,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let in_flight = shared.started_config().max_in_flight_per_connection.max(1);
    let (requests, queued) = mpsc::channel::<Bytes>(in_flight);
    let (replies, pending) = mpsc::channel::<Reply>(in_flight);
    let (closing, mut closed) = watch::channel(false);
    let authenticated = session.authenticated_flag();
    let connection = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let writer = tokio::spawn(write_replies(writer, pending, closing, peer));
    let worker = tokio::spawn(handle_in_order(
        queued,
        replies,
        peer,
        connection,
        session,
        shared.clone(),
    ));
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    loop {
        match frame::check_frame(&buffer, frame_limit(&shared, &authenticated)) {
            Ok(Some(size)) => {
                buffer.advance(SIZE_PREFIX_LEN);
                let request = buffer.split_to(size).freeze();
                if let Some(metrics) = shared.metrics() {
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
    crate::share::held::release_connection(&shared, connection).await;
}

/// The largest frame the reader takes now: small until the client authenticated.
fn frame_limit(shared: &Shared, authenticated: &AtomicBool) -> usize {
    let limit = shared.started_config().max_request_bytes;
    if authenticated.load(Ordering::Acquire) {
        limit
    } else {
        limit.min(PRE_AUTH_MAX_FRAME)
    }
}

/// Handles requests one at a time, in the order they arrived.
async fn handle_in_order(
    mut queued: mpsc::Receiver<Bytes>,
    replies: mpsc::Sender<Reply>,
    peer: SocketAddr,
    connection: ConnectionId,
    mut session: Session,
    shared: Arc<Shared>,
) {
    while let Some(request) = queued.recv().await {
        let size = request.len();
        let reply = if session.exchange.expects_raw_token() {
            raw_token(&request, &mut session, &shared).await
        } else {
            handlers::handle(request, peer, connection, &mut session, shared.clone()).await
        };
        if let Some(metrics) = shared.metrics() {
            metrics.request_bytes_in_flight.dec_by(gauge_bytes(size));
        }
        let close = matches!(reply, Reply::Close | Reply::SendAndClose(_));
        if replies.send(reply).await.is_err() || close {
            break;
        }
        // A client over its quota: its answer is on its way; nothing more is read
        // from it until the throttle time is over (KIP-219).
        if let Some(until) = session.take_mute() {
            tokio::time::sleep_until(until.into()).await;
        }
    }
    // Requests left unhandled as the connection closes leave the in-flight count.
    queued.close();
    while let Ok(request) = queued.try_recv() {
        if let Some(metrics) = shared.metrics() {
            metrics
                .request_bytes_in_flight
                .dec_by(gauge_bytes(request.len()));
        }
    }
}

/// After a SaslHandshake v0, the frames are bare SASL tokens and so are the answers;
/// a failure closes the connection (v0 has no way to say why).
async fn raw_token(token: &[u8], session: &mut Session, shared: &Arc<Shared>) -> Reply {
    use spool_security::sasl::{self, Step};
    let answer = match sasl::step(&mut session.exchange, token, shared.login_verifiers()).await {
        Ok(Step::Continue(challenge)) => challenge,
        Ok(Step::Done {
            user,
            last,
            lifetime,
        }) => match session.authenticated(&user, lifetime, std::time::Instant::now()) {
            Ok(_) => last,
            Err(reason) => {
                tracing::info!(reason, "SASL authentication failed");
                tokio::time::sleep(session.listener.failed_delay).await;
                return Reply::Close;
            }
        },
        Err(failure) => {
            tracing::info!(reason = %failure, "SASL authentication failed");
            tokio::time::sleep(session.listener.failed_delay).await;
            return Reply::Close;
        }
    };
    let mut writer = ResponseWriter::new();
    writer.buffer().extend_from_slice(&answer);
    writer.finish().map_or(Reply::Close, Reply::Send)
}

/// A request's size as the in-flight gauge counts it (frames are far below
/// `i64::MAX`: `socket.request.max.bytes` bounds them).
fn gauge_bytes(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

async fn write_replies(
    mut writer: SocketWriter,
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
            Reply::SendAndClose(response) => {
                if let Err(error) = response.write_to(&mut writer).await {
                    tracing::debug!(%peer, %error, "write failed");
                }
                break;
            }
            Reply::Nothing => {}
            Reply::Close | Reply::Later(_) => break,
        }
    }
    let _ = closing.send(true);
    writer.shutdown().await;
}
