//! A shard with classic and consumer members in the same group: the classic harness's
//! requests plus ConsumerGroupHeartbeat, over a topics image with "orders" (4 partitions).

use bytes::Bytes;

use super::consumer_harness::{image, settings, topic, FixedOverrides, ORDERS};
use super::harness::{Harness, GROUP, REBALANCE_MS, SESSION_MS};
use crate::config::{GroupConfig, MigrationPolicy};
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::{CoordinatorShard, Response};
use crate::error::GroupError;
use crate::records::consumer_protocol::{
    decode_assignment, encode_assignment, encode_subscription_v1,
};
use crate::types::{JoinGroupProtocol, JoinGroupRequest, JoinGroupResponse, SyncGroupResponse};

pub(super) fn migration_config(policy: MigrationPolicy) -> GroupConfig {
    GroupConfig {
        session_timeout_ms_min: 1_000,
        initial_rebalance_delay_ms: 0,
        consumer_protocol_enabled: true,
        consumer_assignment_interval_ms: 0,
        consumer_migration_policy: policy,
        ..GroupConfig::default()
    }
}

pub(super) fn shard(config: GroupConfig) -> CoordinatorShard {
    let mut counter = 0u64;
    CoordinatorShard::with_member_ids(
        0,
        config,
        Box::new(move |prefix| {
            counter += 1;
            format!("{prefix}-{counter}")
        }),
    )
    .with_consumer_settings(settings(FixedOverrides::default()))
    .with_topics_image(image(vec![topic(ORDERS, "orders", 4)]))
}

pub(super) fn harness(policy: MigrationPolicy) -> Harness {
    let mut harness = Harness::new(migration_config(policy));
    harness.shard = shard(migration_config(policy));
    harness.shard.on_loaded(harness.now_ms);
    harness
}

/// A JoinGroup of the consumer protocol ("range") subscribing to orders and reporting what
/// the member owns (subscription v1).
pub(super) fn classic_join(member_id: &str, owned: &[i32]) -> JoinGroupRequest {
    let owned = if owned.is_empty() {
        Vec::new()
    } else {
        vec![("orders".to_string(), owned.to_vec())]
    };
    JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupProtocol {
            name: "range".into(),
            metadata: Bytes::from(encode_subscription_v1(&["orders"], &owned)),
        }],
        reason: None,
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

/// A consumer-protocol member's heartbeat in the harness's group.
pub(super) fn consumer_beat(
    harness: &mut Harness,
    mut request: ConsumerGroupHeartbeatRequest,
) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
    request.group_id = GROUP.into();
    let token = harness.token();
    let effects = harness
        .shard
        .consumer_group_heartbeat(token, request, harness.now_ms);
    harness.apply(effects);
    match harness.take(token) {
        Some(Response::ConsumerHeartbeat(result)) => result,
        other => panic!("not a consumer heartbeat reply: {other:?}"),
    }
}

/// Joins and answers at once (a consumer group answers JoinGroup without waiting).
pub(super) fn join_now(
    harness: &mut Harness,
    request: JoinGroupRequest,
) -> Result<JoinGroupResponse, GroupError> {
    let token = harness.join(request);
    harness.join_result(token).expect("answered at once")
}

pub(super) fn sync_now(
    harness: &mut Harness,
    member_id: &str,
    generation_id: i32,
) -> Result<SyncGroupResponse, GroupError> {
    let token = harness.sync(member_id, generation_id, &[]);
    harness.sync_result(token).expect("answered at once")
}

/// The orders partitions of a `ConsumerProtocolAssignment`.
pub(super) fn orders_of(response: &SyncGroupResponse) -> Vec<i32> {
    let assignment = decode_assignment(&response.assignment).unwrap();
    assignment
        .partitions
        .into_iter()
        .filter(|(name, _)| name == "orders")
        .flat_map(|(_, partitions)| partitions)
        .collect()
}

/// A Stable classic group of two members ("classic-1" owns orders 0-1, "classic-2" 2-3) at
/// generation 1, with valid consumer protocol assignments.
pub(super) fn classic_pair(harness: &mut Harness) -> (String, String) {
    let first = join_now(harness, classic_join("", &[])).unwrap_err();
    let GroupError::MemberIdRequired { member_id: a } = first else {
        panic!("{first:?}")
    };
    let second = join_now(harness, classic_join("", &[])).unwrap_err();
    let GroupError::MemberIdRequired { member_id: b } = second else {
        panic!("{second:?}")
    };
    let join_a = harness.join(classic_join(&a, &[]));
    let join_b = harness.join(classic_join(&b, &[]));
    harness.advance(1);
    let leader = harness.join_result(join_a).unwrap().unwrap();
    harness.join_result(join_b).unwrap().unwrap();
    assert_eq!(leader.generation_id, 1);
    let assign_a = encode_assignment(&[("orders".to_string(), vec![0, 1])], 1);
    let assign_b = encode_assignment(&[("orders".to_string(), vec![2, 3])], 1);
    let (leader_id, follower) = if leader.leader == a {
        (a.clone(), b.clone())
    } else {
        (b.clone(), a.clone())
    };
    let (leader_bytes, follower_bytes) = if leader_id == a {
        (assign_a.clone(), assign_b.clone())
    } else {
        (assign_b.clone(), assign_a.clone())
    };
    let follower_sync = harness.sync(&follower, 1, &[]);
    let leader_sync = harness.sync(
        &leader_id,
        1,
        &[(&leader_id, &leader_bytes), (&follower, &follower_bytes)],
    );
    harness.sync_result(follower_sync).unwrap().unwrap();
    harness.sync_result(leader_sync).unwrap().unwrap();
    (a, b)
}
