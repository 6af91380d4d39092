//! DescribeUserScramCredentials against Kafka's ScramImage.describe, and the keys an
//! upsertion's salted password becomes.

use shale_metadata::MetadataRecord;

use super::*;

fn image_with(creds: &[(&str, i8, i32)]) -> MetadataImage {
    let mut image = MetadataImage::empty("c");
    for (name, mechanism, iterations) in creds {
        image.replay(&MetadataRecord::UserScramCredential {
            name: name.to_string(),
            mechanism: *mechanism,
            salt: vec![1; 16],
            stored_key: vec![2; 32],
            server_key: vec![3; 32],
            iterations: *iterations,
        });
    }
    image
}

/// (user, code, message, [(mechanism, iterations)]) of each result.
type Row = (String, i16, Option<String>, Vec<(i8, i32)>);

fn rows(results: Vec<DescribeUserScramCredentialsResult>) -> Vec<Row> {
    results
        .into_iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.map(|m| m.to_string()),
                r.credential_infos
                    .iter()
                    .map(|i| (i.mechanism, i.iterations))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn describing_every_user_lists_mechanisms_and_iterations() {
    let image = image_with(&[("bob", 2, 4096), ("alice", 2, 16384), ("alice", 1, 8192)]);
    let expected: Vec<Row> = vec![
        (
            "alice".into(),
            0,
            Some("".into()),
            vec![(1, 8192), (2, 16384)],
        ),
        ("bob".into(), 0, Some("".into()), vec![(2, 4096)]),
    ];
    assert_eq!(rows(describe_image(&image, None)), expected);
    assert_eq!(rows(describe_image(&image, Some(vec![]))), expected);
    assert!(describe_image(&MetadataImage::empty("c"), None).is_empty());
}

#[test]
fn named_users_unknown_and_twice_named_are_refused_with_kafkas_texts() {
    let image = image_with(&[("alice", 1, 8192)]);
    let asked = ["ghost", "alice", "bob", "bob", "bob", ""].map(String::from);
    assert_eq!(
        rows(describe_image(&image, Some(asked.to_vec()))),
        vec![
            (
                "ghost".into(),
                91,
                Some("Attempt to describe a user credential that does not exist: ghost".into()),
                vec![]
            ),
            ("alice".into(), 0, Some("".into()), vec![(1, 8192)]),
            (
                "bob".into(),
                92,
                Some(
                    "Cannot describe SCRAM credentials for the same user twice in a single \
                     request: bob"
                        .into()
                ),
                vec![]
            ),
            (
                "".into(),
                91,
                Some("Attempt to describe a user credential that does not exist: ".into()),
                vec![]
            ),
        ]
    );
}

#[test]
fn a_salted_password_becomes_its_keys_and_nothing_else() {
    let salted = [7u8; 32];
    let (stored, server) = derive_keys(1, b"salt", &salted);
    let expected =
        ScramCredential::from_salted_password(ScramMechanism::Sha256, b"salt", &salted, 4096)
            .unwrap();
    assert_eq!((stored.len(), server.len()), (32, 32));
    assert_eq!((stored, server), (expected.stored_key, expected.server_key));
    let (stored, server) = derive_keys(2, b"salt", &salted);
    assert_eq!((stored.len(), server.len()), (64, 64));
    assert_ne!(stored, salted.to_vec());
    assert_eq!(derive_keys(3, b"salt", &salted), (vec![], vec![]));
    assert_eq!(derive_keys(1, b"salt", b""), (vec![], vec![]));
}

#[test]
fn an_unexpected_failure_carries_no_text_and_the_others_theirs() {
    let failed = result("carol".into(), Some(MetadataError::EmptySaltedPassword));
    assert_eq!((failed.error_code, failed.error_message), (-1, None));
    let refused = result(
        "dave".into(),
        Some(MetadataError::UnacceptableCredential(
            "Too few iterations".into(),
        )),
    );
    assert_eq!(refused.error_code, 93);
    assert_eq!(
        refused.error_message.unwrap().as_str(),
        "Too few iterations"
    );
    let ok = result("erin".into(), None);
    assert_eq!((ok.error_code, ok.error_message), (0, None));
}
