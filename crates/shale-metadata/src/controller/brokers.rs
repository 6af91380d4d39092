//! Broker lifecycle: registration, heartbeats, fencing after the session timeout or when the
//! broker's process is known to be gone, controlled shutdown, unregistration, and producer-id
//! block allocation.

use uuid::Uuid;

use super::partitions::{ChangeSpec, Election};
use super::{Batch, Controller, HeartbeatReply, ProducerIdBlock};
use crate::error::MetadataError;
use crate::image::{MetadataImage, PartitionImage, NO_LEADER};
use crate::records::{Endpoint, FeatureRange, MetadataRecord};

pub(crate) struct Registration {
    pub broker_id: i32,
    pub incarnation_id: Uuid,
    pub cluster_id: String,
    pub listeners: Vec<Endpoint>,
    pub rack: Option<String>,
    pub features: Vec<FeatureRange>,
    pub unclean_shutdown: bool,
}

pub(crate) struct Heartbeat {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub want_fence: bool,
    pub want_shutdown: bool,
    pub current_metadata_offset: i64,
}

fn partitions_with_isr_member(image: &MetadataImage, broker: i32) -> Vec<(Uuid, i32)> {
    image
        .topics()
        .flat_map(|t| {
            t.partitions
                .values()
                .filter(move |p| p.isr.contains(&broker) || p.leader == broker)
                .map(move |p| (t.topic_id, p.partition))
        })
        .collect()
}

/// Partitions whose ISR, leadership, ELR or last known leader names `broker`.
fn partitions_naming(image: &MetadataImage, broker: i32) -> Vec<(Uuid, i32)> {
    image
        .topics()
        .flat_map(|t| {
            t.partitions
                .values()
                .filter(move |p| {
                    p.isr.contains(&broker)
                        || p.leader == broker
                        || p.eligible_leader_replicas.contains(&broker)
                        || p.last_known_elr.contains(&broker)
                })
                .map(move |p| (t.topic_id, p.partition))
        })
        .collect()
}

fn partitions_led_by(image: &MetadataImage, broker: i32) -> usize {
    image
        .topics()
        .map(|t| t.partitions.values().filter(|p| p.leader == broker).count())
        .sum()
}

fn stale_epoch(broker_id: i32, expected: i64, got: i64) -> MetadataError {
    MetadataError::StaleBrokerEpoch(format!(
        "Expected broker epoch {expected}, but got broker epoch {got} for broker {broker_id}"
    ))
}

fn not_registered(broker_id: i32) -> MetadataError {
    MetadataError::BrokerIdNotRegistered(format!("Broker {broker_id} is not registered."))
}

/// The partition's ISR with `broker` taken out.
fn isr_without(partition: &PartitionImage, broker: i32) -> Vec<i32> {
    partition
        .isr
        .iter()
        .copied()
        .filter(|r| *r != broker)
        .collect()
}

impl Controller {
    /// Takes `broker` out of every ISR it is in and moves leadership it held to another
    /// eligible ISR member. With KIP-966 on, the last member leaves too (the ISR becomes
    /// empty and it joins the ELR); without it Kafka keeps the last member. The broker must
    /// already be inactive in `batch.image`.
    fn remove_from_partitions(&self, batch: &mut Batch, broker: i32) {
        let elr = batch.image.elr_enabled();
        for (topic_id, partition) in partitions_with_isr_member(&batch.image, broker) {
            let Some(current) = batch.image.partition(topic_id, partition) else {
                continue;
            };
            let shrunk = isr_without(current, broker);
            let isr = if shrunk.is_empty() && !elr {
                current.isr.clone()
            } else {
                shrunk
            };
            self.change_partition(
                batch,
                topic_id,
                partition,
                ChangeSpec {
                    isr: Some(isr),
                    ..Default::default()
                },
                Election::Normal,
            );
        }
    }

    /// KIP-966: a broker back from an unclean shutdown may have lost an unflushed tail of
    /// acknowledged records, so it leaves every ISR and ELR it is still in, even as the last
    /// member, and stops being a partition's last known leader (the partition then stays
    /// leaderless until an ISR or ELR member returns, or an unclean election picks a
    /// replica). Electing it would make the other replicas truncate to its shorter log. A
    /// partition whose only replica it is keeps it: no other copy exists.
    fn remove_after_unclean_shutdown(&self, batch: &mut Batch, broker: i32) {
        for (topic_id, partition) in partitions_naming(&batch.image, broker) {
            let Some(current) = batch.image.partition(topic_id, partition) else {
                continue;
            };
            if current.replicas.iter().all(|r| *r == broker) {
                continue;
            }
            let isr = isr_without(current, broker);
            self.change_partition_with(
                batch,
                topic_id,
                partition,
                ChangeSpec {
                    isr: Some(isr),
                    ..Default::default()
                },
                Election::Normal,
                Some(broker),
            );
        }
    }

    /// After `broker` becomes active: leaderless partitions it can lead get a leader.
    fn elect_for_unfenced(&self, batch: &mut Batch, broker: i32) {
        let leaderless: Vec<(Uuid, i32)> = batch
            .image
            .topics()
            .flat_map(|t| {
                t.partitions
                    .values()
                    .filter(|p| p.leader == NO_LEADER && p.replicas.contains(&broker))
                    .map(move |p| (t.topic_id, p.partition))
            })
            .collect();
        for (topic_id, partition) in leaderless {
            self.change_partition(
                batch,
                topic_id,
                partition,
                ChangeSpec::default(),
                Election::Normal,
            );
        }
    }

    fn fence(&self, batch: &mut Batch, broker_id: i32, broker_epoch: i64) {
        batch.push(MetadataRecord::BrokerRegistrationChange {
            broker_id,
            broker_epoch,
            fenced: Some(true),
            in_controlled_shutdown: Some(false),
        });
        self.remove_from_partitions(batch, broker_id);
    }

    pub(crate) fn register_broker(
        &mut self,
        batch: &mut Batch,
        registration: Registration,
        now_ms: i64,
    ) -> Result<i64, MetadataError> {
        let image = &batch.image;
        if !image.cluster_id.is_empty() && registration.cluster_id != image.cluster_id {
            return Err(MetadataError::InconsistentClusterId(format!(
                "Expected cluster ID {}, but got cluster ID {}",
                image.cluster_id, registration.cluster_id
            )));
        }
        if registration.broker_id < 0 {
            return Err(MetadataError::InvalidRequest(format!(
                "Invalid broker id {}",
                registration.broker_id
            )));
        }
        if let Some(existing) = image.broker(registration.broker_id) {
            if existing.incarnation_id == registration.incarnation_id {
                // A retried registration: same answer, nothing new to write.
                self.last_contact_ms.insert(registration.broker_id, now_ms);
                self.tracked.insert(registration.broker_id);
                return Ok(existing.broker_epoch);
            }
            let session_live = self
                .last_contact_ms
                .get(&registration.broker_id)
                .is_some_and(|last| now_ms - last <= self.config.broker_session_timeout_ms);
            if session_live && !existing.fenced {
                return Err(MetadataError::DuplicateBrokerRegistration(format!(
                    "Another broker is registered with that broker id {}.",
                    registration.broker_id
                )));
            }
        }
        let broker_epoch = image.offset + 1;
        let had_registration = image.broker(registration.broker_id).is_some();
        batch.push(MetadataRecord::RegisterBroker {
            broker_id: registration.broker_id,
            incarnation_id: registration.incarnation_id,
            broker_epoch,
            listeners: registration.listeners,
            rack: registration.rack,
            features: registration.features,
            fenced: true,
            in_controlled_shutdown: false,
        });
        if had_registration {
            // The previous incarnation is gone: it may not keep leading or count in ISRs.
            self.remove_from_partitions(batch, registration.broker_id);
        }
        if registration.unclean_shutdown {
            self.remove_after_unclean_shutdown(batch, registration.broker_id);
        }
        // With the first registration, before any broker serves: nobody sees the cluster
        // without it.
        self.ensure_elr_min_isr(batch);
        self.last_contact_ms.insert(registration.broker_id, now_ms);
        self.tracked.insert(registration.broker_id);
        Ok(broker_epoch)
    }

    pub(crate) fn heartbeat(
        &mut self,
        batch: &mut Batch,
        hb: Heartbeat,
        now_ms: i64,
    ) -> Result<HeartbeatReply, MetadataError> {
        let broker = batch
            .image
            .broker(hb.broker_id)
            .ok_or_else(|| not_registered(hb.broker_id))?
            .clone();
        if broker.broker_epoch != hb.broker_epoch {
            return Err(stale_epoch(
                hb.broker_id,
                broker.broker_epoch,
                hb.broker_epoch,
            ));
        }
        self.last_contact_ms.insert(hb.broker_id, now_ms);
        self.tracked.insert(hb.broker_id);
        // The broker epoch is the offset of its registration: caught up once it has seen it.
        let is_caught_up = hb.current_metadata_offset >= broker.broker_epoch;
        if hb.want_shutdown {
            if !broker.fenced && !broker.in_controlled_shutdown {
                batch.push(MetadataRecord::BrokerRegistrationChange {
                    broker_id: hb.broker_id,
                    broker_epoch: broker.broker_epoch,
                    fenced: None,
                    in_controlled_shutdown: Some(true),
                });
                self.remove_from_partitions(batch, hb.broker_id);
            }
            let still_fenced = batch.image.broker(hb.broker_id).is_some_and(|b| b.fenced);
            let done = still_fenced || partitions_led_by(&batch.image, hb.broker_id) == 0;
            if done && !still_fenced {
                self.fence(batch, hb.broker_id, broker.broker_epoch);
            }
            return Ok(HeartbeatReply {
                is_caught_up,
                is_fenced: batch.image.broker(hb.broker_id).is_some_and(|b| b.fenced),
                should_shut_down: done,
            });
        }
        if hb.want_fence {
            if !broker.fenced {
                self.fence(batch, hb.broker_id, broker.broker_epoch);
            }
        } else if broker.fenced && is_caught_up && !broker.in_controlled_shutdown {
            batch.push(MetadataRecord::UnfenceBroker {
                broker_id: hb.broker_id,
                broker_epoch: broker.broker_epoch,
            });
            self.elect_for_unfenced(batch, hb.broker_id);
        }
        Ok(HeartbeatReply {
            is_caught_up,
            is_fenced: batch.image.broker(hb.broker_id).is_some_and(|b| b.fenced),
            should_shut_down: false,
        })
    }

    /// Fences every unfenced broker whose last heartbeat is older than the session timeout.
    /// Brokers first seen by this controller (after a restart or failover) get a full session.
    pub(crate) fn tick(&mut self, batch: &mut Batch, now_ms: i64) -> Vec<i32> {
        let live: Vec<(i32, i64, bool)> = batch
            .image
            .brokers()
            .map(|b| (b.broker_id, b.broker_epoch, b.fenced))
            .collect();
        self.last_contact_ms
            .retain(|id, _| live.iter().any(|(b, _, _)| b == id));
        self.tracked
            .retain(|id| live.iter().any(|(b, _, _)| b == id));
        let mut fenced = Vec::new();
        for (broker_id, broker_epoch, is_fenced) in live {
            if self.tracked.insert(broker_id) {
                self.last_contact_ms.insert(broker_id, now_ms);
            }
            if is_fenced {
                continue;
            }
            let last = self
                .last_contact_ms
                .get(&broker_id)
                .copied()
                .unwrap_or(now_ms);
            if now_ms - last > self.config.broker_session_timeout_ms {
                self.fence(batch, broker_id, broker_epoch);
                fenced.push(broker_id);
            }
        }
        self.maybe_rebalance_leaders(batch, now_ms);
        fenced
    }

    /// Fences the registration `broker_epoch` of `broker_id` because its process is known to be
    /// gone (its session link closed without a goodbye, or nothing listens on its port any
    /// more), without waiting for the session timeout. Ignored (returns false) when that
    /// registration was replaced by a newer incarnation, was unregistered or is fenced already:
    /// the evidence is about the old process only. A live broker fenced by mistake unfences
    /// itself with its next heartbeat, as after a session timeout.
    pub(crate) fn fence_departed(
        &mut self,
        batch: &mut Batch,
        broker_id: i32,
        broker_epoch: i64,
    ) -> bool {
        let Some(broker) = batch.image.broker(broker_id) else {
            return false;
        };
        if broker.broker_epoch != broker_epoch || broker.fenced {
            return false;
        }
        self.fence(batch, broker_id, broker_epoch);
        true
    }

    /// Kafka's auto leader rebalance: every `leader.imbalance.check.interval`, partitions
    /// whose preferred (first) replica is an eligible ISR member get it back as leader.
    fn maybe_rebalance_leaders(&mut self, batch: &mut Batch, now_ms: i64) {
        if !self.config.auto_leader_rebalance_enable {
            return;
        }
        let due = *self
            .next_rebalance_ms
            .get_or_insert(now_ms + self.config.leader_imbalance_check_interval_ms);
        if now_ms < due {
            return;
        }
        self.next_rebalance_ms = Some(now_ms + self.config.leader_imbalance_check_interval_ms);
        let imbalanced: Vec<(Uuid, i32)> = batch
            .image
            .topics()
            .flat_map(|t| {
                t.partitions
                    .values()
                    .filter(|p| p.replicas.first().is_some_and(|r| *r != p.leader))
                    .map(move |p| (t.topic_id, p.partition))
            })
            .collect();
        for (topic_id, partition) in imbalanced {
            self.change_partition(
                batch,
                topic_id,
                partition,
                ChangeSpec::default(),
                Election::Preferred,
            );
        }
    }

    pub(crate) fn unregister_broker(
        &mut self,
        batch: &mut Batch,
        broker_id: i32,
    ) -> Result<(), MetadataError> {
        let broker = batch
            .image
            .broker(broker_id)
            .ok_or_else(|| not_registered(broker_id))?
            .clone();
        if !broker.fenced {
            self.fence(batch, broker_id, broker.broker_epoch);
        }
        batch.push(MetadataRecord::UnregisterBroker {
            broker_id,
            broker_epoch: broker.broker_epoch,
        });
        self.last_contact_ms.remove(&broker_id);
        self.tracked.remove(&broker_id);
        Ok(())
    }

    pub(crate) fn allocate_producer_ids(
        &mut self,
        batch: &mut Batch,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<ProducerIdBlock, MetadataError> {
        let broker = batch
            .image
            .broker(broker_id)
            .ok_or_else(|| stale_epoch(broker_id, -1, broker_epoch))?;
        if broker.broker_epoch != broker_epoch {
            return Err(stale_epoch(broker_id, broker.broker_epoch, broker_epoch));
        }
        let first = batch.image.next_producer_id();
        let len = self.config.producer_id_block_size;
        let next = first
            .checked_add(len)
            .ok_or_else(|| MetadataError::InvalidRequest("Exhausted all producerIds.".into()))?;
        batch.push(MetadataRecord::ProducerIds {
            broker_id,
            broker_epoch,
            next_producer_id: next,
        });
        Ok(ProducerIdBlock {
            first_producer_id: first,
            len,
        })
    }
}
