//! Finds identifier-shaped text — runs of five or more decimal digits, email addresses and
//! phone numbers — so a caller can refuse or drop it without echoing it.
//!
//! The scanner is hand-written: one pass for emails, one for phone-shaped tokens and one for
//! digit runs, each linear in the input. It never panics and only ever slices at character
//! boundaries.
//!
//! `corpus.json` beside this crate's manifest is the shared table of cases: an array of
//! `{"text", "kinds"}` with the kinds (`digit-run`, `email`, `phone`) in start order. The unit
//! tests replay it here, and the host's engine tests replay it through the component.

mod digits;
mod email;
mod phone;

pub use digits::is_decimal_digit;

/// What kind of identifier a finding looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Five or more ASCII or Unicode (`Nd`) decimal digits in a row.
    DigitRun,
    /// `local@domain.tld`.
    Email,
    /// A phone number in a common national or international layout.
    Phone,
}

impl Kind {
    /// The kind's name on the wire: `digit-run`, `email` or `phone`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::DigitRun => "digit-run",
            Kind::Email => "email",
            Kind::Phone => "phone",
        }
    }
}

/// One finding: its kind and its UTF-8 byte span `[start, end)` in the scanned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Finding {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// Scans `text` and returns every finding, ordered by `start`.
///
/// Overlapping shapes are reported once, under the most specific kind: an email wins over a
/// phone, and a phone over a digit run, so no byte is covered by two findings.
pub fn scan(text: &str) -> Vec<Finding> {
    let emails = email::find(text);
    let phones = phone::find(text, &emails);

    let mut taken: Vec<Finding> = emails
        .iter()
        .map(|&(start, end)| Finding {
            kind: Kind::Email,
            start,
            end,
        })
        .chain(phones.iter().map(|&(start, end)| Finding {
            kind: Kind::Phone,
            start,
            end,
        }))
        .collect();
    taken.sort_unstable_by_key(|f| f.start);

    let mut out = Vec::with_capacity(taken.len());
    let mut t = 0;
    for (start, end) in digit_runs(text) {
        while t < taken.len() && taken[t].end <= start {
            t += 1;
        }
        let overlaps = t < taken.len() && taken[t].start < end;
        if !overlaps {
            out.push(Finding {
                kind: Kind::DigitRun,
                start,
                end,
            });
        }
    }
    out.extend(taken);
    out.sort_unstable_by_key(|f| f.start);
    out
}

/// Byte spans of every run of five or more decimal digits.
fn digit_runs(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut run_start = 0;
    let mut run_len = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        // `i` always starts a character: ASCII steps one byte, anything else its full width.
        let (digit, width) = if bytes[i].is_ascii() {
            (bytes[i].is_ascii_digit(), 1)
        } else {
            match text[i..].chars().next() {
                Some(c) => (is_decimal_digit(c), c.len_utf8()),
                None => break,
            }
        };
        if digit {
            if run_len == 0 {
                run_start = i;
            }
            run_len += 1;
        } else {
            if run_len >= 5 {
                out.push((run_start, i));
            }
            run_len = 0;
        }
        i += width;
    }
    if run_len >= 5 {
        out.push((run_start, text.len()));
    }
    out
}

#[cfg(test)]
mod tests;
