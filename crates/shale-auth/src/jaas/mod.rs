//! Kafka's JAAS configuration values (`sasl.jaas.config` and its per-listener, per-mechanism
//! forms): `<LoginModule class> <flag> (<key>=<value>)* ;`, read as Kafka's JaasConfig reads
//! them. A listener's value must hold exactly one entry ([`JaasEntry::parse_single`]), as
//! Kafka's JaasContext requires.

mod tokens;

use std::collections::BTreeMap;

use crate::error::JaasError;
use tokens::{Token, Tokenizer};

pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// A login module's control flag (read case-insensitively, as Kafka does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

impl ControlFlag {
    fn parse(flag: &str) -> Option<Self> {
        match flag.to_ascii_uppercase().as_str() {
            "REQUIRED" => Some(ControlFlag::Required),
            "REQUISITE" => Some(ControlFlag::Requisite),
            "SUFFICIENT" => Some(ControlFlag::Sufficient),
            "OPTIONAL" => Some(ControlFlag::Optional),
            _ => None,
        }
    }
}

/// One login module entry. A key given twice keeps its last value, as in Kafka.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub control_flag: ControlFlag,
    pub options: BTreeMap<String, String>,
}

impl std::fmt::Debug for JaasEntry {
    // Options hold passwords: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("control_flag", &self.control_flag)
            .field("option_keys", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl JaasEntry {
    /// A value holding exactly one login module entry.
    pub fn parse_single(text: &str) -> Result<JaasEntry, JaasError> {
        let mut entries = parse_jaas_config(text)?;
        if entries.len() != 1 {
            return Err(JaasError::ModuleCount {
                count: entries.len(),
            });
        }
        entries.pop().ok_or(JaasError::NoLoginModule)
    }

    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }
}

/// Every entry of a JAAS configuration value; at least one.
pub fn parse_jaas_config(text: &str) -> Result<Vec<JaasEntry>, JaasError> {
    let mut tokens = Tokenizer::new(text);
    let mut entries = Vec::new();
    loop {
        let (offset, token) = tokens.next_token()?;
        if token == Token::End {
            break;
        }
        entries.push(parse_entry(&mut tokens, offset, token)?);
    }
    if entries.is_empty() {
        return Err(JaasError::NoLoginModule);
    }
    Ok(entries)
}

fn parse_entry(
    tokens: &mut Tokenizer<'_>,
    offset: usize,
    first: Token,
) -> Result<JaasEntry, JaasError> {
    let Some(login_module) = first.text().map(str::to_string) else {
        return Err(JaasError::LoginModuleExpected {
            offset,
            found: first.describe(),
        });
    };
    let (_, flag) = tokens.next_token()?;
    let control_flag = match &flag {
        Token::End => return Err(JaasError::ControlFlagMissing),
        other => other.text().and_then(ControlFlag::parse).ok_or_else(|| {
            JaasError::InvalidControlFlag {
                flag: other
                    .text()
                    .map_or_else(|| other.describe(), str::to_string),
            }
        })?,
    };
    let mut options = BTreeMap::new();
    loop {
        let (key_offset, key) = tokens.next_token()?;
        match key {
            Token::Char(';') => break,
            Token::End => return Err(JaasError::NotTerminated),
            _ => {}
        }
        let Some(key) = key.text().map(str::to_string) else {
            return Err(JaasError::KeyExpected {
                offset: key_offset,
                found: key.describe(),
            });
        };
        let (_, equals) = tokens.next_token()?;
        if equals != Token::Char('=') {
            return Err(JaasError::ValueMissing { key });
        }
        let (_, value) = tokens.next_token()?;
        let Some(value) = value.text().map(str::to_string) else {
            return Err(JaasError::ValueMissing { key });
        };
        options.insert(key, value);
    }
    Ok(JaasEntry {
        login_module,
        control_flag,
        options,
    })
}

#[cfg(test)]
mod tests;
