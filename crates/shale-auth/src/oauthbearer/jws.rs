//! An unsecured JWS (RFC 7515 with `alg` = `none`, RFC 7519 claims), read as Kafka's
//! OAuthBearerUnsecuredJws reads one: three dot-separated base64url parts, the last empty; the
//! header and claims JSON objects whose members are kept as text, numbers or lists of text.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::TokenFailure;

/// A claim's value as Kafka keeps it: numbers as numbers, arrays as the text of each element,
/// anything else as its text (Jackson's `asText`).
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimValue {
    Text(String),
    Number(f64),
    List(Vec<String>),
}

impl ClaimValue {
    fn type_name(&self) -> &'static str {
        match self {
            ClaimValue::Text(_) => "String",
            ClaimValue::Number(_) => "Number",
            ClaimValue::List(_) => "List",
        }
    }
}

/// A parsed unsecured JWS with the claims the validator reads.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsecuredJws {
    pub principal_name: String,
    pub scope: Vec<String>,
    /// `exp`, in seconds as sent (fractions allowed, RFC 7519's NumericDate).
    pub expiration_time_seconds: f64,
    /// `exp` in milliseconds, rounded as Kafka does.
    pub lifetime_ms: i64,
    /// `iat`, when present.
    pub issued_at_seconds: Option<f64>,
    pub start_time_ms: Option<i64>,
}

fn failure(reason: impl Into<String>) -> TokenFailure {
    TokenFailure::invalid_token(reason)
}

impl UnsecuredJws {
    pub fn parse(
        compact: &str,
        principal_claim_name: &str,
        scope_claim_name: &str,
    ) -> Result<Self, TokenFailure> {
        if compact.contains("..") {
            return Err(failure("Malformed compact serialization contains '..'"));
        }
        let splits: Vec<&str> = compact.split('.').collect();
        let [header, claims, signature] = splits[..] else {
            return Err(failure(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values",
            ));
        };
        let header = to_map(header)?;
        let claims = to_map(claims)?;
        let alg = match header.get("alg") {
            Some(ClaimValue::Text(alg)) => alg.clone(),
            Some(ClaimValue::Number(n)) => n.to_string(),
            Some(ClaimValue::List(list)) => format!("[{}]", list.join(", ")),
            // Kafka fails with an unchecked exception here; refusing the token is the
            // nearest answer a client can act on.
            None => return Err(failure("JWS header must have an Algorithm value")),
        };
        if alg != "none" {
            return Err(failure("Unsecured JWS must have 'none' for an algorithm"));
        }
        if !signature.is_empty() {
            return Err(failure(
                "Unsecured JWS must not contain a digital signature",
            ));
        }
        let scope = scope_of(&claims, scope_claim_name)?;
        let Some(expiration_time_seconds) = number_claim(&claims, "exp")? else {
            return Err(failure("No expiration time in JWT"));
        };
        let principal_name = match text_claim(&claims, principal_claim_name)? {
            Some(name) if !name.trim().is_empty() => name.to_string(),
            _ => {
                return Err(failure(format!(
                    "No principal name in JWT claim: {principal_claim_name}"
                )))
            }
        };
        let issued_at_seconds = number_claim(&claims, "iat")?;
        Ok(UnsecuredJws {
            principal_name,
            scope,
            expiration_time_seconds,
            lifetime_ms: seconds_to_ms(expiration_time_seconds),
            issued_at_seconds,
            start_time_ms: issued_at_seconds.map(seconds_to_ms),
        })
    }
}

/// Kafka's `Math.round(seconds * 1000)`; saturating, as Java's conversion of a huge double is.
fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

fn wrong_type(name: &str, expected: &str, value: &ClaimValue) -> TokenFailure {
    failure(format!(
        "The '{name}' claim was not of type {expected}: {}",
        value.type_name()
    ))
}

fn number_claim(
    claims: &HashMap<String, ClaimValue>,
    name: &str,
) -> Result<Option<f64>, TokenFailure> {
    match claims.get(name) {
        None => Ok(None),
        Some(ClaimValue::Number(n)) => Ok(Some(*n)),
        Some(other) => Err(wrong_type(name, "Number", other)),
    }
}

fn text_claim<'a>(
    claims: &'a HashMap<String, ClaimValue>,
    name: &str,
) -> Result<Option<&'a str>, TokenFailure> {
    match claims.get(name) {
        None => Ok(None),
        Some(ClaimValue::Text(text)) => Ok(Some(text)),
        Some(other) => Err(wrong_type(name, "String", other)),
    }
}

/// A text scope claim is one scope (trimmed, Kafka does not split it); a list claim is its
/// non-blank elements.
fn scope_of(claims: &HashMap<String, ClaimValue>, name: &str) -> Result<Vec<String>, TokenFailure> {
    let mut scope: Vec<String> = match claims.get(name) {
        None => Vec::new(),
        Some(ClaimValue::Text(text)) => vec![text.trim().to_string()],
        Some(ClaimValue::List(list)) => list.iter().map(|s| s.trim().to_string()).collect(),
        Some(other) => return Err(wrong_type(name, "List", other)),
    };
    scope.retain(|s| !s.is_empty());
    scope.sort();
    scope.dedup();
    Ok(scope)
}

/// A base64url part decoded and read as a JSON object; a JSON value that is not an object
/// has no members, as with Kafka's Jackson tree.
fn to_map(part: &str) -> Result<HashMap<String, ClaimValue>, TokenFailure> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| failure("malformed Base64 URL encoded value"))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| failure("malformed JSON"))?;
    let serde_json::Value::Object(members) = value else {
        return Ok(HashMap::new());
    };
    Ok(members
        .into_iter()
        .map(|(name, value)| (name, convert(value)))
        .collect())
}

fn convert(value: serde_json::Value) -> ClaimValue {
    match value {
        serde_json::Value::Array(items) => {
            ClaimValue::List(items.into_iter().map(as_text).collect())
        }
        serde_json::Value::Number(n) => ClaimValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        other => ClaimValue::Text(as_text(other)),
    }
}

/// Jackson's `asText`: a string's value, a scalar's text, an empty text for a container.
fn as_text(value: serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => "null".to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    fn jws(header: &str, claims: &str) -> String {
        format!("{}.{}.", b64(header), b64(claims))
    }

    const NONE: &str = r#"{"alg":"none"}"#;

    #[test]
    fn claims_are_read_with_kafkas_types() {
        let token = jws(
            NONE,
            r#"{"sub":"alice","exp":1700000000.5,"iat":1699999000,"scope":["b"," a ",""]}"#,
        );
        let parsed = UnsecuredJws::parse(&token, "sub", "scope").unwrap();
        assert_eq!(parsed.principal_name, "alice");
        assert_eq!(parsed.lifetime_ms, 1_700_000_000_500);
        assert_eq!(parsed.start_time_ms, Some(1_699_999_000_000));
        assert_eq!(parsed.scope, vec!["a".to_string(), "b".to_string()]);
        let text_scope = jws(NONE, r#"{"user":"bob","exp":1,"scope":" x y "}"#);
        let parsed = UnsecuredJws::parse(&text_scope, "user", "scope").unwrap();
        assert_eq!(parsed.principal_name, "bob");
        assert_eq!(parsed.scope, vec!["x y".to_string()]);
        assert_eq!(parsed.start_time_ms, None);
    }

    #[test]
    fn malformed_tokens_name_kafkas_reason() {
        let good_claims = r#"{"sub":"alice","exp":1}"#;
        let cases = [
            (format!("{}..", b64(NONE)), "contains '..'"),
            (
                format!("{}.{}", b64(NONE), b64(good_claims)),
                "3 dot-separated",
            ),
            (
                format!("{}.{}.x", b64(NONE), b64(good_claims)),
                "digital signature",
            ),
            (format!("!.{}.", b64(good_claims)), "Base64"),
            (jws("{", good_claims), "malformed JSON"),
            (jws(r#"{"alg":"HS256"}"#, good_claims), "'none'"),
            (jws("{}", good_claims), "Algorithm"),
            (jws(NONE, r#"{"sub":"alice"}"#), "No expiration time"),
            (
                jws(NONE, r#"{"sub":"alice","exp":"1"}"#),
                "'exp' claim was not of type Number",
            ),
            (
                jws(NONE, r#"{"exp":1}"#),
                "No principal name in JWT claim: sub",
            ),
            (jws(NONE, r#"{"sub":"  ","exp":1}"#), "No principal name"),
            (
                jws(NONE, r#"{"sub":7,"exp":1}"#),
                "'sub' claim was not of type String",
            ),
            (jws(NONE, r#"{"sub":"a","exp":1,"iat":"x"}"#), "'iat' claim"),
            (
                jws(NONE, r#"{"sub":"a","exp":1,"scope":3}"#),
                "'scope' claim",
            ),
        ];
        for (token, reason) in cases {
            let err = UnsecuredJws::parse(&token, "sub", "scope").unwrap_err();
            assert_eq!(err.status, "invalid_token");
            assert!(err.reason.contains(reason), "{token}: {}", err.reason);
        }
    }
}
