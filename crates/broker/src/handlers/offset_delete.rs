//! OffsetDelete (key 47): removes a group's committed offsets of some partitions,
//! refused (`GROUP_SUBSCRIBED_TO_TOPIC`) for topics its members consume.

use std::sync::Arc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};

use super::ApiDecl;
use crate::errors::{group_error_code, group_result_code};
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetDelete,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(request: OffsetDeleteRequest, shared: Arc<Shared>) -> ResponseKind {
    let group = request.group_id.0.as_str();
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    let subscriptions: Vec<Option<Vec<String>>> = shared
        .groups
        .member_metadata(group)
        .iter()
        .map(|metadata| subscribed_topics(metadata))
        .collect();
    // A member whose subscription cannot be read may consume anything.
    let subscribed = |topic: &str| {
        subscriptions.iter().any(|s| {
            s.as_ref()
                .is_none_or(|topics| topics.iter().any(|t| t == topic))
        })
    };
    let outcome = shared
        .groups
        .delete_offsets(group, &partitions, subscribed)
        .await;
    let mut results = match &outcome {
        Ok(results) => results.clone(),
        Err(_) => Vec::new(),
    }
    .into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(results.next().map_or(0, group_result_code))
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    let error = outcome.err().map_or(0, group_error_code);
    ResponseKind::OffsetDelete(
        OffsetDeleteResponse::default()
            .with_error_code(error)
            .with_topics(topics),
    )
}

/// The topics of a consumer's subscription metadata (`ConsumerProtocolSubscription`:
/// int16 version, then an array of topic names), read with bounds checks because a
/// client wrote it; `None` if it is not that format.
fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut rest = metadata.get(2..)?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
        rest = tail;
        Some(head)
    };
    let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
    let mut topics = Vec::new();
    for _ in 0..count.max(0) {
        let len = i16::from_be_bytes(take(2)?.try_into().ok()?);
        let name = take(usize::try_from(len).ok()?)?;
        topics.push(String::from_utf8(name.to_vec()).ok()?);
    }
    Some(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_are_read_within_their_bytes() {
        let mut metadata = vec![0, 1, 0, 0, 0, 2];
        for topic in ["orders", "payments"] {
            metadata.extend_from_slice(&i16::try_from(topic.len()).unwrap().to_be_bytes());
            metadata.extend_from_slice(topic.as_bytes());
        }
        metadata.extend_from_slice(&[0, 0, 0, 0]); // user data, ignored
        assert_eq!(
            subscribed_topics(&metadata),
            Some(vec!["orders".to_owned(), "payments".to_owned()])
        );
        assert_eq!(
            subscribed_topics(&[0, 1, 0x7f, 0xff, 0xff, 0xff]),
            None,
            "count past the end"
        );
        assert_eq!(subscribed_topics(&metadata[..9]), None);
    }
}
