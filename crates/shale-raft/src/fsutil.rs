//! Small durable-file helpers: checksummed whole-file records written atomically.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// Flushes a directory so that a rename or a new file inside it survives a crash.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `payload` prefixed with its CRC-32C to `path` through a temporary file and a rename
/// (`shale_durable::replace_file`), so a reader sees either the old or the new content. The
/// data and the rename are always fsynced before returning; `_durable` is ignored (every
/// caller outside a test passed true) and can go once its callers stop passing it.
pub fn write_atomic(path: &Path, payload: &[u8], _durable: bool) -> io::Result<()> {
    let mut framed = Vec::with_capacity(4 + payload.len());
    framed.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    framed.extend_from_slice(payload);
    Ok(shale_durable::replace_file(path, &framed)?)
}

/// Reads a file written by [`write_atomic`]. `Ok(None)` when it does not exist; an error of kind
/// `InvalidData` when its checksum does not match.
pub fn read_checked(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let data = match fs::read(path) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if data.len() < 4 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "file shorter than its checksum",
        ));
    }
    let (crc, payload) = data.split_at(4);
    let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32c::crc32c(payload) != expected {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "checksum mismatch",
        ));
    }
    Ok(Some(payload.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vote");
        assert_eq!(read_checked(&path).unwrap(), None);
        write_atomic(&path, b"hello", true).unwrap();
        write_atomic(&path, b"world", false).unwrap();
        assert_eq!(read_checked(&path).unwrap().as_deref(), Some(&b"world"[..]));
        let mut raw = fs::read(&path).unwrap();
        raw[5] ^= 0xff;
        fs::write(&path, raw).unwrap();
        assert_eq!(
            read_checked(&path).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }
}
