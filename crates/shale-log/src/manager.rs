//! The log directories: finding and recovering partitions, placing new ones, retention,
//! flushing, checkpoints and clean shutdown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::checkpoint::{self, fsync_dir, OffsetCheckpointFile};
use crate::cleaner::{
    CleanerReport, HighWatermarkOnly, KeepAllTransactions, StableOffsets, TxnResolver,
};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::fault::FaultInjector;
use crate::log::{Log, OpenOptions};
use crate::types::TopicPartition;

pub(crate) const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point-offset-checkpoint";
pub(crate) const LOG_START_FILE: &str = "log-start-offset-checkpoint";
/// Kafka's name: each partition's first dirty offset, the cleaner's progress.
pub const CLEANER_OFFSET_FILE: &str = "cleaner-offset-checkpoint";
const DELETE_DIR_SUFFIX: &str = "-delete";
/// Directory of the metadata log when `metadata.log.dir` is one of `log.dirs`.
pub const METADATA_LOG_DIR_NAME: &str = "__cluster_metadata-0";

/// What one retention pass removed over all logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub segments_deleted: usize,
    pub bytes_deleted: u64,
    pub files_removed: usize,
}

pub struct LogManager {
    dirs: Vec<PathBuf>,
    logs: RwLock<HashMap<TopicPartition, Arc<Log>>>,
    /// One log-start checkpoint per directory, shared with its logs.
    start_checkpoints: Vec<Arc<OffsetCheckpointFile>>,
    /// One cleaner checkpoint per directory, shared with its logs.
    cleaner_checkpoints: Vec<Arc<OffsetCheckpointFile>>,
    /// Serialises creation and deletion so placement counts are exact.
    create_lock: Mutex<()>,
    faults: Arc<FaultInjector>,
    txn_resolver: RwLock<Arc<dyn TxnResolver>>,
}

struct Found {
    dir: PathBuf,
    tp: TopicPartition,
    opts: OpenOptions,
}

impl LogManager {
    /// Whether `log_dir` holds the marker of a clean shutdown. Opening the logs removes it, so
    /// callers that care (KIP-966's registration) ask before [`LogManager::open`].
    pub fn had_clean_shutdown(log_dir: &Path) -> bool {
        log_dir.join(CLEAN_SHUTDOWN_FILE).exists()
    }

    /// Opens every partition found in `log_dirs`, recovering after an unclean shutdown with
    /// `recovery_threads` threads.
    pub fn open(log_dirs: Vec<PathBuf>, recovery_threads: usize) -> Result<LogManager, LogError> {
        LogManager::open_with_config(log_dirs, recovery_threads, LogConfig::default())
    }

    /// As `open`, with the config applied to partitions found on disk.
    pub fn open_with_config(
        log_dirs: Vec<PathBuf>,
        recovery_threads: usize,
        default_config: LogConfig,
    ) -> Result<LogManager, LogError> {
        if log_dirs.is_empty() {
            return Err(LogError::InvalidArgument("no log directory".into()));
        }
        let faults = Arc::new(FaultInjector::default());
        let mut found = Vec::new();
        let mut clean_markers = Vec::new();
        let mut start_checkpoints = Vec::new();
        let mut cleaner_checkpoints = Vec::new();
        for dir in &log_dirs {
            std::fs::create_dir_all(dir)?;
            let marker = dir.join(CLEAN_SHUTDOWN_FILE);
            let clean = marker.exists();
            clean_markers.push(marker);
            let recovery =
                checkpoint::read_offsets(&dir.join(RECOVERY_POINT_FILE)).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "ignoring recovery point checkpoint");
                    HashMap::new()
                });
            let starts = checkpoint::read_offsets(&dir.join(LOG_START_FILE)).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "ignoring log start checkpoint");
                HashMap::new()
            });
            let start_cp = Arc::new(OffsetCheckpointFile::new(
                dir.join(LOG_START_FILE),
                starts.clone(),
            ));
            start_checkpoints.push(start_cp.clone());
            // Unreadable, the logs clean from their start again: more work, nothing lost.
            let first_dirty = checkpoint::read_offsets(&dir.join(CLEANER_OFFSET_FILE))
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "ignoring cleaner offset checkpoint");
                    HashMap::new()
                });
            let cleaner_cp = Arc::new(OffsetCheckpointFile::new(
                dir.join(CLEANER_OFFSET_FILE),
                first_dirty.clone(),
            ));
            cleaner_checkpoints.push(cleaner_cp.clone());
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                if !entry.file_type()?.is_dir() {
                    continue;
                }
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if name.ends_with(DELETE_DIR_SUFFIX) {
                    std::fs::remove_dir_all(entry.path())?;
                    continue;
                }
                // The metadata quorum keeps its own log here, as in Kafka; it is not a partition.
                if name == METADATA_LOG_DIR_NAME {
                    continue;
                }
                let Some(tp) = TopicPartition::from_dir_name(name) else {
                    continue;
                };
                found.push(Found {
                    dir: entry.path(),
                    opts: OpenOptions {
                        start_checkpoint: Some(start_cp.clone()),
                        recovery_point: recovery.get(&tp).copied(),
                        log_start_offset: starts.get(&tp).copied(),
                        clean_shutdown: clean,
                        cleaner_checkpoint: Some(cleaner_cp.clone()),
                        first_dirty_offset: first_dirty.get(&tp).copied(),
                    },
                    tp,
                });
            }
        }
        let logs = open_all(found, recovery_threads.max(1), &default_config, &faults)?;
        let mgr = LogManager {
            dirs: log_dirs,
            logs: RwLock::new(logs),
            start_checkpoints,
            cleaner_checkpoints,
            create_lock: Mutex::new(()),
            faults,
            txn_resolver: RwLock::new(Arc::new(KeepAllTransactions)),
        };
        // A crash from here on must be treated as unclean.
        for marker in clean_markers {
            if marker.exists() {
                std::fs::remove_file(&marker)?;
                if let Some(d) = marker.parent() {
                    fsync_dir(d)?;
                }
            }
        }
        mgr.write_checkpoints()?;
        Ok(mgr)
    }

    pub fn log_dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Shared fault injector of every log (tests of disk failures).
    pub fn fault_injector(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Arc<Log>> {
        self.logs.read().get(tp).cloned()
    }

    pub fn all(&self) -> Vec<(TopicPartition, Arc<Log>)> {
        let mut v: Vec<_> = self
            .logs
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Returns the log, creating it in the directory holding the fewest partitions.
    pub fn get_or_create(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
    ) -> Result<Arc<Log>, LogError> {
        if let Some(l) = self.get(tp) {
            return Ok(l);
        }
        let _c = self.create_lock.lock();
        if let Some(l) = self.get(tp) {
            return Ok(l);
        }
        let i = self.least_loaded_dir();
        let log = Arc::new(Log::open_with(
            &self.dirs[i].join(tp.dir_name()),
            tp.clone(),
            config,
            OpenOptions {
                start_checkpoint: Some(self.start_checkpoints[i].clone()),
                cleaner_checkpoint: Some(self.cleaner_checkpoints[i].clone()),
                clean_shutdown: true,
                ..OpenOptions::default()
            },
            self.faults.clone(),
        )?);
        self.logs.write().insert(tp.clone(), log.clone());
        Ok(log)
    }

    /// Index of the directory holding the fewest partitions.
    fn least_loaded_dir(&self) -> usize {
        let logs = self.logs.read();
        let mut counts: Vec<(usize, usize)> = (0..self.dirs.len()).map(|i| (0usize, i)).collect();
        for log in logs.values() {
            if let Some(parent) = log.dir().parent() {
                if let Some(c) = counts
                    .iter_mut()
                    .find(|(_, i)| self.dirs[*i].as_path() == parent)
                {
                    c.0 += 1;
                }
            }
        }
        // Ties go to the first directory listed.
        counts.iter().min_by_key(|(c, _)| *c).map_or(0, |(_, i)| *i)
    }

    /// Deletes a partition: renames its directory to `<tp>.<uuid>-delete`, then removes it.
    /// Readers holding slices keep their open files.
    pub fn delete(&self, tp: &TopicPartition) -> Result<(), LogError> {
        let _c = self.create_lock.lock();
        let Some(log) = self.logs.write().remove(tp) else {
            return Ok(());
        };
        let _w = log.writer.lock();
        log.release();
        let dir = log.dir().to_path_buf();
        let parent = dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let doomed = parent.join(format!(
            "{}.{}{}",
            tp.dir_name(),
            uuid::Uuid::new_v4().simple(),
            DELETE_DIR_SUFFIX
        ));
        std::fs::rename(&dir, &doomed)?;
        fsync_dir(&parent)?;
        std::fs::remove_dir_all(&doomed)?;
        fsync_dir(&parent)?;
        drop(_w);
        // A partition created again under the same name must not inherit these entries.
        self.write_checkpoints()
    }

    /// One retention pass over every log, then removal of due `.deleted` files.
    pub fn run_retention_once(&self, now_ms: i64) -> Result<RetentionReport, LogError> {
        let mut report = RetentionReport::default();
        let mut first_err = None;
        for (_, log) in self.all() {
            if log.is_offline() {
                continue;
            }
            match log.apply_retention(now_ms) {
                Ok(r) => {
                    report.segments_deleted += r.segments_deleted;
                    report.bytes_deleted += r.bytes_deleted;
                }
                Err(e) => {
                    tracing::error!(log = %log.topic_partition(), error = %e, "retention failed");
                    first_err.get_or_insert(e);
                }
            }
            match log.delete_due_files(now_ms) {
                Ok(n) => report.files_removed += n,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.write_checkpoints()?;
        match first_err {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Installs the transaction layer's view of transaction outcomes for the cleaner.
    pub fn set_txn_resolver(&self, resolver: Arc<dyn TxnResolver>) {
        *self.txn_resolver.write() = resolver;
    }

    /// One compaction pass over every log whose policy includes `compact`, each bounded by
    /// its own high watermark only (no transaction layer above).
    pub fn run_cleaner_once(&self, now_ms: i64) -> Result<CleanerReport, LogError> {
        self.run_cleaner_once_bounded(now_ms, &HighWatermarkOnly)
    }

    /// One compaction pass over every log whose policy includes `compact`, none past its
    /// partition's last stable offset from `stable_offsets`; each log's progress goes to the
    /// cleaner checkpoint of its directory as its pass ends.
    pub fn run_cleaner_once_bounded(
        &self,
        now_ms: i64,
        stable_offsets: &dyn StableOffsets,
    ) -> Result<CleanerReport, LogError> {
        let resolver = self.txn_resolver.read().clone();
        let mut report = CleanerReport::default();
        let mut first_err = None;
        for (tp, log) in self.all() {
            // Only compacted logs cost the caller a look-up.
            let last_stable = if log.config().cleanup_policy.compact {
                stable_offsets
                    .last_stable_offset(&tp)
                    .unwrap_or_else(|| log.log_start_offset())
            } else {
                log.log_start_offset()
            };
            match log.clean(now_ms, resolver.as_ref(), last_stable) {
                Ok(r) => report.add(&r),
                Err(e) => {
                    tracing::error!(log = %tp, error = %e, "compaction failed");
                    first_err.get_or_insert(e);
                }
            }
            if let Err(e) = log.delete_due_files(now_ms) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Flushes logs whose `flush.ms` has passed and checkpoints recovery points.
    pub fn flush_due(&self, now_ms: i64) {
        let mut any = false;
        for (tp, log) in self.all() {
            if log.is_offline() {
                continue;
            }
            match log.flush_if_due(now_ms) {
                Ok(f) => any |= f,
                Err(e) => tracing::error!(log = %tp, error = %e, "flush failed"),
            }
        }
        if any {
            if let Err(e) = self.write_checkpoints() {
                tracing::error!(error = %e, "writing checkpoints failed");
            }
        }
    }

    /// Writes the recovery-point, log-start and cleaner checkpoints of every directory; the
    /// cleaner's keeps only partitions still here (a deleted one's entry goes).
    pub fn write_checkpoints(&self) -> Result<(), LogError> {
        let all = self.all();
        for ((dir, start_cp), cleaner_cp) in self
            .dirs
            .iter()
            .zip(&self.start_checkpoints)
            .zip(&self.cleaner_checkpoints)
        {
            let mine: Vec<&(TopicPartition, Arc<Log>)> = all
                .iter()
                .filter(|(_, l)| l.dir().parent() == Some(dir.as_path()))
                .collect();
            let rps: Vec<(TopicPartition, i64)> = mine
                .iter()
                .map(|(t, l)| (t.clone(), l.recovery_point()))
                .collect();
            let starts: Vec<(TopicPartition, i64)> = mine
                .iter()
                .map(|(t, l)| (t.clone(), l.log_start_offset()))
                .collect();
            let first_dirty: Vec<(TopicPartition, i64)> = mine
                .iter()
                .filter_map(|(t, l)| l.first_dirty_offset().map(|o| (t.clone(), o)))
                .collect();
            checkpoint::write_offsets(&dir.join(RECOVERY_POINT_FILE), &rps)?;
            start_cp.replace(starts)?;
            cleaner_cp.replace(first_dirty)?;
        }
        Ok(())
    }

    /// Flushes and closes every log, writes checkpoints and the clean-shutdown markers.
    pub fn shutdown(&self) -> Result<(), LogError> {
        let mut first_err = None;
        for (tp, log) in self.all() {
            if let Err(e) = log.close() {
                tracing::error!(log = %tp, error = %e, "close failed");
                first_err.get_or_insert(e);
            }
        }
        self.write_checkpoints()?;
        if let Some(e) = first_err {
            // Without a clean marker the next start recovers the logs that failed to close.
            return Err(e);
        }
        for dir in &self.dirs {
            checkpoint::write_atomic(&dir.join(CLEAN_SHUTDOWN_FILE), b"")?;
        }
        Ok(())
    }
}

fn open_all(
    found: Vec<Found>,
    threads: usize,
    config: &LogConfig,
    faults: &Arc<FaultInjector>,
) -> Result<HashMap<TopicPartition, Arc<Log>>, LogError> {
    let queue = Mutex::new(found);
    let out = Mutex::new(HashMap::new());
    let err: Mutex<Option<LogError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let Some(f) = queue.lock().pop() else { break };
                if err.lock().is_some() {
                    break;
                }
                match Log::open_with(&f.dir, f.tp.clone(), config.clone(), f.opts, faults.clone()) {
                    Ok(log) => {
                        out.lock().insert(f.tp, Arc::new(log));
                    }
                    Err(e) => {
                        tracing::error!(log = %f.tp, error = %e, "failed to open log");
                        err.lock().get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = err.into_inner() {
        return Err(e);
    }
    Ok(out.into_inner())
}
