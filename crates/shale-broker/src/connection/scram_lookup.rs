//! SCRAM credentials for a SASL exchange, read from the metadata image when the client's first
//! message arrives (Kafka's CredentialCache, kept up to date from the metadata log): a user
//! created or deleted with AlterUserScramCredentials on any node counts from the next login
//! on every node. Delegation tokens are not served, so `tokenauth=true` finds none.

use std::sync::Arc;

use shale_auth::{LookupError, ScramCredential, ScramCredentialLookup, ScramMechanism};

use crate::broker::Broker;

pub(super) struct ImageScramCredentials {
    broker: Arc<Broker>,
}

impl ImageScramCredentials {
    pub(super) fn new(broker: Arc<Broker>) -> Self {
        ImageScramCredentials { broker }
    }
}

impl ScramCredentialLookup for ImageScramCredentials {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Result<Option<ScramCredential>, LookupError> {
        let image = self.broker.image();
        let Some(stored) = image.scram_credential(username, mechanism.kafka_type()) else {
            return Ok(None);
        };
        // A negative count from the log is no count at all: below every minimum, refused.
        let iterations = u32::try_from(stored.iterations).unwrap_or(0);
        ScramCredential::from_parts(
            mechanism,
            stored.salt.clone(),
            stored.stored_key.clone(),
            stored.server_key.clone(),
            iterations,
        )
        .map(Some)
        .map_err(|e| LookupError::new(format!("stored {mechanism} credential is unusable: {e}")))
    }
}
