use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey as CurrentKey, RequestKind as CurrentRequest};
use kafka_protocol::protocol::{Decodable, Encodable};
use kafka_protocol_legacy::messages::{
    OffsetCommitRequest, RequestKind as OldRequest, ResponseKind as OldResponse,
};

use super::*;
use crate::batch::{BatchRules, validate_batch};

/// A v1 message set of one message (value `v`), built as an old producer does.
fn message_set() -> Vec<u8> {
    let mut covered = vec![1_u8, 0];
    covered.extend_from_slice(&1_234_i64.to_be_bytes());
    covered.extend_from_slice(&(-1_i32).to_be_bytes());
    covered.extend_from_slice(&1_i32.to_be_bytes());
    covered.push(b'v');
    let mut set = 0_i64.to_be_bytes().to_vec();
    set.extend_from_slice(&i32::try_from(covered.len() + 4).unwrap_or(0).to_be_bytes());
    set.extend_from_slice(&crc32fast::hash(&covered).to_be_bytes());
    set.extend_from_slice(&covered);
    set
}

fn encode_old(request: &OldRequest, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    request
        .encode(&mut out, version)
        .unwrap_or_else(|e| unreachable!("{e}"));
    out.freeze()
}

#[test]
fn versions_below_the_current_crate_are_bridged_to_its_lowest() {
    assert!(is_bridged(ApiKey::Produce, 2));
    assert!(!is_bridged(ApiKey::Produce, 3));
    assert_eq!(handled_as(ApiKey::Produce, 0), 3);
    assert_eq!(handled_as(ApiKey::Fetch, 3), 4);
    assert_eq!(handled_as(ApiKey::Fetch, 7), 7);
    assert!(
        !is_bridged(ApiKey::Metadata, 0),
        "Metadata v0 is still decoded"
    );
    assert_eq!(lowest_version(ApiKey::OffsetCommit), Some(0));
}

#[test]
fn a_produce_v2_request_carries_a_v2_batch_when_handled() {
    let mut old = ProduceRequest::default();
    old.acks = -1;
    old.timeout_ms = 5_000;
    let mut topic = kafka_protocol_legacy::messages::produce_request::TopicProduceData::default();
    topic.name = kafka_protocol_legacy::messages::TopicName(
        kafka_protocol_legacy::protocol::StrBytes::from_static_str("t"),
    );
    let mut partition =
        kafka_protocol_legacy::messages::produce_request::PartitionProduceData::default();
    partition.index = 2;
    partition.records = Some(Bytes::from(message_set()));
    topic.partition_data.push(partition);
    old.topic_data.push(topic);
    let body = encode_old(&OldRequest::Produce(old), 2);
    let up = request_up(ApiKey::Produce, 2, &body).unwrap_or_else(|e| unreachable!("{e}"));
    let mut buf = up;
    let current = CurrentRequest::decode(CurrentKey::Produce, &mut buf, 3)
        .unwrap_or_else(|e| unreachable!("{e}"));
    let CurrentRequest::Produce(produce) = current else {
        unreachable!()
    };
    assert_eq!((produce.acks, produce.timeout_ms), (-1, 5_000));
    let records = produce
        .topic_data
        .first()
        .and_then(|t| t.partition_data.first())
        .and_then(|p| p.records.clone())
        .unwrap_or_default();
    let header =
        validate_batch(&records, BatchRules::Stored).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!((header.base_timestamp.0, header.record_count), (1_234, 1));
}

#[test]
fn an_offset_commit_v1_keeps_its_group_generation_and_offsets() {
    let mut old = OffsetCommitRequest::default();
    old.group_id = kafka_protocol_legacy::messages::GroupId(
        kafka_protocol_legacy::protocol::StrBytes::from_static_str("g"),
    );
    old.generation_id_or_member_epoch = 7;
    old.member_id = kafka_protocol_legacy::protocol::StrBytes::from_static_str("m");
    let mut topic =
        kafka_protocol_legacy::messages::offset_commit_request::OffsetCommitRequestTopic::default();
    topic.name = kafka_protocol_legacy::messages::TopicName(
        kafka_protocol_legacy::protocol::StrBytes::from_static_str("t"),
    );
    let mut partition = kafka_protocol_legacy::messages::offset_commit_request::OffsetCommitRequestPartition::default();
    partition.committed_offset = 42;
    partition.commit_timestamp = 99;
    topic.partitions.push(partition);
    old.topics.push(topic);
    let body = encode_old(&OldRequest::OffsetCommit(old), 1);
    let mut up = request_up(ApiKey::OffsetCommit, 1, &body).unwrap_or_else(|e| unreachable!("{e}"));
    let current = kafka_protocol::messages::OffsetCommitRequest::decode(&mut up, 2)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(current.group_id.0.as_str(), "g");
    assert_eq!(current.generation_id_or_member_epoch, 7);
    assert_eq!(current.member_id.as_str(), "m");
    let offsets: Vec<i64> = current
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.committed_offset)
        .collect();
    assert_eq!(offsets, [42]);
}

/// A current-crate Fetch v4 response body holding `records` for t-0, with what v4+
/// adds set.
fn fetch_v4(records: Bytes) -> Bytes {
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, PartitionData,
    };
    let partition = PartitionData::default()
        .with_high_watermark(10)
        .with_last_stable_offset(10)
        .with_log_start_offset(0)
        .with_aborted_transactions(Some(vec![
            AbortedTransaction::default()
                .with_producer_id(5.into())
                .with_first_offset(1),
        ]))
        .with_records(Some(records));
    let topic = FetchableTopicResponse::default()
        .with_topic(kafka_protocol::messages::TopicName(
            kafka_protocol::protocol::StrBytes::from_static_str("t"),
        ))
        .with_partitions(vec![partition]);
    let response = kafka_protocol::messages::FetchResponse::default().with_responses(vec![topic]);
    let mut out = BytesMut::new();
    response
        .encode(&mut out, 4)
        .unwrap_or_else(|e| unreachable!("{e}"));
    out.freeze()
}

#[test]
fn fetch_v0_to_v3_answers_message_sets_of_the_right_format() {
    let batch = Bytes::from(message_set::to_batch(&message_set()).unwrap_or_default());
    for (version, magic) in [(0_i16, 0_u8), (1, 0), (2, 1), (3, 1)] {
        let down = response_down(ApiKey::Fetch, version, &fetch_v4(batch.clone()))
            .unwrap_or_else(|e| unreachable!("v{version}: {e}"));
        let mut buf = down;
        let decoded = OldResponse::decode(LegacyKey::Fetch, &mut buf, version)
            .unwrap_or_else(|e| unreachable!("{e}"));
        let OldResponse::Fetch(fetch) = decoded else {
            unreachable!()
        };
        let partition = fetch
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .cloned()
            .unwrap_or_default();
        assert_eq!(partition.high_watermark, 10);
        let set = partition.records.unwrap_or_default();
        // offset, size, crc, then the magic byte.
        assert_eq!(set.get(16), Some(&magic), "Fetch v{version}");
        assert!(set.ends_with(b"v"));
    }
}

#[test]
fn list_offsets_v0_answers_a_list_of_offsets() {
    use kafka_protocol::messages::list_offsets_response::{
        ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
    };
    let partition = ListOffsetsPartitionResponse::default()
        .with_offset(42)
        .with_timestamp(-1);
    let topic = ListOffsetsTopicResponse::default()
        .with_name(kafka_protocol::messages::TopicName(
            kafka_protocol::protocol::StrBytes::from_static_str("t"),
        ))
        .with_partitions(vec![partition]);
    let response =
        kafka_protocol::messages::ListOffsetsResponse::default().with_topics(vec![topic]);
    let mut body = BytesMut::new();
    response
        .encode(&mut body, 1)
        .unwrap_or_else(|e| unreachable!("{e}"));
    let mut down = response_down(ApiKey::ListOffsets, 0, &body.freeze())
        .unwrap_or_else(|e| unreachable!("{e}"));
    let old =
        <ListOffsetsResponse as kafka_protocol_legacy::protocol::Decodable>::decode(&mut down, 0)
            .unwrap_or_else(|e| unreachable!("{e}"));
    let offsets: Vec<Vec<i64>> = old
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.old_style_offsets.clone())
        .collect();
    assert_eq!(offsets, [vec![42]]);
}

#[test]
fn malformed_old_requests_are_errors_not_panics() {
    for body in [&b""[..], &[0xff; 7], &[0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]] {
        assert!(request_up(ApiKey::Produce, 1, &Bytes::copy_from_slice(body)).is_err());
        assert!(request_up(ApiKey::OffsetCommit, 0, &Bytes::copy_from_slice(body)).is_err());
    }
}
