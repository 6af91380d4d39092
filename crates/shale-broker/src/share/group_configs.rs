//! A share group's dynamic configs (the GROUP resource: `share.auto.offset.reset`,
//! `share.record.lock.duration.ms`, `share.isolation.level`, `share.delivery.count.limit`,
//! `share.partition.max.record.locks`) over the broker's `group.share.*` defaults, read from
//! the current metadata image when a share-partition needs them. The controller checked each
//! stored value when it was set; one outside this broker's bounds is capped to them, as Kafka's
//! GroupConfig does.

use shale_metadata::MetadataImage;

use crate::config::ShareGroupSettings;

/// Where a share-partition without a persisted start offset begins (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    Earliest,
    Latest,
    /// The first offset whose timestamp is at or after now minus this many milliseconds.
    ByDurationMs(u64),
}

/// The effective share configs of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupConfigs {
    pub auto_offset_reset: AutoOffsetReset,
    pub record_lock_duration_ms: u64,
    pub read_committed: bool,
    pub delivery_count_limit: i16,
    pub partition_max_record_locks: usize,
}

pub fn share_group_configs(
    image: &MetadataImage,
    group_id: &str,
    settings: &ShareGroupSettings,
) -> ShareGroupConfigs {
    let configs = image.group_configs(group_id);
    let number = |key: &str| configs.get(key).and_then(|v| v.trim().parse::<i64>().ok());
    let record_lock_duration_ms = number("share.record.lock.duration.ms")
        .map(|v| {
            v.clamp(
                i64::from(settings.record_lock_duration_ms_min),
                i64::from(settings.record_lock_duration_ms_max),
            )
        })
        .unwrap_or(i64::from(settings.record_lock_duration_ms));
    let delivery_count_limit = number("share.delivery.count.limit")
        .map(|v| {
            v.clamp(
                i64::from(settings.delivery_count_limit_min),
                i64::from(settings.delivery_count_limit_max),
            )
        })
        .unwrap_or(i64::from(settings.delivery_count_limit));
    let delivery_count_limit = i16::try_from(delivery_count_limit).unwrap_or(i16::MAX);
    let partition_max_record_locks = number("share.partition.max.record.locks")
        .map(|v| {
            v.clamp(
                i64::from(settings.partition_max_record_locks_min),
                i64::from(settings.partition_max_record_locks_max),
            )
        })
        .unwrap_or(i64::from(settings.partition_max_record_locks));
    let partition_max_record_locks = usize::try_from(partition_max_record_locks).unwrap_or(0);
    ShareGroupConfigs {
        auto_offset_reset: configs
            .get("share.auto.offset.reset")
            .and_then(|v| parse_auto_offset_reset(v))
            .unwrap_or(AutoOffsetReset::Latest),
        record_lock_duration_ms: u64::try_from(record_lock_duration_ms).unwrap_or(0),
        read_committed: configs
            .get("share.isolation.level")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("read_committed")),
        delivery_count_limit,
        partition_max_record_locks,
    }
}

/// `earliest`, `latest` or `by_duration:<ISO-8601 duration>` (Kafka's ShareGroupAutoOffsetReset).
pub fn parse_auto_offset_reset(value: &str) -> Option<AutoOffsetReset> {
    let value = value.trim();
    match value.to_ascii_lowercase().as_str() {
        "earliest" => return Some(AutoOffsetReset::Earliest),
        "latest" => return Some(AutoOffsetReset::Latest),
        _ => {}
    }
    let duration = value
        .strip_prefix("by_duration:")
        .or_else(|| value.strip_prefix("BY_DURATION:"))?;
    parse_iso_duration_ms(duration).map(AutoOffsetReset::ByDurationMs)
}

/// Java's `Duration.parse` for the forms a reset duration takes (`PnDTnHnMn.nS`), in
/// milliseconds; negative durations are refused, as Kafka refuses them.
pub fn parse_iso_duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let rest = text.strip_prefix('P').or_else(|| text.strip_prefix('p'))?;
    let (days_part, time_part) = match rest.find(['T', 't']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut total_ms: u64 = 0;
    let mut any = false;
    if !days_part.is_empty() {
        let days = days_part
            .strip_suffix('D')
            .or_else(|| days_part.strip_suffix('d'))?;
        total_ms = total_ms.checked_add(days.parse::<u64>().ok()?.checked_mul(86_400_000)?)?;
        any = true;
    }
    if let Some(mut time) = time_part {
        if time.is_empty() {
            return None;
        }
        for (unit, ms) in [('H', 3_600_000f64), ('M', 60_000f64), ('S', 1_000f64)] {
            let lower = unit.to_ascii_lowercase();
            if let Some(i) = time.find([unit, lower]) {
                let number: f64 = time[..i].parse().ok()?;
                if number < 0.0 || !number.is_finite() {
                    return None;
                }
                total_ms = total_ms.checked_add((number * ms) as u64)?;
                time = &time[i + 1..];
                any = true;
            }
        }
        if !time.is_empty() {
            return None;
        }
    }
    any.then_some(total_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_parse_as_kafka_writes_them() {
        assert_eq!(
            parse_auto_offset_reset("earliest"),
            Some(AutoOffsetReset::Earliest)
        );
        assert_eq!(
            parse_auto_offset_reset("LATEST"),
            Some(AutoOffsetReset::Latest)
        );
        assert_eq!(
            parse_auto_offset_reset("by_duration:PT1H"),
            Some(AutoOffsetReset::ByDurationMs(3_600_000))
        );
        assert_eq!(
            parse_auto_offset_reset("by_duration:P1DT2M0.5S"),
            Some(AutoOffsetReset::ByDurationMs(86_400_000 + 120_000 + 500))
        );
        assert_eq!(parse_auto_offset_reset("by_duration:1H"), None);
        assert_eq!(parse_auto_offset_reset("by_duration:PT-1H"), None);
        assert_eq!(parse_auto_offset_reset("none"), None);
        assert_eq!(parse_iso_duration_ms("P"), None);
        assert_eq!(parse_iso_duration_ms("PT"), None);
    }
}
