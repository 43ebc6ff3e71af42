//! Consumer-protocol group states and group configs against every backend (see
//! `conformance.rs`): a state is replaced whole, fenced by the coordinator epoch,
//! kept across a reopen and deleted; configs change key by key and move the topics
//! version.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;

use spool_metadata::{ConfigChange, MetadataError};

#[tokio::test]
async fn a_group_state_is_replaced_fenced_kept_and_deleted() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        assert_eq!(store.group_state("g").await.unwrap(), None, "{label}");
        let first = store.claim_group("g", 1).await.unwrap();
        store
            .save_group_state("g", first, "{\"epoch\":1}")
            .await
            .unwrap();
        store
            .save_group_state("g", first, "{\"epoch\":2}")
            .await
            .unwrap();
        assert_eq!(
            store.group_state("g").await.unwrap().as_deref(),
            Some("{\"epoch\":2}"),
            "{label}"
        );

        let second = store.claim_group("g", 2).await.unwrap();
        let refused = store.save_group_state("g", first, "{\"epoch\":3}").await;
        assert!(
            matches!(refused, Err(MetadataError::Fenced { .. })),
            "{label}: {refused:?}"
        );
        let refused = store.delete_group_state("g", first).await;
        assert!(
            matches!(refused, Err(MetadataError::Fenced { .. })),
            "{label}: {refused:?}"
        );
        let unclaimed = store.save_group_state("h", 1, "{}").await;
        assert!(
            matches!(unclaimed, Err(MetadataError::Fenced { .. })),
            "{label}: {unclaimed:?}"
        );
        let other = store.claim_group("other", 2).await.unwrap();
        store.save_group_state("other", other, "{}").await.unwrap();
        drop(store);

        let store = backend.open().await;
        let mut states = store.group_states().await.unwrap();
        states.sort();
        assert_eq!(
            states,
            vec![
                ("g".to_owned(), "{\"epoch\":2}".to_owned()),
                ("other".to_owned(), "{}".to_owned())
            ],
            "{label}"
        );
        store.delete_group_state("g", second).await.unwrap();
        assert_eq!(store.group_state("g").await.unwrap(), None, "{label}");
        assert_eq!(store.group_states().await.unwrap().len(), 1, "{label}");
    }
}

#[tokio::test]
async fn group_configs_change_key_by_key() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let set = |key: &str, value: &str| ConfigChange::Set {
            key: key.to_owned(),
            value: value.to_owned(),
        };
        let version = store.topics_version().await.unwrap();
        store
            .alter_group_configs(
                "g",
                &[
                    set("consumer.session.timeout.ms", "50000"),
                    set("consumer.heartbeat.interval.ms", "6000"),
                ],
            )
            .await
            .unwrap();
        store
            .alter_group_configs("h", &[set("consumer.session.timeout.ms", "46000")])
            .await
            .unwrap();
        assert!(store.topics_version().await.unwrap() > version, "{label}");
        store
            .alter_group_configs(
                "g",
                &[
                    ConfigChange::Delete {
                        key: "consumer.heartbeat.interval.ms".to_owned(),
                    },
                    set("consumer.session.timeout.ms", "55000"),
                ],
            )
            .await
            .unwrap();
        let expected: BTreeMap<String, BTreeMap<String, String>> = [
            ("g", "consumer.session.timeout.ms", "55000"),
            ("h", "consumer.session.timeout.ms", "46000"),
        ]
        .into_iter()
        .map(|(group, key, value)| {
            (
                group.to_owned(),
                BTreeMap::from([(key.to_owned(), value.to_owned())]),
            )
        })
        .collect();
        assert_eq!(store.group_configs().await.unwrap(), expected, "{label}");
    }
}
