//! `local@domain.tld`: a local part of `[A-Za-z0-9._%+-]`, then dot-separated labels of
//! `[A-Za-z0-9-]` ending in a top-level label of two or more ASCII letters.

fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_label(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Byte spans of every email address, ascending and disjoint.
///
/// Each `@` looks left no further than the previous `@` or the previous address and right no
/// further than the next character that cannot be in a domain, so the pass is linear.
pub(crate) fn find(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut out = Vec::new();
    let mut floor = 0;
    for at in (0..n).filter(|&i| bytes[i] == b'@') {
        if at < floor {
            continue;
        }
        let mut start = at;
        while start > floor && is_local(bytes[start - 1]) {
            start -= 1;
        }
        while start < at && bytes[start] == b'.' {
            start += 1;
        }
        if start == at {
            continue;
        }

        // The longest run of labels whose last label is a top-level domain.
        let mut end = None;
        let mut labels = 0;
        let mut i = at + 1;
        loop {
            let label_start = i;
            while i < n && is_label(bytes[i]) {
                i += 1;
            }
            if i == label_start {
                break;
            }
            labels += 1;
            let label = &bytes[label_start..i];
            if labels >= 2 && label.len() >= 2 && label.iter().all(u8::is_ascii_alphabetic) {
                end = Some(i);
            }
            if i + 1 < n && bytes[i] == b'.' && is_label(bytes[i + 1]) {
                i += 1;
            } else {
                break;
            }
        }
        if let Some(end) = end {
            out.push((start, end));
            floor = end;
        }
    }
    out
}
