//! `spool group describe` of a share group (KIP-932): its members and assignments
//! from ShareGroupDescribe and its partitions' start offsets from
//! DescribeShareGroupOffsets (both from the group's coordinator, which librdkafka's
//! binding does not ask), and the records in flight and the lag from the admin API
//! when it can be reached.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::{
    ApiKey, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{Connection, connect, error_name};
use crate::output;

/// Kafka's error code for a group that is not a share group (or none).
const GROUP_ID_NOT_FOUND: i16 = 69;

#[derive(Debug, Serialize)]
pub(crate) struct ShareView {
    group: String,
    group_type: &'static str,
    state: String,
    epoch: i32,
    members: Vec<ShareMemberView>,
    partitions: Vec<SharePartitionView>,
    /// Why the records in flight are not shown, when they are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    in_flight_unknown: Option<String>,
}

#[derive(Debug, Serialize)]
struct ShareMemberView {
    member_id: String,
    client_id: String,
    host: String,
    epoch: i32,
    assignment: BTreeMap<String, Vec<i32>>,
}

#[derive(Debug, Serialize)]
struct SharePartitionView {
    topic: String,
    partition: i32,
    start_offset: i64,
    /// From the admin API (absent when it cannot be reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    in_flight: Option<InFlight>,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct InFlight {
    acquired: u64,
    available: u64,
    archived: u64,
    lag: Option<i64>,
}

/// The share group `group`; `None` when it is not one (or the broker has no share
/// groups).
pub(crate) async fn share_view(
    client: &ClientArgs,
    group: &str,
    admin_url: Option<&str>,
) -> Result<Option<ShareView>, CliError> {
    let mut connection = at_coordinator(client, group).await?;
    let Ok(version) = connection
        .version_of(ApiKey::ShareGroupDescribe, 1..=1)
        .await
    else {
        return Ok(None);
    };
    let id = GroupId(StrBytes::from_string(group.to_owned()));
    let request = ShareGroupDescribeRequest::default().with_group_ids(vec![id.clone()]);
    let answer: ShareGroupDescribeResponse = connection.call(request, version).await?;
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
        .map(|m| ShareMemberView {
            member_id: m.member_id.to_string(),
            client_id: m.client_id.to_string(),
            host: m.client_host.to_string(),
            epoch: m.member_epoch,
            assignment: m
                .assignment
                .topic_partitions
                .iter()
                .map(|t| (t.topic_name.0.to_string(), t.partitions.clone()))
                .collect(),
        })
        .collect();
    let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(id)
            .with_topics(None),
    ]);
    let offsets: DescribeShareGroupOffsetsResponse = connection.call(request, 0).await?;
    let (in_flight, in_flight_unknown) = match in_flight(client, group, admin_url) {
        Ok(known) => (known, None),
        Err(why) => (BTreeMap::new(), Some(why)),
    };
    let mut partitions = Vec::new();
    for topic in offsets.groups.into_iter().flat_map(|g| g.topics) {
        for p in &topic.partitions {
            let name = topic.topic_name.0.to_string();
            partitions.push(SharePartitionView {
                in_flight: in_flight.get(&(name.clone(), p.partition_index)).copied(),
                topic: name,
                partition: p.partition_index,
                start_offset: p.start_offset,
            });
        }
    }
    Ok(Some(ShareView {
        group: group.to_owned(),
        group_type: "share",
        state: described.group_state.to_string(),
        epoch: described.group_epoch,
        members,
        partitions,
        in_flight_unknown,
    }))
}

async fn at_coordinator(client: &ClientArgs, group: &str) -> Result<Connection, CliError> {
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
    let at = ClientArgs {
        brokers: format!("{}:{}", coordinator.host.as_str(), coordinator.port),
        ..client.clone()
    };
    Ok(connect(&at, "describe the group").await?.0)
}

/// The records in flight per partition, from the admin API.
fn in_flight(
    client: &ClientArgs,
    group: &str,
    admin_url: Option<&str>,
) -> Result<BTreeMap<(String, i32), InFlight>, String> {
    let url = crate::admin_api::admin_url(admin_url, &client.brokers);
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(client.timeout().min(Duration::from_secs(5))))
        .build()
        .new_agent();
    let address = format!("{url}/api/groups/{group}");
    let body = agent
        .get(&address)
        .call()
        .map_err(|error| format!("{address}: {error}"))?
        .body_mut()
        .read_to_string()
        .map_err(|error| format!("{address}: {error}"))?;
    let detail: serde_json::Value =
        serde_json::from_str(&body).map_err(|error| format!("{address}: {error}"))?;
    Ok(detail["share_partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let key = (
                p["topic"].as_str()?.to_owned(),
                i32::try_from(p["partition"].as_i64()?).ok()?,
            );
            let counts = InFlight {
                acquired: p["acquired"].as_u64()?,
                available: p["available"].as_u64()?,
                archived: p["archived"].as_u64()?,
                lag: p["lag"].as_i64(),
            };
            Some((key, counts))
        })
        .collect())
}

pub(crate) fn print(view: &ShareView) {
    println!("GROUP      {}", view.group);
    println!("TYPE       share");
    println!("STATE      {}", view.state);
    println!("EPOCH      {}", view.epoch);
    println!("MEMBERS    {}", view.members.len());
    let lag: i64 = view
        .partitions
        .iter()
        .filter_map(|p| p.in_flight?.lag)
        .sum();
    println!("TOTAL-LAG  {lag}");
    output::heading("MEMBERS");
    let mut members = output::table(["MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"]);
    for m in &view.members {
        members.add_row([
            m.member_id.clone(),
            m.client_id.clone(),
            m.host.clone(),
            m.epoch.to_string(),
            super::group::partitions_text(&m.assignment),
        ]);
    }
    output::print_table(&members, "none");
    output::heading("PARTITIONS");
    let mut partitions = output::table([
        "TOPIC",
        "PARTITION",
        "START-OFFSET",
        "ACQUIRED",
        "AVAILABLE",
        "ARCHIVED",
        "LAG",
    ]);
    let shown = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    for p in &view.partitions {
        partitions.add_row([
            p.topic.clone(),
            p.partition.to_string(),
            p.start_offset.to_string(),
            shown(p.in_flight.map(|f| f.acquired)),
            shown(p.in_flight.map(|f| f.available)),
            shown(p.in_flight.map(|f| f.archived)),
            p.in_flight
                .and_then(|f| f.lag)
                .map_or_else(|| "?".to_owned(), |lag| lag.to_string()),
        ]);
    }
    output::print_table(&partitions, "none");
    if let Some(why) = &view.in_flight_unknown {
        println!("(records in flight unknown: the admin API did not answer: {why})");
    }
}
