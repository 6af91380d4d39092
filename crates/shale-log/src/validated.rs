//! Batches checked once: [`ValidatedBatches::parse`] walks the framing and verifies every
//! batch's CRC, and [`crate::Log::append_validated`] appends them without parsing again. The
//! fields are private, so a value of this type always holds headers that match its bytes.

use crate::batch::{parse_batches, BatchHeader};
use crate::error::LogError;

/// One or more whole RecordBatch v2 batches, their framing and CRCs verified.
#[derive(Debug)]
pub struct ValidatedBatches<'a> {
    bytes: &'a mut [u8],
    headers: Vec<BatchHeader>,
}

impl<'a> ValidatedBatches<'a> {
    /// Checks framing, magic, CRC and counts of every batch in `bytes`.
    pub fn parse(bytes: &'a mut [u8]) -> Result<ValidatedBatches<'a>, LogError> {
        let headers = parse_batches(bytes)?;
        Ok(ValidatedBatches { bytes, headers })
    }

    /// The batches' headers, in order.
    pub fn headers(&self) -> &[BatchHeader] {
        &self.headers
    }

    pub fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn into_parts(self) -> (&'a mut [u8], Vec<BatchHeader>) {
        (self.bytes, self.headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::BatchBuilder;

    #[test]
    fn parse_refuses_a_batch_whose_crc_does_not_match() {
        let mut builder = BatchBuilder::new(1_000);
        builder.push(1_000, Some(b"k"), Some(b"v"));
        let mut batch = builder.build().unwrap();
        let good = ValidatedBatches::parse(&mut batch).unwrap();
        assert_eq!(good.headers().len(), 1);
        assert_eq!(good.headers()[0].record_count, 1);
        let last = batch.len() - 1;
        batch[last] ^= 0xff;
        assert!(matches!(
            ValidatedBatches::parse(&mut batch),
            Err(LogError::CorruptMessage(_))
        ));
    }
}
