//! The source cluster as the mirror sees it, through Spool's own Kafka connection
//! (`spool_kafka_client`: the mirror needs record batches as the source stores them,
//! which librdkafka never hands out; every answer's structure checked before it is
//! decoded): its topics and their leaders, the configs set on
//! them, offsets by time, and its groups' committed offsets.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_kafka_client::{ClientSettings, Connection, error_name};
use spool_metadata::MirrorLinkRecord;

/// A source topic: its partitions' leaders (node id, -1 when none), by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SourceTopic {
    pub(super) leaders: Vec<i32>,
}

/// What the source's metadata says.
#[derive(Debug, Clone, Default)]
pub(super) struct SourceMetadata {
    pub(super) topics: BTreeMap<String, SourceTopic>,
    /// Each broker's `host:port`, by node id.
    pub(super) brokers: HashMap<i32, String>,
}

/// The settings of a link's source client.
pub(crate) fn settings_of(link: &MirrorLinkRecord) -> Result<ClientSettings, String> {
    ClientSettings::from_config(
        &link.source,
        &format!("spool-mirror-{}", link.name),
        &link.source_config,
    )
    .map_err(|error| error.to_string())
}

/// Connections to the source: to its bootstrap brokers, and to each broker asked
/// for its groups or a group's offsets; each opened when first needed and again after
/// a failure.
#[derive(Debug)]
pub(super) struct Source {
    settings: ClientSettings,
    connection: Option<Connection>,
    /// By `host:port`.
    brokers: HashMap<String, Connection>,
}

impl Source {
    pub(super) fn new(settings: ClientSettings) -> Source {
        Source {
            settings,
            connection: None,
            brokers: HashMap::new(),
        }
    }

    /// Runs `ask` on the bootstrap connection (opened if need be); a failure closes it.
    async fn with<T>(
        &mut self,
        ask: impl AsyncFnOnce(&mut Connection) -> Result<T, String>,
    ) -> Result<T, String> {
        // Taken out while in use: put back only after a whole exchange, so that one
        // cut short (a failure, the round's deadline) is never used again.
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => {
                let (mut connection, _) = spool_kafka_client::connect(&self.settings, "mirror")
                    .await
                    .map_err(|error| error.to_string())?;
                connection.guarded_only();
                connection
            }
        };
        let answer = ask(&mut connection).await;
        if answer.is_ok() {
            self.connection = Some(connection);
        }
        answer
    }

    /// Runs `ask` on the connection to the broker at `address` (opened if need be); a
    /// failure closes it.
    async fn at<T>(
        &mut self,
        address: &str,
        ask: impl AsyncFnOnce(&mut Connection) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut connection = match self.brokers.remove(address) {
            Some(connection) => connection,
            None => open(&self.settings, address).await?,
        };
        let answer = ask(&mut connection).await;
        if answer.is_ok() {
            self.brokers.insert(address.to_owned(), connection);
        }
        answer
    }

    /// Every topic of the source (internal ones left out) and every broker.
    pub(super) async fn metadata(&mut self) -> Result<SourceMetadata, String> {
        self.with(async |connection| metadata(connection, None).await)
            .await
    }

    /// The configs set on each of `topics` at the source (not defaults), by topic.
    pub(super) async fn topic_configs(
        &mut self,
        topics: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, String> {
        self.with(async |connection| topic_configs(connection, topics).await)
            .await
    }

    /// The source's consumer groups: ListGroups answers with the groups the broker
    /// asked coordinates, so every broker is asked.
    pub(super) async fn groups(&mut self) -> Result<Vec<String>, String> {
        let brokers = self.metadata().await?.brokers;
        self.brokers
            .retain(|address, _| brokers.values().any(|a| a == address));
        let mut groups = std::collections::BTreeSet::new();
        for address in brokers.values() {
            let found = self
                .at(address, async |connection| {
                    let version = version(connection, ApiKey::ListGroups, 0..=2).await?;
                    let answer: ListGroupsResponse =
                        call(connection, ListGroupsRequest::default(), version).await?;
                    refused("ListGroups", answer.error_code)?;
                    Ok(answer.groups)
                })
                .await?;
            groups.extend(found.into_iter().map(|group| group.group_id.0.to_string()));
        }
        Ok(groups.into_iter().collect())
    }

    /// `group`'s committed offsets at the source: (topic, partition) → (offset,
    /// metadata), asked of the group's coordinator there.
    pub(super) async fn committed(&mut self, group: &str) -> Result<Committed, String> {
        let address = self
            .with(async |connection| {
                let version = version(connection, ApiKey::FindCoordinator, 1..=2).await?;
                let request = FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_string(group.to_owned()))
                    .with_key_type(0);
                let answer: FindCoordinatorResponse = call(connection, request, version).await?;
                refused("FindCoordinator", answer.error_code)?;
                Ok(format!("{}:{}", answer.host, answer.port))
            })
            .await?;
        self.at(&address, async |connection| {
            offset_fetch(connection, group).await
        })
        .await
    }
}

/// A connection to one broker of the source. Its answers are checked before they
/// are decoded (the versions asked are those `wire_guard` describes): a source is not
/// trusted to keep its array counts within its bytes.
pub(super) async fn open(settings: &ClientSettings, address: &str) -> Result<Connection, String> {
    let mut connection = Connection::open(settings, address)
        .await
        .map_err(|error| error.to_string())?;
    connection.guarded_only();
    Ok(connection)
}

/// A group's committed offsets: (topic, partition) → (offset, metadata).
pub(super) type Committed = BTreeMap<(String, i32), (i64, Option<String>)>;

async fn offset_fetch(connection: &mut Connection, group: &str) -> Result<Committed, String> {
    let version = version(connection, ApiKey::OffsetFetch, 2..=5).await?;
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_topics(None::<Vec<OffsetFetchRequestTopic>>);
    let answer: OffsetFetchResponse = call(connection, request, version).await?;
    refused("OffsetFetch", answer.error_code)?;
    let mut offsets = BTreeMap::new();
    for topic in answer.topics {
        for partition in topic.partitions {
            if partition.error_code == 0 && partition.committed_offset >= 0 {
                offsets.insert(
                    (topic.name.0.to_string(), partition.partition_index),
                    (
                        partition.committed_offset,
                        partition.metadata.map(|m| m.to_string()),
                    ),
                );
            }
        }
    }
    Ok(offsets)
}

/// The metadata of `topics` (every topic when `None`), internal topics left out.
pub(super) async fn metadata(
    connection: &mut Connection,
    topics: Option<&[String]>,
) -> Result<SourceMetadata, String> {
    let version = version(connection, ApiKey::Metadata, 1..=8).await?;
    let request = MetadataRequest::default().with_topics(topics.map(|names| {
        names
            .iter()
            .map(|name| {
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
            })
            .collect()
    }));
    let answer: MetadataResponse = call(connection, request, version).await?;
    let brokers = answer
        .brokers
        .iter()
        .map(|broker| (broker.node_id.0, format!("{}:{}", broker.host, broker.port)))
        .collect();
    let mut found = BTreeMap::new();
    for topic in answer.topics {
        let Some(name) = topic.name else { continue };
        if topic.is_internal || topic.error_code != 0 || name.0.starts_with("__") {
            continue;
        }
        let mut leaders = vec![-1; topic.partitions.len()];
        for partition in &topic.partitions {
            if let Some(leader) = usize::try_from(partition.partition_index)
                .ok()
                .and_then(|index| leaders.get_mut(index))
            {
                *leader = partition.leader_id.0;
            }
        }
        found.insert(name.0.to_string(), SourceTopic { leaders });
    }
    Ok(SourceMetadata {
        topics: found,
        brokers,
    })
}

async fn topic_configs(
    connection: &mut Connection,
    topics: &[String],
) -> Result<BTreeMap<String, BTreeMap<String, String>>, String> {
    /// DescribeConfigs' code for a config set on the topic itself.
    const TOPIC_CONFIG: i8 = 1;
    /// DescribeConfigs' resource type of a topic.
    const TOPIC: i8 = 2;
    let version = version(connection, ApiKey::DescribeConfigs, 1..=3).await?;
    let resources = topics
        .iter()
        .map(|name| {
            DescribeConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(StrBytes::from_string(name.clone()))
                .with_configuration_keys(None)
        })
        .collect();
    let request = DescribeConfigsRequest::default().with_resources(resources);
    let answer: DescribeConfigsResponse = call(connection, request, version).await?;
    let mut configs = BTreeMap::new();
    for result in answer.results {
        if result.error_code != 0 {
            continue;
        }
        let set = result
            .configs
            .into_iter()
            .filter(|config| config.config_source == TOPIC_CONFIG && !config.is_sensitive)
            .filter_map(|config| Some((config.name.to_string(), config.value?.to_string())))
            .collect();
        configs.insert(result.resource_name.to_string(), set);
    }
    Ok(configs)
}

/// The source's offset for `timestamp` (-2 earliest, -1 latest) in a partition, asked
/// of its leader.
pub(super) async fn offset_at(
    connection: &mut Connection,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> Result<i64, String> {
    let version = version(connection, ApiKey::ListOffsets, 1..=5).await?;
    let request = ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ]);
    let answer: ListOffsetsResponse = call(connection, request, version).await?;
    let found = answer
        .topics
        .into_iter()
        .flat_map(|topic| topic.partitions)
        .find(|answer| answer.partition_index == partition)
        .ok_or_else(|| format!("ListOffsets did not answer for {topic}-{partition}"))?;
    refused("ListOffsets", found.error_code)?;
    Ok(found.offset)
}

/// The version to ask `key` at.
pub(super) async fn version(
    connection: &mut Connection,
    key: ApiKey,
    ours: std::ops::RangeInclusive<i16>,
) -> Result<i16, String> {
    connection
        .version_of(key, ours)
        .await
        .map_err(|error| error.to_string())
}

/// Sends `request` and reads the answer, failures as text.
pub(super) async fn call<R>(
    connection: &mut Connection,
    request: R,
    version: i16,
) -> Result<R::Response, String>
where
    R: kafka_protocol::protocol::Request
        + kafka_protocol::protocol::Encodable
        + kafka_protocol::protocol::HeaderVersion,
    R::Response: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::HeaderVersion,
{
    connection
        .call(request, version)
        .await
        .map_err(|error| error.to_string())
}

/// An error code as a refusal of `what`.
pub(super) fn refused(what: &str, code: i16) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("the source refused {what}: {}", error_name(code)))
    }
}
