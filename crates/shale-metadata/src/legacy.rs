//! Metadata records as the first format wrote them (entry format 1: bincode 1.3 with fixed-width
//! integers, see `shale_raft::legacy`), so metadata logs and snapshots written before the
//! versioned encoding still load. Read only.

use shale_raft::encoding::DecodeError;
use shale_raft::legacy::LegacyReader;

use crate::records::{ConfigResource, Endpoint, FeatureRange, MetadataRecord, SecurityProtocol};

/// The version every record of the first format carried.
const LEGACY_RECORD_VERSION: u8 = 0;

/// The body of a format-1 entry: `Vec<(version u8, MetadataRecord)>`.
pub(crate) fn decode_records(body: &[u8]) -> Result<Vec<MetadataRecord>, DecodeError> {
    let mut r = LegacyReader::new(body);
    r.seq(|r| {
        let version = r.u8()?;
        if version != LEGACY_RECORD_VERSION {
            return Err(DecodeError::UnknownVersion {
                type_name: "legacy metadata record",
                version: u64::from(version),
                max: u64::from(LEGACY_RECORD_VERSION),
            });
        }
        record(r)
    })
}

fn opt_i32s(r: &mut LegacyReader<'_>) -> Result<Option<Vec<i32>>, DecodeError> {
    r.option(LegacyReader::i32s)
}

fn endpoint(r: &mut LegacyReader<'_>) -> Result<Endpoint, DecodeError> {
    Ok(Endpoint {
        name: r.string()?,
        host: r.string()?,
        port: r.u16()?,
        security_protocol: match r.variant()? {
            0 => SecurityProtocol::Plaintext,
            1 => SecurityProtocol::Ssl,
            2 => SecurityProtocol::SaslPlaintext,
            3 => SecurityProtocol::SaslSsl,
            _ => return Err(DecodeError::Invalid("legacy security protocol")),
        },
    })
}

fn feature_range(r: &mut LegacyReader<'_>) -> Result<FeatureRange, DecodeError> {
    Ok(FeatureRange {
        name: r.string()?,
        min_version: r.i16()?,
        max_version: r.i16()?,
    })
}

fn config_resource(r: &mut LegacyReader<'_>) -> Result<ConfigResource, DecodeError> {
    match r.variant()? {
        0 => Ok(ConfigResource::Topic(r.string()?)),
        1 => Ok(ConfigResource::Broker(r.i32()?)),
        2 => Ok(ConfigResource::ClusterDefaultBroker),
        _ => Err(DecodeError::Invalid("legacy config resource")),
    }
}

fn record(r: &mut LegacyReader<'_>) -> Result<MetadataRecord, DecodeError> {
    let kind = r.variant()?;
    Ok(match kind {
        0 => MetadataRecord::RegisterBroker {
            broker_id: r.i32()?,
            incarnation_id: r.uuid()?,
            broker_epoch: r.i64()?,
            listeners: r.seq(endpoint)?,
            rack: r.option(LegacyReader::string)?,
            features: r.seq(feature_range)?,
            fenced: r.bool()?,
            in_controlled_shutdown: r.bool()?,
        },
        1 => MetadataRecord::FenceBroker {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
        },
        2 => MetadataRecord::UnfenceBroker {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
        },
        3 => MetadataRecord::BrokerRegistrationChange {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
            fenced: r.option(LegacyReader::bool)?,
            in_controlled_shutdown: r.option(LegacyReader::bool)?,
        },
        4 => MetadataRecord::UnregisterBroker {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
        },
        5 => MetadataRecord::Topic {
            name: r.string()?,
            topic_id: r.uuid()?,
        },
        6 => MetadataRecord::Partition {
            topic_id: r.uuid()?,
            partition: r.i32()?,
            replicas: r.i32s()?,
            isr: r.i32s()?,
            leader: r.i32()?,
            leader_epoch: r.i32()?,
            partition_epoch: r.i32()?,
            adding_replicas: r.i32s()?,
            removing_replicas: r.i32s()?,
        },
        7 => MetadataRecord::PartitionChange {
            topic_id: r.uuid()?,
            partition: r.i32()?,
            leader: r.option(LegacyReader::i32)?,
            isr: opt_i32s(r)?,
            replicas: opt_i32s(r)?,
            adding_replicas: opt_i32s(r)?,
            removing_replicas: opt_i32s(r)?,
        },
        8 => MetadataRecord::RemoveTopic {
            topic_id: r.uuid()?,
        },
        9 => MetadataRecord::Config {
            resource: config_resource(r)?,
            name: r.string()?,
            value: r.option(LegacyReader::string)?,
        },
        10 => MetadataRecord::AccessControlEntry {
            id: r.uuid()?,
            resource_type: r.i8()?,
            resource_name: r.string()?,
            pattern_type: r.i8()?,
            principal: r.string()?,
            host: r.string()?,
            operation: r.i8()?,
            permission_type: r.i8()?,
        },
        11 => MetadataRecord::RemoveAccessControlEntry { id: r.uuid()? },
        12 => MetadataRecord::UserScramCredential {
            name: r.string()?,
            mechanism: r.i8()?,
            salt: r.bytes()?.to_vec(),
            stored_key: r.bytes()?.to_vec(),
            server_key: r.bytes()?.to_vec(),
            iterations: r.i32()?,
        },
        13 => MetadataRecord::RemoveUserScramCredential {
            name: r.string()?,
            mechanism: r.i8()?,
        },
        14 => MetadataRecord::ClientQuota {
            entity: r.seq(|r| Ok((r.string()?, r.option(LegacyReader::string)?)))?,
            key: r.string()?,
            value: r.option(LegacyReader::f64)?,
        },
        15 => MetadataRecord::ProducerIds {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
            next_producer_id: r.i64()?,
        },
        16 => MetadataRecord::FeatureLevel {
            name: r.string()?,
            level: r.i16()?,
        },
        17 => MetadataRecord::NoOp,
        18 => MetadataRecord::PartitionWithElr {
            topic_id: r.uuid()?,
            partition: r.i32()?,
            replicas: r.i32s()?,
            isr: r.i32s()?,
            leader: r.i32()?,
            leader_epoch: r.i32()?,
            partition_epoch: r.i32()?,
            adding_replicas: r.i32s()?,
            removing_replicas: r.i32s()?,
            eligible_leader_replicas: r.i32s()?,
            last_known_elr: r.i32s()?,
        },
        19 => MetadataRecord::PartitionChangeWithElr {
            topic_id: r.uuid()?,
            partition: r.i32()?,
            leader: r.option(LegacyReader::i32)?,
            isr: opt_i32s(r)?,
            replicas: opt_i32s(r)?,
            adding_replicas: opt_i32s(r)?,
            removing_replicas: opt_i32s(r)?,
            eligible_leader_replicas: opt_i32s(r)?,
            last_known_elr: opt_i32s(r)?,
        },
        other => {
            return Err(DecodeError::UnknownKind {
                type_name: "legacy MetadataRecord",
                kind: u64::from(other),
            })
        }
    })
}
