//! The host's leadership following and its once-only topic creation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shale_log::LogManager;
use shale_metadata::MetadataImage;
use shale_replica::ReplicaManager;

use super::CoordinatorHost;

fn replicas(dir: &tempfile::TempDir) -> ReplicaManager {
    let logs = LogManager::open(vec![dir.path().to_path_buf()], 1).unwrap();
    ReplicaManager::new(1, Arc::new(logs), 3_600_000)
}

#[test]
fn nothing_is_loaded_without_a_led_partition() {
    let dir = tempfile::tempdir().unwrap();
    let replicas = replicas(&dir);
    let host: CoordinatorHost<u32> = CoordinatorHost::new("__consumer_offsets");
    let image = MetadataImage::default();
    let mut loads = 0;
    let mut unloads = 0;
    host.follow_leadership(
        &replicas,
        &image,
        |_, _| 0,
        |_| unloads += 1,
        |_, _, _| loads += 1,
    );
    assert_eq!((loads, unloads), (0, 0));
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
