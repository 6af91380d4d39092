//! The per-produce cost of producer state: check + record for one batch, and snapshots.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use shale_txn::{ProducerBatch, ProducerStateManager, SequenceCheck};

const EXPIRATION_MS: i64 = 86_400_000;
const RECORDS_PER_BATCH: i32 = 10;

fn batch(producer_id: i64, base_sequence: i32, first_offset: i64) -> ProducerBatch {
    ProducerBatch {
        producer_id,
        producer_epoch: 0,
        base_sequence,
        last_sequence: base_sequence + RECORDS_PER_BATCH - 1,
        first_offset,
        last_offset: first_offset + i64::from(RECORDS_PER_BATCH) - 1,
        max_timestamp_ms: 1_000,
        is_transactional: false,
        is_control: false,
        record_count: RECORDS_PER_BATCH,
    }
}

/// Appends `batches` batches spread round-robin over `producers` producers.
fn append_round_robin(state: &mut ProducerStateManager, producers: i64, batches: i64) {
    let mut offset = state.map_end_offset();
    let mut sequences = vec![0i32; producers as usize];
    for i in 0..batches {
        let producer = i % producers;
        let seq = &mut sequences[producer as usize];
        let b = batch(producer, *seq, offset);
        let outcome = state.check(&b, 1_000);
        assert!(matches!(outcome, Ok(SequenceCheck::Append)));
        state.record(&b, 1_000, -1);
        *seq += RECORDS_PER_BATCH;
        offset += i64::from(RECORDS_PER_BATCH);
    }
}

fn check_and_record(c: &mut Criterion) {
    let mut group = c.benchmark_group("check_and_record");
    const BATCHES: i64 = 10_000;
    group.throughput(Throughput::Elements(BATCHES as u64));
    for producers in [1i64, 1_000] {
        group.bench_function(format!("{producers}_producers"), |b| {
            b.iter_batched(
                || ProducerStateManager::new(EXPIRATION_MS),
                |mut state| {
                    append_round_robin(&mut state, producers, BATCHES);
                    black_box(state)
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();

    let mut state = ProducerStateManager::new(EXPIRATION_MS);
    append_round_robin(&mut state, 100, 1_000);
    c.bench_function("duplicate_check", |b| {
        let retry = batch(7, 9 * RECORDS_PER_BATCH, 0);
        b.iter(|| black_box(state.check(black_box(&retry), 1_000)))
    });
}

fn snapshots(c: &mut Criterion) {
    let mut state = ProducerStateManager::new(EXPIRATION_MS);
    append_round_robin(&mut state, 10_000, 50_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let offset = state.map_end_offset();
    c.bench_function("write_snapshot_10k_producers", |b| {
        b.iter(|| state.write_snapshot(dir.path(), offset).expect("write"))
    });
    c.bench_function("load_snapshot_10k_producers", |b| {
        b.iter(|| {
            ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, 1_000)
                .expect("load")
        })
    });
}

criterion_group!(benches, check_and_record, snapshots);
criterion_main!(benches);
