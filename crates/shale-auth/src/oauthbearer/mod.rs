//! SASL/OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer serves it, with the token
//! checked by Kafka's default broker-side validator, OAuthBearerUnsecuredValidatorCallbackHandler:
//! an unsecured JWS (`alg` = `none`, no signature), so any client can name any principal.
//! Kafka documents it for test environments only; the broker warns when a listener uses it.
//!
//! The exchange: the client's initial response carries the token. A good token ends it with an
//! empty server message and the principal named by the principal claim. A refused token is
//! answered with Kafka's JSON error (`{"status":"invalid_token"}`) as a challenge; the client
//! acknowledges it with a single `\x01`, which ends the exchange with that JSON as the error.

mod initial_response;
mod jws;
mod options;

pub use initial_response::{ClientInitialResponse, AUTH_KEY, SEPARATOR};
pub use jws::{ClaimValue, UnsecuredJws};
pub use options::{
    UnsecuredValidatorOptions, ALLOWABLE_CLOCK_SKEW_MS_OPTION, OAUTHBEARER_LOGIN_MODULE,
    PRINCIPAL_CLAIM_NAME_OPTION, REQUIRED_SCOPE_OPTION, SCOPE_CLAIM_NAME_OPTION,
};

use std::sync::Arc;

use crate::error::AuthError;
use crate::mechanism::Mechanism;
use crate::server::{check_token_len, Principal, SaslServer, Step};

/// Why the validator refused a token: the RFC 6750 status and, for a missing scope, the scope
/// required (both sent to the client), and Kafka's reason (kept for the broker's log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFailure {
    pub status: &'static str,
    pub scope: Option<String>,
    pub reason: String,
}

impl TokenFailure {
    pub(crate) fn invalid_token(reason: impl Into<String>) -> Self {
        TokenFailure {
            status: "invalid_token",
            scope: None,
            reason: reason.into(),
        }
    }

    /// Kafka's `jsonErrorResponse`, byte for byte (including its `, ` between members).
    pub fn json(&self) -> String {
        let mut json = format!("{{\"status\":\"{}\"", self.status);
        if let Some(scope) = &self.scope {
            json.push_str(&format!(", \"scope\":\"{scope}\""));
        }
        json.push('}');
        json
    }
}

/// Checks a token as Kafka's unsecured validator does at `now_ms`.
pub fn validate_unsecured(
    token: &str,
    options: &UnsecuredValidatorOptions,
    now_ms: i64,
) -> Result<UnsecuredJws, TokenFailure> {
    let jws = UnsecuredJws::parse(
        token,
        &options.principal_claim_name,
        &options.scope_claim_name,
    )?;
    let skew_ms = options.allowable_clock_skew_ms;
    // Kafka compares in doubles.
    let (now, skew) = (now_ms as f64, skew_ms as f64);
    if let Some(iat) = jws.issued_at_seconds {
        if 1000.0 * iat > now + skew {
            return Err(TokenFailure::invalid_token(format!(
                "The Issued At value ({iat:.6} seconds) was after the indicated time ({now_ms} ms) \
                 plus allowable clock skew ({skew_ms} ms)"
            )));
        }
    }
    let exp = jws.expiration_time_seconds;
    if now >= 1000.0 * exp + skew {
        return Err(TokenFailure::invalid_token(format!(
            "The indicated time ({now_ms} ms) minus allowable clock skew ({skew_ms} ms) was on or \
             after the Expiration Time value ({exp:.6} seconds)"
        )));
    }
    if let (Some(start_ms), Some(iat)) = (jws.start_time_ms, jws.issued_at_seconds) {
        if jws.lifetime_ms <= start_ms {
            return Err(TokenFailure::invalid_token(format!(
                "The Expiration Time time ({exp:.6} seconds) was not after the Issued At time \
                 ({iat:.6} seconds)"
            )));
        }
    }
    if let Some(missing) = options
        .required_scope
        .iter()
        .find(|required| !jws.scope.contains(required))
    {
        // Java's List.toString.
        let required = format!("[{}]", options.required_scope.join(", "));
        return Err(TokenFailure {
            status: "insufficient_scope",
            scope: Some(required.clone()),
            reason: format!(
                "The provided scope ([{}]) was missing a required scope ({missing}).  All required \
                 scope elements: {required}",
                jws.scope.join(", ")
            ),
        });
    }
    Ok(jws)
}

/// The current time in milliseconds since the epoch; a parameter so tests can fix it.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

enum State {
    ReceiveInitialResponse,
    /// The JSON error was sent; a `\x01` ends the exchange with it.
    ErrorSent(TokenFailure),
    Finished,
}

/// The server side of one OAUTHBEARER exchange.
pub struct OAuthBearerServer {
    options: Arc<UnsecuredValidatorOptions>,
    clock: Clock,
    state: State,
    /// The refusal of the last token, for the broker's log.
    last_failure: Option<TokenFailure>,
}

impl OAuthBearerServer {
    pub fn new(options: Arc<UnsecuredValidatorOptions>, clock: Clock) -> Self {
        OAuthBearerServer {
            options,
            clock,
            state: State::ReceiveInitialResponse,
            last_failure: None,
        }
    }

    /// Why the last token was refused (Kafka's reason, which the client is not told).
    pub fn last_failure(&self) -> Option<&TokenFailure> {
        self.last_failure.as_ref()
    }

    fn evaluate(&mut self, client_bytes: &[u8]) -> Result<Step, AuthError> {
        check_token_len(client_bytes)?;
        let response = ClientInitialResponse::parse(client_bytes)?;
        let jws = match validate_unsecured(&response.token, &self.options, (self.clock)()) {
            Ok(jws) => jws,
            Err(failure) => {
                let json = failure.json();
                self.last_failure = Some(failure.clone());
                self.state = State::ErrorSent(failure);
                return Ok(Step::Continue(json.into_bytes()));
            }
        };
        if !response.authorization_id.is_empty() && response.authorization_id != jws.principal_name
        {
            return Err(AuthError::OAuthBearerAuthorizationIdMismatch {
                authorization_id: response.authorization_id,
                principal: jws.principal_name,
            });
        }
        // The unsecured validator accepts every extension, so none can be refused here.
        self.state = State::Finished;
        Ok(Step::Done {
            principal: Principal {
                name: jws.principal_name,
                token_authenticated: false,
                token_expiry_timestamp_ms: Some(jws.lifetime_ms),
            },
            server_bytes: Vec::new(),
        })
    }
}

impl SaslServer for OAuthBearerServer {
    fn mechanism(&self) -> Mechanism {
        Mechanism::OAuthBearer
    }

    fn step(&mut self, client_bytes: &[u8]) -> Result<Step, AuthError> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Finished => Err(AuthError::UnexpectedToken { state: "COMPLETE" }),
            State::ErrorSent(failure) if client_bytes == [SEPARATOR] => {
                Err(AuthError::OAuthBearerTokenRefused {
                    json: failure.json(),
                })
            }
            // Kafka reads anything else after its error as a new initial response.
            State::ErrorSent(_) | State::ReceiveInitialResponse => self.evaluate(client_bytes),
        }
    }
}

#[cfg(test)]
mod tests;
