//! Quorum benchmark (run with `cargo bench -p shale-raft --bench quorum`):
//! (a) time from killing the leader of three voters to the next committed entry, default config;
//! (b) entries committed per second, one proposal at a time and with many in flight.
//! Every node runs in this process on loopback, with fsync on every append.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use shale_raft::{
    LinkFaults, RaftConfig, RaftError, RaftNode, ReplicatedStateMachine, StateMachineError,
};
use tokio::net::TcpListener;

#[derive(Default)]
struct Counter {
    applied: AtomicU64,
}

impl ReplicatedStateMachine for Counter {
    fn apply(&self, _index: u64, records: &[Bytes]) {
        self.applied
            .fetch_add(records.len() as u64, Ordering::Relaxed);
    }
    fn snapshot(&self) -> Vec<u8> {
        self.applied.load(Ordering::Relaxed).to_le_bytes().to_vec()
    }
    fn restore(&self, snapshot: &[u8], _last_index: u64) -> Result<(), StateMachineError> {
        let bytes: [u8; 8] = snapshot
            .try_into()
            .map_err(|_| StateMachineError("bad snapshot".into()))?;
        self.applied
            .store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        Ok(())
    }
}

struct Cluster {
    _root: tempfile::TempDir,
    nodes: Vec<Option<Arc<RaftNode>>>,
}

async fn start_cluster(size: u64) -> Cluster {
    let root = tempfile::tempdir().unwrap();
    let mut listeners = Vec::new();
    let mut voters: Vec<(u64, SocketAddr)> = Vec::new();
    for id in 1..=size {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        voters.push((id, listener.local_addr().unwrap()));
        listeners.push(listener);
    }
    let faults = LinkFaults::new();
    let mut nodes = Vec::new();
    for ((id, addr), listener) in voters.clone().into_iter().zip(listeners) {
        let config = RaftConfig::new(id, voters.clone(), addr, root.path().join(id.to_string()));
        let node = RaftNode::start_with_listener(
            config,
            Arc::new(Counter::default()),
            listener,
            faults.clone(),
        )
        .await
        .unwrap();
        nodes.push(Some(Arc::new(node)));
    }
    Cluster { _root: root, nodes }
}

impl Cluster {
    async fn leader(&self) -> usize {
        loop {
            if let Some(i) = self
                .nodes
                .iter()
                .position(|n| n.as_ref().is_some_and(|n| n.is_leader()))
            {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Proposes through any live node until one commits it.
    async fn commit_one(&self) {
        loop {
            for node in self.nodes.iter().flatten() {
                match node.propose(vec![Bytes::from_static(b"probe")]).await {
                    Ok(_) => return,
                    Err(RaftError::NotLeader { .. }) => {}
                    Err(e) => panic!("propose: {e}"),
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

fn summary(mut samples: Vec<f64>) -> String {
    samples.sort_by(|a, b| a.total_cmp(b));
    let median = samples[samples.len() / 2];
    format!(
        "min {:.0} ms, median {:.0} ms, max {:.0} ms over {} runs",
        samples[0],
        median,
        samples[samples.len() - 1],
        samples.len()
    )
}

async fn failover(runs: usize) {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let mut cluster = start_cluster(3).await;
        cluster.leader().await;
        for _ in 0..10 {
            cluster.commit_one().await;
        }
        let leader = cluster.leader().await;
        let node = cluster.nodes[leader].take().unwrap();
        let started = Instant::now();
        if let Ok(node) = Arc::try_unwrap(node) {
            node.shutdown().await.unwrap();
        }
        cluster.commit_one().await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "failover (kill leader of 3 -> next commit, default timeouts): {}",
        summary(samples)
    );
}

async fn throughput(size: u64, in_flight: usize, duration: Duration) {
    let cluster = start_cluster(size).await;
    let leader = cluster.nodes[cluster.leader().await].clone().unwrap();
    let committed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..in_flight {
        let leader = leader.clone();
        let committed = committed.clone();
        tasks.push(tokio::spawn(async move {
            let record = Bytes::from(vec![7u8; 100]);
            while Instant::now() < deadline {
                leader.propose(vec![record.clone()]).await.unwrap();
                committed.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let rate = committed.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    println!(
        "throughput ({size} voter(s), {in_flight} proposals in flight, 100-byte entries): {rate:.0} entries/s"
    );
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent; keep that run short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (runs, secs) = if quick { (1, 1) } else { (10, 5) };
        failover(runs).await;
        throughput(3, 1, Duration::from_secs(secs)).await;
        throughput(3, 64, Duration::from_secs(secs)).await;
        throughput(1, 1, Duration::from_secs(secs)).await;
        throughput(1, 64, Duration::from_secs(secs)).await;
    });
}
