//! The transaction coordinator killed between logging PrepareCommit and writing the markers
//! (issue #7): after the restart it replays `__transaction_state` and completes the commit,
//! writing each marker exactly once. One test per binary: it arms the broker's crash point
//! through the environment the broker process inherits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod txn_raw;

use std::time::Instant;

use common::Shale;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use txn_raw::*;

/// The broker's fault-injection variable: it aborts right after this id's PrepareCommit.
const CRASH_ENV: &str = "SHALE_TEST_CRASH_AFTER_PREPARE_COMMIT";

#[test]
fn a_commit_interrupted_before_its_markers_completes_after_restart() {
    let (topic, txn) = ("crash-topic", "crash-txn");
    // Safe: the only test of this binary, set before any broker process is spawned.
    std::env::set_var(CRASH_ENV, txn);
    let mut shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);
    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    for sequence in 0..3 {
        let batch = txn_batch(id, sequence, &format!("record-{sequence}"));
        assert_eq!(produce(&mut conn, 11, txn, topic, batch), 0);
    }
    assert_eq!(stable_and_end(&mut conn, topic), (0, 3));

    // EndTxn(commit) v4: PrepareCommit is logged, then the broker dies before any marker.
    conn.send(ApiKey::EndTxn, 4, end_txn_request(txn, id, true));
    assert!(conn.is_closed(), "the broker must die after PrepareCommit");
    // The connection can close before the reader thread has taken the dying process's last
    // lines from its pipe: wait for them, bounded.
    shale_testkit::wait_for(
        "the broker's log to show the crash point",
        std::time::Duration::from_secs(10),
        || shale.log_text().contains(CRASH_ENV).then_some(()),
    );

    shale.restart_after_kill();
    let mut conn = Conn::open(&shale);
    // Loading the coordinator resends the markers: the records become stable once.
    let deadline = Instant::now() + TIMEOUT;
    while stable_and_end(&mut conn, topic) != (4, 4) {
        assert!(
            Instant::now() < deadline,
            "the commit was not completed: {:?}",
            stable_and_end(&mut conn, topic)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let described = describe_txn(&mut conn, txn);
        if described.transaction_state.as_str() == "CompleteCommit" {
            assert_eq!(described.producer_epoch, id.1);
            break;
        }
        assert!(Instant::now() < deadline, "still {described:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Exactly one COMMIT marker: three records and one control batch.
    assert_eq!(stable_and_end(&mut conn, topic), (4, 4));
    // The producer's retried EndTxn is answered as a completed commit.
    match conn.call(ApiKey::EndTxn, 4, end_txn_request(txn, id, true)) {
        ResponseKind::EndTxn(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
}
