//! The SCRAM messages a server reads and writes, with the grammar Kafka's ScramMessages
//! accepts: ASCII only, gs2 header `n` (no channel binding), `=2C`/`=3D` escapes in names,
//! attribute-value extensions.
//!
//! Unlike Kafka, the AuthMessage is built from the client's own bytes (RFC 5802), not from
//! the parsed fields put back together; for every message Kafka's clients send the two agree.

use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use crate::error::AuthError;
use crate::scram::TOKEN_AUTH_EXTENSION;

/// Base64 as Java's decoder reads it here: padding required (Kafka's pattern wants whole
/// quads), unused trailing bits tolerated.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Every byte in Kafka's character classes: ASCII without NUL.
fn ascii_without_nul(bytes: &[u8]) -> Option<&str> {
    if bytes.iter().all(|&b| (0x01..=0x7F).contains(&b)) {
        std::str::from_utf8(bytes).ok()
    } else {
        None
    }
}

/// RFC 5802's `printable`, as a nonce must be: `%x21-7E` without `,`.
pub fn is_valid_nonce(nonce: &str) -> bool {
    !nonce.is_empty()
        && nonce
            .bytes()
            .all(|b| (0x21..=0x7E).contains(&b) && b != b',')
}

/// A `saslname` turned back into the user name: `=2C` is `,`, `=3D` is `=`, any other `=`
/// (and an empty name) is refused.
pub fn decode_saslname(saslname: &str) -> Option<String> {
    if saslname.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(saslname.len());
    let mut rest = saslname;
    while let Some(at) = rest.find(['=', ',']) {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3)?;
        match escape {
            "=2C" => out.push(','),
            "=3D" => out.push('='),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// A user name written as a `saslname`.
pub fn encode_saslname(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

fn valid_extension(attr: &str) -> Option<(&str, &str)> {
    let (key, value) = attr.split_once('=')?;
    let key_ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphabetic());
    (key_ok && !value.is_empty()).then_some((key, value))
}

/// `client-first-message = gs2-header client-first-message-bare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst<'a> {
    /// `n,` then the optional `a=` authzid, then `,`: what the client-final `c=` must carry.
    pub gs2_header: &'a str,
    /// The authorization id the client asked for, unescaped.
    pub authzid: Option<String>,
    /// The user name (or delegation token id), unescaped.
    pub username: String,
    pub nonce: &'a str,
    /// The extensions in the client's order (Kafka reads `tokenauth`; the rest are ignored).
    pub extensions: Vec<(&'a str, &'a str)>,
    /// `client-first-message-bare`, the AuthMessage's first part.
    pub bare: &'a str,
}

impl<'a> ClientFirst<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, AuthError> {
        let invalid = |reason| AuthError::InvalidClientFirst { reason };
        let message = ascii_without_nul(bytes).ok_or(invalid("not ASCII text without NUL"))?;
        if message.starts_with("y,") {
            return Err(AuthError::ChannelBindingUnsupported { flag: 'y' });
        }
        if message.starts_with("p=") {
            return Err(AuthError::ChannelBindingUnsupported { flag: 'p' });
        }
        let after_flag = message
            .strip_prefix("n,")
            .ok_or(invalid("the gs2 header does not start with `n,`"))?;
        let (authzid, bare) = match after_flag.strip_prefix("a=") {
            Some(rest) => {
                let (raw, bare) = rest
                    .split_once(',')
                    .ok_or(invalid("the gs2 header does not end with `,`"))?;
                let authzid =
                    decode_saslname(raw).ok_or(invalid("the authzid is empty or badly escaped"))?;
                (Some(authzid), bare)
            }
            None => (
                None,
                after_flag
                    .strip_prefix(',')
                    .ok_or(invalid("the gs2 header has no `,` after `n,`"))?,
            ),
        };
        let gs2_header = &message[..message.len() - bare.len()];
        if bare.starts_with("m=") {
            return Err(invalid("mandatory extensions (`m=`) are not supported"));
        }
        let mut attrs = bare.split(',');
        let username = attrs
            .next()
            .and_then(|a| a.strip_prefix("n="))
            .ok_or(invalid("the user name (`n=`) is missing"))?;
        let username =
            decode_saslname(username).ok_or(invalid("the user name is empty or badly escaped"))?;
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(invalid("the nonce (`r=`) is missing"))?;
        if !is_valid_nonce(nonce) {
            return Err(invalid("the nonce is empty or not printable"));
        }
        let extensions = attrs
            .map(valid_extension)
            .collect::<Option<Vec<_>>>()
            .ok_or(invalid("an extension is not `name=value`"))?;
        Ok(ClientFirst {
            gs2_header,
            authzid,
            username,
            nonce,
            extensions,
            bare,
        })
    }

    /// The value of an extension; the last one given wins, as in Kafka's map.
    pub fn extension(&self, name: &str) -> Option<&'a str> {
        self.extensions
            .iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }

    /// `tokenauth=true` (case-insensitive, as Java's Boolean.parseBoolean).
    pub fn token_authenticated(&self) -> bool {
        self.extension(TOKEN_AUTH_EXTENSION)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// `client-final-message = channel-binding "," nonce ["," extensions] "," proof`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal<'a> {
    /// The decoded `c=` value: the gs2 header again, as no channel binding data is used.
    pub channel_binding: Vec<u8>,
    pub nonce: &'a str,
    pub proof: Vec<u8>,
    /// `client-final-message-without-proof`, the AuthMessage's last part.
    pub without_proof: &'a str,
}

impl<'a> ClientFinal<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, AuthError> {
        let invalid = |reason| AuthError::InvalidClientFinal { reason };
        let message = ascii_without_nul(bytes).ok_or(invalid("not ASCII text without NUL"))?;
        let (without_proof, proof) = message
            .rsplit_once(',')
            .ok_or(invalid("the proof (`p=`) is missing"))?;
        let proof = proof
            .strip_prefix("p=")
            .ok_or(invalid("the proof (`p=`) is not last"))?;
        let proof = BASE64
            .decode(proof)
            .map_err(|_| invalid("the proof is not base64"))?;
        let mut attrs = without_proof.split(',');
        let channel_binding = attrs
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or(invalid("the channel binding (`c=`) is missing"))?;
        let channel_binding = BASE64
            .decode(channel_binding)
            .map_err(|_| invalid("the channel binding is not base64"))?;
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(invalid("the nonce (`r=`) is missing"))?;
        if !is_valid_nonce(nonce) {
            return Err(invalid("the nonce is empty or not printable"));
        }
        if !attrs.all(|a| valid_extension(a).is_some()) {
            return Err(invalid("an extension is not `name=value`"));
        }
        Ok(ClientFinal {
            channel_binding,
            nonce,
            proof,
            without_proof,
        })
    }
}

/// `server-first-message`: `r=<client nonce><server nonce>,s=<salt>,i=<iterations>`.
pub fn server_first(nonce: &str, salt: &[u8], iterations: u32) -> String {
    format!("r={nonce},s={},i={iterations}", base64_encode(salt))
}

/// `server-final-message` after a verified proof: `v=<server signature>`.
pub fn server_final(server_signature: &[u8]) -> String {
    format!("v={}", base64_encode(server_signature))
}

/// RFC 5802's `server-error-value`s, sent as `e=<value>` in place of a server signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramServerError {
    InvalidEncoding,
    ExtensionsNotSupported,
    InvalidProof,
    ChannelBindingsDontMatch,
    ServerDoesSupportChannelBinding,
    ChannelBindingNotSupported,
    UnsupportedChannelBindingType,
    UnknownUser,
    InvalidUsernameEncoding,
    NoResources,
    OtherError,
}

impl ScramServerError {
    pub fn as_str(self) -> &'static str {
        match self {
            ScramServerError::InvalidEncoding => "invalid-encoding",
            ScramServerError::ExtensionsNotSupported => "extensions-not-supported",
            ScramServerError::InvalidProof => "invalid-proof",
            ScramServerError::ChannelBindingsDontMatch => "channel-bindings-dont-match",
            ScramServerError::ServerDoesSupportChannelBinding => {
                "server-does-support-channel-binding"
            }
            ScramServerError::ChannelBindingNotSupported => "channel-binding-not-supported",
            ScramServerError::UnsupportedChannelBindingType => "unsupported-channel-binding-type",
            ScramServerError::UnknownUser => "unknown-user",
            ScramServerError::InvalidUsernameEncoding => "invalid-username-encoding",
            ScramServerError::NoResources => "no-resources",
            ScramServerError::OtherError => "other-error",
        }
    }

    /// The whole `server-final-message`: `e=<value>`.
    pub fn server_final_message(self) -> String {
        format!("e={}", self.as_str())
    }
}

#[cfg(test)]
mod tests;
