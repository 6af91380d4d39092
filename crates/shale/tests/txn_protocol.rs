//! Transactions in raw protocol frames (issue #7), for what no client library does on demand:
//! KIP-890's refusals of late and unadded transactional writes, transaction version 2's epoch
//! bump, WriteTxnMarkers from an admin, DescribeTransactions / ListTransactions filters, and the
//! `transaction.version` feature in ApiVersions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_raw;

use common::Shale;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, DescribeProducersRequest, ListTransactionsRequest, ProducerId,
    RequestKind, ResponseKind, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use txn_raw::*;

const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

#[test]
fn late_and_unadded_transactional_writes_are_refused() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("kip890", "raw-kip890");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);

    // KIP-890 part 1: a transactional batch for a partition not added to the transaction
    // is refused by the leader, which asked the coordinator; nothing is left hanging.
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "unadded")),
        INVALID_TXN_STATE
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 0));

    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "committed")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // Transaction version 2: EndTxn bumps the epoch and the markers carry the new one.
    let (code, epoch) = end_txn(&mut conn, txn, id, true);
    assert_eq!((code, epoch), (0, id.1 + 1));
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
    // A delayed batch of the committed transaction, at the old epoch, is fenced.
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 1, "late")),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));

    // Produce v12 adds the partition to the next transaction implicitly.
    let next = (id.0, epoch);
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(next, 0, "aborted")),
        0
    );
    let described = describe_txn(&mut conn, txn);
    assert_eq!(described.error_code, 0);
    assert_eq!(described.transaction_state.as_str(), "Ongoing");
    assert_eq!(described.producer_epoch, next.1);
    assert_eq!(described.topics[0].topic.0.as_str(), topic);
    assert_eq!(described.topics[0].partitions, vec![0]);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 3));

    let (code, epoch) = end_txn(&mut conn, txn, next, false);
    assert_eq!((code, epoch), (0, next.1 + 1));
    // A retry of that EndTxn from before the bump is answered with the bumped epoch.
    assert_eq!(end_txn(&mut conn, txn, next, false), (0, next.1 + 1));
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(next, 1, "late")),
        INVALID_PRODUCER_EPOCH
    );
    // Two markers, no transaction left open: the last stable offset is the log end.
    assert_eq!(stable_and_end(&mut conn, topic), (4, 4));
}

#[test]
fn verification_can_be_turned_off_for_version_1_and_idle_ids_expire() {
    let shale = Shale::start_with(&[
        "transaction.state.log.num.partitions=2",
        "transaction.partition.verification.enable=false",
        "transactional.id.expiration.ms=300",
        "transaction.remove.expired.transaction.cleanup.interval.ms=100",
    ]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("unverified", "raw-unverified");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);

    // Without verification a version 1 batch for an unadded partition is appended, as Kafka
    // does with `transaction.partition.verification.enable=false`: the transaction it opens
    // holds the last stable offset back.
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "unverified")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));
    // Version 2 produces still add their partition, so they stay safe.
    let (other_topic, other) = ("verified", "raw-verified");
    create_topic(&mut conn, other_topic);
    let other_id = init_producer_id(&mut conn, other);
    assert_eq!(
        produce(
            &mut conn,
            12,
            other,
            other_topic,
            txn_batch(other_id, 0, "added")
        ),
        0
    );
    assert_eq!(
        describe_txn(&mut conn, other).transaction_state.as_str(),
        "Ongoing"
    );
    assert_eq!(end_txn(&mut conn, other, other_id, true).0, 0);

    // An id idle for longer than `transactional.id.expiration.ms` is removed by the sweep.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while describe_txn(&mut conn, other).error_code != TRANSACTIONAL_ID_NOT_FOUND {
        assert!(std::time::Instant::now() < deadline, "idle id not expired");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_version_2_producer_recovers_from_a_timeout_abort_and_its_late_writes_are_fenced() {
    let shale = Shale::start_with(&[
        "transaction.state.log.num.partitions=2",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=100",
    ]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("tv2-timeout", "raw-tv2-timeout");
    create_topic(&mut conn, topic);
    let id = init_producer_id_with_timeout(&mut conn, txn, 1_000);
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(id, 0, "abandoned")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // The coordinator aborts the transaction after its timeout, under a bumped epoch.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while describe_txn(&mut conn, txn).transaction_state.as_str() != "CompleteAbort" {
        assert!(std::time::Instant::now() < deadline, "not aborted");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(describe_txn(&mut conn, txn).producer_epoch, id.1 + 1);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
    // A late batch of the aborted transaction cannot reopen it.
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(id, 1, "late")),
        INVALID_PRODUCER_EPOCH
    );

    // The producer's abort, one epoch behind, is taken as a retry and tells it the new epoch.
    let (code, epoch) = end_txn(&mut conn, txn, id, false);
    assert_eq!((code, epoch), (0, id.1 + 1));
    let next = (id.0, epoch);
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(next, 0, "committed")),
        0
    );
    assert_eq!(end_txn(&mut conn, txn, next, true), (0, next.1 + 1));
    assert_eq!(stable_and_end(&mut conn, topic), (4, 4));
}

#[test]
fn admin_apis_describe_list_and_abort_transactions() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("admin-txn", "raw-admin-1");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);
    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "open")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // DescribeProducers shows the open transaction's first offset.
    let req = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(name(topic))
        .with_partition_indexes(vec![0])]);
    let ResponseKind::DescribeProducers(producers) = conn.call(
        ApiKey::DescribeProducers,
        0,
        RequestKind::DescribeProducers(req),
    ) else {
        panic!("not a DescribeProducers response")
    };
    let active = &producers.topics[0].partitions[0].active_producers;
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].producer_id.0, id.0);
    assert_eq!(active[0].current_txn_start_offset, 0);

    let list = |conn: &mut Conn, version: i16, req: ListTransactionsRequest| match conn.call(
        ApiKey::ListTransactions,
        version,
        RequestKind::ListTransactions(req),
    ) {
        ResponseKind::ListTransactions(r) => r,
        other => panic!("{other:?}"),
    };
    let ongoing = || vec![StrBytes::from_static_str("Ongoing")];
    let r = list(
        &mut conn,
        2,
        ListTransactionsRequest::default()
            .with_state_filters(ongoing())
            .with_producer_id_filters(vec![ProducerId(id.0)])
            .with_duration_filter(-1)
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("raw-admin-[0-9]+"))),
    );
    assert_eq!(r.error_code, 0);
    assert_eq!(r.transaction_states.len(), 1);
    assert_eq!(r.transaction_states[0].transactional_id.0.as_str(), txn);
    assert_eq!(
        r.transaction_states[0].transaction_state.as_str(),
        "Ongoing"
    );
    // Filters that exclude it: another producer id, a state, a pattern, a long duration.
    for req in [
        ListTransactionsRequest::default().with_producer_id_filters(vec![ProducerId(id.0 + 1)]),
        ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("CompleteCommit")]),
        ListTransactionsRequest::default()
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("raw-admin"))),
        ListTransactionsRequest::default().with_duration_filter(3_600_000),
    ] {
        let r = list(&mut conn, 2, req);
        assert_eq!((r.error_code, r.transaction_states.len()), (0, 0));
    }
    let r = list(
        &mut conn,
        1,
        ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("Bogus")])
            .with_duration_filter(0),
    );
    assert_eq!(
        r.unknown_state_filters,
        vec![StrBytes::from_static_str("Bogus")]
    );
    assert_eq!(r.transaction_states.len(), 1);
    let r = list(
        &mut conn,
        2,
        ListTransactionsRequest::default()
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("("))),
    );
    assert_eq!(r.error_code, 128);
    assert_eq!(describe_txn(&mut conn, "no-such-id").error_code, 105);

    // What `kafka-transactions.sh abort` does: WriteTxnMarkers to the partition leader with
    // the producer's epoch. The partition's transaction ends; the coordinator is not told.
    let marker = |topic: &str| {
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(id.0))
            .with_producer_epoch(id.1)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![0])])
    };
    let req = WriteTxnMarkersRequest::default().with_markers(vec![marker(topic), marker("gone")]);
    let ResponseKind::WriteTxnMarkers(written) = conn.call(
        ApiKey::WriteTxnMarkers,
        1,
        RequestKind::WriteTxnMarkers(req),
    ) else {
        panic!("not a WriteTxnMarkers response")
    };
    assert_eq!(written.markers[0].topics[0].partitions[0].error_code, 0);
    assert_eq!(written.markers[1].topics[0].partitions[0].error_code, 3);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
}

#[test]
fn api_versions_finalizes_transaction_version_2() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    let request = || {
        ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("txn-test"))
            .with_client_software_version(StrBytes::from_static_str("1.0"))
    };
    let ResponseKind::ApiVersions(v4) =
        conn.call(ApiKey::ApiVersions, 4, RequestKind::ApiVersions(request()))
    else {
        panic!("not an ApiVersions response")
    };
    let supported = v4
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .expect("transaction.version supported");
    assert_eq!((supported.min_version, supported.max_version), (0, 2));
    let finalized = v4
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .expect("transaction.version finalized");
    assert_eq!(
        (finalized.min_version_level, finalized.max_version_level),
        (2, 2)
    );
    assert!(v4.finalized_features_epoch >= 0);
    let end_txn = v4
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::EndTxn as i16)
        .unwrap();
    assert_eq!(end_txn.max_version, 5);

    // Before v4 a feature with minimum 0 is left out of the supported list (KAFKA-17492).
    let ResponseKind::ApiVersions(v3) =
        conn.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(request()))
    else {
        panic!("not an ApiVersions response")
    };
    assert!(v3.supported_features.is_empty());
    // Finalised: transaction.version, KIP-966's eligible.leader.replicas.version and KIP-932's
    // share.version.
    assert_eq!(v3.finalized_features.len(), 3);
}
