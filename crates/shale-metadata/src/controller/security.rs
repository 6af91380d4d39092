//! CreateAcls, DeleteAcls and AlterClientQuotas (AlterUserScramCredentials: `scram.rs`).

use std::collections::HashSet;

use super::{Batch, Controller};
use crate::acl::{self, AclFilter};
use crate::error::MetadataError;
use crate::image::{AclEntry, QuotaEntity};
use crate::records::MetadataRecord;

/// One AlterClientQuotas entry: the entity and (key, value; `None` removes the key).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaAlteration {
    pub entity: QuotaEntity,
    pub ops: Vec<(String, Option<f64>)>,
}

const QUOTA_KEYS: &[&str] = &[
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
];
const IP_QUOTA_KEYS: &[&str] = &["connection_creation_rate"];

fn validate_quota(alteration: &QuotaAlteration) -> Result<(), MetadataError> {
    let bad = |m: String| Err(MetadataError::InvalidRequest(m));
    let mut types = HashSet::new();
    for (entity_type, _) in &alteration.entity {
        if !matches!(entity_type.as_str(), "user" | "client-id" | "ip") {
            return bad(format!("Unhandled client quota entity type: {entity_type}"));
        }
        if !types.insert(entity_type.as_str()) {
            return bad(format!(
                "Duplicate {entity_type} entity in the quota entity"
            ));
        }
    }
    let is_ip = types.contains("ip");
    if types.is_empty() || (is_ip && types.len() > 1) {
        return bad("Invalid quota entity combination".into());
    }
    for (key, value) in &alteration.ops {
        let allowed = if is_ip { IP_QUOTA_KEYS } else { QUOTA_KEYS };
        if !allowed.contains(&key.as_str()) {
            return bad(format!("Invalid configuration key {key}"));
        }
        if value.is_some_and(|v| !v.is_finite() || v <= 0.0) {
            return bad(format!("Illegal value for {key}: must be positive"));
        }
    }
    Ok(())
}

impl Controller {
    pub(crate) fn create_acls(
        &mut self,
        batch: &mut Batch,
        creations: Vec<AclEntry>,
    ) -> Vec<Result<(), MetadataError>> {
        creations
            .into_iter()
            .map(|mut acl| {
                acl::validate_binding(&acl).map_err(MetadataError::InvalidRequest)?;
                let exists = batch.image.acls().any(|a| {
                    a.resource_type == acl.resource_type
                        && a.resource_name == acl.resource_name
                        && a.pattern_type == acl.pattern_type
                        && a.principal == acl.principal
                        && a.host == acl.host
                        && a.operation == acl.operation
                        && a.permission_type == acl.permission_type
                });
                if !exists {
                    acl.id = self.rng.topic_id();
                    batch.push(MetadataRecord::AccessControlEntry {
                        id: acl.id,
                        resource_type: acl.resource_type,
                        resource_name: acl.resource_name,
                        pattern_type: acl.pattern_type,
                        principal: acl.principal,
                        host: acl.host,
                        operation: acl.operation,
                        permission_type: acl.permission_type,
                    });
                }
                Ok(())
            })
            .collect()
    }

    /// Per filter, the ACLs it deleted.
    pub(crate) fn delete_acls(
        &mut self,
        batch: &mut Batch,
        filters: Vec<AclFilter>,
    ) -> Vec<Result<Vec<AclEntry>, MetadataError>> {
        let mut deleted = HashSet::new();
        let results: Vec<Result<Vec<AclEntry>, MetadataError>> = filters
            .iter()
            .map(|filter| {
                let matched: Vec<AclEntry> = batch
                    .image
                    .acls()
                    .filter(|a| filter.matches(a))
                    .cloned()
                    .collect();
                for a in &matched {
                    deleted.insert(a.id);
                }
                Ok(matched)
            })
            .collect();
        let mut ids: Vec<_> = deleted.into_iter().collect();
        ids.sort();
        for id in ids {
            batch.push(MetadataRecord::RemoveAccessControlEntry { id });
        }
        results
    }

    pub(crate) fn alter_client_quotas(
        &mut self,
        batch: &mut Batch,
        entries: Vec<QuotaAlteration>,
        validate_only: bool,
    ) -> Vec<(QuotaEntity, Result<(), MetadataError>)> {
        entries
            .into_iter()
            .map(|mut alteration| {
                alteration.entity.sort();
                let result = validate_quota(&alteration);
                if result.is_ok() && !validate_only {
                    for (key, value) in &alteration.ops {
                        batch.push(MetadataRecord::ClientQuota {
                            entity: alteration.entity.clone(),
                            key: key.clone(),
                            value: *value,
                        });
                    }
                }
                (alteration.entity, result)
            })
            .collect()
    }
}
