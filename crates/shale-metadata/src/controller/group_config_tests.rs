//! Group configs (the GROUP resource) through IncrementalAlterConfigs and the legacy
//! AlterConfigs, with the answers Apache Kafka 4.4 gives for the same changes (seen with
//! compat-tests/harness/group_configs.py on a broker with the same bounds).

use super::*;
use crate::group_config_defs::{GroupConfigBounds, ShareGroupConfigBounds};
use crate::image::MetadataImage;

const SESSION: &str = "consumer.session.timeout.ms";
const HEARTBEAT: &str = "consumer.heartbeat.interval.ms";

struct Harness {
    controller: Controller,
    image: MetadataImage,
}

impl Harness {
    /// The bounds of the differential script's brokers.
    fn new() -> Self {
        let config = ControllerConfig {
            group_config_bounds: GroupConfigBounds {
                session_timeout_ms_min: 2_000,
                heartbeat_interval_ms: 3_000,
                heartbeat_interval_ms_min: 1_000,
                ..GroupConfigBounds::default()
            },
            share_group_config_bounds: ShareGroupConfigBounds {
                record_lock_duration_ms_min: 1_000,
                ..ShareGroupConfigBounds::default()
            },
            ..ControllerConfig::default()
        };
        Harness {
            controller: Controller::new(config, 42),
            image: MetadataImage::empty("cluster-a"),
        }
    }

    fn run(&mut self, request: ControllerRequest) -> Result<(), MetadataError> {
        let (response, records) = self.controller.handle(&self.image, request, 1_000);
        if !records.is_empty() {
            self.image = self.image.apply_entry(&records, self.image.offset + 1);
        }
        let ControllerResponse::AlterConfigs(mut results) = response else {
            panic!("unexpected answer {response:?}");
        };
        assert_eq!(results.len(), 1);
        results.remove(0).1
    }

    fn incremental(
        &mut self,
        group: &str,
        ops: &[(&str, AlterConfigOpType, Option<&str>)],
        validate_only: bool,
    ) -> Result<(), MetadataError> {
        let ops = ops
            .iter()
            .map(|(name, op, value)| AlterConfigOp {
                name: name.to_string(),
                op: *op,
                value: value.map(str::to_string),
            })
            .collect();
        self.run(ControllerRequest::IncrementalAlterConfigs {
            resources: vec![(ConfigResource::Group(group.into()), ops)],
            validate_only,
        })
    }

    fn set(&mut self, group: &str, pairs: &[(&str, &str)]) -> Result<(), MetadataError> {
        let ops: Vec<_> = pairs
            .iter()
            .map(|(k, v)| (*k, AlterConfigOpType::Set, Some(*v)))
            .collect();
        self.incremental(group, &ops, false)
    }

    fn configs(&self, group: &str) -> Vec<(String, String)> {
        self.image
            .configs(&ConfigResource::Group(group.into()))
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

fn invalid_config(message: &str) -> Result<(), MetadataError> {
    Err(MetadataError::InvalidConfig(message.into()))
}

#[test]
fn set_and_delete_on_a_group_that_does_not_exist() {
    let mut h = Harness::new();
    h.set("g1", &[(SESSION, "50000")]).unwrap();
    assert_eq!(
        h.configs("g1"),
        [(SESSION.to_string(), "50000".to_string())]
    );
    h.set("g2", &[(SESSION, "20000"), (HEARTBEAT, "2000")])
        .unwrap();
    assert_eq!(h.configs("g2").len(), 2);
    // Checked against the stored session timeout (20000), not the broker's.
    h.set("g2", &[(HEARTBEAT, "15000")]).unwrap();
    h.incremental("g1", &[(SESSION, AlterConfigOpType::Delete, None)], false)
        .unwrap();
    assert!(h.configs("g1").is_empty());
    // Deleting what is not set, even a key Kafka does not know, is no error (as Kafka).
    h.incremental("g1", &[(HEARTBEAT, AlterConfigOpType::Delete, None)], false)
        .unwrap();
    h.incremental("g1", &[("bogus", AlterConfigOpType::Delete, None)], false)
        .unwrap();
    h.incremental(
        "g1",
        &[(
            "streams.num.standby.replicas",
            AlterConfigOpType::Delete,
            None,
        )],
        false,
    )
    .unwrap();
}

#[test]
fn validate_only_checks_and_stores_nothing() {
    let mut h = Harness::new();
    h.incremental(
        "g",
        &[(HEARTBEAT, AlterConfigOpType::Set, Some("6000"))],
        true,
    )
    .unwrap();
    assert!(h.configs("g").is_empty());
    assert_eq!(
        h.incremental(
            "g",
            &[(HEARTBEAT, AlterConfigOpType::Set, Some("500"))],
            true
        ),
        invalid_config(
            "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive."
        )
    );
}

#[test]
fn refusals_as_kafka_answers_them() {
    let mut h = Harness::new();
    assert_eq!(
        h.set("g", &[("bogus", "1")]),
        invalid_config("Unknown group config name: bogus")
    );
    assert_eq!(
        h.set("g", &[(SESSION, "1000")]),
        invalid_config("consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.")
    );
    assert_eq!(
        h.set("g", &[(HEARTBEAT, "20000")]),
        invalid_config(
            "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive."
        )
    );
    assert_eq!(
        h.set("g", &[(SESSION, "2500")]),
        invalid_config(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        )
    );
    assert_eq!(
        h.incremental(
            "g",
            &[(SESSION, AlterConfigOpType::Append, Some("1"))],
            false
        ),
        invalid_config(
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
        )
    );
    assert_eq!(
        h.incremental("g", &[(SESSION, AlterConfigOpType::Set, None)], false),
        Err(MetadataError::InvalidRequest(
            "Null value not supported for : consumer.session.timeout.ms".into()
        ))
    );
    assert_eq!(
        h.set("g", &[(SESSION, "50000"), (SESSION, "51000")]),
        Err(MetadataError::InvalidRequest(
            "Error due to duplicate config keys".into()
        ))
    );
    assert_eq!(
        h.set("", &[(SESSION, "50000")]),
        Err(MetadataError::InvalidRequest(
            "Default group resources are not allowed.".into()
        ))
    );
    // One refused key refuses the resource's whole change.
    assert_eq!(
        h.set("g", &[(SESSION, "52000"), ("bogus", "1")]),
        invalid_config("Unknown group config name: bogus")
    );
    assert!(h.configs("g").is_empty());
}

#[test]
fn keys_shale_does_not_act_on_are_refused_never_stored() {
    let mut h = Harness::new();
    for (key, value) in [
        ("share.assignment.interval.ms", "1000"),
        ("consumer.assignment.interval.ms", "1000"),
        ("consumer.assignor.offload.enable", "false"),
        ("streams.num.standby.replicas", "0"),
        ("errors.deadletterqueue.topic.name", "dlq"),
    ] {
        let Err(MetadataError::InvalidConfig(message)) = h.set("g", &[(key, value)]) else {
            panic!("{key} accepted");
        };
        assert!(message.contains(key), "{message}");
        assert!(message.contains("Shale does not serve"), "{message}");
    }
    // A list key Shale does not serve is refused by name too, not as "not a list".
    let Err(MetadataError::InvalidConfig(message)) = h.incremental(
        "g",
        &[(
            "streams.rack.aware.assignment.tags",
            AlterConfigOpType::Append,
            Some("zone"),
        )],
        false,
    ) else {
        panic!("accepted");
    };
    assert!(
        message.contains("streams.rack.aware.assignment.tags"),
        "{message}"
    );
    assert!(h.configs("g").is_empty());
}

#[test]
fn legacy_alter_configs_replaces_a_groups_set() {
    // Kafka 4.4 accepts the legacy AlterConfigs on a GROUP resource.
    let mut h = Harness::new();
    h.set("g", &[(SESSION, "20000"), (HEARTBEAT, "2000")])
        .unwrap();
    h.run(ControllerRequest::AlterConfigs {
        resources: vec![(
            ConfigResource::Group("g".into()),
            vec![(SESSION.into(), Some("50000".into()))],
        )],
        validate_only: false,
    })
    .unwrap();
    assert_eq!(h.configs("g"), [(SESSION.to_string(), "50000".to_string())]);
    // Checked as a whole: the dropped heartbeat falls back to the broker's 3000.
    assert_eq!(
        h.run(ControllerRequest::AlterConfigs {
            resources: vec![(
                ConfigResource::Group("g".into()),
                vec![(SESSION.into(), Some("2500".into()))],
            )],
            validate_only: false,
        }),
        invalid_config(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        )
    );
}

#[test]
fn group_configs_are_apart_from_a_topic_of_the_same_name() {
    let mut h = Harness::new();
    h.set("orders", &[(SESSION, "50000")]).unwrap();
    assert!(h.image.topic_configs("orders").is_empty());
    assert!(h.image.all_configs().iter().any(|(resource, configs)| {
        *resource == ConfigResource::Group("orders".into()) && configs.len() == 1
    }));
}

#[test]
fn share_group_configs_are_checked_against_the_nodes_share_bounds_and_stored() {
    let mut h = Harness::new();
    h.set(
        "sg",
        &[
            ("share.auto.offset.reset", "earliest"),
            ("share.record.lock.duration.ms", "2000"),
            ("share.isolation.level", "read_committed"),
        ],
    )
    .unwrap();
    assert_eq!(
        h.configs("sg"),
        [
            (
                "share.auto.offset.reset".to_string(),
                "earliest".to_string()
            ),
            (
                "share.isolation.level".to_string(),
                "read_committed".to_string()
            ),
            (
                "share.record.lock.duration.ms".to_string(),
                "2000".to_string()
            ),
        ]
    );
    assert_eq!(
        h.set("sg", &[("share.record.lock.duration.ms", "70000")]),
        invalid_config(
            "share.record.lock.duration.ms must be in the range 1000 to 60000 inclusive."
        )
    );
    assert_eq!(
        h.set("sg", &[("share.auto.offset.reset", "by_duration:-PT1H")]),
        invalid_config(
            "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: \
             Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The \
             value must be either 'earliest', 'latest' or of the format \
             'by_duration:<PnDTnHnMn.nS>'."
        )
    );
    // A refused change leaves the stored set as it was.
    assert_eq!(h.configs("sg").len(), 3);
    h.incremental(
        "sg",
        &[("share.auto.offset.reset", AlterConfigOpType::Delete, None)],
        false,
    )
    .unwrap();
    assert_eq!(h.configs("sg").len(), 2);
}
