//! Workflow cards: what a calling agent sees of a workflow (name, purpose, what done means,
//! typed inputs) and the input check every run goes through before anything is claimed.

use crate::contract::{InputProblem, InvalidInput};
use serde_json::{json, Map, Value};

/// The typed kind of one input.
#[derive(Clone, Debug, PartialEq)]
pub enum InputKind {
    Text { min_len: usize, max_len: usize },
    Choice { choices: Vec<String> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub description: String,
    pub kind: InputKind,
    /// Applied when the input is omitted; an input without one is required.
    pub default: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowCard {
    pub name: String,
    pub purpose: String,
    pub done_means: String,
    pub inputs: Vec<InputSpec>,
    pub changes_records: bool,
}

/// The sandbox's one synthetic workflow.
pub const SANDBOX_WORKFLOW: &str = "add_triage_note";
pub const SANDBOX_CASES: [&str; 5] = ["normal", "duplicate_record", "false_saved_banner", "timeout_after_save", "app_offline"];

pub fn sandbox_card() -> WorkflowCard {
    WorkflowCard {
        name: SANDBOX_WORKFLOW.into(),
        purpose: "Adds a triage note to the first open referral in MockMed, the simulated clinic app.".into(),
        done_means: "The note is saved on the referral's record and was read back from the record store.".into(),
        inputs: vec![
            InputSpec {
                name: "note".into(),
                description: "The triage note to add. Use synthetic text only: this is a sandbox.".into(),
                kind: InputKind::Text { min_len: 1, max_len: 500 },
                default: None,
            },
            InputSpec {
                name: "sandbox_case".into(),
                description: "What the simulated app does: normal, or one of its fault cases.".into(),
                kind: InputKind::Choice { choices: SANDBOX_CASES.iter().map(|s| s.to_string()).collect() },
                default: Some("normal".into()),
            },
        ],
        changes_records: true,
    }
}

impl WorkflowCard {
    /// The JSON Schema of the card's inputs, as list_workflows shows it.
    pub fn inputs_schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for input in &self.inputs {
            let mut p = match &input.kind {
                InputKind::Text { min_len, max_len } => {
                    json!({"type": "string", "minLength": min_len, "maxLength": max_len})
                }
                InputKind::Choice { choices } => json!({"type": "string", "enum": choices}),
            };
            p["description"] = json!(input.description);
            match &input.default {
                Some(d) => p["default"] = json!(d),
                None => required.push(json!(input.name)),
            }
            properties.insert(input.name.clone(), p);
        }
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// The card as list_workflows shows it.
    pub fn to_wire(&self, available: bool) -> Value {
        json!({
            "name": self.name,
            "purpose": self.purpose,
            "done_means": self.done_means,
            "inputs": self.inputs_schema(),
            "available": available,
            "changes_records": self.changes_records,
        })
    }

    /// Checks `inputs` against the card. On success, the inputs with defaults applied (the
    /// fingerprint's input); else every problem, in card order, unknown keys last. Problems
    /// name inputs by the card's own names, never by a caller-supplied key.
    pub fn check_inputs(&self, inputs: &Map<String, Value>) -> Result<Map<String, Value>, Vec<InvalidInput>> {
        let mut problems = Vec::new();
        let mut resolved = Map::new();
        for spec in &self.inputs {
            let problem = match (inputs.get(&spec.name), &spec.default) {
                (None, Some(default)) => {
                    resolved.insert(spec.name.clone(), json!(default));
                    None
                }
                (None | Some(Value::Null), None) => Some(InputProblem::Missing),
                (Some(value), _) => match check_value(&spec.kind, value) {
                    Ok(()) => {
                        resolved.insert(spec.name.clone(), value.clone());
                        None
                    }
                    Err(p) => Some(p),
                },
            };
            if let Some(problem) = problem {
                problems.push(InvalidInput { input: spec.name.clone(), problem });
            }
        }
        if inputs.keys().any(|k| !self.inputs.iter().any(|s| &s.name == k)) {
            problems.push(InvalidInput { input: "(unknown)".into(), problem: InputProblem::NotAllowed });
        }
        if problems.is_empty() {
            Ok(resolved)
        } else {
            Err(problems)
        }
    }
}

fn check_value(kind: &InputKind, value: &Value) -> Result<(), InputProblem> {
    let Value::String(s) = value else { return Err(InputProblem::MustBeText) };
    match kind {
        InputKind::Text { min_len, max_len } => {
            let n = s.chars().count();
            if n < *min_len || s.trim().is_empty() {
                Err(InputProblem::TooShort)
            } else if n > *max_len {
                Err(InputProblem::TooLong)
            } else {
                Ok(())
            }
        }
        InputKind::Choice { choices } if choices.iter().any(|c| c == s) => Ok(()),
        InputKind::Choice { .. } => Err(InputProblem::MustBeListedValue),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: Value) -> Result<Map<String, Value>, Vec<(String, InputProblem)>> {
        sandbox_card()
            .check_inputs(v.as_object().unwrap())
            .map_err(|ps| ps.into_iter().map(|p| (p.input, p.problem)).collect())
    }

    #[test]
    fn defaults_apply_and_the_explicit_default_is_the_same() {
        let a = check(json!({"note": "hello"})).unwrap();
        let b = check(json!({"note": "hello", "sandbox_case": "normal"})).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn each_problem_is_named() {
        use InputProblem::*;
        assert_eq!(check(json!({})), Err(vec![("note".into(), Missing)]));
        assert_eq!(check(json!({"note": ""})), Err(vec![("note".into(), TooShort)]));
        assert_eq!(check(json!({"note": "   "})), Err(vec![("note".into(), TooShort)]));
        assert_eq!(check(json!({"note": "x".repeat(501)})), Err(vec![("note".into(), TooLong)]));
        assert!(check(json!({"note": "é".repeat(500)})).is_ok());
        assert_eq!(check(json!({"note": 5})), Err(vec![("note".into(), MustBeText)]));
        assert_eq!(
            check(json!({"note": "x", "sandbox_case": "explode"})),
            Err(vec![("sandbox_case".into(), MustBeListedValue)])
        );
        assert_eq!(
            check(json!({"note": "x", "patient_secret": "y"})),
            Err(vec![("(unknown)".into(), NotAllowed)])
        );
    }
}
