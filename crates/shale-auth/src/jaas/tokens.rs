//! The tokens of a JAAS configuration value, as Kafka's JaasConfig reads them with Java's
//! StreamTokenizer: words, quoted strings with Java escapes, numbers (which carry no text, so
//! Kafka refuses them as values), single characters, and `//` and `/* */` comments.

use crate::error::JaasError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Word(String),
    Quoted(String),
    /// An unquoted number: StreamTokenizer gives it no string value.
    Number(String),
    Char(char),
    End,
}

impl Token {
    /// The string value StreamTokenizer would give (`sval`): words and quoted strings only.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Token::Word(s) | Token::Quoted(s) => Some(s),
            _ => None,
        }
    }

    /// How an error names this token.
    pub(crate) fn describe(&self) -> String {
        match self {
            Token::Word(s) => format!("'{s}'"),
            Token::Quoted(s) => format!("\"{s}\""),
            Token::Number(s) => format!("the number {s}"),
            Token::Char(c) => format!("'{c}'"),
            Token::End => "the end of the config".to_string(),
        }
    }
}

pub(crate) struct Tokenizer<'a> {
    text: &'a str,
    at: usize,
}

/// Characters that start a word: StreamTokenizer's letters and Latin-1 range, plus the `_`
/// and `$` Kafka adds (Kafka adds `-` too, but a leading `-` is read as a number's sign).
fn starts_word(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '-' || c as u32 >= 0xA0
}

fn continues_word(c: char) -> bool {
    starts_word(c) || c.is_ascii_digit() || c == '.'
}

fn starts_number(c: char) -> bool {
    c.is_ascii_digit() || c == '.' || c == '-'
}

impl<'a> Tokenizer<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Tokenizer { text, at: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.text[self.at..].chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    /// The next token and the byte offset where it starts.
    pub(crate) fn next_token(&mut self) -> Result<(usize, Token), JaasError> {
        loop {
            let start = self.at;
            let Some(c) = self.peek() else {
                return Ok((start, Token::End));
            };
            if c as u32 <= u32::from(b' ') {
                self.bump();
                continue;
            }
            if c == '/' {
                self.bump();
                match self.peek() {
                    Some('*') => {
                        self.bump();
                        match self.text[self.at..].find("*/") {
                            Some(end) => self.at += end + 2,
                            None => return Err(JaasError::UnterminatedComment { offset: start }),
                        }
                    }
                    // `//` and, as StreamTokenizer's comment character, a lone `/`.
                    _ => self.skip_line(),
                }
                continue;
            }
            if c == '"' || c == '\'' {
                self.bump();
                return Ok((start, Token::Quoted(self.quoted(c, start)?)));
            }
            // `-` is both a word character and a number's sign; StreamTokenizer tries the
            // number first and, without a digit or `.` after it, returns `-` alone.
            if starts_number(c) {
                if c == '-'
                    && !self
                        .peek_second()
                        .is_some_and(|n| n.is_ascii_digit() || n == '.')
                {
                    self.bump();
                    return Ok((start, Token::Char('-')));
                }
                self.bump();
                while self.peek().is_some_and(|n| n.is_ascii_digit() || n == '.') {
                    self.bump();
                }
                return Ok((start, Token::Number(self.text[start..self.at].to_string())));
            }
            if starts_word(c) {
                while self.peek().is_some_and(continues_word) {
                    self.bump();
                }
                return Ok((start, Token::Word(self.text[start..self.at].to_string())));
            }
            self.bump();
            return Ok((start, Token::Char(c)));
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' || c == '\r' {
                return;
            }
            self.bump();
        }
    }

    /// A quoted string after its opening quote. StreamTokenizer would end it silently at a
    /// line break or the end; a config cut short is refused instead.
    fn quoted(&mut self, quote: char, start: usize) -> Result<String, JaasError> {
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(JaasError::UnterminatedQuote { offset: start });
            };
            match c {
                c if c == quote => return Ok(out),
                '\n' | '\r' => return Err(JaasError::UnterminatedQuote { offset: start }),
                '\\' => {
                    let Some(e) = self.bump() else {
                        return Err(JaasError::UnterminatedQuote { offset: start });
                    };
                    out.push(self.escape(e));
                }
                c => out.push(c),
            }
        }
    }

    /// Java's escapes: `\a \b \f \n \r \t \v`, octal up to `\377`, and any other character
    /// standing for itself (`\"`, `\\`).
    fn escape(&mut self, e: char) -> char {
        match e {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '0'..='7' => {
                let first = e as u32 - '0' as u32;
                let max_digits = if first <= 3 { 3 } else { 2 };
                let mut value = first;
                for _ in 1..max_digits {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            self.bump();
                            value = value * 8 + (d as u32 - '0' as u32);
                        }
                        _ => break,
                    }
                }
                char::from_u32(value).unwrap_or('\u{fffd}')
            }
            other => other,
        }
    }
}
