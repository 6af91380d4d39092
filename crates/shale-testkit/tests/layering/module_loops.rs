//! Loops between the files of one crate: file A depends on file B when A's code names a
//! module B holds (`use crate::x::y`, a `crate::x::f()` path in code, `super::`, `self::`, a
//! child module's name, `pub use`). Declaring `mod child;` is not a dependency of the parent
//! on the child (it only says where the child lives); a child naming `super::Thing` depends
//! on its parent. Every strongly connected component of more than one file is a loop.
//!
//! Comments and string literals are skipped; paths inside macro definitions count where
//! they are written (`$crate::x` in the file defining the macro).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

/// The tokens of `source` that matter for module paths: identifiers (`$crate` as one), string
/// literals (for `#[path]`), `::` and single punctuation. Comments, char literals and
/// lifetimes are dropped.
fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            let (text, end) = quoted(&chars, i + 1);
            out.push(Token::Str(text));
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c == '$' && next.is_some_and(is_ident_start) {
            let (ident, end) = ident_at(&chars, i + 1);
            out.push(Token::Ident(format!("${ident}")));
            i = end;
        } else if is_ident_start(c) {
            let (ident, end) = ident_at(&chars, i);
            let raw =
                (ident == "r" || ident == "br") && matches!(chars.get(end), Some('"') | Some('#'));
            if raw {
                let (text, after) = raw_string(&chars, end);
                out.push(Token::Str(text));
                i = after;
            } else {
                out.push(Token::Ident(ident));
                i = end;
            }
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else if c.is_whitespace() || c.is_ascii_digit() {
            i += 1;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn ident_at(chars: &[char], start: usize) -> (String, usize) {
    let mut end = start;
    while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
        end += 1;
    }
    (chars[start..end].iter().collect(), end)
}

/// A `"..."` literal's text from just after its opening quote; returns the index after it.
fn quoted(chars: &[char], start: usize) -> (String, usize) {
    let mut text = String::new();
    let mut i = start;
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            i += 1;
        }
        if let Some(c) = chars.get(i) {
            text.push(*c);
        }
        i += 1;
    }
    (text, i + 1)
}

/// A raw string starting at its `#`s or quote (after the `r`).
fn raw_string(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    let begin = i;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return (chars[begin..i].iter().collect(), i + 1 + hashes);
        }
        i += 1;
    }
    (chars[begin..].iter().collect(), chars.len())
}

/// Where a crate's modules live: module path (`["handlers", "fetch"]`) to file, inline
/// modules mapping to the file that holds them.
#[derive(Default)]
struct ModuleTree {
    files: BTreeMap<Vec<String>, PathBuf>,
    /// Per file, its tokens and the module path of the file itself.
    sources: BTreeMap<PathBuf, (Vec<String>, Vec<Token>)>,
}

fn load_tree(src: &Path) -> ModuleTree {
    let mut tree = ModuleTree::default();
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no lib.rs or main.rs in {}", src.display()));
    let mut pending = vec![(Vec::new(), root)];
    while let Some((module, file)) = pending.pop() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if tree.sources.contains_key(&file) {
            continue;
        }
        let tokens = tokenize(&text);
        tree.files.insert(module.clone(), file.clone());
        for (child, child_file) in declared_modules(&file, &module, &tokens) {
            match child_file {
                Some(path) => pending.push((child, path)),
                None => {
                    tree.files.insert(child, file.clone());
                }
            }
        }
        tree.sources.insert(file, (module, tokens));
    }
    tree
}

/// The modules a file declares: `(module path, Some(file))` for `mod x;` and `(module path,
/// None)` for an inline `mod x { .. }`, whose items stay in this file.
fn declared_modules(
    file: &Path,
    module: &[String],
    tokens: &[Token],
) -> Vec<(Vec<String>, Option<PathBuf>)> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let owns_dir = matches!(
        file.file_name().and_then(|n| n.to_str()),
        Some("lib.rs" | "main.rs" | "mod.rs")
    );
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut out = Vec::new();
    let mut inline: Vec<(Vec<String>, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
                path_attr = None;
            }
            Token::Punct(';') => path_attr = None,
            Token::Ident(word) if word == "path" => {
                if let (Some(Token::Punct('=')), Some(Token::Str(value))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    path_attr = Some(value.clone());
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                    let parent = inline.last().map_or(module.to_vec(), |(m, _)| m.clone());
                    let mut child = parent.clone();
                    child.push(name.clone());
                    match tokens.get(i + 2) {
                        Some(Token::Punct(';')) => {
                            let mut base = if owns_dir {
                                dir.to_path_buf()
                            } else {
                                dir.join(stem)
                            };
                            for m in &parent[module.len()..] {
                                base = base.join(m);
                            }
                            let target = match path_attr.take() {
                                Some(p) => dir.join(p),
                                None if base.join(format!("{name}.rs")).exists() => {
                                    base.join(format!("{name}.rs"))
                                }
                                None => base.join(name).join("mod.rs"),
                            };
                            out.push((child, Some(target)));
                            i += 3;
                            continue;
                        }
                        Some(Token::Punct('{')) => {
                            out.push((child.clone(), None));
                            inline.push((child, depth));
                            depth += 1;
                            path_attr = None;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every module path named in a file, with the module scope it is named from (inline modules
/// are scopes of their own, for `super::`). `aliases` are the modules the file's `use`
/// statements bring in by name (`use crate::handlers;` then `handlers::produce::handle`);
/// the second value is those found here.
fn named_paths(
    tree: &ModuleTree,
    module: &[String],
    tokens: &[Token],
    aliases: &BTreeMap<String, Vec<String>>,
) -> (Vec<Vec<String>>, BTreeMap<String, Vec<String>>) {
    let mut out = Vec::new();
    let mut found_aliases = BTreeMap::new();
    let mut scopes: Vec<(Vec<String>, usize)> = vec![(module.to_vec(), 0)];
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let scope = scopes.last().map(|(m, _)| m.clone()).unwrap_or_default();
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if scopes.len() > 1 && scopes.last().is_some_and(|(_, at)| *at == depth) {
                    scopes.pop();
                }
            }
            Token::Ident(word)
                if word == "mod"
                    && matches!(tokens.get(i + 1), Some(Token::Ident(_)))
                    && tokens.get(i + 2) == Some(&Token::Punct('{')) =>
            {
                if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                    let mut inner = scope.clone();
                    inner.push(name.clone());
                    scopes.push((inner, depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(first) if tokens.get(i + 1) == Some(&Token::PathSep) => {
                let after_sep = i > 0 && tokens[i - 1] == Token::PathSep;
                let after_dot = i > 0 && tokens[i - 1] == Token::Punct('.');
                // `pub(in crate::x)` is a visibility, not a use.
                let visibility = i > 1
                    && tokens[i - 1] == Token::Ident("in".to_string())
                    && tokens[i - 2] == Token::Punct('(');
                let base: Option<Vec<String>> = match first.as_str() {
                    "crate" | "$crate" => Some(Vec::new()),
                    "self" => Some(scope.clone()),
                    "super" => Some(scope[..scope.len().saturating_sub(1)].to_vec()),
                    name => {
                        let mut child = scope.clone();
                        child.push(name.to_string());
                        if tree.files.contains_key(&child) {
                            Some(child)
                        } else {
                            aliases.get(name).cloned()
                        }
                    }
                };
                if let (Some(base), false, false, false) = (base, after_sep, after_dot, visibility)
                {
                    let in_use = i > 0 && tokens[i - 1] == Token::Ident("use".to_string());
                    let (paths, end) = path_tail(tokens, i + 1, base);
                    for (path, alias) in paths {
                        if in_use && tree.files.contains_key(&path) {
                            if let Some(name) = alias.or_else(|| path.last().cloned()) {
                                found_aliases.insert(name, path.clone());
                            }
                        }
                        out.push(path);
                    }
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (out, found_aliases)
}

/// The full paths of a path whose head resolved to `base`, from the `::` at `at` on (a use
/// group `{a, b::c}` gives one path per item), each with the name `as` gives it. Returns the
/// index after the path.
fn path_tail(tokens: &[Token], mut at: usize, mut base: Vec<String>) -> (Vec<Named>, usize) {
    loop {
        if tokens.get(at) != Some(&Token::PathSep) {
            return match (tokens.get(at), tokens.get(at + 1)) {
                (Some(Token::Ident(word)), Some(Token::Ident(alias))) if word == "as" => {
                    (vec![(base, Some(alias.clone()))], at + 2)
                }
                _ => (vec![(base, None)], at),
            };
        }
        match tokens.get(at + 1) {
            Some(Token::Ident(segment)) if segment == "super" => {
                base.pop();
                at += 2;
            }
            Some(Token::Ident(segment)) => {
                base.push(segment.clone());
                at += 2;
            }
            Some(Token::Punct('{')) => {
                let mut paths = Vec::new();
                let mut i = at + 2;
                loop {
                    match tokens.get(i) {
                        None => return (paths, i),
                        Some(Token::Punct('}')) => return (paths, i + 1),
                        Some(Token::Ident(word)) if word == "self" => {
                            let (more, end) = path_tail(tokens, i + 1, base.clone());
                            paths.extend(more);
                            i = end;
                        }
                        Some(Token::Ident(word)) => {
                            let mut item = base.clone();
                            item.push(word.clone());
                            let (more, end) = path_tail(tokens, i + 1, item);
                            paths.extend(more);
                            i = end;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            _ => return (vec![(base, None)], at + 1),
        }
    }
}

/// A path and the name a `use ... as` gives it.
type Named = (Vec<String>, Option<String>);

/// `file -> (file it names -> the paths naming it)`, files relative to `src`.
pub type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

pub fn dependency_graph(src: &Path) -> Graph {
    let tree = load_tree(src);
    let relative = |p: &Path| {
        p.strip_prefix(src)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut graph = Graph::new();
    for (file, (module, tokens)) in &tree.sources {
        let from = relative(file);
        let edges = graph.entry(from.clone()).or_default();
        let (_, aliases) = named_paths(&tree, module, tokens, &BTreeMap::new());
        let (paths, _) = named_paths(&tree, module, tokens, &aliases);
        for path in paths {
            let target = (0..=path.len())
                .rev()
                .find_map(|n| tree.files.get(&path[..n]));
            if let Some(target) = target {
                let to = relative(target);
                if to != from {
                    let name = if path.is_empty() {
                        "crate".to_string()
                    } else {
                        format!("crate::{}", path.join("::"))
                    };
                    edges.entry(to).or_default().insert(name);
                }
            }
        }
    }
    graph
}

/// The strongly connected components of more than one file, each sorted, in sorted order.
pub fn loops(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph.keys().collect();
    let index: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let successors: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph[*n]
                .keys()
                .filter_map(|to| index.get(to).copied())
                .collect()
        })
        .collect();
    let reaches = |start: usize| {
        let mut seen = vec![false; nodes.len()];
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            for &m in &successors[n] {
                if !seen[m] {
                    seen[m] = true;
                    stack.push(m);
                }
            }
        }
        seen
    };
    let reach: Vec<Vec<bool>> = (0..nodes.len()).map(reaches).collect();
    let mut assigned = vec![false; nodes.len()];
    let mut out = Vec::new();
    for a in 0..nodes.len() {
        if assigned[a] {
            continue;
        }
        let component: Vec<usize> = (0..nodes.len())
            .filter(|&b| b == a || (reach[a][b] && reach[b][a]))
            .collect();
        for &b in &component {
            assigned[b] = true;
        }
        if component.len() > 1 {
            let mut files: Vec<String> = component.iter().map(|&b| nodes[b].clone()).collect();
            files.sort();
            out.push(files);
        }
    }
    out.sort();
    out
}

/// A loop's ties: each edge inside it with the names that make it.
pub fn describe(graph: &Graph, files: &[String]) -> String {
    let mut out = String::new();
    for from in files {
        for (to, names) in &graph[from] {
            if files.contains(to) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                out.push_str(&format!("  {from} -> {to}: {}\n", names.join(", ")));
            }
        }
    }
    out
}
