//! Share sessions (KIP-932): the set of share-partitions a member fetches from on one broker,
//! kept between its ShareFetch requests so that later requests name only what changed (Kafka's
//! ShareSessionCache and ShareSession). A session belongs to one connection: when that
//! connection closes, the session goes and the member's acquired records are released.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

/// The share session epoch that opens a session (and replaces an existing one).
pub const INITIAL_EPOCH: i32 = 0;
/// The share session epoch that closes a session.
pub const FINAL_EPOCH: i32 = -1;

/// A share-partition by topic id, as share requests name them.
pub type TopicIdPartition = (Uuid, i32);

/// A session's identity: one per member of a share group on this broker.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareSessionKey {
    pub group_id: String,
    pub member_id: String,
}

#[derive(Debug, Clone)]
struct ShareSession {
    partitions: BTreeSet<TopicIdPartition>,
    /// The epoch the member's next request must carry.
    next_epoch: i32,
    connection_id: u64,
}

/// Why a share request's session part was refused; the broker answers with the code Kafka
/// gives each (INVALID_REQUEST, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
/// SHARE_SESSION_LIMIT_REACHED).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareSessionError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("no share session found for group {group_id} member {member_id}")]
    NotFound { group_id: String, member_id: String },
    #[error("the share session epoch is {expected}, not {given}")]
    InvalidEpoch { expected: i32, given: i32 },
    #[error("the share session limit of {0} sessions is reached")]
    LimitReached(usize),
}

/// What a ShareFetch may fetch from after its session part was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFetch {
    /// Every partition of the session (for a final request: the partitions it had).
    pub partitions: Vec<TopicIdPartition>,
    /// The request closed the session (epoch -1): the member's records are to be released
    /// once its acknowledgements are applied.
    pub closed: bool,
}

/// The sessions of one broker, bounded by `group.share.max.share.sessions`.
#[derive(Debug)]
pub struct ShareSessionCache {
    sessions_max: usize,
    sessions: HashMap<ShareSessionKey, ShareSession>,
}

/// Kafka's ShareRequestMetadata.nextEpoch: epochs count up and wrap to 1, never to 0 or -1.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl ShareSessionCache {
    pub fn new(sessions_max: usize) -> ShareSessionCache {
        ShareSessionCache {
            sessions_max,
            sessions: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Applies the session part of a ShareFetch: `epoch` 0 opens (or replaces) the session
    /// with `added`, -1 closes it (it may not add partitions), anything else must be the
    /// session's current epoch and adds `added` and drops `forgotten`.
    pub fn fetch(
        &mut self,
        key: &ShareSessionKey,
        epoch: i32,
        connection_id: u64,
        added: &[TopicIdPartition],
        forgotten: &[TopicIdPartition],
        has_acknowledgements: bool,
    ) -> Result<SessionFetch, ShareSessionError> {
        match epoch {
            INITIAL_EPOCH => {
                if has_acknowledgements {
                    return Err(ShareSessionError::InvalidRequest(
                        "Acknowledge data present in initial share fetch request".into(),
                    ));
                }
                let replacing = self.sessions.remove(key).is_some();
                if !replacing && self.sessions.len() >= self.sessions_max {
                    return Err(ShareSessionError::LimitReached(self.sessions_max));
                }
                let partitions: BTreeSet<TopicIdPartition> = added.iter().copied().collect();
                let fetch = SessionFetch {
                    partitions: partitions.iter().copied().collect(),
                    closed: false,
                };
                self.sessions.insert(
                    key.clone(),
                    ShareSession {
                        partitions,
                        next_epoch: next_epoch(INITIAL_EPOCH),
                        connection_id,
                    },
                );
                Ok(fetch)
            }
            FINAL_EPOCH => {
                if !added.is_empty() {
                    return Err(ShareSessionError::InvalidRequest(
                        "A final share fetch request (epoch -1) cannot fetch partitions".into(),
                    ));
                }
                let session = self.sessions.remove(key).ok_or_else(|| not_found(key))?;
                Ok(SessionFetch {
                    partitions: session.partitions.into_iter().collect(),
                    closed: true,
                })
            }
            given => {
                let session = self.sessions.get_mut(key).ok_or_else(|| not_found(key))?;
                if session.next_epoch != given {
                    return Err(ShareSessionError::InvalidEpoch {
                        expected: session.next_epoch,
                        given,
                    });
                }
                session.partitions.extend(added.iter().copied());
                for tp in forgotten {
                    session.partitions.remove(tp);
                }
                session.next_epoch = next_epoch(given);
                session.connection_id = connection_id;
                Ok(SessionFetch {
                    partitions: session.partitions.iter().copied().collect(),
                    closed: false,
                })
            }
        }
    }

    /// Applies the session part of a ShareAcknowledge: it needs an open session (epoch 0 is
    /// refused, there is nothing to acknowledge yet); -1 closes it after the acknowledgements.
    /// Returns the session's partitions and whether it was closed.
    pub fn acknowledge(
        &mut self,
        key: &ShareSessionKey,
        epoch: i32,
    ) -> Result<SessionFetch, ShareSessionError> {
        match epoch {
            INITIAL_EPOCH => Err(ShareSessionError::InvalidRequest(
                "A share acknowledge request cannot open a share session (epoch 0)".into(),
            )),
            FINAL_EPOCH => {
                let session = self.sessions.remove(key).ok_or_else(|| not_found(key))?;
                Ok(SessionFetch {
                    partitions: session.partitions.into_iter().collect(),
                    closed: true,
                })
            }
            given => {
                let session = self.sessions.get_mut(key).ok_or_else(|| not_found(key))?;
                if session.next_epoch != given {
                    return Err(ShareSessionError::InvalidEpoch {
                        expected: session.next_epoch,
                        given,
                    });
                }
                session.next_epoch = next_epoch(given);
                Ok(SessionFetch {
                    partitions: session.partitions.iter().copied().collect(),
                    closed: false,
                })
            }
        }
    }

    /// Removes the sessions opened on a connection that closed, with their partitions: the
    /// members' acquired records there are to be released.
    pub fn connection_closed(
        &mut self,
        connection_id: u64,
    ) -> Vec<(ShareSessionKey, Vec<TopicIdPartition>)> {
        let keys: Vec<ShareSessionKey> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.connection_id == connection_id)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                self.sessions
                    .remove(&key)
                    .map(|s| (key, s.partitions.into_iter().collect()))
            })
            .collect()
    }

    /// Removes a member's session (it left its group or was fenced), with its partitions.
    pub fn remove(&mut self, key: &ShareSessionKey) -> Option<Vec<TopicIdPartition>> {
        self.sessions
            .remove(key)
            .map(|s| s.partitions.into_iter().collect())
    }
}

fn not_found(key: &ShareSessionKey) -> ShareSessionError {
    ShareSessionError::NotFound {
        group_id: key.group_id.clone(),
        member_id: key.member_id.clone(),
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
