//! Replica placement as Kafka's assignment: a random starting broker for partition 0, each next
//! partition's first replica shifted by one broker, followers placed at a shift from the first
//! replica that grows each time the partitions wrap around the brokers; when every broker has a
//! rack, brokers are ordered alternating racks and followers go to racks without a replica.

use std::collections::{BTreeMap, BTreeSet};

use super::ControllerRng;
use crate::error::MetadataError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementBroker {
    pub id: i32,
    pub rack: Option<String>,
}

/// Replica lists for partitions `start_partition..start_partition + partitions`.
///
/// `fixed_start` replaces both random choices (start index and follower shift), as Kafka does
/// when adding partitions to an existing topic.
pub fn place_replicas(
    brokers: &[PlacementBroker],
    partitions: i32,
    replication_factor: i16,
    start_partition: i32,
    fixed_start: Option<usize>,
    rng: &mut ControllerRng,
) -> Result<Vec<Vec<i32>>, MetadataError> {
    if replication_factor <= 0 {
        return Err(MetadataError::InvalidReplicationFactor(
            "Replication factor must be larger than 0, or -1 to use the default value.".into(),
        ));
    }
    if partitions < 0 {
        return Err(MetadataError::InvalidPartitions(
            "Number of partitions was set to an invalid non-positive value.".into(),
        ));
    }
    if brokers.is_empty() {
        return Err(MetadataError::InvalidReplicationFactor(format!(
            "Unable to replicate the partition {replication_factor} time(s): All brokers are \
             currently fenced."
        )));
    }
    if replication_factor as usize > brokers.len() {
        return Err(MetadataError::InvalidReplicationFactor(format!(
            "Unable to replicate the partition {replication_factor} time(s): The target \
             replication factor of {replication_factor} cannot be reached because only {} \
             broker(s) are registered.",
            brokers.len()
        )));
    }
    let mut sorted = brokers.to_vec();
    sorted.sort_by_key(|b| b.id);
    let all_racked = sorted.iter().all(|b| b.rack.is_some());
    if all_racked {
        Ok(rack_aware(
            &sorted,
            partitions,
            replication_factor as usize,
            start_partition,
            fixed_start,
            rng,
        ))
    } else {
        // Kafka's "safe" mode: without racks on every broker, racks are ignored.
        let ids: Vec<i32> = sorted.iter().map(|b| b.id).collect();
        Ok(rack_unaware(
            &ids,
            partitions,
            replication_factor as usize,
            start_partition,
            fixed_start,
            rng,
        ))
    }
}

/// Index of the `replica_index`-th follower of a partition whose first replica is at
/// `first_replica_index`.
fn follower_index(
    first_replica_index: usize,
    second_replica_shift: usize,
    replica_index: usize,
    broker_count: usize,
) -> usize {
    let shift = 1 + (second_replica_shift + replica_index) % (broker_count - 1);
    (first_replica_index + shift) % broker_count
}

fn starts(
    broker_count: usize,
    fixed_start: Option<usize>,
    rng: &mut ControllerRng,
) -> (usize, usize) {
    match fixed_start {
        Some(start) => (start, start),
        None => (rng.below(broker_count), rng.below(broker_count)),
    }
}

fn rack_unaware(
    brokers: &[i32],
    partitions: i32,
    replication_factor: usize,
    start_partition: i32,
    fixed_start: Option<usize>,
    rng: &mut ControllerRng,
) -> Vec<Vec<i32>> {
    let n = brokers.len();
    let (start_index, mut shift) = starts(n, fixed_start, rng);
    let first_partition = start_partition.max(0) as usize;
    let mut out = Vec::with_capacity(partitions as usize);
    for current in first_partition..first_partition + partitions as usize {
        if current > 0 && current % n == 0 {
            shift += 1;
        }
        let first = (current + start_index) % n;
        let mut replicas = vec![brokers[first]];
        for j in 0..replication_factor - 1 {
            replicas.push(brokers[follower_index(first, shift, j, n)]);
        }
        out.push(replicas);
    }
    out
}

/// Brokers ordered so that consecutive brokers are on different racks: the first broker of
/// each rack (racks in name order), then the second of each, and so on.
fn rack_alternated(brokers: &[PlacementBroker]) -> Vec<(i32, String)> {
    let mut by_rack: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for b in brokers {
        by_rack
            .entry(b.rack.clone().unwrap_or_default())
            .or_default()
            .push(b.id);
    }
    let mut iters: Vec<(String, std::vec::IntoIter<i32>)> = by_rack
        .into_iter()
        .map(|(rack, mut ids)| {
            ids.sort_unstable();
            (rack, ids.into_iter())
        })
        .collect();
    let mut out = Vec::with_capacity(brokers.len());
    let mut rack_index = 0;
    while out.len() < brokers.len() {
        let (rack, iter) = &mut iters[rack_index];
        if let Some(id) = iter.next() {
            out.push((id, rack.clone()));
        }
        rack_index = (rack_index + 1) % iters.len();
    }
    out
}

fn rack_aware(
    brokers: &[PlacementBroker],
    partitions: i32,
    replication_factor: usize,
    start_partition: i32,
    fixed_start: Option<usize>,
    rng: &mut ControllerRng,
) -> Vec<Vec<i32>> {
    let arranged = rack_alternated(brokers);
    let n = arranged.len();
    let rack_count = arranged
        .iter()
        .map(|(_, r)| r)
        .collect::<BTreeSet<_>>()
        .len();
    let (start_index, mut shift) = starts(n, fixed_start, rng);
    let first_partition = start_partition.max(0) as usize;
    let mut out = Vec::with_capacity(partitions as usize);
    for current in first_partition..first_partition + partitions as usize {
        if current > 0 && current % n == 0 {
            shift += 1;
        }
        let first = (current + start_index) % n;
        let (leader, leader_rack) = &arranged[first];
        let mut replicas = vec![*leader];
        let mut racks_with_replicas: BTreeSet<&str> = BTreeSet::from([leader_rack.as_str()]);
        let mut brokers_with_replicas: BTreeSet<i32> = BTreeSet::from([*leader]);
        let mut k = 0;
        for _ in 0..replication_factor - 1 {
            loop {
                let (broker, rack) = &arranged[follower_index(first, shift * rack_count, k, n)];
                k += 1;
                let rack_ok = !racks_with_replicas.contains(rack.as_str())
                    || racks_with_replicas.len() == rack_count;
                let broker_ok =
                    !brokers_with_replicas.contains(broker) || brokers_with_replicas.len() == n;
                if rack_ok && broker_ok {
                    replicas.push(*broker);
                    racks_with_replicas.insert(rack.as_str());
                    brokers_with_replicas.insert(*broker);
                    break;
                }
            }
        }
        out.push(replicas);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(ids: &[i32]) -> Vec<PlacementBroker> {
        ids.iter()
            .map(|&id| PlacementBroker { id, rack: None })
            .collect()
    }

    #[test]
    fn shifted_layout_with_fixed_start() {
        let mut rng = ControllerRng::new(0);
        let got = place_replicas(&plain(&[0, 1, 2, 3, 4]), 10, 3, 0, Some(0), &mut rng).unwrap();
        // Kafka's documented example (AdminUtils) for 5 brokers, start index 0, shift 0.
        let expected = vec![
            vec![0, 1, 2],
            vec![1, 2, 3],
            vec![2, 3, 4],
            vec![3, 4, 0],
            vec![4, 0, 1],
            vec![0, 2, 3],
            vec![1, 3, 4],
            vec![2, 4, 0],
            vec![3, 0, 1],
            vec![4, 1, 2],
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn random_start_is_seeded_and_balanced() {
        let brokers = plain(&[1, 2, 3]);
        let a = place_replicas(&brokers, 6, 2, 0, None, &mut ControllerRng::new(7)).unwrap();
        let b = place_replicas(&brokers, 6, 2, 0, None, &mut ControllerRng::new(7)).unwrap();
        assert_eq!(a, b);
        // Leaders rotate by one broker per partition.
        for pair in a.windows(2) {
            let i0 = brokers.iter().position(|x| x.id == pair[0][0]).unwrap();
            let i1 = brokers.iter().position(|x| x.id == pair[1][0]).unwrap();
            assert_eq!((i0 + 1) % 3, i1);
        }
        for replicas in &a {
            assert_ne!(replicas[0], replicas[1]);
        }
    }

    #[test]
    fn rack_aware_spreads_racks() {
        let brokers = vec![
            PlacementBroker {
                id: 0,
                rack: Some("a".into()),
            },
            PlacementBroker {
                id: 1,
                rack: Some("a".into()),
            },
            PlacementBroker {
                id: 2,
                rack: Some("b".into()),
            },
            PlacementBroker {
                id: 3,
                rack: Some("b".into()),
            },
            PlacementBroker {
                id: 4,
                rack: Some("c".into()),
            },
            PlacementBroker {
                id: 5,
                rack: Some("c".into()),
            },
        ];
        assert_eq!(
            rack_alternated(&brokers)
                .iter()
                .map(|(id, _)| *id)
                .collect::<Vec<_>>(),
            vec![0, 2, 4, 1, 3, 5]
        );
        let rack_of = |id: i32| brokers[id as usize].rack.clone().unwrap();
        for seed in 0..20 {
            let got =
                place_replicas(&brokers, 12, 3, 0, None, &mut ControllerRng::new(seed)).unwrap();
            for replicas in got {
                let racks: BTreeSet<String> = replicas.iter().map(|&r| rack_of(r)).collect();
                assert_eq!(racks.len(), 3, "{replicas:?}");
            }
        }
        let fixed = place_replicas(&brokers, 2, 2, 0, Some(0), &mut ControllerRng::new(0)).unwrap();
        assert_eq!(fixed, vec![vec![0, 2], vec![2, 4]]);
    }

    #[test]
    fn replication_factor_above_brokers_is_refused() {
        let err =
            place_replicas(&plain(&[1]), 1, 3, 0, None, &mut ControllerRng::new(0)).unwrap_err();
        assert!(matches!(err, MetadataError::InvalidReplicationFactor(_)));
    }
}
