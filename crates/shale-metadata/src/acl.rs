//! ACL codes (Kafka's wire values) and the filter matching used by DeleteAcls and
//! DescribeAcls.

use crate::image::AclEntry;

pub mod resource_type {
    pub const ANY: i8 = 1;
    pub const TOPIC: i8 = 2;
    pub const GROUP: i8 = 3;
    pub const CLUSTER: i8 = 4;
    pub const TRANSACTIONAL_ID: i8 = 5;
    pub const DELEGATION_TOKEN: i8 = 6;
    pub const USER: i8 = 7;
}

pub mod pattern_type {
    pub const ANY: i8 = 1;
    pub const MATCH: i8 = 2;
    pub const LITERAL: i8 = 3;
    pub const PREFIXED: i8 = 4;
}

pub mod operation {
    pub const ANY: i8 = 1;
    pub const ALL: i8 = 2;
    /// The highest operation code (TWO_PHASE_COMMIT).
    pub const MAX: i8 = 15;
}

pub mod permission_type {
    pub const ANY: i8 = 1;
    pub const DENY: i8 = 2;
    pub const ALLOW: i8 = 3;
}

/// Kafka's wildcard resource name and host.
pub const WILDCARD: &str = "*";

/// A DeleteAcls/DescribeAcls filter; `None` fields match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission_type: i8,
}

impl AclFilter {
    pub fn matches(&self, acl: &AclEntry) -> bool {
        if self.resource_type != resource_type::ANY && self.resource_type != acl.resource_type {
            return false;
        }
        if !self.matches_pattern(acl) {
            return false;
        }
        if self.principal.as_ref().is_some_and(|p| *p != acl.principal) {
            return false;
        }
        if self.host.as_ref().is_some_and(|h| *h != acl.host) {
            return false;
        }
        if self.operation != operation::ANY && self.operation != acl.operation {
            return false;
        }
        self.permission_type == permission_type::ANY || self.permission_type == acl.permission_type
    }

    fn matches_pattern(&self, acl: &AclEntry) -> bool {
        match self.pattern_type {
            pattern_type::ANY => self
                .resource_name
                .as_ref()
                .is_none_or(|n| *n == acl.resource_name),
            pattern_type::MATCH => {
                let Some(name) = &self.resource_name else {
                    return true;
                };
                match acl.pattern_type {
                    pattern_type::LITERAL => {
                        acl.resource_name == *name || acl.resource_name == WILDCARD
                    }
                    pattern_type::PREFIXED => name.starts_with(acl.resource_name.as_str()),
                    _ => false,
                }
            }
            exact => {
                exact == acl.pattern_type
                    && self
                        .resource_name
                        .as_ref()
                        .is_none_or(|n| *n == acl.resource_name)
            }
        }
    }
}

/// Kafka's name of a resource type code (`ResourceType.fromCode`: UNKNOWN when unknown).
fn resource_type_name(code: i8) -> &'static str {
    match code {
        resource_type::ANY => "ANY",
        resource_type::TOPIC => "TOPIC",
        resource_type::GROUP => "GROUP",
        resource_type::CLUSTER => "CLUSTER",
        resource_type::TRANSACTIONAL_ID => "TRANSACTIONAL_ID",
        resource_type::DELEGATION_TOKEN => "DELEGATION_TOKEN",
        resource_type::USER => "USER",
        _ => "UNKNOWN",
    }
}

fn pattern_type_name(code: i8) -> &'static str {
    match code {
        pattern_type::ANY => "ANY",
        pattern_type::MATCH => "MATCH",
        pattern_type::LITERAL => "LITERAL",
        pattern_type::PREFIXED => "PREFIXED",
        _ => "UNKNOWN",
    }
}

fn permission_type_name(code: i8) -> &'static str {
    match code {
        permission_type::ANY => "ANY",
        permission_type::DENY => "DENY",
        permission_type::ALLOW => "ALLOW",
        _ => "UNKNOWN",
    }
}

/// Checks a binding for CreateAcls as Kafka's AclControlManager does, in its order and with
/// its messages; returns why it is invalid.
pub fn validate_binding(acl: &AclEntry) -> Result<(), String> {
    if !(resource_type::TOPIC..=resource_type::USER).contains(&acl.resource_type) {
        return Err(format!(
            "Invalid resourceType {}",
            resource_type_name(acl.resource_type)
        ));
    }
    if acl.pattern_type != pattern_type::LITERAL && acl.pattern_type != pattern_type::PREFIXED {
        return Err(format!(
            "Invalid patternType {}",
            pattern_type_name(acl.pattern_type)
        ));
    }
    if !(operation::ALL..=operation::MAX).contains(&acl.operation) {
        let name = if acl.operation == operation::ANY {
            "ANY"
        } else {
            "UNKNOWN"
        };
        return Err(format!("Invalid operation {name}"));
    }
    if acl.permission_type != permission_type::ALLOW && acl.permission_type != permission_type::DENY
    {
        return Err(format!(
            "Invalid permissionType {}",
            permission_type_name(acl.permission_type)
        ));
    }
    if acl.resource_name.is_empty() {
        return Err("Resource name should not be empty".into());
    }
    if acl.resource_type == resource_type::CLUSTER && acl.resource_name != "kafka-cluster" {
        return Err("The only valid name for the CLUSTER resource is kafka-cluster".into());
    }
    match acl.principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
        _ => {
            return Err(format!(
                "Could not parse principal from `{}` (no colon is present separating the \
                 principal type from the principal name)",
                acl.principal
            ))
        }
    }
    if acl.host.is_empty() {
        return Err("Host should not be empty".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> AclEntry {
        AclEntry {
            id: uuid::Uuid::nil(),
            resource_type: resource_type::TOPIC,
            resource_name: "t".into(),
            pattern_type: pattern_type::LITERAL,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: permission_type::ALLOW,
        }
    }

    /// A change that makes a binding invalid, and Kafka's message for it.
    type Case = (fn(&mut AclEntry), &'static str);

    #[test]
    fn invalid_bindings_get_kafkas_messages() {
        assert_eq!(validate_binding(&binding()), Ok(()));
        let cases: [Case; 6] = [
            (|a| a.resource_type = 99, "Invalid resourceType UNKNOWN"),
            (
                |a| a.resource_type = resource_type::ANY,
                "Invalid resourceType ANY",
            ),
            (
                |a| a.pattern_type = pattern_type::MATCH,
                "Invalid patternType MATCH",
            ),
            (|a| a.operation = operation::ANY, "Invalid operation ANY"),
            (
                |a| a.permission_type = permission_type::ANY,
                "Invalid permissionType ANY",
            ),
            (
                |a| a.resource_name.clear(),
                "Resource name should not be empty",
            ),
        ];
        for (change, message) in cases {
            let mut acl = binding();
            change(&mut acl);
            assert_eq!(validate_binding(&acl), Err(message.to_string()));
        }
    }
}
