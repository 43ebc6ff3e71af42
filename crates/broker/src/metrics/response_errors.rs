//! The error codes a response carries, for `spool_request_errors_total`: each
//! top-level, topic, partition or member code that is not `NONE` counts once, as
//! Kafka's `ErrorsPerSec` counts them. Per partition, never per record.

use kafka_protocol::messages::ResponseKind;

/// Calls `count` with each non-zero error code in `response`.
pub(crate) fn each_error(response: &ResponseKind, mut count: impl FnMut(i16)) {
    let mut note = |code: i16| {
        if code != 0 {
            count(code);
        }
    };
    match response {
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .for_each(|p| note(p.error_code)),
        ResponseKind::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| note(p.error_code)),
        ResponseKind::Metadata(r) => {
            note(r.error_code);
            for topic in &r.topics {
                note(topic.error_code);
                topic.partitions.iter().for_each(|p| note(p.error_code));
            }
        }
        ResponseKind::CreateTopics(r) => r.topics.iter().for_each(|t| note(t.error_code)),
        ResponseKind::DeleteTopics(r) => r.responses.iter().for_each(|t| note(t.error_code)),
        ResponseKind::DeleteRecords(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| note(p.error_code)),
        ResponseKind::CreatePartitions(r) => r.results.iter().for_each(|t| note(t.error_code)),
        ResponseKind::DescribeConfigs(r) => r.results.iter().for_each(|c| note(c.error_code)),
        ResponseKind::AlterConfigs(r) => r.responses.iter().for_each(|c| note(c.error_code)),
        ResponseKind::IncrementalAlterConfigs(r) => {
            r.responses.iter().for_each(|c| note(c.error_code));
        }
        ResponseKind::FindCoordinator(r) => {
            note(r.error_code);
            r.coordinators.iter().for_each(|c| note(c.error_code));
        }
        ResponseKind::JoinGroup(r) => note(r.error_code),
        ResponseKind::SyncGroup(r) => note(r.error_code),
        ResponseKind::Heartbeat(r) => note(r.error_code),
        ResponseKind::LeaveGroup(r) => {
            note(r.error_code);
            r.members.iter().for_each(|m| note(m.error_code));
        }
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| note(p.error_code)),
        ResponseKind::OffsetFetch(r) => {
            note(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| note(p.error_code));
            for group in &r.groups {
                note(group.error_code);
                group
                    .topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .for_each(|p| note(p.error_code));
            }
        }
        ResponseKind::ListGroups(r) => note(r.error_code),
        ResponseKind::DescribeGroups(r) => r.groups.iter().for_each(|g| note(g.error_code)),
        ResponseKind::DeleteGroups(r) => r.results.iter().for_each(|g| note(g.error_code)),
        ResponseKind::OffsetDelete(r) => {
            note(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| note(p.error_code));
        }
        ResponseKind::OffsetForLeaderEpoch(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| note(p.error_code)),
        ResponseKind::InitProducerId(r) => note(r.error_code),
        ResponseKind::AddPartitionsToTxn(r) => {
            note(r.error_code);
            let topics = r
                .results_by_transaction
                .iter()
                .flat_map(|t| &t.topic_results)
                .chain(&r.results_by_topic_v3_and_below);
            topics
                .flat_map(|t| &t.results_by_partition)
                .for_each(|p| note(p.partition_error_code));
        }
        ResponseKind::AddOffsetsToTxn(r) => note(r.error_code),
        ResponseKind::EndTxn(r) => note(r.error_code),
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| note(p.error_code)),
        ResponseKind::DescribeTransactions(r) => {
            r.transaction_states.iter().for_each(|t| note(t.error_code));
        }
        ResponseKind::ListTransactions(r) => note(r.error_code),
        // ApiVersions (answered with NONE or a version list) and anything not sent.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::{HeartbeatResponse, ProduceResponse};

    use super::*;

    fn codes(response: &ResponseKind) -> Vec<i16> {
        let mut seen = Vec::new();
        each_error(response, |code| seen.push(code));
        seen
    }

    #[test]
    fn every_failed_partition_counts_and_successes_do_not() {
        let partition = |code| PartitionProduceResponse::default().with_error_code(code);
        let response = ProduceResponse::default().with_responses(vec![
            TopicProduceResponse::default().with_partition_responses(vec![
                partition(0),
                partition(3),
                partition(6),
            ]),
            TopicProduceResponse::default().with_partition_responses(vec![partition(3)]),
        ]);
        assert_eq!(codes(&ResponseKind::Produce(response)), vec![3, 6, 3]);
    }

    #[test]
    fn a_top_level_code_counts() {
        let response = HeartbeatResponse::default().with_error_code(27);
        assert_eq!(codes(&ResponseKind::Heartbeat(response)), vec![27]);
        let fine = HeartbeatResponse::default();
        assert!(codes(&ResponseKind::Heartbeat(fine)).is_empty());
    }
}
