//! What every handler shares: the declaration of the API it implements, and who sent
//! the request.

use kafka_protocol::messages::ApiKey;
use spool_security::authorizer::Access;
use spool_share::session::ConnectionId;

/// `isolation_level` (Fetch, ListOffsets) of a consumer that reads only committed
/// transactions.
pub(crate) const READ_COMMITTED: i8 = 1;

/// An API a handler implements, and the versions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApiDecl {
    pub(crate) key: ApiKey,
    pub(crate) min: i16,
    pub(crate) max: i16,
}

/// A request's version and who sent it: what JoinGroup records of a member, and the
/// listener it came in on (Metadata and FindCoordinator answer with that listener's
/// endpoints). Every handler gets it with the decoded request.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    /// The version the request was sent at (the answer's too).
    pub(crate) version: i16,
    pub(crate) client_id: String,
    /// As Kafka shows it: `/` and the peer's IP address.
    pub(crate) client_host: String,
    pub(crate) listener: String,
    /// The connection it came on (share sessions end with theirs).
    pub(crate) connection: ConnectionId,
    /// What the request's principal may do.
    pub(crate) access: Access,
}
