//! One module per API family.

pub mod api_versions;
pub mod cluster;
pub mod configs;
pub mod delete_records;
pub mod fetch;
pub mod list_offsets;
pub mod metadata;
pub mod produce;
pub mod producer_ids;
pub mod topics;
