//! The replication operations of a hosted partition: the leader's high watermark, a
//! follower's appends of the leader's batches, its high watermark and its truncation.

use shale_log::control::decode_control_batch;
use shale_log::{AppendOrigin, LogError, ValidatedBatches};
use tracing::warn;

use crate::partition::{producer_batch, AppendError, Partition};
use crate::producer_replay::replay_marker;

impl Partition {
    /// As leader: moves the high watermark to the smallest log end offset of the ISR, never
    /// backwards. Returns whether it moved. Not leading: nothing happens.
    pub fn maybe_advance_high_watermark(&self) -> bool {
        let leo = self.log.log_end_offset();
        let Some(candidate) = self.replication.high_watermark_candidate(leo) else {
            return false;
        };
        self.raise_high_watermark(candidate.min(leo))
    }

    fn raise_high_watermark(&self, hw: i64) -> bool {
        let Some(hw) = self.log.raise_high_watermark(hw) else {
            return false;
        };
        self.producers.lock().on_high_watermark_updated(hw);
        self.replication.publish_high_watermark(hw);
        true
    }

    /// As follower: appends the leader's batches exactly as they are (offsets, leader
    /// epochs and CRCs kept) and replays them into producer state.
    pub fn append_as_follower(&self, records: &mut [u8], now_ms: i64) -> Result<(), AppendError> {
        let mut producers = self.producers.lock();
        // A fetch answered after this broker became leader must not extend its log.
        self.refuse_if_leading()?;
        let info = self.log.append_validated(
            ValidatedBatches::parse(records)?,
            -1,
            now_ms,
            AppendOrigin::Replication,
        )?;
        let mut position = 0usize;
        for h in &info.batches {
            let bytes = records
                .get(position..position + h.total_len())
                .unwrap_or_default();
            position += h.total_len();
            if h.producer_id < 0 {
                continue;
            }
            match decode_control_batch(h, bytes) {
                Some(marker) => {
                    replay_marker(&mut producers, &self.log, h, &marker);
                }
                None => producers.replay(&producer_batch(h)),
            }
        }
        Ok(())
    }

    /// As follower whose log ends below the leader's log start: restarts the log empty at
    /// the leader's log start (Kafka's `truncateFullyAndStartAt`).
    pub fn restart_as_follower_at(&self, offset: i64, expiration_ms: i64) -> Result<(), LogError> {
        let mut producers = self.producers.lock();
        self.refuse_if_leading()?;
        // The log's high watermark restarts with it, at `offset`.
        self.log.truncate_fully_and_start_at(offset)?;
        *producers = self.reload_producers(expiration_ms);
        drop(producers);
        self.replication
            .reset_high_watermark(self.log.high_watermark());
        Ok(())
    }

    fn refuse_if_leading(&self) -> Result<(), LogError> {
        if self.replication.isr_len().is_some() {
            return Err(LogError::InvalidArgument(format!(
                "{} is led here: replication writes refused",
                self.tp
            )));
        }
        Ok(())
    }

    /// As follower: the high watermark is the leader's, capped by the local log end; the
    /// log start follows the leader's (retention, DeleteRecords) up to the local end.
    pub fn update_follower_high_watermark(
        &self,
        leader_high_watermark: i64,
        leader_log_start: i64,
    ) {
        let leo = self.log.log_end_offset();
        self.raise_high_watermark(leader_high_watermark.min(leo));
        if leader_log_start > self.log.log_start_offset() && leader_log_start <= leo {
            if let Err(e) = self.log.delete_records_before(leader_log_start) {
                warn!(tp = %self.tp, "cannot follow the leader's log start: {e}");
            }
        }
    }

    /// As follower: removes the divergent tail at and above `offset` and rebuilds producer
    /// state for the shorter log. The high watermark follows down if it was above.
    pub fn truncate_as_follower(&self, offset: i64, expiration_ms: i64) -> Result<(), LogError> {
        let mut producers = self.producers.lock();
        // A leader never truncates its own log.
        self.refuse_if_leading()?;
        let before = self.log.high_watermark();
        // The log takes its high watermark down with its end.
        self.log.truncate_to(offset)?;
        *producers = self.reload_producers(expiration_ms);
        drop(producers);
        let hw = self.log.high_watermark();
        if before > hw {
            self.replication.reset_high_watermark(hw);
        }
        Ok(())
    }
}
