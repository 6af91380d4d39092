//! shale-protocol
