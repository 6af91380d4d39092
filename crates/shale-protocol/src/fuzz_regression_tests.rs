//! Replays every input kept under tests/fuzz_regressions/<target>/ through the fuzz
//! target it was found by (or written for).

use std::path::Path;

use crate::fuzzing::{run, TARGETS};

#[test]
fn fuzz_regressions_replay_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let target = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            TARGETS.contains(&target.as_str()),
            "no fuzz target named {target}"
        );
        for input in std::fs::read_dir(&dir).unwrap() {
            let path = input.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            run(&target, &data);
            replayed += 1;
        }
    }
    assert!(replayed >= 4, "only {replayed} regression inputs found");
}
