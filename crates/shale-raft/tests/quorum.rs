//! Voters on loopback: election, replication, failover, restarts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use common::{payload, Cluster, RecordingMachine, WAIT};
use shale_raft::{RaftConfig, RaftError, RaftNode};

fn no_tweak(_: &mut RaftConfig) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_voter_starts_without_formatting_and_restarts_without_reinitialising() {
    let mut cluster = Cluster::start(1, no_tweak).await;
    assert_eq!(cluster.wait_leader(&[1]).await, 1);
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..5 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.wait_applied(&[1], last).await;
    cluster.assert_payloads(&[1], &expected);

    cluster.kill(1).await;
    cluster.restart(1).await;
    assert_eq!(cluster.wait_leader(&[1]).await, 1);
    cluster.wait_applied(&[1], last).await;
    cluster.assert_payloads(&[1], &expected);
    // The log survived: a re-initialisation would have been refused or restarted it at 0.
    assert!(cluster.node(1).status().last_log_index.unwrap() >= last);
    let next = cluster.propose(vec![b"after-restart"]).await;
    assert!(next > last);
    expected.push(b"after-restart".to_vec());
    cluster.wait_applied(&[1], next).await;
    cluster.assert_payloads(&[1], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_elect_a_leader_and_apply_the_same_entries_in_order() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..20 {
        let batch = [payload(2 * i), payload(2 * i + 1)];
        last = cluster.propose(vec![&batch[0], &batch[1]]).await;
        expected.extend(batch);
    }
    cluster.wait_applied(&[1, 2, 3], last).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
    // Records of one batch share its index; batches have strictly increasing indexes.
    let records = cluster.machine(leader).records();
    assert!(records.chunks(2).all(|pair| pair[0].0 == pair[1].0));
    assert!(records
        .windows(3)
        .all(|w| w[0].0 <= w[1].0 && w[1].0 <= w[2].0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_refuse_proposals_and_name_the_leader() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let follower = [1, 2, 3].into_iter().find(|id| *id != leader).unwrap();
    let err = cluster
        .node(follower)
        .propose(vec![Bytes::from_static(b"x")])
        .await
        .unwrap_err();
    let leader_addr = cluster.node(leader).local_addr();
    match err {
        RaftError::NotLeader {
            leader_id,
            leader_addr: addr,
        } => {
            assert_eq!(leader_id, Some(leader));
            assert_eq!(addr, Some(leader_addr));
        }
        other => panic!("expected NotLeader, got {other}"),
    }
    let too_big = vec![Bytes::from(vec![0u8; shale_raft::MAX_PROPOSAL_BYTES + 1])];
    assert!(matches!(
        cluster.node(leader).propose(too_big).await,
        Err(RaftError::ProposalTooLarge { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_elects_another_and_the_old_one_catches_up_after_restart() {
    let mut cluster = Cluster::start(3, no_tweak).await;
    let old_leader = cluster.wait_leader(&[1, 2, 3]).await;
    let mut expected = Vec::new();
    for i in 0..10 {
        cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }

    cluster.kill(old_leader).await;
    let survivors: Vec<u64> = cluster.running();
    let new_leader = cluster.wait_leader(&survivors).await;
    assert_ne!(new_leader, old_leader);
    let mut last = 0;
    for i in 10..20 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.wait_applied(&survivors, last).await;
    cluster.assert_payloads(&survivors, &expected);

    cluster.restart(old_leader).await;
    cluster.wait_applied(&[old_leader], last).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let index = cluster.propose(vec![b"all-three"]).await;
    expected.push(b"all-three".to_vec());
    cluster.wait_applied(&[1, 2, 3], index).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
    assert!(cluster.node(leader).status().current_term > 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_voter_catches_up_after_healing_without_losing_entries() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let mut expected = Vec::new();
    let mut before_cut = 0;
    for i in 0..5 {
        before_cut = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    let isolated = [1, 2, 3].into_iter().find(|id| *id != leader).unwrap();
    let others: Vec<u64> = [1, 2, 3].into_iter().filter(|id| *id != isolated).collect();
    cluster.wait_applied(&[isolated], before_cut).await;
    cluster.faults.isolate(isolated, &others);

    let mut last = 0;
    for i in 5..25 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.wait_applied(&others, last).await;
    cluster.assert_payloads(&others, &expected);
    // Cut off, the isolated voter cannot have applied the new entries.
    assert_eq!(cluster.machine(isolated).payloads(), expected[..5].to_vec());

    cluster.faults.heal_all();
    cluster.wait_applied(&[isolated], last).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
    // Its elections while cut off may have raised its term; the quorum still converges.
    cluster.wait_leader(&[1, 2, 3]).await;
    let index = cluster.propose(vec![b"healed"]).await;
    expected.push(b"healed".to_vec());
    cluster.wait_applied(&[1, 2, 3], index).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_every_node_at_once_restores_identical_state() {
    let mut cluster = Cluster::start(3, no_tweak).await;
    cluster.wait_leader(&[1, 2, 3]).await;
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..15 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    cluster.wait_applied(&[1, 2, 3], last).await;
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
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_rejects_a_node_that_is_not_a_voter() {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = RaftConfig::new(7, vec![(1, addr)], addr, dir.path());
    let result = RaftNode::start_with_listener(
        config,
        Arc::new(RecordingMachine::default()),
        listener,
        shale_raft::LinkFaults::new(),
    )
    .await;
    assert!(matches!(result, Err(RaftError::Config(_))));
    let _ = WAIT;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voter_starting_with_an_empty_directory_joins_and_catches_up() {
    let mut cluster = Cluster::start(3, no_tweak).await;
    cluster.kill(3).await;
    std::fs::remove_dir_all(cluster.root.path().join("node-3")).unwrap();
    cluster.wait_leader(&[1, 2]).await;
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..10 {
        last = cluster.propose(vec![&payload(i)]).await;
        expected.push(payload(i));
    }
    // Its first start initialises with the same membership entry the others hold at index 0.
    cluster.restart(3).await;
    cluster.wait_applied(&[3], last).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_leader_without_shutdown_fails_over_and_it_rejoins() {
    let mut cluster = Cluster::start(3, no_tweak).await;
    let old_leader = cluster.wait_leader(&[1, 2, 3]).await;
    let mut expected = vec![payload(0)];
    cluster.propose(vec![&payload(0)]).await;
    cluster.crash(old_leader);
    let survivors = cluster.running();
    let new_leader = cluster.wait_leader(&survivors).await;
    assert_ne!(new_leader, old_leader);
    let index = cluster.propose(vec![&payload(1)]).await;
    expected.push(payload(1));
    cluster.restart(old_leader).await;
    cluster.wait_applied(&[1, 2, 3], index).await;
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_port_serves_the_controller_service_and_refuses_other_clusters() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (service_tx, mut service_rx) = tokio::sync::mpsc::channel(4);
    let mut config = RaftConfig::new(1, vec![(1, addr)], addr, dir.path());
    config.cluster_id = "cluster-a".into();
    config.controller_service = Some(service_tx);
    let node = RaftNode::start_with_listener(
        config,
        Arc::new(RecordingMachine::default()),
        listener,
        shale_raft::LinkFaults::new(),
    )
    .await
    .unwrap();

    // The controller service gets the connection after its preamble, bytes intact.
    let mut client = shale_raft::connect_service(
        addr,
        shale_raft::SERVICE_CONTROLLER,
        "cluster-a",
        &shale_raft::Plaintext,
        WAIT,
    )
    .await
    .unwrap();
    client.write_all(b"ping").await.unwrap();
    let mut served = tokio::time::timeout(WAIT, service_rx.recv())
        .await
        .unwrap()
        .unwrap();
    let mut got = [0u8; 4];
    served.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"ping");

    // A node of another cluster is answered with an error and disconnected.
    let mut stranger = shale_raft::connect_service(
        addr,
        shale_raft::SERVICE_RAFT,
        "cluster-b",
        &shale_raft::Plaintext,
        WAIT,
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stranger.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&answer).contains("cluster-b"));
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_proposals_commit_in_the_order_given() {
    let cluster = Cluster::start(3, no_tweak).await;
    let leader = cluster.wait_leader(&[1, 2, 3]).await;
    let batches: Vec<Vec<Bytes>> = (0..40).map(|i| vec![Bytes::from(payload(i))]).collect();
    let indexes = cluster.node(leader).propose_many(batches).await.unwrap();
    assert_eq!(indexes.len(), 40);
    assert!(indexes.windows(2).all(|w| w[1] == w[0] + 1), "{indexes:?}");
    let last = *indexes.last().unwrap();
    cluster.wait_applied(&[1, 2, 3], last).await;
    let expected: Vec<Vec<u8>> = (0..40).map(payload).collect();
    cluster.assert_payloads(&[1, 2, 3], &expected);
}

/// A hook that authenticates nobody: every connection is refused before its preamble.
#[derive(Debug)]
struct RefuseAll;

impl shale_raft::PeerSecurity for RefuseAll {
    fn connect(
        &self,
        stream: tokio::net::TcpStream,
        _addr: std::net::SocketAddr,
    ) -> shale_raft::SecureFuture<'_> {
        Box::pin(async move { Ok(Box::new(stream) as shale_raft::BoxedPeerStream) })
    }

    fn accept(
        &self,
        _stream: tokio::net::TcpStream,
        _peer: std::net::SocketAddr,
    ) -> shale_raft::SecureFuture<'_> {
        Box::pin(async { Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied)) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_security_hook_refuses_reaches_no_service() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (service_tx, mut service_rx) = tokio::sync::mpsc::channel(4);
    let mut config = RaftConfig::new(1, vec![(1, addr)], addr, dir.path());
    config.cluster_id = "cluster-a".into();
    config.controller_service = Some(service_tx);
    config.security = Arc::new(RefuseAll);
    let node = RaftNode::start_with_listener(
        config,
        Arc::new(RecordingMachine::default()),
        listener,
        shale_raft::LinkFaults::new(),
    )
    .await
    .unwrap();
    let mut client = shale_raft::connect_service(
        addr,
        shale_raft::SERVICE_CONTROLLER,
        "cluster-a",
        &shale_raft::Plaintext,
        WAIT,
    )
    .await
    .unwrap();
    let _ = client.write_all(b"ping").await;
    // Closed without a byte of answer, and the controller service never saw it.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(WAIT, client.read_to_end(&mut answer)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "{read:?} {answer:?}"
    );
    assert!(service_rx.try_recv().is_err());
    node.shutdown().await.unwrap();
}
