//! MetadataNode on a Raft quorum: three combined voters on loopback, forwarding to the active
//! controller, failover, partitions, an observer, full restarts.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_metadata::runtime::{QuorumIo, QuorumMode, QuorumVoter};
use shale_metadata::{
    ControllerRequest, ControllerResponse, CreatableTopic, Endpoint, MetadataError, MetadataImage,
    MetadataNode, MetadataNodeConfig, SecurityProtocol,
};
use shale_raft::LinkFaults;
use tempfile::TempDir;
use tokio::net::TcpListener;
use uuid::Uuid;

/// Safety net for conditions that are awaited; never a pacing delay.
const WAIT_MAX: Duration = Duration::from_secs(60);

const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qk";

type TopicView = BTreeMap<String, (Uuid, usize)>;

fn topic_view(image: &MetadataImage) -> TopicView {
    image
        .topics()
        .map(|t| (t.name.clone(), (t.topic_id, t.partitions.len())))
        .collect()
}

struct Cluster {
    dir: TempDir,
    voters: Vec<QuorumVoter>,
    faults: Arc<LinkFaults>,
    nodes: BTreeMap<i32, MetadataNode>,
    /// Applied to every voter's configuration.
    tweak: fn(&mut MetadataNodeConfig),
}

fn no_tweak(_: &mut MetadataNodeConfig) {}

fn node_config(dir: &std::path::Path, node_id: i32, quorum: QuorumMode) -> MetadataNodeConfig {
    let mut config = MetadataNodeConfig::new(node_id, dir.join(format!("node-{node_id}")));
    config.broker_listeners = vec![Endpoint {
        name: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: 9000 + node_id as u16,
        security_protocol: SecurityProtocol::Plaintext,
    }];
    config.controller.broker_heartbeat_interval_ms = 200;
    config.controller.broker_session_timeout_ms = 2_000;
    config.quorum = quorum;
    // Every node of a cluster is formatted with the same cluster id.
    config.cluster_id = Some(CLUSTER_ID.into());
    config
}

async fn bind(addr: SocketAddr) -> TcpListener {
    // A crashed node's listener closes on a task of its own; the port frees up shortly.
    let started = Instant::now();
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(err) if started.elapsed() < WAIT_MAX => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("rebinding {addr}: {err}"),
        }
    }
}

impl Cluster {
    async fn start(size: i32) -> Cluster {
        Self::start_with(size, no_tweak).await
    }

    async fn start_with(size: i32, tweak: fn(&mut MetadataNodeConfig)) -> Cluster {
        let mut voters = Vec::new();
        let mut listeners = Vec::new();
        for node_id in 1..=size {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            voters.push(QuorumVoter {
                node_id,
                addr: listener.local_addr().unwrap(),
            });
            listeners.push((node_id, listener));
        }
        let mut cluster = Cluster {
            dir: tempfile::tempdir().unwrap(),
            voters,
            faults: LinkFaults::new(),
            nodes: BTreeMap::new(),
            tweak,
        };
        let starts: Vec<_> = listeners
            .into_iter()
            .map(|(id, listener)| tokio::spawn(cluster.start_voter(id, listener)))
            .collect();
        for start in starts {
            let node = start.await.unwrap().unwrap();
            cluster.nodes.insert(node.node_id(), node);
        }
        cluster
    }

    fn voter_config(&self, node_id: i32) -> MetadataNodeConfig {
        let me = self.voters.iter().find(|v| v.node_id == node_id).unwrap();
        let mut config = node_config(
            self.dir.path(),
            node_id,
            QuorumMode::Voter {
                voters: self.voters.clone(),
                listen_addr: me.addr,
            },
        );
        (self.tweak)(&mut config);
        config
    }

    fn start_voter(
        &self,
        node_id: i32,
        listener: TcpListener,
    ) -> impl std::future::Future<Output = Result<MetadataNode, MetadataError>> + Send + 'static
    {
        let config = self.voter_config(node_id);
        let faults = Arc::clone(&self.faults);
        MetadataNode::start_with_quorum_io(
            config,
            QuorumIo {
                listener: Some(listener),
                faults: Some(faults),
            },
        )
    }

    async fn restart(&mut self, node_ids: &[i32]) {
        let mut starts = Vec::new();
        for node_id in node_ids {
            let me = *self.voters.iter().find(|v| v.node_id == *node_id).unwrap();
            let listener = bind(me.addr).await;
            starts.push(tokio::spawn(self.start_voter(*node_id, listener)));
        }
        for start in starts {
            let node = start.await.unwrap().unwrap();
            self.nodes.insert(node.node_id(), node);
        }
    }

    fn node(&self, node_id: i32) -> &MetadataNode {
        &self.nodes[&node_id]
    }

    /// The active controller as the running nodes agree on it.
    async fn controller(&self) -> i32 {
        tokio::time::timeout(WAIT_MAX, async {
            loop {
                let mut receivers: Vec<_> = self
                    .nodes
                    .values()
                    .map(|n| n.quorum_log().leader())
                    .collect();
                let seen: Vec<Option<i32>> = receivers
                    .iter_mut()
                    .map(|r| r.borrow_and_update().leader_id)
                    .collect();
                if let Some(Some(id)) = seen.first() {
                    if self.nodes.contains_key(id) && seen.iter().all(|s| *s == Some(*id)) {
                        return *id;
                    }
                }
                let mut changes = tokio::task::JoinSet::new();
                for mut receiver in receivers {
                    changes.spawn(async move {
                        let _ = receiver.changed().await;
                    });
                }
                let _ = changes.join_next().await;
            }
        })
        .await
        .unwrap()
    }

    /// Waits until every running node's image includes `offset`.
    async fn converge(&self, offset: i64) {
        for node in self.nodes.values() {
            tokio::time::timeout(WAIT_MAX, node.wait_for_offset(offset))
                .await
                .unwrap()
                .unwrap();
        }
    }
}

async fn create(node: &MetadataNode, name: &str, partitions: i32) -> Result<Uuid, MetadataError> {
    let response = node
        .submit(ControllerRequest::CreateTopics {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: 1,
                assignments: vec![],
                configs: vec![],
            }],
            validate_only: false,
        })
        .await?;
    let ControllerResponse::CreateTopics(mut results) = response else {
        panic!("unexpected {response:?}")
    };
    results.pop().unwrap().1.map(|created| created.topic_id)
}

/// What a Kafka client does: `NotController` is retriable, and a retry that finds the topic
/// means the earlier attempt (whose answer was lost with the crashed controller) committed.
async fn create_retrying(node: &MetadataNode, name: &str, partitions: i32) -> Uuid {
    let mut retried = false;
    for _ in 0..20 {
        match create(node, name, partitions).await {
            Ok(id) => return id,
            Err(MetadataError::NotController) => retried = true,
            Err(MetadataError::TopicAlreadyExists(_)) if retried => {
                return node.image().topic(name).unwrap().topic_id
            }
            Err(err) => panic!("creating {name}: {err:?}"),
        }
    }
    panic!("creating {name}: no controller answered")
}

/// Every running node holds exactly `expected` once caught up with the newest of them.
async fn assert_same_topics(cluster: &Cluster, expected: &TopicView) {
    let newest = cluster
        .nodes
        .values()
        .map(|n| n.image().offset)
        .max()
        .unwrap();
    cluster.converge(newest).await;
    for node in cluster.nodes.values() {
        assert_eq!(
            &topic_view(&node.image()),
            expected,
            "node {}",
            node.node_id()
        );
    }
}

fn record(expected: &mut TopicView, name: &str, id: Uuid, partitions: usize) {
    expected.insert(name.to_string(), (id, partitions));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_create_through_any_node_and_agree() {
    let cluster = Cluster::start(3).await;
    let controller = cluster.controller().await;
    let mut expected = TopicView::new();
    for node_id in 1..=3 {
        let name = format!("from-{node_id}");
        let id = create(cluster.node(node_id), &name, node_id).await.unwrap();
        // Read-your-writes on the node that submitted, forwarded or not.
        assert!(cluster.node(node_id).image().topic(&name).is_some());
        record(&mut expected, &name, id, node_id as usize);
    }
    assert!(matches!(
        create(cluster.node(controller % 3 + 1), "from-1", 1).await,
        Err(MetadataError::TopicAlreadyExists(_))
    ));
    assert_same_topics(&cluster, &expected).await;
    for node in cluster.nodes.values() {
        let image = node.image();
        assert_eq!(image.active_controller_id(), Some(controller));
        assert!(image.feature_level("metadata.version").is_some());
        for broker in 1..=3 {
            assert!(image.broker(broker).unwrap().is_active(), "broker {broker}");
        }
    }
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_controller_is_replaced_and_catches_up_after_restart() {
    let mut cluster = Cluster::start(3).await;
    let mut expected = TopicView::new();
    for i in 0..5 {
        let id = create(cluster.node(i % 3 + 1), &format!("before-{i}"), 1)
            .await
            .unwrap();
        record(&mut expected, &format!("before-{i}"), id, 1);
    }
    let old = cluster.controller().await;
    let survivor = (old % 3) + 1;
    // A crash: no controlled shutdown, the handle is just dropped.
    let killed_at = Instant::now();
    drop(cluster.nodes.remove(&old));
    let id = create_retrying(cluster.node(survivor), "after-crash", 2).await;
    let failover = killed_at.elapsed();
    eprintln!(
        "failover: {} ms from crashing the controller to the next commit",
        failover.as_millis()
    );
    record(&mut expected, "after-crash", id, 2);
    let new = cluster.controller().await;
    assert_ne!(new, old);
    for i in 0..5 {
        let via = if i % 2 == 0 { new } else { survivor };
        let id = create_retrying(cluster.node(via), &format!("during-{i}"), 1).await;
        record(&mut expected, &format!("during-{i}"), id, 1);
    }
    // The new controller fences the crashed broker once its session expires.
    let mut images = cluster.node(new).subscribe();
    tokio::time::timeout(
        WAIT_MAX,
        images.wait_for(|image| image.broker(old).is_some_and(|b| b.fenced)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_same_topics(&cluster, &expected).await;

    cluster.restart(&[old]).await;
    let id = create(cluster.node(old), "after-restart", 1).await.unwrap();
    record(&mut expected, "after-restart", id, 1);
    assert_same_topics(&cluster, &expected).await;
    // Back from its files and unfenced by its new registration.
    let mut images = cluster.node(new).subscribe();
    tokio::time::timeout(
        WAIT_MAX,
        images.wait_for(|image| image.broker(old).is_some_and(|b| b.is_active())),
    )
    .await
    .unwrap()
    .unwrap();
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_voter_catches_up_after_healing() {
    let cluster = Cluster::start(3).await;
    let controller = cluster.controller().await;
    let cut = controller % 3 + 1;
    let others: Vec<u64> = (1..=3)
        .filter(|id| *id != cut)
        .map(|id| id as u64)
        .collect();
    cluster.faults.isolate(cut as u64, &others);
    let mut expected = topic_view(&cluster.node(controller).image());
    for i in 0..10 {
        let id = create(cluster.node(controller), &format!("while-cut-{i}"), 1)
            .await
            .unwrap();
        record(&mut expected, &format!("while-cut-{i}"), id, 1);
    }
    assert!(cluster.node(cut).image().topic("while-cut-9").is_none());
    cluster.faults.heal_all();
    let target = cluster.node(controller).image().offset;
    tokio::time::timeout(WAIT_MAX, cluster.node(cut).wait_for_offset(target))
        .await
        .unwrap()
        .unwrap();
    let any = cluster.controller().await;
    let id = create(cluster.node(cut), "after-heal", 1).await.unwrap();
    record(&mut expected, "after-heal", id, 1);
    let _ = any;
    assert_same_topics(&cluster, &expected).await;
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_follows_the_committed_image() {
    let cluster = Cluster::start(3).await;
    let observer = MetadataNode::start_with_quorum_io(
        node_config(
            cluster.dir.path(),
            4,
            QuorumMode::Observer {
                voters: cluster.voters.clone(),
            },
        ),
        QuorumIo::default(),
    )
    .await
    .unwrap();
    assert!(!observer.is_active_controller());
    let mut expected = TopicView::new();
    let id = create(&observer, "from-observer", 3).await.unwrap();
    assert!(observer.image().topic("from-observer").is_some());
    record(&mut expected, "from-observer", id, 3);
    let id = create(cluster.node(1), "from-voter", 1).await.unwrap();
    record(&mut expected, "from-voter", id, 1);
    let target = cluster.node(1).image().offset;
    tokio::time::timeout(WAIT_MAX, observer.wait_for_offset(target))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(topic_view(&observer.image()), expected);
    assert_same_topics(&cluster, &expected).await;
    let controller = cluster.controller().await;
    assert!(cluster
        .node(controller)
        .image()
        .broker(4)
        .unwrap()
        .is_active());
    // Every node, observer included, gets the leader's description of the quorum.
    let from_observer = observer.describe_quorum().await.unwrap();
    let from_voter = cluster.node(1).describe_quorum().await.unwrap();
    assert_eq!(from_observer.leader_id, controller);
    assert_eq!(from_voter.leader_id, controller);
    assert_eq!(
        from_voter
            .voters
            .iter()
            .map(|v| v.replica_id)
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(from_voter.high_watermark > target);
    assert!(from_voter.observers.iter().any(|o| o.replica_id == 4));
    observer.shutdown().await;
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_all_voters_at_once_keeps_every_record() {
    let mut cluster = Cluster::start(3).await;
    let mut expected = TopicView::new();
    for i in 0..6 {
        let id = create(cluster.node(i % 3 + 1), &format!("t-{i}"), 1)
            .await
            .unwrap();
        record(&mut expected, &format!("t-{i}"), id, 1);
    }
    assert_same_topics(&cluster, &expected).await;
    let nodes: Vec<MetadataNode> = std::mem::take(&mut cluster.nodes).into_values().collect();
    let stops: Vec<_> = nodes
        .into_iter()
        .map(|node| tokio::spawn(async move { node.shutdown().await }))
        .collect();
    for stop in stops {
        stop.await.unwrap();
    }
    cluster.restart(&[1, 2, 3]).await;
    let id = create(cluster.node(2), "after-full-restart", 1)
        .await
        .unwrap();
    record(&mut expected, "after-full-restart", id, 1);
    assert_same_topics(&cluster, &expected).await;
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

fn controller_only(config: &mut MetadataNodeConfig) {
    config.register_broker = false;
    config.broker_listeners.clear();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_only_voters_serve_broker_only_observers() {
    let cluster = Cluster::start_with(3, controller_only).await;
    let leader = cluster.controller().await;
    let brokers: Vec<MetadataNode> = {
        let starts: Vec<_> = [4, 5]
            .into_iter()
            .map(|id| {
                tokio::spawn(MetadataNode::start_with_quorum_io(
                    node_config(
                        cluster.dir.path(),
                        id,
                        QuorumMode::Observer {
                            voters: cluster.voters.clone(),
                        },
                    ),
                    QuorumIo::default(),
                ))
            })
            .collect();
        let mut brokers = Vec::new();
        for start in starts {
            brokers.push(start.await.unwrap().unwrap());
        }
        brokers
    };
    let id = create(&brokers[0], "on-brokers", 4).await.unwrap();
    let mut expected = TopicView::new();
    record(&mut expected, "on-brokers", id, 4);
    assert_same_topics(&cluster, &expected).await;
    let image = brokers[1].image();
    tokio::time::timeout(
        WAIT_MAX,
        brokers[1].wait_for_offset(brokers[0].image().offset),
    )
    .await
    .unwrap()
    .unwrap();
    // Only the brokers registered, and partitions live on them alone.
    let registered: Vec<i32> = brokers[1].image().brokers().map(|b| b.broker_id).collect();
    assert_eq!(registered, vec![4, 5]);
    for partition in brokers[1]
        .image()
        .topic("on-brokers")
        .unwrap()
        .partitions
        .values()
    {
        assert!(partition.replicas.iter().all(|r| *r == 4 || *r == 5));
    }
    // Clients are told a broker they can reach, not the controller-only leader.
    assert_eq!(brokers[0].quorum_leader().leader_id, Some(leader));
    assert_eq!(brokers[0].active_controller_id(), Some(4));
    assert_eq!(brokers[1].active_controller_id(), Some(5));
    assert!(image.offset >= 0);
    for broker in &brokers {
        broker.shutdown().await;
    }
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

fn snapshot_often(config: &mut MetadataNodeConfig) {
    config.snapshot_every_records = 5;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_truncate_the_quorum_log_and_survive_a_full_restart() {
    let mut cluster = Cluster::start_with(3, snapshot_often).await;
    let mut expected = TopicView::new();
    for i in 0..12 {
        let id = create(cluster.node(i % 3 + 1), &format!("s-{i}"), 1)
            .await
            .unwrap();
        record(&mut expected, &format!("s-{i}"), id, 1);
    }
    assert_same_topics(&cluster, &expected).await;
    let snapshot_file = |id: i32| {
        cluster
            .dir
            .path()
            .join(format!("node-{id}"))
            .join(shale_metadata::runtime::RAFT_LOG_SUBDIR)
            .join("snapshot")
    };
    for id in 1..=3 {
        assert!(snapshot_file(id).exists(), "node {id} took no snapshot");
    }
    let nodes: Vec<MetadataNode> = std::mem::take(&mut cluster.nodes).into_values().collect();
    for node in nodes {
        node.shutdown().await;
    }
    cluster.restart(&[1, 2, 3]).await;
    assert_same_topics(&cluster, &expected).await;
    // A broker joining now starts from a snapshot: the early entries are gone from the log.
    let observer = MetadataNode::start_with_quorum_io(
        node_config(
            cluster.dir.path(),
            4,
            QuorumMode::Observer {
                voters: cluster.voters.clone(),
            },
        ),
        QuorumIo::default(),
    )
    .await
    .unwrap();
    assert_eq!(topic_view(&observer.image()), expected);
    observer.shutdown().await;
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

/// Figures for the report, not assertions: commits per second through all three nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throughput_of_three_voters() {
    let cluster = Cluster::start(3).await;
    let _ = cluster.controller().await;
    let per_node = 100;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for node in cluster.nodes.values() {
        for lane in 0..8 {
            let node = node.clone();
            tasks.spawn(async move {
                let mut created = 0;
                for i in (lane..per_node).step_by(8) {
                    // A slow machine can lose an answer to an election; a client retries.
                    create_retrying(&node, &format!("n{}-{i}", node.node_id()), 1).await;
                    created += 1;
                }
                created
            });
        }
    }
    let mut total = 0;
    while let Some(created) = tasks.join_next().await {
        total += created.unwrap();
    }
    let elapsed = started.elapsed();
    eprintln!(
        "throughput: {total} CreateTopics committed in {} ms = {:.0} records/s",
        elapsed.as_millis(),
        total as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(total, 3 * per_node);
    // Each creation returned once its own node saw it; the node furthest along has them all.
    let newest = cluster
        .nodes
        .values()
        .max_by_key(|node| node.image().offset)
        .unwrap();
    let expected = topic_view(&newest.image());
    assert_eq!(expected.len(), 3 * per_node as usize);
    assert_same_topics(&cluster, &expected).await;
    for node in cluster.nodes.values() {
        node.shutdown().await;
    }
}

/// Sessions that never expire within a test: only a closed link or a probe can fence.
fn endless_sessions(config: &mut MetadataNodeConfig) {
    config.controller.broker_session_timeout_ms = 600_000;
}

/// Creates a topic with one partition on `replicas`, the first its leader.
async fn create_on(node: &MetadataNode, name: &str, replicas: Vec<i32>) {
    let response = node
        .submit(ControllerRequest::CreateTopics {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![(0, replicas)],
                configs: vec![],
            }],
            validate_only: false,
        })
        .await
        .unwrap();
    let ControllerResponse::CreateTopics(results) = response else {
        panic!("unexpected {response:?}")
    };
    results.into_iter().for_each(|(_, r)| {
        r.unwrap();
    });
}

/// Waits until `node`'s image satisfies `condition`.
async fn await_image(node: &MetadataNode, what: &str, condition: impl Fn(&MetadataImage) -> bool) {
    let mut images = node.subscribe();
    tokio::time::timeout(WAIT_MAX, images.wait_for(|image| condition(image)))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting until {what}"))
        .unwrap();
}

fn all_active(image: &MetadataImage, brokers: &[i32]) -> bool {
    brokers
        .iter()
        .all(|b| image.broker(*b).is_some_and(|r| r.is_active()))
}

/// Restarts `node_id` and waits until `watcher`'s image has all three brokers active again.
async fn restart_until_all_active(cluster: &mut Cluster, node_id: i32, watcher: i32) {
    tokio::time::timeout(WAIT_MAX, cluster.restart(&[node_id]))
        .await
        .expect("the restarted broker registered");
    await_image(
        cluster.node(watcher),
        "the restarted broker is active",
        |image| all_active(image, &[1, 2, 3]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_broker_is_fenced_when_its_session_link_closes() {
    let mut cluster = Cluster::start_with(3, endless_sessions).await;
    let controller = cluster.controller().await;
    let victim = controller % 3 + 1;
    let survivor = victim % 3 + 1;
    assert_ne!(survivor, controller);
    let others = [controller, survivor];
    // Every broker's heartbeats run on its link once it is unfenced.
    await_image(
        cluster.node(controller),
        "all brokers are active",
        |image| all_active(image, &[1, 2, 3]),
    )
    .await;
    create_on(
        cluster.node(controller),
        "led-by-victim",
        vec![victim, survivor, controller],
    )
    .await;
    let victim_epoch = cluster.node(victim).broker_epoch();
    // A crash: the handle is dropped, its sockets close without a goodbye.
    drop(cluster.nodes.remove(&victim));
    await_image(
        cluster.node(controller),
        "the crashed broker is fenced",
        |image| image.broker(victim).is_some_and(|b| b.fenced),
    )
    .await;
    let image = cluster.node(controller).image();
    let partition = &image.topic("led-by-victim").unwrap().partitions[&0];
    assert_ne!(partition.leader, victim);
    assert!(!partition.isr.contains(&victim));
    // The brokers whose links stay open keep their registrations.
    assert!(
        all_active(&image, &others),
        "{:?}",
        image.brokers().collect::<Vec<_>>()
    );

    // Its old registration is fenced, so the restarted broker registers at once instead of
    // waiting for the (ten-minute) session to expire.
    restart_until_all_active(&mut cluster, victim, controller).await;
    assert!(cluster.node(victim).broker_epoch() > victim_epoch);
    // Not a controlled shutdown: the last voter standing could not commit it and would wait
    // for its endless session.
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_died_with_the_controller_is_fenced_by_the_next_one() {
    let mut cluster = Cluster::start_with(3, endless_sessions).await;
    let old = cluster.controller().await;
    await_image(cluster.node(old), "all brokers are active", |image| {
        all_active(image, &[1, 2, 3])
    })
    .await;
    let survivor = old % 3 + 1;
    let other = survivor % 3 + 1;
    create_on(
        cluster.node(old),
        "led-by-controller",
        vec![old, survivor, other],
    )
    .await;
    drop(cluster.nodes.remove(&old));
    let new = cluster.controller().await;
    assert_ne!(new, old);
    // The new controller gives surviving brokers a full session, but finds nothing listening
    // on the dead one's port.
    await_image(
        cluster.node(new),
        "the crashed controller's broker is fenced",
        |image| image.broker(old).is_some_and(|b| b.fenced),
    )
    .await;
    let image = cluster.node(new).image();
    let partition = &image.topic("led-by-controller").unwrap().partitions[&0];
    assert_ne!(partition.leader, old);
    assert!(all_active(&image, &[survivor, other]));
    restart_until_all_active(&mut cluster, old, new).await;
    // Not a controlled shutdown: the last voter standing could not commit it and would wait
    // for its endless session.
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_broker_restarts_and_is_unfenced() {
    let mut cluster = Cluster::start_with(3, endless_sessions).await;
    let controller = cluster.controller().await;
    await_image(
        cluster.node(controller),
        "all brokers are active",
        |image| all_active(image, &[1, 2, 3]),
    )
    .await;
    let leaving = controller % 3 + 1;
    let node = cluster.nodes.remove(&leaving).unwrap();
    node.shutdown().await;
    // The controlled shutdown fenced it, no plain heartbeat from its heartbeat loop unfenced
    // it again afterwards, and its link closed with a goodbye: the next incarnation registers
    // at once (with a live old registration it would wait for the endless session).
    restart_until_all_active(&mut cluster, leaving, controller).await;
    // Not a controlled shutdown: the last voter standing could not commit it and would wait
    // for its endless session.
    drop(cluster);
}
