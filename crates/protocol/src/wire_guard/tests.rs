//! The guard must accept every request `kafka-protocol` encodes, at every version, and
//! refuse array counts that outrun the bytes present.

use bytes::BytesMut;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterUserScramCredentialsRequest, ApiKey, ApiVersionsRequest, BrokerId,
    CreateAclsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest,
    DeleteRecordsRequest, DeleteTopicsRequest, DescribeAclsRequest, DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest, FetchRequest, IncrementalAlterConfigsRequest,
    ListOffsetsRequest, MetadataRequest, ProduceRequest, SaslAuthenticateRequest,
    SaslHandshakeRequest, TopicName,
    alter_configs_request::{AlterConfigsResource, AlterableConfig},
    alter_user_scram_credentials_request::{ScramCredentialDeletion, ScramCredentialUpsertion},
    create_acls_request::AclCreation,
    create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsTopic},
    create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig},
    delete_acls_request::DeleteAclsFilter,
    delete_records_request::{DeleteRecordsPartition, DeleteRecordsTopic},
    delete_topics_request::DeleteTopicState,
    describe_configs_request::DescribeConfigsResource,
    describe_user_scram_credentials_request::UserName,
    fetch_request::{FetchPartition, FetchTopic, ForgottenTopic, ReplicaState},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    metadata_request::MetadataRequestTopic,
    produce_request::{PartitionProduceData, TopicProduceData},
};
use kafka_protocol::protocol::{Encodable, Message, StrBytes};
use proptest::prelude::*;

use super::*;

mod group_samples;
mod legacy_samples;
mod share_samples;

fn name(s: &'static str) -> TopicName {
    TopicName(StrBytes::from_static_str(s))
}

fn encoded<T: Encodable + Message>(message: &T, version: i16) -> Vec<u8> {
    let mut buf = BytesMut::new();
    message.encode(&mut buf, version).unwrap();
    buf.to_vec()
}

/// Every version of every shaped request, populated with nested arrays.
fn samples() -> Vec<(i16, i16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |key: ApiKey,
                   range: kafka_protocol::protocol::VersionRange,
                   encode: &dyn Fn(i16) -> Vec<u8>| {
        for version in range.min..=range.max {
            out.push((key as i16, version, encode(version)));
        }
    };
    let metadata = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name("orders"))),
        MetadataRequestTopic::default().with_name(Some(name("payments"))),
    ]));
    add(ApiKey::Metadata, MetadataRequest::VERSIONS, &|v| {
        encoded(&metadata, v)
    });
    let versions = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("spool-test"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    add(ApiKey::ApiVersions, ApiVersionsRequest::VERSIONS, &|v| {
        encoded(&versions, v)
    });
    let produce = |v: i16| {
        let topic = if v >= 13 {
            TopicProduceData::default().with_topic_id(uuid::Uuid::from_u128(7))
        } else {
            TopicProduceData::default().with_name(name("orders"))
        };
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![topic.with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(bytes::Bytes::from_static(&[1; 70]))),
                    PartitionProduceData::default()
                        .with_index(1)
                        .with_records(None),
                ])])
    };
    add(ApiKey::Produce, ProduceRequest::VERSIONS, &|v| {
        encoded(&produce(v), v)
    });
    let fetch = |v: i16| {
        let topic = if v >= 13 {
            FetchTopic::default().with_topic_id(uuid::Uuid::from_u128(7))
        } else {
            FetchTopic::default().with_topic(name("orders"))
        };
        let mut request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_max_bytes(52_428_800)
            .with_topics(vec![topic.with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(42)
                        .with_partition_max_bytes(1 << 20),
                    FetchPartition::default().with_partition(3),
                ])]);
        if v >= 7 {
            let forgotten = if v >= 13 {
                ForgottenTopic::default().with_topic_id(uuid::Uuid::from_u128(9))
            } else {
                ForgottenTopic::default().with_topic(name("old"))
            };
            request =
                request.with_forgotten_topics_data(vec![forgotten.with_partitions(vec![1, 2, 3])]);
        }
        if v >= 11 {
            request = request.with_rack_id(StrBytes::from_static_str("rack-a"));
        }
        // The tagged fields kafka-protocol knows, which the walk must step through
        // exactly as the decoder does.
        if v >= 12 {
            request = request.with_cluster_id(Some(StrBytes::from_static_str("cluster")));
        }
        if v >= 15 {
            request = request.with_replica_state(
                ReplicaState::default()
                    .with_replica_id(BrokerId(2))
                    .with_replica_epoch(9),
            );
        }
        if v >= 17 {
            for topic in &mut request.topics {
                for partition in &mut topic.partitions {
                    partition.replica_directory_id = uuid::Uuid::from_u128(11);
                    if v >= 18 {
                        partition.high_watermark = 77;
                    }
                }
            }
        }
        request
    };
    add(ApiKey::Fetch, FetchRequest::VERSIONS, &|v| {
        encoded(&fetch(v), v)
    });
    let list = ListOffsetsRequest::default().with_topics(vec![
        ListOffsetsTopic::default()
            .with_name(name("orders"))
            .with_partitions(vec![
                ListOffsetsPartition::default()
                    .with_partition_index(2)
                    .with_timestamp(-1),
            ]),
    ]);
    add(ApiKey::ListOffsets, ListOffsetsRequest::VERSIONS, &|v| {
        encoded(&list, v)
    });
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name("orders"))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![
                    CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![kafka_protocol::messages::BrokerId(1)]),
                ])
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("1000"))),
                ]),
        ]);
    add(ApiKey::CreateTopics, CreateTopicsRequest::VERSIONS, &|v| {
        encoded(&create, v)
    });
    let delete = |v: i16| {
        let request = DeleteTopicsRequest::default().with_timeout_ms(1000);
        if v >= 6 {
            request.with_topics(vec![
                DeleteTopicState::default().with_name(Some(name("a"))),
                DeleteTopicState::default().with_topic_id(uuid::Uuid::from_u128(3)),
            ])
        } else {
            request.with_topic_names(vec![name("a"), name("b")])
        }
    };
    add(ApiKey::DeleteTopics, DeleteTopicsRequest::VERSIONS, &|v| {
        encoded(&delete(v), v)
    });
    let records = DeleteRecordsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(name("orders"))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(1)
                        .with_offset(99),
                ]),
        ]);
    add(
        ApiKey::DeleteRecords,
        DeleteRecordsRequest::VERSIONS,
        &|v| encoded(&records, v),
    );
    let epochs = kafka_protocol::messages::OffsetForLeaderEpochRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![
            kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                .with_topic(name("orders"))
                .with_partitions(vec![
                    kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                        .with_partition(2)
                        .with_current_leader_epoch(7)
                        .with_leader_epoch(5),
                ]),
        ]);
    add(
        ApiKey::OffsetForLeaderEpoch,
        kafka_protocol::messages::OffsetForLeaderEpochRequest::VERSIONS,
        &|v| encoded(&epochs, v),
    );
    let partitions = CreatePartitionsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(name("orders"))
                .with_count(6)
                .with_assignments(Some(vec![
                    CreatePartitionsAssignment::default()
                        .with_broker_ids(vec![kafka_protocol::messages::BrokerId(1)]),
                ])),
            CreatePartitionsTopic::default()
                .with_name(name("other"))
                .with_count(2),
        ]);
    add(
        ApiKey::CreatePartitions,
        CreatePartitionsRequest::VERSIONS,
        &|v| encoded(&partitions, v),
    );
    let describe = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("orders"))
                .with_configuration_keys(Some(vec![StrBytes::from_static_str("retention.ms")])),
        ]);
    let describe_at = |v: i16| {
        if v >= 1 {
            describe.clone()
        } else {
            describe.clone().with_include_synonyms(false)
        }
    };
    add(
        ApiKey::DescribeConfigs,
        DescribeConfigsRequest::VERSIONS,
        &|v| encoded(&describe_at(v), v),
    );
    let alter = AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("orders"))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(StrBytes::from_static_str("retention.ms"))
                    .with_value(Some(StrBytes::from_static_str("5"))),
            ]),
    ]);
    add(ApiKey::AlterConfigs, AlterConfigsRequest::VERSIONS, &|v| {
        encoded(&alter, v)
    });
    let incremental = IncrementalAlterConfigsRequest::default().with_resources(vec![
        kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource::default(
        )
        .with_resource_type(2)
        .with_resource_name(StrBytes::from_static_str("orders"))
        .with_configs(vec![
            kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig::default()
                .with_name(StrBytes::from_static_str("retention.ms"))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_static_str("5"))),
        ]),
    ]);
    add(
        ApiKey::IncrementalAlterConfigs,
        IncrementalAlterConfigsRequest::VERSIONS,
        &|v| encoded(&incremental, v),
    );
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("SCRAM-SHA-256"));
    add(
        ApiKey::SaslHandshake,
        SaslHandshakeRequest::VERSIONS,
        &|v| encoded(&handshake, v),
    );
    let authenticate = SaslAuthenticateRequest::default()
        .with_auth_bytes(bytes::Bytes::from_static(b"n,,n=alice,r=abc"));
    add(
        ApiKey::SaslAuthenticate,
        SaslAuthenticateRequest::VERSIONS,
        &|v| encoded(&authenticate, v),
    );
    for users in [
        None,
        Some(vec![
            UserName::default().with_name(StrBytes::from_static_str("alice")),
        ]),
    ] {
        let describe = DescribeUserScramCredentialsRequest::default().with_users(users);
        add(
            ApiKey::DescribeUserScramCredentials,
            DescribeUserScramCredentialsRequest::VERSIONS,
            &|v| encoded(&describe, v),
        );
    }
    let alter = AlterUserScramCredentialsRequest::default()
        .with_deletions(vec![
            ScramCredentialDeletion::default()
                .with_name(StrBytes::from_static_str("bob"))
                .with_mechanism(2),
        ])
        .with_upsertions(vec![
            ScramCredentialUpsertion::default()
                .with_name(StrBytes::from_static_str("alice"))
                .with_mechanism(1)
                .with_iterations(8192)
                .with_salt(bytes::Bytes::from_static(&[7; 24]))
                .with_salted_password(bytes::Bytes::from_static(&[9; 32])),
        ]);
    add(
        ApiKey::AlterUserScramCredentials,
        AlterUserScramCredentialsRequest::VERSIONS,
        &|v| encoded(&alter, v),
    );
    let describe_acls = DescribeAclsRequest::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(Some(StrBytes::from_static_str("User:alice")))
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    add(ApiKey::DescribeAcls, DescribeAclsRequest::VERSIONS, &|v| {
        encoded(&describe_acls, v)
    });
    let create_acls = CreateAclsRequest::default().with_creations(vec![
        AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("orders"))
            .with_resource_pattern_type(4)
            .with_principal(StrBytes::from_static_str("User:alice"))
            .with_host(StrBytes::from_static_str("*"))
            .with_operation(3)
            .with_permission_type(3),
    ]);
    add(ApiKey::CreateAcls, CreateAclsRequest::VERSIONS, &|v| {
        encoded(&create_acls, v)
    });
    let delete_acls = DeleteAclsRequest::default().with_filters(vec![
        DeleteAclsFilter::default()
            .with_resource_type_filter(1)
            .with_resource_name_filter(Some(StrBytes::from_static_str("orders")))
            .with_pattern_type_filter(2)
            .with_operation(1)
            .with_permission_type(1),
    ]);
    add(ApiKey::DeleteAcls, DeleteAclsRequest::VERSIONS, &|v| {
        encoded(&delete_acls, v)
    });
    let describe_quotas = DescribeClientQuotasRequest::default()
        .with_components(vec![
            ComponentData::default()
                .with_entity_type(StrBytes::from_static_str("user"))
                .with_match_type(0)
                .with_match(Some(StrBytes::from_static_str("alice"))),
        ])
        .with_strict(true);
    add(
        ApiKey::DescribeClientQuotas,
        DescribeClientQuotasRequest::VERSIONS,
        &|v| encoded(&describe_quotas, v),
    );
    let alter_quotas = AlterClientQuotasRequest::default().with_entries(vec![
        EntryData::default()
            .with_entity(vec![
                EntityData::default()
                    .with_entity_type(StrBytes::from_static_str("client-id"))
                    .with_entity_name(None),
            ])
            .with_ops(vec![
                OpData::default()
                    .with_key(StrBytes::from_static_str("producer_byte_rate"))
                    .with_value(1024.0),
            ]),
    ]);
    add(
        ApiKey::AlterClientQuotas,
        AlterClientQuotasRequest::VERSIONS,
        &|v| encoded(&alter_quotas, v),
    );
    out.extend(group_samples::samples());
    out.extend(share_samples::samples());
    out
}

/// The guard's walk of a request ends exactly at its end; the API's shape.
fn walks_to_the_end(key: i16, version: i16, bytes: &[u8]) -> &'static Shape {
    let shape = shapes::shape_of(key).unwrap();
    assert_eq!(
        check(shape, version, bytes),
        Ok(0),
        "api {key} v{version}: the walk must end exactly at the end"
    );
    shape
}

#[test]
fn every_encoded_request_passes_and_decodes() {
    let samples = samples();
    assert!(samples.len() > 50);
    for (key, version, bytes) in samples {
        walks_to_the_end(key, version, &bytes);
        let mut buf = bytes::Bytes::from(bytes.clone());
        let api = ApiKey::try_from(key).unwrap();
        kafka_protocol::messages::RequestKind::decode(api, &mut buf, version)
            .unwrap_or_else(|e| panic!("api {key} v{version}: {e}"));
    }
}

#[test]
fn every_old_version_kafka_4_removed_passes_and_decodes_with_the_old_crate() {
    let samples = legacy_samples::samples();
    assert!(samples.len() >= 12);
    for (key, version, bytes) in samples {
        let shape = walks_to_the_end(key, version, &bytes);
        let api = ApiKey::try_from(key).unwrap();
        let up = crate::legacy::request_up(api, version, &bytes::Bytes::from(bytes))
            .unwrap_or_else(|e| panic!("{e}"));
        let handled = crate::legacy::handled_as(api, version);
        assert_eq!(
            check(shape, handled, &up),
            Ok(0),
            "api {key} v{version} as v{handled}"
        );
    }
}

#[test]
fn a_count_beyond_the_bytes_present_is_refused() {
    // Metadata v0: topics count, then nothing.
    let huge = [0x7f, 0xff, 0xff, 0xff];
    assert_eq!(
        check(&shapes::METADATA, 0, &huge),
        Err(GuardError::CountExceedsBytes {
            count: 0x7fff_ffff,
            remaining: 0
        })
    );
    // Metadata v12 (flexible): compact count 2^28, with 3 bytes after it.
    let compact = [0x81, 0x80, 0x80, 0x80, 0x01, 0, 0, 0];
    assert!(matches!(
        check(&shapes::METADATA, 12, &compact),
        Err(GuardError::CountExceedsBytes { remaining: 3, .. })
    ));
    // A nested count: Produce v3 with one topic whose partition count is huge.
    let mut produce = vec![0xff, 0xff, 0, 1, 0, 0, 0, 100, 0, 0, 0, 1, 0, 1, b't'];
    produce.extend_from_slice(&[0x40, 0, 0, 0]);
    assert!(matches!(
        check(&shapes::PRODUCE, 3, &produce),
        Err(GuardError::CountExceedsBytes { .. })
    ));
    assert_eq!(
        check(&shapes::PRODUCE, 3, &produce[..7]),
        Err(GuardError::Truncated)
    );
}

/// Found by the `request_decoding` fuzz target: a Fetch v18 request whose partition
/// declared a tagged field (tag 1, high_watermark) of one size while the decoder reads
/// eight bytes regardless. The decoder then lost step with the walk and read a
/// forgotten-topics count of hundreds of millions, and the allocation aborted the
/// process.
#[test]
fn a_known_tagged_field_of_the_wrong_size_is_refused() {
    let frame = include_bytes!("fixtures/fetch_v18_tagged_field_desync.bin");
    let envelope = crate::request::decode_header(bytes::Bytes::from_static(frame)).unwrap();
    assert_eq!((envelope.api_key, envelope.version), (ApiKey::Fetch, 18));
    assert!(matches!(
        check(&shapes::FETCH, 18, &envelope.body),
        Err(GuardError::TaggedFieldSize { .. })
    ));
    assert!(crate::request::decode_body(&envelope).is_err());

    // By hand: Fetch v18, one topic with one partition whose high_watermark tag holds
    // `value` and declares `size`.
    let fetch = |size: u8, value: &[u8]| {
        let mut body = vec![0; 4 * 3]; // max_wait_ms, min_bytes, max_bytes
        body.extend_from_slice(&[0; 9]); // isolation_level, session_id, session_epoch
        body.push(2); // one topic
        body.extend_from_slice(&[7; 16]); // topic_id
        body.push(2); // one partition
        body.extend_from_slice(&[0; 4 + 4 + 8 + 4 + 8 + 4]);
        body.extend_from_slice(&[1, 1, size]); // one tagged field: tag 1, its size
        body.extend_from_slice(value);
        body.push(0); // the topic's tagged fields
        body.extend_from_slice(&[1, 1, 0]); // no forgotten topics, empty rack, no tags
        body
    };
    assert_eq!(check(&shapes::FETCH, 18, &fetch(8, &[0; 8])), Ok(0));
    assert_eq!(
        check(&shapes::FETCH, 18, &fetch(2, &[0; 2])),
        Err(GuardError::TaggedFieldSize {
            tag: 1,
            declared: 2
        })
    );
    assert!(matches!(
        check(&shapes::FETCH, 18, &fetch(10, &[0; 10])),
        Err(GuardError::TaggedFieldSize { tag: 1, .. })
    ));
}

proptest! {
    #[test]
    fn the_guard_never_panics_and_what_it_passes_decodes_without_huge_allocations(
        key in prop::sample::select(vec![0i16, 1, 2, 3, 18, 19, 20, 21, 32, 33, 37, 44]),
        version in 0i16..20,
        mut bytes in proptest::collection::vec(any::<u8>(), 0..200),
        flip in any::<(usize, u8)>(),
    ) {
        // Start from a real request and damage one byte, or use random bytes.
        let base = samples().into_iter().find(|(k, v, _)| *k == key && *v == version);
        if let Some((_, _, real)) = base {
            bytes = real;
            let at = flip.0 % bytes.len().max(1);
            if let Some(byte) = bytes.get_mut(at) {
                *byte ^= flip.1;
            }
        }
        let shape = shapes::shape_of(key).unwrap();
        if check(shape, version, &bytes).is_ok()
            && let Ok(api) = ApiKey::try_from(key)
        {
            let mut buf = bytes::Bytes::from(bytes);
            let _ = kafka_protocol::messages::RequestKind::decode(api, &mut buf, version);
        }
    }
}
