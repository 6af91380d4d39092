//! `share.auto.offset.reset`: where a share-partition starts when it has no state (Kafka's
//! ShareGroupAutoOffsetResetStrategy), including the ISO-8601 duration of `by_duration:`, read
//! as Java's `Duration.parse` reads it.

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// A share group's reset strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareAutoOffsetReset {
    Earliest,
    Latest,
    /// The first offset whose timestamp is at or after now minus this duration.
    ByDuration {
        duration_ms: i64,
    },
}

impl ShareAutoOffsetReset {
    /// A stored (trimmed) value; `None` for one Kafka refuses. The words are case-sensitive,
    /// the duration's letters are not, and a negative duration is refused.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "earliest" => Some(Self::Earliest),
            "latest" => Some(Self::Latest),
            _ => {
                let nanos = value
                    .strip_prefix("by_duration:")
                    .and_then(duration_nanos)?;
                if nanos < 0 {
                    return None;
                }
                let duration_ms = i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX);
                Some(Self::ByDuration { duration_ms })
            }
        }
    }
}

/// A cursor over the duration's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, letter: u8) -> bool {
        if self.peek().is_some_and(|b| b.eq_ignore_ascii_case(&letter)) {
            self.pos += 1;
            return true;
        }
        false
    }

    /// `[-+]?[0-9]+` as text, or `None` (nothing taken) when there is none here.
    fn signed_digits(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let mut end = start;
        if matches!(self.bytes.get(end), Some(b'-' | b'+')) {
            end += 1;
        }
        let digits_start = end;
        while self.bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == digits_start {
            return None;
        }
        self.pos = end;
        let bytes: &'a [u8] = self.bytes;
        std::str::from_utf8(&bytes[start..end]).ok()
    }
}

/// Java's `Long.parseLong` times `unit_seconds` with `Math.multiplyExact`.
fn seconds_of(text: &str, unit_seconds: i64) -> Option<i64> {
    text.parse::<i64>().ok()?.checked_mul(unit_seconds)
}

/// `[-+]?P[nD][T[nH][nM][n[.n]S]]` with at least one part, as nanoseconds (`None` for text
/// Java's `Duration.parse` refuses, overflow included).
fn duration_nanos(text: &str) -> Option<i128> {
    let mut c = Cursor {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let negate = match c.peek() {
        Some(b'-') => {
            c.pos += 1;
            true
        }
        Some(b'+') => {
            c.pos += 1;
            false
        }
        _ => false,
    };
    if !c.eat(b'P') {
        return None;
    }
    let mut any_part = false;
    let mut days_s = 0i64;
    if c.peek().is_some_and(|b| !b.eq_ignore_ascii_case(&b'T')) {
        days_s = seconds_of(c.signed_digits()?, 86_400)?;
        if !c.eat(b'D') {
            return None;
        }
        any_part = true;
    }
    let (mut hours_s, mut minutes_s, mut seconds_s, mut fraction_nanos) = (0i64, 0i64, 0i64, 0i64);
    if c.eat(b'T') {
        let mut time_part = false;
        let mut number = c.signed_digits();
        if let Some(n) = number.filter(|_| c.eat(b'H')) {
            hours_s = seconds_of(n, 3_600)?;
            time_part = true;
            number = c.signed_digits();
        }
        if let Some(n) = number.filter(|_| c.eat(b'M')) {
            minutes_s = seconds_of(n, 60)?;
            time_part = true;
            number = c.signed_digits();
        }
        if let Some(n) = number {
            seconds_s = seconds_of(n, 1)?;
            if matches!(c.peek(), Some(b'.' | b',')) {
                c.pos += 1;
                let start = c.pos;
                while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                    c.pos += 1;
                }
                let digits = &text[start..c.pos];
                if digits.len() > 9 {
                    return None;
                }
                let padded = format!("{digits:0<9}");
                fraction_nanos = padded.parse::<i64>().ok()?;
                if n.starts_with('-') {
                    fraction_nanos = -fraction_nanos;
                }
            }
            if !c.eat(b'S') {
                return None;
            }
            time_part = true;
        }
        if !time_part {
            return None;
        }
        any_part = true;
    }
    if !any_part || c.pos != text.len() {
        return None;
    }
    // Java's order of Math.addExact, then Duration.ofSeconds and negated(), each refusing an
    // overflow of its long seconds.
    let seconds = days_s.checked_add(hours_s.checked_add(minutes_s.checked_add(seconds_s)?)?)?;
    let mut total = i128::from(seconds) * NANOS_PER_SECOND + i128::from(fraction_nanos);
    if negate {
        total = -total;
    }
    i64::try_from(total.div_euclid(NANOS_PER_SECOND)).ok()?;
    Some(total)
}
