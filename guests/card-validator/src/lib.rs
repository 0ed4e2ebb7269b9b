//! The default card validator: the structure and length rules of an operator's workflow card,
//! checked against the bundle's own declared inputs (read-only at `/bundle`).

wit_bindgen::generate!({ world: "card-validator", path: "../../wit" });

use exports::openadapt::engines::validator::{Card, Guest, Problem, Verdict};
use std::collections::BTreeSet;

const PURPOSE_MAX: usize = 300;
const DONE_MEANS_MAX: usize = 300;
const DESCRIPTION_MAX: usize = 200;
const INPUT_NAME_MAX: usize = 64;

struct DefaultValidator;

impl Guest for DefaultValidator {
    fn validate(card: Card) -> Verdict {
        let mut problems = Vec::new();
        if !name_ok(&card.name) {
            problems.push(Problem::NameInvalid);
        }
        text_rule(&card.purpose, PURPOSE_MAX, Problem::PurposeEmpty, Problem::PurposeTooLong, &mut problems);
        text_rule(&card.done_means, DONE_MEANS_MAX, Problem::DoneMeansEmpty, Problem::DoneMeansTooLong, &mut problems);

        let mut seen = BTreeSet::new();
        for input in &card.inputs {
            let n = &input.name;
            if n.is_empty() || n.len() > INPUT_NAME_MAX || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                push_once(&mut problems, Problem::InputNameInvalid);
            }
            if !seen.insert(n.as_str()) {
                push_once(&mut problems, Problem::InputDuplicate);
            }
            if let Some(d) = &input.description {
                text_rule(d, DESCRIPTION_MAX, Problem::InputDescriptionEmpty, Problem::InputDescriptionTooLong, &mut problems);
            }
        }

        match declared_inputs() {
            Some(declared) => {
                if card.inputs.iter().any(|i| !declared.contains(&i.name)) {
                    push_once(&mut problems, Problem::InputNotInBundle);
                }
            }
            None => push_once(&mut problems, Problem::BundleUnreadable),
        }

        if problems.is_empty() {
            Verdict::Accepted
        } else {
            Verdict::Refused(problems)
        }
    }
}

/// `^[a-z][a-z0-9_]{2,63}$`
fn name_ok(name: &str) -> bool {
    let b = name.as_bytes();
    (3..=64).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

fn text_rule(text: &str, max: usize, empty: Problem, too_long: Problem, problems: &mut Vec<Problem>) {
    let len = text.trim().chars().count();
    if len == 0 {
        push_once(problems, empty);
    } else if len > max {
        push_once(problems, too_long);
    }
}

fn push_once(problems: &mut Vec<Problem>, p: Problem) {
    if !problems.contains(&p) {
        problems.push(p);
    }
}

/// The input names the bundle declares: `param_specs` keys, plus `params` keys without a spec.
fn declared_inputs() -> Option<BTreeSet<String>> {
    let text = std::fs::read_to_string("/bundle/workflow.json").ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut names = BTreeSet::new();
    for key in ["param_specs", "params"] {
        if let Some(obj) = doc.get(key).and_then(|v| v.as_object()) {
            names.extend(obj.keys().cloned());
        }
    }
    Some(names)
}

export!(DefaultValidator);
