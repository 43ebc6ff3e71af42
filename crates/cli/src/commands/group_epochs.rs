//! What `spool group describe` adds for a group of the consumer protocol (KIP-848):
//! its epochs, its assignor, and each member's epoch, protocol and target
//! assignment, from ConsumerGroupDescribe, which librdkafka's binding does not send.
//! The request goes to the group's coordinator (FindCoordinator first).

use std::collections::BTreeMap;

use kafka_protocol::messages::consumer_group_describe_response::Assignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{connect, error_name};

/// Kafka's error code for a group of the classic protocol (or none).
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A consumer-protocol group's epochs and members.
#[derive(Debug, Serialize)]
pub(crate) struct ConsumerView {
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) assignor: String,
    pub(crate) members: Vec<ConsumerMemberView>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ConsumerMemberView {
    pub(crate) member_id: String,
    pub(crate) member_epoch: i32,
    /// `consumer`, or `classic` for a member of the classic protocol in a group
    /// being migrated.
    pub(crate) protocol: String,
    /// What the broker's assignor means it to have (it has `assignment` now).
    pub(crate) target: BTreeMap<String, Vec<i32>>,
}

/// The group's view from ConsumerGroupDescribe; `None` for a classic group (or a
/// broker that does not speak the consumer protocol).
pub(crate) async fn consumer_view(
    client: &ClientArgs,
    group: &str,
) -> Result<Option<ConsumerView>, CliError> {
    let (mut connection, _) = connect(client, "describe the group").await?;
    let request = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![StrBytes::from_string(group.to_owned())]);
    let found: FindCoordinatorResponse = connection.call(request, 4).await?;
    let Some(coordinator) = found.coordinators.first() else {
        return Err(CliError::Failed(format!(
            "no coordinator found for group {group}"
        )));
    };
    if coordinator.error_code != 0 {
        return Err(CliError::Failed(format!(
            "finding the coordinator of group {group}: {}",
            error_name(coordinator.error_code)
        )));
    }
    let at_coordinator = ClientArgs {
        brokers: format!("{}:{}", coordinator.host.as_str(), coordinator.port),
        ..client.clone()
    };
    let (mut connection, _) = connect(&at_coordinator, "describe the group").await?;
    let Ok(version) = connection
        .version_of(ApiKey::ConsumerGroupDescribe, 0..=1)
        .await
    else {
        return Ok(None);
    };
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(StrBytes::from_string(group.to_owned()))]);
    let answer: ConsumerGroupDescribeResponse = connection.call(request, version).await?;
    let Some(described) = answer.groups.into_iter().next() else {
        return Ok(None);
    };
    match described.error_code {
        0 => {}
        GROUP_ID_NOT_FOUND => return Ok(None),
        code => {
            return Err(CliError::Failed(format!(
                "describing group {group}: {}",
                error_name(code)
            )));
        }
    }
    let members = described
        .members
        .into_iter()
        .map(|member| ConsumerMemberView {
            member_id: member.member_id.to_string(),
            member_epoch: member.member_epoch,
            protocol: if member.member_type == 0 {
                "classic"
            } else {
                "consumer"
            }
            .to_owned(),
            target: by_name(&member.target_assignment),
        })
        .collect();
    Ok(Some(ConsumerView {
        group_epoch: described.group_epoch,
        assignment_epoch: described.assignment_epoch,
        assignor: described.assignor_name.to_string(),
        members,
    }))
}

fn by_name(assignment: &Assignment) -> BTreeMap<String, Vec<i32>> {
    assignment
        .topic_partitions
        .iter()
        .map(|topic| (topic.topic_name.0.to_string(), topic.partitions.clone()))
        .collect()
}
