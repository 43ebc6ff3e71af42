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
    // The common TLS and SASL flags, as the upstream client's settings.
    let path = |p: &std::path::PathBuf| p.display().to_string();
    let flags = [
        ("security.protocol", client.security_protocol.clone()),
        ("sasl.mechanism", client.sasl_mechanism.clone()),
        ("sasl.username", client.sasl_username.clone()),
        ("sasl.password", client.sasl_password.clone()),
        ("ssl.ca.location", client.ssl_ca_location.as_ref().map(path)),
        (
            "ssl.certificate.location",
            client.ssl_certificate_location.as_ref().map(path),
        ),
        (
            "ssl.key.location",
            client.ssl_key_location.as_ref().map(path),
        ),
    ];
    for (name, value) in flags {
        if let Some(value) = value {
            settings.push((name.to_owned(), value));
        }
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
