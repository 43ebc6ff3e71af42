//! `spool cluster status --metadata-url URL`: a cluster of brokers in shared-storage
//! mode as its metadata store has it — the brokers with their leases, the controller,
//! and per broker the partitions it leads and the groups it coordinates. Leases are
//! not in the Kafka protocol, so this reads the store itself (PostgreSQL, or the
//! SQLite file of a one-machine cluster). `spool cluster drain NODE` marks a broker
//! draining there: the controller moves its partitions away at its next round, and
//! its groups go to other coordinators. `spool cluster move TOPIC PARTITION NODE` asks
//! a partition's leader to hand it to another broker.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;

use spool_metadata::{BrokerRecord, MetadataError, MetadataStore, MetadataUrl};

use crate::error::CliError;
use crate::output::{self, Format};

#[derive(Debug, Serialize)]
struct BrokerStatus {
    node_id: i32,
    host: String,
    port: i32,
    /// Milliseconds the lease still runs (negative: lapsed that long ago).
    lease_left_ms: i64,
    live: bool,
    draining: bool,
    /// `broker.rack`, if set.
    rack: Option<String>,
    /// `writer` (leads partitions, coordinates groups) or `reader` (serves reads).
    role: &'static str,
    partitions: usize,
    groups: usize,
}

#[derive(Debug, Serialize)]
struct Status {
    controller: Option<i32>,
    controller_epoch: Option<i64>,
    brokers: Vec<BrokerStatus>,
    /// Partitions with no live leader.
    unassigned_partitions: usize,
    partitions: usize,
}

/// The store at `metadata_url`, and how to word its errors.
async fn open(
    metadata_url: &str,
) -> Result<(Arc<dyn MetadataStore>, impl Fn(MetadataError) -> CliError), CliError> {
    let url = MetadataUrl::parse(metadata_url)
        .map_err(|e| CliError::Failed(format!("--metadata-url {e}")))?;
    let redacted = url.redacted();
    let read = move |e: MetadataError| CliError::Failed(format!("{redacted}: {e}"));
    let store = spool_metadata::open(&url).await.map_err(&read)?;
    Ok((store, read))
}

/// Marks `node` draining (or not).
pub(crate) async fn drain(metadata_url: &str, node: i32, draining: bool) -> Result<(), CliError> {
    let (store, read) = open(metadata_url).await?;
    if !store.set_draining(node, draining).await.map_err(&read)? {
        return Err(CliError::Failed(format!(
            "broker {node} is not registered in this cluster"
        )));
    }
    if draining {
        println!("broker {node} drains: its partitions and groups move to the other brokers");
        let now = spool_model::Timestamp::now().0;
        let takers = store
            .brokers()
            .await
            .map_err(&read)?
            .into_iter()
            .filter(|b| b.node_id != node && b.lease_expires_ms > now && b.takes_work())
            .count();
        if takers == 0 {
            eprintln!(
                "warning: no other live broker takes partitions: broker {node} keeps leading its partitions until one joins (undo with `spool cluster drain {node} --undo`)"
            );
        }
    } else {
        println!("broker {node} takes partitions and groups again");
    }
    Ok(())
}

/// Asks the leader of `topic`'s `partition` to hand it to broker `node`, and waits
/// (a few seconds at most) to see it done.
pub(crate) async fn move_partition(
    metadata_url: &str,
    topic: &str,
    partition: i32,
    node: i32,
) -> Result<(), CliError> {
    let (store, read) = open(metadata_url).await?;
    let record = store
        .topics()
        .await
        .map_err(&read)?
        .into_iter()
        .find(|record| record.name.as_str() == topic)
        .ok_or_else(|| CliError::Failed(format!("no topic {topic} in this cluster")))?;
    if !(0..record.partitions).contains(&partition) {
        return Err(CliError::Failed(format!(
            "{topic} has partitions 0 to {}",
            record.partitions - 1
        )));
    }
    let now = spool_model::Timestamp::now().0;
    let brokers = store.brokers().await.map_err(&read)?;
    if !brokers
        .iter()
        .any(|b| b.node_id == node && b.lease_expires_ms > now && b.takes_work())
    {
        return Err(CliError::Failed(format!(
            "broker {node} is not a live broker taking partitions"
        )));
    }
    let key = spool_metadata::PartitionKey {
        topic_id: record.id,
        partition,
    };
    if store
        .request_move(key, node)
        .await
        .map_err(&read)?
        .is_none()
    {
        println!("broker {node} leads {topic}-{partition} already");
        return Ok(());
    }
    let deadline = std::time::Instant::now() + MOVE_WAIT;
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let led = store
            .leaderships()
            .await
            .map_err(&read)?
            .into_iter()
            .find(|l| l.key == key);
        if let Some(led) = led.filter(|l| l.leader == node) {
            println!(
                "{topic}-{partition} is led by broker {node} (leader epoch {})",
                led.leader_epoch
            );
            return Ok(());
        }
    }
    Err(CliError::Failed(format!(
        "{topic}-{partition} was asked to move to broker {node} but has not yet: \
         see `spool cluster status`"
    )))
}

/// How long `spool cluster move` waits to see the move done.
const MOVE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) async fn status(metadata_url: &str, format: Format) -> Result<(), CliError> {
    let (store, read) = open(metadata_url).await?;
    let now = spool_model::Timestamp::now().0;
    let brokers: Vec<BrokerRecord> = store.brokers().await.map_err(&read)?;
    if brokers.is_empty() && store.bound_storage().await.map_err(&read)?.is_none() {
        return Err(CliError::NotFound(
            "no broker has registered in this metadata store: it has no cluster (a broker without --storage-url runs embedded and leads every partition itself; `spool cluster info` describes it)".to_owned(),
        ));
    }
    let live: Vec<BrokerRecord> = brokers
        .iter()
        .filter(|b| b.lease_expires_ms > now)
        .cloned()
        .collect();
    let leaderships = store.leaderships().await.map_err(&read)?;
    let controller = store.controller().await.map_err(&read)?;
    let groups: BTreeSet<String> = store
        .committed_offsets()
        .await
        .map_err(&read)?
        .into_iter()
        .map(|offset| offset.group)
        .collect();
    let live_ids: BTreeSet<i32> = live.iter().map(|b| b.node_id).collect();
    let mut led: BTreeMap<i32, usize> = BTreeMap::new();
    for leadership in &leaderships {
        *led.entry(leadership.leader).or_default() += 1;
    }
    let mut coordinated: BTreeMap<i32, usize> = BTreeMap::new();
    for group in &groups {
        if let Some(broker) = spool_broker::group_coordinator(group, &live) {
            *coordinated.entry(broker.node_id).or_default() += 1;
        }
    }
    let status = Status {
        controller: controller
            .filter(|c| c.lease_expires_ms > now)
            .map(|c| c.node_id),
        controller_epoch: controller.map(|c| c.epoch),
        brokers: brokers
            .iter()
            .map(|b| BrokerStatus {
                node_id: b.node_id,
                host: b.host.clone(),
                port: b.port,
                lease_left_ms: b.lease_expires_ms.saturating_sub(now),
                live: live_ids.contains(&b.node_id),
                draining: b.draining,
                rack: b.rack.clone(),
                role: if b.reader { "reader" } else { "writer" },
                partitions: led.get(&b.node_id).copied().unwrap_or(0),
                groups: coordinated.get(&b.node_id).copied().unwrap_or(0),
            })
            .collect(),
        unassigned_partitions: leaderships
            .iter()
            .filter(|l| !live_ids.contains(&l.leader))
            .count(),
        partitions: leaderships.len(),
    };
    match format {
        Format::Json => output::print_json(&status),
        Format::Human => print_status(&status),
    }
    Ok(())
}

fn print_status(status: &Status) {
    let controller = status
        .controller
        .map_or_else(|| "none".to_owned(), |id| id.to_string());
    println!("CONTROLLER  {controller}");
    println!(
        "PARTITIONS  {} ({} without a live leader)",
        status.partitions, status.unassigned_partitions
    );
    output::heading("BROKERS");
    let mut table = output::table([
        "ID",
        "HOST",
        "PORT",
        "LEASE",
        "STATE",
        "RACK",
        "ROLE",
        "PARTITIONS",
        "GROUPS",
    ]);
    for b in &status.brokers {
        let state = match (b.live, b.draining) {
            (false, _) => "dead",
            (true, true) => "draining",
            (true, false) => "live",
        };
        table.add_row([
            b.node_id.to_string(),
            b.host.clone(),
            b.port.to_string(),
            format!("{} ms", b.lease_left_ms),
            state.to_owned(),
            b.rack.clone().unwrap_or_else(|| "-".to_owned()),
            b.role.to_owned(),
            b.partitions.to_string(),
            b.groups.to_string(),
        ]);
    }
    output::print_table(&table, "no broker registered");
}
