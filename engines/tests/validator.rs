//! The default card validator and the banned-word operator example.

mod common;
use openadapt_engines::{Card, CardInput, InputType, Problem, Verdict};
use std::fs;

fn card() -> Card {
    Card {
        name: "add_triage_note".into(),
        purpose: "Adds a triage note to the open referral.".into(),
        done_means: "The note is on the record and read back.".into(),
        inputs: vec![CardInput { name: "note".into(), input_type: InputType::Text, description: Some("The note to add.".into()) }],
    }
}

fn setup() -> (tempfile::TempDir, openadapt_engines::Engines, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("bundle");
    fs::create_dir(&b).unwrap();
    fs::write(b.join("workflow.json"), r#"{"params":{"note":"recorded"},"param_specs":{"note":{"type":"string"}}}"#).unwrap();
    let engines = common::engines(tmp.path());
    (tmp, engines, b)
}

#[test]
fn a_good_card_is_accepted() {
    let (_t, engines, b) = setup();
    assert_eq!(engines.default_card_validator().unwrap().validate(&b, &card()).unwrap(), Verdict::Accepted);
}

#[test]
fn each_rule_refuses_with_its_code() {
    let (_t, engines, b) = setup();
    let v = engines.default_card_validator().unwrap();
    let refused = |c: Card| match v.validate(&b, &c).unwrap() {
        Verdict::Refused(p) => p,
        Verdict::Accepted => vec![],
    };
    let mut c = card();
    c.name = "Add Triage".into();
    assert_eq!(refused(c), vec![Problem::NameInvalid]);
    let mut c = card();
    c.purpose = "  ".into();
    assert_eq!(refused(c), vec![Problem::PurposeEmpty]);
    let mut c = card();
    c.purpose = "a".repeat(301);
    assert_eq!(refused(c), vec![Problem::PurposeTooLong]);
    let mut c = card();
    c.done_means = "é".repeat(300); // characters, not bytes
    assert_eq!(refused(c), vec![]);
    let mut c = card();
    c.done_means = String::new();
    assert_eq!(refused(c), vec![Problem::DoneMeansEmpty]);
    let mut c = card();
    c.inputs[0].description = Some("d".repeat(201));
    assert_eq!(refused(c), vec![Problem::InputDescriptionTooLong]);
    let mut c = card();
    c.inputs.push(c.inputs[0].clone());
    assert_eq!(refused(c), vec![Problem::InputDuplicate]);
    let mut c = card();
    c.inputs[0].name = "patient_mrn".into();
    assert_eq!(refused(c), vec![Problem::InputNotInBundle]);
    let mut c = card();
    c.inputs[0].name = "bad name".into();
    assert_eq!(refused(c), vec![Problem::InputNameInvalid, Problem::InputNotInBundle]);
}

#[test]
fn an_unreadable_bundle_is_refused() {
    let (tmp, engines, _b) = setup();
    let empty = tmp.path().join("empty-bundle");
    fs::create_dir(&empty).unwrap();
    let v = engines.default_card_validator().unwrap();
    assert_eq!(v.validate(&empty, &card()).unwrap(), Verdict::Refused(vec![Problem::BundleUnreadable]));
}

#[test]
fn the_banned_word_example_refuses_and_accepts() {
    let (_t, engines, b) = setup();
    let v = engines.load_card_validator(&openadapt_engines::built_guest("banned_word_validator")).unwrap();
    assert_eq!(v.label(), "banned_word_validator.wasm");
    assert_eq!(v.validate(&b, &card()).unwrap(), Verdict::Accepted);
    let mut c = card();
    c.done_means = "The note is GUARANTEED to be saved.".into();
    assert_eq!(v.validate(&b, &c).unwrap(), Verdict::Refused(vec![Problem::PolicyRefused]));
}
