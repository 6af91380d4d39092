//! The client's initial response of OAUTHBEARER (RFC 7628 section 3.1), read by the rules of
//! Kafka's OAuthBearerClientInitialResponse:
//! `n,[a=<saslname>],\x01(<key>=<value>\x01)*\x01`, where one key is `auth`, whose value is
//! `Bearer <token>`, and every other key is a SASL extension.

use std::collections::BTreeMap;

use crate::error::AuthError;

/// RFC 7628's separator between the GS2 header and each key/value pair.
pub const SEPARATOR: u8 = 0x01;

/// The key holding `Bearer <token>`; never an extension.
pub const AUTH_KEY: &str = "auth";

/// One parsed client initial response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    /// The `a=` value as sent (`=2C` and `=3D` not decoded, as in Kafka); empty when absent.
    pub authorization_id: String,
    /// The token after `Bearer `.
    pub token: String,
    /// Every key but `auth`; a key given twice keeps its last value, as Kafka's map does.
    pub extensions: BTreeMap<String, String>,
}

fn invalid(reason: &'static str) -> AuthError {
    AuthError::InvalidOAuthBearerClientFirst { reason }
}

impl ClientInitialResponse {
    pub fn parse(bytes: &[u8]) -> Result<Self, AuthError> {
        // Every character class of Kafka's pattern is ASCII, so any other byte fails it.
        if !bytes.is_ascii() {
            return Err(invalid(""));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| invalid(""))?;
        let rest = text.strip_prefix("n,").ok_or_else(|| invalid(""))?;
        let (authorization_id, rest) = match rest.strip_prefix("a=") {
            Some(after) => {
                let end = after.find(',').ok_or_else(|| invalid(""))?;
                let authzid = &after[..end];
                if !is_sasl_name(authzid) {
                    return Err(invalid(""));
                }
                (authzid.to_string(), &after[end..])
            }
            None => (String::new(), rest),
        };
        let rest = rest.strip_prefix(",\u{1}").ok_or_else(|| invalid(""))?;
        // What is left: `(<key>=<value>\x01)*` and the final `\x01`.
        let pairs = rest.strip_suffix('\u{1}').ok_or_else(|| invalid(""))?;
        let mut properties = BTreeMap::new();
        if !pairs.is_empty() {
            let body = pairs.strip_suffix('\u{1}').ok_or_else(|| invalid(""))?;
            for pair in body.split('\u{1}') {
                let (key, value) = pair.split_once('=').ok_or_else(|| invalid(""))?;
                if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return Err(invalid(""));
                }
                if value.is_empty() || !value.bytes().all(is_value_byte) {
                    return Err(invalid(""));
                }
                properties.insert(key.to_string(), value.to_string());
            }
        }
        let auth = properties
            .remove(AUTH_KEY)
            .ok_or_else(|| invalid(": 'auth' not specified"))?;
        let token = bearer_token(&auth)?;
        Ok(ClientInitialResponse {
            authorization_id,
            token,
            extensions: properties,
        })
    }
}

/// Kafka's SASLNAME: one or more of `%x01-7F` except `=` and `,`, or `=2C` / `=3D`.
fn is_sasl_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'=' => {
                let escape = bytes.get(at + 1..at + 3);
                if escape != Some(b"2C") && escape != Some(b"3D") {
                    return false;
                }
                at += 3;
            }
            b',' | 0 => return false,
            b if b <= 0x7f => at += 1,
            _ => return false,
        }
    }
    !bytes.is_empty()
}

/// Kafka's extension value: `%x21-7E`, space, tab, CR, LF.
fn is_value_byte(b: u8) -> bool {
    matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n')
}

/// `<scheme> +<token>` with the scheme `bearer` in any case and the token of
/// `[-_.a-zA-Z0-9]+`, as Kafka's AUTH_PATTERN.
fn bearer_token(auth: &str) -> Result<String, AuthError> {
    let format = || invalid(": invalid 'auth' format");
    let (scheme, rest) = auth.split_once(' ').ok_or_else(format)?;
    let token = rest.trim_start_matches(' ');
    let scheme_ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let token_ok = !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !scheme_ok || !token_ok {
        return Err(format());
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::InvalidOAuthBearerScheme {
            scheme: scheme.to_string(),
        });
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gs2_header_auth_and_extensions_are_read() {
        let parsed = ClientInitialResponse::parse(
            b"n,a=alice,\x01auth=Bearer a.b.\x01traceId=x y=z\x01\x01",
        )
        .unwrap();
        assert_eq!(parsed.authorization_id, "alice");
        assert_eq!(parsed.token, "a.b.");
        assert_eq!(parsed.extensions.len(), 1);
        assert_eq!(parsed.extensions["traceId"], "x y=z");
        let bare = ClientInitialResponse::parse(b"n,,\x01auth=bearer   tok\x01\x01").unwrap();
        assert_eq!(bare.authorization_id, "");
        assert_eq!(bare.token, "tok");
        assert!(bare.extensions.is_empty());
        let escaped = ClientInitialResponse::parse(b"n,a=a=2Cb=3D,\x01auth=Bearer t\x01\x01");
        assert_eq!(escaped.unwrap().authorization_id, "a=2Cb=3D");
    }

    #[test]
    fn malformed_messages_are_refused() {
        let cases: &[&[u8]] = &[
            b"",
            b"\x01",
            b"y,,\x01auth=Bearer t\x01\x01",
            b"n,a=,\x01auth=Bearer t\x01\x01",
            b"n,a=x=41,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t\x01",
            b"n,,auth=Bearer t\x01\x01",
            b"n,,\x01\x01",
            b"n,,\x01auth=Bearer t\x01k1=v\x01\x01",
            b"n,,\x01auth=Bearer t\x01k=\x01\x01",
            b"n,,\x01auth=Bearer t\x01=v\x01\x01",
            b"n,,\x01auth=Bearer\x01\x01",
            b"n,,\x01auth=Bearer t=\x01\x01",
            b"n,,\x01auth=Basic t\x01\x01",
            b"n,,\x01auth=Bearer t\xc3\xa9\x01\x01",
        ];
        for case in cases {
            assert!(
                ClientInitialResponse::parse(case).is_err(),
                "{:?}",
                String::from_utf8_lossy(case)
            );
        }
        let no_auth = ClientInitialResponse::parse(b"n,,\x01k=v\x01\x01").unwrap_err();
        assert_eq!(
            no_auth.to_string(),
            "Invalid OAUTHBEARER client first message: 'auth' not specified"
        );
        let scheme = ClientInitialResponse::parse(b"n,,\x01auth=Basic t\x01\x01").unwrap_err();
        assert_eq!(
            scheme.to_string(),
            "Invalid scheme in OAUTHBEARER client first message: Basic"
        );
    }
}
