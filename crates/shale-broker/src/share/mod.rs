//! Share groups (KIP-932) wired into the broker: the share coordinator over
//! `__share_group_state` (`coordinator.rs`), the persister that reaches it from anywhere in the
//! cluster (`persister.rs`), the share-partitions this broker leads (`partitions.rs`,
//! `leader.rs`), the share sessions of the members fetching here, and the handlers of
//! ShareFetch, ShareAcknowledge and the share-state APIs.
//!
//! The state machines are shale-share's; this module gives them a log, a clock, timers and the
//! wire.

pub mod acknowledge;
pub mod coordinator;
pub mod error;
pub mod fetch;
pub mod group_configs;
mod leader;
pub mod log_read;
pub mod partitions;
pub mod persister;
pub mod state_apis;

use std::sync::Arc;

use parking_lot::Mutex;
use shale_metadata::MetadataImage;
use shale_share::session::{ShareSessionCache, ShareSessionKey};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::config::ShareGroupSettings;
use crate::core::BrokerCore;
use coordinator::ShareCoordinatorService;
use partitions::SharePartitions;
use persister::Persister;

pub struct ShareService {
    pub coordinator: ShareCoordinatorService,
    pub persister: Persister,
    pub partitions: SharePartitions,
    pub sessions: Mutex<ShareSessionCache>,
    pub settings: ShareGroupSettings,
    /// Woken when records become available other than by a produce (a release, a lock
    /// expiry, a failed write reverted): waiting share fetches look again.
    pub records_available: Notify,
    /// Topic ids of the last image, to notice deleted topics.
    topics_seen: Mutex<Vec<Uuid>>,
}

impl std::fmt::Debug for ShareService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareService")
            .field("partitions", &self.partitions.len())
            .finish()
    }
}

impl ShareService {
    pub fn new(core: &BrokerCore, image: &MetadataImage) -> Self {
        let settings = core.config.share_groups.clone();
        ShareService {
            coordinator: ShareCoordinatorService::new(
                coordinator::coordinator_settings(&core.config.share_coordinator),
                image,
            ),
            persister: Persister::default(),
            partitions: SharePartitions::default(),
            sessions: Mutex::new(ShareSessionCache::new(
                usize::try_from(settings.share_sessions_max).unwrap_or(0),
            )),
            settings,
            records_available: Notify::new(),
            topics_seen: Mutex::new(Vec::new()),
        }
    }

    /// Follows `image`: the share coordinator's partitions, and the share-partitions this
    /// broker still leads (the others are dropped; their new leader reads the state again).
    pub fn reconcile(self: &Arc<Self>, core: &Arc<BrokerCore>, image: &MetadataImage) {
        self.coordinator.reconcile(core, image);
        let node_id = core.node_id();
        self.partitions.retain(|key, tp| {
            image
                .topic(&tp.topic)
                .filter(|t| t.topic_id == key.topic_id)
                .and_then(|t| t.partitions.get(&tp.partition))
                .is_some_and(|p| p.leader == node_id)
        });
        let current: Vec<Uuid> = image.topics().map(|t| t.topic_id).collect();
        let previous = std::mem::replace(&mut *self.topics_seen.lock(), current.clone());
        let deleted: Vec<Uuid> = previous
            .into_iter()
            .filter(|id| !current.contains(id))
            .collect();
        if deleted.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let service = self.clone();
        let core = core.clone();
        runtime.spawn(async move {
            service
                .coordinator
                .clean_up_deleted_topics(&core, &deleted)
                .await;
        });
    }

    /// The acquisition lock duration of `group_id`'s records: its `share.record.lock.duration.ms`
    /// or the broker's, as ShareFetch and ShareAcknowledge answers report it.
    pub fn record_lock_duration_ms(&self, core: &BrokerCore, group_id: &str) -> i32 {
        let configs = group_configs::share_group_configs(&core.image(), group_id, &self.settings);
        i32::try_from(configs.record_lock_duration_ms).unwrap_or(i32::MAX)
    }

    /// A connection closed: its share sessions go, and their members' acquired records are
    /// released at once rather than when their locks expire (as Kafka does).
    pub fn connection_closed(self: &Arc<Self>, core: &Arc<BrokerCore>, connection_id: u64) {
        let closed = self.sessions.lock().connection_closed(connection_id);
        if closed.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let service = self.clone();
        let core = core.clone();
        runtime.spawn(async move {
            for (key, partitions) in closed {
                service.release_member(&core, &key, &partitions).await;
            }
        });
    }

    /// Releases what `member` holds on `partitions` of its group.
    pub async fn release_member(
        self: &Arc<Self>,
        core: &Arc<BrokerCore>,
        member: &ShareSessionKey,
        partitions: &[(Uuid, i32)],
    ) {
        for &(topic_id, partition) in partitions {
            let key = shale_share::state::SharePartitionKey {
                group_id: member.group_id.clone(),
                topic_id,
                partition,
            };
            self.release(core, &key, &member.member_id).await;
        }
    }
}
