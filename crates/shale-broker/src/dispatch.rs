//! How the API table's one declaration (`api_table.rs`) becomes what the broker serves:
//! `declare_apis!` turns each entry (key, versions, the authorization Kafka checks and where
//! Shale checks it, its handler) into a row of `API_TABLE`, from which ApiVersions, admission
//! and the README are derived, and into a route of `dispatch` (and of `dispatch_newer` for
//! requests decoded into Shale's own types). A key therefore has a handler exactly when it is
//! advertised, and every API says how it is authorized: an entry checked on the cluster first
//! is refused by its route before the handler runs.
//!
//! This module names no handler: the declaration does.

use kafka_protocol::messages::{ApiKey, ResponseKind};
use shale_protocol::Response;

use crate::authorization::{Access, AclOperation, Enforcement};

/// One served API.
#[derive(Clone, Copy, Debug)]
pub struct ApiEntry {
    pub key: ApiKey,
    /// Lowest version advertised in ApiVersions.
    pub advertised_min: i16,
    /// Lowest version actually accepted; below it the request is answered UNSUPPORTED_VERSION.
    pub accepted_min: i16,
    pub max: i16,
    /// What Kafka's authorizer checks for this API (Kafka's documentation).
    pub access: &'static [Access],
    /// Where Shale checks it.
    pub enforcement: Enforcement,
    /// The entry names the answer of a request its cluster check refuses.
    pub has_refusal: bool,
}

/// The cluster operation a route checks before its handler, if any.
pub(crate) const fn cluster_gate(enforcement: Enforcement) -> Option<AclOperation> {
    match enforcement {
        Enforcement::Cluster(op) => Some(op),
        Enforcement::Nothing | Enforcement::InHandler => None,
    }
}

/// An entry's `authorize [...]` clause as an `Enforcement`.
macro_rules! enforcement {
    (none) => {
        $crate::authorization::Enforcement::Nothing
    };
    (in handler) => {
        $crate::authorization::Enforcement::InHandler
    };
    ($operation:ident on Cluster) => {
        $crate::authorization::Enforcement::Cluster($crate::authorization::AclOperation::$operation)
    };
}

pub(crate) use enforcement;

/// What a route's handler expression gives: an answer (or none), or a failure that closes
/// the connection.
pub(crate) trait Routed {
    fn routed(self) -> Result<Option<Response>, crate::request::HandlerError>;
}

impl Routed for Option<Response> {
    fn routed(self) -> Result<Option<Response>, crate::request::HandlerError> {
        Ok(self)
    }
}

impl Routed for Result<Option<Response>, crate::request::HandlerError> {
    fn routed(self) -> Result<Option<Response>, crate::request::HandlerError> {
        self
    }
}

/// A handler's answer in kafka-protocol's types.
pub(crate) fn reply(response: impl Into<ResponseKind>) -> Option<Response> {
    Some(Response::Kafka(response.into()))
}

/// A handler's answer that may be nothing at all (acks=0 Produce).
pub(crate) fn reply_if(response: Option<impl Into<ResponseKind>>) -> Option<Response> {
    response.map(|r| Response::Kafka(r.into()))
}

/// A handler's answer already made (a version answered in Shale's own types).
pub(crate) fn answered(response: Response) -> Option<Response> {
    Some(response)
}

/// The `handler` of an API whose every version shale-protocol's codec decodes (its `newer`
/// route answers it): a request in kafka-protocol's types cannot arrive for it.
pub(crate) fn codec_owned<T>(
    _request: T,
) -> Result<Option<Response>, crate::request::HandlerError> {
    Err(crate::request::HandlerError::NotServed(
        "decoded by shale-protocol's codec at every version",
    ))
}

/// The optional value of a declaration (`given`, none or one) or else `default`.
pub(crate) const fn given_or(given: &[i16], default: i16) -> i16 {
    match given {
        [value] => *value,
        _ => default,
    }
}

/// The declaration's grammar, one entry per API:
///
/// ```text
/// Key min..=max [, advertised from n]
///     access [Operation on Resource, ...]
///     authorize [none | in handler | Operation on Cluster] [else { <refusal expression> }]
///     handler <expression giving Option<Response>>
///     [, newer <expression for the request decoded into Shale's own types>];
/// ```
///
/// `authorize [Operation on Cluster]` checks the operation before the handler; a refused
/// request is answered by the `else` block, which sees `request` and `code`
/// (CLUSTER_AUTHORIZATION_FAILED). A test holds that every cluster check has its refusal and
/// that no entry with a `newer` route checks on the cluster (its handler does).
///
/// The first line names the handler's parameters (`(broker: &Arc<Broker>, ctx:
/// &RequestContext, request, code)`); the handler expressions use those names, `request`
/// being the decoded body of the entry's key and `code` the refusal's error code.
macro_rules! declare_apis {
    (
        ($broker:ident: $broker_ty:ty, $ctx:ident: $ctx_ty:ty, $request:ident, $code:ident);
        $(
            $key:ident $accepted_min:literal ..= $max:literal
                $(, advertised from $advertised_min:literal)?
            access [ $( $operation:ident on $resource:ident ),* $(,)? ]
            authorize [ $( $mode:tt )* ] $( else $refusal:block )?
            handler $handler:expr
            $(, newer $newer:expr)? ;
        )*
    ) => {
        /// Every served API, in declaration order.
        pub const API_TABLE: &[ApiEntry] = &[
            $(
                ApiEntry {
                    key: ::kafka_protocol::messages::ApiKey::$key,
                    advertised_min: $crate::dispatch::given_or(
                        &[$( $advertised_min )?],
                        $accepted_min,
                    ),
                    accepted_min: $accepted_min,
                    max: $max,
                    access: &[
                        $(
                            $crate::authorization::Access {
                                operation: $crate::authorization::AclOperation::$operation,
                                resource: $crate::authorization::ResourceType::$resource,
                            },
                        )*
                    ],
                    enforcement: $crate::dispatch::enforcement!($( $mode )*),
                    has_refusal: false $( || { let _ = stringify!($refusal); true } )?,
                },
            )*
        ];

        /// Runs the handler for `request`. `Ok(None)` means no response is sent (acks=0).
        pub(crate) async fn dispatch(
            $broker: $broker_ty,
            $ctx: $ctx_ty,
            request: ::kafka_protocol::messages::RequestKind,
        ) -> Result<Option<::shale_protocol::Response>, $crate::request::HandlerError> {
            match request {
                $(
                    ::kafka_protocol::messages::RequestKind::$key($request) => {
                        let gate = $crate::dispatch::cluster_gate(
                            $crate::dispatch::enforcement!($( $mode )*),
                        );
                        $(
                            if let Some(operation) = gate {
                                if !$broker.authz($ctx).allows_cluster(operation) {
                                    let $code = $crate::errors::cluster_authorization_failed_code();
                                    return $crate::dispatch::Routed::routed($refusal);
                                }
                            }
                        )?
                        let _ = gate;
                        $crate::dispatch::Routed::routed($handler)
                    }
                )*
                _ => Err($crate::request::HandlerError::NotServed("not in the API table")),
            }
        }

        /// Runs the handler for a request decoded into Shale's own types: a version whose
        /// fields kafka-protocol's types lack. Every such request has a route here, or this
        /// does not compile.
        pub(crate) async fn dispatch_newer(
            $broker: $broker_ty,
            $ctx: $ctx_ty,
            request: ::shale_protocol::NewerRequest,
        ) -> Result<Option<::shale_protocol::Response>, $crate::request::HandlerError> {
            match request {
                $( $( ::shale_protocol::NewerRequest::$key($request) => {
                    $crate::dispatch::Routed::routed($newer)
                } )? )*
            }
        }

        /// The keys `dispatch` routes, in declaration order.
        #[cfg(test)]
        pub(crate) const DISPATCHED_KEYS: &[::kafka_protocol::messages::ApiKey] =
            &[ $( ::kafka_protocol::messages::ApiKey::$key, )* ];

        /// The keys `dispatch_newer` routes.
        #[cfg(test)]
        pub(crate) const NEWER_DISPATCHED_KEYS: &[::kafka_protocol::messages::ApiKey] = &[
            $( $( {
                let _route = stringify!($newer);
                ::kafka_protocol::messages::ApiKey::$key
            }, )? )*
        ];

        /// A request of `key` with every field at its default, in kafka-protocol's types.
        #[cfg(test)]
        pub(crate) fn default_request(
            key: ::kafka_protocol::messages::ApiKey,
        ) -> Option<::kafka_protocol::messages::RequestKind> {
            match key {
                $(
                    ::kafka_protocol::messages::ApiKey::$key => Some(
                        ::kafka_protocol::messages::RequestKind::$key(Default::default()),
                    ),
                )*
                _ => None,
            }
        }

        /// A request of `key` with every field at its default, in Shale's own types, for the
        /// keys that have such a route.
        #[cfg(test)]
        pub(crate) fn default_newer_request(
            key: ::kafka_protocol::messages::ApiKey,
        ) -> Option<::shale_protocol::NewerRequest> {
            match key {
                $( $(
                    ::kafka_protocol::messages::ApiKey::$key => {
                        let _route = stringify!($newer);
                        Some(::shale_protocol::NewerRequest::$key(Default::default()))
                    }
                )? )*
                _ => None,
            }
        }
    };
}

pub(crate) use declare_apis;
