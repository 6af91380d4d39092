//! Java `.properties` text: `key=value`, `key: value` or `key value`; `#`/`!` comments;
//! backslash line continuations and escapes.

/// Parses properties text into ordered key/value pairs.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        let trailing_backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
        if trailing_backslashes % 2 == 1 {
            logical.push_str(&line[..line.len() - 1]);
            continue;
        }
        logical.push_str(line);
        if let Some(pair) = split_pair(&logical) {
            out.push(pair);
        }
        logical.clear();
    }
    if !logical.is_empty() {
        if let Some(pair) = split_pair(&logical) {
            out.push(pair);
        }
    }
    out
}

fn split_pair(line: &str) -> Option<(String, String)> {
    let mut key = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    key.push(unescape(next));
                }
            }
            '=' | ':' => break,
            c if c.is_whitespace() => {
                while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('=') | Some(':')) {
                    chars.next();
                }
                break;
            }
            c => key.push(c),
        }
    }
    if key.is_empty() {
        return None;
    }
    let rest: String = chars.collect();
    let mut value = String::new();
    let mut it = rest.trim_start().chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            if let Some(next) = it.next() {
                value.push(unescape(next));
            }
        } else {
            value.push(c);
        }
    }
    Some((key, value.trim_end().to_string()))
}

fn unescape(c: char) -> char {
    match c {
        't' => '\t',
        'n' => '\n',
        'r' => '\r',
        'f' => '\u{c}',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_comments_and_continuations() {
        let text = "# comment\n! other\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs : /tmp/a\nnode.id 3\nlong.value=a,\\\n   b\n\nempty=\n";
        let pairs = parse_properties(text);
        assert_eq!(
            pairs,
            vec![
                ("listeners".into(), "PLAINTEXT://127.0.0.1:9092".into()),
                ("log.dirs".into(), "/tmp/a".into()),
                ("node.id".into(), "3".into()),
                ("long.value".into(), "a,b".into()),
                ("empty".into(), "".into()),
            ]
        );
    }
}
