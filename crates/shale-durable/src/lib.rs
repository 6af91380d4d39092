//! Whole small files (checkpoints, snapshots, `meta.properties`, vote records) replaced so
//! that a crash leaves either the old content or the new one, never a mix, and the new one
//! survives a crash once [`replace_file`] returns.
//!
//! The protocol: write the bytes to `<name>.tmp` in the target's directory, fsync it, rename
//! it over the target, fsync the directory (without that last step the rename itself may be
//! lost). The temporary name is fixed, so a file left by a crash is overwritten by the next
//! write instead of piling up; callers that list a directory skip names ending in `.tmp`.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The suffix of the temporary file beside the target.
pub const TEMP_SUFFIX: &str = ".tmp";

/// One step of [`replace_file`] failed.
#[derive(Debug)]
pub struct ReplaceError {
    /// What was being done: `create`, `write`, `fsync`, `rename to`, `fsync directory`.
    pub action: &'static str,
    /// The file or directory it was done to.
    pub path: PathBuf,
    pub source: io::Error,
}

impl ReplaceError {
    fn new(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ReplaceError {
        let path = path.to_path_buf();
        move |source| ReplaceError {
            action,
            path,
            source,
        }
    }

    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.action,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for ReplaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Keeps the kind (a full disk stays a full disk) and puts the step and path in the message.
impl From<ReplaceError> for io::Error {
    fn from(e: ReplaceError) -> io::Error {
        io::Error::new(e.source.kind(), e)
    }
}

/// The temporary file [`replace_file`] writes before renaming it to `path`.
pub fn temp_path(path: &Path) -> Option<PathBuf> {
    let mut name: OsString = path.file_name()?.to_owned();
    name.push(TEMP_SUFFIX);
    Some(path.with_file_name(name))
}

/// Replaces the file at `path` with `contents` durably (see the crate doc). The directory
/// must exist. On failure the target keeps its old content (or stays absent), and the
/// temporary file is removed when it can be.
pub fn replace_file(path: &Path, contents: &[u8]) -> Result<(), ReplaceError> {
    let no_name = || ReplaceError {
        action: "name",
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
    };
    let temp = temp_path(path).ok_or_else(no_name)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let written = write_synced(&temp, contents)
        .and_then(|()| fs::rename(&temp, path).map_err(ReplaceError::new("rename to", path)));
    if let Err(e) = written {
        // Only tidiness: a temporary file left here is overwritten by the next write.
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(ReplaceError::new("fsync directory", dir))
}

fn write_synced(temp: &Path, contents: &[u8]) -> Result<(), ReplaceError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(temp)
        .map_err(ReplaceError::new("create", temp))?;
    file.write_all(contents)
        .map_err(ReplaceError::new("write", temp))?;
    file.sync_all().map_err(ReplaceError::new("fsync", temp))
}

#[cfg(test)]
mod tests;
