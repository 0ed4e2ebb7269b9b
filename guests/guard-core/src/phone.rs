//! Phone numbers.
//!
//! The text is first cut into *words*: an optional `+`, then ASCII digit groups joined by a
//! single `-` or `.`, or written as a parenthesized group of one to five digits (`(555)`,
//! `(0)30`). A phone is then a run of words joined by single spaces that passes
//! [`range_is_phone`]. Words glued to letters or to other numbers (`v1.2`, `12:30`,
//! `01/15/2024`), and word shapes that are dates, versions, decimals or IPv4 addresses, never
//! take part in a phone.
//!
//! Words are lexed lazily, in place, into a small ring of slots, so memory stays
//! constant and each word is looked at a bounded number of times.

use crate::is_decimal_digit;

/// At most this many digit groups in one phone (`+33 1 23 45 67 89` has six).
const MAX_GROUPS: usize = 8;
const MIN_DIGITS: usize = 7;
const MAX_DIGITS: usize = 15;
/// At most this many one-digit groups (a trunk or country code, `(0)`).
const MAX_ONES: usize = 2;

#[derive(Clone, Copy, Default)]
struct Group {
    start: usize,
    len: usize,
    /// What precedes the group: 0 for the first of a word, `-` or `.` for a separator, `(` for
    /// a parenthesized group, `)` for digits right after one, and (in a range) ` ` for the
    /// first group of a later word.
    sep: u8,
}

#[derive(Clone, Copy, Default)]
struct Word {
    start: usize,
    end: usize,
    plus: bool,
    /// The word's first groups, up to [`MAX_GROUPS`]; `count` is how many it has in all.
    groups: [Group; MAX_GROUPS],
    count: usize,
    glued_left: bool,
    glued_right: bool,
    /// A date, version, decimal or IPv4 shape: never part of a phone.
    blocked: bool,
}

/// Byte spans of every phone number outside the given (ascending, disjoint) email spans.
pub(crate) fn find(text: &str, emails: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut lexer = Lexer {
        text,
        emails,
        e: 0,
        i: 0,
    };
    let mut window = Window {
        slots: [Word::default(); WINDOW],
        head: 0,
        len: 0,
    };
    let mut out = Vec::new();
    loop {
        while window.len < WANTED {
            let slot = (window.head + window.len) % WINDOW;
            if !lexer.next_into(&mut window.slots[slot]) {
                break;
            }
            window.len += 1;
        }
        if window.len == 0 {
            break;
        }
        let first = window.get(0);

        let mut best = None;
        let mut gs = [Group::default(); MAX_GROUPS];
        let (mut n, mut digits, mut ones) = (0, 0, 0);
        for b in 0..window.len {
            let w = window.get(b);
            if b > 0 {
                let prev = window.get(b - 1);
                let joined = bytes.get(prev.end) == Some(&b' ') && w.start == prev.end + 1;
                if !joined || w.plus {
                    break;
                }
            }
            // Every limit below only grows with the range, so the first breach ends it.
            if w.blocked || n + w.count > MAX_GROUPS {
                break;
            }
            for (k, g) in w.groups[..w.count].iter().enumerate() {
                let sep = if k == 0 && b > 0 { b' ' } else { g.sep };
                gs[n] = Group { sep, ..*g };
                n += 1;
                digits += g.len;
                ones += usize::from(g.len == 1);
            }
            if digits > MAX_DIGITS || ones > MAX_ONES {
                break;
            }
            if !first.glued_left && !w.glued_right && range_is_phone(bytes, first.plus, &gs[..n]) {
                best = Some(b);
            }
        }
        let used = match best {
            Some(b) => {
                out.push((first.start, window.get(b).end));
                b + 1
            }
            None => 1,
        };
        window.head = (window.head + used) % WINDOW;
        window.len -= used;
    }
    out
}

/// Ring slots: at least [`MAX_GROUPS`] + 1, a power of two so the index wraps by masking.
const WINDOW: usize = 16;
const WANTED: usize = MAX_GROUPS + 1;

/// The words still to be tried as the start of a phone, oldest at `head`.
struct Window {
    slots: [Word; WINDOW],
    head: usize,
    len: usize,
}

impl Window {
    fn get(&self, k: usize) -> &Word {
        &self.slots[(self.head + k) % WINDOW]
    }
}

/// Whether the digit groups of a run of space-joined words — none blocked, no `+` after the
/// first, not glued at either end, within the digit and group limits — make a phone number.
fn range_is_phone(bytes: &[u8], plus: bool, gs: &[Group]) -> bool {
    let digits: usize = gs.iter().map(|g| g.len).sum();
    let longest = gs.iter().map(|g| g.len).max().unwrap_or(0);

    if digits < MIN_DIGITS {
        return false;
    }
    if plus {
        return gs.len() >= 2 || digits >= 8;
    }
    if gs.len() < 2 {
        return false;
    }
    // Pairs of digits only (`10 20 30 40`): a phone only when long enough to be a full number.
    if longest <= 2 && digits < 10 {
        return false;
    }
    // A date written with spaces (`2024 01 15`, `15 01 2024`).
    if gs.len() == 3 && date_shape(gs[0].len, gs[1].len, gs[2].len) {
        return false;
    }
    // A year range (`2019-2024`, `1990 2020`).
    if gs.len() == 2 && gs.iter().all(|g| is_year(bytes, g)) {
        return false;
    }
    // A number grouped in thousands (`1 000 000`, `12 345 678`).
    if gs.len() >= 3 && (1..=2).contains(&gs[0].len) && gs[1..].iter().all(|g| g.len == 3) {
        let sep = gs[1].sep;
        if matches!(sep, b' ' | b'.') && gs[1..].iter().all(|g| g.sep == sep) {
            return false;
        }
    }
    true
}

fn date_shape(a: usize, b: usize, c: usize) -> bool {
    let small = |n: usize| (1..=2).contains(&n);
    (a == 4 && small(b) && small(c)) || (small(a) && small(b) && c == 4)
}

fn is_year(bytes: &[u8], g: &Group) -> bool {
    g.len == 4 && matches!(&bytes[g.start..g.start + 2], b"19" | b"20")
}

/// Tracks a word's groups as they are lexed, to tell whether its shape is blocked.
struct Shape {
    count: usize,
    first_len: usize,
    /// The last three groups, newest last.
    last3: [Group; 3],
    date: bool,
    all_dots: bool,
    one_after_first: bool,
    all_short: bool,
}

impl Shape {
    fn new() -> Self {
        Shape {
            count: 0,
            first_len: 0,
            last3: [Group::default(); 3],
            date: false,
            all_dots: true,
            one_after_first: false,
            all_short: true,
        }
    }

    fn push(&mut self, g: Group) {
        if self.count == 0 {
            self.first_len = g.len;
        } else {
            self.all_dots &= g.sep == b'.';
            self.one_after_first |= g.len == 1;
        }
        self.all_short &= g.len <= 3;
        self.last3 = [self.last3[1], self.last3[2], g];
        self.count += 1;
        let [a, b, c] = self.last3;
        if self.count >= 3
            && b.sep == c.sep
            && matches!(b.sep, b'-' | b'.')
            && date_shape(a.len, b.len, c.len)
        {
            self.date = true;
        }
    }

    fn blocked(&self) -> bool {
        if self.date {
            return true;
        }
        if self.count >= 2 && self.all_dots {
            // A decimal number (`12345.67`); a version (`1.2.3`, `10.0.19045`, `3.10.12`, while
            // `1.800.555.0199` is still a phone); an IPv4 address.
            return self.count == 2
                || self.one_after_first
                || (self.count <= 3 && self.first_len == 1)
                || (self.count == 4 && self.all_short);
        }
        false
    }
}

struct Lexer<'a> {
    text: &'a str,
    emails: &'a [(usize, usize)],
    /// The first email that does not end at or before `i`.
    e: usize,
    i: usize,
}

impl Lexer<'_> {
    /// Lexes the next word into `word`; false at the end of the text.
    fn next_into(&mut self, word: &mut Word) -> bool {
        let bytes = self.text.as_bytes();
        let n = bytes.len();
        while self.i < n {
            while self.e < self.emails.len() && self.emails[self.e].1 <= self.i {
                self.e += 1;
            }
            let limit = match self.emails.get(self.e) {
                Some(&(start, end)) if start <= self.i => {
                    self.i = end;
                    continue;
                }
                Some(&(start, _)) => start,
                None => n,
            };
            let b = bytes[self.i];
            if (b == b'+' || b == b'(' || b.is_ascii_digit())
                && lex_word(self.text, self.i, limit, word)
            {
                self.i = word.end;
                return true;
            }
            // `i` only ever rests on ASCII bytes or inside a multi-byte character, where no
            // ASCII test matches, so it is never used to slice mid-character.
            self.i += 1;
        }
        false
    }
}

/// Lexes the word starting at `start` into `word`, reusing its storage; false if there is none.
fn lex_word(text: &str, start: usize, limit: usize, word: &mut Word) -> bool {
    let bytes = text.as_bytes();
    let digit_at = |i: usize| i < limit && bytes[i].is_ascii_digit();
    word.start = start;
    word.end = start;
    word.plus = bytes[start] == b'+';
    word.count = 0;
    let mut shape = Shape::new();
    let mut push = |word: &mut Word, g: Group| {
        if word.count < MAX_GROUPS {
            word.groups[word.count] = g;
        }
        word.count += 1;
        shape.push(g);
    };

    let mut i = if word.plus { start + 1 } else { start };
    let mut sep = 0u8;
    loop {
        if i < limit && bytes[i] == b'(' {
            let ds = i + 1;
            let mut j = ds;
            while digit_at(j) && j - ds <= 5 {
                j += 1;
            }
            if !((1..=5).contains(&(j - ds)) && j < limit && bytes[j] == b')') {
                break;
            }
            push(
                word,
                Group {
                    start: ds,
                    len: j - ds,
                    sep: b'(',
                },
            );
            i = j + 1;
            word.end = i;
            if digit_at(i) {
                sep = b')';
                continue;
            }
        } else if digit_at(i) {
            let ds = i;
            while digit_at(i) {
                i += 1;
            }
            push(
                word,
                Group {
                    start: ds,
                    len: i - ds,
                    sep,
                },
            );
            word.end = i;
        } else {
            break;
        }
        if i + 1 < limit
            && matches!(bytes[i], b'-' | b'.')
            && (bytes[i + 1].is_ascii_digit() || bytes[i + 1] == b'(')
        {
            sep = bytes[i];
            i += 1;
            continue;
        }
        break;
    }
    if word.count == 0 {
        return false;
    }
    word.blocked = shape.blocked();

    // Both neighbours sit next to ASCII bytes (`start`, `end`), so these slices are on
    // character boundaries.
    let mut before = text[..start].chars().rev();
    word.glued_left = match before.next() {
        Some(c) if c.is_alphanumeric() || c == '_' => true,
        Some('.' | '-' | ':' | '/' | ',') => before.next().is_some_and(is_decimal_digit),
        _ => false,
    };
    let mut after = text[word.end..].chars();
    word.glued_right = (word.end == limit && limit < bytes.len())
        || match after.next() {
            Some(c) if c.is_alphanumeric() || c == '_' || c == '@' => true,
            Some('.' | '-' | ':' | '/' | ',') => after.next().is_some_and(is_decimal_digit),
            _ => false,
        };
    true
}
