//! The mechanisms by the names SaslHandshake carries.

use std::fmt;

/// A SASL mechanism Shale can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
    /// RFC 7628, with Kafka's unsecured JWS validator.
    OAuthBearer,
}

impl Mechanism {
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::Scram(ScramMechanism::Sha256),
        Mechanism::Scram(ScramMechanism::Sha512),
        Mechanism::OAuthBearer,
    ];

    /// The name on the wire: `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`, `OAUTHBEARER`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(scram) => scram.name(),
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism of that exact name; Kafka matches names case-sensitively.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The SCRAM hash functions (RFC 7677 and Kafka's SCRAM-SHA-512).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Kafka's type byte for the mechanism, as in its SCRAM credential records and
    /// DescribeUserScramCredentials / AlterUserScramCredentials.
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_kafka_type(kafka_type: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == kafka_type)
    }

    /// The fewest iterations Kafka authenticates with (and accepts for a new credential).
    pub fn min_iterations(self) -> u32 {
        4096
    }

    /// The most iterations Kafka's AlterUserScramCredentials accepts.
    pub fn max_iterations(self) -> u32 {
        16384
    }

    /// The length of the hash, and so of the stored key, server key and client proof.
    pub fn hash_len_bytes(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }

    /// The Java enum constant's name, which Kafka prints in some of its messages.
    pub(crate) fn kafka_enum_name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM_SHA_256",
            ScramMechanism::Sha512 => "SCRAM_SHA_512",
        }
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_case_sensitive() {
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Some(m));
        }
        assert_eq!(Mechanism::from_name("plain"), None);
        assert_eq!(Mechanism::from_name("SCRAM-SHA-1"), None);
        for m in ScramMechanism::ALL {
            assert_eq!(ScramMechanism::from_kafka_type(m.kafka_type()), Some(m));
        }
        assert_eq!(ScramMechanism::from_kafka_type(0), None);
    }
}
