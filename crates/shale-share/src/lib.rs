//! Share groups (KIP-932) as pure state machines, no I/O and no wire types.
//!
//! - `partition`: a share-partition as its leader keeps it (Kafka's SharePartition): the
//!   share-partition start and end offsets, the in-flight records with their states,
//!   acquisition locks with their deadlines, delivery counts and acknowledgements.
//! - `coordinator`: the share coordinator (Kafka's ShareCoordinatorShard): the durable state of
//!   each share-partition, kept in `__share_group_state` as Kafka's ShareSnapshot and
//!   ShareUpdate records.
//! - `session`: share sessions (Kafka's ShareSessionCache), the partitions a member fetches
//!   from on one broker between its requests.
//!
//! The first two meet in `state`: what a share-partition persists and reads back.

pub mod coordinator;
pub mod partition;
pub mod session;
pub mod state;
