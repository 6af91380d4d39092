//! The server's side of a SCRAM exchange (Kafka's ScramSaslServer): client-first in,
//! server-first out; client-final in, server-final out.

use subtle::ConstantTimeEq;

use crate::error::AuthError;
use crate::mechanism::{Mechanism, ScramMechanism};
use crate::random;
use crate::scram::credential::{ScramCredential, ScramCredentialLookup};
use crate::scram::crypto;
use crate::scram::messages::{self, is_valid_nonce, ClientFinal, ClientFirst};
use crate::server::{check_token_len, Principal, SaslServer, Step};

/// What the first round leaves for the second.
struct Exchange {
    gs2_header: String,
    /// `client-first-message-bare "," server-first-message`: the AuthMessage's start.
    auth_message_head: String,
    combined_nonce: String,
    credential: ScramCredential,
    principal: Principal,
}

enum State {
    ReceiveClientFirst,
    ReceiveClientFinal(Box<Exchange>),
    Complete,
    Failed,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::ReceiveClientFirst => "RECEIVE_CLIENT_FIRST_MESSAGE",
            State::ReceiveClientFinal(_) => "RECEIVE_CLIENT_FINAL_MESSAGE",
            State::Complete => "COMPLETE",
            State::Failed => "FAILED",
        }
    }
}

/// One SCRAM exchange. Credentials are looked up once, on the client-first message, and
/// dropped when the exchange ends either way.
pub struct ScramServer<L> {
    mechanism: ScramMechanism,
    lookup: L,
    state: State,
    /// A fixed server nonce (test vectors); drawn at random when absent.
    server_nonce: Option<String>,
}

impl<L> std::fmt::Debug for ScramServer<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer")
            .field("mechanism", &self.mechanism)
            .field("state", &self.state.name())
            .finish_non_exhaustive()
    }
}

impl<L: ScramCredentialLookup> ScramServer<L> {
    pub fn new(mechanism: ScramMechanism, lookup: L) -> Self {
        ScramServer {
            mechanism,
            lookup,
            state: State::ReceiveClientFirst,
            server_nonce: None,
        }
    }

    /// A server whose nonce is given, for reproducible exchanges (RFC 7677's example). `None`
    /// when the nonce is not RFC 5802 `printable` (ASCII from `!` to `~` without `,`).
    pub fn with_server_nonce(
        mechanism: ScramMechanism,
        lookup: L,
        server_nonce: impl Into<String>,
    ) -> Option<Self> {
        let server_nonce = server_nonce.into();
        is_valid_nonce(&server_nonce).then(|| ScramServer {
            server_nonce: Some(server_nonce),
            ..ScramServer::new(mechanism, lookup)
        })
    }

    fn client_first(&self, client_bytes: &[u8]) -> Result<(Vec<u8>, Exchange), AuthError> {
        let first = ClientFirst::parse(client_bytes)?;
        let (credential, principal) = if first.token_authenticated() {
            let token = self
                .lookup
                .delegation_token(self.mechanism, &first.username)
                .map_err(AuthError::CredentialsUnavailable)?
                .ok_or_else(|| AuthError::UnknownToken {
                    token_id: first.username.clone(),
                })?;
            let principal = Principal {
                name: token.owner,
                token_authenticated: true,
                token_expiry_timestamp_ms: Some(token.expiry_timestamp_ms),
            };
            (token.credential, principal)
        } else {
            let credential = self
                .lookup
                .scram_credential(self.mechanism, &first.username)
                .map_err(AuthError::CredentialsUnavailable)?
                .ok_or(AuthError::UnknownUser)?;
            (credential, Principal::user(first.username.clone()))
        };
        // Kafka compares the authzid with the SCRAM user name (for a token: its id).
        if first
            .authzid
            .as_ref()
            .is_some_and(|authzid| *authzid != first.username)
        {
            return Err(AuthError::AuthorizationIdMismatch);
        }
        if credential.iterations < self.mechanism.min_iterations() {
            return Err(AuthError::TooFewIterations {
                iterations: credential.iterations,
                min: self.mechanism.min_iterations(),
                mechanism: self.mechanism.kafka_enum_name(),
            });
        }
        let server_nonce = match &self.server_nonce {
            Some(nonce) => nonce.clone(),
            None => random::server_nonce().map_err(AuthError::Random)?,
        };
        let combined_nonce = format!("{}{server_nonce}", first.nonce);
        let server_first =
            messages::server_first(&combined_nonce, &credential.salt, credential.iterations);
        let exchange = Exchange {
            gs2_header: first.gs2_header.to_string(),
            auth_message_head: format!("{},{server_first}", first.bare),
            combined_nonce,
            credential,
            principal,
        };
        Ok((server_first.into_bytes(), exchange))
    }

    fn client_final(&self, exchange: &Exchange, client_bytes: &[u8]) -> Result<Vec<u8>, AuthError> {
        let last = ClientFinal::parse(client_bytes)?;
        if last.channel_binding != exchange.gs2_header.as_bytes() {
            return Err(AuthError::ChannelBindingMismatch);
        }
        // CVE-2024-56128: the proof covers whatever nonce the client sends, so only this check
        // ties the final message to the nonce this server chose.
        if last.nonce != exchange.combined_nonce {
            return Err(AuthError::NonceMismatch);
        }
        let auth_message = format!("{},{}", exchange.auth_message_head, last.without_proof);
        let credential = &exchange.credential;
        if last.proof.len() != self.mechanism.hash_len_bytes() {
            return Err(AuthError::InvalidProof);
        }
        let client_signature = crypto::hmac(
            self.mechanism,
            &credential.stored_key,
            auth_message.as_bytes(),
        );
        let client_key = crypto::xor(&client_signature, &last.proof);
        let computed_stored_key = crypto::hash(self.mechanism, &client_key);
        if !bool::from(computed_stored_key.ct_eq(&credential.stored_key)) {
            return Err(AuthError::InvalidProof);
        }
        let server_signature = crypto::hmac(
            self.mechanism,
            &credential.server_key,
            auth_message.as_bytes(),
        );
        Ok(messages::server_final(&server_signature).into_bytes())
    }
}

impl<L: ScramCredentialLookup> SaslServer for ScramServer<L> {
    fn mechanism(&self) -> Mechanism {
        Mechanism::Scram(self.mechanism)
    }

    fn step(&mut self, client_bytes: &[u8]) -> Result<Step, AuthError> {
        // A failure leaves the server FAILED; so does a token after the exchange ended.
        match std::mem::replace(&mut self.state, State::Failed) {
            State::ReceiveClientFirst => check_token_len(client_bytes)
                .and_then(|()| self.client_first(client_bytes))
                .map(|(server_first, exchange)| {
                    self.state = State::ReceiveClientFinal(Box::new(exchange));
                    Step::Continue(server_first)
                }),
            State::ReceiveClientFinal(exchange) => check_token_len(client_bytes)
                .and_then(|()| self.client_final(&exchange, client_bytes))
                .map(|server_final| {
                    self.state = State::Complete;
                    Step::Done {
                        principal: exchange.principal,
                        server_bytes: server_final,
                    }
                }),
            State::Complete => Err(AuthError::UnexpectedToken { state: "COMPLETE" }),
            State::Failed => Err(AuthError::UnexpectedToken { state: "FAILED" }),
        }
    }
}
