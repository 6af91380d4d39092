//! Which quota applies to a client, as Kafka's default quota callback decides it. The most
//! specific entity with the key set wins, in this order:
//!
//! 1. user + client-id
//! 2. user + default client-id
//! 3. user
//! 4. default user + client-id
//! 5. default user + default client-id
//! 6. default user
//! 7. client-id
//! 8. default client-id
//!
//! The level found also says whose usage is measured together (Kafka's metric tags): at
//! levels 1, 2, 4 and 5 each (user, client-id) pair has its own rate, at 3 and 6 all clients
//! of a user share one, at 7 and 8 each client-id has its own whatever the user. Each quota
//! key (producer_byte_rate, ...) is looked up on its own.

use std::collections::HashMap;

use shale_metadata::MetadataImage;

/// A named entity or the default one (`<default>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Name {
    Named(String),
    Default,
}

/// An entity as quotas are set on it: user, client-id, or both.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Entity {
    user: Option<Name>,
    client_id: Option<Name>,
}

/// Whose usage is measured together (Kafka's `user` and `client-id` metric tags; an empty
/// string where the level does not distinguish).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorKey {
    pub user: String,
    pub client_id: String,
}

/// What applies to one client for one key.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub sensor: SensorKey,
    /// The quota in force; `None` when no level sets the key for this client.
    pub limit: Option<f64>,
}

/// The user and client-id quotas of one metadata image, by key.
#[derive(Debug, Default)]
pub struct QuotaIndex {
    by_key: HashMap<String, HashMap<Entity, f64>>,
}

fn name_of(name: &Option<String>) -> Name {
    match name {
        Some(n) => Name::Named(n.clone()),
        None => Name::Default,
    }
}

impl QuotaIndex {
    /// The user and client-id entities of `image` (ip entities are not client quotas).
    pub fn from_image(image: &MetadataImage) -> QuotaIndex {
        let mut by_key: HashMap<String, HashMap<Entity, f64>> = HashMap::new();
        for (entity, values) in image.client_quotas() {
            let mut e = Entity {
                user: None,
                client_id: None,
            };
            let mut other = false;
            for (entity_type, name) in entity {
                match entity_type.as_str() {
                    "user" => e.user = Some(name_of(name)),
                    "client-id" => e.client_id = Some(name_of(name)),
                    _ => other = true,
                }
            }
            if other || (e.user.is_none() && e.client_id.is_none()) {
                continue;
            }
            for (key, value) in values {
                by_key
                    .entry(key.clone())
                    .or_default()
                    .insert(e.clone(), *value);
            }
        }
        QuotaIndex { by_key }
    }

    /// The quota of `key` for a client authenticated as `user` with `client_id`, or `None`
    /// when no entity sets the key at all.
    pub fn applied(&self, key: &str, user: &str, client_id: &str) -> Option<Applied> {
        let quotas = self.by_key.get(key).filter(|m| !m.is_empty())?;
        let has = |user: Option<Name>, client_id: Option<Name>| {
            quotas.contains_key(&Entity { user, client_id })
        };
        let named = |s: &str| Some(Name::Named(s.to_string()));
        let default = || Some(Name::Default);
        let both = (user.to_string(), client_id.to_string());
        let user_only = (user.to_string(), String::new());
        let (user_tag, client_tag) =
            if has(named(user), named(client_id)) || has(named(user), default()) {
                both
            } else if has(named(user), None) {
                user_only
            } else if has(default(), named(client_id)) || has(default(), default()) {
                both
            } else if has(default(), None) {
                user_only
            } else {
                (String::new(), client_id.to_string())
            };
        let get = |user: Option<Name>, client_id: Option<Name>| {
            quotas.get(&Entity { user, client_id }).copied()
        };
        let limit = match (user_tag.is_empty(), client_tag.is_empty()) {
            (false, false) => get(named(&user_tag), named(&client_tag))
                .or_else(|| get(named(&user_tag), default()))
                .or_else(|| get(default(), named(&client_tag)))
                .or_else(|| get(default(), default())),
            (false, true) => get(named(&user_tag), None).or_else(|| get(default(), None)),
            (true, false) => get(None, named(&client_tag)).or_else(|| get(None, default())),
            (true, true) => None,
        };
        Some(Applied {
            sensor: SensorKey {
                user: user_tag,
                client_id: client_tag,
            },
            limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_metadata::MetadataRecord;

    const KEY: &str = "producer_byte_rate";

    /// An entity as (type, name) pairs, and a quota set on it.
    type Entity<'a> = &'a [(&'a str, Option<&'a str>)];

    fn image(quotas: &[(Entity, f64)]) -> MetadataImage {
        let mut image = MetadataImage::empty("c");
        for (entity, value) in quotas {
            image.replay(&MetadataRecord::ClientQuota {
                entity: entity
                    .iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect(),
                key: KEY.into(),
                value: Some(*value),
            });
        }
        image
    }

    fn limit(index: &QuotaIndex, user: &str, client: &str) -> Option<f64> {
        index.applied(KEY, user, client).and_then(|a| a.limit)
    }

    /// Every level set: each client gets the most specific one, and removing levels one by one
    /// walks Kafka's order.
    #[test]
    fn the_eight_levels_in_kafkas_order() {
        let levels: Vec<(Entity, f64)> = vec![
            (&[("user", Some("u")), ("client-id", Some("c"))], 1.0),
            (&[("user", Some("u")), ("client-id", None)], 2.0),
            (&[("user", Some("u"))], 3.0),
            (&[("user", None), ("client-id", Some("c"))], 4.0),
            (&[("user", None), ("client-id", None)], 5.0),
            (&[("user", None)], 6.0),
            (&[("client-id", Some("c"))], 7.0),
            (&[("client-id", None)], 8.0),
        ];
        for first in 0..levels.len() {
            let index = QuotaIndex::from_image(&image(&levels[first..]));
            assert_eq!(
                limit(&index, "u", "c"),
                Some(levels[first].1),
                "with levels {} and below",
                first + 1
            );
        }
    }

    #[test]
    fn who_shares_a_rate() {
        // A user quota: every client of the user measured together.
        let index = QuotaIndex::from_image(&image(&[(&[("user", Some("u"))], 10.0)]));
        let a = index.applied(KEY, "u", "a").unwrap();
        let b = index.applied(KEY, "u", "b").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.limit, Some(10.0));
        // Another user has no quota.
        assert_eq!(limit(&index, "v", "a"), None);
        // A default client-id quota: each client-id on its own, whoever the user.
        let index = QuotaIndex::from_image(&image(&[(&[("client-id", None)], 10.0)]));
        let a = index.applied(KEY, "u", "a").unwrap();
        let a2 = index.applied(KEY, "v", "a").unwrap();
        let b = index.applied(KEY, "u", "b").unwrap();
        assert_eq!(a.sensor, a2.sensor);
        assert_ne!(a.sensor, b.sensor);
        assert_eq!(b.limit, Some(10.0));
    }

    #[test]
    fn no_entity_with_the_key_means_quotas_of_that_kind_are_off() {
        let index = QuotaIndex::from_image(&image(&[(&[("user", Some("u"))], 10.0)]));
        assert!(index.applied(KEY, "u", "c").is_some());
        assert_eq!(index.applied("consumer_byte_rate", "u", "c"), None);
    }

    #[test]
    fn an_empty_client_id_takes_only_user_levels() {
        let index = QuotaIndex::from_image(&image(&[
            (&[("user", Some("u")), ("client-id", None)], 2.0),
            (&[("client-id", None)], 8.0),
        ]));
        // Kafka's tags become (u, ""), whose limit is looked up at the user levels only.
        assert_eq!(limit(&index, "u", ""), None);
        assert_eq!(limit(&index, "u", "c"), Some(2.0));
    }
}
