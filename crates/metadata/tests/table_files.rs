//! Table topics' waiting files and reports on both backends: one file per partition
//! and first offset (a second leader's is refused), listed in order after a reopen,
//! removed one by one, gone with the topic.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use spool_metadata::{TableFileRecord, TopicRecord};

fn file(topic_id: uuid::Uuid, partition: i32, first: i64, next: i64) -> TableFileRecord {
    TableFileRecord {
        topic_id,
        partition,
        first_offset: first,
        next_offset: next,
        location: format!("s3://bucket/tables/spool/orders/data/p{partition}-o{first}.parquet"),
        data_file: "{\"content\":0}".to_owned(),
        record_count: next - first,
        size_bytes: 4_096,
        dead_location: if first == 100 {
            "s3://bucket/tables/spool/orders_dead_letters/data/p0-o100.parquet".to_owned()
        } else {
            String::new()
        },
        dead_data_file: String::new(),
        dead_record_count: i64::from(first == 100),
        written_ms: 1_764_950_400_000,
    }
}

#[tokio::test]
async fn table_files_are_added_once_per_first_offset_listed_removed_and_gone_with_the_topic() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let topic = TopicRecord {
            name: spool_model::TopicName::new("orders").unwrap(),
            id: uuid::Uuid::new_v4(),
            partitions: 2,
            replication_factor: 1,
            replica_assignment: Vec::new(),
            configs: std::collections::BTreeMap::new(),
        };
        store.create_topic(&topic).await.unwrap();
        let id = topic.id;
        assert!(store.add_table_file(&file(id, 1, 0, 40)).await.unwrap());
        assert!(store.add_table_file(&file(id, 0, 100, 300)).await.unwrap());
        assert!(store.add_table_file(&file(id, 0, 0, 100)).await.unwrap());
        assert!(
            !store.add_table_file(&file(id, 0, 100, 250)).await.unwrap(),
            "{label}: another leader's file from the same offset is refused"
        );
        drop(store);

        let store = backend.open().await;
        assert_eq!(
            store.table_files(id).await.unwrap(),
            vec![
                file(id, 0, 0, 100),
                file(id, 0, 100, 300),
                file(id, 1, 0, 40)
            ],
            "{label}: by partition and first offset, the first writer's kept"
        );
        assert!(store.remove_table_file(id, 0, 0).await.unwrap());
        assert!(!store.remove_table_file(id, 0, 0).await.unwrap(), "{label}");
        assert_eq!(
            store.table_files(id).await.unwrap(),
            vec![file(id, 0, 100, 300), file(id, 1, 0, 40)],
            "{label}"
        );

        store
            .put_table_status(id, 2, "{\"a\":1}", 10)
            .await
            .unwrap();
        store.put_table_status(id, 1, "{}", 11).await.unwrap();
        store
            .put_table_status(id, 2, "{\"a\":2}", 12)
            .await
            .unwrap();
        let statuses = store.table_statuses(id).await.unwrap();
        assert_eq!(
            statuses
                .iter()
                .map(|s| (s.node_id, s.status.as_str(), s.updated_ms))
                .collect::<Vec<_>>(),
            vec![(1, "{}", 11), (2, "{\"a\":2}", 12)],
            "{label}: one report per broker, the latest"
        );

        store.delete_topic(id).await.unwrap();
        assert!(store.table_files(id).await.unwrap().is_empty(), "{label}");
        assert!(
            store.table_statuses(id).await.unwrap().is_empty(),
            "{label}"
        );
    }
}
