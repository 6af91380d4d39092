//! shale-raft
