//! TLS on the registry's listener (`schema.registry.listen=https://…`), with the
//! broker's certificate settings: connections are accepted and their handshakes run
//! in tasks of their own (a slow client holds up no other), and axum is handed the
//! connections whose handshake completed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use spool_security::tls::TlsConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// The longest a client may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most handshakes under way at once: more connections wait to be accepted (a
/// flood of them does not take every file descriptor).
const MAX_HANDSHAKES: usize = 256;

/// Connections whose TLS handshake completed, as axum accepts them.
pub(super) struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener`, with the certificate `tls` has at each handshake (it is
    /// reloaded when its files change).
    pub(super) fn new(listener: TcpListener, tls: Arc<TlsConfig>) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (handed, ready) = mpsc::channel(64);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        let accepting = tokio::spawn(async move {
            loop {
                let Ok(permit) = handshakes.clone().acquire_owned().await else {
                    return;
                };
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "the schema registry could not accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let acceptor = TlsAcceptor::from(tls.current());
                let handed = handed.clone();
                tokio::spawn(async move {
                    let handshake =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    drop(permit);
                    match handshake {
                        Ok(Ok(secured)) => {
                            let _ = handed.send((secured, peer)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "a schema registry TLS handshake failed");
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "a schema registry TLS handshake timed out");
                        }
                    }
                });
            }
        });
        Ok(TlsListener {
            local,
            ready,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task is gone only when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}
