//! Holds the tree to `layering.rules` at the repository root: which crates a crate may depend
//! on, and which modules some files may not import. A lower layer importing a higher one
//! fails here with the rule and the place that breaks it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Rules {
    /// crate -> the crates its [dependencies] may name.
    crates: BTreeMap<String, Vec<String>>,
    /// (crate, path prefix inside it, forbidden module paths).
    forbids: Vec<(String, String, Vec<String>)>,
}

fn parse_rules(text: &str) -> Rules {
    let mut rules = Rules {
        crates: BTreeMap::new(),
        forbids: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        match words.next() {
            Some("crate") => {
                let name = words.next().expect("a crate name").to_string();
                rules
                    .crates
                    .insert(name, words.map(str::to_string).collect());
            }
            Some("forbid") => {
                let place = words.next().expect("a place");
                let (krate, prefix) = place.split_once('/').expect("crate/path");
                rules.forbids.push((
                    krate.to_string(),
                    prefix.to_string(),
                    words.map(str::to_string).collect(),
                ));
            }
            other => panic!("layering.rules line {}: unknown rule {other:?}", n + 1),
        }
    }
    rules
}

/// The names in a Cargo.toml's `[dependencies]` and `[build-dependencies]` sections that are
/// workspace crates or the wire-protocol crate.
fn layered_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]" || line == "[build-dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let name = line
            .split(|c: char| c == '=' || c == '.' || c.is_whitespace())
            .next()
            .unwrap_or("");
        if name.starts_with("shale") || name == "kafka-protocol" {
            out.push(name.to_string());
        }
    }
    out
}

/// Breaches of the crate rules: `(crate, dependency)` pairs the rules do not allow.
fn crate_breaches(rules: &Rules, manifests: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (krate, manifest) in manifests {
        let Some(allowed) = rules.crates.get(krate) else {
            out.push(format!("{krate} has no `crate` rule in layering.rules"));
            continue;
        };
        for dep in layered_dependencies(manifest) {
            if !allowed.contains(&dep) {
                out.push(format!(
                    "{krate} depends on {dep}, which layering.rules does not allow"
                ));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Breaches of the forbid rules in `source` (the file at `place`).
fn module_breaches(place: &str, source: &str, forbidden: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for module in forbidden {
            // `crate::handlers` but not `crate::handlers_x`.
            let hit = code.match_indices(module.as_str()).any(|(at, _)| {
                code[at + module.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            });
            if hit {
                out.push(format!("{place}:{} names {module}: {}", n + 1, line.trim()));
            }
        }
    }
    out
}

fn load_rules() -> Rules {
    let text = std::fs::read_to_string(root().join("layering.rules")).expect("layering.rules");
    parse_rules(&text)
}

#[test]
fn crates_depend_only_downwards() {
    let rules = load_rules();
    let mut manifests = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let manifest = entry.path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            manifests.insert(entry.file_name().to_string_lossy().to_string(), text);
        }
    }
    assert!(manifests.contains_key("shale-broker"), "found the crates");
    let breaches = crate_breaches(&rules, &manifests);
    assert!(
        breaches.is_empty(),
        "layering breaches:\n{}",
        breaches.join("\n")
    );
}

#[test]
fn forbidden_modules_are_not_imported() {
    let rules = load_rules();
    let mut breaches = Vec::new();
    for (krate, prefix, forbidden) in &rules.forbids {
        let base = root().join("crates").join(krate);
        let mut files = Vec::new();
        rust_files(&base.join("src"), &mut files);
        let matching: Vec<_> = files
            .into_iter()
            .filter(|f| {
                f.strip_prefix(&base)
                    .is_ok_and(|rel| rel.to_string_lossy().starts_with(prefix.as_str()))
            })
            .collect();
        assert!(
            !matching.is_empty(),
            "forbid {krate}/{prefix}: no such file"
        );
        for file in matching {
            let source = std::fs::read_to_string(&file).unwrap();
            let place = format!("{krate}/{}", file.strip_prefix(&base).unwrap().display());
            breaches.extend(module_breaches(&place, &source, forbidden));
        }
    }
    assert!(
        breaches.is_empty(),
        "layering breaches:\n{}",
        breaches.join("\n")
    );
}

/// The checks themselves catch what they are for: a lower crate naming a higher one, and a
/// forbidden module named in a file.
#[test]
fn a_wrong_import_is_caught() {
    let rules = parse_rules("crate shale-log\ncrate shale-broker shale-log\n");
    let mut manifests = BTreeMap::new();
    manifests.insert(
        "shale-log".to_string(),
        "[dependencies]\nshale-broker.workspace = true\n\n[dev-dependencies]\nshale-testkit.workspace = true\n"
            .to_string(),
    );
    manifests.insert(
        "shale-broker".to_string(),
        "[dependencies]\nshale-log = { path = \"../shale-log\" }\n".to_string(),
    );
    assert_eq!(
        crate_breaches(&rules, &manifests),
        vec!["shale-log depends on shale-broker, which layering.rules does not allow".to_string()]
    );
    let forbidden = vec!["crate::handlers".to_string()];
    let source = "use crate::handlers::leader_partition;\nuse crate::handlers_extra;\n// crate::handlers in a comment\n";
    let found = module_breaches("shale-broker/src/config/x.rs", source, &forbidden);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("x.rs:1"));
}

#[path = "layering/module_loops.rs"]
mod module_loops;

fn render_loops(graph: &module_loops::Graph, loops: &[Vec<String>]) -> String {
    let mut out = String::new();
    for files in loops {
        out.push_str(&format!("loop of {} files:\n", files.len()));
        out.push_str(&module_loops::describe(graph, files));
    }
    out
}

/// No file of shale-broker depends on another that depends back on it, directly or through
/// others: the broker's modules form layers (`layering.rules` writes the rules that keep the
/// lowest floors apart).
#[test]
fn shale_broker_files_import_each_other_in_no_loop() {
    let src = root().join("crates/shale-broker/src");
    let graph = module_loops::dependency_graph(&src);
    assert!(
        graph.contains_key("api_table.rs"),
        "read the broker's files"
    );
    let found = module_loops::loops(&graph);
    assert!(
        found.is_empty(),
        "files of shale-broker import each other in a loop:\n{}",
        render_loops(&graph, &found)
    );
}

/// Writes `files` (path, source) under a new temporary directory and returns it.
fn source_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, source) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, source).unwrap();
    }
    dir
}

/// The loop check finds a loop of files that name each other, whichever way they are named,
/// and reports the names that tie it; a parent declaring its children is not a loop.
#[test]
fn a_module_loop_is_caught() {
    let looped = source_tree(&[
        (
            "lib.rs",
            "mod server;\nmod handlers;\npub use server::Broker;\n",
        ),
        (
            "server.rs",
            "use crate::handlers::{self, api};\npub struct Broker;\n",
        ),
        ("handlers/mod.rs", "pub mod api;\npub mod produce;\n"),
        (
            "handlers/api.rs",
            "// crate::server in a comment is not a use\nfn f() { super::produce::g(); }\n",
        ),
        ("handlers/produce.rs", "pub fn g(_: &crate::Broker) {}\n"),
    ]);
    let graph = module_loops::dependency_graph(looped.path());
    let found = module_loops::loops(&graph);
    let expected: Vec<String> = [
        "handlers/api.rs",
        "handlers/produce.rs",
        "lib.rs",
        "server.rs",
    ]
    .iter()
    .map(|f| f.to_string())
    .collect();
    assert_eq!(found, vec![expected.clone()], "{graph:?}");
    let ties = module_loops::describe(&graph, &found[0]);
    assert!(
        ties.contains("lib.rs -> server.rs: crate::server::Broker"),
        "{ties}"
    );
    assert!(
        ties.contains("handlers/produce.rs -> lib.rs: crate::Broker"),
        "{ties}"
    );
    assert!(
        ties.contains("handlers/api.rs -> handlers/produce.rs"),
        "{ties}"
    );
    assert!(!ties.contains("handlers/api.rs -> server.rs"), "{ties}");

    // The same tree with the handler taking its type from below: no loop. A child using
    // `super::` and a parent declaring `mod` do not make one on their own.
    let layered = source_tree(&[
        ("lib.rs", "mod server;\nmod handlers;\nmod request;\n"),
        ("server.rs", "use crate::handlers::api;\n"),
        ("request.rs", "pub struct Context;\n"),
        (
            "handlers/mod.rs",
            "pub mod api;\npub mod produce;\n#[path = \"extra_tests.rs\"]\nmod tests;\n",
        ),
        ("handlers/api.rs", "fn f() { super::produce::g(); }\n"),
        (
            "handlers/produce.rs",
            "pub fn g(_: &crate::request::Context) {}\n",
        ),
        ("handlers/extra_tests.rs", "use super::*;\n"),
    ]);
    let graph = module_loops::dependency_graph(layered.path());
    assert!(graph.contains_key("handlers/extra_tests.rs"), "{graph:?}");
    assert_eq!(
        module_loops::loops(&graph),
        Vec::<Vec<String>>::new(),
        "{graph:?}"
    );
}
