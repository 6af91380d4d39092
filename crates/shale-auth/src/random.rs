//! Server nonces and salts from the operating system's random source.

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;

use crate::error::RandomError;

/// Random bytes behind a server nonce: 144 bits, more than Kafka's 130.
const SERVER_NONCE_RANDOM_BYTES: usize = 18;
/// The length of a salt drawn for a new credential.
pub(crate) const SALT_BYTES: usize = 32;

pub(crate) fn fill(buf: &mut [u8]) -> Result<(), RandomError> {
    getrandom::fill(buf).map_err(|e| RandomError(e.to_string()))
}

/// A server nonce: base64 without padding, so printable and free of `,` as RFC 5802 wants.
pub(crate) fn server_nonce() -> Result<String, RandomError> {
    let mut raw = [0u8; SERVER_NONCE_RANDOM_BYTES];
    fill(&mut raw)?;
    Ok(STANDARD_NO_PAD.encode(raw))
}

pub(crate) fn salt() -> Result<Vec<u8>, RandomError> {
    let mut salt = vec![0u8; SALT_BYTES];
    fill(&mut salt)?;
    Ok(salt)
}
