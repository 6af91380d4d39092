//! Produce of transactional batches (KIP-890): the first batch of a producer's transaction on
//! a partition is verified with the transaction coordinator (transaction version 1, Produce
//! v3-v11) or added to the transaction by the leader itself (version 2, Produce v12+), before
//! it is appended.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use shale_log::ValidatedBatches;
use shale_replica::{Appended, Partition};
use shale_txn::coordinator::TopicPartition as TxnTopicPartition;
use shale_txn::TransactionVersion;

use crate::broker::Broker;
use crate::errors::{append_refusal, verification_refusal, Refusal};

/// The first Produce version of transaction version 2 clients.
const PRODUCE_TV2_MIN_VERSION: i16 = 12;

/// Appends client batches, verifying a transactional producer's first batch on the partition.
pub async fn append_client(
    broker: &Arc<Broker>,
    partition: &Partition,
    batches: ValidatedBatches<'_>,
    now_ms: i64,
    transactional_id: Option<&str>,
    produce_version: i16,
) -> Result<Appended, Refusal> {
    let append = |batches: ValidatedBatches<'_>| {
        partition
            .append_client(batches, now_ms)
            .map_err(|e| append_refusal(&e))
    };
    let header = match batches.headers().first() {
        Some(h) if h.is_transactional() && h.producer_id >= 0 => *h,
        // Not transactional.
        _ => return append(batches),
    };
    let Some(transactional_id) = transactional_id.filter(|t| !t.is_empty()) else {
        return Err(Refusal::new(
            ResponseError::TransactionalIdAuthorizationFailed.code(),
            "transactional records need the request's transactional id",
        ));
    };
    let (producer_id, producer_epoch) = (header.producer_id, header.producer_epoch);
    let gate = &broker.txn.gate;
    let in_transaction = || {
        partition.producer_entries().iter().any(|e| {
            e.producer_id == producer_id
                && e.producer_epoch == producer_epoch
                && e.current_txn_start_offset.is_some()
        })
    };
    let batches =
        match gate.append_in_open_transaction(&partition.tp, in_transaction, batches, append) {
            Ok(result) => return result,
            Err(batches) => batches,
        };
    let version = if produce_version >= PRODUCE_TV2_MIN_VERSION {
        TransactionVersion::V2
    } else {
        TransactionVersion::Legacy
    };
    // As in Kafka, only version 1 transactions may skip verification: with version 2 the
    // produce itself adds the partition to the transaction.
    if version == TransactionVersion::Legacy
        && !broker.config.transaction_partition_verification_enable
    {
        return append(batches);
    }
    let token = gate.begin_verification(&partition.tp, producer_id);
    let tp = TxnTopicPartition::new(partition.tp.topic.clone(), partition.tp.partition);
    let verified = broker
        .txn
        .verify_or_add(
            broker,
            transactional_id,
            producer_id,
            producer_epoch,
            &[tp.clone()].into_iter().collect::<BTreeSet<_>>(),
            version,
        )
        .await;
    let refusal = match verified {
        Ok(results) => results
            .into_iter()
            .find(|(p, _)| *p == tp)
            .and_then(|(_, r)| r.err())
            .map(|e| verification_refusal(&e)),
        Err(e) => Some(verification_refusal(&e)),
    };
    if let Some(refusal) = refusal {
        gate.abandon_verification(&partition.tp, producer_id, token);
        return Err(refusal);
    }
    gate.append_verified(&partition.tp, producer_id, token, || append(batches))
        .unwrap_or_else(|| {
            Err(Refusal::new(
                ResponseError::InvalidTxnState.code(),
                "the transaction ended while the batch was being verified",
            ))
        })
}
