//! The transaction coordinator as a pure state machine (issue #7): transactional ids, their
//! states and legal transitions, timeouts and producer fencing. The broker owns the clock, the
//! transaction log and the marker sender; this module decides.

mod error;
mod log_format;
mod machine;
mod metadata;
mod pattern;
mod state;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_model;

pub use error::{TxnCoordinatorError, TxnLogAppendError};
pub use log_format::{
    decode_txn_log_record, encode_txn_log_key, encode_txn_log_record, encode_txn_log_value,
    TxnLogFormatError,
};
pub use machine::{
    AppendOutcome, AppendPurpose, MarkerRequest, PartitionVerification, ProducerIdAndEpoch,
    TxnAppend, TxnCoordinator, TxnCoordinatorConfig, TxnDecision, TxnReply, TxnResult,
};
pub use metadata::{is_epoch_exhausted, TopicPartition, TxnLogRecord, TxnMetadata};
pub use pattern::{InvalidPatternError, TransactionalIdPattern};
pub use state::TxnState;
