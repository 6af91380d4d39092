//! A refused append, as a Produce partition answer carries it.

/// A refused append as a Produce partition answer carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: i16,
    pub message: String,
    /// KIP-467: the records at fault, by index in the batch, with their messages.
    pub record_errors: Vec<(i32, String)>,
}

impl Refusal {
    pub fn new(code: i16, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            record_errors: Vec::new(),
        }
    }
}
