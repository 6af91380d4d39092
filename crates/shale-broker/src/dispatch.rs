//! How the API table's one declaration (`api_table.rs`) becomes what the broker serves:
//! `declare_apis!` turns each entry (key, versions, the authorization it will need, its
//! handler) into a row of `API_TABLE`, from which ApiVersions, admission and the README are
//! derived, and into a route of `dispatch` (and of `dispatch_newer` for requests decoded into
//! Shale's own types). A key therefore has a handler exactly when it is advertised.
//!
//! This module names no handler: the declaration does.

use kafka_protocol::messages::{ApiKey, ResponseKind};
use shale_protocol::Response;

use crate::authorization::Access;

/// One served API.
#[derive(Clone, Copy, Debug)]
pub struct ApiEntry {
    pub key: ApiKey,
    /// Lowest version advertised in ApiVersions.
    pub advertised_min: i16,
    /// Lowest version actually accepted; below it the request is answered UNSUPPORTED_VERSION.
    pub accepted_min: i16,
    pub max: i16,
    /// What Kafka's authorizer checks for this API. Not enforced: Shale has no authorizer
    /// yet (see `authorization.rs`).
    pub access: &'static [Access],
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
///     handler <expression giving Option<Response>>
///     [, newer <expression for the request decoded into Shale's own types>];
/// ```
///
/// The first line names the handler's parameters (`(broker: &Arc<Broker>, ctx:
/// &RequestContext, request)`); the handler expressions use those names, `request` being the
/// decoded body of the entry's key.
macro_rules! declare_apis {
    (
        ($broker:ident: $broker_ty:ty, $ctx:ident: $ctx_ty:ty, $request:ident);
        $(
            $key:ident $accepted_min:literal ..= $max:literal
                $(, advertised from $advertised_min:literal)?
            access [ $( $operation:ident on $resource:ident ),* $(,)? ]
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
                $( ::kafka_protocol::messages::RequestKind::$key($request) => Ok($handler), )*
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
                $( $( ::shale_protocol::NewerRequest::$key($request) => Ok($newer), )? )*
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
