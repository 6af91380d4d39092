//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), as Kafka's AclApis answers them:
//! the cluster check is the route's (`api_table.rs`); without an authorizer every answer is
//! SECURITY_DISABLED; creations and deletions go to the controller, which writes the ACL
//! records every broker's authorizer then reads from its image.
//!
//! A request naming the UNKNOWN (0) resource type, pattern type, operation or permission
//! type closes the connection, as Kafka's request parsing refuses it; any other code Kafka
//! does not know reads as UNKNOWN and is answered INVALID_REQUEST.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_metadata::acl::{resource_type, AclFilter};
use shale_metadata::image::AclEntry;
use shale_metadata::{ControllerRequest, ControllerResponse, MetadataError};
use shale_protocol::Response;
use uuid::Uuid;

use crate::authorization::CLUSTER_NAME;
use crate::broker::Broker;
use crate::controller_calls::submit_and_apply;
use crate::errors::{metadata_error_code, security_disabled_code, unknown_server_error_code};
use crate::request::HandlerError;

/// Kafka's UNKNOWN code of every ACL enum.
const UNKNOWN: i8 = 0;
const NO_AUTHORIZER: &str = "No Authorizer is configured.";
const NO_AUTHORIZER_ON_BROKER: &str = "No Authorizer is configured on the broker";

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn closes(reason: &'static str) -> Result<Option<Response>, HandlerError> {
    Err(HandlerError::Malformed(reason))
}

/// Whether Kafka's request parsing refuses the request (an UNKNOWN element): checked before
/// anything else, the authorization included, as Kafka parses before it authorizes.
pub fn create_is_malformed(request: &CreateAclsRequest) -> bool {
    request.creations.iter().any(|c| {
        [
            c.resource_type,
            c.resource_pattern_type,
            c.operation,
            c.permission_type,
        ]
        .contains(&UNKNOWN)
    })
}

pub fn describe_is_malformed(request: &DescribeAclsRequest) -> bool {
    [
        request.resource_type_filter,
        request.pattern_type_filter,
        request.operation,
        request.permission_type,
    ]
    .contains(&UNKNOWN)
}

pub fn delete_is_malformed(request: &DeleteAclsRequest) -> bool {
    request.filters.iter().any(|f| {
        [
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        ]
        .contains(&UNKNOWN)
    })
}

/// The answer of a request its cluster check refused: closed when malformed, else `refusal`.
pub fn refused(
    malformed: bool,
    refusal: impl Into<kafka_protocol::messages::ResponseKind>,
) -> Result<Option<Response>, HandlerError> {
    if malformed {
        return closes("an ACL request names an UNKNOWN element");
    }
    answer(refusal)
}

fn answer(
    response: impl Into<kafka_protocol::messages::ResponseKind>,
) -> Result<Option<Response>, HandlerError> {
    Ok(Some(Response::Kafka(response.into())))
}

pub async fn create_acls(
    broker: &Arc<Broker>,
    request: CreateAclsRequest,
) -> Result<Option<Response>, HandlerError> {
    if create_is_malformed(&request) {
        return closes("CreateAcls names an UNKNOWN element");
    }
    if !broker.has_authorizer() {
        let result = AclCreationResult::default()
            .with_error_code(security_disabled_code())
            .with_error_message(Some(text(NO_AUTHORIZER)));
        return answer(
            CreateAclsResponse::default().with_results(vec![result; request.creations.len()]),
        );
    }
    // Kafka cannot even build a binding naming ANY (a resource type, operation or permission)
    // or MATCH/ANY (a pattern): the exception fails the whole request, every creation
    // answered UNKNOWN_SERVER_ERROR with its message.
    if let Some(message) = request.creations.iter().find_map(unbuildable) {
        let result = AclCreationResult::default()
            .with_error_code(unknown_server_error_code())
            .with_error_message(Some(text(message)));
        return answer(
            CreateAclsResponse::default().with_results(vec![result; request.creations.len()]),
        );
    }
    // The broker's own checks (Kafka's AclApis), then the controller's.
    let mut results: Vec<Option<Result<(), MetadataError>>> = Vec::new();
    let mut to_create = Vec::new();
    for c in &request.creations {
        let refusal = if c.resource_type == resource_type::CLUSTER
            && c.resource_name.as_str() != CLUSTER_NAME
        {
            Some(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ))
        } else if c.resource_name.is_empty() {
            Some("Invalid empty resource name".to_string())
        } else {
            None
        };
        match refusal {
            Some(message) => results.push(Some(Err(MetadataError::InvalidRequest(message)))),
            None => {
                results.push(None);
                to_create.push(AclEntry {
                    id: Uuid::nil(),
                    resource_type: c.resource_type,
                    resource_name: c.resource_name.to_string(),
                    pattern_type: c.resource_pattern_type,
                    principal: c.principal.to_string(),
                    host: c.host.to_string(),
                    operation: c.operation,
                    permission_type: c.permission_type,
                });
            }
        }
    }
    let count = to_create.len();
    let mut created = if to_create.is_empty() {
        Vec::new()
    } else {
        match submit_and_apply(
            broker,
            ControllerRequest::CreateAcls {
                creations: to_create,
            },
        )
        .await
        {
            Ok(ControllerResponse::CreateAcls(r)) if r.len() == count => r,
            Ok(_) => vec![Err(MetadataError::NotController); count],
            Err(e) => vec![Err(e); count],
        }
    }
    .into_iter();
    let results = results
        .into_iter()
        .map(|r| {
            let outcome = r.or_else(|| created.next()).unwrap_or(Ok(()));
            match outcome {
                Ok(()) => AclCreationResult::default(),
                Err(e) => {
                    let (code, message) = metadata_error_code(&e);
                    AclCreationResult::default()
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            }
        })
        .collect();
    answer(CreateAclsResponse::default().with_results(results))
}

/// Why Kafka's ResourcePattern or AccessControlEntry constructor refuses a creation's values.
fn unbuildable(
    c: &kafka_protocol::messages::create_acls_request::AclCreation,
) -> Option<&'static str> {
    use shale_metadata::acl::{operation, pattern_type, permission_type};
    if c.resource_type == resource_type::ANY {
        Some("resourceType must not be ANY")
    } else if c.resource_pattern_type == pattern_type::ANY
        || c.resource_pattern_type == pattern_type::MATCH
    {
        Some("patternType must not be ANY or MATCH")
    } else if c.operation == operation::ANY {
        Some("operation must not be ANY")
    } else if c.permission_type == permission_type::ANY {
        Some("permissionType must not be ANY")
    } else {
        None
    }
}

pub fn describe_acls(
    broker: &Arc<Broker>,
    request: DescribeAclsRequest,
) -> Result<Option<Response>, HandlerError> {
    if describe_is_malformed(&request) {
        return closes("DescribeAcls names an UNKNOWN element");
    }
    if !broker.has_authorizer() {
        return answer(
            DescribeAclsResponse::default()
                .with_error_code(security_disabled_code())
                .with_error_message(Some(text(NO_AUTHORIZER_ON_BROKER))),
        );
    }
    let filter = AclFilter {
        resource_type: request.resource_type_filter,
        resource_name: request.resource_name_filter.map(|n| n.to_string()),
        pattern_type: request.pattern_type_filter,
        principal: request.principal_filter.map(|p| p.to_string()),
        host: request.host_filter.map(|h| h.to_string()),
        operation: request.operation,
        permission_type: request.permission_type,
    };
    let image = broker.image();
    answer(
        DescribeAclsResponse::default()
            .with_resources(by_resource(image.acls().filter(|a| filter.matches(a)))),
    )
}

/// ACLs grouped by their resource pattern, as DescribeAcls answers them.
fn by_resource<'a>(acls: impl Iterator<Item = &'a AclEntry>) -> Vec<DescribeAclsResource> {
    let mut grouped: BTreeMap<(i8, &str, i8), Vec<AclDescription>> = BTreeMap::new();
    for a in acls {
        grouped
            .entry((a.resource_type, a.resource_name.as_str(), a.pattern_type))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(text(&a.principal))
                    .with_host(text(&a.host))
                    .with_operation(a.operation)
                    .with_permission_type(a.permission_type),
            );
    }
    grouped
        .into_iter()
        .map(|((rt, name, pattern), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(rt)
                .with_resource_name(text(name))
                .with_pattern_type(pattern)
                .with_acls(acls)
        })
        .collect()
}

/// Kafka's AclControlManager.validateFilter: which half of a filter is unknown.
fn unknown_part(filter: &AclFilter) -> Option<&'static str> {
    use shale_metadata::acl::{operation, pattern_type, permission_type};
    let known = |code: i8, max: i8| (1..=max).contains(&code);
    if !known(filter.resource_type, resource_type::USER)
        || !known(filter.pattern_type, pattern_type::PREFIXED)
    {
        Some("Unknown patternFilter.")
    } else if !known(filter.operation, operation::MAX)
        || !known(filter.permission_type, permission_type::ALLOW)
    {
        Some("Unknown entryFilter.")
    } else {
        None
    }
}

pub async fn delete_acls(
    broker: &Arc<Broker>,
    request: DeleteAclsRequest,
) -> Result<Option<Response>, HandlerError> {
    if delete_is_malformed(&request) {
        return closes("DeleteAcls names an UNKNOWN element");
    }
    if !broker.has_authorizer() {
        let result = DeleteAclsFilterResult::default()
            .with_error_code(security_disabled_code())
            .with_error_message(Some(text(NO_AUTHORIZER)));
        return answer(
            DeleteAclsResponse::default().with_filter_results(vec![result; request.filters.len()]),
        );
    }
    let filters: Vec<AclFilter> = request
        .filters
        .into_iter()
        .map(|f| AclFilter {
            resource_type: f.resource_type_filter,
            resource_name: f.resource_name_filter.map(|n| n.to_string()),
            pattern_type: f.pattern_type_filter,
            principal: f.principal_filter.map(|p| p.to_string()),
            host: f.host_filter.map(|h| h.to_string()),
            operation: f.operation,
            permission_type: f.permission_type,
        })
        .collect();
    let valid: Vec<AclFilter> = filters
        .iter()
        .filter(|f| unknown_part(f).is_none())
        .cloned()
        .collect();
    let count = valid.len();
    let mut deleted = if valid.is_empty() {
        Vec::new()
    } else {
        match submit_and_apply(broker, ControllerRequest::DeleteAcls { filters: valid }).await {
            Ok(ControllerResponse::DeleteAcls(r)) if r.len() == count => r,
            Ok(_) => vec![Err(MetadataError::NotController); count],
            Err(e) => vec![Err(e); count],
        }
    }
    .into_iter();
    let results = filters
        .iter()
        .map(|f| {
            let outcome = match unknown_part(f) {
                Some(reason) => Err(MetadataError::InvalidRequest(reason.to_string())),
                None => deleted.next().unwrap_or(Ok(Vec::new())),
            };
            match outcome {
                Ok(acls) => DeleteAclsFilterResult::default().with_matching_acls(
                    acls.iter()
                        .map(|a| {
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(a.resource_type)
                                .with_resource_name(text(&a.resource_name))
                                .with_pattern_type(a.pattern_type)
                                .with_principal(text(&a.principal))
                                .with_host(text(&a.host))
                                .with_operation(a.operation)
                                .with_permission_type(a.permission_type)
                        })
                        .collect(),
                ),
                Err(e) => {
                    let (code, message) = metadata_error_code(&e);
                    DeleteAclsFilterResult::default()
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            }
        })
        .collect();
    answer(DeleteAclsResponse::default().with_filter_results(results))
}
