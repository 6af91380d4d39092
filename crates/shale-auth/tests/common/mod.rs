//! A SCRAM client written from RFC 5802 for the tests, sharing no code with the server: its
//! Hi is the RFC's loop of HMACs, not the PBKDF2 crate the server uses.
#![allow(dead_code, clippy::unwrap_used)]

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use shale_auth::ScramMechanism;

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    STANDARD.decode(text).unwrap()
}

pub fn hmac(mechanism: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => {
            let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        ScramMechanism::Sha512 => {
            let mut m = Hmac::<Sha512>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
    }
}

pub fn hash(mechanism: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// RFC 5802's `Hi`: U1 = HMAC(str, salt + INT(1)), Ui = HMAC(str, Ui-1), XORed together.
pub fn hi(mechanism: ScramMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut block = salt.to_vec();
    block.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac(mechanism, password, &block);
    let mut out = u.clone();
    for _ in 1..iterations {
        u = hmac(mechanism, password, &u);
        for (o, x) in out.iter_mut().zip(&u) {
            *o ^= x;
        }
    }
    out
}

/// The fields of a server-first message.
pub struct ServerFirst {
    pub nonce: String,
    pub salt: Vec<u8>,
    pub iterations: u32,
}

pub fn parse_server_first(bytes: &[u8]) -> ServerFirst {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut parts = text.split(',');
    let nonce = parts
        .next()
        .unwrap()
        .strip_prefix("r=")
        .unwrap()
        .to_string();
    let salt = unb64(parts.next().unwrap().strip_prefix("s=").unwrap());
    let iterations = parts
        .next()
        .unwrap()
        .strip_prefix("i=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        parts.next().is_none(),
        "server-first has extra attributes: {text}"
    );
    ServerFirst {
        nonce,
        salt,
        iterations,
    }
}

pub struct ScramClient {
    pub mechanism: ScramMechanism,
    pub password: String,
    pub gs2_header: String,
    pub client_first_bare: String,
    pub client_nonce: String,
}

/// What the client sends last and what it expects back.
pub struct ClientFinal {
    pub message: Vec<u8>,
    pub expected_server_final: Vec<u8>,
}

impl ScramClient {
    /// `saslname` is the user name as written on the wire (escaped by the caller).
    pub fn new(
        mechanism: ScramMechanism,
        saslname: &str,
        password: &str,
        client_nonce: &str,
    ) -> Self {
        ScramClient {
            mechanism,
            password: password.to_string(),
            gs2_header: "n,,".to_string(),
            client_first_bare: format!("n={saslname},r={client_nonce}"),
            client_nonce: client_nonce.to_string(),
        }
    }

    pub fn with_authzid(mut self, authzid_saslname: &str) -> Self {
        self.gs2_header = format!("n,a={authzid_saslname},");
        self
    }

    pub fn with_extension(mut self, name: &str, value: &str) -> Self {
        self.client_first_bare.push_str(&format!(",{name}={value}"));
        self
    }

    pub fn client_first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header, self.client_first_bare).into_bytes()
    }

    /// The honest client-final message for this server-first.
    pub fn client_final(&self, server_first: &[u8]) -> ClientFinal {
        let nonce = parse_server_first(server_first).nonce;
        let without_proof = format!("c={},r={nonce}", b64(self.gs2_header.as_bytes()));
        self.sign(server_first, &without_proof)
    }

    /// A client-final message for any `client-final-message-without-proof`, with the proof
    /// a client knowing the password computes over it.
    pub fn sign(&self, server_first: &[u8], without_proof: &str) -> ClientFinal {
        let ServerFirst {
            nonce: combined,
            salt,
            iterations,
        } = parse_server_first(server_first);
        assert!(
            combined.starts_with(&self.client_nonce),
            "server nonce must extend the client's"
        );
        let m = self.mechanism;
        let salted = hi(m, self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(m, &salted, b"Client Key");
        let stored_key = hash(m, &client_key);
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare,
            std::str::from_utf8(server_first).unwrap()
        );
        let client_signature = hmac(m, &stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(m, &salted, b"Server Key");
        let server_signature = hmac(m, &server_key, auth_message.as_bytes());
        ClientFinal {
            message: format!("{without_proof},p={}", b64(&proof)).into_bytes(),
            expected_server_final: format!("v={}", b64(&server_signature)).into_bytes(),
        }
    }
}
