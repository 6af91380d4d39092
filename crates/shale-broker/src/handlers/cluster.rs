//! DescribeCluster and DescribeLogDirs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_protocol::newer::describe_log_dirs_response as v5;
use shale_protocol::{NewerResponse, Response};

use crate::authorization::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::broker::Broker;
use crate::errors::cluster_authorization_failed_code;
use crate::request::RequestContext;

const ENDPOINT_TYPE_BROKERS: i8 = 1;

/// Answered to every principal, as Kafka does; only the cluster's authorized operations
/// depend on it (0 without DESCRIBE on the cluster).
pub fn describe_cluster(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let image = broker.image();
    let endpoint_type = if ctx.version() >= 1 {
        request.endpoint_type
    } else {
        ENDPOINT_TYPE_BROKERS
    };
    if endpoint_type != ENDPOINT_TYPE_BROKERS {
        return DescribeClusterResponse::default()
            .with_error_code(ResponseError::UnsupportedEndpointType.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "Only brokers are served on this listener",
            )))
            .with_endpoint_type(endpoint_type);
    }
    let include_fenced = ctx.version() >= 2 && request.include_fenced_brokers;
    let listener = ctx.listener_name.as_ref();
    let brokers = image
        .brokers()
        .filter(|b| include_fenced || !b.fenced)
        .filter_map(|b| {
            let ep = super::leader_hints::listener_endpoint(b, listener)?;
            Some(
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(b.broker_id))
                    .with_host(StrBytes::from_string(ep.host.clone()))
                    .with_port(ep.port as i32)
                    .with_rack(b.rack.clone().map(StrBytes::from_string))
                    .with_is_fenced(b.fenced),
            )
        })
        .collect();
    DescribeClusterResponse::default()
        .with_endpoint_type(endpoint_type)
        .with_cluster_id(StrBytes::from_string(image.cluster_id.clone()))
        .with_controller_id(BrokerId(
            broker.metadata.active_controller_id().unwrap_or(-1),
        ))
        .with_brokers(brokers)
        .with_cluster_authorized_operations(if request.include_cluster_authorized_operations {
            let authz = broker.authz(ctx);
            if authz.allows_cluster(AclOperation::Describe) {
                authz.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
            } else {
                0
            }
        } else {
            i32::MIN
        })
}

/// Total and usable bytes of the filesystem holding `path`.
fn disk_space(path: &Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c_path` is a valid NUL-terminated string and `stat` points to writable memory of
    // the right size; statvfs only writes into it.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialised the whole struct.
    let stat = unsafe { stat.assume_init() };
    let frsize = stat.f_frsize as i64;
    Some((
        (stat.f_blocks as i64).saturating_mul(frsize),
        (stat.f_bavail as i64).saturating_mul(frsize),
    ))
}

/// DescribeLogDirs; version 5 answers in Shale's types (kafka-protocol's lack `IsCordoned`).
pub fn describe_log_dirs(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeLogDirsRequest,
) -> Response {
    let response = describe_log_dirs_v4(broker, ctx, request);
    if ctx.version() >= 5 {
        Response::Newer(NewerResponse::DescribeLogDirs(with_cordoned(response)))
    } else {
        Response::Kafka(ResponseKind::DescribeLogDirs(response))
    }
}

/// The version 5 answer: version 4's plus whether each directory is cordoned (KIP-1066).
/// Shale never cordons a log directory (it does not apply `cordoned.log.dirs`), so none is.
fn with_cordoned(response: DescribeLogDirsResponse) -> v5::DescribeLogDirsResponse {
    v5::DescribeLogDirsResponse {
        throttle_time_ms: response.throttle_time_ms,
        error_code: response.error_code,
        results: response
            .results
            .into_iter()
            .map(|r| v5::DescribeLogDirsResult {
                error_code: r.error_code,
                log_dir: r.log_dir,
                topics: r
                    .topics
                    .into_iter()
                    .map(|t| v5::DescribeLogDirsTopic {
                        name: t.name.0,
                        partitions: t
                            .partitions
                            .into_iter()
                            .map(|p| v5::DescribeLogDirsPartition {
                                partition_index: p.partition_index,
                                partition_size: p.partition_size,
                                offset_lag: p.offset_lag,
                                is_future_key: p.is_future_key,
                            })
                            .collect(),
                    })
                    .collect(),
                total_bytes: r.total_bytes,
                usable_bytes: r.usable_bytes,
                is_cordoned: false,
            })
            .collect(),
    }
}

/// Without DESCRIBE on the cluster Kafka answers no directory and CLUSTER_AUTHORIZATION_FAILED.
fn describe_log_dirs_v4(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if !broker.authz(ctx).allows_cluster(AclOperation::Describe) {
        return DescribeLogDirsResponse::default()
            .with_error_code(cluster_authorization_failed_code());
    }
    let wanted = |topic: &str, partition: i32| match &request.topics {
        None => true,
        Some(list) => list
            .iter()
            .any(|t| t.topic.0.as_str() == topic && t.partitions.contains(&partition)),
    };
    // log dir -> topic -> partitions
    let mut by_dir: BTreeMap<String, BTreeMap<String, Vec<DescribeLogDirsPartition>>> =
        BTreeMap::new();
    for dir in broker.replicas.logs().log_dirs() {
        by_dir.entry(dir.display().to_string()).or_default();
    }
    for p in broker.replicas.all() {
        if !wanted(&p.tp.topic, p.tp.partition) {
            continue;
        }
        let dir = p
            .log
            .dir()
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        by_dir
            .entry(dir)
            .or_default()
            .entry(p.tp.topic.clone())
            .or_default()
            .push(
                DescribeLogDirsPartition::default()
                    .with_partition_index(p.tp.partition)
                    .with_partition_size(p.log.size_bytes() as i64)
                    .with_offset_lag(0),
            );
    }
    let results = by_dir
        .into_iter()
        .map(|(dir, topics)| {
            let (total, usable) = if ctx.version() >= 4 {
                disk_space(Path::new(&dir)).unwrap_or((-1, -1))
            } else {
                (-1, -1)
            };
            DescribeLogDirsResult::default()
                .with_log_dir(StrBytes::from_string(dir))
                .with_total_bytes(total)
                .with_usable_bytes(usable)
                .with_topics(
                    topics
                        .into_iter()
                        .map(|(name, partitions)| {
                            DescribeLogDirsTopic::default()
                                .with_name(TopicName(StrBytes::from_string(name)))
                                .with_partitions(partitions)
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeLogDirsResponse::default().with_results(results)
}
