//! The signals that ask a process to stop: Ctrl-C and SIGTERM (what `kill`,
//! systemd and Kubernetes send). The broker stops cleanly on either, and `consume`
//! commits and leaves its group.

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn received() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
