//! One script of share coordinator operations, run here and on Kafka 4.4's
//! ShareCoordinatorShard (on a JVM, with the same settings and clock); the expected files are
//! Kafka's answers and records, printed one per line. Kafka emits cold snapshots and cleanup
//! tombstones in hash order, so those blocks are compared sorted.

use std::collections::HashMap;

use uuid::Uuid;

use super::*;
use crate::state::{DeliveryState, SharePartitionKey, StateBatch};

const TOPIC: Uuid = Uuid::from_u128(0x1111);
const START_MS: i64 = 1_000_000;

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".to_string(),
        topic_id: TOPIC,
        partition,
    }
}

fn code(error: &ShareStateError) -> i16 {
    match error {
        ShareStateError::InvalidRequest(_) => 42,
        ShareStateError::FencedLeaderEpoch => 74,
        ShareStateError::FencedStateEpoch => 124,
        ShareStateError::UnknownTopicOrPartition => 3,
        ShareStateError::CoordinatorNotAvailable => 15,
        ShareStateError::UnknownServerError(_) => -1,
    }
}

fn answer_line<T>(answer: &Result<T, ShareStateError>, ok: impl Fn(&T) -> String) -> String {
    match answer {
        Ok(value) => format!("  {}", ok(value)),
        Err(error) => format!("  ERR {} {}", code(error), error.message()),
    }
}

fn batches_text(batches: &[StateBatch]) -> String {
    let rows: Vec<String> = batches
        .iter()
        .map(|b| {
            format!(
                "{},{},{},{}",
                b.first_offset,
                b.last_offset,
                b.delivery_state.id(),
                b.delivery_count
            )
        })
        .collect();
    format!("[{}]", rows.join(";"))
}

fn record_line(record: &ShareRecord) -> String {
    match record {
        ShareRecord::Snapshot { key, value } => format!(
            "  S {} sne={} se={} le={} so={} dcc={} ct={} wt={} {}",
            key.partition,
            value.snapshot_epoch,
            value.state_epoch,
            value.leader_epoch,
            value.start_offset,
            value.delivery_complete_count,
            value.create_timestamp_ms,
            value.write_timestamp_ms,
            batches_text(&value.state_batches)
        ),
        ShareRecord::Update { key, value } => format!(
            "  U {} sne={} le={} so={} dcc={} {}",
            key.partition,
            value.snapshot_epoch,
            value.leader_epoch,
            value.start_offset,
            value.delivery_complete_count,
            batches_text(&value.state_batches)
        ),
        ShareRecord::Tombstone { key, .. } => format!("  T {}", key.partition),
    }
}

fn parse_batches(text: Option<&str>) -> Vec<StateBatch> {
    let Some(text) = text else {
        return Vec::new();
    };
    text.split(';')
        .map(|row| {
            let fields: Vec<i64> = row
                .split(',')
                .map(|f| f.parse().expect("a number"))
                .collect();
            StateBatch {
                first_offset: fields[0],
                last_offset: fields[1],
                delivery_state: DeliveryState::from_id(fields[2] as i8).expect("a state"),
                delivery_count: fields[3] as i16,
            }
        })
        .collect()
}

struct Run {
    shard: ShareCoordinatorShard,
    next_offset: i64,
    now_ms: i64,
    out: Vec<String>,
}

impl Run {
    fn apply(&mut self, records: &[ShareRecord], sorted: bool) {
        let mut lines: Vec<String> = records.iter().map(record_line).collect();
        if sorted {
            lines.sort();
        }
        self.out.extend(lines);
        for record in records {
            self.shard.replay(self.next_offset, record);
            self.next_offset += 1;
        }
    }

    fn step(&mut self, line: &str) {
        self.out.push(line.to_string());
        let words: Vec<&str> = line.split(' ').collect();
        let int = |i: usize| -> i64 { words[i].parse().expect("a number") };
        let now_ms = self.now_ms;
        match words[0] {
            "init" => {
                let outcome =
                    self.shard
                        .initialize_state(&key(int(1) as i32), int(2) as i32, int(3), now_ms);
                self.out
                    .push(answer_line(&outcome.answer, |_| "OK".to_string()));
                self.apply(&outcome.records, false);
            }
            "read" => {
                let outcome = self
                    .shard
                    .read_state(&key(int(1) as i32), int(2) as i32, now_ms);
                self.out.push(answer_line(&outcome.answer, |state| {
                    format!(
                        "OK se={} so={} {}",
                        state.state_epoch,
                        state.start_offset,
                        batches_text(&state.batches)
                    )
                }));
                self.apply(&outcome.records, false);
            }
            "write" => {
                let request = WriteStateRequest {
                    group_id: "g".to_string(),
                    topic_id: TOPIC,
                    partition: int(1) as i32,
                    state_epoch: int(2) as i32,
                    leader_epoch: int(3) as i32,
                    start_offset: int(4),
                    delivery_complete_count: int(5) as i32,
                    batches: parse_batches(words.get(6).copied()),
                };
                let outcome = self.shard.write_state(&request, now_ms);
                self.out
                    .push(answer_line(&outcome.answer, |_| "OK".to_string()));
                self.apply(&outcome.records, false);
            }
            "delete" => {
                let outcome = self.shard.delete_state(&key(int(1) as i32));
                self.out
                    .push(answer_line(&outcome.answer, |_| "OK".to_string()));
                self.apply(&outcome.records, false);
            }
            "summary" => {
                let answer = self.shard.read_state_summary(&key(int(1) as i32));
                self.out.push(answer_line(&answer, |s| {
                    format!(
                        "OK se={} le={} so={} dcc={}",
                        s.state_epoch, s.leader_epoch, s.start_offset, s.delivery_complete_count
                    )
                }));
            }
            "tick" => self.now_ms += int(1),
            "cold" => {
                let records = self.shard.snapshot_cold_partitions(now_ms);
                self.apply(&records, true);
            }
            "cleanup" => {
                let records = self.shard.cleanup_deleted_topics(&[TOPIC]);
                self.apply(&records, true);
            }
            "redundant" => {
                let offset = self.shard.last_redundant_offset();
                self.out.push(format!(
                    "  {}",
                    offset.map_or("none".to_string(), |o| o.to_string())
                ));
            }
            other => panic!("unknown step {other}"),
        }
    }
}

fn run_script(updates_per_snapshot: usize, expected: &str) {
    let settings = ShareCoordinatorSettings {
        snapshot_update_records_per_snapshot: updates_per_snapshot,
        cold_partition_snapshot_interval_ms: 1000,
        ..ShareCoordinatorSettings::default()
    };
    let mut shard = ShareCoordinatorShard::new(settings);
    shard.set_topics(HashMap::from([(TOPIC, 3)]));
    let mut run = Run {
        shard,
        next_offset: 0,
        now_ms: START_MS,
        out: Vec::new(),
    };
    for line in include_str!("shard_kafka_script.txt").lines() {
        run.step(line);
    }
    let expected: Vec<&str> = expected.lines().collect();
    for (i, (got, want)) in run.out.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "line {}", i + 1);
    }
    assert_eq!(run.out.len(), expected.len());
}

#[test]
fn kafkas_answers_with_a_snapshot_on_every_write() {
    run_script(0, include_str!("shard_kafka_expected_0.txt"));
}

#[test]
fn kafkas_answers_with_a_snapshot_every_two_updates() {
    run_script(2, include_str!("shard_kafka_expected_2.txt"));
}

#[test]
fn kafkas_answers_with_the_default_settings() {
    run_script(500, include_str!("shard_kafka_expected_500.txt"));
}
