//! What a group subscribes to: regular expressions resolved against the topics image, the
//! group's metadata hash, and the target assignment the assignor computes from them.

use std::collections::{BTreeMap, BTreeSet};

use super::group::ConsumerGroup;
use crate::assignor::{
    AssignmentMember, AssignmentSpec, MemberAssignment, PartitionAssignor, TopicsImage,
};
use crate::error::GroupError;

/// Kafka's internal topics, which regular expressions never match.
const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// Compiles a subscription regex with Kafka's (RE2/J `matches`) full-match semantics.
pub(crate) fn compile_regex(regex: &str) -> Result<regex::Regex, GroupError> {
    let invalid = |error: regex::Error| {
        GroupError::InvalidRegularExpression(format!(
            "SubscribedTopicRegex `{regex}` is not a valid regular expression: {}.",
            re2_description(regex, &error)
        ))
    };
    // Checked alone first, so that anchoring it cannot change what it means.
    regex::Regex::new(regex).map_err(invalid)?;
    regex::Regex::new(&format!("^(?:{regex})$")).map_err(invalid)
}

/// The description RE2/J's PatternSyntaxException gives for the same mistake (what Kafka
/// puts in its message), else the regex crate's own.
fn re2_description(regex: &str, error: &regex::Error) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let kind = regex_syntax::ast::parse::Parser::new()
        .parse(regex)
        .err()
        .map(|error| error.kind().clone());
    let known = match kind {
        Some(K::GroupUnclosed) => Some("missing closing )"),
        Some(K::GroupUnopened) => Some("unexpected )"),
        Some(K::ClassUnclosed) => Some("missing closing ]"),
        Some(K::ClassRangeInvalid | K::ClassRangeLiteral) => Some("invalid character class range"),
        Some(K::EscapeUnexpectedEof) => Some("trailing backslash at end of expression"),
        Some(
            K::ClassEscapeInvalid
            | K::EscapeUnrecognized
            | K::EscapeHexEmpty
            | K::EscapeHexInvalid
            | K::EscapeHexInvalidDigit,
        ) => Some("invalid escape sequence"),
        Some(K::RepetitionMissing) => Some("missing argument to repetition operator"),
        Some(
            K::RepetitionCountInvalid
            | K::RepetitionCountUnclosed
            | K::RepetitionCountDecimalEmpty
            | K::DecimalInvalid
            | K::DecimalEmpty,
        ) => Some("invalid repeat count"),
        Some(
            K::GroupNameInvalid
            | K::GroupNameEmpty
            | K::GroupNameDuplicate { .. }
            | K::GroupNameUnexpectedEof,
        ) => Some("invalid named capture"),
        Some(
            K::FlagUnrecognized
            | K::FlagDanglingNegation
            | K::FlagDuplicate { .. }
            | K::FlagRepeatedNegation { .. }
            | K::FlagUnexpectedEof
            | K::UnsupportedLookAround
            | K::UnsupportedBackreference,
        ) => Some("invalid or unsupported Perl syntax"),
        _ => None,
    };
    known.map(str::to_owned).unwrap_or_else(|| {
        // The regex crate explains an error over several lines; the last one says what.
        error
            .to_string()
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default()
            .trim()
            .trim_start_matches("error: ")
            .to_owned()
    })
}

/// The topics of `topics` that `regex` matches (an invalid stored regex matches nothing).
pub(crate) fn resolve_regex(regex: &str, topics: &TopicsImage) -> BTreeSet<String> {
    let Ok(compiled) = compile_regex(regex) else {
        return BTreeSet::new();
    };
    topics
        .topics
        .values()
        .map(|topic| topic.name.as_str())
        .filter(|name| !INTERNAL_TOPICS.contains(name) && compiled.is_match(name))
        .map(str::to_owned)
        .collect()
}

/// A hash of the subscribed topics' ids, names, partition counts and racks: it changes when
/// one of them is created, deleted or changes partitions, which moves the group epoch. It plays
/// the part of KIP-1101's metadata hash (a 64-bit FNV-1a here, not Kafka's XXH3 value: a group
/// moved between a Kafka and a Shale coordinator rebalances once); 0 when nothing subscribed
/// exists, as Kafka.
pub(crate) fn metadata_hash(names: &BTreeSet<String>, topics: &TopicsImage) -> i64 {
    let mut hash = Fnv::default();
    let mut any = false;
    for name in names {
        let Some(topic) = topics.by_name(name) else {
            continue;
        };
        any = true;
        hash.write(topic.topic_id.as_bytes());
        hash.write(name.as_bytes());
        hash.write(&topic.partition_count().to_be_bytes());
        for racks in &topic.partition_racks {
            for rack in racks {
                hash.write(rack.as_bytes());
                hash.write(b";");
            }
            hash.write(b"|");
        }
    }
    if any {
        i64::from_be_bytes(hash.0.to_be_bytes())
    } else {
        0
    }
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The new target assignment of every member of `group`.
pub(crate) fn compute_target(
    group: &ConsumerGroup,
    topics: &TopicsImage,
    assignor: &dyn PartitionAssignor,
) -> Result<BTreeMap<String, MemberAssignment>, GroupError> {
    let members = group
        .members
        .values()
        .map(|member| {
            (
                member.member_id.clone(),
                AssignmentMember {
                    member_id: member.member_id.clone(),
                    instance_id: member.instance_id.clone(),
                    rack_id: member.rack_id.clone(),
                    subscribed_topic_ids: group.member_topic_ids(member, topics),
                    current_assignment: group
                        .target
                        .get(&member.member_id)
                        .cloned()
                        .unwrap_or_default(),
                },
            )
        })
        .collect();
    let spec = AssignmentSpec { members };
    let mut assignment = assignor
        .assign_with_subscription_type(&spec, topics, group.subscription_type())
        .map_err(|error| {
            GroupError::UnknownServerError(format!(
                "Failed to compute a new target assignment for epoch {}: {error}",
                group.group_epoch
            ))
        })?;
    for assigned in assignment.values_mut() {
        assigned.retain(|_, partitions| !partitions.is_empty());
    }
    Ok(assignment)
}
