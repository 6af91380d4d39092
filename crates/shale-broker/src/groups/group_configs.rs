//! Where the group coordinator reads a group's dynamic configs (KIP-848's GROUP resource): the
//! current metadata image, at each call, so a change applies from a member's next heartbeat on
//! every broker, as on Kafka.
//!
//! A stored value outside this broker's `group.consumer.*` bounds (possible when the bounds
//! changed after the value was set, or when another controller with other bounds accepted it)
//! is capped to them, as Kafka 4.4's GroupConfig caps the effective value.

use std::sync::Arc;

use shale_group::{GroupConfigSource, GroupOverrides, ShareGroupOverrides};
use shale_metadata::group_config_defs::{
    share_group_overrides, ShareGroupConfigBounds, CONSUMER_HEARTBEAT_INTERVAL_MS,
    CONSUMER_SESSION_TIMEOUT_MS,
};
use shale_metadata::MetadataImage;
use tokio::sync::watch;

use crate::config::{ConsumerGroupSettings, ShareGroupSettings};

/// A group's overrides from the metadata image this broker follows.
pub struct ImageGroupConfigs {
    images: watch::Receiver<Arc<MetadataImage>>,
    session_timeout_ms_range: (i32, i32),
    heartbeat_interval_ms_range: (i32, i32),
    share_bounds: ShareGroupConfigBounds,
}

impl ImageGroupConfigs {
    /// `images`: the metadata node's image feed (`MetadataNode::subscribe`).
    pub fn new(
        images: watch::Receiver<Arc<MetadataImage>>,
        settings: &ConsumerGroupSettings,
        share: &ShareGroupSettings,
    ) -> Self {
        Self {
            images,
            share_bounds: share.group_config_bounds(),
            session_timeout_ms_range: (
                settings.session_timeout_ms_min,
                settings.session_timeout_ms_max,
            ),
            heartbeat_interval_ms_range: (
                settings.heartbeat_interval_ms_min,
                settings.heartbeat_interval_ms_max,
            ),
        }
    }
}

/// A stored value (checked by the controller when set, so it parses) capped to `(min, max)`.
fn capped(value: Option<&String>, (min, max): (i32, i32)) -> Option<i32> {
    value
        .and_then(|v| v.trim().parse::<i32>().ok())
        .map(|v| v.max(min).min(max))
}

impl GroupConfigSource for ImageGroupConfigs {
    fn overrides(&self, group_id: &str) -> GroupOverrides {
        // Hold the feed's lock only to take the image.
        let image = Arc::clone(&self.images.borrow());
        let configs = image.group_configs(group_id);
        GroupOverrides {
            consumer_session_timeout_ms: capped(
                configs.get(CONSUMER_SESSION_TIMEOUT_MS),
                self.session_timeout_ms_range,
            ),
            consumer_heartbeat_interval_ms: capped(
                configs.get(CONSUMER_HEARTBEAT_INTERVAL_MS),
                self.heartbeat_interval_ms_range,
            ),
            // Refused on the GROUP resource (group_config_defs.rs): the broker's value applies.
            consumer_assignment_interval_ms: None,
        }
    }

    fn share_overrides(&self, group_id: &str) -> ShareGroupOverrides {
        let image = Arc::clone(&self.images.borrow());
        let configs = image.group_configs(group_id);
        let overrides = share_group_overrides(configs, &self.share_bounds);
        ShareGroupOverrides {
            share_session_timeout_ms: overrides.session_timeout_ms,
            share_heartbeat_interval_ms: overrides.heartbeat_interval_ms,
            // Refused on the GROUP resource: the broker's value applies.
            share_assignment_interval_ms: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use shale_metadata::{ConfigResource, MetadataRecord};

    use super::*;

    fn share_settings() -> ShareGroupSettings {
        crate::config::BrokerConfig::from_properties(crate::config::StaticProperties::default())
            .map(|c| c.share_groups)
            .unwrap_or_else(|e| panic!("default config: {e}"))
    }

    #[test]
    fn share_overrides_are_capped_to_the_share_bounds() {
        let empty = MetadataImage::empty("c");
        let (_feed, images) = watch::channel(Arc::new(empty.clone()));
        let source = ImageGroupConfigs::new(images, &settings(), &share_settings());
        assert_eq!(source.share_overrides("g"), ShareGroupOverrides::default());
        let image = set(&empty, "g", "share.session.timeout.ms", Some("50000"));
        let image = set(&image, "g", "share.heartbeat.interval.ms", Some("999999"));
        let (_feed, images) = watch::channel(Arc::new(image));
        let source = ImageGroupConfigs::new(images, &settings(), &share_settings());
        let overrides = source.share_overrides("g");
        assert_eq!(overrides.share_session_timeout_ms, Some(50_000));
        // Above group.share.max.heartbeat.interval.ms (15000 by default): capped.
        assert_eq!(overrides.share_heartbeat_interval_ms, Some(15_000));
    }

    fn settings() -> ConsumerGroupSettings {
        ConsumerGroupSettings {
            session_timeout_ms: 45_000,
            session_timeout_ms_min: 10_000,
            session_timeout_ms_max: 60_000,
            heartbeat_interval_ms: 5_000,
            heartbeat_interval_ms_min: 1_000,
            heartbeat_interval_ms_max: 15_000,
            group_size_max: i32::MAX,
            assignment_interval_ms: 1_000,
            assignors: vec!["uniform".into()],
            migration_policy: shale_group::MigrationPolicy::Bidirectional,
        }
    }

    fn set(image: &MetadataImage, group: &str, name: &str, value: Option<&str>) -> MetadataImage {
        image.apply(
            &MetadataRecord::Config {
                resource: ConfigResource::Group(group.into()),
                name: name.into(),
                value: value.map(str::to_string),
            },
            image.offset + 1,
        )
    }

    #[test]
    fn overrides_follow_the_current_image() {
        let empty = MetadataImage::empty("c");
        let (feed, images) = watch::channel(Arc::new(empty.clone()));
        let source = ImageGroupConfigs::new(images, &settings(), &share_settings());
        assert_eq!(source.overrides("g"), GroupOverrides::default());

        let image = set(&empty, "g", CONSUMER_SESSION_TIMEOUT_MS, Some("20000"));
        let image = set(&image, "g", CONSUMER_HEARTBEAT_INTERVAL_MS, Some("2000"));
        feed.send_replace(Arc::new(image.clone()));
        assert_eq!(
            source.overrides("g"),
            GroupOverrides {
                consumer_session_timeout_ms: Some(20_000),
                consumer_heartbeat_interval_ms: Some(2_000),
                consumer_assignment_interval_ms: None,
            }
        );
        // Another group, and a topic of the same name, have none.
        assert_eq!(source.overrides("h"), GroupOverrides::default());

        let image = set(&image, "g", CONSUMER_HEARTBEAT_INTERVAL_MS, None);
        feed.send_replace(Arc::new(image));
        assert_eq!(
            source.overrides("g"),
            GroupOverrides {
                consumer_session_timeout_ms: Some(20_000),
                consumer_heartbeat_interval_ms: None,
                consumer_assignment_interval_ms: None,
            }
        );
    }

    #[test]
    fn values_outside_this_brokers_bounds_are_capped() {
        let empty = MetadataImage::empty("c");
        let image = set(&empty, "g", CONSUMER_SESSION_TIMEOUT_MS, Some("5000"));
        let image = set(&image, "g", CONSUMER_HEARTBEAT_INTERVAL_MS, Some("30000"));
        let (_feed, images) = watch::channel(Arc::new(image));
        let source = ImageGroupConfigs::new(images, &settings(), &share_settings());
        assert_eq!(
            source.overrides("g"),
            GroupOverrides {
                consumer_session_timeout_ms: Some(10_000),
                consumer_heartbeat_interval_ms: Some(15_000),
                consumer_assignment_interval_ms: None,
            }
        );
    }
}
