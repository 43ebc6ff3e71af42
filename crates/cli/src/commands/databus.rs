//! `spool databus`: the local agent that merges many producers' small batches and
//! forwards everything else to the upstream cluster (`crates/databus`,
//! docs/databus.md). Runs until Ctrl-C or SIGTERM.

use std::net::SocketAddr;

use spool_databus::DatabusConfig;

use crate::client::ClientArgs;
use crate::error::CliError;

#[derive(Debug, clap::Args)]
pub(crate) struct DatabusArgs {
    /// Where local clients connect (their `bootstrap.servers`).
    #[arg(long, default_value = "127.0.0.1:9093")]
    listen: SocketAddr,
    /// A Databus setting (`databus.linger.ms=5`, …) or the upstream client's
    /// (`security.protocol`, `sasl.*`, `ssl.*` by librdkafka's names); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

pub(crate) async fn run(args: DatabusArgs, client: &ClientArgs) -> Result<(), CliError> {
    let mut settings = Vec::new();
    for setting in &args.settings {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--set {setting}: expected KEY=VALUE")))?;
        settings.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    if let Some(protocol) = &client.security_protocol {
        settings.push(("security.protocol".to_owned(), protocol.clone()));
    }
    let config =
        DatabusConfig::new(args.listen, &client.brokers, &settings).map_err(CliError::Usage)?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        crate::stop_signal::received().await;
        let _ = stop.send(true);
    });
    spool_databus::run(config, stopped)
        .await
        .map_err(CliError::Failed)
}
