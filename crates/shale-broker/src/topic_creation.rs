//! Topics the broker creates by itself: Metadata's automatic creation and the coordinators'
//! internal topics, both with the cluster defaults and through the controller.

use shale_metadata::{ControllerRequest, ControllerResponse, CreatableTopic, MetadataError};
use tracing::{info, warn};

use crate::controller_calls::submit_and_apply;
use crate::core::BrokerCore;

/// Creates topics with the cluster defaults (Metadata auto-creation). Failures are logged; the
/// Metadata answer then reports the topic as unknown, as Kafka does.
pub async fn auto_create(broker: &BrokerCore, names: Vec<String>) {
    let topics = names
        .into_iter()
        .map(CreatableTopic::with_defaults)
        .collect();
    match submit_and_apply(
        broker,
        ControllerRequest::CreateTopics {
            topics,
            validate_only: false,
        },
    )
    .await
    {
        Ok(ControllerResponse::CreateTopics(results)) => {
            for (name, r) in results {
                if let Err(e) = r {
                    if !matches!(e, MetadataError::TopicAlreadyExists(_)) {
                        warn!(topic = %name, "auto-creation failed: {e}");
                    }
                }
            }
        }
        Ok(other) => warn!("unexpected controller answer to auto-creation: {other:?}"),
        Err(e) => warn!("auto-creation failed: {e}"),
    }
}

/// Creates a coordinator's internal topic if it is missing. The replication factor is lowered
/// to the number of live brokers, with a warning, as Kafka does on small clusters; `configs`
/// gets the replication factor chosen.
pub async fn ensure_internal_topic(
    broker: &BrokerCore,
    name: &str,
    num_partitions: i32,
    replication_factor_key: &str,
    configured_replication_factor: i16,
    configs: impl FnOnce(i16) -> Vec<(String, Option<String>)>,
) {
    if broker.image().topic(name).is_some() {
        return;
    }
    let live_brokers = broker
        .image()
        .brokers()
        .filter(|b| b.is_active())
        .count()
        .max(1);
    let live_brokers = i16::try_from(live_brokers).unwrap_or(i16::MAX);
    let replication_factor = configured_replication_factor.min(live_brokers);
    if replication_factor < configured_replication_factor {
        warn!(
            configured = configured_replication_factor,
            live_brokers,
            "creating {name} with replication factor {replication_factor}: \
             fewer live brokers than {replication_factor_key}"
        );
    }
    let topic = CreatableTopic {
        name: name.to_owned(),
        num_partitions,
        replication_factor,
        assignments: Vec::new(),
        configs: configs(replication_factor),
    };
    let outcome = submit_and_apply(
        broker,
        ControllerRequest::CreateTopics {
            topics: vec![topic],
            validate_only: false,
        },
    )
    .await;
    match outcome {
        Ok(ControllerResponse::CreateTopics(results)) => {
            for (created, result) in results {
                match result {
                    Ok(_) => info!(topic = %created, "created internal topic"),
                    Err(MetadataError::TopicAlreadyExists(_)) => {}
                    Err(e) => warn!(topic = %created, "cannot create internal topic: {e}"),
                }
            }
        }
        Ok(other) => warn!("unexpected controller answer creating {name}: {other:?}"),
        Err(e) => warn!("cannot create {name}: {e}"),
    }
}
