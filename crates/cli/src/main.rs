//! `spool`: run a broker (`spool serve`, also what a bare `spool` does).

mod settings;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use settings::ServeArgs;
use spool_broker::Broker;

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
    let config = match settings::resolve(&args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("spool: {message}");
            std::process::exit(2);
        }
    };
    let data_dir = config.data_dir.clone();
    let broker = Broker::start(config).await?;
    println!(
        "spool listening on {}, data in {}",
        broker.local_addr(),
        data_dir.display()
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
