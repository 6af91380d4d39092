//! The `shale` command: `shale serve [--config FILE] [--override key=value]...`.

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
    /// Print the served Kafka APIs and versions as a Markdown table.
    Apis,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Command::Apis = cli.command {
        print!("{}", shale_broker::api_table::markdown_table());
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SHALE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_target(false)
        .init();
    match cli.command {
        Command::Serve { config, overrides } => serve(config, overrides),
        Command::Apis => Ok(()),
    }
}

fn serve(config_file: Option<PathBuf>, overrides: Vec<String>) -> anyhow::Result<()> {
    let props = StaticProperties::load(config_file.as_deref(), std::env::vars(), &overrides)?;
    for key in props.unknown_keys() {
        warn!(key = %key, "unknown configuration key ignored");
    }
    let config = BrokerConfig::from_properties(props)?;
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
