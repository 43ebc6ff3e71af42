//! A listener as the broker bound it, and what it advertises.

use std::net::SocketAddr;

/// A listener as bound.
#[derive(Debug, Clone)]
pub(crate) struct ListenerEndpoint {
    pub(crate) name: String,
    pub(crate) local: SocketAddr,
    pub(crate) advertised: (String, i32),
}
