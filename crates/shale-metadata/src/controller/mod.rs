//! The controller state machine. Pure: `(image, request, now_ms) -> (response, records)`, with
//! no I/O and no clock reads; randomness comes from a seeded generator so tests are
//! deterministic. The only state outside the image is soft state that Kafka also keeps in
//! memory on the active controller (broker heartbeat times), rebuilt after a failover.

mod brokers;
mod client_quotas;
mod configs;
mod partitions;
mod placement;
mod scram;
mod security;
mod topics;

pub use topics::validate_topic_name;

#[cfg(test)]
mod group_config_tests;
#[cfg(test)]
mod invariants;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use crate::acl::AclFilter;
use crate::error::MetadataError;
use crate::group_config_defs::{GroupConfigBounds, ShareGroupConfigBounds};
use crate::image::{AclEntry, MetadataImage, PartitionImage, QuotaEntity};
use crate::records::{ConfigResource, Endpoint, FeatureRange, MetadataRecord};

pub use placement::{place_replicas, PlacementBroker};
pub use scram::{ScramDeletion, ScramUpsertion, SCRAM_SHA_256, SCRAM_SHA_512};
pub use security::QuotaAlteration;

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub node_id: i32,
    /// `num.partitions`
    pub num_partitions: i32,
    /// `default.replication.factor`
    pub default_replication_factor: i16,
    /// `delete.topic.enable`
    pub delete_topic_enable: bool,
    /// `broker.session.timeout.ms`
    pub broker_session_timeout_ms: i64,
    /// `broker.heartbeat.interval.ms`
    pub broker_heartbeat_interval_ms: i64,
    /// `unclean.leader.election.enable` (the broker-wide default; topics may override)
    pub unclean_leader_election_enable: bool,
    /// `auto.create.topics.enable`
    pub auto_create_topics_enable: bool,
    /// `min.insync.replicas`
    pub min_insync_replicas: i32,
    /// Producer ids handed out per AllocateProducerIds (Kafka: 1000).
    pub producer_id_block_size: i64,
    /// Upper bound on partitions created by one request (Kafka: 10000).
    pub partitions_per_request_max: i64,
    /// `auto.leader.rebalance.enable`: ticks move leadership back to preferred replicas.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`, in ms.
    pub leader_imbalance_check_interval_ms: i64,
    /// The node's `group.consumer.*` settings, which a group's configs are checked against
    /// (Kafka's controller validates group configs with its own configuration).
    pub group_config_bounds: GroupConfigBounds,
    /// The node's `group.share.*` settings, which a group's `share.*` configs are checked
    /// against.
    pub share_group_config_bounds: ShareGroupConfigBounds,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            node_id: 1,
            num_partitions: 1,
            default_replication_factor: 1,
            delete_topic_enable: true,
            broker_session_timeout_ms: 9000,
            broker_heartbeat_interval_ms: 2000,
            unclean_leader_election_enable: false,
            auto_create_topics_enable: true,
            min_insync_replicas: 1,
            producer_id_block_size: 1000,
            partitions_per_request_max: 10_000,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: 300_000,
            group_config_bounds: GroupConfigBounds::default(),
            share_group_config_bounds: ShareGroupConfigBounds::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    /// -1: `num.partitions`
    pub num_partitions: i32,
    /// -1: `default.replication.factor`
    pub replication_factor: i16,
    /// Manual assignment: (partition, replicas). When given, both counts above must be -1.
    pub assignments: Vec<(i32, Vec<i32>)>,
    pub configs: Vec<(String, Option<String>)>,
}

impl CreatableTopic {
    /// A topic with the cluster's default partition count and replication factor.
    pub fn with_defaults(name: impl Into<String>) -> Self {
        CreatableTopic {
            name: name.into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: Vec::new(),
            configs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsTopic {
    pub name: String,
    /// The new total partition count.
    pub count: i32,
    /// Replicas of each new partition, in partition order.
    pub assignments: Option<Vec<Vec<i32>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterConfigOpType {
    Set,
    Delete,
    Append,
    Subtract,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigOp {
    pub name: String,
    pub op: AlterConfigOpType,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignablePartition {
    pub topic: String,
    pub partition: i32,
    /// `None` cancels an ongoing reassignment.
    pub replicas: Option<Vec<i32>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ControllerRequest {
    CreateTopics {
        topics: Vec<CreatableTopic>,
        validate_only: bool,
    },
    DeleteTopics {
        names: Vec<String>,
        ids: Vec<Uuid>,
    },
    CreatePartitions {
        topics: Vec<CreatePartitionsTopic>,
        validate_only: bool,
    },
    IncrementalAlterConfigs {
        resources: Vec<(ConfigResource, Vec<AlterConfigOp>)>,
        validate_only: bool,
    },
    /// Legacy AlterConfigs: the given set replaces all configs of each resource.
    AlterConfigs {
        resources: Vec<(ConfigResource, ConfigSet)>,
        validate_only: bool,
    },
    RegisterBroker {
        broker_id: i32,
        incarnation_id: Uuid,
        cluster_id: String,
        listeners: Vec<Endpoint>,
        rack: Option<String>,
        features: Vec<FeatureRange>,
        /// The broker's previous shutdown was not clean (Kafka's PreviousBrokerEpoch of -1,
        /// KIP-966): its logs may have lost an unflushed tail.
        unclean_shutdown: bool,
    },
    BrokerHeartbeat {
        broker_id: i32,
        broker_epoch: i64,
        want_fence: bool,
        want_shutdown: bool,
        current_metadata_offset: i64,
    },
    AlterPartition {
        broker_id: i32,
        broker_epoch: i64,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
        new_isr: Vec<i32>,
        partition_epoch: i32,
    },
    ElectLeaders {
        election_type: ElectionType,
        /// `None`: every partition.
        partitions: Option<Vec<(String, i32)>>,
    },
    AlterPartitionReassignments {
        partitions: Vec<ReassignablePartition>,
    },
    AllocateProducerIds {
        broker_id: i32,
        broker_epoch: i64,
    },
    UnregisterBroker {
        broker_id: i32,
    },
    /// The `id` of each entry is ignored: the controller assigns one.
    CreateAcls {
        creations: Vec<AclEntry>,
    },
    DeleteAcls {
        filters: Vec<AclFilter>,
    },
    AlterUserScramCredentials {
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    },
    AlterClientQuotas {
        entries: Vec<QuotaAlteration>,
        validate_only: bool,
    },
    /// Sets finalized feature levels (0 removes a feature).
    UpdateFeatures {
        updates: Vec<(String, i16)>,
    },
    /// Periodic: fences brokers whose session expired.
    Tick,
    /// The process of this registration of the broker is gone (its session link closed
    /// abruptly, or its port refuses connections): fence it now if it is still the current,
    /// unfenced registration.
    FenceDeparted {
        broker_id: i32,
        broker_epoch: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    pub topic_id: Uuid,
    pub num_partitions: i32,
    pub replication_factor: i16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub is_caught_up: bool,
    pub is_fenced: bool,
    pub should_shut_down: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdBlock {
    pub first_producer_id: i64,
    pub len: i64,
}

/// A whole config set for the legacy AlterConfigs: (name, value).
pub type ConfigSet = Vec<(String, Option<String>)>;
pub type DeleteByNameResults = Vec<(String, Result<Uuid, MetadataError>)>;
pub type DeleteByIdResults = Vec<(Uuid, Result<String, MetadataError>)>;

pub type TopicPartitionResults = Vec<((String, i32), Result<(), MetadataError>)>;

#[derive(Debug, Clone, PartialEq)]
pub enum ControllerResponse {
    CreateTopics(Vec<(String, Result<CreatedTopic, MetadataError>)>),
    DeleteTopics {
        by_name: DeleteByNameResults,
        by_id: DeleteByIdResults,
    },
    CreatePartitions(Vec<(String, Result<(), MetadataError>)>),
    /// For both AlterConfigs and IncrementalAlterConfigs.
    AlterConfigs(Vec<(ConfigResource, Result<(), MetadataError>)>),
    RegisterBroker(Result<i64, MetadataError>),
    BrokerHeartbeat(Result<HeartbeatReply, MetadataError>),
    /// The partition's state after the change.
    AlterPartition(Result<PartitionImage, MetadataError>),
    ElectLeaders(TopicPartitionResults),
    AlterPartitionReassignments(TopicPartitionResults),
    AllocateProducerIds(Result<ProducerIdBlock, MetadataError>),
    UnregisterBroker(Result<(), MetadataError>),
    /// In request order.
    CreateAcls(Vec<Result<(), MetadataError>>),
    /// Per filter, in request order: the ACLs deleted.
    DeleteAcls(Vec<Result<Vec<AclEntry>, MetadataError>>),
    /// Per user: deletions first, then upsertions.
    AlterUserScramCredentials(Vec<(String, Result<(), MetadataError>)>),
    AlterClientQuotas(Vec<(QuotaEntity, Result<(), MetadataError>)>),
    UpdateFeatures(Vec<(String, Result<(), MetadataError>)>),
    /// Brokers fenced by this tick.
    Tick(Vec<i32>),
    /// Whether the registration was fenced by this request.
    FenceDeparted(bool),
}

/// Deterministic generator (SplitMix64): placement start indexes and topic ids.
#[derive(Debug, Clone)]
pub struct ControllerRng(u64);

impl ControllerRng {
    pub fn new(seed: u64) -> Self {
        ControllerRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (bound > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }

    /// A random (v4) UUID that Kafka would accept as a topic id: not zero, not the metadata
    /// topic's id (1), and not starting with '-' in URL-safe base64.
    pub fn topic_id(&mut self) -> Uuid {
        loop {
            let hi = u128::from(self.next_u64()) << 64;
            let bytes = (hi | u128::from(self.next_u64())).to_be_bytes();
            let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
            let first_char_is_dash = id.as_bytes()[0] >> 2 == 62;
            if id.as_u128() > 1 && !first_char_is_dash {
                return id;
            }
        }
    }
}

/// Records produced while handling one request, replayed onto a scratch image as they are
/// added so later steps of the same request see earlier ones.
pub(crate) struct Batch {
    pub image: MetadataImage,
    pub records: Vec<MetadataRecord>,
}

impl Batch {
    fn new(image: &MetadataImage) -> Self {
        Batch {
            image: image.clone(),
            records: Vec::new(),
        }
    }

    pub fn push(&mut self, record: MetadataRecord) {
        self.image.replay(&record);
        self.records.push(record);
    }
}

/// The controller: configuration, seeded randomness and heartbeat soft state.
#[derive(Debug)]
pub struct Controller {
    config: ControllerConfig,
    rng: ControllerRng,
    /// Last heartbeat (or registration) time of each broker, in ms.
    last_contact_ms: HashMap<i32, i64>,
    /// Brokers the heartbeat tracker has seen since this controller became active.
    tracked: HashSet<i32>,
    /// When the next preferred-leader rebalance is due (None: at the first tick).
    next_rebalance_ms: Option<i64>,
}

impl Controller {
    pub fn new(config: ControllerConfig, seed: u64) -> Self {
        Controller {
            config,
            rng: ControllerRng::new(seed),
            last_contact_ms: HashMap::new(),
            tracked: HashSet::new(),
            next_rebalance_ms: None,
        }
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// Forgets heartbeat soft state, as a newly active controller starts: every broker gets
    /// a full session from the next tick on.
    pub fn reset_sessions(&mut self) {
        self.last_contact_ms.clear();
        self.tracked.clear();
        self.next_rebalance_ms = None;
    }

    /// Handles one request against `image` at time `now_ms`. The records must be committed
    /// and applied before the next request is handled.
    pub fn handle(
        &mut self,
        image: &MetadataImage,
        request: ControllerRequest,
        now_ms: i64,
    ) -> (ControllerResponse, Vec<MetadataRecord>) {
        let mut batch = Batch::new(image);
        let response = match request {
            ControllerRequest::CreateTopics {
                topics,
                validate_only,
            } => ControllerResponse::CreateTopics(self.create_topics(
                &mut batch,
                topics,
                validate_only,
            )),
            ControllerRequest::DeleteTopics { names, ids } => {
                let (by_name, by_id) = self.delete_topics(&mut batch, names, ids);
                ControllerResponse::DeleteTopics { by_name, by_id }
            }
            ControllerRequest::CreatePartitions {
                topics,
                validate_only,
            } => ControllerResponse::CreatePartitions(self.create_partitions(
                &mut batch,
                topics,
                validate_only,
            )),
            ControllerRequest::IncrementalAlterConfigs {
                resources,
                validate_only,
            } => ControllerResponse::AlterConfigs(self.incremental_alter_configs(
                &mut batch,
                resources,
                validate_only,
            )),
            ControllerRequest::AlterConfigs {
                resources,
                validate_only,
            } => ControllerResponse::AlterConfigs(self.legacy_alter_configs(
                &mut batch,
                resources,
                validate_only,
            )),
            ControllerRequest::RegisterBroker {
                broker_id,
                incarnation_id,
                cluster_id,
                listeners,
                rack,
                features,
                unclean_shutdown,
            } => ControllerResponse::RegisterBroker(self.register_broker(
                &mut batch,
                brokers::Registration {
                    broker_id,
                    incarnation_id,
                    cluster_id,
                    listeners,
                    rack,
                    features,
                    unclean_shutdown,
                },
                now_ms,
            )),
            ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                want_fence,
                want_shutdown,
                current_metadata_offset,
            } => ControllerResponse::BrokerHeartbeat(self.heartbeat(
                &mut batch,
                brokers::Heartbeat {
                    broker_id,
                    broker_epoch,
                    want_fence,
                    want_shutdown,
                    current_metadata_offset,
                },
                now_ms,
            )),
            ControllerRequest::AlterPartition {
                broker_id,
                broker_epoch,
                topic_id,
                partition,
                leader_epoch,
                new_isr,
                partition_epoch,
            } => ControllerResponse::AlterPartition(self.alter_partition(
                &mut batch,
                partitions::IsrProposal {
                    broker_id,
                    broker_epoch,
                    topic_id,
                    partition,
                    leader_epoch,
                    new_isr,
                    partition_epoch,
                },
            )),
            ControllerRequest::ElectLeaders {
                election_type,
                partitions,
            } => ControllerResponse::ElectLeaders(self.elect_leaders(
                &mut batch,
                election_type,
                partitions,
            )),
            ControllerRequest::AlterPartitionReassignments { partitions } => {
                ControllerResponse::AlterPartitionReassignments(
                    self.alter_reassignments(&mut batch, partitions),
                )
            }
            ControllerRequest::AllocateProducerIds {
                broker_id,
                broker_epoch,
            } => ControllerResponse::AllocateProducerIds(self.allocate_producer_ids(
                &mut batch,
                broker_id,
                broker_epoch,
            )),
            ControllerRequest::UnregisterBroker { broker_id } => {
                ControllerResponse::UnregisterBroker(self.unregister_broker(&mut batch, broker_id))
            }
            ControllerRequest::CreateAcls { creations } => {
                ControllerResponse::CreateAcls(self.create_acls(&mut batch, creations))
            }
            ControllerRequest::DeleteAcls { filters } => {
                ControllerResponse::DeleteAcls(self.delete_acls(&mut batch, filters))
            }
            ControllerRequest::AlterUserScramCredentials {
                deletions,
                upsertions,
            } => ControllerResponse::AlterUserScramCredentials(
                self.alter_scram(&mut batch, deletions, upsertions),
            ),
            ControllerRequest::AlterClientQuotas {
                entries,
                validate_only,
            } => ControllerResponse::AlterClientQuotas(self.alter_client_quotas(
                &mut batch,
                entries,
                validate_only,
            )),
            ControllerRequest::UpdateFeatures { updates } => ControllerResponse::UpdateFeatures(
                updates
                    .into_iter()
                    .map(|(name, level)| {
                        let result = if level < 0 || name.is_empty() {
                            Err(MetadataError::InvalidRequest(format!(
                                "Invalid update of feature {name} to level {level}"
                            )))
                        } else {
                            if batch.image.feature_level(&name) != Some(level) {
                                batch.push(MetadataRecord::FeatureLevel {
                                    name: name.clone(),
                                    level,
                                });
                            }
                            Ok(())
                        };
                        (name, result)
                    })
                    .collect(),
            ),
            ControllerRequest::Tick => ControllerResponse::Tick(self.tick(&mut batch, now_ms)),
            ControllerRequest::FenceDeparted {
                broker_id,
                broker_epoch,
            } => ControllerResponse::FenceDeparted(self.fence_departed(
                &mut batch,
                broker_id,
                broker_epoch,
            )),
        };
        (response, batch.records)
    }
}
