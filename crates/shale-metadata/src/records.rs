//! Metadata records: the only way cluster metadata changes.
//!
//! On-disk format of one log entry (a batch of records committed atomically):
//! `[ENTRY_FORMAT_VERSION: u8][count varint][record]*` in the versioned encoding
//! (`shale_raft::encoding`, the codecs in `codec.rs`): each record is its kind number, then
//! the variant as a struct `[version varint][fields][tagged fields]`, so every record kind
//! carries its own version and has room for new fields (Kafka's metadata records with tagged
//! fields are the model). Stability rule: kind numbers are never reused; a new optional field
//! is a tagged field (older readers skip it), a change to the fixed fields takes a new version
//! of that kind (older readers refuse it). Entries of format 1 (bincode 1.3, the first
//! releases) are still read, by `legacy.rs`; nothing writes them.

use uuid::Uuid;

use crate::error::MetadataError;

/// Version of the entry framing (the leading byte of every encoded entry).
pub const ENTRY_FORMAT_VERSION: u8 = 2;
/// The framing of the first releases: a bincode body.
pub const LEGACY_ENTRY_FORMAT_VERSION: u8 = 1;
/// Version written for every record kind today.
pub const RECORD_VERSION: u8 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's numeric id (as in the SecurityProtocol enum).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }
}

/// A listener a broker advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: SecurityProtocol,
}

/// A resource that carries configs. Topic configs are keyed by topic name, as in Kafka.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConfigResource {
    Topic(String),
    Broker(i32),
    /// The cluster-wide default for dynamic broker configs (Kafka's broker resource with an
    /// empty name).
    ClusterDefaultBroker,
    /// A group's dynamic configs (KIP-848's GROUP resource, Kafka's resource type 32), keyed by
    /// group id; the group need not exist.
    Group(String),
}

/// A supported feature range a broker announces at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureRange {
    pub name: String,
    pub min_version: i16,
    pub max_version: i16,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MetadataRecord {
    RegisterBroker {
        broker_id: i32,
        incarnation_id: Uuid,
        broker_epoch: i64,
        listeners: Vec<Endpoint>,
        rack: Option<String>,
        features: Vec<FeatureRange>,
        fenced: bool,
        in_controlled_shutdown: bool,
    },
    FenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    UnfenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// Kafka's BrokerRegistrationChangeRecord.
    BrokerRegistrationChange {
        broker_id: i32,
        broker_epoch: i64,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
    },
    UnregisterBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    Topic {
        name: String,
        topic_id: Uuid,
    },
    /// The full state of one partition (creation, and in snapshots).
    Partition {
        topic_id: Uuid,
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        adding_replicas: Vec<i32>,
        removing_replicas: Vec<i32>,
    },
    /// A change to one partition. Replay bumps the partition epoch always, and the leader epoch
    /// whenever `leader` is present (also when it names the same leader: that is how a change
    /// forces followers to resync).
    PartitionChange {
        topic_id: Uuid,
        partition: i32,
        leader: Option<i32>,
        isr: Option<Vec<i32>>,
        replicas: Option<Vec<i32>>,
        adding_replicas: Option<Vec<i32>>,
        removing_replicas: Option<Vec<i32>>,
    },
    RemoveTopic {
        topic_id: Uuid,
    },
    /// Set (`Some`) or delete (`None`) one config of one resource.
    Config {
        resource: ConfigResource,
        name: String,
        value: Option<String>,
    },
    AccessControlEntry {
        id: Uuid,
        resource_type: i8,
        resource_name: String,
        pattern_type: i8,
        principal: String,
        host: String,
        operation: i8,
        permission_type: i8,
    },
    RemoveAccessControlEntry {
        id: Uuid,
    },
    UserScramCredential {
        name: String,
        mechanism: i8,
        salt: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
        iterations: i32,
    },
    RemoveUserScramCredential {
        name: String,
        mechanism: i8,
    },
    /// Set (`Some`) or remove (`None`) one quota key for an entity. The entity is a list of
    /// (entity type, entity name; `None` = the default entity).
    ClientQuota {
        entity: Vec<(String, Option<String>)>,
        key: String,
        value: Option<f64>,
    },
    /// The next producer id block starts at `next_producer_id`.
    ProducerIds {
        broker_id: i32,
        broker_epoch: i64,
        next_producer_id: i64,
    },
    FeatureLevel {
        name: String,
        level: i16,
    },
    NoOp,
    /// `Partition` with KIP-966's eligible leader replicas and last known ELR. Written (in
    /// snapshots) only when either list is non-empty, so images without ELR keep the
    /// original layout.
    PartitionWithElr {
        topic_id: Uuid,
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        adding_replicas: Vec<i32>,
        removing_replicas: Vec<i32>,
        eligible_leader_replicas: Vec<i32>,
        last_known_elr: Vec<i32>,
    },
    /// `PartitionChange` that also sets KIP-966's lists (`None`: unchanged). Replayed as
    /// `PartitionChange` is; written only when one of the lists changes.
    PartitionChangeWithElr {
        topic_id: Uuid,
        partition: i32,
        leader: Option<i32>,
        isr: Option<Vec<i32>>,
        replicas: Option<Vec<i32>>,
        adding_replicas: Option<Vec<i32>>,
        removing_replicas: Option<Vec<i32>>,
        eligible_leader_replicas: Option<Vec<i32>>,
        last_known_elr: Option<Vec<i32>>,
    },
}

impl MetadataRecord {
    /// KIP-966's eligible leader replicas and last known ELR of a partition record: `None`
    /// for the variants without them (and for a change that leaves a list as it is).
    pub fn elr_lists(&self) -> (Option<&Vec<i32>>, Option<&Vec<i32>>) {
        match self {
            MetadataRecord::PartitionWithElr {
                eligible_leader_replicas,
                last_known_elr,
                ..
            } => (Some(eligible_leader_replicas), Some(last_known_elr)),
            MetadataRecord::PartitionChangeWithElr {
                eligible_leader_replicas,
                last_known_elr,
                ..
            } => (eligible_leader_replicas.as_ref(), last_known_elr.as_ref()),
            _ => (None, None),
        }
    }
}

/// Encodes a batch of records as one log entry.
pub fn encode_entry(records: &[MetadataRecord]) -> Vec<u8> {
    let mut out = vec![ENTRY_FORMAT_VERSION];
    shale_raft::encoding::Encode::encode(records, &mut out);
    out
}

/// Decodes one log entry (of either format) back into its records.
pub fn decode_entry(bytes: &[u8]) -> Result<Vec<MetadataRecord>, MetadataError> {
    let (&format, body) = bytes
        .split_first()
        .ok_or_else(|| MetadataError::Corrupt("empty metadata log entry".into()))?;
    let decoded = match format {
        ENTRY_FORMAT_VERSION => shale_raft::encoding::from_slice(body),
        LEGACY_ENTRY_FORMAT_VERSION => crate::legacy::decode_records(body),
        _ => {
            return Err(MetadataError::Corrupt(format!(
                "unknown metadata entry format version {format}"
            )))
        }
    };
    decoded.map_err(|err| MetadataError::Corrupt(format!("undecodable metadata entry: {err}")))
}

/// Whether an entry is in the first format (bincode), which a snapshot replaces.
pub fn is_legacy_entry(bytes: &[u8]) -> bool {
    bytes.first() == Some(&LEGACY_ENTRY_FORMAT_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips() {
        let records = vec![
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: Uuid::from_u128(7),
            },
            MetadataRecord::Partition {
                topic_id: Uuid::from_u128(7),
                partition: 0,
                replicas: vec![1, 2],
                isr: vec![1, 2],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
            },
            MetadataRecord::Config {
                resource: ConfigResource::Topic("t".into()),
                name: "retention.ms".into(),
                value: Some("1000".into()),
            },
            MetadataRecord::ClientQuota {
                entity: vec![("user".into(), None)],
                key: "producer_byte_rate".into(),
                value: Some(1024.0),
            },
        ];
        let bytes = encode_entry(&records);
        assert_eq!(bytes[0], ENTRY_FORMAT_VERSION);
        assert_eq!(decode_entry(&bytes).unwrap(), records);
    }

    #[test]
    fn garbage_is_refused_not_panicking() {
        assert!(decode_entry(&[]).is_err());
        assert!(decode_entry(&[9, 1, 2]).is_err());
        assert!(decode_entry(&[ENTRY_FORMAT_VERSION, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn encoding_is_stable() {
        // Guards the on-disk layout: a change here breaks existing metadata logs.
        let record = MetadataRecord::FeatureLevel {
            name: "a".into(),
            level: 2,
        };
        let bytes = encode_entry(std::slice::from_ref(&record));
        let expected: Vec<u8> = vec![
            2,  // entry format
            1,  // one record
            16, // kind of FeatureLevel
            0,  // record version
            1, b'a', // name
            0, 2, // level
            0, // no tagged fields
        ];
        assert_eq!(bytes, expected);
        // The same entry as the first format (bincode) wrote it still decodes.
        let legacy: Vec<u8> = vec![
            1, // entry format
            1, 0, 0, 0, 0, 0, 0, 0, // one record
            0, // record version
            16, 0, 0, 0, // variant index of FeatureLevel
            1, 0, 0, 0, 0, 0, 0, 0, b'a', // name
            2, 0, // level
        ];
        assert_eq!(decode_entry(&legacy).unwrap(), vec![record]);
        assert!(is_legacy_entry(&legacy) && !is_legacy_entry(&bytes));
    }

    #[test]
    fn a_newer_record_version_is_refused_and_unknown_tags_are_skipped() {
        let record = MetadataRecord::RemoveTopic {
            topic_id: Uuid::from_u128(9),
        };
        let mut bytes = encode_entry(std::slice::from_ref(&record));
        // A field a newer writer added as a tag: skipped.
        bytes.pop();
        bytes.extend_from_slice(&[1, 5, 2, 0xab, 0xcd]);
        assert_eq!(decode_entry(&bytes).unwrap(), vec![record.clone()]);
        let mut newer = encode_entry(&[record]);
        newer[3] = 1;
        let err = decode_entry(&newer).unwrap_err();
        assert!(err.to_string().contains("version 1"), "{err}");
    }

    #[test]
    fn entries_written_before_elr_still_decode_and_new_variants_are_appended() {
        // A PartitionChange entry as written before KIP-966 (hand-built bytes): it must still
        // decode to the same record.
        let topic_id = Uuid::from_u128(7);
        let mut old: Vec<u8> = vec![1, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        old.extend_from_slice(&7u32.to_le_bytes()); // variant index of PartitionChange
        old.extend_from_slice(&16u64.to_le_bytes()); // uuid as bytes: length then bytes
        old.extend_from_slice(topic_id.as_bytes());
        old.extend_from_slice(&3i32.to_le_bytes()); // partition
        old.extend_from_slice(&[1]); // leader: Some
        old.extend_from_slice(&2i32.to_le_bytes());
        old.extend_from_slice(&[1]); // isr: Some([2])
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(&2i32.to_le_bytes());
        old.extend_from_slice(&[0, 0, 0]); // replicas, adding, removing: None
        assert_eq!(
            decode_entry(&old).unwrap(),
            vec![MetadataRecord::PartitionChange {
                topic_id,
                partition: 3,
                leader: Some(2),
                isr: Some(vec![2]),
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
            }]
        );
        // The ELR variants come after every earlier one, so no earlier index moved.
        let with_elr = encode_entry(&[
            MetadataRecord::PartitionWithElr {
                topic_id,
                partition: 0,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
                eligible_leader_replicas: vec![2],
                last_known_elr: vec![],
            },
            MetadataRecord::PartitionChangeWithElr {
                topic_id,
                partition: 0,
                leader: None,
                isr: None,
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
                eligible_leader_replicas: Some(vec![]),
                last_known_elr: Some(vec![1]),
            },
        ]);
        assert_eq!(with_elr[2], 18, "the kind number is the old variant index");
        let decoded = decode_entry(&with_elr).unwrap();
        assert!(matches!(
            decoded[1],
            MetadataRecord::PartitionChangeWithElr { .. }
        ));
    }
}
