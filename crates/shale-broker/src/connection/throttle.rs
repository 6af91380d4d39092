//! Client quotas at the connection, as Kafka applies them (KIP-219): a request's usage is
//! recorded once it is handled, the answer carries the throttle time in `throttle_time_ms`
//! and is sent at once, and then the connection is muted: nothing more is read from it or
//! handled on it until the throttle time has passed.
//!
//! - Produce: its bytes against `producer_byte_rate` (an acks=0 request answers nothing but
//!   still mutes) and, unless acks=0, its handling time against `request_percentage`.
//! - A consumer Fetch asks for at most what `consumer_byte_rate` allows in one span of
//!   windows; its answer's bytes count against the quota, and an answer that would be
//!   throttled (by either quota) is replaced by an empty one and its bytes taken back.
//! - Every other request: its handling time against `request_percentage`; a throttle a
//!   handler already set (the controller-mutation quota of CreateTopics, CreatePartitions,
//!   DeleteTopics) counts too, the larger one wins. Followers' fetches and WriteTxnMarkers
//!   (inter-broker requests) are exempt, as in Kafka.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, ResponseKind};
use shale_protocol::{FetchFrame, NewerResponse, ProtocolError, Response};
use tokio::time::Instant;

use crate::broker::Broker;
use crate::handlers::fetch::encode::{FetchAnswer, FileRecords};
use crate::quotas::{ByteRate, Client};
use crate::request::RequestContext;
use crate::time::now_ms;

/// When the connection may be read from again, shared by its reader and its writer.
#[derive(Clone, Debug, Default)]
pub(super) struct Mute {
    until: Arc<Mutex<Option<Instant>>>,
}

impl Mute {
    /// Mutes the connection for `throttle_ms` from now (nothing for 0).
    pub(super) fn start(&self, throttle_ms: i64) {
        let Ok(ms @ 1..) = u64::try_from(throttle_ms) else {
            return;
        };
        let until = Instant::now() + Duration::from_millis(ms);
        let mut current = self.until.lock().unwrap_or_else(|p| p.into_inner());
        if current.is_none_or(|c| c < until) {
            *current = Some(until);
        }
    }

    /// Waits while the connection is muted.
    pub(super) async fn wait(&self) {
        let until = *self.until.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(until) = until {
            tokio::time::sleep_until(until).await;
        }
    }
}

fn client_of(ctx: &RequestContext) -> Client {
    Client::new(&ctx.principal, ctx.header.client_id.as_deref())
}

fn clamp_ms(ms: i64) -> i32 {
    i32::try_from(ms.max(0)).unwrap_or(i32::MAX)
}

/// The request quota's throttle for a handled request.
fn request_throttle_ms(broker: &Broker, ctx: &RequestContext, busy_nanos: u64) -> i64 {
    broker
        .quotas
        .record_request_time(&broker.image(), &client_of(ctx), busy_nanos, now_ms())
}

/// Produce: the request's bytes and handling time. Returns the throttle time, also written
/// into the answer (if any).
pub(super) fn produce(
    broker: &Broker,
    ctx: &RequestContext,
    acks: i16,
    frame_bytes: usize,
    busy_nanos: u64,
    response: Option<&mut Response>,
) -> i64 {
    let image = broker.image();
    let client = client_of(ctx);
    let bandwidth_ms =
        broker
            .quotas
            .record_bytes(ByteRate::Produce, &image, &client, frame_bytes, now_ms());
    // Kafka exempts acks=0 requests from the request quota: no answer could carry it.
    let request_ms = if acks == 0 {
        0
    } else {
        request_throttle_ms(broker, ctx, busy_nanos)
    };
    let throttle_ms = bandwidth_ms.max(request_ms);
    if let Some(response) = response {
        set_throttle_time_ms(response, clamp_ms(throttle_ms));
    }
    throttle_ms
}

/// Caps a consumer fetch at what its byte-rate quota allows in one span of windows.
pub(super) fn cap_fetch(broker: &Broker, ctx: &RequestContext, request: &mut FetchRequest) {
    if let Some(max) = broker
        .quotas
        .fetch_bytes_max(&broker.image(), &client_of(ctx))
    {
        let max = i32::try_from(max).unwrap_or(i32::MAX);
        request.max_bytes = request.max_bytes.min(max);
        request.min_bytes = request.min_bytes.min(request.max_bytes);
    }
}

/// A consumer fetch's encoded answer with its throttle time: an answer over a quota is
/// replaced by an empty one carrying the throttle time (Kafka's throttled fetch response;
/// sessions are declined, so its session id is 0), so an answer that is sent always has a
/// throttle time of 0.
pub(super) fn fetch_frame(
    broker: &Broker,
    ctx: &RequestContext,
    frame: FetchFrame<FileRecords>,
    busy_nanos: u64,
) -> Result<(FetchFrame<FileRecords>, i64), ProtocolError> {
    let image = broker.image();
    let client = client_of(ctx);
    let now = now_ms();
    let request_ms = request_throttle_ms(broker, ctx, busy_nanos);
    let bytes = frame.len_bytes;
    let bandwidth_ms = broker
        .quotas
        .record_bytes(ByteRate::Fetch, &image, &client, bytes, now);
    let throttle_ms = bandwidth_ms.max(request_ms);
    if throttle_ms == 0 {
        return Ok((frame, 0));
    }
    // Nothing is handed out: the bytes are taken back and the answer is empty.
    broker
        .quotas
        .unrecord_bytes(ByteRate::Fetch, &image, &client, bytes, now);
    let empty = FetchAnswer::without_partitions(
        FetchResponse::default()
            .with_throttle_time_ms(clamp_ms(throttle_ms))
            .with_session_id(0),
    );
    Ok((
        empty.encode(ctx.header.correlation_id, ctx.version())?,
        throttle_ms,
    ))
}

/// Any other request: its handling time, and a throttle its handler set. Returns the
/// throttle time, written into the answer.
pub(super) fn other(
    broker: &Broker,
    ctx: &RequestContext,
    follower_fetch: bool,
    busy_nanos: u64,
    response: Option<&mut Response>,
) -> i64 {
    let exempt = follower_fetch || ctx.header.api_key == ApiKey::WriteTxnMarkers as i16;
    if exempt {
        return 0;
    }
    let request_ms = request_throttle_ms(broker, ctx, busy_nanos);
    let Some(response) = response else {
        return request_ms;
    };
    let handler_ms = i64::from(throttle_time_ms(response).unwrap_or(0));
    let throttle_ms = request_ms.max(handler_ms);
    set_throttle_time_ms(response, clamp_ms(throttle_ms));
    throttle_ms
}

/// Applies `$body` to the response's `throttle_time_ms` field, for every served response
/// that has one.
macro_rules! with_throttle_field {
    ($response:expr, |$field:ident| $body:expr, $otherwise:expr) => {
        match $response {
            Response::Kafka(kind) => match kind {
                ResponseKind::Produce(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::Fetch(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ListOffsets(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::Metadata(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ApiVersions(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::CreateTopics(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DeleteTopics(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DeleteRecords(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::InitProducerId(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::OffsetForLeaderEpoch(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeConfigs(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AlterConfigs(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::CreatePartitions(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::IncrementalAlterConfigs(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeCluster(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeTopicPartitions(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeLogDirs(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeProducers(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ElectLeaders(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AlterPartitionReassignments(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ListPartitionReassignments(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::FindCoordinator(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::JoinGroup(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::SyncGroup(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::Heartbeat(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::LeaveGroup(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::OffsetCommit(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::OffsetFetch(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeGroups(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ListGroups(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DeleteGroups(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::OffsetDelete(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AddPartitionsToTxn(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AddOffsetsToTxn(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::EndTxn(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::TxnOffsetCommit(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeTransactions(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ListTransactions(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DescribeClientQuotas(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AlterClientQuotas(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ShareGroupHeartbeat(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::ShareGroupDescribe(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::AlterShareGroupOffsets(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                ResponseKind::DeleteShareGroupOffsets(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                // SaslHandshake, SaslAuthenticate, WriteTxnMarkers, DescribeQuorum and the
                // share-state answers brokers send each other have no throttle time.
                _ => $otherwise,
            },
            Response::Newer(newer) => match newer {
                NewerResponse::TxnOffsetCommit(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                NewerResponse::DeleteGroups(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                NewerResponse::DescribeLogDirs(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                NewerResponse::ShareFetch(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                NewerResponse::ShareAcknowledge(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                NewerResponse::DescribeShareGroupOffsets(r) => {
                    let $field = &mut r.throttle_time_ms;
                    $body
                }
                // The share coordinator's answers to brokers have no throttle time.
                NewerResponse::WriteShareGroupState(_)
                | NewerResponse::ReadShareGroupStateSummary(_) => $otherwise,
            },
        }
    };
}

/// Writes the throttle time into an answer that has the field.
pub(super) fn set_throttle_time_ms(response: &mut Response, throttle_ms: i32) {
    with_throttle_field!(response, |field| *field = throttle_ms, ())
}

/// The throttle time an answer carries, if it has the field.
fn throttle_time_ms(response: &mut Response) -> Option<i32> {
    with_throttle_field!(response, |field| Some(*field), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{CreateTopicsResponse, SaslHandshakeResponse};

    #[test]
    fn the_field_is_found_where_an_answer_has_it() {
        let mut r = Response::Kafka(ResponseKind::CreateTopics(
            CreateTopicsResponse::default().with_throttle_time_ms(7),
        ));
        assert_eq!(throttle_time_ms(&mut r), Some(7));
        set_throttle_time_ms(&mut r, 250);
        assert_eq!(throttle_time_ms(&mut r), Some(250));
        let mut r = Response::Kafka(ResponseKind::SaslHandshake(SaslHandshakeResponse::default()));
        set_throttle_time_ms(&mut r, 250);
        assert_eq!(throttle_time_ms(&mut r), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_muted_connection_waits_out_its_throttle() {
        let mute = Mute::default();
        let started = Instant::now();
        mute.wait().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        mute.start(1500);
        // A shorter throttle never shortens the mute.
        mute.start(10);
        mute.wait().await;
        assert!(started.elapsed() >= Duration::from_millis(1500));
    }
}
