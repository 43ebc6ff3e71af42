//! The shapes of the share-group requests (KIP-932): all flexible, all from v1 (the
//! early-access v0 of Kafka 4.0 is gone).

use super::Kind::{Fixed, Scalars, String, Strings, Structs};
use super::{Field, Shape, from};

const BOOL: super::Kind = Fixed(1);
const INT32: super::Kind = Fixed(4);
const INT64: super::Kind = Fixed(8);
const UUID: super::Kind = Fixed(16);

/// ShareGroupHeartbeat (key 76).
pub const SHARE_GROUP_HEARTBEAT: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),  // group_id
        from(0, String),  // member_id
        from(0, INT32),   // member_epoch
        from(0, String),  // rack_id
        from(0, Strings), // subscribed_topic_names
    ],
};

/// ShareGroupDescribe (key 77).
pub const SHARE_GROUP_DESCRIBE: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, Strings), // group_ids
        from(0, BOOL),    // include_authorized_operations
    ],
};

const ACKNOWLEDGEMENT_BATCH: &[Field] = &[
    from(0, INT64),      // first_offset
    from(0, INT64),      // last_offset
    from(0, Scalars(1)), // acknowledge_types
];
const FETCH_PARTITION: &[Field] = &[
    from(0, INT32),                          // partition_index
    from(0, Structs(ACKNOWLEDGEMENT_BATCH)), // acknowledgement_batches
];
const FETCH_TOPIC: &[Field] = &[from(0, UUID), from(0, Structs(FETCH_PARTITION))];
const FORGOTTEN_TOPIC: &[Field] = &[from(0, UUID), from(0, Scalars(4))];

/// ShareFetch (key 78).
pub const SHARE_FETCH: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),                   // group_id
        from(0, String),                   // member_id
        from(0, INT32),                    // share_session_epoch
        from(0, INT32),                    // max_wait_ms
        from(0, INT32),                    // min_bytes
        from(0, INT32),                    // max_bytes
        from(0, INT32),                    // max_records
        from(0, INT32),                    // batch_size
        from(0, Structs(FETCH_TOPIC)),     // topics
        from(0, Structs(FORGOTTEN_TOPIC)), // forgotten_topics_data
    ],
};

const ACKNOWLEDGE_PARTITION: &[Field] = &[
    from(0, INT32),                          // partition_index
    from(0, Structs(ACKNOWLEDGEMENT_BATCH)), // acknowledgement_batches
];
const ACKNOWLEDGE_TOPIC: &[Field] = &[from(0, UUID), from(0, Structs(ACKNOWLEDGE_PARTITION))];

/// ShareAcknowledge (key 79).
pub const SHARE_ACKNOWLEDGE: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),                     // group_id
        from(0, String),                     // member_id
        from(0, INT32),                      // share_session_epoch
        from(0, Structs(ACKNOWLEDGE_TOPIC)), // topics
    ],
};

const OFFSETS_TOPIC: &[Field] = &[from(0, String), from(0, Scalars(4))]; // topic_name, partitions
const OFFSETS_GROUP: &[Field] = &[from(0, String), from(0, Structs(OFFSETS_TOPIC))]; // group_id, topics

/// DescribeShareGroupOffsets (key 90).
pub const DESCRIBE_SHARE_GROUP_OFFSETS: Shape = Shape {
    flexible_since: 0,
    fields: &[from(0, Structs(OFFSETS_GROUP))], // groups
};

const ALTER_PARTITION: &[Field] = &[from(0, INT32), from(0, INT64)]; // partition_index, start_offset
const ALTER_TOPIC: &[Field] = &[from(0, String), from(0, Structs(ALTER_PARTITION))]; // topic_name, partitions

/// AlterShareGroupOffsets (key 91).
pub const ALTER_SHARE_GROUP_OFFSETS: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),               // group_id
        from(0, Structs(ALTER_TOPIC)), // topics
    ],
};

const DELETE_TOPIC: &[Field] = &[from(0, String)]; // topic_name

/// DeleteShareGroupOffsets (key 92).
pub const DELETE_SHARE_GROUP_OFFSETS: Shape = Shape {
    flexible_since: 0,
    fields: &[
        from(0, String),                // group_id
        from(0, Structs(DELETE_TOPIC)), // topics
    ],
};
