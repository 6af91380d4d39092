//! The internal topics the broker's coordinators keep their state in (Kafka's names).

/// Group metadata and committed offsets (the group coordinator's log).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Transaction metadata (the transaction coordinator's log).
pub const TXN_STATE_TOPIC: &str = "__transaction_state";

/// Share-partition state (the share coordinator's log, KIP-932).
pub const SHARE_STATE_TOPIC: &str = "__share_group_state";
