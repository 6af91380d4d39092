//! DescribeClientQuotas, answered from this node's metadata image as Kafka's KRaft brokers
//! answer it (ClientQuotasImage.describe), and AlterClientQuotas, decided by the metadata
//! controller (Kafka's ClientQuotaControlManager rules, in shale-metadata) and answered once
//! this broker's image holds the change, so a Describe on the same broker right after sees it.
//! The quotas are enforced by `quotas/` and the connection.
//!
//! IP quotas (`connection_creation_rate` on an `ip` entity) are refused by name: Shale does
//! not throttle connection creation, and a quota it would not enforce is never stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::alter_client_quotas_response;
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_metadata::controller::QuotaAlteration;
use shale_metadata::image::QuotaEntity;
use shale_metadata::quota_filter::{describe_client_quotas, QuotaFilterComponent};
use shale_metadata::{ControllerRequest, ControllerResponse};

use crate::broker::Broker;
use crate::controller_calls::submit_and_apply;
use crate::errors::{metadata_error_code, quota_error, quota_filter_error_code, QuotaRefusal};
use crate::request::RequestContext;

/// The IP quota key Shale does not enforce.
const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

pub fn describe(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let components: Vec<QuotaFilterComponent> = request
        .components
        .iter()
        .map(|c| QuotaFilterComponent {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            name: c._match.as_ref().map(|m| m.to_string()),
        })
        .collect();
    let image = broker.image();
    match describe_client_quotas(&image, &components, request.strict) {
        Ok(matched) => DescribeClientQuotasResponse::default().with_entries(Some(
            matched
                .into_iter()
                .map(|(entity, values)| {
                    EntryData::default()
                        .with_entity(
                            entity
                                .iter()
                                .map(|(t, name)| {
                                    EntityData::default()
                                        .with_entity_type(s(t))
                                        .with_entity_name(name.as_deref().map(s))
                                })
                                .collect(),
                        )
                        .with_values(
                            values
                                .iter()
                                .map(|(k, v)| ValueData::default().with_key(s(k)).with_value(*v))
                                .collect(),
                        )
                })
                .collect(),
        )),
        Err(e) => DescribeClientQuotasResponse::default()
            .with_error_code(quota_filter_error_code(&e))
            .with_error_message(Some(s(&e.to_string())))
            .with_entries(None),
    }
}

/// An entry as Kafka's `AlterClientQuotasRequest.entries()` reads it: the entity a map (a
/// type named twice keeps its last name), a removal a key without value.
fn alteration(
    entry: &kafka_protocol::messages::alter_client_quotas_request::EntryData,
) -> QuotaAlteration {
    let mut entity: BTreeMap<String, Option<String>> = BTreeMap::new();
    for e in &entry.entity {
        entity.insert(
            e.entity_type.to_string(),
            e.entity_name.as_ref().map(|n| n.to_string()),
        );
    }
    QuotaAlteration {
        entity: entity.into_iter().collect(),
        ops: entry
            .ops
            .iter()
            .map(|op| (op.key.to_string(), (!op.remove).then_some(op.value)))
            .collect(),
    }
}

/// Why Shale refuses an alteration Kafka would pass to its controller.
fn shale_refusal(alteration: &QuotaAlteration) -> Option<QuotaRefusal> {
    let is_ip = alteration.entity.iter().any(|(t, _)| t == "ip");
    let sets_connection_rate = alteration
        .ops
        .iter()
        .any(|(k, v)| k == CONNECTION_CREATION_RATE && v.is_some());
    (is_ip && sets_connection_rate).then(|| {
        QuotaRefusal::InvalidRequest(format!(
            "{CONNECTION_CREATION_RATE} is not supported: Shale does not enforce IP connection \
             rate quotas"
        ))
    })
}

fn entry(
    entity: &QuotaEntity,
    outcome: Option<(i16, String)>,
) -> alter_client_quotas_response::EntryData {
    let (code, message) = outcome.map_or((0, None), |(c, m)| (c, Some(StrBytes::from_string(m))));
    alter_client_quotas_response::EntryData::default()
        .with_error_code(code)
        .with_error_message(message)
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    alter_client_quotas_response::EntityData::default()
                        .with_entity_type(s(t))
                        .with_entity_name(n.as_deref().map(s))
                })
                .collect(),
        )
}

pub async fn alter(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let mut refused = Vec::new();
    let mut to_controller = Vec::new();
    for e in &request.entries {
        let a = alteration(e);
        match shale_refusal(&a) {
            Some(refusal) => refused.push((a.entity, quota_error(&refusal))),
            None => to_controller.push(a),
        }
    }
    let mut entries: Vec<alter_client_quotas_response::EntryData> = refused
        .iter()
        .map(|(entity, outcome)| entry(entity, Some(outcome.clone())))
        .collect();
    if !to_controller.is_empty() {
        let entities: Vec<QuotaEntity> = to_controller.iter().map(|a| a.entity.clone()).collect();
        let answer = submit_and_apply(
            broker,
            ControllerRequest::AlterClientQuotas {
                entries: to_controller,
                validate_only: request.validate_only,
            },
        )
        .await;
        match answer {
            Ok(ControllerResponse::AlterClientQuotas(results)) => {
                for (entity, result) in results {
                    entries.push(entry(
                        &entity,
                        result.err().map(|e| metadata_error_code(&e)),
                    ));
                }
            }
            other => {
                let outcome = match other {
                    Err(e) => metadata_error_code(&e),
                    Ok(_) => quota_error(&QuotaRefusal::UnexpectedControllerAnswer),
                };
                for entity in &entities {
                    entries.push(entry(entity, Some(outcome.clone())));
                }
            }
        }
    }
    AlterClientQuotasResponse::default().with_entries(entries)
}
