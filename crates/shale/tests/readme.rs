//! The README's API table is the registry's: regenerate it with `shale apis`.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn readme_lists_the_served_apis() {
    let out = Command::new(env!("CARGO_BIN_EXE_shale"))
        .arg("apis")
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    assert!(
        readme.contains(table.trim()),
        "README.md's API table is stale; paste the output of `shale apis`:\n{table}"
    );
}

#[test]
fn version_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_shale"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("shale "));
}

#[test]
fn invalid_config_stops_startup_naming_the_key() {
    let out = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(["serve", "--override", "num.partitions=many"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("num.partitions"), "{text}");
}
