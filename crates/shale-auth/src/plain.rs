//! SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer serves it, and the user table of a
//! `PlainLoginModule` JAAS entry (Kafka's PlainServerCallbackHandler).

use std::collections::HashMap;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::error::{AuthError, JaasError, LookupError, RandomError};
use crate::jaas::{JaasEntry, PLAIN_LOGIN_MODULE};
use crate::mechanism::Mechanism;
use crate::random;
use crate::server::{check_token_len, Principal, SaslServer, Step};

/// The JAAS option prefix naming a PLAIN user: `user_<name>="<password>"`.
pub const JAAS_USER_PREFIX: &str = "user_";

/// Checks a PLAIN user name and password (Kafka's PlainAuthenticateCallback).
pub trait PlainAuthenticator {
    /// `Ok(false)` for an unknown user or a wrong password alike; `Err` only when the check
    /// itself could not be made.
    fn authenticate(&self, username: &str, password: &str) -> Result<bool, LookupError>;
}

impl<T: PlainAuthenticator + ?Sized> PlainAuthenticator for &T {
    fn authenticate(&self, username: &str, password: &str) -> Result<bool, LookupError> {
        (**self).authenticate(username, password)
    }
}

impl<T: PlainAuthenticator + ?Sized> PlainAuthenticator for Arc<T> {
    fn authenticate(&self, username: &str, password: &str) -> Result<bool, LookupError> {
        (**self).authenticate(username, password)
    }
}

type Digest = [u8; 32];

/// PLAIN users and their passwords. A password is kept only as an HMAC under a key drawn for
/// this table, so that every comparison is of equal length and in constant time, and the
/// table never holds a password.
#[derive(Clone)]
pub struct PlainUsers {
    key: [u8; 32],
    digests: HashMap<String, Digest>,
}

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.digests.keys().collect();
        names.sort();
        f.debug_struct("PlainUsers").field("users", &names).finish()
    }
}

impl PlainUsers {
    pub fn new() -> Result<Self, RandomError> {
        let mut key = [0u8; 32];
        random::fill(&mut key)?;
        Ok(PlainUsers {
            key,
            digests: HashMap::new(),
        })
    }

    /// The `user_<name>` options of a `PlainLoginModule` entry.
    pub fn from_jaas(entry: &JaasEntry) -> Result<Self, JaasError> {
        if entry.login_module != PLAIN_LOGIN_MODULE {
            return Err(JaasError::WrongLoginModule {
                found: entry.login_module.clone(),
                expected: PLAIN_LOGIN_MODULE,
                mechanism: "SASL/PLAIN",
            });
        }
        let mut users = PlainUsers::new()?;
        for (key, password) in &entry.options {
            if let Some(name) = key.strip_prefix(JAAS_USER_PREFIX) {
                users.insert(name, password);
            }
        }
        Ok(users)
    }

    /// The users of a JAAS configuration value holding one `PlainLoginModule` entry.
    pub fn from_jaas_config(text: &str) -> Result<Self, JaasError> {
        PlainUsers::from_jaas(&JaasEntry::parse_single(text)?)
    }

    /// Adds a user or replaces its password.
    pub fn insert(&mut self, username: &str, password: &str) {
        let digest = self.digest(password);
        self.digests.insert(username.to_string(), digest);
    }

    pub fn contains(&self, username: &str) -> bool {
        self.digests.contains_key(username)
    }

    pub fn len(&self) -> usize {
        self.digests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    fn digest(&self, password: &str) -> Digest {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes keys of any length");
        mac.update(password.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

impl PlainAuthenticator for PlainUsers {
    fn authenticate(&self, username: &str, password: &str) -> Result<bool, LookupError> {
        let offered = self.digest(password);
        // An unknown user costs the same comparison as a known one.
        let (expected, known) = match self.digests.get(username) {
            Some(d) => (*d, true),
            None => ([0u8; 32], false),
        };
        Ok(bool::from(offered.ct_eq(&expected)) && known)
    }
}

/// The three fields of a PLAIN message, decoded as Java does (invalid UTF-8 becomes U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainMessage {
    pub authzid: String,
    pub authcid: String,
    pub password: String,
}

impl PlainMessage {
    /// `[authzid] NUL authcid NUL passwd`. As Kafka, at most four NUL-separated pieces are
    /// counted, and anything but three is refused.
    pub fn parse(bytes: &[u8]) -> Result<Self, AuthError> {
        let mut pieces = bytes.splitn(4, |&b| b == 0);
        let mut next = || {
            pieces
                .next()
                .map(|p| String::from_utf8_lossy(p).into_owned())
        };
        let (authzid, authcid, password, extra) = (next(), next(), next(), next());
        let count = [&authzid, &authcid, &password, &extra]
            .iter()
            .filter(|p| p.is_some())
            .count();
        match (authzid, authcid, password, extra) {
            (Some(authzid), Some(authcid), Some(password), None) => Ok(PlainMessage {
                authzid,
                authcid,
                password,
            }),
            _ => Err(AuthError::PlainTokenCount { tokens: count }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlainState {
    ReceiveResponse,
    Complete,
    Failed,
}

/// The server side of one PLAIN exchange: a single client token, answered with nothing.
#[derive(Debug)]
pub struct PlainServer<A> {
    authenticator: A,
    state: PlainState,
}

impl<A: PlainAuthenticator> PlainServer<A> {
    pub fn new(authenticator: A) -> Self {
        PlainServer {
            authenticator,
            state: PlainState::ReceiveResponse,
        }
    }

    fn evaluate(&self, client_bytes: &[u8]) -> Result<Principal, AuthError> {
        check_token_len(client_bytes)?;
        let message = PlainMessage::parse(client_bytes)?;
        if message.authcid.is_empty() {
            return Err(AuthError::PlainUsernameMissing);
        }
        if message.password.is_empty() {
            return Err(AuthError::PlainPasswordMissing);
        }
        let authenticated = self
            .authenticator
            .authenticate(&message.authcid, &message.password)
            .map_err(AuthError::PlainCheckFailed)?;
        if !authenticated {
            return Err(AuthError::InvalidUsernameOrPassword);
        }
        // Checked after the password, as Kafka does, so it tells nothing of a wrong one.
        if !message.authzid.is_empty() && message.authzid != message.authcid {
            return Err(AuthError::AuthorizationIdMismatch);
        }
        Ok(Principal::user(message.authcid))
    }
}

impl<A: PlainAuthenticator> SaslServer for PlainServer<A> {
    fn mechanism(&self) -> Mechanism {
        Mechanism::Plain
    }

    fn step(&mut self, client_bytes: &[u8]) -> Result<Step, AuthError> {
        match self.state {
            PlainState::ReceiveResponse => {}
            PlainState::Complete => return Err(AuthError::UnexpectedToken { state: "COMPLETE" }),
            PlainState::Failed => return Err(AuthError::UnexpectedToken { state: "FAILED" }),
        }
        match self.evaluate(client_bytes) {
            Ok(principal) => {
                self.state = PlainState::Complete;
                Ok(Step::Done {
                    principal,
                    server_bytes: Vec::new(),
                })
            }
            Err(e) => {
                self.state = PlainState::Failed;
                Err(e)
            }
        }
    }
}
