//! The member ranges of Kafka's `UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer`.
//!
//! The subscribers of one topic are sorted by assignment size (then member index). Partitions
//! are handed to the least loaded range, the members with the smallest size, one each in turn;
//! once each has had one, the range's level rises by one and it takes in the next members whose
//! size reached that level. Partitions are taken from the most loaded range the same way,
//! downwards. The ranges are balanced when their levels are within one. Sizes are read live,
//! from the slice the caller passes, because the caller moves partitions between the calls.

use std::cmp::Ordering;

#[derive(Debug, Default)]
pub(super) struct MemberBalancer {
    /// The members being balanced, the smallest assignments first.
    sorted: Vec<usize>,
    /// `sorted[..least_end]` is the least loaded range.
    least_end: usize,
    /// The size of the least loaded range's members before this round gave them a partition.
    least_level: i64,
    /// The position in `sorted` of the next member to give a partition to.
    next_least: usize,
    /// `sorted[most_start..most_end]` is the most loaded range; members past `most_end` have
    /// been excluded for having no partition of the topic to give.
    most_start: usize,
    most_end: usize,
    /// The size of the most loaded range's members before this round took a partition.
    most_level: i64,
    /// The position in `sorted` of the next member to take a partition from; -1 when none is
    /// left.
    next_most: isize,
}

fn level(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

impl MemberBalancer {
    /// Starts over with `members` (not empty); answers the difference between the largest and
    /// the smallest of their sizes.
    pub(super) fn initialize(&mut self, members: &[usize], sizes: &[usize]) -> usize {
        self.sorted.clear();
        self.sorted.extend_from_slice(members);
        self.sorted.sort_by(|a, b| match sizes[*a].cmp(&sizes[*b]) {
            Ordering::Equal => a.cmp(b),
            order => order,
        });
        let (Some(&smallest), Some(&largest)) = (self.sorted.first(), self.sorted.last()) else {
            // Every topic the builder balances has a subscriber; an empty range stays empty.
            self.least_end = 0;
            self.next_least = 0;
            self.most_start = 0;
            self.most_end = 0;
            self.next_most = -1;
            return 0;
        };
        let len = self.sorted.len();
        self.least_end = 0;
        self.least_level = level(sizes[smallest]) - 1;
        self.next_least = 0;
        self.most_start = len;
        self.most_end = len;
        self.most_level = level(sizes[largest]) + 1;
        self.next_most = isize::try_from(len).unwrap_or(isize::MAX) - 1;
        sizes[largest] - sizes[smallest]
    }

    /// The member to give the next partition to, counted as having received it.
    pub(super) fn next_least_loaded(&mut self, sizes: &[usize]) -> usize {
        if self.next_least >= self.least_end {
            // Everyone in the range has had one: raise the level and take in the members that
            // are now at it.
            self.least_level += 1;
            while self.least_end < self.sorted.len()
                && level(sizes[self.sorted[self.least_end]]) == self.least_level
            {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let member = self.sorted[self.next_least];
        self.next_least += 1;
        member
    }

    /// The member to take the next partition from, counted as having given it; `None` when no
    /// member is left that could.
    pub(super) fn next_most_loaded(&mut self, sizes: &[usize]) -> Option<usize> {
        if self.next_most < to_signed(self.most_start) {
            if self.most_end <= self.most_start && self.most_start > 0 {
                // Exclusions emptied the range: restart from the next member down, or the
                // range could fail to grow and answer a member outside it.
                self.most_level = level(sizes[self.sorted[self.most_start - 1]]);
            } else {
                self.most_level -= 1;
            }
            while self.most_start > 0
                && level(sizes[self.sorted[self.most_start - 1]]) == self.most_level
            {
                self.most_start -= 1;
            }
            self.next_most = to_signed(self.most_end) - 1;
        }
        let position = usize::try_from(self.next_most).ok()?;
        self.next_most -= 1;
        Some(self.sorted[position])
    }

    /// Drops the member `next_most_loaded` last answered from the most loaded range: it has no
    /// partition of the topic to give.
    pub(super) fn exclude_most_loaded(&mut self) {
        let Ok(position) = usize::try_from(self.next_most + 1) else {
            return;
        };
        if self.most_end == 0 || position >= self.sorted.len() {
            return;
        }
        self.sorted.swap(position, self.most_end - 1);
        self.most_end -= 1;
    }

    /// Whether the two ranges' levels are within one of each other.
    pub(super) fn is_balanced(&self) -> bool {
        self.most_level - self.least_level <= 1
    }
}

fn to_signed(position: usize) -> isize {
    isize::try_from(position).unwrap_or(isize::MAX)
}
