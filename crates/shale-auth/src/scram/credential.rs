//! SCRAM credentials and where the server finds them.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{CredentialError, LookupError};
use crate::mechanism::ScramMechanism;
use crate::random;
use crate::scram::crypto;

/// What the server keeps of a SCRAM password (Kafka's ScramCredential): enough to verify a
/// client's proof and to prove itself, not enough to log in as the user.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt_bytes", &self.salt.len())
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// A credential for `password` with a new random salt. The iterations must lie in the
    /// mechanism's range (4096 to 16384), as Kafka's AlterUserScramCredentials requires.
    pub fn derive(
        mechanism: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        check_iterations(mechanism, iterations)?;
        let salt = random::salt()?;
        Self::derive_with_salt(mechanism, password, &salt, iterations)
    }

    /// A credential for `password` with the given salt (RFC 5802's SaltedPassword, ClientKey,
    /// StoredKey and ServerKey).
    pub fn derive_with_salt(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        check_iterations(mechanism, iterations)?;
        if salt.is_empty() {
            return Err(CredentialError::EmptySalt);
        }
        let salted = crypto::salted_password(mechanism, password.as_bytes(), salt, iterations);
        Ok(Self::from_salted(mechanism, salt, &salted, iterations))
    }

    /// A credential from a salted password (RFC 5802's `SaltedPassword`), which is what
    /// Kafka's AlterUserScramCredentials carries: its admin client runs PBKDF2 itself, so the
    /// broker sees neither the password nor anything it could derive it from, and keeps only
    /// the keys. The iterations are not checked here: the controller decides on them.
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        // HMAC takes any key but an empty one is no secret at all (Java's SecretKeySpec
        // refuses it, so Kafka's controller fails the upsertion).
        if salted_password.is_empty() {
            return Err(CredentialError::EmptySaltedPassword);
        }
        Ok(Self::from_salted(
            mechanism,
            salt,
            salted_password,
            iterations,
        ))
    }

    fn from_salted(mechanism: ScramMechanism, salt: &[u8], salted: &[u8], iterations: u32) -> Self {
        let client_key = crypto::hmac(mechanism, salted, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: crypto::hash(mechanism, &client_key),
            server_key: crypto::hmac(mechanism, salted, b"Server Key"),
            iterations,
        }
    }

    /// A credential as stored elsewhere (the metadata image's SCRAM records): its keys must
    /// have the mechanism's hash length. Iterations are checked when it is used, as in Kafka.
    pub fn from_parts(
        mechanism: ScramMechanism,
        salt: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        if salt.is_empty() {
            return Err(CredentialError::EmptySalt);
        }
        for (field, key) in [("stored key", &stored_key), ("server key", &server_key)] {
            if key.len() != mechanism.hash_len_bytes() {
                return Err(CredentialError::KeyLength {
                    mechanism,
                    field,
                    len_bytes: key.len(),
                    expected_bytes: mechanism.hash_len_bytes(),
                });
            }
        }
        Ok(ScramCredential {
            salt,
            stored_key,
            server_key,
            iterations,
        })
    }
}

fn check_iterations(mechanism: ScramMechanism, iterations: u32) -> Result<(), CredentialError> {
    if iterations < mechanism.min_iterations() {
        return Err(CredentialError::TooFewIterations {
            mechanism,
            iterations,
        });
    }
    if iterations > mechanism.max_iterations() {
        return Err(CredentialError::TooManyIterations {
            mechanism,
            iterations,
        });
    }
    Ok(())
}

/// A delegation token as SCRAM authenticates it: the token id is the SCRAM user name, the
/// credential is derived from the token's HMAC, and the principal is the token's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationTokenCredential {
    pub owner: String,
    pub credential: ScramCredential,
    pub expiry_timestamp_ms: i64,
}

/// Where a SCRAM server finds credentials (Kafka's ScramServerCallbackHandler). `Ok(None)` is
/// an unknown user or token; `Err` a store that could not answer.
pub trait ScramCredentialLookup {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Result<Option<ScramCredential>, LookupError>;

    /// A delegation token by id, for the `tokenauth=true` extension. None by default.
    fn delegation_token(
        &self,
        _mechanism: ScramMechanism,
        _token_id: &str,
    ) -> Result<Option<DelegationTokenCredential>, LookupError> {
        Ok(None)
    }
}

impl<T: ScramCredentialLookup + ?Sized> ScramCredentialLookup for &T {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Result<Option<ScramCredential>, LookupError> {
        (**self).scram_credential(mechanism, username)
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Result<Option<DelegationTokenCredential>, LookupError> {
        (**self).delegation_token(mechanism, token_id)
    }
}

impl<T: ScramCredentialLookup + ?Sized> ScramCredentialLookup for Arc<T> {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Result<Option<ScramCredential>, LookupError> {
        (**self).scram_credential(mechanism, username)
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Result<Option<DelegationTokenCredential>, LookupError> {
        (**self).delegation_token(mechanism, token_id)
    }
}

/// Credentials held in memory, by mechanism and user (or token id).
#[derive(Debug, Clone, Default)]
pub struct ScramCredentialTable {
    users: HashMap<(ScramMechanism, String), ScramCredential>,
    tokens: HashMap<(ScramMechanism, String), DelegationTokenCredential>,
}

impl ScramCredentialTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(
        &mut self,
        mechanism: ScramMechanism,
        username: &str,
        credential: ScramCredential,
    ) {
        self.users
            .insert((mechanism, username.to_string()), credential);
    }

    pub fn remove(&mut self, mechanism: ScramMechanism, username: &str) -> Option<ScramCredential> {
        self.users.remove(&(mechanism, username.to_string()))
    }

    pub fn insert_token(
        &mut self,
        mechanism: ScramMechanism,
        token_id: &str,
        token: DelegationTokenCredential,
    ) {
        self.tokens.insert((mechanism, token_id.to_string()), token);
    }
}

impl ScramCredentialLookup for ScramCredentialTable {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Result<Option<ScramCredential>, LookupError> {
        Ok(self.users.get(&(mechanism, username.to_string())).cloned())
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Result<Option<DelegationTokenCredential>, LookupError> {
        Ok(self.tokens.get(&(mechanism, token_id.to_string())).cloned())
    }
}
