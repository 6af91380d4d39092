use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{keep_partitions_with_news, SharePartitionAnswer};

#[test]
fn an_incremental_answer_keeps_acknowledged_partitions_even_with_nothing_else_to_say() {
    let topic = Uuid::from_u128(7);
    let mut partitions = BTreeMap::new();
    // 0: acknowledged, nothing acquired; 1: acknowledged and refused; 2: records;
    // 3: an error; 4: nothing at all.
    partitions.insert((topic, 0), SharePartitionAnswer::default());
    partitions.insert(
        (topic, 1),
        SharePartitionAnswer {
            acknowledge_error_code: 121,
            ..SharePartitionAnswer::default()
        },
    );
    partitions.insert(
        (topic, 2),
        SharePartitionAnswer {
            acquired: vec![(0, 4, 1)],
            ..SharePartitionAnswer::default()
        },
    );
    partitions.insert(
        (topic, 3),
        SharePartitionAnswer {
            error_code: 6,
            ..SharePartitionAnswer::default()
        },
    );
    partitions.insert((topic, 4), SharePartitionAnswer::default());
    let acknowledged: BTreeSet<_> = [(topic, 0), (topic, 1)].into_iter().collect();

    keep_partitions_with_news(&mut partitions, &acknowledged);

    let kept: Vec<i32> = partitions.keys().map(|(_, p)| *p).collect();
    assert_eq!(kept, vec![0, 1, 2, 3]);
}
