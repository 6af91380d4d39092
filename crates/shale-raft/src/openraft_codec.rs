//! The versioned encoding (`encoding`) of openraft's types as Shale stores and sends them:
//! votes, log ids, entries, membership, snapshot metadata, the three Raft RPCs and their
//! errors. Each is a struct (or enum of structs) at version 0, so each has room for new
//! fields. Also the readers of the same types as bincode wrote them (`legacy`).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use openraft::error::{Fatal, Infallible, InstallSnapshotError, RaftError, SnapshotMismatch};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{
    AnyError, BasicNode, EntryPayload, LeaderId, Membership, SnapshotSegmentId, StorageIOError,
};

use crate::encoding::{
    decode_struct, encode_struct, encode_variant, get, put_bytes, Decode, DecodeError, Encode,
    Reader,
};
use crate::legacy::LegacyReader;
use crate::types::{Batch, Entry, LogId, NodeId, SnapshotMeta, StoredMembership, TypeConfig, Vote};

type NodeMembership = Membership<NodeId, BasicNode>;

impl Encode for LeaderId<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.term.encode(out);
            self.node_id.encode(out);
        });
    }
}

impl Decode for LeaderId<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "LeaderId", |r| Ok(LeaderId::new(get(r)?, get(r)?)))
    }
}

impl Encode for Vote {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.leader_id.encode(out);
            self.committed.encode(out);
        });
    }
}

impl Decode for Vote {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "Vote", |r| {
            Ok(Vote {
                leader_id: get(r)?,
                committed: get(r)?,
            })
        })
    }
}

impl Encode for LogId {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.leader_id.encode(out);
            self.index.encode(out);
        });
    }
}

impl Decode for LogId {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "LogId", |r| {
            Ok(LogId {
                leader_id: get(r)?,
                index: get(r)?,
            })
        })
    }
}

impl Encode for BasicNode {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| self.addr.encode(out));
    }
}

impl Decode for BasicNode {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "BasicNode", |r| Ok(BasicNode { addr: get(r)? }))
    }
}

impl Encode for NodeMembership {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.get_joint_config().encode(out);
            let nodes: Vec<(&NodeId, &BasicNode)> = self.nodes().collect();
            nodes.encode(out);
        });
    }
}

impl Decode for NodeMembership {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "Membership", |r| {
            let configs: Vec<BTreeSet<NodeId>> = get(r)?;
            let nodes: BTreeMap<NodeId, BasicNode> = get(r)?;
            Ok(Membership::new(configs, nodes))
        })
    }
}

impl Encode for StoredMembership {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.log_id().encode(out);
            self.membership().encode(out);
        });
    }
}

impl Decode for StoredMembership {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "StoredMembership", |r| {
            Ok(StoredMembership::new(get(r)?, get(r)?))
        })
    }
}

impl Encode for SnapshotMeta {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.last_log_id.encode(out);
            self.last_membership.encode(out);
            self.snapshot_id.encode(out);
        });
    }
}

impl Decode for SnapshotMeta {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "SnapshotMeta", |r| {
            Ok(SnapshotMeta {
                last_log_id: get(r)?,
                last_membership: get(r)?,
                snapshot_id: get(r)?,
            })
        })
    }
}

impl Encode for Batch {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| self.0.encode(out));
    }
}

impl Decode for Batch {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "Batch", |r| Ok(Batch(get(r)?)))
    }
}

impl Encode for Entry {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.log_id.encode(out);
            match &self.payload {
                EntryPayload::Blank => encode_variant(out, 0, |_| {}),
                EntryPayload::Normal(batch) => encode_variant(out, 1, |out| batch.encode(out)),
                EntryPayload::Membership(membership) => {
                    encode_variant(out, 2, |out| membership.encode(out))
                }
            }
        });
    }
}

impl Decode for Entry {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "Entry", |r| {
            let log_id = get(r)?;
            let payload = match r.varint()? {
                0 => decode_struct(r, "EntryPayload::Blank", |_| Ok(EntryPayload::Blank))?,
                1 => decode_struct(r, "EntryPayload::Normal", |r| {
                    Ok(EntryPayload::Normal(get(r)?))
                })?,
                2 => decode_struct(r, "EntryPayload::Membership", |r| {
                    Ok(EntryPayload::Membership(get(r)?))
                })?,
                kind => {
                    return Err(DecodeError::UnknownKind {
                        type_name: "EntryPayload",
                        kind,
                    })
                }
            };
            Ok(Entry { log_id, payload })
        })
    }
}

impl Encode for AppendEntriesRequest<TypeConfig> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.vote.encode(out);
            self.prev_log_id.encode(out);
            self.entries.encode(out);
            self.leader_commit.encode(out);
        });
    }
}

impl Decode for AppendEntriesRequest<TypeConfig> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "AppendEntriesRequest", |r| {
            Ok(AppendEntriesRequest {
                vote: get(r)?,
                prev_log_id: get(r)?,
                entries: get(r)?,
                leader_commit: get(r)?,
            })
        })
    }
}

impl Encode for AppendEntriesResponse<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            AppendEntriesResponse::Success => encode_variant(out, 0, |_| {}),
            AppendEntriesResponse::PartialSuccess(matching) => {
                encode_variant(out, 1, |out| matching.encode(out))
            }
            AppendEntriesResponse::Conflict => encode_variant(out, 2, |_| {}),
            AppendEntriesResponse::HigherVote(vote) => {
                encode_variant(out, 3, |out| vote.encode(out))
            }
        }
    }
}

impl Decode for AppendEntriesResponse<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let name = "AppendEntriesResponse";
        match reader.varint()? {
            0 => decode_struct(reader, name, |_| Ok(AppendEntriesResponse::Success)),
            1 => decode_struct(reader, name, |r| {
                Ok(AppendEntriesResponse::PartialSuccess(get(r)?))
            }),
            2 => decode_struct(reader, name, |_| Ok(AppendEntriesResponse::Conflict)),
            3 => decode_struct(reader, name, |r| {
                Ok(AppendEntriesResponse::HigherVote(get(r)?))
            }),
            kind => Err(DecodeError::UnknownKind {
                type_name: name,
                kind,
            }),
        }
    }
}

impl Encode for VoteRequest<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.vote.encode(out);
            self.last_log_id.encode(out);
        });
    }
}

impl Decode for VoteRequest<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "VoteRequest", |r| {
            Ok(VoteRequest {
                vote: get(r)?,
                last_log_id: get(r)?,
            })
        })
    }
}

impl Encode for VoteResponse<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.vote.encode(out);
            self.vote_granted.encode(out);
            self.last_log_id.encode(out);
        });
    }
}

impl Decode for VoteResponse<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "VoteResponse", |r| {
            Ok(VoteResponse {
                vote: get(r)?,
                vote_granted: get(r)?,
                last_log_id: get(r)?,
            })
        })
    }
}

impl Encode for InstallSnapshotRequest<TypeConfig> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.vote.encode(out);
            self.meta.encode(out);
            self.offset.encode(out);
            put_bytes(out, &self.data);
            self.done.encode(out);
        });
    }
}

impl Decode for InstallSnapshotRequest<TypeConfig> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "InstallSnapshotRequest", |r| {
            Ok(InstallSnapshotRequest {
                vote: get(r)?,
                meta: get(r)?,
                offset: get(r)?,
                data: r.byte_vec()?,
                done: get(r)?,
            })
        })
    }
}

impl Encode for InstallSnapshotResponse<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| self.vote.encode(out));
    }
}

impl Decode for InstallSnapshotResponse<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "InstallSnapshotResponse", |r| {
            Ok(InstallSnapshotResponse { vote: get(r)? })
        })
    }
}

impl Encode for SnapshotSegmentId {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.id.encode(out);
            self.offset.encode(out);
        });
    }
}

impl Decode for SnapshotSegmentId {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "SnapshotSegmentId", |r| {
            Ok(SnapshotSegmentId {
                id: get(r)?,
                offset: get(r)?,
            })
        })
    }
}

impl Encode for InstallSnapshotError {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            InstallSnapshotError::SnapshotMismatch(mismatch) => encode_variant(out, 0, |out| {
                mismatch.expect.encode(out);
                mismatch.got.encode(out);
            }),
        }
    }
}

impl Decode for InstallSnapshotError {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.varint()? {
            0 => decode_struct(reader, "InstallSnapshotError", |r| {
                Ok(InstallSnapshotError::SnapshotMismatch(SnapshotMismatch {
                    expect: get(r)?,
                    got: get(r)?,
                }))
            }),
            kind => Err(DecodeError::UnknownKind {
                type_name: "InstallSnapshotError",
                kind,
            }),
        }
    }
}

impl Encode for Infallible {
    fn encode(&self, _out: &mut Vec<u8>) {
        match *self {}
    }
}

impl Decode for Infallible {
    fn decode(_reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Err(DecodeError::Invalid("value of an error that cannot happen"))
    }
}

/// A remote storage error travels as its message: the caller only reports it.
impl Encode for Fatal<NodeId> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Fatal::StorageError(err) => encode_variant(out, 0, |out| err.to_string().encode(out)),
            Fatal::Panicked => encode_variant(out, 1, |_| {}),
            Fatal::Stopped => encode_variant(out, 2, |_| {}),
        }
    }
}

impl Decode for Fatal<NodeId> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.varint()? {
            0 => decode_struct(reader, "Fatal::StorageError", |r| {
                let message: String = get(r)?;
                let source = StorageIOError::<NodeId>::read(AnyError::error(message));
                Ok(Fatal::StorageError(source.into()))
            }),
            1 => decode_struct(reader, "Fatal::Panicked", |_| Ok(Fatal::Panicked)),
            2 => decode_struct(reader, "Fatal::Stopped", |_| Ok(Fatal::Stopped)),
            kind => Err(DecodeError::UnknownKind {
                type_name: "Fatal",
                kind,
            }),
        }
    }
}

impl<E: Encode> Encode for RaftError<NodeId, E> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RaftError::APIError(err) => encode_variant(out, 0, |out| err.encode(out)),
            RaftError::Fatal(fatal) => encode_variant(out, 1, |out| fatal.encode(out)),
        }
    }
}

impl<E: Decode> Decode for RaftError<NodeId, E> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.varint()? {
            0 => decode_struct(reader, "RaftError::APIError", |r| {
                Ok(RaftError::APIError(get(r)?))
            }),
            1 => decode_struct(reader, "RaftError::Fatal", |r| {
                Ok(RaftError::Fatal(get(r)?))
            }),
            kind => Err(DecodeError::UnknownKind {
                type_name: "RaftError",
                kind,
            }),
        }
    }
}

/// The same types as bincode 1.3 wrote them (see `legacy`).
pub(crate) mod legacy {
    use super::*;

    pub fn leader_id(r: &mut LegacyReader<'_>) -> Result<LeaderId<NodeId>, DecodeError> {
        Ok(LeaderId::new(r.u64()?, r.u64()?))
    }

    pub fn vote(r: &mut LegacyReader<'_>) -> Result<Vote, DecodeError> {
        Ok(Vote {
            leader_id: leader_id(r)?,
            committed: r.bool()?,
        })
    }

    pub fn log_id(r: &mut LegacyReader<'_>) -> Result<LogId, DecodeError> {
        Ok(LogId {
            leader_id: leader_id(r)?,
            index: r.u64()?,
        })
    }

    fn membership(r: &mut LegacyReader<'_>) -> Result<NodeMembership, DecodeError> {
        let configs = r.seq(|r| Ok(r.seq(LegacyReader::u64)?.into_iter().collect()))?;
        let nodes: BTreeMap<NodeId, BasicNode> = r
            .seq(|r| Ok((r.u64()?, BasicNode { addr: r.string()? })))?
            .into_iter()
            .collect();
        Ok(Membership::new(configs, nodes))
    }

    pub fn entry(r: &mut LegacyReader<'_>) -> Result<Entry, DecodeError> {
        let log_id = log_id(r)?;
        let payload = match r.variant()? {
            0 => EntryPayload::Blank,
            1 => EntryPayload::Normal(Batch(r.seq(|r| Ok(Bytes::copy_from_slice(r.bytes()?)))?)),
            2 => EntryPayload::Membership(membership(r)?),
            kind => {
                return Err(DecodeError::UnknownKind {
                    type_name: "legacy EntryPayload",
                    kind: u64::from(kind),
                })
            }
        };
        Ok(Entry { log_id, payload })
    }

    pub fn snapshot_meta(r: &mut LegacyReader<'_>) -> Result<SnapshotMeta, DecodeError> {
        let last_log_id = r.option(log_id)?;
        let membership_log_id = r.option(log_id)?;
        let last_membership = StoredMembership::new(membership_log_id, membership(r)?);
        Ok(SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id: r.string()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{from_slice, to_vec};
    use openraft::CommittedLeaderId;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 2), index)
    }

    fn membership() -> NodeMembership {
        let nodes: BTreeMap<NodeId, BasicNode> =
            [(1, BasicNode::new("127.0.0.1:1"))].into_iter().collect();
        Membership::new(vec![[1].into_iter().collect()], nodes)
    }

    fn entries() -> Vec<Entry> {
        vec![
            Entry {
                log_id: log_id(1, 0),
                payload: EntryPayload::Membership(membership()),
            },
            Entry {
                log_id: log_id(1, 1),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: log_id(3, 2),
                payload: EntryPayload::Normal(Batch(vec![Bytes::from_static(b"ab"), Bytes::new()])),
            },
        ]
    }

    #[test]
    fn openraft_types_round_trip() {
        for entry in entries() {
            assert_eq!(from_slice::<Entry>(&to_vec(&entry)).unwrap(), entry);
        }
        let vote = Vote::new_committed(4, 2);
        assert_eq!(from_slice::<Vote>(&to_vec(&vote)).unwrap(), vote);
        let request = AppendEntriesRequest::<TypeConfig> {
            vote,
            prev_log_id: Some(log_id(1, 1)),
            entries: entries(),
            leader_commit: None,
        };
        let decoded: AppendEntriesRequest<TypeConfig> = from_slice(&to_vec(&request)).unwrap();
        assert_eq!(decoded.entries, request.entries);
        assert_eq!(decoded.prev_log_id, request.prev_log_id);
        let meta = SnapshotMeta {
            last_log_id: Some(log_id(3, 9)),
            last_membership: StoredMembership::new(Some(log_id(1, 0)), membership()),
            snapshot_id: "3-9-1".into(),
        };
        assert_eq!(from_slice::<SnapshotMeta>(&to_vec(&meta)).unwrap(), meta);
        let install = InstallSnapshotRequest::<TypeConfig> {
            vote,
            meta: meta.clone(),
            offset: 7,
            data: vec![1, 2, 3],
            done: true,
        };
        let decoded: InstallSnapshotRequest<TypeConfig> = from_slice(&to_vec(&install)).unwrap();
        assert_eq!((decoded.meta, decoded.data), (meta, vec![1, 2, 3]));
        for response in [
            AppendEntriesResponse::Success,
            AppendEntriesResponse::PartialSuccess(Some(log_id(1, 1))),
            AppendEntriesResponse::Conflict,
            AppendEntriesResponse::HigherVote(vote),
        ] {
            assert_eq!(
                from_slice::<AppendEntriesResponse<NodeId>>(&to_vec(&response)).unwrap(),
                response
            );
        }
        let mismatch: RaftError<NodeId, InstallSnapshotError> =
            RaftError::APIError(InstallSnapshotError::SnapshotMismatch(SnapshotMismatch {
                expect: SnapshotSegmentId {
                    id: "a".into(),
                    offset: 1,
                },
                got: SnapshotSegmentId {
                    id: "b".into(),
                    offset: 2,
                },
            }));
        let decoded: RaftError<NodeId, InstallSnapshotError> =
            from_slice(&to_vec(&mismatch)).unwrap();
        assert_eq!(decoded.to_string(), mismatch.to_string());
    }

    #[test]
    fn the_log_id_encoding_has_a_fixed_size() {
        // The committed marker is overwritten in place, so its size must never change.
        assert_eq!(
            to_vec(&log_id(0, 0)).len(),
            to_vec(&log_id(u64::MAX, u64::MAX)).len()
        );
    }

    #[test]
    fn truncated_entries_are_errors() {
        for entry in entries() {
            let bytes = to_vec(&entry);
            for cut in 0..bytes.len() {
                assert!(from_slice::<Entry>(&bytes[..cut]).is_err());
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn entries_with_any_records_round_trip(
            term in proptest::prelude::any::<u64>(),
            index in proptest::prelude::any::<u64>(),
            records in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
                0..8,
            ),
        ) {
            let entry = Entry {
                log_id: log_id(term, index),
                payload: EntryPayload::Normal(Batch(records.into_iter().map(Bytes::from).collect())),
            };
            proptest::prop_assert_eq!(from_slice::<Entry>(&to_vec(&entry)).unwrap(), entry);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = from_slice::<Entry>(&bytes);
            let _ = from_slice::<AppendEntriesRequest<TypeConfig>>(&bytes);
            let _ = from_slice::<RaftError<NodeId, InstallSnapshotError>>(&bytes);
            let _ = from_slice::<crate::wire::Request>(&bytes);
            let _ = from_slice::<crate::wire::Response>(&bytes);
            let _ = legacy::entry(&mut LegacyReader::new(&bytes));
        }
    }

    #[test]
    fn legacy_entries_decode() {
        // An entry as bincode wrote it: log id, variant 1 (Normal), one record "hi".
        let mut old = Vec::new();
        for value in [3u64, 2, 5] {
            old.extend_from_slice(&value.to_le_bytes());
        }
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(&2u64.to_le_bytes());
        old.extend_from_slice(b"hi");
        let mut reader = LegacyReader::new(&old);
        let entry = legacy::entry(&mut reader).unwrap();
        reader.finish().unwrap();
        assert_eq!(entry.log_id, log_id(3, 5));
        assert_eq!(
            entry.payload,
            EntryPayload::Normal(Batch(vec![Bytes::from_static(b"hi")]))
        );
    }
}
