//! A partition whose log directory cannot be created: the broker says why, keeps serving its
//! other partitions, and hosts the partition once the cause is gone, without a restart or
//! another metadata change.
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

#[test]
fn a_partition_whose_directory_cannot_be_created_is_hosted_once_the_cause_is_gone() {
    let shale = Shale::start();
    // A plain file where the partition's directory goes.
    let blocker = shale.data_dir().join("blocked-0");
    std::fs::write(&blocker, b"not a directory").unwrap();

    create_topic(&shale, "blocked");
    let deadline = Instant::now() + TIMEOUT;
    while !shale
        .log_text()
        .contains("cannot apply metadata to this partition")
    {
        assert!(
            Instant::now() < deadline,
            "no warning about blocked-0 in the log"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(shale.log_text().contains("blocked-0"));

    // The rest of the broker goes on: another topic is created and takes writes.
    create_topic(&shale, "healthy");
    assert_eq!(send_one(&shale, "healthy", TIMEOUT), Ok(0));
    // The blocked partition takes none.
    assert!(send_one(&shale, "blocked", Duration::from_millis(1500)).is_err());

    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(send_one(&shale, "blocked", TIMEOUT), Ok(0));
    assert!(blocker.is_dir(), "the partition's directory was created");
}
