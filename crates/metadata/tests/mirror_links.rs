//! Mirror links on both backends: put, replaced, listed after a reopen, removed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use spool_metadata::MirrorLinkRecord;

fn link(name: &str) -> MirrorLinkRecord {
    MirrorLinkRecord {
        name: name.to_owned(),
        source: "eu-1:9092,eu-2:9092".to_owned(),
        source_config: vec![
            ("security.protocol".to_owned(), "SASL_SSL".to_owned()),
            (
                "ssl.ca.pem".to_owned(),
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_owned(),
            ),
        ],
        topics: "orders\\..*".to_owned(),
        groups: Some("billing-.*".to_owned()),
        start: "earliest".to_owned(),
        paused: false,
        failed_over: Vec::new(),
        created_ms: 1_764_950_400_000,
    }
}

#[tokio::test]
async fn mirror_links_are_put_replaced_listed_and_removed() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        store.put_mirror_link(&link("eu")).await.unwrap();
        store.put_mirror_link(&link("asia")).await.unwrap();
        let changed = MirrorLinkRecord {
            paused: true,
            groups: None,
            failed_over: vec!["orders.a".to_owned(), "orders.b".to_owned()],
            ..link("eu")
        };
        store.put_mirror_link(&changed).await.unwrap();
        drop(store);

        let store = backend.open().await;
        assert_eq!(
            store.mirror_links().await.unwrap(),
            vec![link("asia"), changed],
            "{label}: by name, the change kept, the PEM's line breaks too"
        );
        store
            .put_mirror_status("asia", 2, "{\"a\":1}", 10)
            .await
            .unwrap();
        store.put_mirror_status("asia", 1, "{}", 11).await.unwrap();
        store
            .put_mirror_status("asia", 2, "{\"a\":2}", 12)
            .await
            .unwrap();
        store.put_mirror_status("eu", 1, "{}", 13).await.unwrap();
        let statuses = store.mirror_statuses("asia").await.unwrap();
        assert_eq!(
            statuses
                .iter()
                .map(|s| (s.node_id, s.status.as_str(), s.updated_ms))
                .collect::<Vec<_>>(),
            vec![(1, "{}", 11), (2, "{\"a\":2}", 12)],
            "{label}: by node, replaced"
        );
        assert!(store.remove_mirror_link("asia").await.unwrap(), "{label}");
        assert!(
            store.mirror_statuses("asia").await.unwrap().is_empty(),
            "{label}"
        );
        assert_eq!(
            store.mirror_statuses("eu").await.unwrap().len(),
            1,
            "{label}"
        );
        assert!(!store.remove_mirror_link("asia").await.unwrap(), "{label}");
        assert_eq!(store.mirror_links().await.unwrap().len(), 1, "{label}");
    }
}

#[tokio::test]
async fn the_first_settling_of_a_failed_over_partition_stands_and_goes_with_its_topic() {
    use spool_metadata::{MirrorFailoverRecord, TopicRecord};
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let topic = TopicRecord {
            name: spool_model::TopicName::new("payments").unwrap(),
            id: uuid::Uuid::new_v4(),
            partitions: 2,
            replication_factor: 1,
            replica_assignment: Vec::new(),
            configs: std::collections::BTreeMap::new(),
        };
        store.create_topic(&topic).await.unwrap();
        let settled = |partition, log_end| MirrorFailoverRecord {
            topic_id: topic.id,
            partition,
            log_end,
            producer_id_floor: 1_005,
            settled_ms: 77,
        };
        assert_eq!(
            store.mirror_failover_floor().await.unwrap(),
            None,
            "{label}"
        );
        assert!(store.put_mirror_failover(&settled(1, 40)).await.unwrap());
        assert!(
            store
                .put_mirror_failover(&MirrorFailoverRecord {
                    producer_id_floor: 2_000,
                    ..settled(0, 20)
                })
                .await
                .unwrap()
        );
        // A later leader's settling does not replace the first.
        assert!(!store.put_mirror_failover(&settled(1, 99)).await.unwrap());
        drop(store);
        let store = backend.open().await;
        assert_eq!(
            store.mirror_failover(topic.id, 1).await.unwrap(),
            Some(settled(1, 40)),
            "{label}"
        );
        assert_eq!(
            store.mirror_failover(topic.id, 2).await.unwrap(),
            None,
            "{label}"
        );
        assert_eq!(
            store.mirror_failover_floor().await.unwrap(),
            Some(2_000),
            "{label}"
        );
        store.delete_topic(topic.id).await.unwrap();
        assert_eq!(
            store.mirror_failover(topic.id, 1).await.unwrap(),
            None,
            "{label}: gone with the topic"
        );
    }
}
