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
        // Kafka's rules live with the quota keys they name.
        super::client_quotas::alter(batch, entries, validate_only)
    }
}
