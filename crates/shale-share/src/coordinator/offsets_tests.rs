use uuid::Uuid;

use super::offsets::RedundantOffsets;
use crate::state::SharePartitionKey;

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".to_string(),
        topic_id: Uuid::from_u128(7),
        partition,
    }
}

#[test]
fn nothing_is_redundant_before_a_snapshot() {
    assert_eq!(RedundantOffsets::default().last_redundant_offset(), None);
}

#[test]
fn the_oldest_latest_snapshot_bounds_the_prefix() {
    let mut offsets = RedundantOffsets::default();
    offsets.on_snapshot(&key(0), 0, false);
    // Offset 0 has nothing before it to prune.
    assert_eq!(offsets.last_redundant_offset(), None);
    offsets.on_snapshot(&key(1), 1, false);
    assert_eq!(offsets.last_redundant_offset(), None);
    offsets.on_snapshot(&key(0), 3, false);
    assert_eq!(offsets.last_redundant_offset(), Some(1));
    offsets.on_snapshot(&key(1), 5, false);
    assert_eq!(offsets.last_redundant_offset(), Some(3));
}

#[test]
fn a_share_partition_without_new_snapshots_holds_the_prefix_back() {
    // Kafka's example: key1 at 1, key2 at 2 4 6, key3 at 3 5 7: only offset 1 is needed
    // from key1, so nothing below 1 can go.
    let mut offsets = RedundantOffsets::default();
    for (partition, offset) in [(1, 1), (2, 2), (3, 3), (2, 4), (3, 5), (2, 6), (3, 7)] {
        offsets.on_snapshot(&key(partition), offset, false);
    }
    assert_eq!(offsets.last_redundant_offset(), Some(1));
}

#[test]
fn a_deleted_share_partition_stops_holding_the_prefix_back() {
    let mut offsets = RedundantOffsets::default();
    offsets.on_snapshot(&key(0), 1, false);
    offsets.on_snapshot(&key(1), 2, false);
    offsets.on_snapshot(&key(0), 4, true);
    // The tombstone itself still counts until the next snapshot.
    assert_eq!(offsets.last_redundant_offset(), Some(2));
    offsets.on_snapshot(&key(1), 6, false);
    assert_eq!(offsets.last_redundant_offset(), Some(6));
}
