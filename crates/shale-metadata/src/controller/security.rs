//! CreateAcls, DeleteAcls, AlterUserScramCredentials and AlterClientQuotas.

use std::collections::{HashMap, HashSet};

use super::{Batch, Controller};
use crate::acl::{self, AclFilter};
use crate::error::MetadataError;
use crate::image::{AclEntry, QuotaEntity};
use crate::records::MetadataRecord;

/// SCRAM mechanisms as Kafka numbers them.
pub const SCRAM_SHA_256: i8 = 1;
pub const SCRAM_SHA_512: i8 = 2;
const SCRAM_ITERATIONS_MIN: i32 = 4096;
const SCRAM_ITERATIONS_MAX: i32 = 16384;

/// An upsertion with the keys already derived by the broker from the salted password
/// (stored key = H(HMAC(salted, "Client Key")), server key = HMAC(salted, "Server Key")).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramDeletion {
    pub name: String,
    pub mechanism: i8,
}

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

    /// Results per user name, as Kafka reports them.
    pub(crate) fn alter_scram(
        &mut self,
        batch: &mut Batch,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Vec<(String, Result<(), MetadataError>)> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for name in deletions
            .iter()
            .map(|d| d.name.as_str())
            .chain(upsertions.iter().map(|u| u.name.as_str()))
        {
            *counts.entry(name).or_default() += 1;
        }
        let duplicated: HashSet<String> = counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, _)| name.to_string())
            .collect();
        let mechanism_ok = |m: i8| {
            if m == SCRAM_SHA_256 || m == SCRAM_SHA_512 {
                Ok(())
            } else {
                Err(MetadataError::UnsupportedSaslMechanism(
                    "Unknown SCRAM mechanism".into(),
                ))
            }
        };
        let mut results = Vec::new();
        for d in deletions {
            let result = if duplicated.contains(&d.name) {
                Err(MetadataError::DuplicateResource(
                    "A user credential cannot be altered twice in the same request".into(),
                ))
            } else if d.name.is_empty() {
                Err(MetadataError::UnacceptableCredential(
                    "Username must not be empty".into(),
                ))
            } else {
                mechanism_ok(d.mechanism).and_then(|_| {
                    if batch.image.scram_credential(&d.name, d.mechanism).is_none() {
                        return Err(MetadataError::ResourceNotFound(
                            "Attempt to delete a user credential that does not exist".into(),
                        ));
                    }
                    batch.push(MetadataRecord::RemoveUserScramCredential {
                        name: d.name.clone(),
                        mechanism: d.mechanism,
                    });
                    Ok(())
                })
            };
            results.push((d.name, result));
        }
        for u in upsertions {
            let result = if duplicated.contains(&u.name) {
                Err(MetadataError::DuplicateResource(
                    "A user credential cannot be altered twice in the same request".into(),
                ))
            } else if u.name.is_empty() {
                Err(MetadataError::UnacceptableCredential(
                    "Username must not be empty".into(),
                ))
            } else {
                mechanism_ok(u.mechanism).and_then(|_| {
                    if !(SCRAM_ITERATIONS_MIN..=SCRAM_ITERATIONS_MAX).contains(&u.iterations) {
                        return Err(MetadataError::UnacceptableCredential(format!(
                            "Iterations {} is less than the minimum {SCRAM_ITERATIONS_MIN} or \
                             more than the maximum {SCRAM_ITERATIONS_MAX}",
                            u.iterations
                        )));
                    }
                    if u.salt.is_empty() || u.stored_key.is_empty() || u.server_key.is_empty() {
                        return Err(MetadataError::UnacceptableCredential(
                            "Salt and keys must not be empty".into(),
                        ));
                    }
                    batch.push(MetadataRecord::UserScramCredential {
                        name: u.name.clone(),
                        mechanism: u.mechanism,
                        salt: u.salt.clone(),
                        stored_key: u.stored_key.clone(),
                        server_key: u.server_key.clone(),
                        iterations: u.iterations,
                    });
                    Ok(())
                })
            };
            results.push((u.name, result));
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
