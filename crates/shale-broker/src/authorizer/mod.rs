//! Kafka's StandardAuthorizer (`org.apache.kafka.metadata.authorizer.StandardAuthorizer`):
//! the ACLs of the metadata image, `super.users` and `allow.everyone.if.no.acl.found`, and
//! the checks handlers make for a request (`Authz`). A bottom-floor module: it knows the
//! request context and the image, no handler.
//!
//! With no authorizer configured (`authorizer.class.name` empty, Kafka's default) every check
//! allows, as in Kafka.

mod host;
mod rules;

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use shale_metadata::image::AclEntry;
use shale_metadata::MetadataImage;
use uuid::Uuid;

pub use host::java_host_address;
pub use rules::{AclIndex, Requester};

use crate::authorization::{operations_bits, AclOperation, ResourceType, CLUSTER_NAME};
use crate::request::RequestContext;

/// The one authorizer class Shale implements.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The resource name Kafka's `authorizeByResourceType` tries first, so that super users and
/// `allow.everyone.if.no.acl.found` apply to it.
const BY_TYPE_PROBE_NAME: &str = "hardcode";

/// The authorizer's settings, from the broker config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    /// `super.users`: principals (`User:admin`) allowed everything.
    pub super_users: HashSet<String>,
    /// `allow.everyone.if.no.acl.found`: the answer for a resource without any ACL.
    pub allow_everyone_if_no_acl_found: bool,
}

/// The ACL map an index was built from (held, so that its address identifies it) and the
/// index.
type IndexedAcls = (Arc<BTreeMap<Uuid, AclEntry>>, Arc<AclIndex>);

/// The configured authorizer: its settings and the index of the image's ACLs, rebuilt when
/// an image changes them.
#[derive(Debug)]
pub struct Authorizer {
    settings: AuthorizerSettings,
    index: Mutex<IndexedAcls>,
}

impl Authorizer {
    pub fn new(settings: AuthorizerSettings) -> Authorizer {
        Authorizer {
            settings,
            index: Mutex::new((Arc::default(), Arc::default())),
        }
    }

    pub fn settings(&self) -> &AuthorizerSettings {
        &self.settings
    }

    /// The index of `image`'s ACLs.
    pub fn index(&self, image: &MetadataImage) -> Arc<AclIndex> {
        let acls = image.acl_map();
        let mut cached = self.index.lock();
        if !Arc::ptr_eq(&cached.0, acls) {
            *cached = (acls.clone(), Arc::new(AclIndex::new(acls.values())));
        }
        cached.1.clone()
    }
}

/// The checks of one request: its principal and host against the ACLs of the image current
/// when it was made. Every check allows when no authorizer is configured.
pub struct Authz<'a> {
    /// `None`: no authorizer.
    checks: Option<Checks<'a>>,
}

struct Checks<'a> {
    authorizer: &'a Authorizer,
    index: Arc<AclIndex>,
    principal: &'a str,
    host: String,
    super_user: bool,
}

impl<'a> Authz<'a> {
    /// No authorizer: everything is allowed.
    pub fn allow_all() -> Authz<'static> {
        Authz { checks: None }
    }

    pub fn new(
        authorizer: Option<&'a Authorizer>,
        image: &MetadataImage,
        ctx: &'a RequestContext,
    ) -> Authz<'a> {
        Authz {
            checks: authorizer.map(|authorizer| Checks {
                authorizer,
                index: authorizer.index(image),
                principal: &ctx.principal,
                host: java_host_address(ctx.peer.ip()),
                super_user: authorizer
                    .settings
                    .super_users
                    .contains(ctx.principal.as_ref()),
            }),
        }
    }

    /// Whether an authorizer is configured.
    pub fn is_enabled(&self) -> bool {
        self.checks.is_some()
    }

    /// Kafka's `authorize` of `op` on the resource `name` of type `resource`.
    pub fn allows(&self, op: AclOperation, resource: ResourceType, name: &str) -> bool {
        let Some(c) = &self.checks else {
            return true;
        };
        c.super_user
            || c.index.allows(
                &Requester::new(c.principal, &c.host),
                op,
                resource,
                name,
                c.authorizer.settings.allow_everyone_if_no_acl_found,
            )
    }

    /// `op` on the cluster resource (`kafka-cluster`).
    pub fn allows_cluster(&self, op: AclOperation) -> bool {
        self.allows(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Kafka's `authorizeByResourceType`: whether `op` is allowed on some resource of the
    /// type (InitProducerId's WRITE on any topic).
    pub fn allows_some(&self, op: AclOperation, resource: ResourceType) -> bool {
        if self.allows(op, resource, BY_TYPE_PROBE_NAME) {
            return true;
        }
        let Some(c) = &self.checks else {
            return true;
        };
        c.index
            .allows_some(&Requester::new(c.principal, &c.host), op, resource)
    }

    /// Kafka's `authorizedOperations`: the bitfield of the supported operations allowed on
    /// the resource.
    pub fn authorized_operations(&self, resource: ResourceType, name: &str) -> i32 {
        operations_bits(
            resource
                .supported_operations()
                .iter()
                .copied()
                .filter(|op| self.allows(*op, resource, name)),
        )
    }

    /// The names of `names` allowed `op` (Kafka's `filterByAuthorized`), as a set to look
    /// names up in.
    pub fn allowed_names<'n>(
        &self,
        op: AclOperation,
        resource: ResourceType,
        names: impl IntoIterator<Item = &'n str>,
    ) -> HashSet<&'n str> {
        names
            .into_iter()
            .filter(|n| self.allows(op, resource, n))
            .collect()
    }
}

#[cfg(test)]
mod tests;
