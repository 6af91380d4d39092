//! Kafka's checks of one broker key against another (GroupCoordinatorConfig's and
//! ShareGroupConfig's `Utils.require`), each refusal in Kafka's words.

use super::error::ConfigError;
use super::reader::invalid;

/// "<key> must be greater than or equal to <bound key>".
pub(super) fn at_least(
    key: &str,
    value: i32,
    bound_key: &str,
    bound: i32,
) -> Result<(), ConfigError> {
    if value < bound {
        return Err(invalid(
            key,
            &value.to_string(),
            &format!("{key} must be greater than or equal to {bound_key}"),
        ));
    }
    Ok(())
}

/// "<key> must be less than or equal to <bound key>".
pub(super) fn at_most(
    key: &str,
    value: i32,
    bound_key: &str,
    bound: i32,
) -> Result<(), ConfigError> {
    if value > bound {
        return Err(invalid(
            key,
            &value.to_string(),
            &format!("{key} must be less than or equal to {bound_key}"),
        ));
    }
    Ok(())
}

/// "<key> must be less than <bound key>".
pub(super) fn below(key: &str, value: i32, bound_key: &str, bound: i32) -> Result<(), ConfigError> {
    if value >= bound {
        return Err(invalid(
            key,
            &value.to_string(),
            &format!("{key} must be less than {bound_key}"),
        ));
    }
    Ok(())
}
