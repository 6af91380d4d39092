//! shale-group
