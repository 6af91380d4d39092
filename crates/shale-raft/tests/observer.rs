//! Observers follow the committed log without voting.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{payload, Cluster, RecordingMachine, WAIT};
use shale_raft::{ObserverConfig, RaftConfig, RaftObserver};

fn no_tweak(_: &mut RaftConfig) {}

fn snapshot_often(config: &mut RaftConfig) {
    config.snapshot_every_entries = 10;
    config.log_entries_kept_after_snapshot = 0;
}

fn observer(cluster: &Cluster, id: u64) -> (RaftObserver, Arc<RecordingMachine>) {
    let machine = Arc::new(RecordingMachine::default());
    let observer = RaftObserver::start_with_faults(
        ObserverConfig::new(id, cluster.voters.clone()),
        machine.clone(),
        cluster.faults.clone(),
    )
    .unwrap();
    (observer, machine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_follows_a_single_voter() {
    let cluster = Cluster::start(1, no_tweak).await;
    cluster.wait_leader(&[1]).await;
    let (observer, machine) = observer(&cluster, 100);
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..10 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    observer.wait_applied(last, WAIT).await.unwrap();
    assert_eq!(machine.records(), cluster.machine(1).records());
    assert_eq!(observer.leader_id(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_keeps_following_across_a_leader_change() {
    let mut cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let (observer, machine) = observer(&cluster, 100);
    let mut last = 0;
    for i in 0..10 {
        last = cluster.propose(vec![&payload(i)]).await;
    }
    observer.wait_applied(last, WAIT).await.unwrap();

    cluster.kill(leader).await;
    let survivors = cluster.running();
    let new_leader = cluster.wait_leader(&survivors).await;
    for i in 10..20 {
        last = cluster.propose(vec![&payload(i)]).await;
    }
    observer.wait_applied(last, WAIT).await.unwrap();
    assert_eq!(machine.records(), cluster.machine(new_leader).records());
    let expected: Vec<Vec<u8>> = (0..20).map(payload).collect();
    assert_eq!(machine.payloads(), expected);
    assert_ne!(observer.leader_id(), Some(leader));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_observer_starts_from_a_snapshot_when_the_log_was_purged() {
    let cluster = Cluster::start(3, snapshot_often).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let mut last = 0;
    for i in 0..45 {
        last = cluster.propose(vec![&payload(i)]).await;
    }
    cluster.wait_applied(&[1, 2, 3], last).await;
    assert!(cluster.node(leader).status().purged_index.is_some());

    let (observer, machine) = observer(&cluster, 100);
    observer.wait_applied(last, WAIT).await.unwrap();
    assert!(machine.restores() >= 1);
    let expected: Vec<Vec<u8>> = (0..45).map(payload).collect();
    assert_eq!(machine.payloads(), expected);
    let index = cluster.propose(vec![b"more"]).await;
    observer.wait_applied(index, WAIT).await.unwrap();
    assert_eq!(machine.records(), cluster.machine(leader).records());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_cut_off_from_the_leader_reads_from_another_voter() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    cluster.faults.cut(100, leader);
    let (observer, machine) = observer(&cluster, 100);
    let mut last = 0;
    for i in 0..10 {
        last = cluster.propose(vec![&payload(i)]).await;
    }
    observer.wait_applied(last, WAIT).await.unwrap();
    let expected: Vec<Vec<u8>> = (0..10).map(payload).collect();
    assert_eq!(machine.payloads(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_log_serves_pull_readers_on_voters_and_observers() {
    use bytes::Bytes;
    use shale_raft::{CommittedLog, CommittedRead, RaftNode};

    // Voters whose state machine is a CommittedLog.
    let root = tempfile::tempdir().unwrap();
    let mut listeners = Vec::new();
    let mut voters = Vec::new();
    for id in 1..=3u64 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        voters.push((id, listener.local_addr().unwrap()));
        listeners.push(listener);
    }
    let faults = shale_raft::LinkFaults::new();
    let mut nodes = Vec::new();
    let mut logs = Vec::new();
    for ((id, _), listener) in voters.clone().into_iter().zip(listeners) {
        let mut config = common::fast_config(id, voters.clone(), root.path().join(id.to_string()));
        snapshot_often(&mut config);
        let log = CommittedLog::new();
        nodes.push(
            RaftNode::start_with_listener(config, log.clone(), listener, faults.clone())
                .await
                .unwrap(),
        );
        logs.push(log);
    }
    // Proposals go to whichever voter leads at the time; early elections may move it.
    let mut last = 0;
    for i in 0..30 {
        let deadline = tokio::time::Instant::now() + WAIT;
        last = loop {
            if let Some(leader) = nodes.iter().find(|n| n.is_leader()) {
                match leader.propose(vec![Bytes::from(payload(i))]).await {
                    Ok(index) => break index,
                    Err(shale_raft::RaftError::NotLeader { .. }) => {}
                    Err(e) => panic!("propose: {e}"),
                }
            }
            assert!(tokio::time::Instant::now() < deadline, "no leader");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
    }
    // The application compacts at some index; readers behind it must load its snapshot.
    for log in &logs {
        let mut committed = log.committed_index();
        tokio::time::timeout(WAIT, committed.wait_for(|c| c.is_some_and(|c| c >= last)))
            .await
            .unwrap()
            .unwrap();
    }
    let CommittedRead::Entries(all) = logs[0].read_committed(None, 1000) else {
        panic!("nothing compacted yet")
    };
    assert_eq!(all.len(), 30);
    let compact_at = all[9].0;
    logs[0].save_snapshot(compact_at, Bytes::from_static(b"image"));
    assert_eq!(
        logs[0].read_committed(Some(0), 10),
        CommittedRead::SnapshotRequired
    );
    let CommittedRead::Entries(rest) = logs[0].read_committed(Some(compact_at), 1000) else {
        panic!("entries after the snapshot")
    };
    assert_eq!(rest, all[10..].to_vec());

    // An observer with its own CommittedLog sees the same batches.
    let observed = CommittedLog::new();
    let observer = RaftObserver::start_with_faults(
        ObserverConfig::new(100, voters.clone()),
        observed.clone(),
        faults.clone(),
    )
    .unwrap();
    observer.wait_applied(last, WAIT).await.unwrap();
    match observed.read_committed(None, 1000) {
        CommittedRead::Entries(entries) => assert_eq!(entries, all),
        // The observer started from a voter's Raft snapshot: compare what follows its base.
        CommittedRead::SnapshotRequired => {
            let (base, _) = observed.latest_snapshot().unwrap();
            let CommittedRead::Entries(entries) = observed.read_committed(Some(base), 1000) else {
                panic!("entries after the snapshot")
            };
            let expected: Vec<_> = all.iter().filter(|(i, _)| *i > base).cloned().collect();
            assert_eq!(entries, expected);
        }
    }
    for node in nodes {
        node.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_reports_every_voter_and_observer() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let (observer, _machine) = observer(&cluster, 100);
    let mut last = 0;
    for i in 0..5 {
        last = cluster.propose(vec![&payload(i)]).await;
    }
    cluster.wait_applied(&[1, 2, 3], last).await;
    observer.wait_applied(last, WAIT).await.unwrap();
    let followers: Vec<u64> = [1, 2, 3].into_iter().filter(|id| *id != leader).collect();
    assert!(cluster.node(followers[0]).quorum_progress().is_none());
    // Followers' matched indexes and the observer's next fetch reach the end as they settle.
    let progress = tokio::time::timeout(WAIT, async {
        loop {
            let p = cluster.node(leader).quorum_progress().unwrap();
            let settled = p.voters.iter().all(|v| v.log_end_index == p.high_watermark)
                && p.observers
                    .iter()
                    .any(|o| o.log_end_index == p.high_watermark);
            if settled {
                return p;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(progress.leader_id, leader);
    assert_eq!(progress.high_watermark, last + 1);
    assert_eq!(
        progress
            .voters
            .iter()
            .map(|v| v.node_id)
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(progress
        .voters
        .iter()
        .all(|v| v.last_fetch_ms > 0 && v.last_caught_up_ms > 0));
    assert_eq!(progress.observers[0].node_id, 100);
    observer.shutdown();
}
