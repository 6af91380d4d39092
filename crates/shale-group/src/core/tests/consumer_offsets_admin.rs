//! Consumer groups in the offset and admin APIs: OffsetCommit/OffsetFetch member epochs,
//! OffsetDelete, DeleteGroups, ConsumerGroupDescribe, ListGroups, and the classic APIs meeting
//! a consumer group.

use super::consumer_harness::*;
use crate::core::{RequestToken, Response};
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;
use crate::types::*;

fn commit(member_id: &str, epoch: i32, partitions: &[i32]) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: GROUP.to_owned(),
        generation_id: epoch,
        member_id: member_id.to_owned(),
        group_instance_id: None,
        retention_time_ms: -1,
        reports_missing_group: true,
        topics: vec![OffsetCommitTopic {
            name: "orders".to_owned(),
            partitions: partitions
                .iter()
                .map(|partition| OffsetCommitPartition {
                    partition_index: *partition,
                    committed_offset: 42,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                })
                .collect(),
        }],
    }
}

fn do_commit(h: &mut ConsumerHarness, request: OffsetCommitRequest) -> Result<(), GroupError> {
    let effects = h.shard.commit_offsets(RequestToken(900), request, h.now_ms);
    match h.apply(effects).pop() {
        Some((_, Response::OffsetCommit(result))) => result.map(|_| ()),
        other => panic!("not a commit reply: {other:?}"),
    }
}

fn fetch() -> OffsetFetchRequest {
    OffsetFetchRequest {
        group_id: GROUP.to_owned(),
        topics: None,
        require_stable: false,
    }
}

/// a at epoch 2 holding 0 and 2 (assigned at epoch 1); b at epoch 2 with 1 and 3 (epoch 2).
fn two_members() -> ConsumerHarness {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(join("b", &["orders"])).unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
        .unwrap();
    h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 2])])).unwrap();
    h.heartbeat(beat("b", 3, &[])).unwrap();
    h
}

#[test]
fn offset_commits_are_checked_against_member_epochs() {
    let mut h = two_members();
    assert_eq!(do_commit(&mut h, commit("a", 3, &[0, 2])), Ok(()));
    // An epoch ahead of the member's.
    assert_eq!(
        do_commit(&mut h, commit("a", 4, &[0])),
        Err(GroupError::StaleMemberEpoch)
    );
    // An older epoch: fine for partitions held since then, stale for the others.
    assert_eq!(do_commit(&mut h, commit("a", 2, &[0, 2])), Ok(()));
    assert_eq!(
        do_commit(&mut h, commit("b", 2, &[1])),
        Err(GroupError::StaleMemberEpoch)
    );
    assert_eq!(
        do_commit(&mut h, commit("a", 2, &[1])),
        Err(GroupError::StaleMemberEpoch)
    );
    assert_eq!(
        do_commit(&mut h, commit("nobody", 3, &[0])),
        Err(GroupError::UnknownMemberId)
    );
    // Admin commits (no member, generation -1) need an empty group.
    assert_eq!(
        do_commit(&mut h, commit("", -1, &[0])),
        Err(GroupError::UnknownMemberId)
    );
    // Consumer-protocol members must commit with OffsetCommit v9+.
    let mut old = commit("a", 3, &[0]);
    old.reports_missing_group = false;
    assert!(matches!(
        do_commit(&mut h, old),
        Err(GroupError::UnsupportedVersion(message))
            if message == "OffsetCommit version 9 or above must be used by members using the consumer group protocol"
    ));
    let fetched = h.shard.fetch_offsets(&fetch()).unwrap();
    assert_eq!(fetched.topics[0].partitions.len(), 2);
    assert!(fetched.topics[0]
        .partitions
        .iter()
        .all(|partition| partition.committed_offset == 42));
}

#[test]
fn offset_fetch_checks_the_member_epoch_it_is_given() {
    let h = two_members();
    assert!(h.shard.fetch_offsets_as_member(&fetch(), None, -1).is_ok());
    assert!(h
        .shard
        .fetch_offsets_as_member(&fetch(), Some("a"), 3)
        .is_ok());
    assert_eq!(
        h.shard
            .fetch_offsets_as_member(&fetch(), Some("a"), 2)
            .err(),
        Some(GroupError::StaleMemberEpoch)
    );
    assert_eq!(
        h.shard
            .fetch_offsets_as_member(&fetch(), Some("zz"), 3)
            .err(),
        Some(GroupError::UnknownMemberId)
    );
}

#[test]
fn offset_delete_keeps_subscribed_topics_and_delete_groups_needs_an_empty_group() {
    let mut h = ConsumerHarness::new();
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 4),
        topic(PAYMENTS, "payments", 1),
    ]));
    h.heartbeat(join("a", &["orders"])).unwrap();
    do_commit(&mut h, commit("a", 2, &[0])).unwrap();
    let mut payments = commit("a", 2, &[]);
    payments.topics[0].name = "payments".to_owned();
    payments.topics[0].partitions = commit("a", 2, &[0]).topics[0].partitions.clone();
    // Not assigned to a: a commit for it at an older epoch would be stale, at its epoch it is
    // accepted (Kafka checks assignment epochs only for older epochs).
    do_commit(&mut h, payments).unwrap();

    let delete = OffsetDeleteRequest {
        group_id: GROUP.to_owned(),
        topics: vec![
            OffsetDeleteTopic {
                name: "orders".to_owned(),
                partition_indexes: vec![0],
            },
            OffsetDeleteTopic {
                name: "payments".to_owned(),
                partition_indexes: vec![0],
            },
        ],
    };
    let effects = h.shard.delete_offsets(RequestToken(901), delete, h.now_ms);
    let replies = h.apply(effects);
    let Some((_, Response::OffsetDelete(Ok(response)))) = replies.last() else {
        panic!("no OffsetDelete answer: {replies:?}");
    };
    assert_eq!(
        response.topics[0].partitions[0].error,
        Some(GroupError::GroupSubscribedToTopic)
    );
    assert_eq!(response.topics[1].partitions[0].error, None);
    let fetched = h.shard.fetch_offsets(&fetch()).unwrap();
    assert_eq!(fetched.topics.len(), 1, "payments' offset is gone");

    // DeleteGroups: refused while a member is in the group.
    let effects = h
        .shard
        .delete_groups(RequestToken(902), vec![GROUP.to_owned()], h.now_ms);
    let replies = h.apply(effects);
    assert!(matches!(
        replies.last(),
        Some((_, Response::DeleteGroups(results))) if results[0].error == Some(GroupError::NonEmptyGroup)
    ));
    h.heartbeat(beat("a", -1, &[])).unwrap();
    let mark = h.log.len();
    let effects = h
        .shard
        .delete_groups(RequestToken(903), vec![GROUP.to_owned()], h.now_ms);
    let replies = h.apply(effects);
    assert!(matches!(
        replies.last(),
        Some((_, Response::DeleteGroups(results))) if results[0].error.is_none()
    ));
    // The offsets first, then Kafka's consumer group tombstones.
    let written: Vec<String> = h
        .records_since(mark)
        .iter()
        .map(|record| match record {
            GroupRecord::OffsetCommit {
                topic, value: None, ..
            } => format!("offset {topic}"),
            GroupRecord::Consumer(ConsumerRecord::TargetAssignmentMetadata {
                value: None, ..
            }) => "target-epoch".to_owned(),
            GroupRecord::Consumer(ConsumerRecord::PartitionMetadata { value: None, .. }) => {
                "partition-metadata".to_owned()
            }
            GroupRecord::Consumer(ConsumerRecord::GroupMetadata { value: None, .. }) => {
                "epoch".to_owned()
            }
            other => panic!("unexpected record {other:?}"),
        })
        .collect();
    assert_eq!(
        written,
        [
            "offset orders",
            "target-epoch",
            "partition-metadata",
            "epoch"
        ]
    );
    assert_eq!(h.shard.consumer_group_state(GROUP), None);
    assert!(h.shard.list_groups(&[]).is_empty());
    assert!(h.shard.fetch_offsets(&fetch()).unwrap().topics.is_empty());
}

#[test]
fn describe_and_list_know_consumer_groups() {
    let mut h = two_members();
    let described = h.shard.describe_consumer_group(GROUP);
    assert_eq!(described.error, None);
    assert_eq!(described.group_state, "Stable");
    assert_eq!(described.group_epoch, 3);
    assert_eq!(described.assignment_epoch, 3);
    assert_eq!(described.assignor_name, "uniform");
    assert_eq!(described.members.len(), 2);
    let a = &described.members[0];
    assert_eq!(a.member_id, "a");
    assert_eq!(a.member_type, 1);
    assert_eq!(a.assignment[0].topic_name, "orders");
    assert_eq!(
        a.assignment[0]
            .partitions
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [0, 2]
    );
    assert_eq!(a.target_assignment, a.assignment);
    let missing = h.shard.describe_consumer_group("missing");
    assert_eq!(missing.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(
        (
            missing.group_state.as_str(),
            missing.group_epoch,
            missing.assignment_epoch
        ),
        ("", 0, 0),
        "Kafka 4.4's answer for an unknown group"
    );
    // DescribeGroups (the classic API) does not describe a consumer group.
    let classic = h.shard.describe_group(GROUP);
    assert_eq!(classic.error, Some(GroupError::GroupIdNotFound));
    assert_eq!(classic.group_state, "Dead");

    // A simple classic group with offsets beside it.
    let mut simple = commit("", -1, &[0]);
    simple.group_id = "simple".to_owned();
    do_commit(&mut h, simple).unwrap();
    // The consumer group's own offsets do not make it a classic group.
    do_commit(&mut h, commit("a", 3, &[0])).unwrap();

    let listed = h.shard.list_groups_filtered(&[], &[]);
    let summary: Vec<(&str, &str, &str, &str)> = listed
        .iter()
        .map(|group| {
            (
                group.group_id.as_str(),
                group.group_type.as_str(),
                group.protocol_type.as_str(),
                group.group_state.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (GROUP, "consumer", "consumer", "Stable"),
            ("simple", "classic", "", "Empty")
        ]
    );
    let by_type = h.shard.list_groups_filtered(&[], &["CONSUMER".to_owned()]);
    assert_eq!(by_type.len(), 1);
    let by_state = h.shard.list_groups_filtered(&["stable".to_owned()], &[]);
    assert_eq!(by_state.len(), 1);
    assert_eq!(by_state[0].group_id, GROUP);
    let classic_empty = h
        .shard
        .list_groups_filtered(&["empty".to_owned()], &["classic".to_owned()]);
    assert_eq!(classic_empty.len(), 1);
    assert!(h
        .shard
        .list_groups_filtered(&["Assigning".to_owned()], &[])
        .is_empty());
}

fn classic_join(group_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group_id.to_owned(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".to_owned(),
        protocols: vec![JoinGroupProtocol {
            name: "range".to_owned(),
            metadata: bytes::Bytes::from(crate::records::consumer_protocol::encode_subscription(
                &["orders"],
            )),
        }],
        reason: None,
        client_id: "classic".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        require_known_member_id: false,
        supports_skip_assignment: true,
    }
}

#[test]
fn the_classic_and_consumer_protocols_meet_as_kafka_answers_them() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    // JoinGroup on a consumer group: the classic member joins it (at its new epoch).
    let effects = h
        .shard
        .join_group(RequestToken(910), classic_join(GROUP), h.now_ms);
    let replies = h.apply(effects);
    assert!(matches!(
        replies.last(),
        Some((_, Response::Join(Ok(joined)))) if joined.generation_id == 3
    ));

    // A consumer heartbeat on a classic group still forming its first generation: Kafka's
    // conversion fails on the absent protocol name (an unexpected error).
    let effects = h
        .shard
        .join_group(RequestToken(911), classic_join("classic"), h.now_ms);
    h.apply(effects);
    let mut request = join("x", &["orders"]);
    request.group_id = "classic".to_owned();
    assert!(matches!(
        h.heartbeat(request),
        Err(GroupError::UnknownServerError(_))
    ));

    // An empty classic group (here: only offsets) becomes a consumer group, keeping them.
    let mut simple = commit("", -1, &[3]);
    simple.group_id = "was-simple".to_owned();
    do_commit(&mut h, simple).unwrap();
    let mut request = join("y", &["orders"]);
    request.group_id = "was-simple".to_owned();
    assert_eq!(h.heartbeat(request).unwrap().member_epoch, 2);
    let fetched = h
        .shard
        .fetch_offsets(&OffsetFetchRequest {
            group_id: "was-simple".to_owned(),
            topics: None,
            require_stable: false,
        })
        .unwrap();
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 42);
    assert!(h
        .shard
        .list_groups_filtered(&[], &["classic".to_owned()])
        .iter()
        .all(|group| group.group_id != "was-simple"));
    // A heartbeat with an epoch for a group that does not exist.
    let mut request = beat("z", 4, &[]);
    request.group_id = "nothing".to_owned();
    assert_eq!(h.heartbeat(request), Err(GroupError::GroupIdNotFound));
}

#[test]
fn offsets_of_a_consumer_group_expire_only_for_unsubscribed_topics() {
    let mut h = ConsumerHarness::new();
    h.set_topics(image(vec![
        topic(ORDERS, "orders", 4),
        topic(PAYMENTS, "payments", 1),
    ]));
    h.heartbeat(join("a", &["orders"])).unwrap();
    do_commit(&mut h, commit("a", 2, &[0])).unwrap();
    let mut payments = commit("a", 2, &[0]);
    payments.topics[0].name = "payments".to_owned();
    do_commit(&mut h, payments).unwrap();
    // Keep a alive for longer than offsets.retention.minutes (7 days).
    let retention_ms = h.shard.config().offsets_retention_ms;
    let step_ms = 40_000;
    let mut elapsed = 0;
    while elapsed <= retention_ms + 600_000 {
        h.advance(step_ms);
        h.heartbeat(beat("a", 2, &[(ORDERS, &[0, 1, 2, 3])]))
            .unwrap();
        elapsed += step_ms;
    }
    let fetched = h.shard.fetch_offsets(&fetch()).unwrap();
    let names: Vec<&str> = fetched
        .topics
        .iter()
        .map(|topic| topic.name.as_str())
        .collect();
    assert_eq!(names, ["orders"]);
}

#[test]
fn an_empty_consumer_group_without_offsets_is_deleted_at_the_next_expiration_check() {
    let mut h = ConsumerHarness::new();
    h.heartbeat(join("a", &["orders"])).unwrap();
    h.heartbeat(beat("a", -1, &[])).unwrap();
    assert!(h.shard.consumer_group_state(GROUP).is_some());
    h.advance(h.shard.config().offsets_retention_check_interval_ms);
    assert_eq!(h.shard.consumer_group_state(GROUP), None);
    assert!(h.shard.list_groups(&[]).is_empty());
}
