//! The structure of each request body Spool decodes, version by version, as the
//! Kafka protocol defines it (field order, the versions each field exists in, and the
//! first flexible version). Only structure: names are in comments.

use super::Kind::{Bytes, Fixed, Scalars, String, Strings, Struct, Structs, Tagged};
use super::{Field, Shape, between, from, group_shapes, share_shapes};

const INT8: super::Kind = Fixed(1);
const INT16: super::Kind = Fixed(2);
const INT32: super::Kind = Fixed(4);
const INT64: super::Kind = Fixed(8);
const BOOL: super::Kind = Fixed(1);
const UUID: super::Kind = Fixed(16);

/// ApiVersions (key 18).
pub const API_VERSIONS: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(3, String), // client_software_name
        from(3, String), // client_software_version
    ],
};

/// Metadata (key 3).
pub const METADATA: Shape = Shape {
    flexible_since: 9,
    fields: &[
        from(0, Structs(&[from(10, UUID), from(0, String)])), // topics: topic_id, name
        from(4, BOOL),                                        // allow_auto_topic_creation
        between(8, 10, BOOL), // include_cluster_authorized_operations
        from(8, BOOL),        // include_topic_authorized_operations
    ],
};

const PRODUCE_PARTITION: &[Field] = &[from(0, INT32), from(0, Bytes)]; // index, records
const PRODUCE_TOPIC: &[Field] = &[
    between(0, 12, String),              // name
    from(13, UUID),                      // topic_id
    from(0, Structs(PRODUCE_PARTITION)), // partition_data
];

/// Produce (key 0).
pub const PRODUCE: Shape = Shape {
    flexible_since: 9,
    fields: &[
        from(3, String),                 // transactional_id
        from(0, INT16),                  // acks
        from(0, INT32),                  // timeout_ms
        from(0, Structs(PRODUCE_TOPIC)), // topic_data
    ],
};

const FETCH_PARTITION: &[Field] = &[
    from(0, INT32),              // partition
    from(9, INT32),              // current_leader_epoch
    from(0, INT64),              // fetch_offset
    from(12, INT32),             // last_fetched_epoch
    from(5, INT64),              // log_start_offset
    from(0, INT32),              // partition_max_bytes
    from(17, Tagged(0, &UUID)),  // replica_directory_id
    from(18, Tagged(1, &INT64)), // high_watermark
];
const FETCH_TOPIC: &[Field] = &[
    between(0, 12, String),            // topic
    from(13, UUID),                    // topic_id
    from(0, Structs(FETCH_PARTITION)), // partitions
];
const FORGOTTEN_TOPIC: &[Field] = &[
    between(7, 12, String), // topic
    from(13, UUID),         // topic_id
    from(7, Scalars(4)),    // partitions
];

/// replica_id, replica_epoch
const REPLICA_STATE: &[Field] = &[from(0, INT32), from(0, INT64)];

/// Fetch (key 1), with its known tagged fields (see the module docs of `wire_guard`).
pub const FETCH: Shape = Shape {
    flexible_since: 12,
    fields: &[
        between(0, 14, INT32),                       // replica_id
        from(0, INT32),                              // max_wait_ms
        from(0, INT32),                              // min_bytes
        from(3, INT32),                              // max_bytes
        from(4, INT8),                               // isolation_level
        from(7, INT32),                              // session_id
        from(7, INT32),                              // session_epoch
        from(0, Structs(FETCH_TOPIC)),               // topics
        from(7, Structs(FORGOTTEN_TOPIC)),           // forgotten_topics_data
        from(11, String),                            // rack_id
        from(12, Tagged(0, &String)),                // cluster_id
        from(15, Tagged(1, &Struct(REPLICA_STATE))), // replica_state
    ],
};

const LIST_OFFSETS_PARTITION: &[Field] = &[
    from(0, INT32),       // partition_index
    from(4, INT32),       // current_leader_epoch
    from(0, INT64),       // timestamp
    between(0, 0, INT32), // max_num_offsets
];
const LIST_OFFSETS_TOPIC: &[Field] = &[from(0, String), from(0, Structs(LIST_OFFSETS_PARTITION))];

/// ListOffsets (key 2).
pub const LIST_OFFSETS: Shape = Shape {
    flexible_since: 6,
    fields: &[
        from(0, INT32),                       // replica_id
        from(2, INT8),                        // isolation_level
        from(0, Structs(LIST_OFFSETS_TOPIC)), // topics
        from(10, INT32),                      // timeout_ms
    ],
};

const CREATABLE_ASSIGNMENT: &[Field] = &[from(0, INT32), from(0, Scalars(4))]; // partition, brokers
const CREATABLE_CONFIG: &[Field] = &[from(0, String), from(0, String)]; // name, value
const CREATABLE_TOPIC: &[Field] = &[
    from(0, String),                        // name
    from(0, INT32),                         // num_partitions
    from(0, INT16),                         // replication_factor
    from(0, Structs(CREATABLE_ASSIGNMENT)), // assignments
    from(0, Structs(CREATABLE_CONFIG)),     // configs
];

/// CreateTopics (key 19).
pub const CREATE_TOPICS: Shape = Shape {
    flexible_since: 5,
    fields: &[
        from(0, Structs(CREATABLE_TOPIC)), // topics
        from(0, INT32),                    // timeout_ms
        from(1, BOOL),                     // validate_only
    ],
};

/// DeleteTopics (key 20).
pub const DELETE_TOPICS: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(6, Structs(&[from(0, String), from(0, UUID)])), // topics: name, topic_id
        between(0, 5, Strings),                              // topic_names
        from(0, INT32),                                      // timeout_ms
    ],
};

const DELETE_RECORDS_PARTITION: &[Field] = &[from(0, INT32), from(0, INT64)]; // index, offset
const DELETE_RECORDS_TOPIC: &[Field] =
    &[from(0, String), from(0, Structs(DELETE_RECORDS_PARTITION))];

/// DeleteRecords (key 21).
pub const DELETE_RECORDS: Shape = Shape {
    flexible_since: 2,
    fields: &[
        from(0, Structs(DELETE_RECORDS_TOPIC)), // topics
        from(0, INT32),                         // timeout_ms
    ],
};

const EPOCH_PARTITION: &[Field] = &[
    from(0, INT32), // partition
    from(2, INT32), // current_leader_epoch
    from(0, INT32), // leader_epoch
];
const EPOCH_TOPIC: &[Field] = &[from(0, String), from(0, Structs(EPOCH_PARTITION))];

/// OffsetForLeaderEpoch (key 23).
pub const OFFSET_FOR_LEADER_EPOCH: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(3, INT32),                // replica_id
        from(0, Structs(EPOCH_TOPIC)), // topics
    ],
};

const PARTITIONS_ASSIGNMENT: &[Field] = &[from(0, Scalars(4))]; // broker_ids
const PARTITIONS_TOPIC: &[Field] = &[
    from(0, String),                         // name
    from(0, INT32),                          // count
    from(0, Structs(PARTITIONS_ASSIGNMENT)), // assignments (nullable)
];

/// CreatePartitions (key 37).
pub const CREATE_PARTITIONS: Shape = Shape {
    flexible_since: 2,
    fields: &[
        from(0, Structs(PARTITIONS_TOPIC)), // topics
        from(0, INT32),                     // timeout_ms
        from(0, BOOL),                      // validate_only
    ],
};

const DESCRIBE_CONFIGS_RESOURCE: &[Field] = &[
    from(0, INT8),    // resource_type
    from(0, String),  // resource_name
    from(0, Strings), // configuration_keys (nullable)
];

/// DescribeConfigs (key 32).
pub const DESCRIBE_CONFIGS: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(0, Structs(DESCRIBE_CONFIGS_RESOURCE)), // resources
        from(1, BOOL),                               // include_synonyms
        from(3, BOOL),                               // include_documentation
    ],
};

const ALTERABLE_CONFIG: &[Field] = &[from(0, String), from(0, String)]; // name, value
const ALTER_CONFIGS_RESOURCE: &[Field] = &[
    from(0, INT8),                      // resource_type
    from(0, String),                    // resource_name
    from(0, Structs(ALTERABLE_CONFIG)), // configs
];

/// AlterConfigs (key 33).
pub const ALTER_CONFIGS: Shape = Shape {
    flexible_since: 2,
    fields: &[
        from(0, Structs(ALTER_CONFIGS_RESOURCE)), // resources
        from(0, BOOL),                            // validate_only
    ],
};

const INCREMENTAL_CONFIG: &[Field] = &[from(0, String), from(0, INT8), from(0, String)]; // name, op, value
const INCREMENTAL_RESOURCE: &[Field] = &[
    from(0, INT8),                        // resource_type
    from(0, String),                      // resource_name
    from(0, Structs(INCREMENTAL_CONFIG)), // configs
];

/// IncrementalAlterConfigs (key 44).
pub const INCREMENTAL_ALTER_CONFIGS: Shape = Shape {
    flexible_since: 1,
    fields: &[
        from(0, Structs(INCREMENTAL_RESOURCE)), // resources
        from(0, BOOL),                          // validate_only
    ],
};

/// SaslHandshake (key 17): never flexible (its versions "cannot be bumped").
pub const SASL_HANDSHAKE: Shape = Shape {
    flexible_since: i16::MAX,
    fields: &[from(0, String)], // mechanism
};

/// SaslAuthenticate (key 36).
pub const SASL_AUTHENTICATE: Shape = Shape {
    flexible_since: 2,
    fields: &[from(0, Bytes)], // auth_bytes
};

/// DescribeUserScramCredentials (key 50): a nullable list of user names.
pub const DESCRIBE_USER_SCRAM_CREDENTIALS: Shape = Shape {
    flexible_since: 0,
    fields: &[from(0, Structs(&[from(0, String)]))], // users: name
};

const SCRAM_DELETION: &[Field] = &[from(0, String), from(0, INT8)]; // name, mechanism
const SCRAM_UPSERTION: &[Field] = &[
    from(0, String), // name
    from(0, INT8),   // mechanism
    from(0, INT32),  // iterations
    from(0, Bytes),  // salt
    from(0, Bytes),  // salted_password
];

/// AlterUserScramCredentials (key 51).
pub const ALTER_USER_SCRAM_CREDENTIALS: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, Structs(SCRAM_DELETION)),
        from(0, Structs(SCRAM_UPSERTION)),
    ],
};

/// An ACL filter (DescribeAcls, DeleteAcls) or binding (CreateAcls): resource type,
/// name, pattern type (v1+), principal, host, operation, permission.
const ACL_FIELDS: &[Field] = &[
    from(0, INT8),   // resource_type
    from(0, String), // resource_name
    from(1, INT8),   // pattern_type
    from(0, String), // principal
    from(0, String), // host
    from(0, INT8),   // operation
    from(0, INT8),   // permission_type
];

/// DescribeAcls (key 29): one filter.
pub const DESCRIBE_ACLS: Shape = Shape {
    flexible_since: 2,
    fields: ACL_FIELDS,
};

/// CreateAcls (key 30).
pub const CREATE_ACLS: Shape = Shape {
    flexible_since: 2,
    fields: &[from(0, Structs(ACL_FIELDS))], // creations
};

/// DeleteAcls (key 31).
pub const DELETE_ACLS: Shape = Shape {
    flexible_since: 2,
    fields: &[from(0, Structs(ACL_FIELDS))], // filters
};

/// DescribeClientQuotas (key 48).
pub const DESCRIBE_CLIENT_QUOTAS: Shape = Shape {
    flexible_since: 1,
    fields: &[
        // components: entity_type, match_type, match
        from(
            0,
            Structs(&[from(0, String), from(0, INT8), from(0, String)]),
        ),
        from(0, BOOL), // strict
    ],
};

const QUOTA_ENTITY: &[Field] = &[from(0, String), from(0, String)]; // entity_type, entity_name
const QUOTA_OP: &[Field] = &[from(0, String), from(0, INT64), from(0, BOOL)]; // key, value (float64), remove

/// AlterClientQuotas (key 49).
pub const ALTER_CLIENT_QUOTAS: Shape = Shape {
    flexible_since: 1,
    fields: &[
        // entries: entity, ops
        from(
            0,
            Structs(&[from(0, Structs(QUOTA_ENTITY)), from(0, Structs(QUOTA_OP))]),
        ),
        from(0, BOOL), // validate_only
    ],
};

/// The shape of a request body by API key, for the APIs Spool decodes.
#[must_use]
pub fn shape_of(api_key: i16) -> Option<&'static Shape> {
    match api_key {
        0 => Some(&PRODUCE),
        1 => Some(&FETCH),
        2 => Some(&LIST_OFFSETS),
        3 => Some(&METADATA),
        18 => Some(&API_VERSIONS),
        19 => Some(&CREATE_TOPICS),
        20 => Some(&DELETE_TOPICS),
        21 => Some(&DELETE_RECORDS),
        23 => Some(&OFFSET_FOR_LEADER_EPOCH),
        32 => Some(&DESCRIBE_CONFIGS),
        33 => Some(&ALTER_CONFIGS),
        44 => Some(&INCREMENTAL_ALTER_CONFIGS),
        37 => Some(&CREATE_PARTITIONS),
        8 => Some(&group_shapes::OFFSET_COMMIT),
        9 => Some(&group_shapes::OFFSET_FETCH),
        10 => Some(&group_shapes::FIND_COORDINATOR),
        11 => Some(&group_shapes::JOIN_GROUP),
        12 => Some(&group_shapes::HEARTBEAT),
        13 => Some(&group_shapes::LEAVE_GROUP),
        14 => Some(&group_shapes::SYNC_GROUP),
        15 => Some(&group_shapes::DESCRIBE_GROUPS),
        16 => Some(&group_shapes::LIST_GROUPS),
        42 => Some(&group_shapes::DELETE_GROUPS),
        47 => Some(&group_shapes::OFFSET_DELETE),
        22 => Some(&group_shapes::INIT_PRODUCER_ID),
        24 => Some(&group_shapes::ADD_PARTITIONS_TO_TXN),
        25 => Some(&group_shapes::ADD_OFFSETS_TO_TXN),
        26 => Some(&group_shapes::END_TXN),
        28 => Some(&group_shapes::TXN_OFFSET_COMMIT),
        65 => Some(&group_shapes::DESCRIBE_TRANSACTIONS),
        66 => Some(&group_shapes::LIST_TRANSACTIONS),
        68 => Some(&group_shapes::CONSUMER_GROUP_HEARTBEAT),
        69 => Some(&group_shapes::CONSUMER_GROUP_DESCRIBE),
        76 => Some(&share_shapes::SHARE_GROUP_HEARTBEAT),
        77 => Some(&share_shapes::SHARE_GROUP_DESCRIBE),
        78 => Some(&share_shapes::SHARE_FETCH),
        79 => Some(&share_shapes::SHARE_ACKNOWLEDGE),
        90 => Some(&share_shapes::DESCRIBE_SHARE_GROUP_OFFSETS),
        91 => Some(&share_shapes::ALTER_SHARE_GROUP_OFFSETS),
        92 => Some(&share_shapes::DELETE_SHARE_GROUP_OFFSETS),
        17 => Some(&SASL_HANDSHAKE),
        36 => Some(&SASL_AUTHENTICATE),
        50 => Some(&DESCRIBE_USER_SCRAM_CREDENTIALS),
        51 => Some(&ALTER_USER_SCRAM_CREDENTIALS),
        29 => Some(&DESCRIBE_ACLS),
        30 => Some(&CREATE_ACLS),
        31 => Some(&DELETE_ACLS),
        48 => Some(&DESCRIBE_CLIENT_QUOTAS),
        49 => Some(&ALTER_CLIENT_QUOTAS),
        _ => None,
    }
}
