//! A share group's effective settings for its share-partitions: the group's dynamic configs
//! (`share.auto.offset.reset`, `share.record.lock.duration.ms`, `share.isolation.level`,
//! `share.delivery.count.limit`, `share.partition.max.record.locks`,
//! `share.renew.acknowledge.enable`; shale-metadata's `share_group_overrides` reads and caps
//! them) over this broker's `group.share.*` values, from the current metadata image.

use shale_metadata::group_config_defs::{
    share_group_overrides, ShareAutoOffsetReset, ShareIsolationLevel,
};
use shale_metadata::MetadataImage;

use crate::config::ShareGroupSettings;

/// The effective share settings of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupConfigs {
    pub auto_offset_reset: ShareAutoOffsetReset,
    pub record_lock_duration_ms: u64,
    pub read_committed: bool,
    pub delivery_count_limit: i16,
    pub partition_max_record_locks: usize,
    pub renew_acknowledge_enabled: bool,
}

pub fn share_group_configs(
    image: &MetadataImage,
    group_id: &str,
    settings: &ShareGroupSettings,
) -> ShareGroupConfigs {
    let overrides = share_group_overrides(
        image.group_configs(group_id),
        &settings.group_config_bounds(),
    );
    let lock_ms = overrides
        .record_lock_duration_ms
        .unwrap_or(settings.record_lock_duration_ms);
    let delivery_limit = overrides
        .delivery_count_limit
        .unwrap_or(settings.delivery_count_limit);
    let record_locks = overrides
        .partition_max_record_locks
        .unwrap_or(settings.partition_max_record_locks);
    ShareGroupConfigs {
        auto_offset_reset: overrides.auto_offset_reset,
        record_lock_duration_ms: u64::try_from(lock_ms).unwrap_or(0),
        read_committed: overrides.isolation_level == ShareIsolationLevel::ReadCommitted,
        delivery_count_limit: i16::try_from(delivery_limit).unwrap_or(i16::MAX),
        partition_max_record_locks: usize::try_from(record_locks).unwrap_or(0),
        renew_acknowledge_enabled: overrides.renew_acknowledge_enabled,
    }
}
