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
