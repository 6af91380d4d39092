//! Entry points shared by the cargo-fuzz targets (fuzz/) and the replay of their crash inputs
//! (tests/fuzz_regressions/). Each must return without panicking, whatever the input.

use std::sync::OnceLock;

use std::sync::Arc;

use crate::jaas::parse_jaas_config;
use crate::oauthbearer::{ClientInitialResponse, UnsecuredJws};
use crate::scram::messages::{ClientFinal, ClientFirst};
use crate::{
    OAuthBearerServer, PlainMessage, PlainServer, PlainUsers, SaslServer, ScramCredential,
    ScramCredentialTable, ScramMechanism, ScramServer, UnsecuredValidatorOptions,
};

/// The fuzz targets by name, as the regression replay finds them.
pub const TARGETS: &[&str] = &[
    "scram_client_first",
    "scram_client_final",
    "scram_exchange",
    "plain",
    "jaas",
    "oauthbearer",
];

/// Runs the fuzz target called `target`; unknown names do nothing.
pub fn run(target: &str, data: &[u8]) {
    match target {
        "scram_client_first" => {
            let _ = ClientFirst::parse(data);
        }
        "scram_client_final" => {
            let _ = ClientFinal::parse(data);
        }
        "scram_exchange" => scram_exchange(data),
        "plain" => plain(data),
        "jaas" => {
            let _ = parse_jaas_config(&String::from_utf8_lossy(data));
        }
        "oauthbearer" => oauthbearer(data),
        _ => {}
    }
}

fn scram_table() -> Option<&'static ScramCredentialTable> {
    static TABLE: OnceLock<Option<ScramCredentialTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut table = ScramCredentialTable::new();
            for mechanism in ScramMechanism::ALL {
                let credential =
                    ScramCredential::derive_with_salt(mechanism, "pencil", b"salt", 4096).ok()?;
                table.insert(mechanism, "user", credential);
            }
            Some(table)
        })
        .as_ref()
}

/// A whole exchange: byte 0 picks the mechanism, the rest up to the first `\n` is the
/// client-first message and what follows it the client-final message.
fn scram_exchange(data: &[u8]) {
    let Some(table) = scram_table() else {
        return;
    };
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mechanism = ScramMechanism::ALL[usize::from(pick) % ScramMechanism::ALL.len()];
    let Some(mut server) = ScramServer::with_server_nonce(mechanism, table, "fuzz-nonce") else {
        return;
    };
    let (first, last) = match rest.iter().position(|&b| b == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    if server.step(first).is_ok() {
        let _ = server.step(last);
    }
    let _ = server.step(last);
}

fn plain(data: &[u8]) {
    static USERS: OnceLock<Option<PlainUsers>> = OnceLock::new();
    let _ = PlainMessage::parse(data);
    let users = USERS.get_or_init(|| {
        let mut users = PlainUsers::new().ok()?;
        users.insert("admin", "admin-secret");
        Some(users)
    });
    if let Some(users) = users {
        let mut server = PlainServer::new(users);
        let _ = server.step(data);
        let _ = server.step(data);
    }
}

/// The initial-response grammar, the JWS reader on the raw input, and a whole exchange whose
/// second token is the client's `\x01` acknowledgement.
fn oauthbearer(data: &[u8]) {
    let _ = ClientInitialResponse::parse(data);
    let _ = UnsecuredJws::parse(&String::from_utf8_lossy(data), "sub", "scope");
    let options = UnsecuredValidatorOptions {
        required_scope: vec!["kafka".to_string()],
        allowable_clock_skew_ms: 1000,
        ..UnsecuredValidatorOptions::default()
    };
    let mut server = OAuthBearerServer::new(Arc::new(options), Arc::new(|| 1_700_000_000_000));
    if server.step(data).is_ok() {
        let _ = server.step(b"\x01");
    }
}
