//! A partition whose log directory cannot be created: the broker says why, keeps serving its
//! other partitions (also across a restart), and hosts the partition once the cause is gone,
//! without a restart or another metadata change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{admin, block_on, Shale};
use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

const TIMEOUT: Duration = Duration::from_secs(30);

fn create_topic(shale: &Shale, name: &str) {
    let options = AdminOptions::new().operation_timeout(Some(TIMEOUT));
    let topic = NewTopic::new(name, 1, TopicReplication::Fixed(1));
    let results = block_on(admin(shale).create_topics(&[topic], &options)).unwrap();
    for r in results {
        r.expect("topic created");
    }
}

/// Sends one record and waits for its acknowledgement: its offset, or the delivery error.
fn send_one(shale: &Shale, topic: &str, timeout: Duration) -> Result<i64, String> {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("message.timeout.ms", timeout.as_millis().to_string())
        .create()
        .expect("producer");
    let delivery = producer
        .send_result(
            FutureRecord::<(), str>::to(topic)
                .payload("one")
                .partition(0),
        )
        .map_err(|(e, _)| e.to_string())?;
    match block_on(delivery) {
        Ok(Ok(d)) => Ok(d.offset),
        Ok(Err((e, _))) => Err(e.to_string()),
        Err(canceled) => Err(canceled.to_string()),
    }
}

const WARNING: &str = "cannot apply metadata to this partition";

fn warnings(shale: &Shale) -> usize {
    shale.log_text().matches(WARNING).count()
}

/// Waits until the broker has logged `count` warnings about a partition it could not host.
fn await_warnings(shale: &Shale, count: usize) {
    let deadline = Instant::now() + TIMEOUT;
    while warnings(shale) < count {
        assert!(
            Instant::now() < deadline,
            "fewer than {count} warnings about blocked-0 in the log"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_partition_whose_directory_cannot_be_created_is_hosted_once_the_cause_is_gone() {
    let mut shale = Shale::start();
    // A plain file where the partition's directory goes.
    let blocker = shale.data_dir().join("blocked-0");
    std::fs::write(&blocker, b"not a directory").unwrap();

    create_topic(&shale, "blocked");
    await_warnings(&shale, 1);
    assert!(shale.log_text().contains("blocked-0"));

    // The rest of the broker goes on: another topic is created and takes writes.
    create_topic(&shale, "healthy");
    assert_eq!(send_one(&shale, "healthy", TIMEOUT), Ok(0));
    // The blocked partition takes none.
    assert!(send_one(&shale, "blocked", Duration::from_millis(1500)).is_err());

    // A restart with the cause still there: the broker starts, serves what it has, and keeps
    // trying the blocked partition (the start-up pass fails like the first one).
    shale.stop();
    let warnings_before = warnings(&shale);
    shale.restart();
    await_warnings(&shale, warnings_before + 1);
    assert_eq!(send_one(&shale, "healthy", TIMEOUT), Ok(1));
    assert!(send_one(&shale, "blocked", Duration::from_millis(1500)).is_err());

    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(send_one(&shale, "blocked", TIMEOUT), Ok(0));
    assert!(blocker.is_dir(), "the partition's directory was created");
}
