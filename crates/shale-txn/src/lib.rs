//! shale-txn
