//! Where a follower truncates when it starts following a leader (KIP-101, KIP-279), decided
//! from the leader's OffsetForLeaderEpoch answer and the follower's own epoch cache, never
//! from the follower's high watermark alone.

/// The leader's answer for the follower's latest epoch: the largest epoch it knows at or
/// below it, and where that epoch ends in the leader's log. `None` when the leader knows no
/// such epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaderEpochEnd {
    pub epoch: i32,
    pub end_offset: i64,
}

/// What the follower does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruncationStep {
    /// Truncate to this offset (nothing when at or above the log end) and fetch from there.
    Complete(i64),
    /// Truncate to this offset and ask the leader again with the epoch the log then ends in:
    /// the follower's log holds an epoch the leader never had (KIP-279, fast double
    /// failover), whose end is not yet known to be shared.
    AskAgain(i64),
}

impl TruncationStep {
    pub fn offset(self) -> i64 {
        match self {
            TruncationStep::Complete(o) | TruncationStep::AskAgain(o) => o,
        }
    }
}

/// Decides the truncation.
///
/// * `leader`: the leader's answer, `None` when it had no epoch at or below the one asked.
/// * `local_end_for`: the follower's own `(epoch, end offset)` for an epoch (largest epoch at
///   or below it and where it ends locally), as `Log::end_offset_for_epoch`.
/// * `log_end_offset`: the follower's log end offset.
/// * `fallback_offset`: where to truncate when the leader knows none of the follower's epochs
///   (its high watermark, as Kafka does for this case only: the leader's log then starts
///   after everything the follower has in common with it).
pub fn decide(
    leader: Option<LeaderEpochEnd>,
    local_end_for: impl Fn(i32) -> Option<(i32, i64)>,
    log_end_offset: i64,
    fallback_offset: i64,
) -> TruncationStep {
    let Some(leader) = leader else {
        return TruncationStep::Complete(fallback_offset.min(log_end_offset));
    };
    match local_end_for(leader.epoch) {
        // Every local epoch is newer than anything the leader has: nothing local is shared
        // beyond what the leader's end allows.
        None => TruncationStep::Complete(leader.end_offset.min(log_end_offset)),
        Some((local_epoch, local_end)) if local_epoch != leader.epoch => {
            TruncationStep::AskAgain(local_end.min(log_end_offset))
        }
        Some((_, local_end)) => {
            TruncationStep::Complete(leader.end_offset.min(local_end).min(log_end_offset))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An epoch cache as `(epoch, start offset)` entries plus a log end, answering as
    /// `Log::end_offset_for_epoch` does.
    fn cache(entries: &[(i32, i64)], leo: i64) -> impl Fn(i32) -> Option<(i32, i64)> + '_ {
        move |wanted| {
            if entries.last().is_some_and(|(e, _)| *e == wanted) {
                return Some((wanted, leo));
            }
            let higher = entries.iter().find(|(e, _)| *e > wanted)?;
            match entries.iter().rev().find(|(e, _)| *e <= wanted) {
                None => Some((wanted, higher.1)),
                Some(floor) => Some((floor.0, higher.1)),
            }
        }
    }

    #[test]
    fn kip101_scenario_1_keeps_the_acknowledged_tail() {
        // The follower restarted with a high watermark below its end; the leader has the
        // same epoch running past it: truncating to the high watermark would lose offset 1.
        let local = cache(&[(0, 0)], 2);
        let step = decide(
            Some(LeaderEpochEnd {
                epoch: 0,
                end_offset: 2,
            }),
            local,
            2,
            1,
        );
        assert_eq!(step, TruncationStep::Complete(2));
    }

    #[test]
    fn kip101_scenario_2_drops_the_divergent_tail() {
        // The follower wrote offset 1 in epoch 0; the new leader wrote a different offset 1
        // in epoch 1. Epoch 0 ends at 1 on the leader.
        let local = cache(&[(0, 0)], 2);
        let step = decide(
            Some(LeaderEpochEnd {
                epoch: 0,
                end_offset: 1,
            }),
            local,
            2,
            2,
        );
        assert_eq!(step, TruncationStep::Complete(1));
    }

    #[test]
    fn kip279_fast_double_failover_takes_two_rounds() {
        // Follower: epoch 0 from 0, epoch 2 from 10 (it led briefly), end 15.
        // Leader: epoch 0 from 0, epoch 1 from 8, end 20.
        let entries = [(0, 0), (2, 10)];
        let step = decide(
            Some(LeaderEpochEnd {
                epoch: 1,
                end_offset: 20,
            }),
            cache(&entries, 15),
            15,
            0,
        );
        assert_eq!(step, TruncationStep::AskAgain(10));
        // After truncating to 10 the follower ends in epoch 0 and asks for it.
        let entries = [(0, 0)];
        let step = decide(
            Some(LeaderEpochEnd {
                epoch: 0,
                end_offset: 8,
            }),
            cache(&entries, 10),
            10,
            0,
        );
        assert_eq!(step, TruncationStep::Complete(8));
    }

    #[test]
    fn nothing_to_truncate_when_the_leader_is_ahead() {
        let entries = [(0, 0), (1, 5)];
        let step = decide(
            Some(LeaderEpochEnd {
                epoch: 1,
                end_offset: 50,
            }),
            cache(&entries, 9),
            9,
            3,
        );
        assert_eq!(step, TruncationStep::Complete(9));
    }

    #[test]
    fn the_fallback_applies_only_when_the_leader_knows_no_epoch() {
        let entries = [(4, 0)];
        assert_eq!(
            decide(None, cache(&entries, 9), 9, 3),
            TruncationStep::Complete(3)
        );
        // Every local batch is of an epoch newer than the leader's answer: none is shared.
        assert_eq!(
            decide(
                Some(LeaderEpochEnd {
                    epoch: 2,
                    end_offset: 6
                }),
                cache(&entries, 9),
                9,
                3
            ),
            TruncationStep::Complete(0)
        );
        // A cache that knows no epoch at or below the answer keeps up to the leader's end.
        assert_eq!(
            decide(
                Some(LeaderEpochEnd {
                    epoch: 2,
                    end_offset: 6
                }),
                |_| None,
                9,
                3
            ),
            TruncationStep::Complete(6)
        );
    }
}
