//! The host's leadership following and its once-only topic creation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shale_log::{LogConfig, LogManager, TopicPartition};
use shale_metadata::{MetadataImage, MetadataRecord};
use shale_replica::{Assignment, PartitionAssignment, ReplicaManager, RoleUpdate};
use uuid::Uuid;

use super::CoordinatorHost;

fn replicas(dir: &tempfile::TempDir) -> ReplicaManager {
    let logs = LogManager::open(vec![dir.path().to_path_buf()], 1).unwrap();
    ReplicaManager::new(1, Arc::new(logs), 3_600_000)
}

const TOPIC: &str = "__consumer_offsets";

/// An image where node 1 leads partition 0 of `TOPIC` (topic id `topic_id`) at
/// `leader_epoch`, and node `other_leader` leads partition 1.
fn image(topic_id: Uuid, leader_epoch: i32, other_leader: i32) -> MetadataImage {
    let partition = |partition, leader| MetadataRecord::Partition {
        topic_id,
        partition,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        leader,
        leader_epoch,
        partition_epoch: 0,
        adding_replicas: vec![],
        removing_replicas: vec![],
    };
    MetadataImage::default().apply_entry(
        &[
            MetadataRecord::Topic {
                name: TOPIC.into(),
                topic_id,
            },
            partition(0, 1),
            partition(1, other_leader),
        ],
        1,
    )
}

/// Hosts both partitions of `TOPIC` with node 1 leading what `leaders` says.
fn host(replicas: &ReplicaManager, topic_id: Uuid, leaders: [i32; 2]) {
    let wanted = (0..2)
        .map(|partition| {
            let leader_id = leaders[partition as usize];
            PartitionAssignment {
                tp: TopicPartition::new(TOPIC, partition),
                topic_id,
                leader_id,
                leader_epoch: 0,
                config: LogConfig::default(),
                role: RoleUpdate {
                    local_id: 1,
                    leader_id,
                    assignment: Assignment {
                        leader_epoch: 0,
                        partition_epoch: 0,
                        replicas: vec![1, 2],
                        isr: vec![1, 2],
                    },
                    lag_time_max_ms: 30_000,
                    min_insync_replicas: 1,
                },
            }
        })
        .collect();
    replicas.reconcile(wanted).unwrap();
}

/// Runs one pass; returns (loaded, unloaded) partitions.
fn follow(
    host: &CoordinatorHost<(Uuid, i32)>,
    replicas: &ReplicaManager,
    image: &MetadataImage,
) -> (Vec<i32>, Vec<i32>) {
    let mut loaded = Vec::new();
    let mut unloaded = Vec::new();
    host.follow_leadership(
        replicas,
        image,
        |topic_id, leader_epoch| (topic_id, leader_epoch),
        |partition| unloaded.push(partition),
        |partition, _, hosted| {
            assert_eq!(hosted.tp.partition, partition);
            loaded.push(partition);
        },
    );
    loaded.sort_unstable();
    unloaded.sort_unstable();
    (loaded, unloaded)
}

#[test]
fn led_partitions_load_once_and_unload_when_lost_or_reloaded_for_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let replicas = replicas(&dir);
    let topic_id = Uuid::from_u128(7);
    host(&replicas, topic_id, [1, 2]);
    let host: CoordinatorHost<(Uuid, i32)> = CoordinatorHost::new(TOPIC);
    // Node 1 leads partition 0 only.
    assert_eq!(
        follow(&host, &replicas, &image(topic_id, 0, 2)),
        (vec![0], vec![])
    );
    // The same image again changes nothing.
    assert_eq!(
        follow(&host, &replicas, &image(topic_id, 0, 2)),
        (vec![], vec![])
    );
    // Partition 1 moves here: it loads, partition 0 stays loaded.
    host_leaders(&replicas, topic_id);
    assert_eq!(
        follow(&host, &replicas, &image(topic_id, 0, 1)),
        (vec![1], vec![])
    );
    // A new key for both (here a new leader epoch): each unloads and loads again.
    assert_eq!(
        follow(&host, &replicas, &image(topic_id, 1, 1)),
        (vec![0, 1], vec![0, 1])
    );
    // Leadership of partition 1 leaves: it unloads.
    assert_eq!(
        follow(&host, &replicas, &image(topic_id, 1, 2)),
        (vec![], vec![1])
    );
}

/// Node 1 now leads both hosted partitions.
fn host_leaders(replicas: &ReplicaManager, topic_id: Uuid) {
    host(replicas, topic_id, [1, 1]);
}

#[test]
fn a_led_partition_without_its_log_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let replicas = replicas(&dir);
    let host: CoordinatorHost<(Uuid, i32)> = CoordinatorHost::new(TOPIC);
    // Nothing hosted: the image names a led partition whose log is not here yet.
    assert_eq!(
        follow(&host, &replicas, &image(Uuid::from_u128(7), 0, 2)),
        (vec![], vec![])
    );
}

#[tokio::test]
async fn concurrent_first_users_create_the_topic_once() {
    let host: Arc<CoordinatorHost<u32>> = Arc::new(CoordinatorHost::new("__consumer_offsets"));
    let created = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let host = host.clone();
        let created = created.clone();
        tasks.push(tokio::spawn(async move {
            let exists = || created.load(Ordering::SeqCst) > 0;
            host.ensure_topic(exists, || async {
                // Every caller has passed the first look before the topic exists.
                tokio::task::yield_now().await;
                created.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(created.load(Ordering::SeqCst), 1);
}
