//! SCRAM credentials (KIP-554): per user and mechanism, the salt, the iteration count,
//! StoredKey and ServerKey — what a server needs to check a SCRAM proof or a PLAIN
//! password, and never the password itself. Every broker of a cluster reads the same
//! ones.

use crate::Result;

/// One user's credential for one mechanism (1: SCRAM-SHA-256, 2: SCRAM-SHA-512).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredentialRecord {
    pub user: String,
    pub mechanism: i8,
    pub salt: Vec<u8>,
    pub iterations: i32,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredentialRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredentialRecord")
            .field("user", &self.user)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
pub trait ScramCredentials {
    /// Sets a user's credential for its mechanism, replacing one there was.
    async fn upsert_credential(&self, credential: &ScramCredentialRecord) -> Result<()>;
    /// Removes a user's credential for `mechanism`; whether there was one.
    async fn delete_credential(&self, user: &str, mechanism: i8) -> Result<bool>;
    /// A user's credential for `mechanism`.
    async fn credential(&self, user: &str, mechanism: i8) -> Result<Option<ScramCredentialRecord>>;
    /// Every (user, mechanism, iterations), by user then mechanism.
    async fn credential_list(&self) -> Result<Vec<(String, i8, i32)>>;
}
