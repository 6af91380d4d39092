//! The hash, HMAC and Hi (PBKDF2-HMAC) of RFC 5802, for each SCRAM mechanism.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::mechanism::ScramMechanism;

pub(crate) fn hash(mechanism: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

pub(crate) fn hmac(mechanism: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    const ANY_KEY: &str = "HMAC takes keys of any length";
    match mechanism {
        ScramMechanism::Sha256 => {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect(ANY_KEY);
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        ScramMechanism::Sha512 => {
            let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(key).expect(ANY_KEY);
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

/// `Hi(password, salt, i)`: PBKDF2 with the mechanism's HMAC and one block of output. The
/// password is taken as its UTF-8 bytes without SASLprep, as Kafka does.
pub(crate) fn salted_password(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let mut out = vec![0u8; mechanism.hash_len_bytes()];
    match mechanism {
        ScramMechanism::Sha256 => {
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out)
        }
        ScramMechanism::Sha512 => {
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out)
        }
    }
    out
}

pub(crate) fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}
