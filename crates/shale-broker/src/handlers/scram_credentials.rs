//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka's KRaft
//! brokers answer them.
//!
//! Alter: the client sends, per upsertion, a salt, an iteration count and the salted password
//! (Kafka's admin client runs PBKDF2 itself). The broker turns the salted password into the
//! stored key and server key at once and forwards only those to the controller, which decides
//! as Kafka's ScramControlManager does; the records reach every node through the metadata log.
//! Describe: read from this node's metadata image (Kafka's ScramImage.describe): mechanisms and
//! iterations only, never salts or keys.

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_auth::{ScramCredential, ScramMechanism};
use shale_metadata::{
    ControllerRequest, ControllerResponse, MetadataError, MetadataImage, ScramDeletion,
    ScramUpsertion,
};

use crate::broker::Broker;
use crate::controller_calls::submit_and_apply;
use crate::errors::metadata_error_code;
use crate::request::RequestContext;

/// Kafka's ScramImage texts; the user's name follows them.
const DESCRIBE_DUPLICATE_USER: &str =
    "Cannot describe SCRAM credentials for the same user twice in a single request: ";
const DESCRIBE_UNKNOWN_USER: &str = "Attempt to describe a user credential that does not exist: ";

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

pub fn describe(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    DescribeUserScramCredentialsResponse::default()
        .with_results(describe_image(&broker.image(), request.users.map(names)))
}

fn names(users: Vec<UserName>) -> Vec<String> {
    users.into_iter().map(|u| u.name.to_string()).collect()
}

/// One result per distinct user: every user holding a credential when `users` is absent or
/// empty, else the users named (in the order first named), a name given twice refused.
fn describe_image(
    image: &MetadataImage,
    users: Option<Vec<String>>,
) -> Vec<DescribeUserScramCredentialsResult> {
    let requested = users.unwrap_or_default();
    let (wanted, duplicated): (Vec<String>, HashSet<String>) = if requested.is_empty() {
        let mut all: Vec<String> = image
            .scram_credentials()
            .map(|(user, _, _)| user.to_string())
            .collect();
        all.sort();
        all.dedup();
        (all, HashSet::new())
    } else {
        let mut seen = HashSet::new();
        let mut duplicated = HashSet::new();
        let mut wanted = Vec::new();
        for user in requested {
            if seen.insert(user.clone()) {
                wanted.push(user);
            } else {
                duplicated.insert(user);
            }
        }
        (wanted, duplicated)
    };
    wanted
        .into_iter()
        .map(|user| {
            let base = DescribeUserScramCredentialsResult::default().with_user(s(user.as_str()));
            if duplicated.contains(&user) {
                let refusal =
                    MetadataError::DuplicateResource(format!("{DESCRIBE_DUPLICATE_USER}{user}"));
                return refused(base, &refusal);
            }
            let infos: Vec<CredentialInfo> = ScramMechanism::ALL
                .into_iter()
                .filter_map(|m| {
                    let stored = image.scram_credential(&user, m.kafka_type())?;
                    Some(
                        CredentialInfo::default()
                            .with_mechanism(m.kafka_type())
                            .with_iterations(stored.iterations),
                    )
                })
                .collect();
            if infos.is_empty() {
                let refusal =
                    MetadataError::ResourceNotFound(format!("{DESCRIBE_UNKNOWN_USER}{user}"));
                return refused(base, &refusal);
            }
            base.with_credential_infos(infos)
        })
        .collect()
}

fn refused(
    base: DescribeUserScramCredentialsResult,
    refusal: &MetadataError,
) -> DescribeUserScramCredentialsResult {
    let (code, message) = metadata_error_code(refusal);
    base.with_error_code(code)
        .with_error_message(Some(s(message)))
}

pub async fn alter(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let mut users: Vec<String> = Vec::new();
    let mut note = |name: &str| {
        if !users.iter().any(|u| u == name) {
            users.push(name.to_string());
        }
    };
    let deletions: Vec<ScramDeletion> = request
        .deletions
        .into_iter()
        .map(|d| {
            note(d.name.as_str());
            ScramDeletion {
                name: d.name.to_string(),
                mechanism: d.mechanism,
            }
        })
        .collect();
    let upsertions: Vec<ScramUpsertion> = request
        .upsertions
        .into_iter()
        .map(|u| {
            note(u.name.as_str());
            let (stored_key, server_key) = derive_keys(u.mechanism, &u.salt, &u.salted_password);
            ScramUpsertion {
                name: u.name.to_string(),
                mechanism: u.mechanism,
                iterations: u.iterations,
                salt: u.salt.to_vec(),
                stored_key,
                server_key,
            }
        })
        .collect();
    let outcome = submit_and_apply(
        broker,
        ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        },
    )
    .await;
    let results = match outcome {
        Ok(ControllerResponse::AlterUserScramCredentials(results)) => results
            .into_iter()
            .map(|(user, r)| result(user, r.err()))
            .collect(),
        Ok(_) => users
            .into_iter()
            .map(|user| result(user, Some(MetadataError::NotController)))
            .collect(),
        Err(e) => users
            .into_iter()
            .map(|user| result(user, Some(e.clone())))
            .collect(),
    };
    AlterUserScramCredentialsResponse::default().with_results(results)
}

/// The stored key and server key of a salted password, or two empty keys when the mechanism
/// is unknown (the controller refuses it) or the salted password is empty (the controller
/// fails it, as Kafka's does).
fn derive_keys(mechanism: i8, salt: &[u8], salted_password: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let Some(mechanism) = ScramMechanism::from_kafka_type(mechanism) else {
        return (Vec::new(), Vec::new());
    };
    // The iteration count is the controller's to check; the keys do not depend on it.
    match ScramCredential::from_salted_password(mechanism, salt, salted_password, 0) {
        Ok(credential) => (credential.stored_key, credential.server_key),
        Err(_) => (Vec::new(), Vec::new()),
    }
}

fn result(user: String, error: Option<MetadataError>) -> AlterUserScramCredentialsResult {
    // Kafka's controller sets a success's message to null (a describe's stays "", the
    // message's default).
    let base = AlterUserScramCredentialsResult::default()
        .with_user(s(user))
        .with_error_message(None);
    match error {
        None => base,
        Some(e) => {
            let (code, message) = metadata_error_code(&e);
            // Kafka sends no text with an unexpected error (ApiError.fromThrowable).
            let message = (code != ResponseError::UnknownServerError.code()).then(|| s(message));
            base.with_error_code(code).with_error_message(message)
        }
    }
}

#[cfg(test)]
#[path = "scram_credentials_tests.rs"]
mod tests;
