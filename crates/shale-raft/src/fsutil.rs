//! Small durable-file helpers: checksummed whole-file records written atomically.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Flushes a directory so that a rename or a new file inside it survives a crash.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `payload` prefixed with its CRC-32C to `path` through a temporary file and a rename, so
/// a reader sees either the old or the new content. With `durable`, the data and the rename are
/// fsynced before returning.
pub fn write_atomic(path: &Path, payload: &[u8], durable: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = Path::new(&tmp_name);
    {
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(tmp)?;
        file.write_all(&crc32c::crc32c(payload).to_le_bytes())?;
        file.write_all(payload)?;
        if durable {
            file.sync_all()?;
        }
    }
    fs::rename(tmp, path)?;
    if durable {
        fsync_dir(dir)?;
    }
    Ok(())
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
