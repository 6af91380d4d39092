//! Log engine benchmarks: 16 KiB append throughput, the produce path's CRC passes (one, as the
//! replica layer appends `ValidatedBatches`, against the two it made before), read
//! throughput, append latency percentiles, and the time and memory to open 10,000 partitions
//! of 3 segments.
//! `benches/dd_ratio.sh` compares append throughput with `dd bs=16k`.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shale_log::records::BatchBuilder;
use shale_log::{
    parse_batches, AppendOrigin, Log, LogConfig, LogManager, TopicPartition, ValidatedBatches,
};

const BATCH_BYTES: usize = 16 * 1024;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A batch of 16 records totalling exactly `total` bytes.
fn batch_of(total: usize) -> Vec<u8> {
    let ts = now_ms();
    let mut last = total / 16;
    loop {
        let mut b = BatchBuilder::new(ts);
        for i in 0..16 {
            let len = if i == 15 { last } else { total / 16 - 40 };
            b.push(
                ts,
                Some(format!("key-{i}").as_bytes()),
                Some(&vec![b'v'; len]),
            );
        }
        let out = b.build().unwrap();
        match out.len().cmp(&total) {
            std::cmp::Ordering::Equal => return out,
            std::cmp::Ordering::Greater => last -= 1,
            std::cmp::Ordering::Less => last += 1,
        }
    }
}

/// Benchmarks named on the command line (criterion's filter) or all when none is.
fn wanted(name: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    // Criterion takes one regex; alternatives separated by `|` are enough here.
    filters.is_empty()
        || filters
            .iter()
            .flat_map(|f| f.split('|'))
            .any(|f| name.contains(f))
}

fn bench_config() -> LogConfig {
    LogConfig {
        segment_bytes: 256 * 1024 * 1024,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open_log(dir: &Path) -> Log {
    Log::open(
        &dir.join("bench-0"),
        TopicPartition::new("bench", 0),
        bench_config(),
    )
    .unwrap()
}

/// Keeps disk use bounded between timed chunks.
fn drop_old_data(log: &Log) {
    if log.size_bytes() > 1024 * 1024 * 1024 {
        log.delete_records_before(log.log_end_offset()).unwrap();
        log.apply_retention(now_ms()).unwrap();
        log.delete_due_files(i64::MAX).unwrap();
    }
}

fn append_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let mut batch = batch_of(BATCH_BYTES);
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Bytes(BATCH_BYTES as u64));
    g.bench_function("append_16k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let n = (iters - done).min(4096);
                let now = now_ms();
                let start = Instant::now();
                for _ in 0..n {
                    log.append(&mut batch, 0, now, AppendOrigin::Client)
                        .unwrap();
                }
                total += start.elapsed();
                done += n;
                drop_old_data(&log);
            }
            total
        })
    });
    g.finish();
}

/// The produce path at the log: `crc_check_16k` is one framing and CRC pass alone;
/// `produce_one_pass_16k` parses once and appends the validated batches (the replica layer's
/// path); `produce_two_passes_16k` parses, then appends raw bytes that the log parses again
/// (the path before `ValidatedBatches`), so the difference is one pass per batch.
fn produce_crc_passes(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let mut batch = batch_of(BATCH_BYTES);
    let mut g = c.benchmark_group("produce");
    g.throughput(Throughput::Bytes(BATCH_BYTES as u64));
    g.bench_function("crc_check_16k", |b| {
        b.iter(|| ValidatedBatches::parse(&mut batch).unwrap().headers().len())
    });
    let mut append_with = |name: &str, two_passes: bool| {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let n = (iters - done).min(4096);
                    let now = now_ms();
                    let start = Instant::now();
                    for _ in 0..n {
                        if two_passes {
                            parse_batches(&batch).unwrap();
                            log.append(&mut batch, 0, now, AppendOrigin::Client)
                                .unwrap();
                        } else {
                            let validated = ValidatedBatches::parse(&mut batch).unwrap();
                            log.append_validated(validated, 0, now, AppendOrigin::Client)
                                .unwrap();
                        }
                    }
                    total += start.elapsed();
                    done += n;
                    drop_old_data(&log);
                }
                total
            })
        });
    };
    append_with("produce_one_pass_16k", false);
    append_with("produce_two_passes_16k", true);
    g.finish();
}

fn read_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let mut batch = batch_of(BATCH_BYTES);
    for _ in 0..16_384 {
        log.append(&mut batch, 0, now_ms(), AppendOrigin::Client)
            .unwrap();
    }
    let fetch_bytes = 1024 * 1024;
    let end = log.log_end_offset();
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Bytes(fetch_bytes as u64));
    let mut at = 0i64;
    g.bench_function("read_1mib_slices", |b| {
        b.iter(|| {
            let r = log.read(at, fetch_bytes, end, true).unwrap();
            at = if at + 1024 >= end { 0 } else { at + 1024 };
            r.slices.len()
        })
    });
    let mut at = 0i64;
    g.bench_function("read_1mib_copied", |b| {
        b.iter(|| {
            let r = log.read(at, fetch_bytes, end, true).unwrap();
            at = if at + 1024 >= end { 0 } else { at + 1024 };
            r.to_bytes().unwrap().len()
        })
    });
    g.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Per-append latency percentiles (criterion reports means, not tails).
fn append_latency(_c: &mut Criterion) {
    for (name, size) in [
        ("append_latency_16k", BATCH_BYTES),
        ("append_latency_1k", 1024),
    ] {
        if !wanted(name) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = open_log(dir.path());
        let mut batch = batch_of(size);
        let mut lat = Vec::with_capacity(50_000);
        for i in 0..50_000 {
            let now = now_ms();
            let start = Instant::now();
            log.append(&mut batch, 0, now, AppendOrigin::Client)
                .unwrap();
            lat.push(start.elapsed());
            if i % 4096 == 0 {
                drop_old_data(&log);
            }
        }
        lat.sort();
        println!(
            "{name}: n={} p50={:?} p99={:?} p99.9={:?} max={:?}",
            lat.len(),
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999),
            lat[lat.len() - 1]
        );
    }
}

/// 1 GiB of 16 KiB appends timed as a whole, for `dd_ratio.sh`.
fn append_throughput_raw(_c: &mut Criterion) {
    if !wanted("append_throughput_raw") {
        return;
    }
    let count: usize = std::env::var("COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(65_536);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(
        &dir.path().join("raw-0"),
        TopicPartition::new("raw", 0),
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            ..LogConfig::default()
        },
    )
    .unwrap();
    let mut batch = batch_of(BATCH_BYTES);
    let now = now_ms();
    let start = Instant::now();
    for _ in 0..count {
        log.append(&mut batch, 0, now, AppendOrigin::Client)
            .unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let bytes = (count * BATCH_BYTES) as f64;
    println!("append_16k_bytes_per_sec {:.0}", bytes / secs);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Writes 10,000 partitions of 3 one-batch segments as a clean shutdown leaves them.
fn write_partitions(root: &Path, partitions: usize) {
    let mut rp = format!("0\n{partitions}\n");
    let mut ls = format!("0\n{partitions}\n");
    let ts = now_ms();
    for p in 0..partitions {
        let dir = root.join(format!("open-{p}"));
        std::fs::create_dir_all(&dir).unwrap();
        for base in 0..3i64 {
            let mut b = BatchBuilder::new(ts);
            b.base_offset = base;
            b.partition_leader_epoch = 0;
            b.push(ts, Some(b"k"), Some(&[b'v'; 100]));
            std::fs::write(dir.join(format!("{base:020}.log")), b.build().unwrap()).unwrap();
            std::fs::write(dir.join(format!("{base:020}.index")), b"").unwrap();
            std::fs::write(dir.join(format!("{base:020}.timeindex")), b"").unwrap();
        }
        std::fs::write(dir.join("leader-epoch-checkpoint"), "0\n1\n0 0\n").unwrap();
        rp.push_str(&format!("open {p} 3\n"));
        ls.push_str(&format!("open {p} 0\n"));
    }
    std::fs::write(root.join("recovery-point-offset-checkpoint"), rp).unwrap();
    std::fs::write(root.join("log-start-offset-checkpoint"), ls).unwrap();
}

fn open_partitions(c: &mut Criterion) {
    if !wanted("open_10000_partitions") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_partitions(dir.path(), 10_000);
    let marker = dir.path().join(".kafka_cleanshutdown");
    let rss_before = rss_kib();
    std::fs::write(&marker, b"").unwrap();
    let start = Instant::now();
    let m = LogManager::open(vec![dir.path().to_path_buf()], 2).unwrap();
    let first = start.elapsed();
    let rss_after = rss_kib();
    assert_eq!(m.all().len(), 10_000);
    assert!(m.all().iter().all(|(_, l)| l.log_end_offset() == 3));
    println!(
        "open_10000_partitions: first open {first:?}, RSS {} MiB total, {} MiB for the logs",
        rss_after / 1024,
        rss_after.saturating_sub(rss_before) / 1024
    );
    m.shutdown().unwrap();
    drop(m);
    let mut g = c.benchmark_group("open");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("open_10000_partitions", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::fs::write(&marker, b"").unwrap();
                let start = Instant::now();
                let m = LogManager::open(vec![dir.path().to_path_buf()], 2).unwrap();
                total += start.elapsed();
                m.shutdown().unwrap();
            }
            total
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    append_throughput,
    produce_crc_passes,
    read_throughput,
    append_latency,
    append_throughput_raw,
    open_partitions
);
criterion_main!(benches);
