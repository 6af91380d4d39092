//! The decision of Kafka's StandardAuthorizer (`StandardAuthorizerData.authorize`), pure:
//! the ACLs in force, indexed by resource, and the rules that pick ALLOWED or DENIED for one
//! principal, host, operation and resource.
//!
//! Kafka's rules, in order:
//! - A super user is allowed everything (checked by the caller, `Authorizer`).
//! - The ACLs that apply to a resource are its LITERAL ACLs of the same name, the LITERAL
//!   ACLs named `*`, and the PREFIXED ACLs whose name starts the resource's name.
//! - An ACL matches when its principal is the requester's or `User:*`, its host is `*` or the
//!   requester's address, and its operation is ALL, the operation itself, or (ALLOW ACLs
//!   only) one that implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS
//!   implies DESCRIBE_CONFIGS. A DENY ACL for READ does not deny DESCRIBE.
//! - A matching DENY wins over any ALLOW; a matching ALLOW allows.
//! - No ACL matched: DENIED when the resource has ACLs at all (for anyone), else the default
//!   (`allow.everyone.if.no.acl.found`).

use std::collections::HashMap;

use shale_metadata::acl::{operation, pattern_type, permission_type, WILDCARD};
use shale_metadata::image::AclEntry;

use crate::authorization::{AclOperation, ResourceType};

/// The principal every ACL with `User:*` matches.
const WILDCARD_PRINCIPAL: (&str, &str) = ("User", "*");

/// One ACL as the rules read it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    /// The ACL's principal split at its first colon (Kafka's `parseKafkaPrincipal`).
    principal_type: String,
    principal_name: String,
    host: String,
    /// Kafka's operation code (ALL = 2).
    operation: i8,
    allow: bool,
}

impl Rule {
    fn of(acl: &AclEntry) -> Option<Rule> {
        let (principal_type, principal_name) = acl.principal.split_once(':')?;
        Some(Rule {
            principal_type: principal_type.to_string(),
            principal_name: principal_name.to_string(),
            host: acl.host.clone(),
            operation: acl.operation,
            allow: acl.permission_type == permission_type::ALLOW,
        })
    }

    fn names(&self, requester: &Requester<'_>) -> bool {
        let principal = (self.principal_type.as_str(), self.principal_name.as_str());
        principal == (requester.principal_type, requester.principal_name)
            || principal == WILDCARD_PRINCIPAL
    }

    fn matches_host(&self, host: &str) -> bool {
        self.host == WILDCARD || self.host == host
    }

    /// Kafka's `findResult`: `None` when this ACL does not apply to the action.
    fn decide(&self, requester: &Requester<'_>, op: AclOperation) -> Option<bool> {
        if !self.names(requester) || !self.matches_host(requester.host) {
            return None;
        }
        if self.operation != operation::ALL {
            let applies = if self.allow {
                allow_grants(self.operation, op)
            } else {
                self.operation == op.code()
            };
            if !applies {
                return None;
            }
        }
        Some(self.allow)
    }
}

/// Whether an ALLOW ACL for the operation `acl_op` (a code other than ALL) grants `op`:
/// the operation itself, or one implying it.
fn allow_grants(acl_op: i8, op: AclOperation) -> bool {
    use AclOperation as O;
    let implying: &[AclOperation] = match op {
        O::Describe => &[O::Describe, O::Read, O::Write, O::Delete, O::Alter],
        O::DescribeConfigs => &[O::DescribeConfigs, O::AlterConfigs],
        _ => return acl_op == op.code(),
    };
    implying.iter().any(|o| o.code() == acl_op)
}

/// Who asks: the principal split into type and name, and the client's address as Java's
/// `InetAddress.getHostAddress` writes it.
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    pub principal_type: &'a str,
    pub principal_name: &'a str,
    pub host: &'a str,
}

impl<'a> Requester<'a> {
    /// `principal` is Kafka's `Type:Name` text (`User:alice`).
    pub fn new(principal: &'a str, host: &'a str) -> Requester<'a> {
        let (principal_type, principal_name) = principal.split_once(':').unwrap_or(("", principal));
        Requester {
            principal_type,
            principal_name,
            host,
        }
    }
}

/// What the ACLs of one resource say (Kafka's `MatchingRuleBuilder`).
#[derive(Default)]
struct Matching {
    allowed: bool,
    denied: bool,
    /// The resource has ACLs, whoever they name.
    has_acls: bool,
}

impl Matching {
    fn consider<'r>(
        &mut self,
        rules: impl IntoIterator<Item = &'r Rule>,
        requester: &Requester<'_>,
        op: AclOperation,
    ) {
        for rule in rules {
            self.has_acls = true;
            match rule.decide(requester, op) {
                Some(true) => self.allowed = true,
                Some(false) => self.denied = true,
                None => {}
            }
        }
    }
}

/// The ACLs in force, indexed for the checks (built once per metadata image that changed
/// them).
#[derive(Debug, Default)]
pub struct AclIndex {
    /// LITERAL ACLs by (resource type code, name); `*` is a name here too.
    literal: HashMap<(i8, String), Vec<Rule>>,
    /// PREFIXED ACLs by (resource type code, prefix).
    prefixed: HashMap<(i8, String), Vec<Rule>>,
    /// Every ACL by resource type, with its pattern, for `authorize_by_resource_type`.
    by_type: HashMap<i8, Vec<(i8, String, Rule)>>,
}

impl AclIndex {
    pub fn new<'a>(acls: impl IntoIterator<Item = &'a AclEntry>) -> AclIndex {
        let mut index = AclIndex::default();
        for acl in acls {
            // The controller validated every ACL it wrote; one it could not parse is ignored
            // rather than matching something it was not meant to.
            let Some(rule) = Rule::of(acl) else {
                continue;
            };
            let key = (acl.resource_type, acl.resource_name.clone());
            match acl.pattern_type {
                pattern_type::LITERAL => index.literal.entry(key).or_default().push(rule.clone()),
                pattern_type::PREFIXED => index.prefixed.entry(key).or_default().push(rule.clone()),
                _ => continue,
            }
            index.by_type.entry(acl.resource_type).or_default().push((
                acl.pattern_type,
                acl.resource_name.clone(),
                rule,
            ));
        }
        index
    }

    /// Kafka's decision for a non-super user: `default_allow` is
    /// `allow.everyone.if.no.acl.found`.
    pub fn allows(
        &self,
        requester: &Requester<'_>,
        op: AclOperation,
        resource: ResourceType,
        name: &str,
        default_allow: bool,
    ) -> bool {
        let rt = resource.code();
        let mut matching = Matching::default();
        let literal = |n: &str| self.literal.get(&(rt, n.to_string())).into_iter().flatten();
        matching.consider(literal(name), requester, op);
        // Every prefix of the name, the whole name included (a PREFIXED ACL `foo` applies to
        // the topic `foo`).
        for (end, _) in name.char_indices().skip(1).chain([(name.len(), ' ')]) {
            if let Some(rules) = self.prefixed.get(&(rt, name[..end].to_string())) {
                matching.consider(rules, requester, op);
            }
        }
        if !matching.denied && name != WILDCARD {
            matching.consider(literal(WILDCARD), requester, op);
        }
        if matching.denied {
            false
        } else if matching.allowed {
            true
        } else if matching.has_acls {
            false
        } else {
            default_allow
        }
    }

    /// The ACL half of Kafka's `Authorizer.authorizeByResourceType` (the caller has already
    /// tried the resource named `hardcode`): whether some resource of the type is allowed
    /// `op` by an ALLOW ACL that no DENY dominates. Only the exact operation or ALL counts
    /// here, as in Kafka.
    pub fn allows_some(
        &self,
        requester: &Requester<'_>,
        op: AclOperation,
        resource: ResourceType,
    ) -> bool {
        let mut deny_literal = Vec::new();
        let mut deny_prefixed = Vec::new();
        let mut allows = Vec::new();
        for (pattern, name, rule) in self.by_type.get(&resource.code()).into_iter().flatten() {
            if !rule.matches_host(requester.host) || !rule.names(requester) {
                continue;
            }
            if rule.operation != op.code() && rule.operation != operation::ALL {
                continue;
            }
            if !rule.allow {
                match *pattern {
                    pattern_type::LITERAL if name.as_str() == WILDCARD => return false,
                    pattern_type::LITERAL => deny_literal.push(name.as_str()),
                    _ => deny_prefixed.push(name.as_str()),
                }
                continue;
            }
            if *pattern == pattern_type::LITERAL && name.as_str() == WILDCARD {
                return true;
            }
            allows.push((*pattern, name.as_str()));
        }
        allows.into_iter().any(|(pattern, name)| {
            if pattern == pattern_type::LITERAL && deny_literal.contains(&name) {
                return false;
            }
            // A PREFIXED DENY naming a prefix of this name (itself included) dominates it.
            !deny_prefixed.iter().any(|d| name.starts_with(d))
        })
    }
}
