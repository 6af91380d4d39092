//! Replays every input kept under tests/fuzz_regressions/<target>/ through the fuzz target of
//! that name: a crash the fuzzer once found stays fixed.

use std::path::Path;

use crate::fuzzing::{run, TARGETS};

#[test]
fn fuzz_regressions_replay_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut replayed = 0;
    for target in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            let data = std::fs::read(entry.path()).unwrap();
            run(target, &data);
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no inputs found under {}", root.display());
}
