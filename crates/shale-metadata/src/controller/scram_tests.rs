//! AlterUserScramCredentials against Kafka's ScramControlManager: its checks, texts, the one
//! alteration per user and request, and the order of its results.

use super::*;
use crate::controller::{ControllerConfig, ControllerRequest, ControllerResponse};
use crate::image::MetadataImage;

struct Harness {
    controller: Controller,
    image: MetadataImage,
}

impl Harness {
    fn new() -> Self {
        Harness {
            controller: Controller::new(ControllerConfig::default(), 42),
            image: MetadataImage::empty("cluster-a"),
        }
    }

    fn alter(
        &mut self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Vec<(String, Result<(), MetadataError>)> {
        let (response, records) = self.controller.handle(
            &self.image,
            ControllerRequest::AlterUserScramCredentials {
                deletions,
                upsertions,
            },
            1_000,
        );
        if !records.is_empty() {
            self.image = self.image.apply_entry(&records, self.image.offset + 1);
        }
        let ControllerResponse::AlterUserScramCredentials(results) = response else {
            panic!("unexpected answer {response:?}");
        };
        results
    }
}

fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramUpsertion {
    ScramUpsertion {
        name: name.into(),
        mechanism,
        iterations,
        salt: vec![1; 16],
        stored_key: vec![2; 32],
        server_key: vec![3; 32],
    }
}

fn delete(name: &str, mechanism: i8) -> ScramDeletion {
    ScramDeletion {
        name: name.into(),
        mechanism,
    }
}

/// (user, Kafka's code name or "ok", message) for comparing whole answers.
fn summary(results: &[(String, Result<(), MetadataError>)]) -> Vec<(String, String)> {
    results
        .iter()
        .map(|(user, r)| {
            let outcome = match r {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("{e:?}"),
            };
            (user.clone(), outcome)
        })
        .collect()
}

#[test]
fn upsertions_are_checked_as_kafka_checks_them() {
    let mut h = Harness::new();
    let results = h.alter(
        vec![],
        vec![
            upsert("alice", SCRAM_SHA_256, 8192),
            upsert("", SCRAM_SHA_256, 8192),
            upsert("bob", 3, 8192),
            upsert("carol", SCRAM_SHA_512, 4095),
            upsert("dave", SCRAM_SHA_512, 16385),
            upsert("erin", SCRAM_SHA_512, 4096),
            upsert("frank", SCRAM_SHA_256, 16384),
        ],
    );
    let err = |m: &str| m.to_string();
    assert_eq!(
        summary(&results),
        vec![
            ("alice".into(), "ok".into()),
            ("erin".into(), "ok".into()),
            ("frank".into(), "ok".into()),
            (
                "".into(),
                format!(
                    "{:?}",
                    MetadataError::UnacceptableCredential(err("Username must not be empty"))
                )
            ),
            (
                "bob".into(),
                format!(
                    "{:?}",
                    MetadataError::UnsupportedSaslMechanism(err("Unknown SCRAM mechanism"))
                )
            ),
            (
                "carol".into(),
                format!(
                    "{:?}",
                    MetadataError::UnacceptableCredential(err("Too few iterations"))
                )
            ),
            (
                "dave".into(),
                format!(
                    "{:?}",
                    MetadataError::UnacceptableCredential(err("Too many iterations"))
                )
            ),
        ]
    );
    let alice = h.image.scram_credential("alice", SCRAM_SHA_256).unwrap();
    assert_eq!(alice.iterations, 8192);
    assert_eq!(alice.stored_key, vec![2; 32]);
    assert!(h.image.scram_credential("alice", SCRAM_SHA_512).is_none());
    assert_eq!(h.image.scram_credentials().count(), 3);
}

#[test]
fn a_user_is_altered_once_per_request() {
    let mut h = Harness::new();
    h.alter(vec![], vec![upsert("alice", SCRAM_SHA_256, 4096)]);
    // Two mechanisms of one user are two alterations of that user, as in Kafka.
    let results = h.alter(
        vec![delete("alice", SCRAM_SHA_256)],
        vec![
            upsert("alice", SCRAM_SHA_512, 4096),
            upsert("bob", SCRAM_SHA_256, 4096),
            upsert("bob", SCRAM_SHA_512, 4096),
            upsert("bob", SCRAM_SHA_512, 4096),
        ],
    );
    let dup = format!("{:?}", MetadataError::DuplicateResource(DUPLICATE.into()));
    assert_eq!(
        summary(&results),
        vec![("alice".into(), dup.clone()), ("bob".into(), dup)]
    );
    // Nothing of a refused user changes.
    assert!(h.image.scram_credential("alice", SCRAM_SHA_256).is_some());
    assert!(h.image.scram_credential("alice", SCRAM_SHA_512).is_none());
    assert!(h.image.scram_credential("bob", SCRAM_SHA_256).is_none());
}

#[test]
fn a_first_refusal_stands_for_the_later_alterations_of_its_user() {
    let mut h = Harness::new();
    // The deletion of a credential that does not exist is refused first; the upsertion of the
    // same user is then not looked at (no DUPLICATE_RESOURCE), as in Kafka.
    let results = h.alter(
        vec![delete("ghost", SCRAM_SHA_256)],
        vec![upsert("ghost", SCRAM_SHA_256, 4096)],
    );
    assert_eq!(
        summary(&results),
        vec![(
            "ghost".into(),
            format!(
                "{:?}",
                MetadataError::ResourceNotFound(
                    "Attempt to delete a user credential that does not exist".into()
                )
            )
        )]
    );
    assert_eq!(h.image.scram_credentials().count(), 0);
}

#[test]
fn deletions_remove_one_mechanism_and_an_empty_salted_password_fails_last() {
    let mut h = Harness::new();
    h.alter(
        vec![],
        vec![
            upsert("alice", SCRAM_SHA_256, 4096),
            upsert("bob", SCRAM_SHA_512, 4096),
        ],
    );
    h.alter(vec![], vec![upsert("alice", SCRAM_SHA_512, 8192)]);
    let mut no_keys = upsert("carol", SCRAM_SHA_256, 4096);
    no_keys.stored_key.clear();
    no_keys.server_key.clear();
    let results = h.alter(
        vec![delete("alice", SCRAM_SHA_256), delete("bob", 7)],
        vec![no_keys],
    );
    assert_eq!(
        summary(&results),
        vec![
            ("alice".into(), "ok".into()),
            (
                "bob".into(),
                format!(
                    "{:?}",
                    MetadataError::UnsupportedSaslMechanism("Unknown SCRAM mechanism".into())
                )
            ),
            (
                "carol".into(),
                format!("{:?}", MetadataError::EmptySaltedPassword)
            ),
        ]
    );
    assert!(h.image.scram_credential("alice", SCRAM_SHA_256).is_none());
    assert_eq!(
        h.image
            .scram_credential("alice", SCRAM_SHA_512)
            .unwrap()
            .iterations,
        8192
    );
    assert!(h.image.scram_credential("carol", SCRAM_SHA_256).is_none());
}

#[test]
fn an_upsertion_replaces_the_credential_of_its_mechanism() {
    let mut h = Harness::new();
    h.alter(vec![], vec![upsert("alice", SCRAM_SHA_256, 4096)]);
    let mut again = upsert("alice", SCRAM_SHA_256, 12000);
    again.salt = vec![9; 20];
    let results = h.alter(vec![], vec![again]);
    assert_eq!(summary(&results), vec![("alice".into(), "ok".into())]);
    let alice = h.image.scram_credential("alice", SCRAM_SHA_256).unwrap();
    assert_eq!((alice.iterations, alice.salt.clone()), (12000, vec![9; 20]));
}
