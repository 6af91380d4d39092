//! `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata` (tagged field 0): what a member
//! that joined with the classic protocol told the coordinator in its JoinGroup, kept so that it
//! can be answered as a classic member and turned back into one when the group is downgraded.

use bytes::Bytes;

use super::codec::{CompactWriter, Reader};
use super::RecordDecodeError;
use crate::types::JoinGroupProtocol;

/// The classic side of a consumer group member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    /// The session timeout of its JoinGroup (classic members keep their own).
    pub session_timeout_ms: i32,
    /// Its JoinGroup protocols, in the order it listed them.
    pub supported_protocols: Vec<JoinGroupProtocol>,
}

/// The nullable struct's presence marker, as Kafka's generated writer puts it first.
const PRESENT: u8 = 1;

impl ClassicMemberMetadata {
    /// The tagged field's bytes: the presence marker, then the struct (flexible encoding).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = CompactWriter::default();
        out.bytes.push(PRESENT);
        out.i32(self.session_timeout_ms);
        out.length(self.supported_protocols.len());
        for protocol in &self.supported_protocols {
            out.string(&protocol.name);
            out.length(protocol.metadata.len());
            out.bytes.extend_from_slice(&protocol.metadata);
            out.tagged_fields(&[]);
        }
        out.tagged_fields(&[]);
        out.bytes
    }

    /// Reads the tagged field; `None` for the null marker.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Option<Self>, RecordDecodeError> {
        let mut reader = Reader::new(bytes);
        if reader.i8()? as u8 != PRESENT {
            return Ok(None);
        }
        let session_timeout_ms = reader.i32()?;
        // Each protocol is at least a name length, a metadata length and its tag count.
        let count = reader.array_length(true, 3)?;
        let mut supported_protocols = Vec::with_capacity(count);
        for _ in 0..count {
            let name = reader.string(true)?;
            let metadata: Bytes = reader.bytes(true)?;
            reader.skip_tagged_fields()?;
            supported_protocols.push(JoinGroupProtocol { name, metadata });
        }
        reader.skip_tagged_fields()?;
        Ok(Some(Self {
            session_timeout_ms,
            supported_protocols,
        }))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::ClassicMemberMetadata;
    use crate::types::JoinGroupProtocol;

    #[test]
    fn round_trips_and_reads_kafkas_bytes() {
        // Kafka's bytes for a 10 s session and no protocols.
        let empty = ClassicMemberMetadata::decode(&[1, 0, 0, 39, 16, 1, 0])
            .unwrap()
            .unwrap();
        assert_eq!(empty.session_timeout_ms, 10_000);
        assert!(empty.supported_protocols.is_empty());
        assert_eq!(empty.encode(), vec![1, 0, 0, 39, 16, 1, 0]);
        let value = ClassicMemberMetadata {
            session_timeout_ms: 45_000,
            supported_protocols: vec![
                JoinGroupProtocol {
                    name: "range".into(),
                    metadata: Bytes::from_static(&[0, 3, 1, 2]),
                },
                JoinGroupProtocol {
                    name: "cooperative-sticky".into(),
                    metadata: Bytes::new(),
                },
            ],
        };
        assert_eq!(
            ClassicMemberMetadata::decode(&value.encode()).unwrap(),
            Some(value)
        );
        assert_eq!(ClassicMemberMetadata::decode(&[0]).unwrap(), None);
        assert!(ClassicMemberMetadata::decode(&[1, 0, 0]).is_err());
        assert!(ClassicMemberMetadata::decode(&[1, 0, 0, 0, 1, 0x7f]).is_err());
    }
}
