#![allow(clippy::unwrap_used)]

use super::*;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn replaces_the_content_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint");
    replace_file(&path, b"first").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"first");
    replace_file(&path, b"second, longer than the first").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second, longer than the first");
    replace_file(&path, b"").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"");
    assert_eq!(names_in(dir.path()), vec!["checkpoint".to_string()]);
}

#[test]
fn the_temporary_file_sits_beside_the_target() {
    let temp = temp_path(Path::new("/d/00000000000000000007.snapshot")).unwrap();
    assert_eq!(temp, Path::new("/d/00000000000000000007.snapshot.tmp"));
    assert_eq!(
        temp_path(Path::new(".kafka_cleanshutdown")).unwrap(),
        Path::new(".kafka_cleanshutdown.tmp")
    );
    assert!(temp_path(Path::new("/")).is_none());
}

#[test]
fn a_missing_directory_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent").join("checkpoint");
    let error = replace_file(&path, b"x").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert_eq!(error.action, "create");
    assert!(
        error.to_string().contains("absent"),
        "the message names the path: {error}"
    );
    let as_io = io::Error::from(error);
    assert_eq!(as_io.kind(), io::ErrorKind::NotFound);
    assert!(as_io.to_string().contains("checkpoint.tmp"), "{as_io}");
}

#[test]
fn a_target_that_cannot_be_replaced_is_an_error_and_keeps_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint");
    fs::create_dir(&path).unwrap();
    fs::write(path.join("inside"), b"kept").unwrap();
    let error = replace_file(&path, b"new").unwrap_err();
    assert_eq!(error.action, "rename to");
    assert_eq!(error.path, path);
    assert_eq!(fs::read(path.join("inside")).unwrap(), b"kept");
    assert_eq!(
        names_in(dir.path()),
        vec!["checkpoint".to_string()],
        "the temporary file is removed"
    );
}

#[test]
fn a_temporary_file_left_by_a_crash_does_not_break_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint");
    replace_file(&path, b"old").unwrap();
    // A crash after the temporary file was written, before the rename.
    let temp = temp_path(&path).unwrap();
    fs::write(&temp, b"a half-written longer temporary file").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"old");
    replace_file(&path, b"new").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"new");
    assert!(!temp.exists());
}

#[test]
fn a_path_without_a_file_name_is_refused() {
    let error = replace_file(Path::new(""), b"x").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
}
