//! Whatever a peer sends, the parsers and servers answer without panicking; and names survive
//! the saslname escaping in a whole exchange.
#![allow(clippy::unwrap_used)]

mod common;

use proptest::prelude::*;
use shale_auth::jaas::parse_jaas_config;
use shale_auth::scram::messages::{decode_saslname, encode_saslname, ClientFinal, ClientFirst};
use shale_auth::{
    PlainMessage, PlainServer, PlainUsers, SaslServer, ScramCredential, ScramCredentialTable,
    ScramMechanism, ScramServer, Step,
};

fn table() -> &'static ScramCredentialTable {
    static TABLE: std::sync::OnceLock<ScramCredentialTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = ScramCredentialTable::new();
        for m in ScramMechanism::ALL {
            table.insert(
                m,
                "user",
                ScramCredential::derive(m, "pencil", 4096).unwrap(),
            );
        }
        table
    })
}

/// Bytes that look like SCRAM messages often enough to get past the first checks.
fn scramish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        "[nypcrma=,_0-9A-Za-z+/%$=-]{0,80}".prop_map(String::into_bytes),
        "n,(a=[a-z=23CD]{0,4})?,n=(user|[a-z=,]{0,6}),r=[!-~]{0,12}(,[a-z]{1,3}=[ -~]{0,5}){0,3}"
            .prop_map(String::into_bytes),
        "c=(biws|[A-Za-z0-9+/=]{0,8}),r=[!-~]{0,12}(,[a-z]=[a-z]){0,2},p=[A-Za-z0-9+/=]{0,90}"
            .prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn scram_parsers_never_panic(bytes in scramish()) {
        let _ = ClientFirst::parse(&bytes);
        let _ = ClientFinal::parse(&bytes);
    }

    #[test]
    fn scram_servers_never_panic(first in scramish(), last in scramish(), sha512 in any::<bool>()) {
        let m = if sha512 { ScramMechanism::Sha512 } else { ScramMechanism::Sha256 };
        let mut server = ScramServer::new(m, table());
        let first_ok = server.step(&first).is_ok();
        let second = server.step(&last);
        if !first_ok {
            prop_assert!(second.is_err());
        }
        // Random bytes never carry a valid proof.
        let finished = matches!(second, Ok(Step::Done { .. }));
        prop_assert!(!finished);
    }

    #[test]
    fn plain_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = PlainMessage::parse(&bytes);
        let mut users = PlainUsers::new().unwrap();
        users.insert("admin", "admin-secret");
        let mut server = PlainServer::new(&users);
        let result = server.step(&bytes);
        if bytes != b"\0admin\0admin-secret" && bytes != b"admin\0admin\0admin-secret" {
            prop_assert!(result.is_err());
        }
        prop_assert!(server.step(&bytes).is_err());
    }

    #[test]
    fn jaas_parsing_never_panics(text in "[ -~\n\u{a0}-\u{ff}\u{100}-\u{10ff}]{0,120}") {
        let _ = parse_jaas_config(&text);
    }

    #[test]
    fn jaas_parsing_of_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_jaas_config(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn saslnames_round_trip(name in "[\u{1}-\u{7f}]{1,20}") {
        prop_assert_eq!(decode_saslname(&encode_saslname(&name)), Some(name));
    }
}

proptest! {
    // Each case derives a credential (4096 iterations), so fewer of them.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_ascii_user_and_password_round_trip(
        user in "[\u{1}-\u{7f}]{1,16}",
        password in "\\PC{1,16}",
        nonce in "[!-+--~]{1,24}",
        sha512 in any::<bool>(),
    ) {
        let m = if sha512 { ScramMechanism::Sha512 } else { ScramMechanism::Sha256 };
        let mut table = ScramCredentialTable::new();
        table.insert(m, &user, ScramCredential::derive(m, &password, 4096).unwrap());
        let mut server = ScramServer::new(m, &table);
        let client = common::ScramClient::new(m, &encode_saslname(&user), &password, &nonce);
        let Ok(Step::Continue(server_first)) = server.step(&client.client_first()) else {
            return Err(TestCaseError::fail("first round refused"));
        };
        let last = client.client_final(&server_first);
        match server.step(&last.message) {
            Ok(Step::Done { principal, server_bytes }) => {
                prop_assert_eq!(principal.name, user);
                prop_assert_eq!(server_bytes, last.expected_server_final);
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }
}
