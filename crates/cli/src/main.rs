//! `spool`: run a broker (`spool serve`, also what a bare `spool` does).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spool_broker::{Broker, BrokerConfig};

#[derive(Debug, Parser)]
#[command(name = "spool", version, about = "A Kafka-compatible message queue")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a broker (the default).
    Serve(ServeArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SPOOL_LISTEN", default_value = "127.0.0.1:9092")]
    listen: SocketAddr,
    /// Address (host:port) that clients are told to connect to; defaults to the listen address.
    #[arg(long, env = "SPOOL_ADVERTISE")]
    advertise: Option<String>,
    /// Directory holding the partition data.
    #[arg(long, env = "SPOOL_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// This broker's node id.
    #[arg(long, env = "SPOOL_NODE_ID", default_value_t = 1)]
    node_id: i32,
    /// A broker setting by its Kafka name, e.g. `--set auto.create.topics.enable=false`
    /// (repeatable). Known: auto.create.topics.enable, num.partitions,
    /// socket.request.max.bytes, max.connections, connections.max.idle.ms.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// Applies `--set key=value` settings, refusing unknown keys and bad values.
fn apply_settings(config: &mut BrokerConfig, settings: &[String]) -> Result<(), String> {
    for setting in settings {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| format!("--set {setting}: expected KEY=VALUE"))?;
        let bad = |expected: &str| format!("--set {key}={value}: expected {expected}");
        match key {
            "auto.create.topics.enable" => {
                config.auto_create_topics = value.parse().map_err(|_| bad("true or false"))?;
            }
            "num.partitions" => {
                config.default_partitions = value
                    .parse()
                    .ok()
                    .filter(|n: &i32| *n > 0)
                    .ok_or_else(|| bad("a positive number"))?;
            }
            "socket.request.max.bytes" => {
                config.max_request_bytes = value
                    .parse()
                    .ok()
                    .filter(|n: &usize| *n >= 1024)
                    .ok_or_else(|| bad("at least 1024"))?;
            }
            "max.connections" => {
                config.max_connections = value
                    .parse()
                    .ok()
                    .filter(|n: &usize| *n > 0)
                    .ok_or_else(|| bad("a positive number"))?;
            }
            "connections.max.idle.ms" => {
                let ms: u64 = value
                    .parse()
                    .ok()
                    .filter(|n: &u64| *n > 0)
                    .ok_or_else(|| bad("a positive number"))?;
                config.idle_timeout = std::time::Duration::from_millis(ms);
            }
            _ => return Err(format!("--set {key}: unknown setting")),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(args)) => args,
        None => cli.serve,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("spool: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("spool: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), spool_broker::BrokerError> {
    let mut config = BrokerConfig {
        listen: args.listen,
        advertise: args.advertise,
        data_dir: args.data_dir.clone(),
        node_id: args.node_id,
        ..BrokerConfig::default()
    };
    if let Err(message) = apply_settings(&mut config, &args.settings) {
        eprintln!("spool: {message}");
        std::process::exit(2);
    }
    let broker = Broker::start(config).await?;
    println!(
        "spool listening on {}, data in {}",
        broker.local_addr(),
        args.data_dir.display()
    );
    shutdown_signal().await;
    tracing::info!("shutting down: finishing requests, syncing and checkpointing");
    broker.shutdown().await
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
