//! Producer ids for InitProducerId, handed out from blocks the controller allocates.

use std::collections::VecDeque;

/// Kafka's controller hands brokers blocks of this many producer ids (AllocateProducerIds).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Below this share of the current blocks left, ask the controller for the next block early,
/// as Kafka's broker does at 90% use, so InitProducerId rarely waits.
const PREFETCH_REMAINING_PERCENT: i64 = 10;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProducerIdAllocatorError {
    #[error("producer id block [{start}, +{len}) is empty, negative or overflows")]
    InvalidBlock { start: i64, len: i64 },
    #[error("producer id block [{start}, +{len}) overlaps ids already issued or queued")]
    OverlappingBlock { start: i64, len: i64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    next: i64,
    end: i64,
}

/// Hands out producer ids in order from the blocks added to it. Blocks must come in increasing
/// order, as the controller allocates them, so no id is ever handed out twice.
#[derive(Clone, Debug, Default)]
pub struct ProducerIdAllocator {
    blocks: VecDeque<Block>,
    /// One past the highest id of any block ever added.
    high_water: i64,
}

impl ProducerIdAllocator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the block `[start, start + len)`.
    pub fn add_block(&mut self, start: i64, len: i64) -> Result<(), ProducerIdAllocatorError> {
        let end = start
            .checked_add(len)
            .filter(|_| start >= 0 && len > 0)
            .ok_or(ProducerIdAllocatorError::InvalidBlock { start, len })?;
        if start < self.high_water {
            return Err(ProducerIdAllocatorError::OverlappingBlock { start, len });
        }
        self.blocks.push_back(Block { next: start, end });
        self.high_water = end;
        Ok(())
    }

    // Named as the broker's InitProducerId handler expects; not an iterator because the
    // allocator refills after running dry.
    #[allow(clippy::should_implement_trait)]
    /// The next unused producer id, or `None` when every block is used up (the broker then
    /// answers InitProducerId with COORDINATOR_LOAD_IN_PROGRESS and requests a block).
    pub fn next(&mut self) -> Option<i64> {
        while let Some(block) = self.blocks.front_mut() {
            if block.next < block.end {
                let id = block.next;
                block.next += 1;
                return Some(id);
            }
            self.blocks.pop_front();
        }
        None
    }

    /// Ids left in all queued blocks.
    pub fn remaining(&self) -> i64 {
        self.blocks.iter().map(|b| b.end - b.next).sum()
    }

    /// Whether the broker should request the next block now: at most one block is queued and
    /// less than 10% of a block size remains.
    pub fn should_prefetch(&self) -> bool {
        self.blocks.len() <= 1
            && self.remaining() * 100 < PRODUCER_ID_BLOCK_SIZE * PREFETCH_REMAINING_PERCENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_allocator_has_nothing() {
        let mut allocator = ProducerIdAllocator::new();
        assert_eq!(allocator.next(), None);
        assert_eq!(allocator.remaining(), 0);
        assert!(allocator.should_prefetch());
    }

    #[test]
    fn hands_out_ids_in_order_across_blocks() {
        let mut allocator = ProducerIdAllocator::new();
        allocator.add_block(0, 3).unwrap();
        allocator.add_block(1000, 2).unwrap();
        let ids: Vec<i64> = std::iter::from_fn(|| allocator.next()).collect();
        assert_eq!(ids, vec![0, 1, 2, 1000, 1001]);
        assert_eq!(allocator.next(), None);
    }

    #[test]
    fn refuses_invalid_and_overlapping_blocks() {
        let mut allocator = ProducerIdAllocator::new();
        assert_eq!(
            allocator.add_block(-1, 10),
            Err(ProducerIdAllocatorError::InvalidBlock { start: -1, len: 10 })
        );
        assert_eq!(
            allocator.add_block(5, 0),
            Err(ProducerIdAllocatorError::InvalidBlock { start: 5, len: 0 })
        );
        assert_eq!(
            allocator.add_block(i64::MAX, 2),
            Err(ProducerIdAllocatorError::InvalidBlock {
                start: i64::MAX,
                len: 2
            })
        );
        allocator.add_block(1000, 1000).unwrap();
        assert_eq!(
            allocator.add_block(1500, 1000),
            Err(ProducerIdAllocatorError::OverlappingBlock {
                start: 1500,
                len: 1000
            })
        );
        // A block below one already used up is still refused: its ids may have been issued.
        while allocator.next().is_some() {}
        assert_eq!(
            allocator.add_block(0, 1000),
            Err(ProducerIdAllocatorError::OverlappingBlock {
                start: 0,
                len: 1000
            })
        );
        allocator.add_block(2000, 1000).unwrap();
        assert_eq!(allocator.next(), Some(2000));
    }

    #[test]
    fn prefetch_when_below_ten_percent() {
        let mut allocator = ProducerIdAllocator::new();
        allocator.add_block(0, PRODUCER_ID_BLOCK_SIZE).unwrap();
        for _ in 0..900 {
            assert!(!allocator.should_prefetch());
            allocator.next().unwrap();
        }
        assert_eq!(allocator.remaining(), 100);
        assert!(!allocator.should_prefetch());
        allocator.next().unwrap();
        assert!(allocator.should_prefetch());
        allocator.add_block(1000, PRODUCER_ID_BLOCK_SIZE).unwrap();
        assert!(!allocator.should_prefetch());
    }
}
