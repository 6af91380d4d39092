//! The `shale` command: `shale serve [--config FILE] [--override key=value]...`,
//! `shale format --config FILE --cluster-id ID`, `shale random-uuid`, `shale apis`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use shale_broker::config::{BrokerConfig, StaticProperties};
use shale_broker::{Broker, READY_LINE};
use tracing::{info, warn};

#[derive(Parser, Debug)]
#[command(
    name = "shale",
    version,
    about = "A Kafka-wire-compatible message broker"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a broker (single node in combined mode by default: 127.0.0.1:9092, data in ./data).
    Serve {
        /// A Kafka-style server.properties file.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Sets one property, overriding the file and KAFKA_* environment variables.
        #[arg(long = "override", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
    /// Format the log directories for a node of a cluster (Kafka's `kafka-storage.sh format`):
    /// writes meta.properties with the cluster id and node.id. Every node of a multi-node
    /// cluster is formatted with the same cluster id before it first starts.
    Format {
        /// A Kafka-style server.properties file.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// Sets one property, overriding the file and KAFKA_* environment variables.
        #[arg(long = "override", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// The cluster id, as `shale random-uuid` prints it.
        #[arg(long = "cluster-id", short = 't')]
        cluster_id: String,
        /// Skip directories already formatted (for this cluster and node) instead of failing.
        #[arg(long = "ignore-formatted", short = 'g')]
        ignore_formatted: bool,
    },
    /// Print a new cluster id (Kafka's `kafka-storage.sh random-uuid`).
    RandomUuid,
    /// Print the served Kafka APIs and versions as a Markdown table.
    Apis,
}

/// The container-image convention: a node started with `CLUSTER_ID` formats its directories
/// with it first (skipping formatted ones, which must belong to that cluster).
const CLUSTER_ID_ENV: &str = "CLUSTER_ID";

/// openraft reports every failed RPC to a stopped peer (several a second) as an error; Shale
/// logs the quorum's leader changes itself. `SHALE_LOG=info,openraft=info` shows them again.
const DEFAULT_LOG_FILTER: &str = "info,openraft=off";

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Apis => {
            print!("{}", shale_broker::api_table::markdown_table());
            return Ok(());
        }
        Command::RandomUuid => {
            println!("{}", shale_broker::config::random_cluster_id());
            return Ok(());
        }
        Command::Format { .. } | Command::Serve { .. } => {}
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SHALE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_target(false)
        // Colour codes only on a terminal: logs redirected to files stay greppable.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    match cli.command {
        Command::Serve { config, overrides } => serve(config, overrides),
        Command::Format {
            config,
            overrides,
            cluster_id,
            ignore_formatted,
        } => format(config.as_deref(), &overrides, &cluster_id, ignore_formatted),
        Command::Apis | Command::RandomUuid => Ok(()),
    }
}

fn load_config(
    config_file: Option<&std::path::Path>,
    overrides: &[String],
) -> anyhow::Result<BrokerConfig> {
    let props = StaticProperties::load(config_file, std::env::vars(), overrides)?;
    for key in props.unknown_keys() {
        warn!(key = %key, "unknown configuration key ignored");
    }
    Ok(BrokerConfig::from_properties(props)?)
}

fn format(
    config_file: Option<&std::path::Path>,
    overrides: &[String],
    cluster_id: &str,
    ignore_formatted: bool,
) -> anyhow::Result<()> {
    let config = load_config(config_file, overrides)?;
    let written = shale_broker::config::format_storage(&config, cluster_id, ignore_formatted)
        .context("format failed")?;
    for dir in shale_broker::config::storage_dirs(&config) {
        if written.contains(&dir) {
            println!("Formatting {} with cluster.id {cluster_id}", dir.display());
        } else {
            println!("{} is already formatted", dir.display());
        }
    }
    Ok(())
}

fn serve(config_file: Option<PathBuf>, overrides: Vec<String>) -> anyhow::Result<()> {
    let config = load_config(config_file.as_deref(), &overrides)?;
    if let Ok(cluster_id) = std::env::var(CLUSTER_ID_ENV) {
        let written = shale_broker::config::format_storage(&config, cluster_id.trim(), true)
            .with_context(|| format!("cannot format the log directories with {CLUSTER_ID_ENV}"))?;
        for dir in written {
            info!(dir = %dir.display(), cluster_id = %cluster_id.trim(), "formatted");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("shale")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let handle = Broker::start(config)
            .await
            .context("broker failed to start")?;
        let addrs: Vec<String> = handle
            .bound
            .iter()
            .map(|(name, addr)| format!("{name}://{addr}"))
            .collect();
        info!(
            node_id = handle.broker.node_id(),
            cluster_id = %handle.broker.image().cluster_id,
            "{READY_LINE} on {}",
            addrs.join(",")
        );
        wait_for_signal().await;
        info!("shutting down");
        handle.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            warn!("cannot listen for SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
