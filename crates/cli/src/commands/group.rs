//! `spool group`: list, describe (members, assignments, lag), delete, and seek (move a
//! group's committed offsets while it has no members).

use std::collections::BTreeMap;

use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;
use spool_protocol::consumer_protocol::assigned_partitions;
use spool_views::lanes::split_group;

use crate::client::{CliConsumer, ClientArgs};
use crate::commands::consume::{Start, parse_start};
use crate::commands::group_epochs::{ConsumerView, consumer_view};
use crate::commands::group_share::{self, share_view};
use crate::commands::topic;
use crate::error::CliError;
use crate::output::{self, Format, OutcomeKind};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum GroupCommand {
    /// List consumer groups.
    List,
    /// Show a group's members, assignments, committed offsets and lag (a share
    /// group's start offsets and records in flight).
    Describe {
        group: String,
        /// The broker's HTTP admin API, for a share group's records in flight;
        /// default: the first bootstrap broker's host, port 9644.
        #[arg(long, env = "SPOOL_ADMIN_URL", value_name = "URL")]
        admin_url: Option<String>,
    },
    /// Delete groups (they must have no members).
    Delete {
        #[arg(required = true)]
        groups: Vec<String>,
    },
    /// Move a group's committed offsets; the group must have no members.
    Seek {
        group: String,
        /// Where to: `beginning`, `end`, an offset, or `@TIMESTAMP` in ms.
        #[arg(long, value_parser = parse_start)]
        to: Start,
        /// Only these topics (repeatable) [default: the topics the group has offsets for].
        #[arg(short, long = "topic")]
        topics: Vec<String>,
        /// Show what would change without committing.
        #[arg(long)]
        dry_run: bool,
    },
}

pub(crate) async fn run(command: GroupCommand, client: &ClientArgs) -> Result<(), CliError> {
    match command {
        GroupCommand::List => list(client),
        GroupCommand::Describe { group, admin_url } => {
            describe(client, &group, admin_url.as_deref()).await
        }
        GroupCommand::Delete { groups } => delete(client, &groups).await,
        GroupCommand::Seek {
            group,
            to,
            topics,
            dry_run,
        } => seek(client, &group, to, &topics, dry_run),
    }
}

/// A group as the cluster describes it.
#[derive(Debug, Serialize)]
struct GroupView {
    group: String,
    state: String,
    protocol_type: String,
    protocol: String,
    members: Vec<MemberView>,
}

#[derive(Debug, Serialize)]
struct MemberView {
    member_id: String,
    client_id: String,
    host: String,
    /// Topic to partitions; empty when the assignment is not the consumer protocol's.
    assignment: BTreeMap<String, Vec<i32>>,
}

/// Lists groups (all, or the one named) with their members (ListGroups and
/// DescribeGroups, through librdkafka).
fn groups(client: &ClientArgs, group: Option<&str>) -> Result<Vec<GroupView>, CliError> {
    let requester = client.requester()?;
    let list = requester
        .fetch_group_list(group, client.timeout())
        .map_err(|e| client.failed(&requester, "list groups", e))?;
    let mut views: Vec<GroupView> = list
        .groups()
        .iter()
        .map(|g| GroupView {
            group: g.name().to_string(),
            state: g.state().to_string(),
            protocol_type: g.protocol_type().to_string(),
            protocol: g.protocol().to_string(),
            members: g
                .members()
                .iter()
                .map(|m| MemberView {
                    member_id: m.id().to_string(),
                    client_id: m.client_id().to_string(),
                    host: m.client_host().to_string(),
                    assignment: m
                        .assignment()
                        .and_then(assigned_partitions)
                        .unwrap_or_default()
                        .into_iter()
                        .collect(),
                })
                .collect(),
        })
        .collect();
    views.sort_by(|a, b| a.group.cmp(&b.group));
    Ok(views)
}

#[derive(Debug, Serialize)]
struct GroupSummary {
    group: String,
    state: String,
    protocol_type: String,
    members: usize,
}

fn list(client: &ClientArgs) -> Result<(), CliError> {
    let summaries: Vec<GroupSummary> = groups(client, None)?
        .into_iter()
        .map(|g| GroupSummary {
            group: g.group,
            state: g.state,
            protocol_type: g.protocol_type,
            members: g.members.len(),
        })
        .collect();
    match client.format {
        Format::Json => output::print_json(&summaries),
        Format::Human => {
            let mut table = output::table(["GROUP", "STATE", "PROTOCOL-TYPE", "MEMBERS"]);
            for g in &summaries {
                table.add_row([
                    g.group.clone(),
                    g.state.clone(),
                    g.protocol_type.clone(),
                    g.members.to_string(),
                ]);
            }
            output::print_table(&table, "no groups");
        }
    }
    Ok(())
}

/// A committed offset and how far behind the partition's end it is.
#[derive(Debug, Serialize)]
struct PartitionLag {
    topic: String,
    partition: i32,
    committed: i64,
    high_watermark: i64,
    lag: i64,
    member: Option<String>,
}

/// The group's committed offsets over every partition of `topics` (all topics when
/// empty), with `Offset::Invalid` where it has none.
fn committed(
    client: &ClientArgs,
    consumer: &CliConsumer,
    topics: &[String],
) -> Result<TopicPartitionList, CliError> {
    let metadata = topic::metadata(client)?;
    let mut list = TopicPartitionList::new();
    let wanted: Vec<String> = if topics.is_empty() {
        metadata
            .topics()
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    } else {
        topics.to_vec()
    };
    for name in &wanted {
        for partition in topic::partition_ids(&metadata, name)? {
            list.add_partition(name, partition);
        }
    }
    if list.count() == 0 {
        return Ok(list);
    }
    consumer
        .committed_offsets(list, client.timeout())
        .map_err(|e| CliError::kafka("fetch committed offsets", e).with_brokers(&client.brokers))
}

fn lag(
    client: &ClientArgs,
    group: &str,
    members: &[MemberView],
) -> Result<Vec<PartitionLag>, CliError> {
    let consumer = client.consumer(Some(group))?;
    let committed = committed(client, &consumer, &[])?;
    let mut lags = Vec::new();
    for element in committed.elements() {
        let Offset::Offset(offset) = element.offset() else {
            continue;
        };
        let (_, high) = consumer
            .fetch_watermarks(element.topic(), element.partition(), client.timeout())
            .map_err(|e| CliError::kafka("fetch offsets", e).with_brokers(&client.brokers))?;
        let member = members.iter().find(|m| {
            m.assignment
                .get(element.topic())
                .is_some_and(|p| p.contains(&element.partition()))
        });
        lags.push(PartitionLag {
            topic: element.topic().to_string(),
            partition: element.partition(),
            committed: offset,
            high_watermark: high,
            lag: (high - offset).max(0),
            member: member.map(|m| m.member_id.clone()),
        });
    }
    lags.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(lags)
}

#[derive(Debug, Serialize)]
struct GroupDetail {
    #[serde(flatten)]
    group: GroupView,
    /// `classic`, or `consumer` (KIP-848).
    group_type: &'static str,
    /// A consumer-protocol group's epochs and members' epochs and targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer_protocol: Option<ConsumerView>,
    offsets: Vec<PartitionLag>,
    total_lag: i64,
    /// The group's parts in lanes (`G;lane=X`), each with its own members and
    /// offsets (docs/lanes.md).
    lanes: Vec<LaneDetail>,
}

/// A group's part in one lane.
#[derive(Debug, Serialize)]
struct LaneDetail {
    lane: String,
    /// Its own id: `G;lane=X`.
    group: String,
    state: String,
    members: usize,
    total_lag: i64,
}

/// The parts of `group` in lanes, among the groups the cluster lists.
fn lanes_of(client: &ClientArgs, group: &str) -> Result<Vec<LaneDetail>, CliError> {
    let mut lanes = Vec::new();
    for view in groups(client, None)? {
        let (of, Some(lane)) = split_group(&view.group) else {
            continue;
        };
        if of != group {
            continue;
        }
        let offsets = lag(client, &view.group, &view.members)?;
        lanes.push(LaneDetail {
            lane: lane.to_owned(),
            group: view.group.clone(),
            state: view.state.clone(),
            members: view.members.len(),
            total_lag: offsets.iter().map(|o| o.lag).sum(),
        });
    }
    Ok(lanes)
}

async fn describe(
    client: &ClientArgs,
    group: &str,
    admin_url: Option<&str>,
) -> Result<(), CliError> {
    if let Some(share) = share_view(client, group, admin_url).await? {
        match client.format {
            Format::Json => output::print_json(&share),
            Format::Human => group_share::print(&share),
        }
        return Ok(());
    }
    let view = groups(client, Some(group))?
        .into_iter()
        .find(|g| g.group == group)
        .ok_or_else(|| CliError::NotFound(format!("group {group} does not exist")))?;
    let offsets = lag(client, group, &view.members)?;
    if view.state == "Dead" && offsets.is_empty() {
        return Err(CliError::NotFound(format!("group {group} does not exist")));
    }
    let consumer_protocol = consumer_view(client, group).await?;
    let lanes = lanes_of(client, group)?;
    let detail = GroupDetail {
        lanes,
        total_lag: offsets.iter().map(|o| o.lag).sum(),
        group: view,
        group_type: if consumer_protocol.is_some() {
            "consumer"
        } else {
            "classic"
        },
        consumer_protocol,
        offsets,
    };
    match client.format {
        Format::Json => output::print_json(&detail),
        Format::Human => print_detail(&detail),
    }
    Ok(())
}

fn print_detail(detail: &GroupDetail) {
    let group = &detail.group;
    println!("GROUP      {}", group.group);
    println!("TYPE       {}", detail.group_type);
    println!("STATE      {}", group.state);
    println!(
        "PROTOCOL   {}",
        format!("{} {}", group.protocol_type, group.protocol).trim()
    );
    if let Some(consumer) = &detail.consumer_protocol {
        println!(
            "EPOCHS     group {}, assignment {} (assignor {})",
            consumer.group_epoch, consumer.assignment_epoch, consumer.assignor
        );
    }
    println!("MEMBERS    {}", group.members.len());
    println!("TOTAL-LAG  {}", detail.total_lag);
    output::heading("MEMBERS");
    match &detail.consumer_protocol {
        None => {
            let mut members = output::table(["MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"]);
            for m in &group.members {
                members.add_row([
                    m.member_id.clone(),
                    m.client_id.clone(),
                    m.host.clone(),
                    partitions_text(&m.assignment),
                ]);
            }
            output::print_table(&members, "none");
        }
        Some(consumer) => {
            let mut members = output::table([
                "MEMBER-ID",
                "CLIENT-ID",
                "HOST",
                "PROTOCOL",
                "EPOCH",
                "ASSIGNMENT",
                "TARGET",
            ]);
            for m in &group.members {
                let epochs = consumer.members.iter().find(|c| c.member_id == m.member_id);
                members.add_row([
                    m.member_id.clone(),
                    m.client_id.clone(),
                    m.host.clone(),
                    epochs.map(|c| c.protocol.clone()).unwrap_or_default(),
                    epochs
                        .map(|c| c.member_epoch.to_string())
                        .unwrap_or_default(),
                    partitions_text(&m.assignment),
                    epochs
                        .map(|c| partitions_text(&c.target))
                        .unwrap_or_default(),
                ]);
            }
            output::print_table(&members, "none");
        }
    }
    if !detail.lanes.is_empty() {
        output::heading("LANES");
        let mut lanes = output::table(["LANE", "GROUP", "STATE", "MEMBERS", "TOTAL-LAG"]);
        for lane in &detail.lanes {
            lanes.add_row([
                lane.lane.clone(),
                lane.group.clone(),
                lane.state.clone(),
                lane.members.to_string(),
                lane.total_lag.to_string(),
            ]);
        }
        output::print_table(&lanes, "none");
    }
    output::heading("OFFSETS");
    let mut offsets = output::table([
        "TOPIC",
        "PARTITION",
        "COMMITTED",
        "HIGH-WATERMARK",
        "LAG",
        "MEMBER-ID",
    ]);
    for o in &detail.offsets {
        offsets.add_row([
            o.topic.clone(),
            o.partition.to_string(),
            o.committed.to_string(),
            o.high_watermark.to_string(),
            o.lag.to_string(),
            o.member.clone().unwrap_or_default(),
        ]);
    }
    output::print_table(&offsets, "none");
}

/// `topic[0,1] other[3]`.
pub(super) fn partitions_text(assignment: &BTreeMap<String, Vec<i32>>) -> String {
    assignment
        .iter()
        .map(|(topic, partitions)| {
            let list: Vec<String> = partitions.iter().map(ToString::to_string).collect();
            format!("{topic}[{}]", list.join(","))
        })
        .collect::<Vec<String>>()
        .join(" ")
}

async fn delete(client: &ClientArgs, names: &[String]) -> Result<(), CliError> {
    let admin = client.admin()?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let results = admin
        .delete_groups(&names, &client.admin_options())
        .await
        .map_err(|e| CliError::kafka("delete groups", e).with_brokers(&client.brokers))?;
    let kind = OutcomeKind {
        column: "GROUP",
        plural: "groups",
        done: "deleted",
        not_found: "GroupIdNotFound",
        failed_hint: " (a group with members cannot be deleted)",
    };
    output::report_outcomes(client.format, &kind, &output::outcomes(results))
}

#[derive(Debug, Serialize)]
struct Move {
    topic: String,
    partition: i32,
    from: Option<i64>,
    to: i64,
}

fn seek(
    client: &ClientArgs,
    group: &str,
    to: Start,
    topics: &[String],
    dry_run: bool,
) -> Result<(), CliError> {
    if let Some(view) = groups(client, Some(group))?
        .into_iter()
        .find(|g| g.group == group && !g.members.is_empty())
    {
        return Err(CliError::Failed(format!(
            "group {group} has {} members ({}): stop them first, a group's offsets move only while it is empty",
            view.members.len(),
            view.state
        )));
    }
    let consumer = client.consumer(Some(group))?;
    let current = committed(client, &consumer, topics)?;
    let chosen: Vec<(String, i32, Option<i64>)> = current
        .elements()
        .iter()
        .filter_map(|e| {
            let from = match e.offset() {
                Offset::Offset(offset) => Some(offset),
                _ => None,
            };
            // Without --topic, only partitions the group has offsets for move.
            (from.is_some() || !topics.is_empty())
                .then(|| (e.topic().to_string(), e.partition(), from))
        })
        .collect();
    if chosen.is_empty() {
        return Err(CliError::NotFound(format!(
            "group {group} has no committed offsets; name the topics to seek with --topic"
        )));
    }
    let by_time = match to {
        Start::Time(millis) => {
            let mut list = TopicPartitionList::new();
            for (topic, partition, _) in &chosen {
                list.add_partition_offset(topic, *partition, Offset::Offset(millis))
                    .map_err(|e| CliError::kafka("look up offsets by time", e))?;
            }
            let found = consumer
                .offsets_for_times(list, client.timeout())
                .map_err(|e| {
                    CliError::kafka("look up offsets by time", e).with_brokers(&client.brokers)
                })?;
            if let Some(failed) = found.elements().iter().find(|e| e.error().is_err()) {
                return Err(CliError::Failed(format!(
                    "cannot look up {}[{}] by time: {:?}",
                    failed.topic(),
                    failed.partition(),
                    failed.error()
                )));
            }
            Some(found)
        }
        _ => None,
    };
    let mut moves = Vec::new();
    for (topic, partition, from) in chosen {
        let (low, high) = consumer
            .fetch_watermarks(&topic, partition, client.timeout())
            .map_err(|e| CliError::kafka("fetch offsets", e).with_brokers(&client.brokers))?;
        let to = match to {
            Start::Beginning => low,
            Start::End => high,
            Start::At(offset) => offset.max(low).min(high),
            Start::Time(_) => match by_time
                .as_ref()
                .and_then(|list| list.find_partition(&topic, partition))
                .map(|e| e.offset())
            {
                Some(Offset::Offset(offset)) => offset,
                // No record at or after the time: the end.
                _ => high,
            },
        };
        moves.push(Move {
            topic,
            partition,
            from,
            to,
        });
    }
    if !dry_run {
        let mut list = TopicPartitionList::new();
        for m in &moves {
            list.add_partition_offset(&m.topic, m.partition, Offset::Offset(m.to))
                .map_err(|e| CliError::kafka("commit offsets", e))?;
        }
        consumer
            .commit(&list, CommitMode::Sync)
            .map_err(|e| CliError::kafka("commit offsets", e).with_brokers(&client.brokers))?;
    }
    match client.format {
        Format::Json => output::print_json(&serde_json::json!({
            "group": group,
            "dry_run": dry_run,
            "moves": moves,
        })),
        Format::Human => {
            let mut table = output::table(["TOPIC", "PARTITION", "FROM", "TO"]);
            for m in &moves {
                table.add_row([
                    m.topic.clone(),
                    m.partition.to_string(),
                    m.from.map_or_else(|| "-".to_string(), |o| o.to_string()),
                    m.to.to_string(),
                ]);
            }
            output::print_table(&table, "");
            if dry_run {
                println!("(dry run: nothing committed)");
            }
        }
    }
    Ok(())
}
