//! ACL bindings against every backend (see `conformance.rs`): created once however
//! often they are sent, read back, deleted by exact binding, and every change moves
//! the topics version that brokers follow.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use spool_metadata::AclRecord;

fn acl(name: &str, principal: &str, operation: i8, permission: i8) -> AclRecord {
    AclRecord {
        resource_type: 2,
        resource_name: name.to_owned(),
        pattern_type: 3,
        principal: principal.to_owned(),
        host: "*".to_owned(),
        operation,
        permission,
    }
}

#[tokio::test]
async fn acls_are_created_once_read_back_and_deleted_by_binding() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        assert!(store.acls().await.unwrap().is_empty(), "{label}");
        let version = store.topics_version().await.unwrap();
        let read = acl("orders", "User:alice", 3, 3);
        let deny = acl("orders", "User:*", 4, 2);
        store
            .create_acls(&[read.clone(), deny.clone(), read.clone()])
            .await
            .unwrap();
        store
            .create_acls(std::slice::from_ref(&read))
            .await
            .unwrap();
        assert!(store.topics_version().await.unwrap() > version, "{label}");
        let mut all = store.acls().await.unwrap();
        all.sort();
        let mut expected = vec![read.clone(), deny.clone()];
        expected.sort();
        assert_eq!(all, expected, "{label}");

        let version = store.topics_version().await.unwrap();
        let absent = acl("payments", "User:alice", 3, 3);
        let deleted = store.delete_acls(&[absent, deny.clone()]).await.unwrap();
        assert_eq!(deleted, vec![deny], "{label}");
        assert!(store.topics_version().await.unwrap() > version, "{label}");
        assert_eq!(store.acls().await.unwrap(), vec![read], "{label}");
    }
}
