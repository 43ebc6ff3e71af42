//! SCRAM credentials against every backend (see `conformance.rs`): set, replaced,
//! read back byte for byte, listed without their keys, deleted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use spool_metadata::ScramCredentialRecord;

fn credential(user: &str, mechanism: i8, iterations: i32, key: u8) -> ScramCredentialRecord {
    ScramCredentialRecord {
        user: user.to_owned(),
        mechanism,
        salt: vec![key; 24],
        iterations,
        stored_key: vec![key + 1; 32],
        server_key: vec![key + 2; 32],
    }
}

#[tokio::test]
async fn credentials_are_set_replaced_listed_and_deleted() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        assert_eq!(store.credential("alice", 1).await.unwrap(), None, "{label}");
        store
            .upsert_credential(&credential("alice", 1, 4096, 1))
            .await
            .unwrap();
        store
            .upsert_credential(&credential("alice", 2, 8192, 5))
            .await
            .unwrap();
        store
            .upsert_credential(&credential("bob", 1, 4096, 9))
            .await
            .unwrap();
        // Replaced, not added.
        store
            .upsert_credential(&credential("alice", 1, 5000, 3))
            .await
            .unwrap();
        assert_eq!(
            store.credential("alice", 1).await.unwrap(),
            Some(credential("alice", 1, 5000, 3)),
            "{label}"
        );
        assert_eq!(
            store.credential_list().await.unwrap(),
            vec![
                ("alice".to_owned(), 1, 5000),
                ("alice".to_owned(), 2, 8192),
                ("bob".to_owned(), 1, 4096)
            ],
            "{label}"
        );
        assert!(
            store.delete_credential("alice", 2).await.unwrap(),
            "{label}"
        );
        assert!(
            !store.delete_credential("alice", 2).await.unwrap(),
            "{label}"
        );
        assert_eq!(store.credential("alice", 2).await.unwrap(), None, "{label}");
    }
}
