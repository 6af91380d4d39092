use uuid::Uuid;

use super::*;

fn key(member: &str) -> ShareSessionKey {
    ShareSessionKey {
        group_id: "g".into(),
        member_id: member.into(),
    }
}

fn tp(n: u128, partition: i32) -> TopicIdPartition {
    (Uuid::from_u128(n), partition)
}

#[test]
fn initial_epoch_opens_and_increments() {
    let mut cache = ShareSessionCache::new(10);
    let opened = cache
        .fetch(&key("m"), 0, 7, &[tp(1, 0), tp(1, 1)], &[], false)
        .expect("accepted");
    assert_eq!(opened.partitions, vec![tp(1, 0), tp(1, 1)]);
    assert!(!opened.closed);
    let next = cache
        .fetch(&key("m"), 1, 7, &[tp(2, 0)], &[tp(1, 0)], true)
        .expect("accepted");
    assert_eq!(next.partitions, vec![tp(1, 1), tp(2, 0)]);
    // The same epoch again is stale.
    assert_eq!(
        cache.fetch(&key("m"), 1, 7, &[], &[], false),
        Err(ShareSessionError::InvalidEpoch {
            expected: 2,
            given: 1
        })
    );
}

#[test]
fn initial_epoch_with_acknowledgements_is_invalid() {
    let mut cache = ShareSessionCache::new(10);
    assert!(matches!(
        cache.fetch(&key("m"), 0, 1, &[tp(1, 0)], &[], true),
        Err(ShareSessionError::InvalidRequest(_))
    ));
    assert!(cache.is_empty());
}

#[test]
fn unknown_session_is_not_found() {
    let mut cache = ShareSessionCache::new(10);
    assert!(matches!(
        cache.fetch(&key("m"), 3, 1, &[], &[], false),
        Err(ShareSessionError::NotFound { .. })
    ));
    assert!(matches!(
        cache.acknowledge(&key("m"), 3),
        Err(ShareSessionError::NotFound { .. })
    ));
    assert!(matches!(
        cache.fetch(&key("m"), FINAL_EPOCH, 1, &[], &[], false),
        Err(ShareSessionError::NotFound { .. })
    ));
}

#[test]
fn final_epoch_closes_and_may_not_add() {
    let mut cache = ShareSessionCache::new(10);
    cache
        .fetch(&key("m"), 0, 1, &[tp(1, 0)], &[], false)
        .expect("accepted");
    assert!(matches!(
        cache.fetch(&key("m"), FINAL_EPOCH, 1, &[tp(1, 1)], &[], false),
        Err(ShareSessionError::InvalidRequest(_))
    ));
    let closed = cache
        .fetch(&key("m"), FINAL_EPOCH, 1, &[], &[], true)
        .expect("accepted");
    assert!(closed.closed);
    assert_eq!(closed.partitions, vec![tp(1, 0)]);
    assert!(cache.is_empty());
}

#[test]
fn limit_counts_new_sessions_only() {
    let mut cache = ShareSessionCache::new(1);
    cache
        .fetch(&key("a"), 0, 1, &[tp(1, 0)], &[], false)
        .expect("accepted");
    assert_eq!(
        cache.fetch(&key("b"), 0, 2, &[tp(1, 0)], &[], false),
        Err(ShareSessionError::LimitReached(1))
    );
    // Replacing one's own session is not a new one.
    cache
        .fetch(&key("a"), 0, 1, &[tp(1, 1)], &[], false)
        .expect("accepted");
    assert_eq!(cache.len(), 1);
}

#[test]
fn acknowledge_advances_epoch_and_final_closes() {
    let mut cache = ShareSessionCache::new(10);
    cache
        .fetch(&key("m"), 0, 1, &[tp(1, 0)], &[], false)
        .expect("accepted");
    assert!(matches!(
        cache.acknowledge(&key("m"), 0),
        Err(ShareSessionError::InvalidRequest(_))
    ));
    assert!(!cache.acknowledge(&key("m"), 1).expect("accepted").closed);
    cache
        .fetch(&key("m"), 2, 1, &[], &[], false)
        .expect("accepted");
    let closed = cache.acknowledge(&key("m"), FINAL_EPOCH).expect("accepted");
    assert!(closed.closed);
    assert!(cache.is_empty());
}

#[test]
fn connection_close_removes_its_sessions_only() {
    let mut cache = ShareSessionCache::new(10);
    cache
        .fetch(&key("a"), 0, 1, &[tp(1, 0)], &[], false)
        .expect("accepted");
    cache
        .fetch(&key("b"), 0, 2, &[tp(1, 1)], &[], false)
        .expect("accepted");
    let closed = cache.connection_closed(1);
    assert_eq!(closed, vec![(key("a"), vec![tp(1, 0)])]);
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.remove(&key("b")), Some(vec![tp(1, 1)]));
}

#[test]
fn epochs_wrap_to_one() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
}
