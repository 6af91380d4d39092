//! Snapshots, log purge, torn-tail recovery and hostile input on the listener.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::time::Duration;

use common::{payload, Cluster, WAIT};
use shale_raft::RaftConfig;
use tokio::io::AsyncWriteExt;

fn snapshot_often(config: &mut RaftConfig) {
    config.snapshot_every_entries = 10;
    config.log_entries_kept_after_snapshot = 0;
}

fn no_tweak(_: &mut RaftConfig) {}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_behind_voter_catches_up_from_a_snapshot_after_the_log_was_purged() {
    let mut cluster = Cluster::start(3, snapshot_often).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let lagging = [1, 2, 3].into_iter().find(|id| *id != leader).unwrap();
    let others: Vec<u64> = [1, 2, 3].into_iter().filter(|id| *id != lagging).collect();
    cluster.faults.isolate(lagging, &others);

    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..60 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.wait_applied(&others, last).await;
    let leader_node = cluster.node(leader);
    wait_until("leader purges its log", || {
        leader_node.status().purged_index.is_some_and(|p| p >= 40)
    })
    .await;
    let lagging_last = cluster.node(lagging).status().last_log_index.unwrap_or(0);
    assert!(
        lagging_last < leader_node.status().purged_index.unwrap(),
        "the lagging voter must need entries that were purged"
    );

    cluster.faults.heal_all();
    cluster.wait_applied(&[lagging], last).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
    assert!(
        cluster.machine(lagging).restores() >= 1,
        "caught up through a snapshot"
    );
    assert!(cluster.node(lagging).status().snapshot_index.is_some());

    // Restarting from snapshot files plus the remaining log rebuilds the same state.
    let before: Vec<_> = (1..=3).map(|id| cluster.machine(id).records()).collect();
    for id in 1..=3 {
        cluster.kill(id).await;
    }
    for id in 1..=3 {
        cluster.restart(id).await;
    }
    cluster.wait_leader(&[1, 2, 3]).await;
    cluster.wait_applied(&[1, 2, 3], last).await;
    let after: Vec<_> = (1..=3).map(|id| cluster.machine(id).records()).collect();
    assert_eq!(before, after);
    let index = cluster.propose(vec![b"after"]).await;
    expected.push(b"after".to_vec());
    cluster.wait_applied(&[1, 2, 3], index).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

fn newest_segment(cluster: &Cluster, id: u64) -> std::path::PathBuf {
    let dir = cluster.root.path().join(format!("node-{id}/log"));
    let mut segments: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    segments.pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_of_the_log_is_truncated_at_start_up() {
    let mut cluster = Cluster::start(1, no_tweak).await;
    cluster.wait_leader(&[1]).await;
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..5 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.kill(1).await;

    // A crash in the middle of an append: a frame header promising more bytes than follow.
    let segment = newest_segment(&cluster, 1);
    let intact_len = std::fs::metadata(&segment).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    file.write_all(&100u32.to_le_bytes()).unwrap();
    file.write_all(&[0xab; 4]).unwrap();
    file.write_all(b"partial").unwrap();
    drop(file);

    cluster.restart(1).await;
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), intact_len);
    cluster.wait_leader(&[1]).await;
    cluster.wait_applied(&[1], last).await;
    cluster.assert_payloads(&[1], &expected);

    // Appends after the repair are readable after another restart.
    let index = cluster.propose(vec![b"after-repair"]).await;
    expected.push(b"after-repair".to_vec());
    cluster.kill(1).await;
    cluster.restart(1).await;
    cluster.wait_leader(&[1]).await;
    cluster.wait_applied(&[1], index).await;
    cluster.assert_payloads(&[1], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_vote_file_stops_start_up_instead_of_being_ignored() {
    let mut cluster = Cluster::start(1, no_tweak).await;
    cluster.wait_leader(&[1]).await;
    cluster.propose(vec![b"x"]).await;
    cluster.kill(1).await;
    let vote = cluster.root.path().join("node-1/log/vote");
    let mut raw = std::fs::read(&vote).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 0xff;
    std::fs::write(&vote, raw).unwrap();

    let addr = cluster.voters[0].1;
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let result = shale_raft::RaftNode::start_with_listener(
        cluster.config(1),
        std::sync::Arc::new(common::RecordingMachine::default()),
        listener,
        cluster.faults.clone(),
    )
    .await;
    assert!(matches!(result, Err(shale_raft::RaftError::Corrupt { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_controller_listener_does_not_disturb_the_quorum() {
    let cluster = Cluster::start(3, no_tweak).await;
    cluster.wait_leader(&[1, 2, 3]).await;
    for (_, addr) in cluster.voters.clone() {
        // Wrong magic.
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        // Right magic, absurd frame length.
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&0x5348_5246u32.to_be_bytes())
            .await
            .unwrap();
        stream.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        // Right magic, undecodable frame.
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&0x5348_5246u32.to_be_bytes())
            .await
            .unwrap();
        stream.write_all(&16u32.to_be_bytes()).await.unwrap();
        stream.write_all(&[0xff; 16]).await.unwrap();
        // Truncated frame, then the connection drops.
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&0x5348_5246u32.to_be_bytes())
            .await
            .unwrap();
        stream.write_all(&1000u32.to_be_bytes()).await.unwrap();
        stream.write_all(&[1; 10]).await.unwrap();
    }
    let index = cluster.propose(vec![b"still-working"]).await;
    cluster.wait_applied(&[1, 2, 3], index).await;
    cluster.assert_payloads(&[1, 2, 3], &[b"still-working".to_vec()]);
}
