//! OffsetFetch (key 9): a group's committed offsets (-1 where none), for the listed
//! partitions or all of them; v8+ asks for several groups at once. A client that
//! requires stable offsets (v7+, read_committed consumers) gets
//! `UNSTABLE_OFFSET_COMMIT` for a partition whose offset an open transaction commits,
//! and retries.

use std::sync::Arc;

use std::collections::BTreeMap;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    ApiKey, OffsetFetchRequest, OffsetFetchResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_coordinator::GroupError;
use spool_metadata::CommittedOffset;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code};
use crate::shared::Shared;
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

/// v9 is the new (KIP-848) consumer protocol's; not implemented.
pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetFetch,
    // Below v1: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 9,
};

/// One partition's answer: (offset, leader epoch, metadata, error).
type Found = (i64, i32, String, i16);

pub(crate) async fn handle(
    request: OffsetFetchRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in request.groups {
            // v9: a member of a consumer-protocol group names itself and its epoch
            // (checked once the group may be described, so that the answer tells an
            // outsider nothing of its members).
            let member = group.member_id.as_ref().map(|id| id.as_str());
            let group_id = group.group_id.0.as_str();
            let refusal = if access.group(Operation::Describe, group_id) {
                shared
                    .groups()
                    .check_offset_fetch_member(group_id, member, group.member_epoch)
                    .err()
                    .map(group_error_code)
            } else {
                Some(code::GROUP_AUTHORIZATION_FAILED)
            };
            if let Some(error) = refusal {
                groups.push(
                    OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(error),
                );
                continue;
            }
            let wanted = group.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| (t.name, t.partition_indexes))
                    .collect()
            });
            let found = match lookup(
                shared,
                access,
                group.group_id.0.as_str(),
                wanted,
                request.require_stable,
            )
            .await
            {
                Ok(found) => found,
                Err(error) => {
                    groups.push(
                        OffsetFetchResponseGroup::default()
                            .with_group_id(group.group_id)
                            .with_error_code(error),
                    );
                    continue;
                }
            };
            let topics = found
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetFetchResponseTopics::default()
                        .with_name(name)
                        .with_partitions(
                            partitions
                                .into_iter()
                                .map(|(index, (offset, epoch, metadata, error))| {
                                    OffsetFetchResponsePartitions::default()
                                        .with_partition_index(index)
                                        .with_committed_offset(offset)
                                        .with_committed_leader_epoch(epoch)
                                        .with_metadata(Some(StrBytes::from_string(metadata)))
                                        .with_error_code(error)
                                })
                                .collect(),
                        )
                })
                .collect();
            groups.push(
                OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_topics(topics),
            );
        }
        return ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_groups(groups));
    }
    let wanted = request.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name, t.partition_indexes))
            .collect()
    });
    let asked: Vec<(TopicName, Vec<i32>)> = wanted.clone().unwrap_or_default();
    let require_stable = version >= 7 && request.require_stable;
    let group = request.group_id.0.as_str();
    let found = match lookup(shared, access, group, wanted, require_stable).await {
        Ok(found) => found,
        Err(error) => return refused(version, asked, error),
    };
    let topics = found
        .into_iter()
        .map(|(name, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(name)
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, (offset, epoch, metadata, error))| {
                            let partition = OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(offset)
                                .with_metadata(Some(StrBytes::from_string(metadata)))
                                .with_error_code(error);
                            if version >= 5 {
                                partition.with_committed_leader_epoch(epoch)
                            } else {
                                partition
                            }
                        })
                        .collect(),
                )
        })
        .collect();
    ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_topics(topics))
}

/// The committed offsets of `wanted` partitions (by topic), or of all partitions
/// the group has committed when `None`; or the group's error code. The group needs
/// DESCRIBE; a topic without it is left out of "all" and refused when named.
async fn lookup(
    shared: &Shared,
    access: &Access,
    group: &str,
    wanted: Option<Vec<(TopicName, Vec<i32>)>>,
    require_stable: bool,
) -> Result<Vec<(TopicName, Vec<(i32, Found)>)>, i16> {
    if !access.group(Operation::Describe, group) {
        return Err(code::GROUP_AUTHORIZATION_FAILED);
    }
    let mut all = shared
        .groups()
        .fetch_committed(group, None)
        .await
        .map_err(group_error_code)?;
    let unstable = if require_stable {
        unstable_partitions(shared, group)
            .await
            .map_err(group_error_code)?
    } else {
        Vec::new()
    };
    // A pending offset of a partition with none committed is answered too.
    for (topic, partition) in &unstable {
        if !all
            .iter()
            .any(|o| o.partition == *partition && &o.topic == topic)
        {
            all.push(CommittedOffset {
                group: group.to_owned(),
                topic: topic.clone(),
                topic_id: uuid::Uuid::nil(),
                partition: *partition,
                offset: -1,
                leader_epoch: -1,
                metadata: None,
                commit_ms: 0,
            });
        }
    }
    all.retain(|offset| access.topic(Operation::Describe, &offset.topic));
    let found = |o: &CommittedOffset| -> Found {
        if unstable.contains(&(o.topic.clone(), o.partition)) {
            return (-1, -1, String::new(), code::UNSTABLE_OFFSET_COMMIT);
        }
        (
            o.offset,
            o.leader_epoch,
            o.metadata.clone().unwrap_or_default(),
            code::NONE,
        )
    };
    Ok(match wanted {
        None => {
            let mut by_topic: BTreeMap<String, Vec<(i32, Found)>> = BTreeMap::new();
            for offset in all {
                by_topic
                    .entry(offset.topic.clone())
                    .or_default()
                    .push((offset.partition, found(&offset)));
            }
            by_topic
                .into_iter()
                .map(|(topic, partitions)| (TopicName(StrBytes::from_string(topic)), partitions))
                .collect()
        }
        Some(topics) => topics
            .into_iter()
            .map(|(name, partitions)| {
                let committed: BTreeMap<i32, Found> = all
                    .iter()
                    .filter(|o| o.topic == name.0.as_str())
                    .map(|o| (o.partition, found(o)))
                    .collect();
                let none = if access.topic(Operation::Describe, name.0.as_str()) {
                    code::NONE
                } else {
                    code::TOPIC_AUTHORIZATION_FAILED
                };
                let answers = partitions
                    .into_iter()
                    .map(|index| {
                        let hit = committed.get(&index).cloned();
                        (index, hit.unwrap_or((-1, -1, String::new(), none)))
                    })
                    .collect();
                (name, answers)
            })
            .collect(),
    })
}

/// The partitions (topic name, index) with offsets of `group` pending in an open
/// transaction.
async fn unstable_partitions(
    shared: &Shared,
    group: &str,
) -> Result<Vec<(String, i32)>, GroupError> {
    let pending = shared
        .metadata()
        .pending_txn_offsets(group)
        .await
        .map_err(|error| {
            tracing::error!(group, %error, "reading a group's pending offsets failed");
            GroupError::StorageFailed
        })?;
    Ok(pending
        .into_iter()
        .filter_map(|(topic_id, partition)| {
            let topic = shared.topics().by_id(topic_id)?;
            Some((topic.record.name.to_string(), partition))
        })
        .collect())
}

/// A v1–v7 answer refusing the group: the error at the top (v2+) and on every
/// partition asked for (v1 has no top-level error).
fn refused(version: i16, asked: Vec<(TopicName, Vec<i32>)>, error: i16) -> ResponseKind {
    let topics = asked
        .into_iter()
        .map(|(name, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(name)
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|index| {
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(-1)
                                .with_error_code(error)
                        })
                        .collect(),
                )
        })
        .collect();
    let response = OffsetFetchResponse::default().with_topics(topics);
    ResponseKind::OffsetFetch(if version >= 2 {
        response.with_error_code(error)
    } else {
        response
    })
}
