//! ListTransactions v2's transactional-id pattern (KIP-1152): a regular expression that must
//! match the whole id, as Java's `Pattern.matches` does.

/// The pattern does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid regular expression: {reason}")]
pub struct InvalidPatternError {
    pub reason: String,
}

/// Longest pattern accepted; compiled patterns are also bounded in size by the regex crate.
const PATTERN_BYTES_MAX: usize = 4096;

#[derive(Clone, Debug)]
pub struct TransactionalIdPattern(regex::Regex);

impl TransactionalIdPattern {
    /// `None` for an empty pattern, which matches every id.
    pub fn compile(pattern: &str) -> Result<Option<Self>, InvalidPatternError> {
        if pattern.is_empty() {
            return Ok(None);
        }
        if pattern.len() > PATTERN_BYTES_MAX {
            return Err(InvalidPatternError {
                reason: format!("longer than {PATTERN_BYTES_MAX} bytes"),
            });
        }
        regex::Regex::new(&format!("^(?:{pattern})$"))
            .map(|re| Some(Self(re)))
            .map_err(|e| InvalidPatternError {
                reason: e.to_string(),
            })
    }

    pub fn matches(&self, transactional_id: &str) -> bool {
        self.0.is_match(transactional_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_whole_ids_only() {
        let pattern = TransactionalIdPattern::compile("app-[0-9]+")
            .unwrap()
            .unwrap();
        assert!(pattern.matches("app-12"));
        assert!(!pattern.matches("my-app-12"));
        assert!(!pattern.matches("app-12x"));
        assert!(TransactionalIdPattern::compile("").unwrap().is_none());
        let error = TransactionalIdPattern::compile("app-(").unwrap_err();
        assert!(!error.reason.is_empty());
        let too_long = "a".repeat(PATTERN_BYTES_MAX + 1);
        assert!(TransactionalIdPattern::compile(&too_long).is_err());
    }
}
