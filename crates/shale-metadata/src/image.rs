//! The immutable metadata image: the state obtained by replaying every committed record.
//!
//! Readers share it as `Arc<MetadataImage>`. The large maps (topics, names, topic configs) are
//! persistent maps and the small ones sit behind an `Arc`, so a clone costs a few reference
//! counts and a change copies O(log n) map nodes plus the one topic it touches.

use std::collections::BTreeMap;
use std::sync::Arc;

use imbl::OrdMap;
use shale_raft::legacy::LegacyReader;
use uuid::Uuid;

use crate::error::MetadataError;
use crate::records::{self, ConfigResource, Endpoint, FeatureRange, MetadataRecord};

/// Kafka's "no leader" marker.
pub const NO_LEADER: i32 = -1;

/// KIP-966's feature. Kafka 4.1+ finalises level 1 on a new cluster, so a cluster whose
/// metadata holds no level for it runs with eligible leader replicas.
pub const ELIGIBLE_LEADER_REPLICAS_FEATURE: &str = "eligible.leader.replicas.version";
/// The level Shale supports and finalises by default.
pub const ELIGIBLE_LEADER_REPLICAS_VERSION: i16 = 1;

#[derive(Debug, Clone, PartialEq)]
pub struct BrokerRegistration {
    pub broker_id: i32,
    pub incarnation_id: Uuid,
    pub broker_epoch: i64,
    pub listeners: Vec<Endpoint>,
    pub rack: Option<String>,
    pub features: Vec<FeatureRange>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
}

impl BrokerRegistration {
    /// A broker that may lead partitions and join ISRs.
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }

    pub fn listener(&self, name: &str) -> Option<&Endpoint> {
        self.listeners.iter().find(|l| l.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionImage {
    pub partition: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// `NO_LEADER` (-1) when no replica leads.
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    /// KIP-966: replicas that left the ISR while it was below `min.insync.replicas`; they
    /// hold every committed record, so they may be elected. Disjoint from the ISR.
    pub eligible_leader_replicas: Vec<i32>,
    /// KIP-966 (Kafka's balanced recovery): the leader the partition had when its ISR became
    /// empty, electable once every replica was offline.
    pub last_known_elr: Vec<i32>,
}

/// The fields a partition change sets (`None`: unchanged).
struct PartitionDelta<'a> {
    leader: Option<i32>,
    isr: Option<&'a Vec<i32>>,
    replicas: Option<&'a Vec<i32>>,
    adding_replicas: Option<&'a Vec<i32>>,
    removing_replicas: Option<&'a Vec<i32>>,
    eligible_leader_replicas: Option<&'a Vec<i32>>,
    last_known_elr: Option<&'a Vec<i32>>,
}

impl PartitionImage {
    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The replica set once the ongoing reassignment completes.
    pub fn target_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.removing_replicas.contains(r))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub topic_id: Uuid,
    pub partitions: BTreeMap<i32, PartitionImage>,
}

impl TopicImage {
    pub fn partition(&self, partition: i32) -> Option<&PartitionImage> {
        self.partitions.get(&partition)
    }

    /// Kafka's internal topics (excluded from some admin operations and listings).
    pub fn is_internal(&self) -> bool {
        is_internal_topic(&self.name)
    }
}

pub fn is_internal_topic(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclEntry {
    pub id: Uuid,
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// A client-quota entity: (entity type, name; `None` = the default entity), sorted.
pub type QuotaEntity = Vec<(String, Option<String>)>;

static EMPTY_CONFIGS: BTreeMap<String, String> = BTreeMap::new();

#[derive(Debug, Clone, Default)]
pub struct MetadataImage {
    pub cluster_id: String,
    /// Offset of the last applied log entry; -1 for the empty image.
    pub offset: i64,
    controller_id: Option<i32>,
    brokers: Arc<BTreeMap<i32, BrokerRegistration>>,
    topics: OrdMap<Uuid, Arc<TopicImage>>,
    /// Keys are shared `Arc<str>` so copying the map on a change copies no strings.
    topic_ids_by_name: OrdMap<Arc<str>, Uuid>,
    /// Explicit topic configs by topic name.
    topic_configs: OrdMap<String, BTreeMap<String, String>>,
    /// Dynamic broker configs; `None` holds the cluster-wide defaults.
    broker_configs: Arc<BTreeMap<Option<i32>, BTreeMap<String, String>>>,
    /// Dynamic group configs by group id (KIP-848); a group without any has no entry.
    group_configs: OrdMap<String, BTreeMap<String, String>>,
    features: Arc<BTreeMap<String, i16>>,
    acls: Arc<BTreeMap<Uuid, AclEntry>>,
    scram_credentials: Arc<BTreeMap<(String, i8), ScramCredential>>,
    client_quotas: Arc<BTreeMap<QuotaEntity, BTreeMap<String, f64>>>,
    next_producer_id: i64,
}

impl MetadataImage {
    pub fn empty(cluster_id: impl Into<String>) -> Self {
        MetadataImage {
            cluster_id: cluster_id.into(),
            offset: -1,
            ..Default::default()
        }
    }

    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.topic_ids_by_name
            .get(name)
            .and_then(|id| self.topics.get(id))
            .map(|t| t.as_ref())
    }

    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.topics.get(&id).map(|t| t.as_ref())
    }

    /// Topics in name order.
    pub fn topics(&self) -> impl Iterator<Item = &TopicImage> {
        self.topic_ids_by_name
            .values()
            .filter_map(|id| self.topics.get(id).map(|t| t.as_ref()))
    }

    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    pub fn partition(&self, topic_id: Uuid, partition: i32) -> Option<&PartitionImage> {
        self.topic_by_id(topic_id)
            .and_then(|t| t.partitions.get(&partition))
    }

    /// Brokers in id order.
    pub fn brokers(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.brokers.values()
    }

    pub fn broker(&self, id: i32) -> Option<&BrokerRegistration> {
        self.brokers.get(&id)
    }

    /// Partitions that have `broker` as a replica (what that broker must host).
    pub fn replicas_on(&self, broker: i32) -> impl Iterator<Item = (&TopicImage, &PartitionImage)> {
        self.topics().flat_map(move |t| {
            t.partitions
                .values()
                .filter(move |p| p.replicas.contains(&broker))
                .map(move |p| (t, p))
        })
    }

    /// Partitions with a reassignment in progress (ListPartitionReassignments).
    pub fn reassigning_partitions(&self) -> impl Iterator<Item = (&TopicImage, &PartitionImage)> {
        self.topics().flat_map(|t| {
            t.partitions
                .values()
                .filter(|p| p.is_reassigning())
                .map(move |p| (t, p))
        })
    }

    /// Replicas whose broker is not registered (Kafka's offline replicas in KRaft mode).
    pub fn offline_replicas(&self, partition: &PartitionImage) -> Vec<i32> {
        partition
            .replicas
            .iter()
            .copied()
            .filter(|r| !self.brokers.contains_key(r))
            .collect()
    }

    /// Explicitly set configs of a topic (not defaults).
    pub fn topic_configs(&self, topic: &str) -> &BTreeMap<String, String> {
        self.topic_configs.get(topic).unwrap_or(&EMPTY_CONFIGS)
    }

    /// Dynamic configs of one broker.
    pub fn broker_configs(&self, broker_id: i32) -> &BTreeMap<String, String> {
        self.broker_configs
            .get(&Some(broker_id))
            .unwrap_or(&EMPTY_CONFIGS)
    }

    /// Dynamic cluster-wide default broker configs.
    pub fn cluster_default_broker_configs(&self) -> &BTreeMap<String, String> {
        self.broker_configs.get(&None).unwrap_or(&EMPTY_CONFIGS)
    }

    /// Dynamic configs set on a group (not the broker's values it inherits).
    pub fn group_configs(&self, group_id: &str) -> &BTreeMap<String, String> {
        self.group_configs.get(group_id).unwrap_or(&EMPTY_CONFIGS)
    }

    pub fn configs(&self, resource: &ConfigResource) -> &BTreeMap<String, String> {
        match resource {
            ConfigResource::Topic(name) => self.topic_configs(name),
            ConfigResource::Broker(id) => self.broker_configs(*id),
            ConfigResource::ClusterDefaultBroker => self.cluster_default_broker_configs(),
            ConfigResource::Group(group_id) => self.group_configs(group_id),
        }
    }

    /// Every resource that has explicit configs, with them.
    pub fn all_configs(&self) -> Vec<(ConfigResource, &BTreeMap<String, String>)> {
        let brokers = self.broker_configs.iter().map(|(id, c)| {
            let resource = match id {
                Some(id) => ConfigResource::Broker(*id),
                None => ConfigResource::ClusterDefaultBroker,
            };
            (resource, c)
        });
        let topics = self
            .topic_configs
            .iter()
            .map(|(name, c)| (ConfigResource::Topic(name.clone()), c));
        let groups = self
            .group_configs
            .iter()
            .map(|(id, c)| (ConfigResource::Group(id.clone()), c));
        brokers.chain(topics).chain(groups).collect()
    }

    fn set_config(&mut self, resource: &ConfigResource, name: &str, value: Option<&String>) {
        fn update<K: Ord + Clone>(
            map: &mut BTreeMap<K, BTreeMap<String, String>>,
            key: &K,
            name: &str,
            value: Option<&String>,
        ) {
            match value {
                Some(v) => {
                    map.entry(key.clone())
                        .or_default()
                        .insert(name.to_string(), v.clone());
                }
                None => {
                    if let Some(configs) = map.get_mut(key) {
                        configs.remove(name);
                        if configs.is_empty() {
                            map.remove(key);
                        }
                    }
                }
            }
        }
        match resource {
            ConfigResource::Topic(topic) => match value {
                Some(v) => {
                    let mut configs = self.topic_configs.get(topic).cloned().unwrap_or_default();
                    configs.insert(name.to_string(), v.clone());
                    self.topic_configs.insert(topic.clone(), configs);
                }
                None => {
                    if let Some(configs) = self.topic_configs.get_mut(topic) {
                        configs.remove(name);
                        if configs.is_empty() {
                            self.topic_configs.remove(topic);
                        }
                    }
                }
            },
            ConfigResource::Broker(id) => update(
                Arc::make_mut(&mut self.broker_configs),
                &Some(*id),
                name,
                value,
            ),
            ConfigResource::ClusterDefaultBroker => {
                update(Arc::make_mut(&mut self.broker_configs), &None, name, value)
            }
            ConfigResource::Group(group_id) => match value {
                Some(v) => {
                    let mut configs = self
                        .group_configs
                        .get(group_id)
                        .cloned()
                        .unwrap_or_default();
                    configs.insert(name.to_string(), v.clone());
                    self.group_configs.insert(group_id.clone(), configs);
                }
                None => {
                    if let Some(configs) = self.group_configs.get_mut(group_id) {
                        configs.remove(name);
                        if configs.is_empty() {
                            self.group_configs.remove(group_id);
                        }
                    }
                }
            },
        }
    }

    /// Whether KIP-966's eligible leader replicas (and strict min ISR) are on.
    pub fn elr_enabled(&self) -> bool {
        self.feature_level(ELIGIBLE_LEADER_REPLICAS_FEATURE)
            .unwrap_or(ELIGIBLE_LEADER_REPLICAS_VERSION)
            >= 1
    }

    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.features.get(name).copied()
    }

    pub fn features(&self) -> impl Iterator<Item = (&str, i16)> {
        self.features.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn acls(&self) -> impl Iterator<Item = &AclEntry> {
        self.acls.values()
    }

    /// The ACLs by id, shared: a reader that indexes them keeps a clone of this `Arc`, and
    /// since replay changes a shared map copy-on-write, a newer image whose map is another
    /// `Arc` changed them.
    pub fn acl_map(&self) -> &Arc<BTreeMap<Uuid, AclEntry>> {
        &self.acls
    }

    pub fn scram_credential(&self, user: &str, mechanism: i8) -> Option<&ScramCredential> {
        self.scram_credentials.get(&(user.to_string(), mechanism))
    }

    pub fn scram_credentials(&self) -> impl Iterator<Item = (&str, i8, &ScramCredential)> {
        self.scram_credentials
            .iter()
            .map(|((user, mech), c)| (user.as_str(), *mech, c))
    }

    pub fn client_quotas(&self) -> impl Iterator<Item = (&QuotaEntity, &BTreeMap<String, f64>)> {
        self.client_quotas.iter()
    }

    /// First producer id of the next block to hand out.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    /// The controller currently accepting writes, as last published by the runtime.
    pub fn active_controller_id(&self) -> Option<i32> {
        self.controller_id
    }

    /// Returns a copy naming `controller_id` as the active controller. Not part of replayed
    /// state: it comes from the quorum's leadership.
    pub fn with_active_controller(&self, controller_id: Option<i32>) -> MetadataImage {
        let mut next = self.clone();
        next.controller_id = controller_id;
        next
    }

    /// The image after applying one record committed at `offset`.
    pub fn apply(&self, record: &MetadataRecord, offset: i64) -> MetadataImage {
        let mut next = self.clone();
        next.replay(record);
        next.offset = offset;
        next
    }

    /// The image after applying a whole committed entry (a batch) at `offset`.
    pub fn apply_entry(&self, records: &[MetadataRecord], offset: i64) -> MetadataImage {
        let mut next = self.clone();
        for record in records {
            next.replay(record);
        }
        next.offset = offset;
        next
    }

    fn put_partition(&mut self, topic_id: Uuid, partition: PartitionImage) {
        if let Some(topic) = self.topics.get_mut(&topic_id) {
            Arc::make_mut(topic)
                .partitions
                .insert(partition.partition, partition);
        }
    }

    /// A partition change bumps the partition epoch always, the leader epoch whenever a
    /// leader is named.
    fn change_partition(&mut self, topic_id: Uuid, partition: i32, delta: &PartitionDelta<'_>) {
        let Some(topic) = self.topics.get_mut(&topic_id) else {
            return;
        };
        let Some(p) = Arc::make_mut(topic).partitions.get_mut(&partition) else {
            return;
        };
        if let Some(leader) = delta.leader {
            p.leader = leader;
            p.leader_epoch += 1;
        }
        let set = |field: &mut Vec<i32>, value: Option<&Vec<i32>>| {
            if let Some(v) = value {
                field.clone_from(v);
            }
        };
        set(&mut p.isr, delta.isr);
        set(&mut p.replicas, delta.replicas);
        set(&mut p.adding_replicas, delta.adding_replicas);
        set(&mut p.removing_replicas, delta.removing_replicas);
        set(
            &mut p.eligible_leader_replicas,
            delta.eligible_leader_replicas,
        );
        set(&mut p.last_known_elr, delta.last_known_elr);
        p.partition_epoch += 1;
    }

    /// Applies one record in place. Records that refer to state which does not exist are
    /// skipped: replay must never fail, and the controller never writes such records.
    pub fn replay(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                listeners,
                rack,
                features,
                fenced,
                in_controlled_shutdown,
            } => {
                Arc::make_mut(&mut self.brokers).insert(
                    *broker_id,
                    BrokerRegistration {
                        broker_id: *broker_id,
                        incarnation_id: *incarnation_id,
                        broker_epoch: *broker_epoch,
                        listeners: listeners.clone(),
                        rack: rack.clone(),
                        features: features.clone(),
                        fenced: *fenced,
                        in_controlled_shutdown: *in_controlled_shutdown,
                    },
                );
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => self.change_broker(*broker_id, *broker_epoch, Some(true), None),
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => self.change_broker(*broker_id, *broker_epoch, Some(false), None),
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => self.change_broker(*broker_id, *broker_epoch, *fenced, *in_controlled_shutdown),
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                if self
                    .brokers
                    .get(broker_id)
                    .is_some_and(|b| b.broker_epoch == *broker_epoch)
                {
                    Arc::make_mut(&mut self.brokers).remove(broker_id);
                }
            }
            MetadataRecord::Topic { name, topic_id } => {
                self.topic_ids_by_name
                    .insert(Arc::from(name.as_str()), *topic_id);
                self.topics.insert(
                    *topic_id,
                    Arc::new(TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: BTreeMap::new(),
                    }),
                );
            }
            // The ELR variants carry the same fields plus KIP-966's two lists, which the plain
            // variants leave empty (full state) or untouched (change).
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
                adding_replicas,
                removing_replicas,
            }
            | MetadataRecord::PartitionWithElr {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
                adding_replicas,
                removing_replicas,
                ..
            } => {
                let (elr, last_known_elr) = record.elr_lists();
                self.put_partition(
                    *topic_id,
                    PartitionImage {
                        partition: *partition,
                        replicas: replicas.clone(),
                        isr: isr.clone(),
                        leader: *leader,
                        leader_epoch: *leader_epoch,
                        partition_epoch: *partition_epoch,
                        adding_replicas: adding_replicas.clone(),
                        removing_replicas: removing_replicas.clone(),
                        eligible_leader_replicas: elr.cloned().unwrap_or_default(),
                        last_known_elr: last_known_elr.cloned().unwrap_or_default(),
                    },
                )
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                isr,
                replicas,
                adding_replicas,
                removing_replicas,
            }
            | MetadataRecord::PartitionChangeWithElr {
                topic_id,
                partition,
                leader,
                isr,
                replicas,
                adding_replicas,
                removing_replicas,
                ..
            } => {
                let (elr, last_known_elr) = record.elr_lists();
                self.change_partition(
                    *topic_id,
                    *partition,
                    &PartitionDelta {
                        leader: *leader,
                        isr: isr.as_ref(),
                        replicas: replicas.as_ref(),
                        adding_replicas: adding_replicas.as_ref(),
                        removing_replicas: removing_replicas.as_ref(),
                        eligible_leader_replicas: elr,
                        last_known_elr,
                    },
                )
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                if let Some(topic) = self.topics.remove(topic_id) {
                    self.topic_ids_by_name.remove(topic.name.as_str());
                    if self.topic_configs.contains_key(&topic.name) {
                        self.topic_configs.remove(&topic.name);
                    }
                }
            }
            MetadataRecord::Config {
                resource,
                name,
                value,
            } => self.set_config(resource, name, value.as_ref()),
            MetadataRecord::AccessControlEntry {
                id,
                resource_type,
                resource_name,
                pattern_type,
                principal,
                host,
                operation,
                permission_type,
            } => {
                Arc::make_mut(&mut self.acls).insert(
                    *id,
                    AclEntry {
                        id: *id,
                        resource_type: *resource_type,
                        resource_name: resource_name.clone(),
                        pattern_type: *pattern_type,
                        principal: principal.clone(),
                        host: host.clone(),
                        operation: *operation,
                        permission_type: *permission_type,
                    },
                );
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                Arc::make_mut(&mut self.acls).remove(id);
            }
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                salt,
                stored_key,
                server_key,
                iterations,
            } => {
                Arc::make_mut(&mut self.scram_credentials).insert(
                    (name.clone(), *mechanism),
                    ScramCredential {
                        salt: salt.clone(),
                        stored_key: stored_key.clone(),
                        server_key: server_key.clone(),
                        iterations: *iterations,
                    },
                );
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                Arc::make_mut(&mut self.scram_credentials).remove(&(name.clone(), *mechanism));
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                let mut entity = entity.clone();
                entity.sort();
                let quotas = Arc::make_mut(&mut self.client_quotas);
                match value {
                    Some(v) => {
                        quotas.entry(entity).or_default().insert(key.clone(), *v);
                    }
                    None => {
                        if let Some(map) = quotas.get_mut(&entity) {
                            map.remove(key);
                            if map.is_empty() {
                                quotas.remove(&entity);
                            }
                        }
                    }
                }
            }
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                self.next_producer_id = self.next_producer_id.max(*next_producer_id);
            }
            MetadataRecord::FeatureLevel { name, level } => {
                let features = Arc::make_mut(&mut self.features);
                // A feature that is on when unset (KIP-966's) keeps an explicit 0: off.
                if *level == 0 && name != ELIGIBLE_LEADER_REPLICAS_FEATURE {
                    features.remove(name);
                } else {
                    features.insert(name.clone(), *level);
                }
            }
            MetadataRecord::NoOp => {}
        }
    }

    fn change_broker(
        &mut self,
        broker_id: i32,
        broker_epoch: i64,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
    ) {
        if self
            .brokers
            .get(&broker_id)
            .is_none_or(|b| b.broker_epoch != broker_epoch)
        {
            return;
        }
        if let Some(b) = Arc::make_mut(&mut self.brokers).get_mut(&broker_id) {
            if let Some(fenced) = fenced {
                b.fenced = fenced;
            }
            if let Some(shutdown) = in_controlled_shutdown {
                b.in_controlled_shutdown = shutdown;
            }
        }
    }

    /// The records that rebuild this image from empty (the body of a snapshot).
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        for (name, level) in self.features.iter() {
            out.push(MetadataRecord::FeatureLevel {
                name: name.clone(),
                level: *level,
            });
        }
        for b in self.brokers.values() {
            out.push(MetadataRecord::RegisterBroker {
                broker_id: b.broker_id,
                incarnation_id: b.incarnation_id,
                broker_epoch: b.broker_epoch,
                listeners: b.listeners.clone(),
                rack: b.rack.clone(),
                features: b.features.clone(),
                fenced: b.fenced,
                in_controlled_shutdown: b.in_controlled_shutdown,
            });
        }
        for topic in self.topics() {
            out.push(MetadataRecord::Topic {
                name: topic.name.clone(),
                topic_id: topic.topic_id,
            });
            for p in topic.partitions.values() {
                if !p.eligible_leader_replicas.is_empty() || !p.last_known_elr.is_empty() {
                    out.push(MetadataRecord::PartitionWithElr {
                        topic_id: topic.topic_id,
                        partition: p.partition,
                        replicas: p.replicas.clone(),
                        isr: p.isr.clone(),
                        leader: p.leader,
                        leader_epoch: p.leader_epoch,
                        partition_epoch: p.partition_epoch,
                        adding_replicas: p.adding_replicas.clone(),
                        removing_replicas: p.removing_replicas.clone(),
                        eligible_leader_replicas: p.eligible_leader_replicas.clone(),
                        last_known_elr: p.last_known_elr.clone(),
                    });
                    continue;
                }
                out.push(MetadataRecord::Partition {
                    topic_id: topic.topic_id,
                    partition: p.partition,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    adding_replicas: p.adding_replicas.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                });
            }
        }
        for (resource, configs) in self.all_configs() {
            for (name, value) in configs {
                out.push(MetadataRecord::Config {
                    resource: resource.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        for acl in self.acls.values() {
            out.push(MetadataRecord::AccessControlEntry {
                id: acl.id,
                resource_type: acl.resource_type,
                resource_name: acl.resource_name.clone(),
                pattern_type: acl.pattern_type,
                principal: acl.principal.clone(),
                host: acl.host.clone(),
                operation: acl.operation,
                permission_type: acl.permission_type,
            });
        }
        for ((name, mechanism), c) in self.scram_credentials.iter() {
            out.push(MetadataRecord::UserScramCredential {
                name: name.clone(),
                mechanism: *mechanism,
                salt: c.salt.clone(),
                stored_key: c.stored_key.clone(),
                server_key: c.server_key.clone(),
                iterations: c.iterations,
            });
        }
        for (entity, quotas) in self.client_quotas.iter() {
            for (key, value) in quotas {
                out.push(MetadataRecord::ClientQuota {
                    entity: entity.clone(),
                    key: key.clone(),
                    value: Some(*value),
                });
            }
        }
        if self.next_producer_id > 0 {
            out.push(MetadataRecord::ProducerIds {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: self.next_producer_id,
            });
        }
        out
    }

    /// Snapshot bytes: `SNAPSHOT_MAGIC`, the format version (u16 little-endian, as the first
    /// format wrote it), the header (cluster id, offset) as a versioned struct, then one
    /// encoded entry holding `to_records()`.
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let header = SnapshotHeader {
            cluster_id: self.cluster_id.clone(),
            offset: self.offset,
        };
        let mut out = SNAPSHOT_MAGIC.to_vec();
        out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        shale_raft::encoding::Encode::encode(&header, &mut out);
        out.extend_from_slice(&records::encode_entry(&self.to_records()));
        out
    }

    /// Decodes a snapshot of either format (format 1: a bincode header and a format-1 entry).
    pub fn decode_snapshot(bytes: &[u8]) -> Result<MetadataImage, MetadataError> {
        let body = bytes
            .strip_prefix(SNAPSHOT_MAGIC)
            .ok_or_else(|| MetadataError::Corrupt("not a metadata snapshot".into()))?;
        let bad_header = |e: shale_raft::encoding::DecodeError| {
            MetadataError::Corrupt(format!("bad snapshot header: {e}"))
        };
        let (header, rest) = match body.get(..2).map(|v| u16::from_le_bytes([v[0], v[1]])) {
            Some(SNAPSHOT_FORMAT_VERSION) => {
                let mut reader = shale_raft::encoding::Reader::new(&body[2..]);
                let header: SnapshotHeader =
                    shale_raft::encoding::Decode::decode(&mut reader).map_err(bad_header)?;
                (header, reader.rest())
            }
            Some(LEGACY_SNAPSHOT_FORMAT_VERSION) => {
                let mut reader = LegacyReader::new(&body[2..]);
                let cluster_id = reader.string().map_err(bad_header)?;
                let offset = reader.i64().map_err(bad_header)?;
                (SnapshotHeader { cluster_id, offset }, reader.rest())
            }
            Some(other) => {
                return Err(MetadataError::Corrupt(format!(
                    "unknown snapshot format version {other}"
                )))
            }
            None => return Err(MetadataError::Corrupt("truncated snapshot header".into())),
        };
        let records = records::decode_entry(rest)?;
        let mut image = MetadataImage::empty(header.cluster_id);
        for record in &records {
            image.replay(record);
        }
        image.offset = header.offset;
        Ok(image)
    }

    /// Whether snapshot bytes are in the first format (bincode), which a new snapshot replaces.
    pub fn is_legacy_snapshot(bytes: &[u8]) -> bool {
        bytes
            .strip_prefix(SNAPSHOT_MAGIC)
            .is_some_and(|body| body.starts_with(&LEGACY_SNAPSHOT_FORMAT_VERSION.to_le_bytes()))
    }
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"SHMS";
const SNAPSHOT_FORMAT_VERSION: u16 = 2;
const LEGACY_SNAPSHOT_FORMAT_VERSION: u16 = 1;

struct SnapshotHeader {
    cluster_id: String,
    offset: i64,
}

shale_raft::versioned_struct!(SnapshotHeader { cluster_id, offset });

/// Equality of replayed state (the runtime-only controller id is ignored).
impl PartialEq for MetadataImage {
    fn eq(&self, other: &Self) -> bool {
        self.cluster_id == other.cluster_id
            && self.offset == other.offset
            && self.brokers == other.brokers
            && self.topics == other.topics
            && self.topic_ids_by_name == other.topic_ids_by_name
            && self.topic_configs == other.topic_configs
            && self.broker_configs == other.broker_configs
            && self.group_configs == other.group_configs
            && self.features == other.features
            && self.acls == other.acls
            && self.scram_credentials == other.scram_credentials
            && self.client_quotas == other.client_quotas
            && self.next_producer_id == other.next_producer_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::SecurityProtocol;

    fn sample_image() -> MetadataImage {
        let id = Uuid::from_u128(42);
        let records = vec![
            MetadataRecord::FeatureLevel {
                name: "metadata.version".into(),
                level: 27,
            },
            MetadataRecord::RegisterBroker {
                broker_id: 1,
                incarnation_id: Uuid::from_u128(1),
                broker_epoch: 5,
                listeners: vec![Endpoint {
                    name: "PLAINTEXT".into(),
                    host: "127.0.0.1".into(),
                    port: 9092,
                    security_protocol: SecurityProtocol::Plaintext,
                }],
                rack: Some("r1".into()),
                features: vec![],
                fenced: false,
                in_controlled_shutdown: false,
            },
            MetadataRecord::Topic {
                name: "orders".into(),
                topic_id: id,
            },
            MetadataRecord::Partition {
                topic_id: id,
                partition: 0,
                replicas: vec![1],
                isr: vec![1],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
            },
            MetadataRecord::Config {
                resource: ConfigResource::Topic("orders".into()),
                name: "retention.ms".into(),
                value: Some("1000".into()),
            },
            MetadataRecord::Config {
                resource: ConfigResource::Group("payments".into()),
                name: "consumer.session.timeout.ms".into(),
                value: Some("50000".into()),
            },
            MetadataRecord::ProducerIds {
                broker_id: 1,
                broker_epoch: 5,
                next_producer_id: 2000,
            },
        ];
        MetadataImage::empty("cid").apply_entry(&records, 3)
    }

    #[test]
    fn replay_builds_expected_state() {
        let image = sample_image();
        let topic = image.topic("orders").unwrap();
        assert_eq!(topic.partitions[&0].leader, 1);
        assert_eq!(image.topic_by_id(topic.topic_id).unwrap().name, "orders");
        assert_eq!(image.topic_configs("orders")["retention.ms"], "1000");
        assert!(image.topic_configs("other").is_empty());
        assert_eq!(
            image.configs(&ConfigResource::Group("payments".into()))["consumer.session.timeout.ms"],
            "50000"
        );
        assert!(image.group_configs("other").is_empty());
        assert_eq!(image.feature_level("metadata.version"), Some(27));
        assert_eq!(image.next_producer_id(), 2000);
        assert_eq!(image.offset, 3);
    }

    #[test]
    fn partition_change_bumps_epochs() {
        let image = sample_image();
        let id = Uuid::from_u128(42);
        let next = image.apply(
            &MetadataRecord::PartitionChange {
                topic_id: id,
                partition: 0,
                leader: Some(NO_LEADER),
                isr: None,
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
            },
            4,
        );
        let p = next.partition(id, 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (-1, 1, 1));
        // The old image is untouched.
        assert_eq!(image.partition(id, 0).unwrap().leader, 1);
    }

    #[test]
    fn remove_topic_drops_configs() {
        let image = sample_image().apply(
            &MetadataRecord::RemoveTopic {
                topic_id: Uuid::from_u128(42),
            },
            4,
        );
        assert!(image.topic("orders").is_none());
        assert!(image.topic_configs("orders").is_empty());
    }

    #[test]
    fn elr_lists_survive_snapshots_and_old_partition_records_load_without_them() {
        let image = sample_image();
        let p = &image.topic("orders").unwrap().partitions[&0];
        assert!(p.eligible_leader_replicas.is_empty() && p.last_known_elr.is_empty());
        let changed = image.apply(
            &MetadataRecord::PartitionChangeWithElr {
                topic_id: Uuid::from_u128(42),
                partition: 0,
                leader: Some(NO_LEADER),
                isr: Some(vec![]),
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
                eligible_leader_replicas: Some(vec![1]),
                last_known_elr: Some(vec![1]),
            },
            4,
        );
        let p = &changed.topic("orders").unwrap().partitions[&0];
        assert_eq!((p.leader_epoch, p.partition_epoch), (1, 1));
        assert_eq!(
            (p.eligible_leader_replicas.clone(), p.isr.clone()),
            (vec![1], vec![])
        );
        let decoded = MetadataImage::decode_snapshot(&changed.encode_snapshot()).unwrap();
        assert_eq!(decoded, changed);
    }

    #[test]
    fn snapshot_round_trips() {
        let image = sample_image();
        let decoded = MetadataImage::decode_snapshot(&image.encode_snapshot()).unwrap();
        assert_eq!(decoded, image);
        assert!(MetadataImage::decode_snapshot(b"nope").is_err());
    }

    #[test]
    fn group_configs_replay_and_leave_with_their_last_key() {
        let image = sample_image();
        let group = ConfigResource::Group("payments".into());
        let decoded = MetadataImage::decode_snapshot(&image.encode_snapshot()).unwrap();
        assert_eq!(
            decoded.configs(&group)["consumer.session.timeout.ms"],
            "50000"
        );
        let removed = image.apply(
            &MetadataRecord::Config {
                resource: group.clone(),
                name: "consumer.session.timeout.ms".into(),
                value: None,
            },
            4,
        );
        assert!(removed.configs(&group).is_empty());
        assert!(!removed
            .all_configs()
            .iter()
            .any(|(resource, _)| *resource == group));
        // A topic of the same name is another resource.
        assert!(image.topic_configs("payments").is_empty());
    }
}
