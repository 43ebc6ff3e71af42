//! The structure of the response bodies Spool's own client decodes (the mirror's
//! fetches from a source cluster, the CLI's admin requests), at the non-flexible
//! versions it asks them at: the same walk as requests', so that a count on the wire
//! never makes `kafka-protocol` allocate more than the bytes present. Only structure:
//! names are in comments.

use super::Kind::{Bytes, Fixed, Scalars, String, Strings, Structs};
use super::{Field, Shape, between, from};

const INT8: super::Kind = Fixed(1);
const INT16: super::Kind = Fixed(2);
const INT32: super::Kind = Fixed(4);
const INT64: super::Kind = Fixed(8);
const BOOL: super::Kind = Fixed(1);

/// Every version here is before the first flexible one.
const NOT_FLEXIBLE: i16 = i16::MAX;

const FETCH_PARTITION: &[Field] = &[
    from(0, INT32),                                      // partition_index
    from(0, INT16),                                      // error_code
    from(0, INT64),                                      // high_watermark
    from(4, INT64),                                      // last_stable_offset
    from(5, INT64),                                      // log_start_offset
    from(4, Structs(&[from(0, INT64), from(0, INT64)])), // aborted: producer_id, first_offset
    from(11, INT32),                                     // preferred_read_replica
    from(0, Bytes),                                      // records
];

const FETCH: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(1, INT32), // throttle_time_ms
        from(7, INT16), // error_code
        from(7, INT32), // session_id
        from(
            0,
            Structs(&[from(0, String), from(0, Structs(FETCH_PARTITION))]),
        ), // responses
    ],
};

const METADATA_PARTITION: &[Field] = &[
    from(0, INT16),      // error_code
    from(0, INT32),      // partition_index
    from(0, INT32),      // leader_id
    from(7, INT32),      // leader_epoch
    from(0, Scalars(4)), // replica_nodes
    from(0, Scalars(4)), // isr_nodes
    from(5, Scalars(4)), // offline_replicas
];

const METADATA: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(3, INT32), // throttle_time_ms
        from(
            0,
            Structs(&[
                from(0, INT32),
                from(0, String),
                from(0, INT32),
                from(1, String),
            ]),
        ), // brokers
        from(2, String), // cluster_id
        from(1, INT32), // controller_id
        from(
            0,
            Structs(&[
                from(0, INT16),                       // error_code
                from(0, String),                      // name
                from(1, BOOL),                        // is_internal
                from(0, Structs(METADATA_PARTITION)), // partitions
                from(8, INT32),                       // topic_authorized_operations
            ]),
        ),
        between(8, 10, INT32), // cluster_authorized_operations
    ],
};

const LIST_OFFSETS: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(2, INT32), // throttle_time_ms
        from(
            0,
            Structs(&[
                from(0, String), // name
                from(
                    0,
                    Structs(&[
                        from(0, INT32),            // partition_index
                        from(0, INT16),            // error_code
                        between(0, 0, Scalars(8)), // old_style_offsets
                        from(1, INT64),            // timestamp
                        from(1, INT64),            // offset
                        from(4, INT32),            // leader_epoch
                    ]),
                ),
            ]),
        ),
    ],
};

const DESCRIBE_CONFIGS: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(0, INT32), // throttle_time_ms
        from(
            0,
            Structs(&[
                from(0, INT16),  // error_code
                from(0, String), // error_message
                from(0, INT8),   // resource_type
                from(0, String), // resource_name
                from(
                    0,
                    Structs(&[
                        from(0, String),     // name
                        from(0, String),     // value
                        from(0, BOOL),       // read_only
                        between(0, 0, BOOL), // is_default
                        from(1, INT8),       // config_source
                        from(0, BOOL),       // is_sensitive
                        from(
                            1,
                            Structs(&[from(0, String), from(0, String), from(0, INT8)]),
                        ), // synonyms
                        from(3, INT8),       // config_type
                        from(3, String),     // documentation
                    ]),
                ),
            ]),
        ),
    ],
};

const LIST_GROUPS: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(1, INT32),                                        // throttle_time_ms
        from(0, INT16),                                        // error_code
        from(0, Structs(&[from(0, String), from(0, String)])), // groups: id, protocol_type
    ],
};

const FIND_COORDINATOR: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(1, INT32),  // throttle_time_ms
        from(0, INT16),  // error_code
        from(1, String), // error_message
        from(0, INT32),  // node_id
        from(0, String), // host
        from(0, INT32),  // port
    ],
};

const OFFSET_FETCH: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(3, INT32), // throttle_time_ms
        from(
            0,
            Structs(&[
                from(0, String), // name
                from(
                    0,
                    Structs(&[
                        from(0, INT32),  // partition_index
                        from(0, INT64),  // committed_offset
                        from(5, INT32),  // committed_leader_epoch
                        from(0, String), // metadata
                        from(0, INT16),  // error_code
                    ]),
                ),
            ]),
        ),
        from(2, INT16), // error_code
    ],
};

const API_VERSIONS: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(0, INT16), // error_code
        from(
            0,
            Structs(&[from(0, INT16), from(0, INT16), from(0, INT16)]),
        ), // api_keys
        from(1, INT32), // throttle_time_ms
    ],
};

const SASL_HANDSHAKE: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[from(0, INT16), from(0, Strings)], // error_code, mechanisms
};

const SASL_AUTHENTICATE: Shape = Shape {
    flexible_since: NOT_FLEXIBLE,
    fields: &[
        from(0, INT16),  // error_code
        from(0, String), // error_message
        from(0, Bytes),  // auth_bytes
        from(1, INT64),  // session_lifetime_ms
    ],
};

/// The shape of response `api_key` at `version`, where it is described here.
#[must_use]
pub fn response_shape_of(api_key: i16, version: i16) -> Option<&'static Shape> {
    let (shape, versions) = match api_key {
        1 => (&FETCH, 4..=11),
        2 => (&LIST_OFFSETS, 1..=5),
        3 => (&METADATA, 1..=8),
        9 => (&OFFSET_FETCH, 2..=5),
        10 => (&FIND_COORDINATOR, 1..=2),
        16 => (&LIST_GROUPS, 0..=2),
        17 => (&SASL_HANDSHAKE, 0..=1),
        18 => (&API_VERSIONS, 0..=2),
        32 => (&DESCRIBE_CONFIGS, 1..=3),
        36 => (&SASL_AUTHENTICATE, 0..=1),
        _ => return None,
    };
    versions.contains(&version).then_some(shape)
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes as Raw, BytesMut};
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
    };
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, PartitionData,
    };
    use kafka_protocol::messages::list_groups_response::ListedGroup;
    use kafka_protocol::messages::list_offsets_response::{
        ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
    };
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::offset_fetch_response::{
        OffsetFetchResponsePartition, OffsetFetchResponseTopic,
    };
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    use super::super::{GuardError, check};
    use super::*;

    fn text(value: &str) -> StrBytes {
        StrBytes::from_string(value.to_owned())
    }

    fn encoded<M: Encodable>(message: &M, version: i16) -> Vec<u8> {
        let mut bytes = BytesMut::new();
        message.encode(&mut bytes, version).expect("encodes");
        bytes.to_vec()
    }

    /// A response, filled, encoded at a version.
    type Encoder = Box<dyn Fn(i16) -> Vec<u8>>;

    /// Each response by key, filled.
    fn samples() -> Vec<(i16, Encoder)> {
        let fetch = FetchResponse::default().with_responses(vec![
            FetchableTopicResponse::default()
                .with_topic(TopicName(text("t")))
                .with_partitions(vec![
                    PartitionData::default()
                        .with_aborted_transactions(Some(vec![AbortedTransaction::default()]))
                        .with_records(Some(Raw::from_static(b"batches"))),
                ]),
        ]);
        let metadata = MetadataResponse::default()
            .with_brokers(vec![
                MetadataResponseBroker::default()
                    .with_host(text("h"))
                    .with_rack(Some(text("r"))),
            ])
            .with_cluster_id(Some(text("c")))
            .with_topics(vec![
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(text("t"))))
                    .with_partitions(vec![
                        MetadataResponsePartition::default()
                            .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                            .with_isr_nodes(vec![BrokerId(1)])
                            .with_offline_replicas(vec![BrokerId(2)]),
                    ]),
            ]);
        let list_offsets = ListOffsetsResponse::default().with_topics(vec![
            ListOffsetsTopicResponse::default()
                .with_name(TopicName(text("t")))
                .with_partitions(vec![ListOffsetsPartitionResponse::default()]),
        ]);
        let describe = DescribeConfigsResponse::default().with_results(vec![
            DescribeConfigsResult::default()
                .with_error_message(Some(text("m")))
                .with_resource_name(text("t"))
                .with_configs(vec![
                    DescribeConfigsResourceResult::default()
                        .with_name(text("n"))
                        .with_value(Some(text("v")))
                        .with_synonyms(vec![DescribeConfigsSynonym::default().with_name(text("s"))])
                        .with_documentation(Some(text("d"))),
                ]),
        ]);
        let groups = ListGroupsResponse::default().with_groups(vec![
            ListedGroup::default()
                .with_group_id(GroupId(text("g")))
                .with_protocol_type(text("consumer")),
        ]);
        let coordinator = FindCoordinatorResponse::default()
            .with_error_message(Some(text("m")))
            .with_host(text("h"));
        let offsets = OffsetFetchResponse::default().with_topics(vec![
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(text("t")))
                .with_partitions(vec![
                    OffsetFetchResponsePartition::default().with_metadata(Some(text("m"))),
                ]),
        ]);
        let versions = ApiVersionsResponse::default().with_api_keys(vec![ApiVersion::default()]);
        let handshake = SaslHandshakeResponse::default().with_mechanisms(vec![text("PLAIN")]);
        let authenticate = SaslAuthenticateResponse::default()
            .with_error_message(Some(text("m")))
            .with_auth_bytes(Raw::from_static(b"token"));
        vec![
            (1, Box::new(move |v| encoded(&fetch, v))),
            (3, Box::new(move |v| encoded(&metadata, v))),
            (2, Box::new(move |v| encoded(&list_offsets, v))),
            (32, Box::new(move |v| encoded(&describe, v))),
            (16, Box::new(move |v| encoded(&groups, v))),
            (10, Box::new(move |v| encoded(&coordinator, v))),
            (9, Box::new(move |v| encoded(&offsets, v))),
            (18, Box::new(move |v| encoded(&versions, v))),
            (17, Box::new(move |v| encoded(&handshake, v))),
            (36, Box::new(move |v| encoded(&authenticate, v))),
        ]
    }

    #[test]
    fn every_described_response_is_walked_to_its_last_byte() {
        for (key, encode) in samples() {
            let mut described = 0;
            for version in 0..=12 {
                let Some(shape) = response_shape_of(key, version) else {
                    continue;
                };
                described += 1;
                let body = encode(version);
                assert_eq!(check(shape, version, &body), Ok(0), "key {key} v{version}");
            }
            assert!(described > 0, "key {key}");
        }
    }

    #[test]
    fn a_count_beyond_the_bytes_present_is_refused() {
        // A Fetch v11 answer declaring two billion topics in 20 bytes.
        let mut body = vec![0; 10]; // throttle, error code, session id
        body.extend_from_slice(&0x7fff_ffff_i32.to_be_bytes());
        body.extend_from_slice(&[0; 6]);
        let shape = response_shape_of(1, 11).expect("described");
        assert!(matches!(
            check(shape, 11, &body),
            Err(GuardError::CountExceedsBytes { .. })
        ));
        assert!(
            response_shape_of(1, 12).is_none(),
            "flexible versions are not described"
        );
    }
}
