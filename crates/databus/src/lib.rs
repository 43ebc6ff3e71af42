//! Databus (`spool databus`), BMQ's host agent for stock Kafka clients: thousands of
//! small producers on a host point `bootstrap.servers` at it unchanged; it speaks the
//! Kafka protocol, names itself as the one broker of the cluster, and sends upstream
//! over a few connections, merging the small batches of many producers for the same
//! partition into one and compressing once ([`produce`]). Idempotent and
//! transactional producers' requests, fetches, group, transaction and admin requests
//! are forwarded to the broker each is for ([`routing`], [`split`]). acks=0 batches
//! wait on the local disk while the upstream is unreachable ([`spill`]). See
//! `docs/databus.md`.
//!
//! Written here because no maintained Rust crate is a Kafka proxy that merges
//! batches; the wire format is `kafka-protocol`'s, the upstream connection
//! `spool-kafka-client`'s.

mod config;
mod naming;
mod produce;
mod routing;
mod server;
mod spill;
mod split;
mod upstream;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

pub use self::config::{DatabusConfig, SETTINGS};
use self::naming::Me;
use self::produce::Merger;
use self::upstream::Upstream;

/// What every connection of Databus shares.
#[derive(Debug)]
pub(crate) struct Bus {
    pub(crate) config: DatabusConfig,
    pub(crate) me: Me,
    pub(crate) upstream: Upstream,
    pub(crate) merger: Merger,
}

/// Runs Databus until `stopped` turns true: binds, reaches the upstream, replays
/// what an earlier run spilled, serves.
pub async fn run(config: DatabusConfig, mut stopped: watch::Receiver<bool>) -> Result<(), String> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", config.listen))?;
    let spill = match &config.spill_dir {
        Some(dir) => Some(
            spill::Spill::open(dir, config.spill_bytes)
                .map_err(|error| format!("spill directory {}: {error}", dir.display()))?,
        ),
        None => None,
    };
    let upstream = loop {
        match Upstream::connect(config.upstream.clone()).await {
            Ok(upstream) => break upstream,
            Err(error) => {
                tracing::warn!(%error, "upstream not reachable yet; trying again");
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                    _ = stopped.changed() => return Ok(()),
                }
            }
        }
    };
    let local = listener.local_addr().map_err(|error| error.to_string())?;
    let me = Me {
        node_id: config.node_id,
        host: local.ip().to_string(),
        port: i32::from(local.port()),
    };
    let bus = Arc::new(Bus {
        config,
        me,
        upstream,
        merger: Merger::new(spill),
    });
    tracing::info!(listen = %local, upstream = %bus.config.upstream.brokers, "Databus serving");
    let sender = tokio::spawn(produce::run(bus.clone(), stopped.clone()));
    server::serve(bus, listener, stopped).await;
    let _ = sender.await;
    Ok(())
}
