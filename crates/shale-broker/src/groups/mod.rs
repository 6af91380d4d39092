//! The classic group coordinator wired into the broker: `__consumer_offsets` as its log, loading
//! and unloading its partitions as leadership moves, and the handlers of the group APIs.
//!
//! The coordinator library (`shale-group`) holds the state machine; this module only converts
//! wire versions to its domain types and back, and gives it a log to write to.

pub mod admin;
pub mod consumer;
pub mod find_coordinator;
// Handed to the coordinator once its constructor takes a GroupConfigSource (the KIP-848
// coordinator's change); until then only its tests use it.
pub mod group_configs;
mod load;
mod log;
pub mod membership;
pub mod offsets;
pub mod share;
pub mod share_offsets;
mod topic_ids;
mod topics_image;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use shale_group::assignor::{assignor_named, TopicsImage};
use shale_group::core::ConsumerSettings;
use shale_group::runtime::GroupCoordinator;
use shale_group::{GroupConfig, GroupError};
use shale_metadata::MetadataImage;
use tracing::info;
use uuid::Uuid;

use crate::config::BrokerConfig;
use crate::coordinator_host::CoordinatorHost;
use crate::core::BrokerCore;
use crate::topic_creation::ensure_internal_topic;

pub use crate::internal_topics::OFFSETS_TOPIC;

/// `offsets.load.buffer.size` default.
const LOAD_BUFFER_BYTES_DEFAULT: usize = 5 * 1024 * 1024;

/// The coordinator and what this broker currently serves of `__consumer_offsets`.
pub struct GroupService {
    pub coordinator: GroupCoordinator,
    /// The partition count placement uses (see [`GroupService::new`]).
    num_partitions: i32,
    /// Partitions loaded or loading here, with the topic id they were loaded for (a new id
    /// means the topic was recreated: reload). A new leader epoch with this broker still the
    /// leader keeps the loaded state, as Kafka does.
    host: CoordinatorHost<Uuid>,
    /// Topic ids of the last reconciled image, to notice deleted topics.
    topics_seen: Mutex<HashMap<String, Uuid>>,
    /// The topics the consumer protocol's coordinator last got, to give it a new view only
    /// when topics, partition counts or replica racks changed.
    topics_image_sent: Mutex<Option<Arc<TopicsImage>>>,
}

impl std::fmt::Debug for GroupService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupService")
            .field("coordinator", &self.coordinator)
            .finish()
    }
}

/// The coordinator settings named by the broker's `group.*` and `offset*` configs.
pub fn group_config(config: &BrokerConfig) -> GroupConfig {
    let to_i32 = |v: i64| i32::try_from(v).unwrap_or(i32::MAX);
    let consumer = &config.consumer_groups;
    GroupConfig {
        session_timeout_ms_min: to_i32(config.group_min_session_timeout_ms),
        session_timeout_ms_max: to_i32(config.group_max_session_timeout_ms),
        initial_rebalance_delay_ms: to_i32(config.group_initial_rebalance_delay_ms),
        group_size_max: usize::try_from(config.group_max_size).unwrap_or(usize::MAX),
        offset_metadata_bytes_max: config.offset_metadata_max_bytes,
        offsets_retention_ms: config.offsets_retention_minutes.saturating_mul(60_000),
        offsets_retention_check_interval_ms: config.offsets_retention_check_interval_ms,
        consumer_session_timeout_ms: consumer.session_timeout_ms,
        consumer_session_timeout_ms_min: consumer.session_timeout_ms_min,
        consumer_session_timeout_ms_max: consumer.session_timeout_ms_max,
        consumer_heartbeat_interval_ms: consumer.heartbeat_interval_ms,
        consumer_heartbeat_interval_ms_min: consumer.heartbeat_interval_ms_min,
        consumer_heartbeat_interval_ms_max: consumer.heartbeat_interval_ms_max,
        consumer_group_size_max: usize::try_from(consumer.group_size_max).unwrap_or(usize::MAX),
        consumer_assignment_interval_ms: consumer.assignment_interval_ms,
        consumer_assignors: consumer.assignors.clone(),
        consumer_migration_policy: consumer.migration_policy,
        consumer_protocol_enabled: config.consumer_protocol_enabled,
        share_session_timeout_ms: config.share_groups.session_timeout_ms,
        share_heartbeat_interval_ms: config.share_groups.heartbeat_interval_ms,
        share_group_size_max: usize::try_from(config.share_groups.group_size_max).unwrap_or(0),
        share_assignment_interval_ms: config.share_groups.assignment_interval_ms,
        share_initialize_retry_interval_ms: i64::from(
            config.share_groups.initialize_retry_interval_ms,
        ),
        ..GroupConfig::default()
    }
}

impl GroupService {
    /// The partition count is the existing topic's, else `offsets.topic.num.partitions`: group
    /// placement must never change under a running cluster.
    pub fn new(core: &Arc<BrokerCore>, image: &MetadataImage) -> Self {
        let config = &core.config;
        let num_partitions = image
            .topic(OFFSETS_TOPIC)
            .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX))
            .filter(|n| *n > 0)
            .unwrap_or(config.offsets_topic_num_partitions);
        let log = Arc::new(log::OffsetsLog::new(core.clone()));
        let consumer = ConsumerSettings {
            assignors: Arc::new(assignor_named),
            group_configs: Arc::new(group_configs::ImageGroupConfigs::new(
                core.metadata.subscribe(),
                &config.consumer_groups,
                &config.share_groups,
            )),
        };
        GroupService {
            coordinator: GroupCoordinator::with_consumer_settings(
                group_config(config),
                num_partitions,
                log,
                consumer,
            ),
            num_partitions,
            host: CoordinatorHost::new(OFFSETS_TOPIC),
            topics_seen: Mutex::new(HashMap::new()),
            topics_image_sent: Mutex::new(None),
        }
    }

    /// Follows leadership of `__consumer_offsets`: loads partitions this broker now leads,
    /// unloads those it lost (or that were deleted). Called after the hosted partitions match
    /// `image`.
    pub fn reconcile(&self, broker: &BrokerCore, image: &MetadataImage) {
        self.forget_deleted_topics(image);
        self.send_topics_image(image);
        let buffer_bytes = broker
            .config
            .properties
            .get("offsets.load.buffer.size")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(LOAD_BUFFER_BYTES_DEFAULT)
            .max(1024);
        self.host.follow_leadership(
            &broker.replicas,
            image,
            // Keyed by topic id only: a new leader epoch of the same topic keeps the state.
            |topic_id, _| topic_id,
            |partition| {
                self.coordinator.unload_partition(partition);
                info!(partition, "unloaded {OFFSETS_TOPIC} partition");
            },
            |partition, _, hosted| {
                // Register the slot now so requests see COORDINATOR_LOAD_IN_PROGRESS at once.
                let loader = self.coordinator.start_loading(partition);
                load::spawn(hosted, loader, buffer_bytes);
            },
        );
    }

    /// Consumer groups recompute their target assignment when their subscribed topics change.
    fn send_topics_image(&self, image: &MetadataImage) {
        let topics = topics_image::topics_image(image);
        let mut sent = self.topics_image_sent.lock();
        if sent.as_deref() == Some(&topics) {
            return;
        }
        let topics = Arc::new(topics);
        *sent = Some(topics.clone());
        self.coordinator.on_topics_image(topics);
    }

    /// Committed offsets of topics deleted since the last image go away, as in Kafka.
    fn forget_deleted_topics(&self, image: &MetadataImage) {
        let current: HashMap<String, Uuid> = image
            .topics()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect();
        let previous = std::mem::replace(&mut *self.topics_seen.lock(), current.clone());
        let deleted: Vec<String> = previous
            .into_iter()
            .filter(|(name, id)| name != OFFSETS_TOPIC && current.get(name) != Some(id))
            .map(|(name, _)| name)
            .collect();
        if deleted.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let coordinator = self.coordinator.clone();
        info!(topics = ?deleted, "removing committed offsets of deleted topics");
        runtime.spawn(async move { coordinator.on_topics_deleted(deleted).await });
    }

    /// Creates `__consumer_offsets` if it does not exist yet (first use of a group).
    pub async fn ensure_offsets_topic(&self, broker: &BrokerCore) {
        let config = &broker.config;
        let create = || {
            ensure_internal_topic(
                broker,
                OFFSETS_TOPIC,
                self.num_partitions,
                "offsets.topic.replication.factor",
                config.offsets_topic_replication_factor,
                |_| {
                    vec![
                        ("cleanup.policy".into(), Some("compact".into())),
                        (
                            "segment.bytes".into(),
                            Some(config.offsets_topic_segment_bytes.to_string()),
                        ),
                        ("compression.type".into(), Some("producer".into())),
                    ]
                },
            )
        };
        let exists = || broker.image().topic(OFFSETS_TOPIC).is_some();
        self.host.ensure_topic(exists, create).await;
    }
}

/// Turns a coordinator error into the error code and message of a response.
pub(crate) fn code(error: &GroupError) -> i16 {
    crate::errors::group_error_code(error).0
}

/// Error code of an optional error (0 when none).
pub(crate) fn code_of(error: &Option<GroupError>) -> i16 {
    error.as_ref().map(code).unwrap_or(0)
}
