//! AlterClientQuotas as Kafka 4.4's ClientQuotaControlManager decides it: per entity, the
//! entity's types and names first, then the combination of types (which names the keys that
//! are valid), then each key and value; the first failure is the entity's answer and none of
//! its changes is written. A key is written only when its value changes, and removing a key
//! that is not set writes nothing.
//!
//! The entity arrives as a map (type -> name, `None` for the default entity), sorted by type;
//! the broker collapses repeated types as Kafka's `AlterClientQuotasRequest.entries()` does.
//! An `ip` entity's name must be an IP literal: Shale resolves no host names (Kafka would
//! accept a resolvable one).

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::security::QuotaAlteration;
use super::Batch;
use crate::error::MetadataError;
use crate::image::QuotaEntity;
use crate::records::MetadataRecord;

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// The value type Kafka's `QuotaConfig` gives a quota key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueType {
    Long,
    Int,
    Double,
}

/// Keys of user, client-id and (user, client-id) entities.
const CLIENT_KEYS: &[(&str, ValueType)] = &[
    ("producer_byte_rate", ValueType::Long),
    ("consumer_byte_rate", ValueType::Long),
    ("request_percentage", ValueType::Double),
    ("controller_mutation_rate", ValueType::Double),
];

/// Keys of ip entities.
const IP_KEYS: &[(&str, ValueType)] = &[("connection_creation_rate", ValueType::Int)];

/// Kafka's `ClientQuotaEntity.toString()`: its entries as a Java map prints them. For the
/// types Kafka knows, the order of its HashMap is the alphabetical one (`client-id` before
/// `user`), which is how entities are kept here.
pub fn entity_text(entity: &QuotaEntity) -> String {
    let entries: Vec<String> = entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", entries.join(", "))
}

fn invalid(message: String) -> MetadataError {
    MetadataError::InvalidRequest(message)
}

/// The entity's types and names (Kafka's `validateEntity`).
fn validate_entity(entity: &QuotaEntity) -> Result<(), MetadataError> {
    if entity.is_empty() {
        return Err(invalid("Invalid empty client quota entity".into()));
    }
    for (entity_type, name) in entity {
        if !matches!(entity_type.as_str(), USER | CLIENT_ID | IP) {
            return Err(invalid(format!(
                "Unhandled client quota entity type: {entity_type}"
            )));
        }
        if name.as_deref() == Some("") {
            return Err(invalid(format!("Empty {entity_type} not supported")));
        }
    }
    Ok(())
}

/// The keys the entity's combination of types allows (Kafka's `configKeysForEntityType`).
fn keys_for(entity: &QuotaEntity) -> Result<&'static [(&'static str, ValueType)], MetadataError> {
    let has = |t: &str| entity.iter().any(|(et, _)| et == t);
    let (user, client, ip) = (has(USER), has(CLIENT_ID), has(IP));
    if ip {
        if user || client {
            return Err(invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                    .into(),
            ));
        }
        let name = entity
            .iter()
            .find(|(t, _)| t == IP)
            .and_then(|(_, n)| n.as_deref());
        if let Some(name) = name {
            if name.parse::<IpAddr>().is_err() {
                return Err(invalid(format!(
                    "{name} is not a valid IP or resolvable host."
                )));
            }
        }
        return Ok(IP_KEYS);
    }
    if user || client {
        Ok(CLIENT_KEYS)
    } else {
        Err(invalid("Invalid empty client quota entity".into()))
    }
}

/// One key's value (Kafka's `validateQuotaKeyValue`).
fn validate_value(keys: &[(&str, ValueType)], key: &str, value: f64) -> Result<(), MetadataError> {
    let Some((_, value_type)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(invalid(format!("Invalid configuration key {key}")));
    };
    if !value.is_finite() {
        return Err(invalid(format!("Quota {key} must be a finite number")));
    }
    if value <= 0.0 {
        return Err(invalid(format!("Quota {key} must be greater than 0")));
    }
    let integral = |max: f64, type_text: &str| {
        if value > max {
            Err(invalid(format!(
                "Proposed value for {key} is too large for {type_text}."
            )))
        } else if (value % 1.0).abs() > 1e-6 {
            Err(invalid(format!("{key} cannot be a fractional value.")))
        } else {
            Ok(())
        }
    };
    match value_type {
        ValueType::Double => Ok(()),
        ValueType::Int => integral(i32::MAX as f64, "an INT"),
        ValueType::Long => integral(i64::MAX as f64, "a LONG"),
    }
}

/// The records of one entity's changes, or why none is made.
fn alter_entity(
    current: Option<&BTreeMap<String, f64>>,
    entity: &QuotaEntity,
    ops: &[(String, Option<f64>)],
) -> Result<Vec<MetadataRecord>, MetadataError> {
    validate_entity(entity)?;
    let keys = keys_for(entity)?;
    let mut records = Vec::new();
    for (key, value) in ops {
        let now = current.and_then(|c| c.get(key)).copied();
        match value {
            None => {
                if now.is_some() {
                    records.push(MetadataRecord::ClientQuota {
                        entity: entity.clone(),
                        key: key.clone(),
                        value: None,
                    });
                }
            }
            Some(v) => {
                validate_value(keys, key, *v)?;
                if now != Some(*v) {
                    records.push(MetadataRecord::ClientQuota {
                        entity: entity.clone(),
                        key: key.clone(),
                        value: Some(*v),
                    });
                }
            }
        }
    }
    Ok(records)
}

/// The results per entity, in request order, one per distinct entity: a key named twice for
/// an entity, or an entity named twice in the request, makes that entity's answer "Ignoring
/// duplicate entity" (for the second naming the first one's changes stand, as in Kafka).
pub(crate) fn alter(
    batch: &mut Batch,
    entries: Vec<QuotaAlteration>,
    validate_only: bool,
) -> Vec<(QuotaEntity, Result<(), MetadataError>)> {
    let mut results: Vec<(QuotaEntity, Result<(), MetadataError>)> = Vec::new();
    for mut alteration in entries {
        alteration.entity.sort();
        let entity = alteration.entity;
        let mut seen_keys = std::collections::HashSet::new();
        let duplicate_key = alteration
            .ops
            .iter()
            .any(|(key, _)| !seen_keys.insert(key.as_str()));
        if duplicate_key || results.iter().any(|(e, _)| *e == entity) {
            let refusal = Err(invalid(format!(
                "Ignoring duplicate entity {}",
                entity_text(&entity)
            )));
            match results.iter_mut().find(|(e, _)| *e == entity) {
                Some(existing) => existing.1 = refusal,
                None => results.push((entity, refusal)),
            }
            continue;
        }
        let current = batch
            .image
            .client_quotas()
            .find(|(e, _)| **e == entity)
            .map(|(_, q)| q.clone());
        let outcome = alter_entity(current.as_ref(), &entity, &alteration.ops);
        let result = match outcome {
            Ok(records) => {
                if !validate_only {
                    for record in records {
                        batch.push(record);
                    }
                }
                Ok(())
            }
            Err(e) => Err(e),
        };
        results.push((entity, result));
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MetadataImage;

    fn entity(parts: &[(&str, Option<&str>)]) -> QuotaEntity {
        parts
            .iter()
            .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
            .collect()
    }

    fn alter_one(
        batch: &mut Batch,
        e: QuotaEntity,
        ops: &[(&str, Option<f64>)],
    ) -> Result<(), MetadataError> {
        let ops = ops.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let mut r = alter(batch, vec![QuotaAlteration { entity: e, ops }], false);
        r.remove(0).1
    }

    fn message(r: Result<(), MetadataError>) -> String {
        match r {
            Err(MetadataError::InvalidRequest(m)) => m,
            other => panic!("expected INVALID_REQUEST, got {other:?}"),
        }
    }

    #[test]
    fn kafkas_refusals_and_their_texts() {
        let mut b = Batch::new(&MetadataImage::empty("c"));
        let user = || entity(&[("user", Some("alice"))]);
        assert_eq!(
            message(alter_one(
                &mut b,
                entity(&[]),
                &[("producer_byte_rate", Some(1.0))]
            )),
            "Invalid empty client quota entity"
        );
        assert_eq!(
            message(alter_one(&mut b, entity(&[("group", Some("g"))]), &[])),
            "Unhandled client quota entity type: group"
        );
        assert_eq!(
            message(alter_one(&mut b, entity(&[("user", Some(""))]), &[])),
            "Empty user not supported"
        );
        assert_eq!(
            message(alter_one(&mut b, entity(&[("ip", Some("1.2.3.4")), ("user", None)]), &[])),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        );
        assert_eq!(
            message(alter_one(&mut b, entity(&[("ip", Some("not-an-ip"))]), &[])),
            "not-an-ip is not a valid IP or resolvable host."
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("connection_creation_rate", Some(1.0))]
            )),
            "Invalid configuration key connection_creation_rate"
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("producer_byte_rate", Some(-5.0))]
            )),
            "Quota producer_byte_rate must be greater than 0"
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("request_percentage", Some(0.0))]
            )),
            "Quota request_percentage must be greater than 0"
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("consumer_byte_rate", Some(f64::INFINITY))]
            )),
            "Quota consumer_byte_rate must be a finite number"
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("producer_byte_rate", Some(10.5))]
            )),
            "producer_byte_rate cannot be a fractional value."
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                user(),
                &[("producer_byte_rate", Some(1e19))]
            )),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert_eq!(
            message(alter_one(
                &mut b,
                entity(&[("ip", Some("10.0.0.1"))]),
                &[("connection_creation_rate", Some(3e9))]
            )),
            "Proposed value for connection_creation_rate is too large for an INT."
        );
        // A fractional double quota is fine; nothing was written by the refusals.
        assert!(b.records.is_empty());
        assert!(alter_one(&mut b, user(), &[("request_percentage", Some(12.5))]).is_ok());
        assert_eq!(b.records.len(), 1);
    }

    #[test]
    fn a_refused_key_drops_the_entitys_other_changes() {
        let mut b = Batch::new(&MetadataImage::empty("c"));
        let r = alter_one(
            &mut b,
            entity(&[("client-id", Some("x"))]),
            &[("producer_byte_rate", Some(1024.0)), ("bogus", Some(1.0))],
        );
        assert_eq!(message(r), "Invalid configuration key bogus");
        assert!(b.records.is_empty());
    }

    #[test]
    fn only_changes_are_written_and_removals_of_unset_keys_write_nothing() {
        let mut b = Batch::new(&MetadataImage::empty("c"));
        let e = || entity(&[("client-id", None), ("user", Some("bob"))]);
        assert!(alter_one(&mut b, e(), &[("consumer_byte_rate", None)]).is_ok());
        assert!(b.records.is_empty());
        assert!(alter_one(&mut b, e(), &[("consumer_byte_rate", Some(2048.0))]).is_ok());
        assert!(alter_one(&mut b, e(), &[("consumer_byte_rate", Some(2048.0))]).is_ok());
        assert_eq!(b.records.len(), 1);
        assert!(alter_one(&mut b, e(), &[("consumer_byte_rate", None)]).is_ok());
        assert_eq!(b.records.len(), 2);
        assert_eq!(b.image.client_quotas().count(), 0);
    }

    #[test]
    fn duplicates_answer_ignoring_duplicate_entity() {
        let mut b = Batch::new(&MetadataImage::empty("c"));
        let e = entity(&[("client-id", Some("x")), ("user", Some("u"))]);
        let ops = vec![
            ("producer_byte_rate".to_string(), Some(1.0)),
            ("producer_byte_rate".to_string(), Some(2.0)),
        ];
        let r = alter(
            &mut b,
            vec![QuotaAlteration {
                entity: e.clone(),
                ops,
            }],
            false,
        );
        assert_eq!(
            message(r[0].1.clone()),
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x, user=u})"
        );
        let once = QuotaAlteration {
            entity: e.clone(),
            ops: vec![("producer_byte_rate".to_string(), Some(1.0))],
        };
        let r = alter(&mut b, vec![once.clone(), once], false);
        assert_eq!(r.len(), 1);
        assert!(r[0].1.is_err());
        // The first naming's change stands, as in Kafka.
        assert_eq!(b.records.len(), 1);
    }

    #[test]
    fn validate_only_writes_nothing() {
        let mut b = Batch::new(&MetadataImage::empty("c"));
        let r = alter(
            &mut b,
            vec![QuotaAlteration {
                entity: entity(&[("user", None)]),
                ops: vec![("controller_mutation_rate".to_string(), Some(5.0))],
            }],
            true,
        );
        assert!(r[0].1.is_ok());
        assert!(b.records.is_empty());
    }
}
