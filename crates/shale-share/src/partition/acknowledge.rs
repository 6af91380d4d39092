//! Acknowledgements (Kafka's KafkaApis.validateAcknowledgementBatches and
//! SharePartition.acknowledge): only the member holding a record may acknowledge it; ACCEPT
//! acknowledges, RELEASE offers it again (archived at its last delivery), REJECT and gaps
//! archive, RENEW restarts its lock. The acknowledgements of one partition apply together or not
//! at all.

use std::collections::BTreeMap;

use crate::state::StateBatch;

use super::error::SharePartitionError;
use super::in_flight::{BatchStates, DeliveryCountOps, InFlightState, RecordState};
use super::types::{AckBatch, AckType, StateWrite};
use super::writes::WriteKind;
use super::SharePartition;

/// Kafka's validateAcknowledgementBatches for the batches of one partition: each batch in
/// order and not starting before the last offset of the one in front of it (Kafka compares with
/// `<`, so the two may share that offset), with one type or one per offset, each a gap or a type
/// the request may carry. Pass `renew_supported` when the request may hold RENEW (ShareFetch
/// and ShareAcknowledge v2 with IsRenewAck set). Every refusal is INVALID_REQUEST.
pub fn validate_acknowledgement_batches(
    batches: &[AckBatch],
    renew_supported: bool,
) -> Result<(), SharePartitionError> {
    let max_type = if renew_supported {
        AckType::Renew.wire_id()
    } else {
        AckType::Reject.wire_id()
    };
    let mut previous_last_offset = -1;
    for batch in batches {
        let refuse = |why: &str| {
            Err(SharePartitionError::InvalidRequest(format!(
                "Acknowledgement batch {}-{} {}",
                batch.first_offset, batch.last_offset, why
            )))
        };
        if batch.first_offset > batch.last_offset {
            return refuse("has its first offset after its last offset");
        }
        if batch.first_offset < previous_last_offset {
            return refuse("overlaps or precedes the batch before it");
        }
        if batch.ack_types.is_empty() {
            return refuse("has no acknowledge type");
        }
        let offsets = batch
            .last_offset
            .checked_sub(batch.first_offset)
            .and_then(|span| span.checked_add(1));
        if batch.ack_types.len() > 1 && i64::try_from(batch.ack_types.len()).ok() != offsets {
            return refuse("has neither one acknowledge type nor one per offset");
        }
        if batch
            .ack_types
            .iter()
            .any(|ack_type| *ack_type < 0 || *ack_type > max_type)
        {
            return refuse("has an invalid acknowledge type");
        }
        previous_last_offset = batch.last_offset;
    }
    Ok(())
}

/// The effect of one acknowledgement on one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Transition(RecordState),
    Renew,
}

impl Effect {
    /// Kafka's ACK_TYPE_TO_RECORD_STATE, RENEW aside.
    fn of(ack_type: i8) -> Option<Effect> {
        if ack_type == AckType::GAP_WIRE_ID {
            return Some(Effect::Transition(RecordState::Archived));
        }
        Some(match AckType::from_wire(ack_type)? {
            AckType::Accept => Effect::Transition(RecordState::Acknowledged),
            AckType::Release => Effect::Transition(RecordState::Available),
            AckType::Reject => Effect::Transition(RecordState::Archived),
            AckType::Renew => Effect::Renew,
        })
    }
}

/// What one acknowledge call changes, gathered before it is written.
struct AckContext<'a> {
    member_id: &'a str,
    write_id: u64,
    now_ms: u64,
    changed: Vec<StateBatch>,
}

impl SharePartition {
    /// Applies the acknowledgements of `member_id`, which `validate_acknowledgement_batches`
    /// accepted. Batches wholly below the start offset are skipped. On success the changes
    /// wait for the returned write (none when only locks were renewed); on a refusal nothing
    /// changes but the locks renewed before it, as in Kafka.
    pub fn acknowledge(
        &mut self,
        member_id: &str,
        batches: &[AckBatch],
        now_ms: u64,
    ) -> Result<Option<StateWrite>, SharePartitionError> {
        let write_id = self.reserve_write_id();
        let mut context = AckContext {
            member_id,
            write_id,
            now_ms,
            changed: Vec::new(),
        };
        let outcome = self.acknowledge_all(&mut context, batches);
        if let Err(error) = outcome {
            self.roll_back(write_id, now_ms);
            return Err(error);
        }
        if context.changed.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.issue_write(
            write_id,
            WriteKind::Transition,
            context.changed,
        )))
    }

    fn acknowledge_all(
        &mut self,
        context: &mut AckContext<'_>,
        batches: &[AckBatch],
    ) -> Result<(), SharePartitionError> {
        if batches
            .iter()
            .flat_map(|batch| batch.ack_types.iter())
            .any(|ack_type| *ack_type == AckType::Renew.wire_id())
            && !self.config.renew_acknowledge_enabled
        {
            return Err(SharePartitionError::InvalidRecordState(
                "The renew acknowledge type is not enabled for the share group.".to_string(),
            ));
        }
        for batch in batches {
            let effects = ack_effects(batch)?;
            if batch.last_offset < self.start_offset {
                continue;
            }
            let keys = self.keys_for_acknowledgement(batch)?;
            for key in keys {
                self.acknowledge_in_batch(context, batch, &effects, key)?;
            }
        }
        Ok(())
    }

    /// Kafka's fetchSubMapForAcknowledgementBatch: the cached batches the acknowledgement
    /// covers, which must hold all of it.
    fn keys_for_acknowledgement(&self, batch: &AckBatch) -> Result<Vec<i64>, SharePartitionError> {
        let floor_key = match self.cached.range(..=batch.first_offset).next_back() {
            Some((key, _)) => *key,
            None => {
                let start_within = batch.first_offset < self.start_offset
                    && batch.last_offset >= self.start_offset;
                match self.cached.range(..=self.start_offset).next_back() {
                    Some((key, _)) if start_within => *key,
                    _ => {
                        return Err(SharePartitionError::InvalidRecordState(
                            "Batch record not found. The request batch offsets are not found in the cache."
                                .to_string(),
                        ))
                    }
                }
            }
        };
        let keys: Vec<i64> = self
            .cached
            .range(floor_key..=batch.last_offset)
            .map(|(key, _)| *key)
            .collect();
        let last_cached_offset = keys
            .last()
            .and_then(|key| self.cached.get(key))
            .map_or(i64::MIN, |cached| cached.last_offset);
        if last_cached_offset < batch.first_offset {
            return Err(SharePartitionError::InvalidRequest(
                "Batch record not found. The first offset in request is past acquired records."
                    .to_string(),
            ));
        }
        if batch.last_offset > last_cached_offset {
            return Err(SharePartitionError::InvalidRequest(
                "Batch record not found. The last offset in request is past acquired records."
                    .to_string(),
            ));
        }
        Ok(keys)
    }

    /// Kafka's acknowledgeBatchRecords for one cached batch.
    fn acknowledge_in_batch(
        &mut self,
        context: &mut AckContext<'_>,
        batch: &AckBatch,
        effects: &AckEffects,
        key: i64,
    ) -> Result<(), SharePartitionError> {
        let start_offset = self.start_offset;
        let Some(cached) = self.cached.get_mut(&key) else {
            return Ok(());
        };
        if cached.last_offset < start_offset {
            return Ok(());
        }
        if let Some(state) = cached.whole_state() {
            validate_member(context.member_id, state)?;
            if state.has_ongoing_transition() {
                return Err(ongoing_transition());
            }
        }
        let full_match =
            cached.first_offset >= batch.first_offset && cached.last_offset <= batch.last_offset;
        let start_within = cached.first_offset < start_offset && cached.last_offset >= start_offset;
        let per_offset_ack = matches!(effects, AckEffects::PerOffset(_));
        if !full_match || cached.is_per_offset() || per_offset_ack || start_within {
            if let Some(state) = cached.whole_state() {
                if state.state != RecordState::Acquired {
                    return Err(SharePartitionError::InvalidRecordState(
                        "The batch cannot be acknowledged. The subset batch is not in the acquired state."
                            .to_string(),
                    ));
                }
                cached.split();
            }
            self.acknowledge_offsets(context, batch, effects, key)
        } else {
            let effect = effects.at(batch.first_offset);
            self.acknowledge_whole(context, key, effect)
        }
    }

    /// Kafka's acknowledgePerOffsetBatchRecords.
    fn acknowledge_offsets(
        &mut self,
        context: &mut AckContext<'_>,
        batch: &AckBatch,
        effects: &AckEffects,
        key: i64,
    ) -> Result<(), SharePartitionError> {
        let from = batch.first_offset.max(self.start_offset);
        let max_delivery_count = self.max_delivery_count();
        let deadline_ms = self.lock_deadline_ms(context.now_ms);
        let Some(cached) = self.cached.get_mut(&key) else {
            return Ok(());
        };
        let BatchStates::PerOffset(offsets) = &mut cached.states else {
            return Ok(());
        };
        let mut outcome = Ok(());
        for (offset, state) in offsets.range_mut(from..=batch.last_offset) {
            if state.state != RecordState::Acquired {
                outcome = Err(SharePartitionError::InvalidRecordState(
                    "The offset cannot be acknowledged. The offset is not acquired.".to_string(),
                ));
                break;
            }
            if state.has_ongoing_transition() {
                outcome = Err(ongoing_transition());
                break;
            }
            if state.member_id != context.member_id {
                outcome = Err(SharePartitionError::InvalidRecordState(
                    "Member is not the owner of offset".to_string(),
                ));
                break;
            }
            match effects.at(*offset) {
                Effect::Renew => state.lock_deadline_ms = Some(deadline_ms),
                Effect::Transition(to) => {
                    if !state.start_transition(
                        context.write_id,
                        to,
                        DeliveryCountOps::NoOp,
                        max_delivery_count,
                        "",
                    ) {
                        outcome = Err(SharePartitionError::InvalidRecordState(
                            "Unable to acknowledge records for the batch".to_string(),
                        ));
                        break;
                    }
                    context.changed.push(state_batch(*offset, *offset, state));
                }
            }
        }
        outcome
    }

    /// Kafka's acknowledgeCompleteBatch.
    fn acknowledge_whole(
        &mut self,
        context: &mut AckContext<'_>,
        key: i64,
        effect: Effect,
    ) -> Result<(), SharePartitionError> {
        let max_delivery_count = self.max_delivery_count();
        let deadline_ms = self.lock_deadline_ms(context.now_ms);
        let Some(cached) = self.cached.get_mut(&key) else {
            return Ok(());
        };
        let (first, last) = (cached.first_offset, cached.last_offset);
        let BatchStates::Whole(state) = &mut cached.states else {
            return Ok(());
        };
        if state.state != RecordState::Acquired {
            return Err(SharePartitionError::InvalidRecordState(
                "The batch cannot be acknowledged. The batch is not in the acquired state."
                    .to_string(),
            ));
        }
        let to = match effect {
            Effect::Renew => {
                state.lock_deadline_ms = Some(deadline_ms);
                return Ok(());
            }
            Effect::Transition(to) => to,
        };
        if !state.start_transition(
            context.write_id,
            to,
            DeliveryCountOps::NoOp,
            max_delivery_count,
            "",
        ) {
            return Err(SharePartitionError::InvalidRecordState(
                "Unable to acknowledge records for the batch".to_string(),
            ));
        }
        context.changed.push(state_batch(first, last, state));
        Ok(())
    }
}

/// The acknowledge types of one batch: one for all its offsets, or one per offset.
enum AckEffects {
    Whole(Effect),
    PerOffset(BTreeMap<i64, Effect>),
}

impl AckEffects {
    fn at(&self, offset: i64) -> Effect {
        match self {
            AckEffects::Whole(effect) => *effect,
            AckEffects::PerOffset(effects) => effects
                .get(&offset)
                .copied()
                .unwrap_or(Effect::Transition(RecordState::Archived)),
        }
    }
}

/// Kafka's fetchAckTypeMapForBatch.
fn ack_effects(batch: &AckBatch) -> Result<AckEffects, SharePartitionError> {
    let invalid = || {
        SharePartitionError::InvalidRequest(format!(
            "Invalid acknowledge type: {:?}",
            batch.ack_types
        ))
    };
    let effects = batch
        .ack_types
        .iter()
        .map(|ack_type| Effect::of(*ack_type).ok_or_else(invalid))
        .collect::<Result<Vec<Effect>, SharePartitionError>>()?;
    match effects.as_slice() {
        [] => Err(invalid()),
        [effect] => Ok(AckEffects::Whole(*effect)),
        _ => Ok(AckEffects::PerOffset(
            effects
                .into_iter()
                .enumerate()
                .filter_map(|(index, effect)| {
                    let index = i64::try_from(index).ok()?;
                    Some((batch.first_offset.checked_add(index)?, effect))
                })
                .collect::<BTreeMap<i64, Effect>>(),
        )),
    }
}

/// Kafka's validateAcknowledgementBatchMemberId.
fn validate_member(member_id: &str, state: &InFlightState) -> Result<(), SharePartitionError> {
    if state.member_id.is_empty() {
        return Err(SharePartitionError::InvalidRecordState(
            "The batch cannot be acknowledged. The batch is not in the acquired state.".to_string(),
        ));
    }
    if state.member_id != member_id {
        return Err(SharePartitionError::InvalidRecordState(
            "Member is not the owner of batch record".to_string(),
        ));
    }
    Ok(())
}

fn ongoing_transition() -> SharePartitionError {
    SharePartitionError::InvalidRecordState(
        "The record state is invalid. The acknowledgement of delivery could not be completed."
            .to_string(),
    )
}

pub(super) fn state_batch(
    first_offset: i64,
    last_offset: i64,
    state: &InFlightState,
) -> StateBatch {
    StateBatch {
        first_offset,
        last_offset,
        delivery_state: state.state.persisted(),
        delivery_count: super::clamp_delivery_count(state.delivery_count),
    }
}
