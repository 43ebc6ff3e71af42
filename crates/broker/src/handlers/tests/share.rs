//! ShareFetch and ShareAcknowledge at the wire's level of detail (the real client,
//! confluent-kafka's ShareConsumer, is `compat/test_share_groups.py`'s): the share
//! session's rules, acquisition by one member at a time, acknowledgements of records
//! another member holds, a topic named twice in one request.

use std::collections::BTreeMap;

use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::share_fetch_response::PartitionData;
use kafka_protocol::messages::{
    GroupId, ResponseKind, ShareAcknowledgeRequest, ShareFetchRequest, ShareFetchResponse,
};
use uuid::Uuid;

use super::*;
use crate::handlers::{share_acknowledge, share_fetch};

const GROUP: &str = "queue";

impl InProcess {
    async fn share_topic(&self, name: &str, records: usize) -> Uuid {
        self.create_topic(name, 1).await;
        let batch = BatchBuilder::new().values(records, 10).build();
        assert_eq!(self.produce(name, 0, &batch).await.error_code, code::NONE);
        let configs =
            BTreeMap::from([("share.auto.offset.reset".to_owned(), "earliest".to_owned())]);
        crate::group_configs::change(self.shared(), GROUP, false, |_| Ok(configs))
            .await
            .unwrap();
        self.shared().topics().get(name).unwrap().record.id
    }

    async fn share_fetch(
        &self,
        member: &str,
        epoch: i32,
        topics: Vec<FetchTopic>,
    ) -> ShareFetchResponse {
        let request = ShareFetchRequest::default()
            .with_group_id(Some(GroupId(StrBytes::from_static_str(GROUP))))
            .with_member_id(Some(StrBytes::from_string(member.to_owned())))
            .with_share_session_epoch(epoch)
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_max_records(500)
            .with_topics(topics);
        let ResponseKind::ShareFetch(response) =
            share_fetch::handle(request, &self.context(1), self.shared()).await
        else {
            panic!("not a ShareFetch response");
        };
        response
    }
}

fn fetch_topic(topic: Uuid, acks: &[(i64, i64, i8)]) -> FetchTopic {
    let batches = acks
        .iter()
        .map(|(first, last, kind)| {
            AcknowledgementBatch::default()
                .with_first_offset(*first)
                .with_last_offset(*last)
                .with_acknowledge_types(vec![*kind])
        })
        .collect();
    FetchTopic::default()
        .with_topic_id(topic)
        .with_partitions(vec![
            FetchPartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(batches),
        ])
}

fn only_partition(response: &ShareFetchResponse) -> &PartitionData {
    assert_eq!(
        response.error_code,
        code::NONE,
        "{:?}",
        response.error_message
    );
    assert_eq!(response.responses.len(), 1, "{response:?}");
    &response.responses[0].partitions[0]
}

fn acquired(partition: &PartitionData) -> Vec<(i64, i64, i16)> {
    partition
        .acquired_records
        .iter()
        .map(|r| (r.first_offset, r.last_offset, r.delivery_count))
        .collect()
}

const ACCEPT: i8 = 1;

#[tokio::test]
async fn share_sessions_follow_kip_932s_epoch_rules() {
    let broker = InProcess::embedded().await;
    let topic = broker.share_topic("sessions", 3).await;
    let opened_with_acks = broker
        .share_fetch("m", 0, vec![fetch_topic(topic, &[(0, 0, ACCEPT)])])
        .await;
    assert_eq!(opened_with_acks.error_code, code::INVALID_REQUEST);
    let unknown = broker
        .share_fetch("m", 4, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(unknown.error_code, code::SHARE_SESSION_NOT_FOUND);

    let opened = broker
        .share_fetch("m", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(acquired(only_partition(&opened)), vec![(0, 2, 1)]);
    assert!(opened.acquisition_lock_timeout_ms > 0);
    let wrong = broker.share_fetch("m", 3, vec![]).await;
    assert_eq!(wrong.error_code, code::INVALID_SHARE_SESSION_EPOCH);

    let request = ShareAcknowledgeRequest::default()
        .with_group_id(Some(GroupId(StrBytes::from_static_str(GROUP))))
        .with_member_id(Some(StrBytes::from_static_str("m")))
        .with_share_session_epoch(0);
    let ResponseKind::ShareAcknowledge(refused) =
        share_acknowledge::handle(request, &broker.context(1), broker.shared()).await
    else {
        panic!("not a ShareAcknowledge response");
    };
    assert_eq!(refused.error_code, code::INVALID_SHARE_SESSION_EPOCH);
}

#[tokio::test]
async fn a_record_is_held_by_one_member_and_only_it_may_acknowledge_it() {
    let broker = InProcess::embedded().await;
    let topic = broker.share_topic("held", 4).await;
    let first = broker
        .share_fetch("a", 0, vec![fetch_topic(topic, &[])])
        .await;
    let partition = only_partition(&first);
    assert_eq!(acquired(partition), vec![(0, 3, 1)]);
    assert!(!partition.records.as_ref().unwrap().is_empty());

    // b gets nothing (a holds all four), and cannot acknowledge a's records.
    let other = broker
        .share_fetch("b", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert!(other.responses.is_empty(), "{other:?}");
    let stolen = broker
        .share_fetch("b", 1, vec![fetch_topic(topic, &[(0, 0, ACCEPT)])])
        .await;
    let stolen = only_partition(&stolen);
    assert_eq!(stolen.acknowledge_error_code, code::INVALID_RECORD_STATE);
    assert_eq!(stolen.records.as_deref(), Some(&[][..]), "never null");

    // a acknowledges, naming the topic twice in one request: both count.
    let mut twice = fetch_topic(topic, &[(0, 1, ACCEPT)]);
    twice.partitions.push(
        FetchPartition::default()
            .with_partition_index(0)
            .with_acknowledgement_batches(vec![
                AcknowledgementBatch::default()
                    .with_first_offset(2)
                    .with_last_offset(3)
                    .with_acknowledge_types(vec![ACCEPT]),
            ]),
    );
    let accepted = broker.share_fetch("a", 1, vec![twice]).await;
    assert_eq!(only_partition(&accepted).acknowledge_error_code, code::NONE);
    let stored = broker
        .shared()
        .metadata()
        .share_partitions(Some(GROUP))
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].start_offset, 4, "the acknowledgements are stored");
}

#[tokio::test]
async fn share_groups_read_over_shared_storage() {
    let broker = InProcess::shared_storage().await;
    let topic = broker.share_topic("shared", 2).await;
    let fetched = broker
        .share_fetch("a", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(acquired(only_partition(&fetched)), vec![(0, 1, 1)]);
    let accepted = broker
        .share_fetch("a", 1, vec![fetch_topic(topic, &[(0, 1, ACCEPT)])])
        .await;
    assert_eq!(only_partition(&accepted).acknowledge_error_code, code::NONE);
}

#[tokio::test]
async fn an_empty_groups_start_offset_is_moved_and_its_offsets_deleted() {
    use kafka_protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    };
    use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
    use kafka_protocol::messages::{AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest};

    use crate::handlers::{alter_share_group_offsets, delete_share_group_offsets};

    let broker = InProcess::embedded().await;
    let topic = broker.share_topic("moved", 6).await;
    let first = broker
        .share_fetch("a", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(acquired(only_partition(&first)), vec![(0, 5, 1)]);
    let accepted = broker
        .share_fetch("a", 1, vec![fetch_topic(topic, &[(0, 1, ACCEPT)])])
        .await;
    assert_eq!(only_partition(&accepted).acknowledge_error_code, code::NONE);
    // a's session closes: what it held goes back.
    let closed = broker.share_fetch("a", -1, vec![]).await;
    assert_eq!(closed.error_code, code::NONE);

    let alter = AlterShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(vec![
            AlterShareGroupOffsetsRequestTopic::default()
                .with_topic_name(topic_name("moved"))
                .with_partitions(vec![
                    AlterShareGroupOffsetsRequestPartition::default()
                        .with_partition_index(0)
                        .with_start_offset(4),
                ]),
        ]);
    let ResponseKind::AlterShareGroupOffsets(altered) =
        alter_share_group_offsets::handle(alter, &broker.context(0), broker.shared()).await
    else {
        panic!("not an AlterShareGroupOffsets response");
    };
    assert_eq!(altered.error_code, code::NONE);
    assert_eq!(altered.responses[0].partitions[0].error_code, code::NONE);
    let again = broker
        .share_fetch("b", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(
        acquired(only_partition(&again)),
        vec![(4, 5, 1)],
        "from the new start, as never delivered"
    );
    broker.share_fetch("b", -1, vec![]).await;

    let delete = DeleteShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(vec![
            DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(topic_name("moved")),
        ]);
    let ResponseKind::DeleteShareGroupOffsets(deleted) =
        delete_share_group_offsets::handle(delete, &broker.context(0), broker.shared()).await
    else {
        panic!("not a DeleteShareGroupOffsets response");
    };
    assert_eq!(deleted.responses[0].error_code, code::NONE);
    let stored = broker
        .shared()
        .metadata()
        .share_partitions(Some(GROUP))
        .await
        .unwrap();
    assert!(stored.is_empty());
    let restarted = broker
        .share_fetch("c", 0, vec![fetch_topic(topic, &[])])
        .await;
    assert_eq!(
        acquired(only_partition(&restarted)),
        vec![(0, 5, 1)],
        "started again by share.auto.offset.reset (earliest)"
    );
}
