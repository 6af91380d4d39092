//! In-process clusters on loopback for the integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shale_raft::{
    LinkFaults, RaftConfig, RaftError, RaftNode, ReplicatedStateMachine, StateMachineError,
};
use tokio::net::TcpListener;

pub const WAIT: Duration = Duration::from_secs(20);

/// Records every applied record with its batch index; the snapshot is that whole list.
#[derive(Debug, Default)]
pub struct RecordingMachine {
    records: Mutex<Vec<(u64, Vec<u8>)>>,
    restores: Mutex<u64>,
}

impl RecordingMachine {
    pub fn records(&self) -> Vec<(u64, Vec<u8>)> {
        self.records.lock().unwrap().clone()
    }

    pub fn payloads(&self) -> Vec<Vec<u8>> {
        self.records().into_iter().map(|(_, r)| r).collect()
    }

    pub fn restores(&self) -> u64 {
        *self.restores.lock().unwrap()
    }
}

impl ReplicatedStateMachine for RecordingMachine {
    fn apply(&self, index: u64, records: &[Bytes]) {
        let mut all = self.records.lock().unwrap();
        if let Some((last, _)) = all.last() {
            assert!(index > *last, "index {index} applied after {last}");
        }
        all.extend(records.iter().map(|r| (index, r.to_vec())));
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, record) in self.records.lock().unwrap().iter() {
            out.extend_from_slice(&index.to_le_bytes());
            out.extend_from_slice(&(record.len() as u32).to_le_bytes());
            out.extend_from_slice(record);
        }
        out
    }

    fn restore(&self, snapshot: &[u8], _last_index: u64) -> Result<(), StateMachineError> {
        let mut records = Vec::new();
        let mut rest = snapshot;
        while !rest.is_empty() {
            if rest.len() < 12 {
                return Err(StateMachineError("truncated snapshot".into()));
            }
            let index = u64::from_le_bytes(rest[..8].try_into().unwrap());
            let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
            let record = rest
                .get(12..12 + len)
                .ok_or_else(|| StateMachineError("truncated record".into()))?;
            records.push((index, record.to_vec()));
            rest = &rest[12 + len..];
        }
        *self.records.lock().unwrap() = records;
        *self.restores.lock().unwrap() += 1;
        Ok(())
    }
}

pub fn fast_config(node_id: u64, voters: Vec<(u64, SocketAddr)>, dir: PathBuf) -> RaftConfig {
    let listen = voters
        .iter()
        .find(|(id, _)| *id == node_id)
        .map(|(_, addr)| *addr)
        .unwrap();
    let mut config = RaftConfig::new(node_id, voters, listen, dir);
    config.heartbeat_interval_ms = 50;
    config.election_timeout_min_ms = 250;
    config.election_timeout_max_ms = 500;
    config.rpc_timeout_ms = 1000;
    config
}

pub struct Cluster {
    pub root: tempfile::TempDir,
    pub voters: Vec<(u64, SocketAddr)>,
    pub nodes: BTreeMap<u64, RaftNode>,
    pub machines: BTreeMap<u64, Arc<RecordingMachine>>,
    pub faults: Arc<LinkFaults>,
    pub tweak: fn(&mut RaftConfig),
}

impl Cluster {
    pub async fn start(size: u64, tweak: fn(&mut RaftConfig)) -> Cluster {
        let mut listeners = BTreeMap::new();
        let mut voters = Vec::new();
        for id in 1..=size {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            voters.push((id, listener.local_addr().unwrap()));
            listeners.insert(id, listener);
        }
        let mut cluster = Cluster {
            root: tempfile::tempdir().unwrap(),
            voters,
            nodes: BTreeMap::new(),
            machines: BTreeMap::new(),
            faults: LinkFaults::new(),
            tweak,
        };
        for (id, listener) in listeners {
            cluster.start_node_on(id, listener).await;
        }
        cluster
    }

    pub fn config(&self, id: u64) -> RaftConfig {
        let mut config = fast_config(
            id,
            self.voters.clone(),
            self.root.path().join(format!("node-{id}")),
        );
        (self.tweak)(&mut config);
        config
    }

    async fn start_node_on(&mut self, id: u64, listener: TcpListener) {
        let machine = Arc::new(RecordingMachine::default());
        let node = RaftNode::start_with_listener(
            self.config(id),
            machine.clone(),
            listener,
            self.faults.clone(),
        )
        .await
        .unwrap();
        self.nodes.insert(id, node);
        self.machines.insert(id, machine);
    }

    /// (Re)starts a node from its files on its original address.
    pub async fn restart(&mut self, id: u64) {
        let addr = self.voters.iter().find(|(v, _)| *v == id).unwrap().1;
        // A node dropped without shutdown() closes its listener asynchronously.
        let deadline = tokio::time::Instant::now() + WAIT;
        let listener = loop {
            match TcpListener::bind(addr).await {
                Ok(listener) => break listener,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("rebinding {addr}: {e}"),
            }
        };
        self.start_node_on(id, listener).await;
    }

    /// Drops the node without shutdown(), as close to a crash as an in-process node gets.
    pub fn crash(&mut self, id: u64) {
        drop(self.nodes.remove(&id).unwrap());
    }

    pub async fn kill(&mut self, id: u64) {
        let node = self.nodes.remove(&id).unwrap();
        node.shutdown().await.unwrap();
    }

    pub fn node(&self, id: u64) -> &RaftNode {
        &self.nodes[&id]
    }

    pub fn machine(&self, id: u64) -> Arc<RecordingMachine> {
        self.machines[&id].clone()
    }

    /// Waits until one running node is leader and all running nodes it can reach agree.
    pub async fn wait_leader(&self, among: &[u64]) -> u64 {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leaders: Vec<u64> = among
                .iter()
                .filter(|id| self.nodes[id].is_leader())
                .copied()
                .collect();
            if let [leader] = leaders[..] {
                if among
                    .iter()
                    .all(|id| self.nodes[id].leader_id() == Some(leader))
                {
                    return leader;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no leader among {among:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn running(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// Proposes through whichever running node leads, retrying across leader changes.
    pub async fn propose(&self, records: Vec<&[u8]>) -> u64 {
        let records: Vec<Bytes> = records.into_iter().map(Bytes::copy_from_slice).collect();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leader = self.nodes.values().find(|n| n.is_leader());
            if let Some(leader) = leader {
                match leader.propose(records.clone()).await {
                    Ok(index) => return index,
                    Err(RaftError::NotLeader { .. }) => {}
                    Err(e) => panic!("propose failed: {e}"),
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "proposal not committed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wait_applied(&self, ids: &[u64], index: u64) {
        for id in ids {
            self.nodes[id].wait_applied(index, WAIT).await.unwrap();
        }
    }

    /// Asserts every listed node applied exactly `expected` payloads in order.
    pub fn assert_payloads(&self, ids: &[u64], expected: &[Vec<u8>]) {
        for id in ids {
            assert_eq!(self.machines[id].payloads(), expected, "node {id}");
        }
    }
}

pub fn payload(i: usize) -> Vec<u8> {
    format!("record-{i}").into_bytes()
}
