//! Transaction checkers (RocketMQ's check-back): per transactional-id prefix, the HTTP
//! endpoint the transaction coordinator asks whether an undecided transaction
//! committed in the application. Kept in the store so that every broker of a cluster
//! asks the same one; read when a check is due (rarely), never cached.

use crate::Result;

/// One checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnCheckerRecord {
    /// The transactional ids it answers for: those that start with it (the longest
    /// matching prefix wins).
    pub prefix: String,
    /// Where the check is POSTed (`http` or `https`).
    pub url: String,
    /// Headers sent with each check (a token, say), in order.
    pub headers: Vec<(String, String)>,
    /// How long a check waits for its answer.
    pub timeout_ms: i32,
    /// PEM certificates an `https` endpoint may chain to besides the system's roots.
    pub ca_pem: Option<String>,
}

#[async_trait::async_trait]
pub trait TxnCheckers {
    /// Adds the checker of `record.prefix`, replacing the one there was.
    async fn put_txn_checker(&self, record: &TxnCheckerRecord) -> Result<()>;
    /// Every checker, by prefix.
    async fn txn_checkers(&self) -> Result<Vec<TxnCheckerRecord>>;
    /// Removes the checker of `prefix`; whether there was one.
    async fn remove_txn_checker(&self, prefix: &str) -> Result<bool>;
}

/// The checker of `transactional_id` among `checkers`: the longest prefix it starts
/// with.
#[must_use]
pub fn checker_of<'a>(
    checkers: &'a [TxnCheckerRecord],
    transactional_id: &str,
) -> Option<&'a TxnCheckerRecord> {
    checkers
        .iter()
        .filter(|checker| transactional_id.starts_with(&checker.prefix))
        .max_by_key(|checker| checker.prefix.len())
}
