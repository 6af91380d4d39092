//! The options of Kafka's unsecured validator (OAuthBearerUnsecuredValidatorCallbackHandler),
//! read from the listener's `OAuthBearerLoginModule` JAAS entry.

use crate::error::JaasError;
use crate::jaas::JaasEntry;

pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

pub const PRINCIPAL_CLAIM_NAME_OPTION: &str = "unsecuredValidatorPrincipalClaimName";
pub const SCOPE_CLAIM_NAME_OPTION: &str = "unsecuredValidatorScopeClaimName";
pub const REQUIRED_SCOPE_OPTION: &str = "unsecuredValidatorRequiredScope";
pub const ALLOWABLE_CLOCK_SKEW_MS_OPTION: &str = "unsecuredValidatorAllowableClockSkewMs";

/// The options of Kafka's unsecured login callback handler: the token a broker would make for
/// itself as a client of the listener. They do not change what the listener accepts.
const LOGIN_OPTION_PREFIX: &str = "unsecuredLogin";

/// How tokens are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidatorOptions {
    pub principal_claim_name: String,
    pub scope_claim_name: String,
    /// Every scope a token must hold; empty: none required.
    pub required_scope: Vec<String>,
    pub allowable_clock_skew_ms: i64,
}

impl Default for UnsecuredValidatorOptions {
    fn default() -> Self {
        UnsecuredValidatorOptions {
            principal_claim_name: "sub".to_string(),
            scope_claim_name: "scope".to_string(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

impl UnsecuredValidatorOptions {
    /// The options of an `OAuthBearerLoginModule` entry. A blank option takes Kafka's default;
    /// an option neither the validator nor the unsecured login reads is refused, since it
    /// would have no effect.
    pub fn from_jaas(entry: &JaasEntry) -> Result<Self, JaasError> {
        if entry.login_module != OAUTHBEARER_LOGIN_MODULE {
            return Err(JaasError::WrongLoginModule {
                found: entry.login_module.clone(),
                expected: OAUTHBEARER_LOGIN_MODULE,
                mechanism: "OAUTHBEARER",
            });
        }
        let mut options = UnsecuredValidatorOptions::default();
        for (key, value) in &entry.options {
            let value = value.trim();
            match key.as_str() {
                PRINCIPAL_CLAIM_NAME_OPTION if !value.is_empty() => {
                    options.principal_claim_name = value.to_string()
                }
                SCOPE_CLAIM_NAME_OPTION if !value.is_empty() => {
                    options.scope_claim_name = value.to_string()
                }
                REQUIRED_SCOPE_OPTION => options.required_scope = parse_scope(key, value)?,
                ALLOWABLE_CLOCK_SKEW_MS_OPTION if !value.is_empty() => {
                    options.allowable_clock_skew_ms = parse_skew(key, value)?
                }
                PRINCIPAL_CLAIM_NAME_OPTION
                | SCOPE_CLAIM_NAME_OPTION
                | ALLOWABLE_CLOCK_SKEW_MS_OPTION => {}
                login if login.starts_with(LOGIN_OPTION_PREFIX) => {}
                other => {
                    return Err(JaasError::UnreadOption {
                        key: other.to_string(),
                        module: OAUTHBEARER_LOGIN_MODULE,
                    })
                }
            }
        }
        Ok(options)
    }

    pub fn from_jaas_config(text: &str) -> Result<Self, JaasError> {
        UnsecuredValidatorOptions::from_jaas(&JaasEntry::parse_single(text)?)
    }
}

/// Kafka's OAuthBearerScopeUtils: space-delimited scope tokens of RFC 6749's NQCHAR
/// (`%x21 / %x23-5B / %x5D-7E`).
fn parse_scope(key: &str, value: &str) -> Result<Vec<String>, JaasError> {
    let mut scope = Vec::new();
    for item in value.split(' ').filter(|s| !s.is_empty()) {
        let nqchar = |b: u8| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e);
        if !item.bytes().all(nqchar) {
            return Err(JaasError::InvalidOption {
                key: key.to_string(),
                reason: format!("Invalid scope value: {item}"),
            });
        }
        scope.push(item.to_string());
    }
    Ok(scope)
}

/// A Java int, not negative.
fn parse_skew(key: &str, value: &str) -> Result<i64, JaasError> {
    let skew: i32 = value.parse().map_err(|_| JaasError::InvalidOption {
        key: key.to_string(),
        reason: format!("For input string: \"{value}\""),
    })?;
    if skew < 0 {
        return Err(JaasError::InvalidOption {
            key: key.to_string(),
            reason: format!("Allowable clock skew millis must not be negative: {value}"),
        });
    }
    Ok(i64::from(skew))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(options: &str) -> String {
        format!("{OAUTHBEARER_LOGIN_MODULE} required {options};")
    }

    #[test]
    fn defaults_and_options_are_read_as_kafka_does() {
        let defaults = UnsecuredValidatorOptions::from_jaas_config(&entry(
            "unsecuredLoginStringClaim_sub=\"admin\"",
        ))
        .unwrap();
        assert_eq!(defaults, UnsecuredValidatorOptions::default());
        let set = UnsecuredValidatorOptions::from_jaas_config(&entry(
            "unsecuredValidatorPrincipalClaimName=\" user \" unsecuredValidatorScopeClaimName=\"scp\" \
             unsecuredValidatorRequiredScope=\"read  write\" unsecuredValidatorAllowableClockSkewMs=\"250\"",
        ))
        .unwrap();
        assert_eq!(set.principal_claim_name, "user");
        assert_eq!(set.scope_claim_name, "scp");
        assert_eq!(
            set.required_scope,
            vec!["read".to_string(), "write".to_string()]
        );
        assert_eq!(set.allowable_clock_skew_ms, 250);
        let blank = UnsecuredValidatorOptions::from_jaas_config(&entry(
            "unsecuredValidatorPrincipalClaimName=\"\" unsecuredValidatorAllowableClockSkewMs=\" \"",
        ))
        .unwrap();
        assert_eq!(blank, UnsecuredValidatorOptions::default());
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        let cases = [
            (
                "unsecuredValidatorAllowableClockSkewMs=\"-1\"",
                "must not be negative",
            ),
            ("unsecuredValidatorAllowableClockSkewMs=\"soon\"", "soon"),
            ("unsecuredValidatorRequiredScope=\"café\"", "Invalid scope"),
            ("unsecuredValidatorTypo=\"x\"", "unsecuredValidatorTypo"),
        ];
        for (options, text) in cases {
            let err = UnsecuredValidatorOptions::from_jaas_config(&entry(options))
                .unwrap_err()
                .to_string();
            assert!(err.contains(text), "{options}: {err}");
        }
        let wrong = UnsecuredValidatorOptions::from_jaas_config(
            "org.apache.kafka.common.security.plain.PlainLoginModule required;",
        )
        .unwrap_err();
        assert!(
            wrong.to_string().contains("OAuthBearerLoginModule"),
            "{wrong}"
        );
    }
}
