//! `spool cluster info`: the cluster id, controller, brokers and the API versions the
//! broker supports. librdkafka does not expose the controller, the cluster id or the
//! API versions it negotiated, so this command speaks the protocol itself, through
//! `kafka-protocol`: ApiVersions, then Metadata at the highest version both sides know.

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::connect;
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ClusterCommand {
    /// Show the cluster id, controller, brokers and supported API versions.
    Info,
    /// Show a shared-storage cluster from its metadata store: brokers with their
    /// leases, the controller, partitions and groups per broker.
    Status {
        /// The cluster's metadata store (`postgres://…` or `sqlite://PATH`).
        #[arg(long, env = "SPOOL_METADATA_URL")]
        metadata_url: String,
    },
    /// Move a broker's partitions and groups to the other brokers (it stays up,
    /// leading nothing, until `--undo`).
    Drain {
        /// The broker's node id.
        node: i32,
        /// Let the broker take partitions and groups again.
        #[arg(long)]
        undo: bool,
        /// The cluster's metadata store (`postgres://…` or `sqlite://PATH`).
        #[arg(long, env = "SPOOL_METADATA_URL")]
        metadata_url: String,
    },
    /// Move a partition's leadership to another broker: its leader commits what it
    /// buffered, then hands it over.
    Move {
        topic: String,
        partition: i32,
        /// The node id of the broker to lead it.
        node: i32,
        /// The cluster's metadata store (`postgres://…` or `sqlite://PATH`).
        #[arg(long, env = "SPOOL_METADATA_URL")]
        metadata_url: String,
    },
}

#[derive(Debug, Serialize)]
struct BrokerView {
    node_id: i32,
    host: String,
    port: i32,
    rack: Option<String>,
}

#[derive(Debug, Serialize)]
struct ApiView {
    key: i16,
    name: String,
    min_version: i16,
    max_version: i16,
}

#[derive(Debug, Serialize)]
struct ClusterView {
    cluster_id: Option<String>,
    controller_id: i32,
    brokers: Vec<BrokerView>,
    /// The broker answered from this address.
    bootstrap: String,
    apis: Vec<ApiView>,
    cli_version: &'static str,
}

pub(crate) async fn run(command: ClusterCommand, client: &ClientArgs) -> Result<(), CliError> {
    match command {
        ClusterCommand::Info => info(client).await,
        ClusterCommand::Status { metadata_url } => {
            super::cluster_status::status(&metadata_url, client.format).await
        }
        ClusterCommand::Drain {
            node,
            undo,
            metadata_url,
        } => super::cluster_status::drain(&metadata_url, node, !undo).await,
        ClusterCommand::Move {
            topic,
            partition,
            node,
            metadata_url,
        } => super::cluster_status::move_partition(&metadata_url, &topic, partition, node).await,
    }
}

async fn info(client: &ClientArgs) -> Result<(), CliError> {
    let (mut connection, bootstrap) = connect(client, "ask for the cluster's metadata").await?;
    let versions: ApiVersionsResponse = connection
        .call(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("spool-cli"))
                .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION"))),
            3,
        )
        .await?;
    if versions.error_code != 0 {
        return Err(CliError::Failed(format!(
            "the broker refused ApiVersions with error code {}",
            versions.error_code
        )));
    }
    let metadata_max = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Metadata as i16)
        .map_or(1, |k| k.max_version);
    let version = metadata_max.clamp(1, 12);
    let metadata: MetadataResponse = connection
        .call(
            MetadataRequest::default().with_topics(Some(Vec::new())),
            version,
        )
        .await?;
    let mut apis: Vec<ApiView> = versions
        .api_keys
        .iter()
        .map(|k| ApiView {
            key: k.api_key,
            name: ApiKey::try_from(k.api_key).map_or_else(
                |()| format!("unknown ({})", k.api_key),
                |key| format!("{key:?}"),
            ),
            min_version: k.min_version,
            max_version: k.max_version,
        })
        .collect();
    apis.sort_by_key(|a| a.key);
    let mut brokers: Vec<BrokerView> = metadata
        .brokers
        .iter()
        .map(|b| BrokerView {
            node_id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(ToString::to_string),
        })
        .collect();
    brokers.sort_by_key(|b| b.node_id);
    let view = ClusterView {
        cluster_id: metadata.cluster_id.as_ref().map(ToString::to_string),
        controller_id: metadata.controller_id.0,
        brokers,
        bootstrap,
        apis,
        cli_version: env!("CARGO_PKG_VERSION"),
    };
    match client.format {
        Format::Json => output::print_json(&view),
        Format::Human => print_view(&view),
    }
    Ok(())
}

fn print_view(view: &ClusterView) {
    println!("CLUSTER     {}", view.cluster_id.as_deref().unwrap_or("-"));
    println!("CONTROLLER  {}", view.controller_id);
    println!("ANSWERED    {}", view.bootstrap);
    println!("CLI         spool {}", view.cli_version);
    output::heading("BROKERS");
    let mut brokers = output::table(["ID", "HOST", "PORT", "RACK"]);
    for b in &view.brokers {
        brokers.add_row([
            b.node_id.to_string(),
            b.host.clone(),
            b.port.to_string(),
            b.rack.clone().unwrap_or_default(),
        ]);
    }
    output::print_table(&brokers, "none");
    output::heading("API VERSIONS");
    let mut apis = output::table(["KEY", "API", "VERSIONS"]);
    for api in &view.apis {
        apis.add_row([
            api.key.to_string(),
            api.name.clone(),
            format!("{}-{}", api.min_version, api.max_version),
        ]);
    }
    output::print_table(&apis, "none");
}
