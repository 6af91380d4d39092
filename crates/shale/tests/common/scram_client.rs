//! The client side of SCRAM for the tests, written from RFC 5802 (and Kafka's admin client for
//! the salted password AlterUserScramCredentials carries), sharing no code with the broker.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scram {
    Sha256,
    Sha512,
}

impl Scram {
    pub fn name(self) -> &'static str {
        match self {
            Scram::Sha256 => "SCRAM-SHA-256",
            Scram::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// Kafka's type byte in AlterUserScramCredentials and DescribeUserScramCredentials.
    pub fn kafka_type(self) -> i8 {
        match self {
            Scram::Sha256 => 1,
            Scram::Sha512 => 2,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Scram::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Scram::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).unwrap();
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Scram::Sha256 => Sha256::digest(data).to_vec(),
            Scram::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's `Hi(password, salt, i)`: what Kafka's admin client sends as the salted
    /// password.
    pub fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut block = salt.to_vec();
        block.extend_from_slice(&1u32.to_be_bytes());
        let mut u = self.hmac(password.as_bytes(), &block);
        let mut out = u.clone();
        for _ in 1..iterations {
            u = self.hmac(password.as_bytes(), &u);
            for (o, x) in out.iter_mut().zip(&u) {
                *o ^= x;
            }
        }
        out
    }
}

/// One client exchange: `first()`, then `last(server_first)`, then `verify(server_final)`.
pub struct ScramClient {
    mechanism: Scram,
    password: String,
    first_bare: String,
    nonce: String,
    expected_server_final: Option<Vec<u8>>,
}

impl ScramClient {
    /// `user` must not hold `,` or `=` (no escaping here).
    pub fn new(mechanism: Scram, user: &str, password: &str, nonce: &str) -> Self {
        ScramClient {
            mechanism,
            password: password.to_string(),
            first_bare: format!("n={user},r={nonce}"),
            nonce: nonce.to_string(),
            expected_server_final: None,
        }
    }

    pub fn first(&self) -> Vec<u8> {
        format!("n,,{}", self.first_bare).into_bytes()
    }

    /// The client-final message for the server-first message.
    pub fn last(&mut self, server_first: &[u8]) -> Vec<u8> {
        let text = std::str::from_utf8(server_first).unwrap();
        let mut nonce = "";
        let mut salt = Vec::new();
        let mut iterations = 0u32;
        for part in text.split(',') {
            if let Some(v) = part.strip_prefix("r=") {
                nonce = v;
            } else if let Some(v) = part.strip_prefix("s=") {
                salt = STANDARD.decode(v).unwrap();
            } else if let Some(v) = part.strip_prefix("i=") {
                iterations = v.parse().unwrap();
            }
        }
        assert!(nonce.starts_with(&self.nonce), "{text}");
        let m = self.mechanism;
        let salted = m.salted_password(&self.password, &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.first_bare);
        let signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        let server_signature = m.hmac(&server_key, auth_message.as_bytes());
        self.expected_server_final =
            Some(format!("v={}", STANDARD.encode(server_signature)).into_bytes());
        format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes()
    }

    /// Whether the server-final message proves the server knew the credential.
    pub fn verify(&self, server_final: &[u8]) -> bool {
        self.expected_server_final.as_deref() == Some(server_final)
    }
}
