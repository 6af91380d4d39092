//! DescribeClientQuotas' filter over the image's client quotas, as Kafka's
//! ClientQuotasImage.describe reads it: components by entity type, each matching an exact name,
//! the default entity, or any entity of that type; `strict` keeps only entities of exactly the
//! filtered types.

use std::collections::{BTreeMap, HashMap, HashSet};

use thiserror::Error;

use crate::image::{MetadataImage, QuotaEntity};

/// Kafka's match types (DescribeClientQuotasRequest.MATCH_TYPE_*).
pub const MATCH_TYPE_EXACT: i8 = 0;
pub const MATCH_TYPE_DEFAULT: i8 = 1;
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

const ENTITY_TYPES: [&str; 3] = ["user", "client-id", "ip"];

/// One filter component of a DescribeClientQuotas request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaFilterComponent {
    pub entity_type: String,
    pub match_type: i8,
    /// The name to match, for MATCH_TYPE_EXACT only.
    pub name: Option<String>,
}

/// Why a filter is refused; the texts are Kafka's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuotaFilterError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("Unsupported entity type {0}")]
    UnsupportedEntityType(String),
}

/// What a request's components ask for: exact names (`None`: the default entity) and types
/// matched with any name.
struct Filter {
    exact: HashMap<String, Option<String>>,
    any_name: HashSet<String>,
}

fn parse(components: &[QuotaFilterComponent]) -> Result<Filter, QuotaFilterError> {
    let invalid = |m: &str| Err(QuotaFilterError::InvalidRequest(m.to_string()));
    let mut filter = Filter {
        exact: HashMap::new(),
        any_name: HashSet::new(),
    };
    for c in components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return invalid("Invalid empty entity type.");
        }
        if filter.exact.contains_key(t) || filter.any_name.contains(t) {
            return Err(QuotaFilterError::InvalidRequest(format!(
                "Entity type {t} cannot appear more than once in the filter."
            )));
        }
        if !ENTITY_TYPES.contains(&t) {
            return Err(QuotaFilterError::UnsupportedEntityType(t.to_string()));
        }
        match (c.match_type, &c.name) {
            (MATCH_TYPE_EXACT, None) => {
                return invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            }
            (MATCH_TYPE_EXACT, Some(name)) => {
                filter.exact.insert(t.to_string(), Some(name.clone()));
            }
            (MATCH_TYPE_DEFAULT, Some(_)) => {
                return invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            }
            (MATCH_TYPE_DEFAULT, None) => {
                filter.exact.insert(t.to_string(), None);
            }
            (MATCH_TYPE_SPECIFIED, Some(_)) => {
                return invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            }
            (MATCH_TYPE_SPECIFIED, None) => {
                filter.any_name.insert(t.to_string());
            }
            (other, _) => {
                return Err(QuotaFilterError::InvalidRequest(format!(
                    "Unknown match type {other}"
                )))
            }
        }
    }
    let named = |t: &str| filter.exact.contains_key(t) || filter.any_name.contains(t);
    if named("ip") && (named("user") || named("client-id")) {
        return invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component.",
        );
    }
    Ok(filter)
}

/// An entity and its quota values (key -> value).
pub type QuotaMatch<'a> = (&'a QuotaEntity, &'a BTreeMap<String, f64>);

/// The entities the filter matches, with their quotas, in the image's order.
pub fn describe_client_quotas<'a>(
    image: &'a MetadataImage,
    components: &[QuotaFilterComponent],
    strict: bool,
) -> Result<Vec<QuotaMatch<'a>>, QuotaFilterError> {
    let filter = parse(components)?;
    if filter.exact.is_empty() && filter.any_name.is_empty() {
        // No component: every entity, unless strict (which then matches none).
        return Ok(if strict {
            Vec::new()
        } else {
            image.client_quotas().collect()
        });
    }
    let holds = |entity: &QuotaEntity, t: &str, name: &Option<String>| {
        entity.iter().any(|(et, en)| et == t && en == name)
    };
    let has_type = |entity: &QuotaEntity, t: &str| entity.iter().any(|(et, _)| et == t);
    let wanted_len = filter.exact.len() + filter.any_name.len();
    Ok(image
        .client_quotas()
        .filter(|(entity, _)| {
            filter.exact.iter().all(|(t, name)| holds(entity, t, name))
                && filter.any_name.iter().all(|t| has_type(entity, t))
                && (!strict || entity.len() == wanted_len)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::MetadataRecord;

    fn image() -> MetadataImage {
        let mut image = MetadataImage::empty("c");
        type Entity<'a> = &'a [(&'a str, Option<&'a str>)];
        let quotas: [(Entity, f64); 4] = [
            (&[("user", Some("alice"))], 1.0),
            (&[("user", Some("alice")), ("client-id", Some("app"))], 2.0),
            (&[("user", None)], 3.0),
            (&[("ip", Some("10.0.0.1"))], 4.0),
        ];
        for (entity, value) in quotas {
            image.replay(&MetadataRecord::ClientQuota {
                entity: entity
                    .iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect(),
                key: "producer_byte_rate".into(),
                value: Some(value),
            });
        }
        image
    }

    fn component(t: &str, match_type: i8, name: Option<&str>) -> QuotaFilterComponent {
        QuotaFilterComponent {
            entity_type: t.into(),
            match_type,
            name: name.map(str::to_string),
        }
    }

    fn values(components: &[QuotaFilterComponent], strict: bool) -> Vec<f64> {
        let image = image();
        let mut out: Vec<f64> = describe_client_quotas(&image, components, strict)
            .unwrap()
            .into_iter()
            .map(|(_, v)| v["producer_byte_rate"])
            .collect();
        out.sort_by(f64::total_cmp);
        out
    }

    #[test]
    fn components_match_as_in_kafka() {
        let alice = component("user", MATCH_TYPE_EXACT, Some("alice"));
        assert_eq!(values(&[], false), vec![1.0, 2.0, 3.0, 4.0]);
        assert!(values(&[], true).is_empty());
        assert_eq!(values(std::slice::from_ref(&alice), false), vec![1.0, 2.0]);
        assert_eq!(values(std::slice::from_ref(&alice), true), vec![1.0]);
        assert_eq!(
            values(&[component("user", MATCH_TYPE_DEFAULT, None)], false),
            vec![3.0]
        );
        assert_eq!(
            values(&[component("user", MATCH_TYPE_SPECIFIED, None)], true),
            vec![1.0, 3.0]
        );
        assert_eq!(
            values(
                &[alice, component("client-id", MATCH_TYPE_SPECIFIED, None)],
                true
            ),
            vec![2.0]
        );
        assert_eq!(
            values(
                &[component("ip", MATCH_TYPE_EXACT, Some("10.0.0.1"))],
                false
            ),
            vec![4.0]
        );
    }

    #[test]
    fn malformed_filters_are_refused_with_kafkas_texts() {
        let image = image();
        let refusal = |components: &[QuotaFilterComponent]| {
            describe_client_quotas(&image, components, false).unwrap_err()
        };
        let invalid = |m: &str| QuotaFilterError::InvalidRequest(m.to_string());
        assert_eq!(
            refusal(&[component("", MATCH_TYPE_SPECIFIED, None)]),
            invalid("Invalid empty entity type.")
        );
        assert_eq!(
            refusal(&[
                component("user", MATCH_TYPE_SPECIFIED, None),
                component("user", MATCH_TYPE_DEFAULT, None)
            ]),
            invalid("Entity type user cannot appear more than once in the filter.")
        );
        assert_eq!(
            refusal(&[component("group", MATCH_TYPE_SPECIFIED, None)]),
            QuotaFilterError::UnsupportedEntityType("group".into())
        );
        assert_eq!(
            refusal(&[component("user", MATCH_TYPE_EXACT, None)]),
            invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        );
        assert_eq!(
            refusal(&[component("user", MATCH_TYPE_DEFAULT, Some("a"))]),
            invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
        );
        assert_eq!(
            refusal(&[component("user", MATCH_TYPE_SPECIFIED, Some("a"))]),
            invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
        );
        assert_eq!(
            refusal(&[component("user", 7, None)]),
            invalid("Unknown match type 7")
        );
        assert!(matches!(
            refusal(&[
                component("ip", MATCH_TYPE_SPECIFIED, None),
                component("user", MATCH_TYPE_SPECIFIED, None)
            ]),
            QuotaFilterError::InvalidRequest(m) if m.contains("IP filter component")
        ));
    }
}
