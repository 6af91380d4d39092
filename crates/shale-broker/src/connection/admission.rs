//! Whether a request's API key and version are served: from the API table.

use kafka_protocol::messages::ApiKey;
use shale_protocol::RequestHeader;

use crate::api_table;

pub(super) enum Admission {
    Handle,
    ApiVersionsFallback,
    Close(&'static str),
}

pub(super) fn admit(header: &RequestHeader) -> Admission {
    match api_table::lookup(header.api_key) {
        None => Admission::Close("unsupported API key"),
        Some(entry) => {
            if header.api_version >= entry.accepted_min && header.api_version <= entry.max {
                Admission::Handle
            } else if entry.key == ApiKey::ApiVersions {
                Admission::ApiVersionsFallback
            } else {
                Admission::Close("unsupported API version")
            }
        }
    }
}
