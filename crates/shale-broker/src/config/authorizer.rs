//! `authorizer.class.name` and the StandardAuthorizer's own keys, `super.users` and
//! `allow.everyone.if.no.acl.found`.

use super::error::ConfigError;
use super::static_props::StaticProperties;
use crate::authorizer::{AuthorizerSettings, STANDARD_AUTHORIZER};

pub(crate) const AUTHORIZER_CLASS_KEY: &str = "authorizer.class.name";
pub(crate) const SUPER_USERS_KEY: &str = "super.users";
pub(crate) const ALLOW_EVERYONE_KEY: &str = "allow.everyone.if.no.acl.found";

/// Keys read here that are not in the broker key table (Kafka passes them to the
/// authorizer as they are).
pub(crate) fn is_authorizer_key(key: &str) -> bool {
    key == SUPER_USERS_KEY || key == ALLOW_EVERYONE_KEY
}

/// The authorizer's settings when `authorizer.class.name` names Kafka's StandardAuthorizer,
/// `None` when it is empty (Kafka's default: no authorizer, everything allowed). Any other
/// class is refused: Shale cannot load Java classes, and serving without the authorizer an
/// operator asked for would allow what it denies.
pub(crate) fn authorizer_settings(
    props: &StaticProperties,
) -> Result<Option<AuthorizerSettings>, ConfigError> {
    let class = props.get(AUTHORIZER_CLASS_KEY).unwrap_or("").trim();
    if class.is_empty() {
        return Ok(None);
    }
    if class != STANDARD_AUTHORIZER {
        return Err(ConfigError::InvalidValue {
            key: AUTHORIZER_CLASS_KEY.to_string(),
            value: class.to_string(),
            reason: format!("the only authorizer Shale implements is {STANDARD_AUTHORIZER}"),
        });
    }
    let mut super_users = std::collections::HashSet::new();
    // Kafka's StandardAuthorizer.getConfiguredSuperUsers: `;`-separated, trimmed, each a
    // `Type:Name` principal.
    for entry in props.get(SUPER_USERS_KEY).unwrap_or("").split(';') {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        if !entry.contains(':') {
            return Err(ConfigError::InvalidValue {
                key: SUPER_USERS_KEY.to_string(),
                value: entry.to_string(),
                reason: "expected principals such as User:admin, separated by ';'".to_string(),
            });
        }
        super_users.insert(entry.to_string());
    }
    // Kafka reads it with Boolean.parseBoolean: `true` in any case, anything else false.
    let allow_everyone_if_no_acl_found = props
        .get(ALLOW_EVERYONE_KEY)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    Ok(Some(AuthorizerSettings {
        super_users,
        allow_everyone_if_no_acl_found,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::static_props::ValueOrigin;

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut props = StaticProperties::default();
        for (k, v) in pairs {
            props.set(k, v, ValueOrigin::File);
        }
        props
    }

    #[test]
    fn no_class_is_no_authorizer() {
        assert_eq!(authorizer_settings(&props(&[])).unwrap(), None);
        assert_eq!(
            authorizer_settings(&props(&[(AUTHORIZER_CLASS_KEY, " ")])).unwrap(),
            None
        );
    }

    #[test]
    fn another_class_is_refused_by_name() {
        let err = authorizer_settings(&props(&[(
            AUTHORIZER_CLASS_KEY,
            "kafka.security.authorizer.AclAuthorizer",
        )]))
        .unwrap_err()
        .to_string();
        assert!(err.contains(AUTHORIZER_CLASS_KEY), "{err}");
        assert!(err.contains(STANDARD_AUTHORIZER), "{err}");
    }

    #[test]
    fn super_users_and_the_default_are_read_as_kafka_reads_them() {
        let settings = authorizer_settings(&props(&[
            (AUTHORIZER_CLASS_KEY, STANDARD_AUTHORIZER),
            (SUPER_USERS_KEY, " User:admin ;User:CN=broker,O=Example;; "),
            (ALLOW_EVERYONE_KEY, "TRUE"),
        ]))
        .unwrap()
        .unwrap();
        let mut users: Vec<_> = settings.super_users.iter().cloned().collect();
        users.sort();
        assert_eq!(users, ["User:CN=broker,O=Example", "User:admin"]);
        assert!(settings.allow_everyone_if_no_acl_found);
        let default = authorizer_settings(&props(&[
            (AUTHORIZER_CLASS_KEY, STANDARD_AUTHORIZER),
            (ALLOW_EVERYONE_KEY, "yes"),
        ]))
        .unwrap()
        .unwrap();
        assert!(!default.allow_everyone_if_no_acl_found);
        assert!(default.super_users.is_empty());
    }

    #[test]
    fn a_super_user_without_a_type_is_refused() {
        let err = authorizer_settings(&props(&[
            (AUTHORIZER_CLASS_KEY, STANDARD_AUTHORIZER),
            (SUPER_USERS_KEY, "admin"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains(SUPER_USERS_KEY), "{err}");
    }
}
