//! DescribeClientQuotas, answered from this node's metadata image as Kafka's KRaft brokers
//! answer it (ClientQuotasImage.describe). Shale does not enforce client quotas and serves no
//! AlterClientQuotas, so the image holds none and every valid filter matches nothing; the API
//! is served because Kafka's tools ask it before anything else about a user (`kafka-configs
//! --describe --entity-type users` reads quotas, then SCRAM credentials).

use std::sync::Arc;

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;
use shale_metadata::quota_filter::{describe_client_quotas, QuotaFilterComponent};

use crate::broker::Broker;
use crate::errors::quota_filter_error_code;
use crate::request::RequestContext;

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
