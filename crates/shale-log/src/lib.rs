//! shale-log
