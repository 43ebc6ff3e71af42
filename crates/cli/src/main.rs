//! `spool`: run a broker (`spool serve`, also what a bare `spool` does), or talk to
//! any Kafka-compatible cluster (`spool topic`, `produce`, `consume`, `group`,
//! `cluster`).

mod admin_api;
mod client;
mod commands;
mod error;
mod kafka_admin;
mod output;
mod settings;
mod stop_signal;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use client::ClientArgs;
use commands::bench::BenchCommand;
use commands::cluster::ClusterCommand;
use commands::consume::ConsumeArgs;
use commands::group::GroupCommand;
use commands::produce::ProduceArgs;
use commands::topic::TopicCommand;
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
    /// Create, list, describe, delete and alter topics.
    Topic {
        #[command(subcommand)]
        command: TopicCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Produce records, one per input line.
    Produce {
        #[command(flatten)]
        args: ProduceArgs,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List, describe, delete consumer groups and move their offsets.
    Group {
        #[command(subcommand)]
        command: GroupCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Benchmark a cluster (produce, consume, e2e) or measure the machine (limits).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Show the cluster: id, controller, brokers, API versions.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Create, list and delete ACL bindings (with `authorizer.enabled=true`).
    Acl {
        #[command(subcommand)]
        command: commands::acl::AclCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Create, delete and list SCRAM users.
    User {
        #[command(subcommand)]
        command: commands::user::UserCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Set, remove and list client quotas.
    Quota {
        #[command(subcommand)]
        command: commands::quota::QuotaCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Mirror links: copy another cluster's topics here at their own offsets, fail over.
    Mirror {
        #[command(subcommand)]
        command: commands::mirror::MirrorCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// A local agent speaking the Kafka protocol: many producers' small batches
    /// merged per partition and compressed once, everything else forwarded to the
    /// upstream cluster (`--brokers`).
    Databus {
        #[command(flatten)]
        args: commands::databus::DatabusArgs,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Register, read, list, delete and check schemas in the schema registry.
    Schema {
        #[command(subcommand)]
        command: commands::schema::SchemaCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Add, list and remove transaction checkers (check-back of open transactions).
    TxnChecker {
        #[command(subcommand)]
        command: commands::txn_checker::TxnCheckerCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Consume records and print them.
    Consume {
        #[command(flatten)]
        args: ConsumeArgs,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Find records by key, header or JSON field through the topic's index
    /// (`index.fields`, docs/index.md), newest first.
    Find {
        #[command(flatten)]
        args: commands::find::FindArgs,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Kill a broker of this binary over and over under load (or crash its machine),
    /// then check that nothing it acknowledged was lost, duplicated or reordered.
    Faultcheck {
        #[command(flatten)]
        check: spool_faultcheck::FaultCheck,
        /// How to print the report.
        #[arg(long, value_enum, default_value_t = output::Format::Human)]
        format: output::Format,
    },
}

fn main() -> ExitCode {
    exit_quietly_on_broken_pipe();
    let cli = Cli::parse();
    // A broker logs at info; a client command only says what went wrong, which its
    // errors do (librdkafka's own log lines, target `librdkafka`, are there with
    // RUST_LOG=librdkafka=info).
    let default_filter = match cli.command {
        None | Some(Command::Serve(_) | Command::Databus { .. }) => "info",
        // The broker of machine mode runs in this process, and its crashes log errors
        // by design; RUST_LOG=warn shows them.
        Some(Command::Faultcheck { .. }) => "off",
        Some(_) => "error,rdkafka=off,librdkafka=off",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr())
        .init();
    if let Some(Command::Faultcheck { check, format }) = &cli.command {
        // Synchronous: it runs its own brokers, each in a runtime of its own.
        return match commands::faultcheck::run(check, *format) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("spool: {error}");
                error.exit_code()
            }
        };
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("spool: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let args = match cli.command {
        Some(Command::Serve(args)) => args,
        None => cli.serve,
        Some(client_command) => return runtime.block_on(run_client(client_command)),
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("spool: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Colour in log lines only on a terminal, and not when `NO_COLOR` is set
/// (no-color.org): a file or a pipe gets plain text.
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Runs a client command; its error is printed and becomes the exit code.
async fn run_client(command: Command) -> ExitCode {
    let result = match command {
        Command::Serve(_) | Command::Faultcheck { .. } => Ok(()),
        Command::Topic { command, client } => commands::topic::run(command, &client).await,
        Command::Produce { args, client } => commands::produce::run(args, &client).await,
        Command::Consume { args, client } => commands::consume::run(args, &client).await,
        Command::Find { args, client } => commands::find::run(&args, &client),
        Command::Group { command, client } => commands::group::run(command, &client).await,
        Command::Cluster { command, client } => commands::cluster::run(command, &client).await,
        Command::Bench { command, client } => commands::bench::run(command, &client).await,
        Command::Acl { command, client } => commands::acl::run(command, &client).await,
        Command::User { command, client } => commands::user::run(command, &client).await,
        Command::Quota { command, client } => commands::quota::run(command, &client).await,
        Command::TxnChecker { command, client } => commands::txn_checker::run(command, &client),
        Command::Mirror { command, client } => commands::mirror::run(command, &client),
        Command::Schema { command, client } => commands::schema::run(command, &client),
        Command::Databus { args, client } => commands::databus::run(args, &client).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.is_broken_pipe() => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("spool: {error}");
            error.exit_code()
        }
    }
}

/// Rust ignores SIGPIPE, so `println!` to a closed pipe (`spool topic describe big |
/// head -3`) panics where a Unix tool would end quietly. The panic hook ends the
/// process quietly in that one case (restoring SIGPIPE would need `unsafe`, which the
/// workspace denies); every other panic is reported as usual.
fn exit_quietly_on_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        report(info);
    }));
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
    let broker = Broker::builder(config).start().await?;
    let admin = broker.admin_addr().map_or_else(String::new, |address| {
        format!(", admin on http://{address}")
    });
    let listening: Vec<String> = broker
        .listeners()
        .iter()
        .map(|(name, address)| format!("{address} ({name})"))
        .collect();
    println!(
        "spool listening on {}{admin}, data in {}",
        listening.join(", "),
        data_dir.display()
    );
    stop_signal::received().await;
    tracing::info!("shutting down: finishing requests, syncing and checkpointing");
    broker.shutdown().await
}
