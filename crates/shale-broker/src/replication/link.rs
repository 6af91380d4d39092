//! The replica layer's link to a leader, on the wire: a follower's Fetch (v15, as a replica)
//! and OffsetForLeaderEpoch (v4) over one inter-broker connection, with the leader's error
//! codes read back into the replica layer's terms.

use std::collections::HashMap;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, OffsetForLeaderEpochRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_log::TopicPartition;
use shale_replica::{
    BoxFuture, FetchedData, FetchedPartition, FollowerFetch, LeaderEpochEnd, LeaderLink, LinkError,
    RemoteError,
};
use uuid::Uuid;

use super::client::{BrokerClient, ClientError};

const FETCH_VERSION: i16 = 15;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;

/// A follower's connection to its leader.
pub struct WireLeaderLink {
    client: BrokerClient,
    replica_id: i32,
}

impl WireLeaderLink {
    pub fn new(client: BrokerClient, replica_id: i32) -> WireLeaderLink {
        WireLeaderLink { client, replica_id }
    }
}

fn link_error(e: ClientError) -> LinkError {
    match e {
        ClientError::Io(e) => LinkError::Io(e),
        other => LinkError::Io(std::io::Error::other(other.to_string())),
    }
}

/// A leader's partition error as the replica layer sees it.
fn remote_error(code: i16, log_start_offset: i64) -> RemoteError {
    if code == ResponseError::OffsetOutOfRange.code() {
        return RemoteError::OffsetOutOfRange {
            leader_log_start_offset: log_start_offset,
        };
    }
    RemoteError::Other(match ResponseError::try_from_code(code) {
        Some(e) => format!("{e:?} ({code})"),
        None => format!("error code {code}"),
    })
}

impl LeaderLink for WireLeaderLink {
    fn fetch(
        &mut self,
        request: FollowerFetch,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Vec<FetchedPartition>, LinkError>> {
        Box::pin(async move {
            let mut by_topic: HashMap<Uuid, Vec<FetchPartition>> = HashMap::new();
            for p in &request.partitions {
                by_topic.entry(p.topic_id).or_default().push(
                    FetchPartition::default()
                        .with_partition(p.partition)
                        .with_current_leader_epoch(p.current_leader_epoch)
                        .with_fetch_offset(p.fetch_offset)
                        .with_last_fetched_epoch(p.last_fetched_epoch)
                        .with_log_start_offset(p.log_start_offset)
                        .with_partition_max_bytes(p.partition_max_bytes),
                );
            }
            let wire = FetchRequest::default()
                .with_replica_state(
                    ReplicaState::default()
                        .with_replica_id(BrokerId(request.replica_id))
                        .with_replica_epoch(request.replica_epoch),
                )
                .with_max_wait_ms(request.max_wait_ms)
                .with_min_bytes(request.min_bytes)
                .with_max_bytes(request.max_bytes)
                .with_isolation_level(0)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(
                    by_topic
                        .into_iter()
                        .map(|(topic_id, parts)| {
                            FetchTopic::default()
                                .with_topic_id(topic_id)
                                .with_partitions(parts)
                        })
                        .collect(),
                );
            let response = self
                .client
                .call(
                    ApiKey::Fetch,
                    FETCH_VERSION,
                    RequestKind::Fetch(wire),
                    timeout,
                )
                .await
                .map_err(link_error)?;
            let ResponseKind::Fetch(response) = response else {
                return Err(LinkError::Refused("unexpected response kind".into()));
            };
            if response.error_code != 0 {
                return Err(LinkError::Refused(format!(
                    "fetch refused with error {}",
                    response.error_code
                )));
            }
            let mut answers = Vec::new();
            for topic in response.responses {
                for p in topic.partitions {
                    let outcome = if p.error_code != 0 {
                        Err(remote_error(p.error_code, p.log_start_offset))
                    } else {
                        Ok(FetchedData {
                            high_watermark: p.high_watermark,
                            log_start_offset: p.log_start_offset,
                            diverging: p.diverging_epoch.epoch >= 0,
                            records: p.records,
                        })
                    };
                    answers.push(FetchedPartition {
                        topic_id: topic.topic_id,
                        partition: p.partition_index,
                        outcome,
                    });
                }
            }
            Ok(answers)
        })
    }

    fn epoch_end(
        &mut self,
        tp: &TopicPartition,
        current_leader_epoch: i32,
        local_epoch: i32,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Result<Option<LeaderEpochEnd>, RemoteError>, LinkError>> {
        let tp = tp.clone();
        Box::pin(async move {
            let request = OffsetForLeaderEpochRequest::default()
                .with_replica_id(BrokerId(self.replica_id))
                .with_topics(vec![OffsetForLeaderTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(tp.topic.clone())))
                    .with_partitions(vec![OffsetForLeaderPartition::default()
                        .with_partition(tp.partition)
                        .with_current_leader_epoch(current_leader_epoch)
                        .with_leader_epoch(local_epoch)])]);
            let response = self
                .client
                .call(
                    ApiKey::OffsetForLeaderEpoch,
                    OFFSET_FOR_LEADER_EPOCH_VERSION,
                    RequestKind::OffsetForLeaderEpoch(request),
                    timeout,
                )
                .await
                .map_err(link_error)?;
            let ResponseKind::OffsetForLeaderEpoch(response) = response else {
                return Ok(Err(RemoteError::Other("unexpected response kind".into())));
            };
            let Some(p) = response
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition == tp.partition)
            else {
                return Ok(Err(RemoteError::Other(
                    "the answer does not name the partition".into(),
                )));
            };
            if p.error_code != 0 {
                return Ok(Err(remote_error(p.error_code, -1)));
            }
            if p.leader_epoch < 0 || p.end_offset < 0 {
                return Ok(Ok(None));
            }
            Ok(Ok(Some(LeaderEpochEnd {
                epoch: p.leader_epoch,
                end_offset: p.end_offset,
            })))
        })
    }
}
