//! The structure of the consumer-group, producer-id and transaction requests (see
//! [`super::shapes`]).

use super::Kind::{Bytes, Fixed, Scalars, String, Strings, Structs};
use super::{Field, Shape, between, from};

const INT32: super::Kind = Fixed(4);
const INT64: super::Kind = Fixed(8);
const INT8: super::Kind = Fixed(1);
const BOOL: super::Kind = Fixed(1);
const INT16: super::Kind = Fixed(2);

/// FindCoordinator (key 10).
pub const FIND_COORDINATOR: Shape = Shape {
    flexible_since: 3,
    fields: &[
        between(0, 3, String), // key
        from(1, INT8),         // key_type
        from(4, Strings),      // coordinator_keys
    ],
};

const JOIN_GROUP_PROTOCOL: &[Field] = &[from(0, String), from(0, Bytes)]; // name, metadata

/// JoinGroup (key 11).
pub const JOIN_GROUP: Shape = Shape {
    flexible_since: 6,
    fields: &[
        from(0, String),                       // group_id
        from(0, INT32),                        // session_timeout_ms
        from(1, INT32),                        // rebalance_timeout_ms
        from(0, String),                       // member_id
        from(5, String),                       // group_instance_id
        from(0, String),                       // protocol_type
        from(0, Structs(JOIN_GROUP_PROTOCOL)), // protocols
        from(8, String),                       // reason
    ],
};

const SYNC_GROUP_ASSIGNMENT: &[Field] = &[from(0, String), from(0, Bytes)]; // member_id, assignment

/// SyncGroup (key 14).
pub const SYNC_GROUP: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(0, String),                         // group_id
        from(0, INT32),                          // generation_id
        from(0, String),                         // member_id
        from(3, String),                         // group_instance_id
        from(5, String),                         // protocol_type
        from(5, String),                         // protocol_name
        from(0, Structs(SYNC_GROUP_ASSIGNMENT)), // assignments
    ],
};

/// Heartbeat (key 12).
pub const HEARTBEAT: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(0, String), // group_id
        from(0, INT32),  // generation_id
        from(0, String), // member_id
        from(3, String), // group_instance_id
    ],
};

const MEMBER_IDENTITY: &[Field] = &[from(3, String), from(3, String), from(5, String)]; // member_id, group_instance_id, reason

/// LeaveGroup (key 13).
pub const LEAVE_GROUP: Shape = Shape {
    flexible_since: 4,
    fields: &[
        from(0, String),                   // group_id
        between(0, 2, String),             // member_id
        from(3, Structs(MEMBER_IDENTITY)), // members
    ],
};

const OFFSET_COMMIT_PARTITION: &[Field] = &[
    from(0, INT32),       // partition_index
    from(0, INT64),       // committed_offset
    from(6, INT32),       // committed_leader_epoch
    between(1, 1, INT64), // commit_timestamp
    from(0, String),      // committed_metadata
];
const OFFSET_COMMIT_TOPIC: &[Field] = &[from(0, String), from(0, Structs(OFFSET_COMMIT_PARTITION))];

/// OffsetCommit (key 8).
pub const OFFSET_COMMIT: Shape = Shape {
    flexible_since: 8,
    fields: &[
        from(0, String),                       // group_id
        from(1, INT32),                        // generation_id_or_member_epoch
        from(1, String),                       // member_id
        from(7, String),                       // group_instance_id
        between(2, 4, INT64),                  // retention_time_ms
        from(0, Structs(OFFSET_COMMIT_TOPIC)), // topics
    ],
};

const OFFSET_FETCH_TOPIC: &[Field] = &[from(0, String), from(0, Scalars(4))]; // name, partition_indexes
const OFFSET_FETCH_GROUP: &[Field] = &[
    from(8, String),                      // group_id
    from(9, String),                      // member_id
    from(9, INT32),                       // member_epoch
    from(8, Structs(OFFSET_FETCH_TOPIC)), // topics (null: all)
];

/// OffsetFetch (key 9).
pub const OFFSET_FETCH: Shape = Shape {
    flexible_since: 6,
    fields: &[
        between(0, 7, String),                      // group_id
        between(0, 7, Structs(OFFSET_FETCH_TOPIC)), // topics (null: all)
        from(8, Structs(OFFSET_FETCH_GROUP)),       // groups
        from(7, BOOL),                              // require_stable
    ],
};

/// ListGroups (key 16).
pub const LIST_GROUPS: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(4, Strings), // states_filter
        from(5, Strings), // types_filter
    ],
};

/// DescribeGroups (key 15).
pub const DESCRIBE_GROUPS: Shape = Shape {
    flexible_since: 5,
    fields: &[
        from(0, Strings), // groups
        from(3, BOOL),    // include_authorized_operations
    ],
};

/// DeleteGroups (key 42).
pub const DELETE_GROUPS: Shape = Shape {
    flexible_since: 2,
    fields: &[from(0, Strings)], // groups_names
};

const OFFSET_DELETE_TOPIC: &[Field] = &[from(0, String), from(0, Structs(&[from(0, INT32)]))];

/// OffsetDelete (key 47).
pub const OFFSET_DELETE: Shape = Shape {
    flexible_since: i16::MAX,
    fields: &[
        from(0, String),                       // group_id
        from(0, Structs(OFFSET_DELETE_TOPIC)), // topics
    ],
};

/// InitProducerId (key 22).
pub const INIT_PRODUCER_ID: Shape = Shape {
    flexible_since: 2,
    fields: &[
        from(0, String),   // transactional_id
        from(0, INT32),    // transaction_timeout_ms
        from(3, INT64),    // producer_id
        from(3, Fixed(2)), // producer_epoch
    ],
};

const TXN_TOPIC: &[Field] = &[from(0, String), from(0, Scalars(4))]; // name, partitions

/// AddPartitionsToTxn (key 24), the client versions (v0-v3); v4+ is walked too, so a
/// request of those versions is refused as unsupported, not as malformed.
pub const ADD_PARTITIONS_TO_TXN: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(
            4,
            Structs(&[
                from(0, String),             // transactional_id
                from(0, INT64),              // producer_id
                from(0, INT16),              // producer_epoch
                from(0, BOOL),               // verify_only
                from(0, Structs(TXN_TOPIC)), // topics
            ]),
        ), // transactions
        between(0, 3, String),             // v3_and_below_transactional_id
        between(0, 3, INT64),              // v3_and_below_producer_id
        between(0, 3, INT16),              // v3_and_below_producer_epoch
        between(0, 3, Structs(TXN_TOPIC)), // v3_and_below_topics
    ],
};

/// AddOffsetsToTxn (key 25).
pub const ADD_OFFSETS_TO_TXN: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(0, String), // transactional_id
        from(0, INT64),  // producer_id
        from(0, INT16),  // producer_epoch
        from(0, String), // group_id
    ],
};

/// EndTxn (key 26).
pub const END_TXN: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(0, String), // transactional_id
        from(0, INT64),  // producer_id
        from(0, INT16),  // producer_epoch
        from(0, BOOL),   // committed
    ],
};

const TXN_COMMIT_PARTITION: &[Field] = &[
    from(0, INT32),  // partition_index
    from(0, INT64),  // committed_offset
    from(2, INT32),  // committed_leader_epoch
    from(0, String), // committed_metadata
];
const TXN_COMMIT_TOPIC: &[Field] = &[from(0, String), from(0, Structs(TXN_COMMIT_PARTITION))];

/// TxnOffsetCommit (key 28).
pub const TXN_OFFSET_COMMIT: Shape = Shape {
    flexible_since: 3,
    fields: &[
        from(0, String),                    // transactional_id
        from(0, String),                    // group_id
        from(0, INT64),                     // producer_id
        from(0, INT16),                     // producer_epoch
        from(3, INT32),                     // generation_id
        from(3, String),                    // member_id
        from(3, String),                    // group_instance_id
        from(0, Structs(TXN_COMMIT_TOPIC)), // topics
    ],
};

/// DescribeTransactions (key 65).
pub const DESCRIBE_TRANSACTIONS: Shape = Shape {
    flexible_since: 0,
    fields: &[from(0, Strings)], // transactional_ids
};

/// ListTransactions (key 66).
pub const LIST_TRANSACTIONS: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, Strings),    // state_filters
        from(0, Scalars(8)), // producer_id_filters
        from(1, INT64),      // duration_filter
        from(2, String),     // transactional_id_pattern
    ],
};

const UUID: super::Kind = Fixed(16);
const OWNED_PARTITIONS: &[Field] = &[from(0, UUID), from(0, Scalars(4))]; // topic_id, partitions

/// ConsumerGroupHeartbeat (key 68, KIP-848).
pub const CONSUMER_GROUP_HEARTBEAT: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),                    // group_id
        from(0, String),                    // member_id
        from(0, INT32),                     // member_epoch
        from(0, String),                    // instance_id
        from(0, String),                    // rack_id
        from(0, INT32),                     // rebalance_timeout_ms
        from(0, Strings),                   // subscribed_topic_names
        from(1, String),                    // subscribed_topic_regex
        from(0, String),                    // server_assignor
        from(0, Structs(OWNED_PARTITIONS)), // topic_partitions
    ],
};

/// ConsumerGroupDescribe (key 69, KIP-848).
pub const CONSUMER_GROUP_DESCRIBE: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, Strings), // group_ids
        from(0, BOOL),    // include_authorized_operations
    ],
};
