use super::*;
use std::time::{Duration, Instant};

const BIG: usize = 64 * 1024;

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    kinds: Vec<String>,
}

/// Findings are ordered, disjoint, non-empty and on character boundaries.
fn check_shape(text: &str, found: &[Finding]) {
    let mut last_end = 0;
    for f in found {
        assert!(f.start < f.end && f.end <= text.len(), "bad span {f:?}");
        assert!(f.start >= last_end, "overlap or disorder at {f:?}");
        assert!(
            text.is_char_boundary(f.start) && text.is_char_boundary(f.end),
            "{f:?}"
        );
        last_end = f.end;
    }
}

fn spans(text: &str) -> Vec<(Kind, &str)> {
    scan(text)
        .iter()
        .map(|f| (f.kind, &text[f.start..f.end]))
        .collect()
}

#[test]
fn corpus() {
    let cases: Vec<Case> = serde_json::from_str(include_str!("../corpus.json")).unwrap();
    assert!(cases.len() >= 60);
    let mut failures = Vec::new();
    for case in &cases {
        let found = scan(&case.text);
        check_shape(&case.text, &found);
        let kinds: Vec<&str> = found.iter().map(|f| f.kind.as_str()).collect();
        if kinds != case.kinds {
            let spans: Vec<&str> = found.iter().map(|f| &case.text[f.start..f.end]).collect();
            failures.push(format!(
                "{:?}: want {:?}, got {kinds:?} {spans:?}",
                case.text, case.kinds
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn exact_spans() {
    assert_eq!(
        scan("Call 555-1234 now"),
        vec![Finding {
            kind: Kind::Phone,
            start: 5,
            end: 13
        }]
    );
    assert_eq!(
        scan("Reach jane@x.com or 555-123-4567, MRN 1234567"),
        vec![
            Finding {
                kind: Kind::Email,
                start: 6,
                end: 16
            },
            Finding {
                kind: Kind::Phone,
                start: 20,
                end: 32
            },
            Finding {
                kind: Kind::DigitRun,
                start: 38,
                end: 45
            },
        ]
    );
    // Five three-byte Thai digits after "Thai ".
    assert_eq!(
        scan("Thai ๑๒๓๔๕"),
        vec![Finding {
            kind: Kind::DigitRun,
            start: 5,
            end: 20
        }]
    );
    assert_eq!(
        spans("Contact: jane_doe+tag@mail.example.co.uk."),
        vec![(Kind::Email, "jane_doe+tag@mail.example.co.uk")]
    );
    assert_eq!(
        spans("ring +49 (0)30 1234567!"),
        vec![(Kind::Phone, "+49 (0)30 1234567")]
    );
    assert_eq!(
        spans("(555) 123-4567"),
        vec![(Kind::Phone, "(555) 123-4567")]
    );
    assert_eq!(
        spans("+33 1 23 45 67 89."),
        vec![(Kind::Phone, "+33 1 23 45 67 89")]
    );
    assert_eq!(
        spans("2024-01-15 555-123-4567"),
        vec![(Kind::Phone, "555-123-4567")],
        "the date is not folded into the phone"
    );
    assert_eq!(
        spans("at 12:30 call 555 123 4567"),
        vec![(Kind::Phone, "555 123 4567")]
    );
    assert_eq!(spans("Windows 10.0.19045"), vec![(Kind::DigitRun, "19045")]);
}

#[test]
fn decimal_digits() {
    for c in [
        '0', '9', '\u{0660}', '\u{0669}', '\u{06F5}', '\u{0966}', '\u{09EF}', '\u{0E50}',
        '\u{FF19}',
    ] {
        assert!(is_decimal_digit(c), "{c:?}");
    }
    assert!(is_decimal_digit('\u{1D7CE}') && is_decimal_digit('\u{1D7FF}'));
    for c in [
        'a',
        '/',
        ':',
        '\u{065F}',
        '\u{066A}',
        '\u{00B2}',
        '\u{00BD}',
        '\u{2167}',
        '\u{1D800}',
        '\u{10FFFF}',
    ] {
        assert!(!is_decimal_digit(c), "{c:?}");
    }
}

/// Scans `text`, checks the findings' shape, and fails if it took anywhere near quadratic time.
fn timed_scan(text: &str) -> Vec<Finding> {
    let t = Instant::now();
    let found = scan(text);
    let took = t.elapsed();
    // Generous enough for an unoptimized build on a busy machine; a quadratic scan of 64 KiB
    // takes seconds.
    assert!(
        took < Duration::from_millis(250),
        "{took:?} for {} bytes",
        text.len()
    );
    check_shape(text, &found);
    found
}

#[test]
fn big_all_letters() {
    assert!(timed_scan(&"a".repeat(BIG)).is_empty());
    assert!(timed_scan(&"é".repeat(BIG / 2)).is_empty());
}

#[test]
fn big_all_digits() {
    let text = "7".repeat(BIG);
    assert_eq!(
        timed_scan(&text),
        vec![Finding {
            kind: Kind::DigitRun,
            start: 0,
            end: BIG
        }]
    );
    let text = "٣".repeat(BIG / 2);
    assert_eq!(
        timed_scan(&text),
        vec![Finding {
            kind: Kind::DigitRun,
            start: 0,
            end: BIG
        }]
    );
}

#[test]
fn big_digits_at_the_end() {
    let mut text = "x".repeat(BIG - 10);
    text.push_str("0123456789");
    assert_eq!(
        timed_scan(&text),
        vec![Finding {
            kind: Kind::DigitRun,
            start: BIG - 10,
            end: BIG
        }]
    );

    let mut text = "y ".repeat((BIG - 12) / 2);
    text.push_str("555-123-4567");
    let start = text.len() - 12;
    assert_eq!(
        timed_scan(&text),
        vec![Finding {
            kind: Kind::Phone,
            start,
            end: text.len()
        }]
    );
}

#[test]
fn big_repeated_shapes() {
    let phones = timed_scan(&"555-123-4567 ".repeat(BIG / 13));
    assert_eq!(phones.len(), BIG / 13);
    assert!(phones.iter().all(|f| f.kind == Kind::Phone));

    let emails = timed_scan(&"a@b.io ".repeat(BIG / 7));
    assert_eq!(emails.len(), BIG / 7);
    assert!(emails.iter().all(|f| f.kind == Kind::Email));

    // Shapes that stress each pass: many '@', long local parts and domains without a TLD,
    // endless groups and separators, unclosed parentheses.
    for unit in [
        "@", "a@", "a.", "@a.b1", "1-", "1.", "1 ", "12 ", "(1)", "(", "+", "+1 ", "1:", "-", "x",
    ] {
        let text = unit.repeat(BIG / unit.len());
        timed_scan(&text);
    }
    let mut text = "a".repeat(BIG - 8);
    text.push_str("@b.c.d.e");
    timed_scan(&text);
}

#[test]
fn arbitrary_input_never_panics() {
    const PIECES: [&str; 24] = [
        "0",
        "5",
        "9",
        "٣",
        "१",
        "𝟗",
        "a",
        "Z",
        "é",
        "😀",
        "@",
        ".",
        "-",
        "+",
        "(",
        ")",
        " ",
        ":",
        "/",
        ",",
        "_",
        "%",
        "\u{0}",
        "\u{10FFFF}",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..200 {
        let mut text = String::new();
        while text.len() < 2048 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push_str(PIECES[(seed >> 33) as usize % PIECES.len()]);
        }
        check_shape(&text, &scan(&text));
    }
}
