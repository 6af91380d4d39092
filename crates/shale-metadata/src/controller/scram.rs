//! AlterUserScramCredentials, as Kafka's ScramControlManager decides it: per user name at most
//! one alteration a request, validated against the credentials committed before it, all the
//! records of one request committed together.

use std::collections::HashMap;

use super::{Batch, Controller};
use crate::error::MetadataError;
use crate::records::MetadataRecord;

/// SCRAM mechanisms as Kafka numbers them (its `ScramMechanism.type()`).
pub const SCRAM_SHA_256: i8 = 1;
pub const SCRAM_SHA_512: i8 = 2;
/// Kafka's minimum for both mechanisms, for a new credential as for a login.
const SCRAM_ITERATIONS_MIN: i32 = 4096;
/// Kafka's ScramControlManager.MAX_ITERATIONS.
const SCRAM_ITERATIONS_MAX: i32 = 16384;

/// An upsertion with the keys already derived by the broker from the salted password the
/// client sent (stored key = H(HMAC(salted, "Client Key")), server key = HMAC(salted,
/// "Server Key")), so neither the password nor the salted password reaches the metadata log.
/// Empty keys say the broker could not derive them (an empty salted password): Kafka's
/// controller fails such an upsertion once it passed every other check.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramUpsertion {
    // The keys log in to nothing, but they are no one's business in a log line either.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramUpsertion")
            .field("name", &self.name)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramDeletion {
    pub name: String,
    pub mechanism: i8,
}

const DUPLICATE: &str = "A user credential cannot be altered twice in the same request";

fn validate_name_and_mechanism(name: &str, mechanism: i8) -> Result<(), MetadataError> {
    if name.is_empty() {
        return Err(MetadataError::UnacceptableCredential(
            "Username must not be empty".into(),
        ));
    }
    if mechanism != SCRAM_SHA_256 && mechanism != SCRAM_SHA_512 {
        return Err(MetadataError::UnsupportedSaslMechanism(
            "Unknown SCRAM mechanism".into(),
        ));
    }
    Ok(())
}

fn validate_upsertion(u: &ScramUpsertion) -> Result<(), MetadataError> {
    validate_name_and_mechanism(&u.name, u.mechanism)?;
    if u.iterations < SCRAM_ITERATIONS_MIN {
        return Err(MetadataError::UnacceptableCredential(
            "Too few iterations".into(),
        ));
    }
    if u.iterations > SCRAM_ITERATIONS_MAX {
        return Err(MetadataError::UnacceptableCredential(
            "Too many iterations".into(),
        ));
    }
    Ok(())
}

/// What became of each user name, kept in the order the request first named them.
#[derive(Default)]
struct Outcomes {
    order: Vec<String>,
    deletions: HashMap<String, ScramDeletion>,
    upsertions: HashMap<String, ScramUpsertion>,
    errors: HashMap<String, MetadataError>,
}

impl Outcomes {
    fn note(&mut self, name: &str) {
        if !self.order.iter().any(|n| n == name) {
            self.order.push(name.to_string());
        }
    }

    fn fail(&mut self, name: &str, error: MetadataError) {
        self.errors.insert(name.to_string(), error);
    }
}

impl Controller {
    /// Results per user name: the deletions and upsertions that succeeded, then the failures
    /// (Kafka's order; its clients match results by user).
    pub(crate) fn alter_scram(
        &mut self,
        batch: &mut Batch,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Vec<(String, Result<(), MetadataError>)> {
        let mut o = Outcomes::default();
        for d in deletions {
            o.note(&d.name);
            if o.errors.contains_key(&d.name) {
                continue;
            }
            if o.deletions.remove(&d.name).is_some() {
                o.fail(&d.name, MetadataError::DuplicateResource(DUPLICATE.into()));
                continue;
            }
            let checked = validate_name_and_mechanism(&d.name, d.mechanism).and_then(|()| {
                match batch.image.scram_credential(&d.name, d.mechanism) {
                    Some(_) => Ok(()),
                    None => Err(MetadataError::ResourceNotFound(
                        "Attempt to delete a user credential that does not exist".into(),
                    )),
                }
            });
            match checked {
                Ok(()) => {
                    o.deletions.insert(d.name.clone(), d);
                }
                Err(e) => o.fail(&d.name, e),
            }
        }
        for u in upsertions {
            o.note(&u.name);
            if o.errors.contains_key(&u.name) {
                continue;
            }
            let deleted = o.deletions.remove(&u.name).is_some();
            if deleted || o.upsertions.remove(&u.name).is_some() {
                o.fail(&u.name, MetadataError::DuplicateResource(DUPLICATE.into()));
                continue;
            }
            match validate_upsertion(&u) {
                Ok(()) => {
                    o.upsertions.insert(u.name.clone(), u);
                }
                Err(e) => o.fail(&u.name, e),
            }
        }

        let mut results = Vec::new();
        let order = std::mem::take(&mut o.order);
        for name in &order {
            if let Some(d) = o.deletions.remove(name) {
                batch.push(MetadataRecord::RemoveUserScramCredential {
                    name: d.name,
                    mechanism: d.mechanism,
                });
                results.push((name.clone(), Ok(())));
            }
        }
        for name in &order {
            let Some(u) = o.upsertions.remove(name) else {
                continue;
            };
            if u.stored_key.is_empty() || u.server_key.is_empty() {
                o.fail(name, MetadataError::EmptySaltedPassword);
                continue;
            }
            batch.push(MetadataRecord::UserScramCredential {
                name: u.name,
                mechanism: u.mechanism,
                salt: u.salt,
                stored_key: u.stored_key,
                server_key: u.server_key,
                iterations: u.iterations,
            });
            results.push((name.clone(), Ok(())));
        }
        for name in &order {
            if let Some(e) = o.errors.remove(name) {
                results.push((name.clone(), Err(e)));
            }
        }
        results
    }
}

#[cfg(test)]
#[path = "scram_tests.rs"]
mod tests;
