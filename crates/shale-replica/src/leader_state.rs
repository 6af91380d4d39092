//! The leader's view of its followers: their log end offsets, when each last caught up, the
//! ISR changes to propose to the controller and the high watermark that follows from them.
//!
//! Pure state with an injected clock (`now_ms` arguments), as Kafka's `Partition` keeps it:
//! a follower's fetch offset is its log end offset; a follower is caught up at a fetch when it
//! asked for the leader's log end offset, or for at least the end the leader had at its
//! previous fetch (then it was caught up at that previous fetch). The high watermark is the
//! smallest log end offset over the *maximal* ISR (the committed ISR plus a pending
//! expansion, KIP-497), so an ISR change in flight never lets it run ahead of a member.
//! KIP-966's strict min ISR: it only advances while the committed ISR has at least
//! min(`min.insync.replicas`, replication factor) members, so every replica that leaves an
//! ISR below that minimum (the controller keeps it in the ELR) holds every committed record.

use std::collections::BTreeMap;

/// What the leader knows of one follower at the current leader epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowerProgress {
    /// -1 until the follower's first fetch at this leader epoch.
    pub log_end_offset: i64,
    pub last_caught_up_ms: i64,
    last_fetch_ms: i64,
    last_fetch_leader_end_offset: i64,
}

impl FollowerProgress {
    fn new(last_caught_up_ms: i64) -> FollowerProgress {
        FollowerProgress {
            log_end_offset: -1,
            last_caught_up_ms,
            last_fetch_ms: 0,
            last_fetch_leader_end_offset: -1,
        }
    }
}

/// An ISR change for the controller (AlterPartition), with the epochs it was based on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrProposal {
    pub new_isr: Vec<i32>,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
}

/// The replica set as the metadata image describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// The leader side of one partition at one leader epoch.
#[derive(Clone, Debug)]
pub struct LeaderState {
    leader_id: i32,
    assignment: Assignment,
    /// The ISR proposed to the controller and not yet seen in the image.
    pending_isr: Option<Vec<i32>>,
    followers: BTreeMap<i32, FollowerProgress>,
    /// Where this leader epoch starts: a follower must reach it before it may rejoin the ISR
    /// (it has then truncated any divergent tail of an older epoch).
    epoch_start_offset: i64,
    lag_time_max_ms: i64,
    /// `min.insync.replicas` with KIP-966 on (1 with it off). `None` until the image's value
    /// arrives: the high watermark then waits for the whole replica set, never less.
    min_insync_replicas: Option<i32>,
}

impl LeaderState {
    /// Becoming leader: ISR members count as caught up now, so they are not dropped before
    /// they had a chance to fetch.
    pub fn new(
        leader_id: i32,
        assignment: Assignment,
        epoch_start_offset: i64,
        lag_time_max_ms: i64,
        now_ms: i64,
    ) -> LeaderState {
        let followers = assignment
            .replicas
            .iter()
            .filter(|&&r| r != leader_id)
            .map(|&r| {
                let caught_up = if assignment.isr.contains(&r) {
                    now_ms
                } else {
                    0
                };
                (r, FollowerProgress::new(caught_up))
            })
            .collect();
        LeaderState {
            leader_id,
            assignment,
            pending_isr: None,
            followers,
            epoch_start_offset,
            lag_time_max_ms,
            min_insync_replicas: None,
        }
    }

    pub fn leader_epoch(&self) -> i32 {
        self.assignment.leader_epoch
    }

    pub fn partition_epoch(&self) -> i32 {
        self.assignment.partition_epoch
    }

    /// The committed ISR (what `min.insync.replicas` is checked against, as in Kafka).
    pub fn isr(&self) -> &[i32] {
        &self.assignment.isr
    }

    pub fn replicas(&self) -> &[i32] {
        &self.assignment.replicas
    }

    pub fn has_pending_isr_change(&self) -> bool {
        self.pending_isr.is_some()
    }

    pub fn follower(&self, id: i32) -> Option<&FollowerProgress> {
        self.followers.get(&id)
    }

    pub fn set_lag_time_max_ms(&mut self, lag_time_max_ms: i64) {
        self.lag_time_max_ms = lag_time_max_ms;
    }

    /// The topic's `min.insync.replicas` under KIP-966's strict min ISR (1 when the
    /// `eligible.leader.replicas.version` feature is off).
    pub fn set_min_insync_replicas(&mut self, min_insync_replicas: i32) {
        self.min_insync_replicas = Some(min_insync_replicas);
    }

    /// Kafka's `isUnderMinIsr`: the committed ISR is smaller than min(min ISR, replication
    /// factor); the high watermark stays where it is meanwhile.
    pub fn is_under_min_isr(&self) -> bool {
        let replication_factor = self.assignment.replicas.len().max(1);
        let min_isr = self
            .min_insync_replicas
            .map_or(replication_factor, |m| {
                usize::try_from(m.max(1)).unwrap_or(1)
            })
            .min(replication_factor);
        self.assignment.isr.len() < min_isr
    }

    /// The committed ISR plus a pending expansion: every replica that may already count.
    pub fn maximal_isr(&self) -> Vec<i32> {
        let mut isr = self.assignment.isr.clone();
        if let Some(pending) = &self.pending_isr {
            for r in pending {
                if !isr.contains(r) {
                    isr.push(*r);
                }
            }
        }
        isr
    }

    /// A newer image at the same leader epoch: the ISR committed (ours or the controller's own
    /// change, e.g. a fenced broker removed), replicas added or removed by a reassignment.
    pub fn update_assignment(&mut self, assignment: Assignment, now_ms: i64) {
        if assignment.partition_epoch < self.assignment.partition_epoch {
            return;
        }
        if assignment.partition_epoch > self.assignment.partition_epoch {
            self.pending_isr = None;
        }
        self.followers
            .retain(|r, _| assignment.replicas.contains(r));
        for &r in &assignment.replicas {
            if r != self.leader_id {
                self.followers.entry(r).or_insert_with(|| {
                    FollowerProgress::new(if assignment.isr.contains(&r) {
                        now_ms
                    } else {
                        0
                    })
                });
            }
        }
        self.assignment = assignment;
    }

    /// A follower fetched at `fetch_offset` while the leader's log ended at
    /// `leader_end_offset`. Returns false for a broker that is not a follower of this
    /// partition.
    pub fn record_fetch(
        &mut self,
        follower_id: i32,
        fetch_offset: i64,
        leader_end_offset: i64,
        now_ms: i64,
    ) -> bool {
        let Some(f) = self.followers.get_mut(&follower_id) else {
            return false;
        };
        if fetch_offset >= leader_end_offset {
            f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_end_offset
            && f.last_fetch_leader_end_offset >= 0
        {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        f.log_end_offset = fetch_offset;
        f.last_fetch_leader_end_offset = leader_end_offset;
        f.last_fetch_ms = now_ms;
        true
    }

    /// The high watermark the ISR allows: the smallest log end offset over the maximal ISR,
    /// or -1 (hold) while under min ISR. A follower not heard from at this epoch holds it
    /// where it is (the caller keeps the larger of this and the current high watermark,
    /// which never moves backwards).
    pub fn high_watermark_candidate(&self, leader_end_offset: i64) -> i64 {
        if self.is_under_min_isr() {
            return -1;
        }
        // Runs on every append: the maximal ISR is walked without building it.
        let pending = self.pending_isr.iter().flatten();
        self.assignment
            .isr
            .iter()
            .chain(pending)
            .map(|r| {
                if *r == self.leader_id {
                    leader_end_offset
                } else {
                    self.followers.get(r).map_or(-1, |f| f.log_end_offset)
                }
            })
            .fold(leader_end_offset, i64::min)
    }

    /// After a fetch: propose adding `follower_id` when it has reached the high watermark
    /// and the start of this leader epoch, and no other change is in flight.
    pub fn maybe_expand(
        &mut self,
        follower_id: i32,
        high_watermark: i64,
        eligible: impl Fn(i32) -> bool,
    ) -> Option<IsrProposal> {
        if self.pending_isr.is_some() || self.assignment.isr.contains(&follower_id) {
            return None;
        }
        let f = self.followers.get(&follower_id)?;
        if f.log_end_offset < high_watermark
            || f.log_end_offset < self.epoch_start_offset
            || !eligible(follower_id)
        {
            return None;
        }
        let mut new_isr = self.assignment.isr.clone();
        new_isr.push(follower_id);
        Some(self.propose(new_isr))
    }

    /// Periodically: propose dropping followers that have not caught up for longer than
    /// `replica.lag.time.max.ms`. The leader always stays.
    pub fn maybe_shrink(&mut self, leader_end_offset: i64, now_ms: i64) -> Option<IsrProposal> {
        if self.pending_isr.is_some() {
            return None;
        }
        let lagging: Vec<i32> = self
            .assignment
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.leader_id)
            .filter(|r| {
                self.followers.get(r).is_none_or(|f| {
                    f.log_end_offset != leader_end_offset
                        && now_ms - f.last_caught_up_ms > self.lag_time_max_ms
                })
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let new_isr = self
            .assignment
            .isr
            .iter()
            .copied()
            .filter(|r| !lagging.contains(r))
            .collect();
        Some(self.propose(new_isr))
    }

    fn propose(&mut self, new_isr: Vec<i32>) -> IsrProposal {
        self.pending_isr = Some(new_isr.clone());
        IsrProposal {
            new_isr,
            leader_epoch: self.assignment.leader_epoch,
            partition_epoch: self.assignment.partition_epoch,
        }
    }

    /// The controller refused or did not answer: a later check proposes again.
    pub fn proposal_failed(&mut self) {
        self.pending_isr = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG_MS: i64 = 30_000;

    fn assignment(isr: &[i32]) -> Assignment {
        Assignment {
            leader_epoch: 3,
            partition_epoch: 7,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
        }
    }

    fn leader(isr: &[i32]) -> LeaderState {
        let mut s = LeaderState::new(1, assignment(isr), 0, LAG_MS, 1_000);
        s.set_min_insync_replicas(1);
        s
    }

    #[test]
    fn strict_min_isr_holds_the_high_watermark_below_min_isr() {
        let mut s = LeaderState::new(1, assignment(&[1, 2]), 0, LAG_MS, 1_000);
        s.record_fetch(2, 10, 10, 2_000);
        // Until the image's min ISR is known, the whole replica set is required.
        assert_eq!(s.high_watermark_candidate(10), -1);
        s.set_min_insync_replicas(2);
        assert_eq!(s.high_watermark_candidate(10), 10);
        // The ISR shrinks to the leader alone: appends no longer commit.
        s.update_assignment(
            Assignment {
                partition_epoch: 8,
                ..assignment(&[1])
            },
            3_000,
        );
        assert!(s.is_under_min_isr());
        assert_eq!(s.high_watermark_candidate(12), -1);
        // min.insync.replicas=1 (or the feature off): the leader alone commits.
        s.set_min_insync_replicas(1);
        assert_eq!(s.high_watermark_candidate(12), 12);
        // A min ISR above the replication factor is capped by it.
        s.set_min_insync_replicas(5);
        s.update_assignment(
            Assignment {
                partition_epoch: 9,
                ..assignment(&[1, 2, 3])
            },
            4_000,
        );
        s.record_fetch(3, 12, 12, 5_000);
        s.record_fetch(2, 12, 12, 5_000);
        assert_eq!(s.high_watermark_candidate(12), 12);
    }

    #[test]
    fn high_watermark_waits_for_every_isr_member() {
        let mut s = leader(&[1, 2, 3]);
        assert_eq!(s.high_watermark_candidate(10), -1);
        s.record_fetch(2, 10, 10, 1_100);
        assert_eq!(s.high_watermark_candidate(10), -1);
        s.record_fetch(3, 7, 10, 1_100);
        assert_eq!(s.high_watermark_candidate(10), 7);
        s.record_fetch(3, 10, 10, 1_200);
        assert_eq!(s.high_watermark_candidate(12), 10);
    }

    #[test]
    fn out_of_sync_replicas_do_not_hold_the_high_watermark() {
        let mut s = leader(&[1, 2]);
        s.record_fetch(2, 10, 10, 1_100);
        s.record_fetch(3, 0, 10, 1_100);
        assert_eq!(s.high_watermark_candidate(10), 10);
    }

    #[test]
    fn a_follower_lagging_too_long_is_dropped_and_one_that_keeps_up_is_not() {
        let mut s = leader(&[1, 2, 3]);
        // Follower 2 keeps fetching the leader's end; 3 stays behind.
        s.record_fetch(2, 10, 10, 2_000);
        s.record_fetch(3, 5, 10, 2_000);
        assert_eq!(s.maybe_shrink(10, 1_000 + LAG_MS), None);
        s.record_fetch(2, 10, 10, 1_000 + LAG_MS);
        let p = s.maybe_shrink(10, 1_001 + LAG_MS).unwrap();
        assert_eq!(p.new_isr, vec![1, 2]);
        assert_eq!((p.leader_epoch, p.partition_epoch), (3, 7));
        // While the change is in flight nothing else is proposed, and the maximal ISR still
        // holds 3 (the shrink is not committed).
        assert!(s.has_pending_isr_change());
        assert_eq!(s.maybe_shrink(10, 100_000), None);
        assert_eq!(s.maximal_isr(), vec![1, 2, 3]);
        s.update_assignment(
            Assignment {
                partition_epoch: 8,
                ..assignment(&[1, 2])
            },
            40_000,
        );
        assert!(!s.has_pending_isr_change());
        assert_eq!(s.high_watermark_candidate(10), 10);
    }

    #[test]
    fn caught_up_at_the_previous_fetch_counts() {
        let mut s = leader(&[1, 2]);
        s.record_fetch(2, 10, 10, 5_000);
        // The leader moved on to 20; the follower asks for 15, beyond the end it saw at 5 000
        // (10): it was caught up at its previous fetch time, not at this one.
        s.record_fetch(2, 15, 20, 40_000);
        assert_eq!(s.follower(2).unwrap().last_caught_up_ms, 5_000);
        assert!(s.maybe_shrink(20, 40_000).is_some());
    }

    #[test]
    fn a_follower_rejoins_once_at_the_high_watermark_and_the_epoch_start() {
        let mut s = LeaderState::new(1, assignment(&[1, 2]), 8, LAG_MS, 0);
        s.set_min_insync_replicas(1);
        s.record_fetch(3, 5, 12, 10);
        assert_eq!(
            s.maybe_expand(3, 5, |_| true),
            None,
            "below the epoch start"
        );
        s.record_fetch(3, 9, 12, 20);
        assert_eq!(
            s.maybe_expand(3, 10, |_| true),
            None,
            "below the high watermark"
        );
        s.record_fetch(3, 10, 12, 30);
        assert_eq!(s.maybe_expand(3, 10, |_| false), None, "fenced broker");
        let p = s.maybe_expand(3, 10, |_| true).unwrap();
        assert_eq!(p.new_isr, vec![1, 2, 3]);
        // The pending member already holds the high watermark back.
        assert_eq!(s.maximal_isr(), vec![1, 2, 3]);
        s.record_fetch(2, 12, 12, 40);
        assert_eq!(s.high_watermark_candidate(12), 10);
        s.proposal_failed();
        assert_eq!(s.maximal_isr(), vec![1, 2]);
    }

    #[test]
    fn unknown_brokers_and_stale_images_are_ignored() {
        let mut s = leader(&[1, 2, 3]);
        assert!(!s.record_fetch(9, 10, 10, 10));
        s.update_assignment(
            Assignment {
                partition_epoch: 6,
                ..assignment(&[1])
            },
            10,
        );
        assert_eq!(s.isr(), &[1, 2, 3]);
    }

    #[test]
    fn reassignment_adds_and_removes_followers() {
        let mut s = leader(&[1, 2, 3]);
        s.update_assignment(
            Assignment {
                leader_epoch: 3,
                partition_epoch: 8,
                replicas: vec![1, 2, 4],
                isr: vec![1, 2],
            },
            10,
        );
        assert!(s.follower(3).is_none());
        assert_eq!(s.follower(4).unwrap().log_end_offset, -1);
        assert_eq!(s.replicas(), &[1, 2, 4]);
    }
}
