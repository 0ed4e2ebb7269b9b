//! The identifier guard component replays guard-core's corpus: the same answers through WASM.

mod common;
use openadapt_engines::IdentifierKind;

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    kinds: Vec<String>,
}

fn kind_name(k: IdentifierKind) -> &'static str {
    match k {
        IdentifierKind::DigitRun => "digit-run",
        IdentifierKind::Email => "email",
        IdentifierKind::Phone => "phone",
    }
}

#[test]
fn the_component_answers_the_whole_corpus() {
    let corpus = include_str!("../../guests/guard-core/corpus.json");
    let cases: Vec<Case> = serde_json::from_str(corpus).unwrap();
    assert!(cases.len() >= 60, "the corpus must hold at least 60 cases");
    assert!(cases.iter().filter(|c| c.kinds.is_empty()).count() >= 20, "and real negatives");
    let tmp = tempfile::tempdir().unwrap();
    let guard = common::engines(tmp.path()).identifier_guard().unwrap();
    let mut wrong = Vec::new();
    for case in &cases {
        let got: Vec<&str> = guard.scan(&case.text).unwrap().iter().map(|f| kind_name(f.kind)).collect();
        if got != case.kinds {
            wrong.push(format!("{:?}: expected {:?}, got {:?}", case.text, case.kinds, got));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn spans_point_at_the_identifier() {
    let tmp = tempfile::tempdir().unwrap();
    let guard = common::engines(tmp.path()).identifier_guard().unwrap();
    let text = "Ünïcode first, then mail jane.doe@example.org or call (555) 123-4567.";
    let found = guard.scan(text).unwrap();
    let shown: Vec<(&str, IdentifierKind)> = found.iter().map(|f| (&text[f.span.clone()], f.kind)).collect();
    assert_eq!(shown, vec![("jane.doe@example.org", IdentifierKind::Email), ("(555) 123-4567", IdentifierKind::Phone)]);
}

#[test]
fn large_inputs_scan_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let guard = common::engines(tmp.path()).identifier_guard().unwrap();
    let letters = "a".repeat(64 * 1024);
    assert!(guard.passes(&letters).unwrap());
    let tail = format!("{}12345", "x ".repeat(32 * 1024));
    let found = guard.scan(&tail).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, IdentifierKind::DigitRun);
    assert_eq!(found[0].span, tail.len() - 5..tail.len());
    let digits = "7".repeat(64 * 1024);
    let found = guard.scan(&digits).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].span, 0..digits.len());
}
