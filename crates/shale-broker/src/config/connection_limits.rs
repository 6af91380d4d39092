//! Kafka's per-address connection limits: `max.connections.per.ip`, and
//! `max.connections.per.ip.overrides` (`address:count` pairs, comma separated).

use std::collections::HashMap;
use std::net::IpAddr;

use super::error::ConfigError;

/// The most connections one client address may hold open at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionsPerIp {
    pub default_max: usize,
    pub overrides: HashMap<IpAddr, usize>,
}

impl ConnectionsPerIp {
    /// The limit of `addr`.
    pub fn max_for(&self, addr: IpAddr) -> usize {
        self.overrides
            .get(&addr)
            .copied()
            .unwrap_or(self.default_max)
    }

    /// Reads the two keys. Overrides name addresses by IP literal: Kafka also resolves host
    /// names there once at start-up, which Shale refuses with a message rather than guess.
    pub fn parse(default_max: i32, overrides: &str) -> Result<ConnectionsPerIp, ConfigError> {
        const KEY: &str = "max.connections.per.ip.overrides";
        let invalid = |reason: String| ConfigError::InvalidValue {
            key: KEY.to_string(),
            value: overrides.to_string(),
            reason,
        };
        let mut parsed = HashMap::new();
        for entry in overrides
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (host, count) = entry
                .rsplit_once(':')
                .ok_or_else(|| invalid(format!("{entry:?} is not address:count")))?;
            let host = host.trim().trim_start_matches('[').trim_end_matches(']');
            let addr: IpAddr = host.parse().map_err(|_| {
                invalid(format!(
                    "{host:?} is not an IP address (host names are not resolved here; name the address)"
                ))
            })?;
            let count: i64 = count
                .trim()
                .parse()
                .ok()
                .filter(|c| (0..=i64::from(i32::MAX)).contains(c))
                .ok_or_else(|| invalid(format!("{entry:?}: the count must be 0 or more")))?;
            parsed.insert(addr, count as usize);
        }
        if default_max == 0 && parsed.is_empty() {
            // Kafka refuses this too: no address could ever connect.
            return Err(ConfigError::InvalidValue {
                key: "max.connections.per.ip".to_string(),
                value: "0".to_string(),
                reason: "can be 0 only if max.connections.per.ip.overrides is set".to_string(),
            });
        }
        Ok(ConnectionsPerIp {
            default_max: usize::try_from(default_max.max(0)).unwrap_or(usize::MAX),
            overrides: parsed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_for_their_address() {
        let limits = ConnectionsPerIp::parse(5, "127.0.0.1:2, [::1]:0,10.0.0.7:100").unwrap();
        assert_eq!(limits.max_for("127.0.0.1".parse().unwrap()), 2);
        assert_eq!(limits.max_for("::1".parse().unwrap()), 0);
        assert_eq!(limits.max_for("10.0.0.7".parse().unwrap()), 100);
        assert_eq!(limits.max_for("10.0.0.8".parse().unwrap()), 5);
    }

    #[test]
    fn malformed_values_are_refused_by_name() {
        for bad in ["localhost:3", "127.0.0.1", "127.0.0.1:-1", "127.0.0.1:x"] {
            let e = ConnectionsPerIp::parse(5, bad).unwrap_err().to_string();
            assert!(e.contains("max.connections.per.ip.overrides"), "{e}");
        }
        let e = ConnectionsPerIp::parse(0, "").unwrap_err().to_string();
        assert!(e.contains("max.connections.per.ip"), "{e}");
        assert!(ConnectionsPerIp::parse(0, "127.0.0.1:1").is_ok());
    }
}
