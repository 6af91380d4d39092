//! shale-broker
