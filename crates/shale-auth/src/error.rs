//! The crate's errors. `AuthError`'s texts are Kafka's own where Kafka has one, because some of
//! them reach the client (see [`AuthError::client_message`]).

use thiserror::Error;

use crate::mechanism::Mechanism;
use crate::scram::ScramServerError;

/// Why an exchange failed. After any of these the server is finished: every later token is
/// refused with [`AuthError::UnexpectedToken`].
#[derive(Debug, Error)]
pub enum AuthError {
    #[error("SASL token of {len_bytes} bytes is larger than the maximum of {max_bytes} bytes")]
    TokenTooLarge { len_bytes: usize, max_bytes: usize },
    #[error("Unexpected challenge in Sasl server state {state}")]
    UnexpectedToken { state: &'static str },

    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {tokens}")]
    PlainTokenCount { tokens: usize },
    #[error("Authentication failed: username not specified")]
    PlainUsernameMissing,
    #[error("Authentication failed: password not specified")]
    PlainPasswordMissing,
    #[error("Authentication failed: credentials for user could not be verified")]
    PlainCheckFailed(#[source] LookupError),
    #[error("Authentication failed: Invalid username or password")]
    InvalidUsernameOrPassword,
    #[error(
        "Authentication failed: Client requested an authorization id that is different from username"
    )]
    AuthorizationIdMismatch,

    #[error("Invalid SCRAM client first message format: {reason}")]
    InvalidClientFirst { reason: &'static str },
    #[error(
        "Invalid SCRAM client first message format: channel binding is not supported (gs2 header flag `{flag}`, only `n` is accepted)"
    )]
    ChannelBindingUnsupported { flag: char },
    #[error("Authentication failed: Invalid user credentials")]
    UnknownUser,
    #[error("Token Authentication failed: Invalid tokenId : {token_id}")]
    UnknownToken { token_id: String },
    #[error("Authentication failed: Credentials could not be obtained")]
    CredentialsUnavailable(#[source] LookupError),
    #[error("Iterations {iterations} is less than the minimum {min} for {mechanism}")]
    TooFewIterations {
        iterations: u32,
        min: u32,
        mechanism: &'static str,
    },
    #[error("Invalid SCRAM client final message format: {reason}")]
    InvalidClientFinal { reason: &'static str },
    #[error("Invalid channel binding in the final client message.")]
    ChannelBindingMismatch,
    #[error("Invalid client nonce in the final client message.")]
    NonceMismatch,
    #[error("Invalid client credentials")]
    InvalidProof,
    #[error("could not draw the server nonce")]
    Random(#[source] RandomError),

    #[error("Invalid OAUTHBEARER client first message{reason}")]
    InvalidOAuthBearerClientFirst { reason: &'static str },
    #[error("Invalid scheme in OAUTHBEARER client first message: {scheme}")]
    InvalidOAuthBearerScheme { scheme: String },
    /// The client acknowledged the JSON error sent for its token; Kafka ends the exchange with
    /// that JSON as the message.
    #[error("{json}")]
    OAuthBearerTokenRefused { json: String },
    #[error(
        "Authentication failed: Client requested an authorization id ({authorization_id}) that is different from the token's principal name ({principal})"
    )]
    OAuthBearerAuthorizationIdMismatch {
        authorization_id: String,
        principal: String,
    },
}

impl AuthError {
    /// Whether Kafka shows this error's own text to the client: its mechanisms raise
    /// `SaslAuthenticationException` for these, and a plain `SaslException` (whose text could
    /// tell whether a user exists) for the rest.
    pub fn is_client_visible(&self) -> bool {
        matches!(
            self,
            AuthError::PlainTokenCount { .. }
                | AuthError::PlainUsernameMissing
                | AuthError::PlainPasswordMissing
                | AuthError::PlainCheckFailed(_)
                | AuthError::InvalidUsernameOrPassword
                | AuthError::AuthorizationIdMismatch
                | AuthError::OAuthBearerTokenRefused { .. }
                | AuthError::OAuthBearerAuthorizationIdMismatch { .. }
        )
    }

    /// The text Kafka's SaslAuthenticate response carries for this failure: the error itself
    /// when it is client-visible, otherwise SaslServerAuthenticator's message naming only the
    /// phase and the mechanism.
    pub fn client_message(&self, mechanism: Mechanism, reauthentication: bool) -> String {
        if self.is_client_visible() {
            return self.to_string();
        }
        let phase = if reauthentication {
            "re-authentication"
        } else {
            "authentication"
        };
        format!(
            "Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"
        )
    }

    /// The RFC 5802 `e=` value for a failure of the client-final message, the one step after
    /// which a server-final message exists; `None` for every other failure.
    pub fn scram_server_error(&self) -> Option<ScramServerError> {
        match self {
            AuthError::InvalidClientFinal { .. } => Some(ScramServerError::InvalidEncoding),
            AuthError::ChannelBindingMismatch => Some(ScramServerError::ChannelBindingsDontMatch),
            AuthError::NonceMismatch => Some(ScramServerError::OtherError),
            AuthError::InvalidProof => Some(ScramServerError::InvalidProof),
            _ => None,
        }
    }
}

/// A credential store that could not answer (not: a user it does not know).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct LookupError {
    pub message: String,
}

impl LookupError {
    pub fn new(message: impl Into<String>) -> Self {
        LookupError {
            message: message.into(),
        }
    }
}

/// The operating system's random source failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the operating system's random source failed: {0}")]
pub struct RandomError(pub(crate) String);

/// Why a SCRAM credential could not be made. The iteration texts are those of Kafka's
/// AlterUserScramCredentials.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CredentialError {
    #[error("Too few iterations")]
    TooFewIterations {
        mechanism: crate::ScramMechanism,
        iterations: u32,
    },
    #[error("Too many iterations")]
    TooManyIterations {
        mechanism: crate::ScramMechanism,
        iterations: u32,
    },
    #[error("the salt of a SCRAM credential must not be empty")]
    EmptySalt,
    #[error("the salted password of a SCRAM credential must not be empty")]
    EmptySaltedPassword,
    #[error("the {field} of a {mechanism} credential has {len_bytes} bytes, not {expected_bytes}")]
    KeyLength {
        mechanism: crate::ScramMechanism,
        field: &'static str,
        len_bytes: usize,
        expected_bytes: usize,
    },
    #[error(transparent)]
    Random(#[from] RandomError),
}

/// Why a JAAS configuration value was refused. The texts follow Kafka's JaasConfig and
/// JaasContext where they have one; the rest name the place (a byte offset) that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JaasError {
    #[error("Login module not specified in JAAS config")]
    NoLoginModule,
    #[error("JAAS config property contains {count} login modules, should be 1 module")]
    ModuleCount { count: usize },
    #[error(
        "Login module class name expected at offset {offset} of the JAAS config, found {found}"
    )]
    LoginModuleExpected { offset: usize, found: String },
    #[error("Login module control flag not specified in JAAS config")]
    ControlFlagMissing,
    #[error("Invalid login module control flag '{flag}' in JAAS config")]
    InvalidControlFlag { flag: String },
    #[error("Option name expected at offset {offset} of the JAAS config, found {found}")]
    KeyExpected { offset: usize, found: String },
    #[error("Value not specified for key '{key}' in JAAS config")]
    ValueMissing { key: String },
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminated,
    #[error("Unterminated quoted value starting at offset {offset} of the JAAS config")]
    UnterminatedQuote { offset: usize },
    #[error("Unterminated /* comment starting at offset {offset} of the JAAS config")]
    UnterminatedComment { offset: usize },
    #[error("option {key} of the {module} entry is not read by Shale, so it would have no effect; remove it")]
    UnreadOption { key: String, module: &'static str },
    #[error("invalid value of option {key}: {reason}")]
    InvalidOption { key: String, reason: String },
    #[error("JAAS config names login module '{found}', but {mechanism} needs {expected}")]
    WrongLoginModule {
        found: String,
        expected: &'static str,
        mechanism: &'static str,
    },
    #[error(transparent)]
    Random(#[from] RandomError),
}
