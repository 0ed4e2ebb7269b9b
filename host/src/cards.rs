//! Workflow cards: what a calling agent sees of a workflow (name, purpose, what done means,
//! typed inputs) and the input check every run goes through before anything is claimed.
//!
//! A bundle's card takes its types from Flow's `param_specs` and its words from an optional
//! operator-written `openadapt-card.json`. The card file's words are checked by the default
//! card-validator component, the identifier guard and every operator validator; a refused card
//! falls back to the default card.

use crate::bundles::{Bundle, ParamType};
use crate::contract::{InputProblem, InvalidInput};
use openadapt_engines::{self as engines, CardValidator, IdentifierGuard, Verdict};
use serde_json::{json, Map, Value};

pub const CARD_FILE: &str = "openadapt-card.json";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Date,
    DateTime,
}

/// The typed kind of one input.
#[derive(Clone, Debug, PartialEq)]
pub enum InputKind {
    Text { format: Option<Format> },
    Choice(Vec<String>),
    Number,
    Boolean,
}

#[derive(Clone, Debug)]
pub struct InputSpec {
    pub name: String,
    pub description: String,
    pub kind: InputKind,
    /// Applied when the input is omitted; an input without one is required.
    pub default: Option<Value>,
    pub min_len: Option<usize>,
    pub max_len: Option<usize>,
    pub pattern: Option<regex::Regex>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
}

impl InputSpec {
    fn new(name: &str, description: String, kind: InputKind) -> Self {
        InputSpec {
            name: name.into(),
            description,
            kind,
            default: None,
            min_len: None,
            max_len: None,
            pattern: None,
            minimum: None,
            maximum: None,
        }
    }
}

#[derive(Clone, Debug)]
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
    let mut note = InputSpec::new(
        "note",
        "The triage note to add. Use synthetic text only: this is a sandbox.".into(),
        InputKind::Text { format: None },
    );
    note.min_len = Some(1);
    note.max_len = Some(500);
    let mut case = InputSpec::new(
        "sandbox_case",
        "What the simulated app does: normal, or one of its fault cases.".into(),
        InputKind::Choice(SANDBOX_CASES.iter().map(|s| s.to_string()).collect()),
    );
    case.default = Some(json!("normal"));
    WorkflowCard {
        name: SANDBOX_WORKFLOW.into(),
        purpose: "Adds a triage note to the first open referral in MockMed, the simulated clinic app.".into(),
        done_means: "The note is saved on the referral's record and was read back from the record store.".into(),
        inputs: vec![note, case],
        changes_records: true,
    }
}

pub const DEFAULT_PURPOSE: &str =
    "A workflow recorded on this computer. Its owner hasn't described it yet, so ask a person what it does before you run it.";
pub const DEFAULT_DONE_MEANS: &str = "The change was saved and a record check read it back from the app.";

fn default_description(name: &str) -> String {
    format!("Value for the workflow's {name} input.")
}

/// The card of a bundle with no (acceptable) card file: its opaque id, fixed words, and the
/// declared inputs' types.
pub fn default_card(bundle: &Bundle) -> WorkflowCard {
    let inputs = bundle
        .params
        .iter()
        .map(|p| {
            let kind = match &p.kind {
                ParamType::String | ParamType::EntityRef => InputKind::Text { format: None },
                ParamType::Date => InputKind::Text { format: Some(Format::Date) },
                ParamType::Enum(choices) => InputKind::Choice(choices.clone()),
                ParamType::Number => InputKind::Number,
                ParamType::Boolean => InputKind::Boolean,
            };
            InputSpec::new(&p.name, default_description(&p.name), kind)
        })
        .collect();
    WorkflowCard {
        name: bundle.id.clone(),
        purpose: DEFAULT_PURPOSE.into(),
        done_means: DEFAULT_DONE_MEANS.into(),
        inputs,
        changes_records: true,
    }
}

/// Why a card file was refused: closed codes, never the card's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardRefusal {
    /// The file is not a card of the expected shape.
    Malformed(&'static str),
    /// A validator refused it with these codes.
    Refused { validator: String, problems: Vec<String> },
    /// The identifier guard found identifier-shaped text.
    IdentifierInText(Vec<&'static str>),
    /// A validator failed (trapped, looped, exhausted memory, or could not run).
    ValidatorFailed { validator: String },
}

impl std::fmt::Display for CardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CardRefusal::Malformed(code) => write!(f, "card file malformed ({code})"),
            CardRefusal::Refused { validator, problems } => {
                write!(f, "refused by validator {validator} ({})", problems.join(", "))
            }
            CardRefusal::IdentifierInText(kinds) => write!(f, "identifier-shaped text ({})", kinds.join(", ")),
            CardRefusal::ValidatorFailed { validator } => write!(f, "validator {validator} failed to run"),
        }
    }
}

/// What checks a card file's words.
pub struct CardCheckers<'a> {
    pub default: &'a CardValidator,
    pub guard: &'a IdentifierGuard,
    pub operators: &'a [CardValidator],
}

/// The card of `bundle`: its card file when present and accepted, else the default card. A
/// refusal is returned beside the default card so the caller can warn about it.
pub fn card_for_bundle(bundle: &Bundle, checkers: &CardCheckers<'_>) -> (WorkflowCard, Option<CardRefusal>) {
    let default = default_card(bundle);
    let path = bundle.dir.join(CARD_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return (default, None) };
    match apply_card_file(&default, &text).and_then(|card| check_words(bundle, &card, checkers).map(|()| card)) {
        Ok(card) => (card, None),
        Err(refusal) => (default, Some(refusal)),
    }
}

const CARD_KEYS: [&str; 4] = ["name", "purpose", "done_means", "inputs"];
const INPUT_KEYS: [&str; 8] = ["description", "format", "pattern", "enum", "minLength", "maxLength", "minimum", "maximum"];

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Applies a card file to the default card: structure and the rules that need the bundle's
/// types. Lengths and names are the validators' job.
fn apply_card_file(default: &WorkflowCard, text: &str) -> Result<WorkflowCard, CardRefusal> {
    use CardRefusal::Malformed;
    let doc: Value = serde_json::from_str(text).map_err(|_| Malformed("not_json"))?;
    let obj = doc.as_object().ok_or(Malformed("not_an_object"))?;
    if obj.keys().any(|k| !CARD_KEYS.contains(&k.as_str())) {
        return Err(Malformed("unsupported_key"));
    }
    let mut card = default.clone();
    let text_field = |key: &str| -> Result<Option<String>, CardRefusal> {
        match obj.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(fold(s))),
            Some(_) => Err(Malformed("not_text")),
        }
    };
    if let Some(name) = text_field("name")? {
        card.name = name;
    }
    if let Some(purpose) = text_field("purpose")? {
        card.purpose = purpose;
    }
    if let Some(done) = text_field("done_means")? {
        card.done_means = done;
    }
    let inputs = match obj.get("inputs") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(Malformed("inputs_not_an_object")),
    };
    for (name, authored) in &inputs {
        let spec = card.inputs.iter_mut().find(|i| &i.name == name).ok_or(Malformed("input_not_in_workflow"))?;
        let authored = authored.as_object().ok_or(Malformed("input_not_an_object"))?;
        if authored.keys().any(|k| !INPUT_KEYS.contains(&k.as_str())) {
            return Err(Malformed("unsupported_input_key"));
        }
        for (key, value) in authored {
            match key.as_str() {
                "description" => spec.description = fold(value.as_str().ok_or(Malformed("not_text"))?),
                "format" => {
                    let InputKind::Text { format } = &mut spec.kind else { return Err(Malformed("format_not_on_text")) };
                    *format = Some(match value.as_str() {
                        Some("date") => Format::Date,
                        Some("date-time") => Format::DateTime,
                        _ => return Err(Malformed("format_unknown")),
                    });
                }
                "pattern" => {
                    let p = value.as_str().filter(|p| p.chars().count() <= 200).ok_or(Malformed("pattern_too_long"))?;
                    if !matches!(spec.kind, InputKind::Text { .. }) {
                        return Err(Malformed("pattern_not_on_text"));
                    }
                    spec.pattern = Some(regex::Regex::new(p).map_err(|_| Malformed("pattern_invalid"))?);
                }
                "enum" => {
                    let values: Vec<String> = value
                        .as_array()
                        .filter(|a| !a.is_empty())
                        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
                        .ok_or(Malformed("enum_invalid"))?;
                    spec.kind = match &spec.kind {
                        InputKind::Choice(own) if values.iter().all(|v| own.contains(v)) => InputKind::Choice(values),
                        InputKind::Text { .. } => InputKind::Choice(values),
                        _ => return Err(Malformed("enum_widens_choices")),
                    };
                }
                "minLength" | "maxLength" => {
                    let n = value.as_u64().ok_or(Malformed("length_not_whole"))? as usize;
                    if key == "minLength" {
                        spec.min_len = Some(n);
                    } else {
                        spec.max_len = Some(n);
                    }
                }
                _ => {
                    let n = value.as_f64().ok_or(Malformed("bound_not_number"))?;
                    if key == "minimum" {
                        spec.minimum = Some(n);
                    } else {
                        spec.maximum = Some(n);
                    }
                }
            }
        }
    }
    Ok(card)
}

/// Runs the card's words past the default validator, the identifier guard and every operator
/// validator. The first refusal wins.
fn check_words(bundle: &Bundle, card: &WorkflowCard, checkers: &CardCheckers<'_>) -> Result<(), CardRefusal> {
    let wire = engines::Card {
        name: card.name.clone(),
        purpose: card.purpose.clone(),
        done_means: card.done_means.clone(),
        inputs: card
            .inputs
            .iter()
            .map(|i| engines::CardInput {
                name: i.name.clone(),
                input_type: match &i.kind {
                    InputKind::Text { format: Some(_) } => engines::InputType::Date,
                    InputKind::Text { format: None } => engines::InputType::Text,
                    InputKind::Choice(_) => engines::InputType::Choice,
                    InputKind::Number => engines::InputType::Number,
                    InputKind::Boolean => engines::InputType::Boolean,
                },
                description: Some(i.description.clone()),
            })
            .collect(),
    };
    let mut kinds: Vec<&'static str> = Vec::new();
    let texts = [&card.name, &card.purpose, &card.done_means].into_iter().chain(card.inputs.iter().map(|i| &i.description));
    for text in texts {
        let found = checkers.guard.scan(text).map_err(|_| CardRefusal::ValidatorFailed { validator: "identifier-guard".into() })?;
        for f in found {
            let kind = match f.kind {
                engines::IdentifierKind::DigitRun => "digit_run",
                engines::IdentifierKind::Email => "email",
                engines::IdentifierKind::Phone => "phone",
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    if !kinds.is_empty() {
        return Err(CardRefusal::IdentifierInText(kinds));
    }
    for validator in std::iter::once(checkers.default).chain(checkers.operators) {
        match validator.validate(&bundle.dir, &wire) {
            Ok(Verdict::Accepted) => {}
            Ok(Verdict::Refused(problems)) => {
                return Err(CardRefusal::Refused {
                    validator: validator.label().to_string(),
                    problems: problems.iter().map(|p| problem_code(*p)).collect(),
                })
            }
            Err(_) => return Err(CardRefusal::ValidatorFailed { validator: validator.label().to_string() }),
        }
    }
    Ok(())
}

fn problem_code(p: engines::Problem) -> String {
    serde_json::to_value(p).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

impl WorkflowCard {
    /// The JSON Schema of the card's inputs, as list_workflows shows it. `require_all` is
    /// false only under synthetic recorded defaults.
    pub fn inputs_schema(&self, require_all: bool) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for input in &self.inputs {
            let mut p = match &input.kind {
                InputKind::Text { format } => {
                    let mut p = json!({"type": "string"});
                    match format {
                        Some(Format::Date) => p["format"] = json!("date"),
                        Some(Format::DateTime) => p["format"] = json!("date-time"),
                        None => {}
                    }
                    p
                }
                InputKind::Choice(choices) => json!({"type": "string", "enum": choices}),
                InputKind::Number => json!({"type": "number"}),
                InputKind::Boolean => json!({"type": "boolean"}),
            };
            if let Some(n) = input.min_len {
                p["minLength"] = json!(n);
            }
            if let Some(n) = input.max_len {
                p["maxLength"] = json!(n);
            }
            if let Some(re) = &input.pattern {
                p["pattern"] = json!(re.as_str());
            }
            if let Some(n) = input.minimum {
                p["minimum"] = json!(n);
            }
            if let Some(n) = input.maximum {
                p["maximum"] = json!(n);
            }
            p["description"] = json!(input.description);
            match &input.default {
                Some(d) => p["default"] = d.clone(),
                None if require_all => required.push(json!(input.name)),
                None => {}
            }
            properties.insert(input.name.clone(), p);
        }
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// The card as list_workflows shows it.
    pub fn to_wire(&self, available: bool, require_all: bool) -> Value {
        json!({
            "name": self.name,
            "purpose": self.purpose,
            "done_means": self.done_means,
            "inputs": self.inputs_schema(require_all),
            "available": available,
            "changes_records": self.changes_records,
        })
    }

    /// Checks `inputs` against the card. On success, the inputs with defaults applied (the
    /// fingerprint's input); else every problem: an unknown key first (named `(unknown)`,
    /// never by the caller's key), then by input name.
    pub fn check_inputs(&self, inputs: &Map<String, Value>, require_all: bool) -> Result<Map<String, Value>, Vec<InvalidInput>> {
        let mut problems = Vec::new();
        if inputs.keys().any(|k| !self.inputs.iter().any(|s| &s.name == k)) {
            problems.push(InvalidInput::unknown());
        }
        let mut specs: Vec<&InputSpec> = self.inputs.iter().collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut resolved = Map::new();
        for spec in specs {
            match inputs.get(&spec.name) {
                None => match &spec.default {
                    Some(default) => {
                        resolved.insert(spec.name.clone(), default.clone());
                    }
                    None if require_all => problems.push(InvalidInput::new(spec.name.clone(), InputProblem::Missing)),
                    None => {}
                },
                Some(value) => match check_value(spec, value) {
                    None => {
                        resolved.insert(spec.name.clone(), value.clone());
                    }
                    Some(p) => problems.push(InvalidInput::new(spec.name.clone(), p)),
                },
            }
        }
        if problems.is_empty() {
            Ok(resolved)
        } else {
            Err(problems)
        }
    }
}

fn check_value(spec: &InputSpec, value: &Value) -> Option<InputProblem> {
    match &spec.kind {
        InputKind::Text { format } => {
            let Value::String(s) = value else { return Some(InputProblem::MustBeText) };
            let n = s.chars().count();
            if spec.min_len.is_some_and(|min| n < min || (min > 0 && s.trim().is_empty())) {
                return Some(InputProblem::TooShort);
            }
            if spec.max_len.is_some_and(|max| n > max) {
                return Some(InputProblem::TooLong);
            }
            match format {
                Some(Format::Date) if !is_date(s) => return Some(InputProblem::NotADate),
                Some(Format::DateTime) if !is_date_time(s) => return Some(InputProblem::NotADateTime),
                _ => {}
            }
            if spec.pattern.as_ref().is_some_and(|re| !re.is_match(s)) {
                return Some(InputProblem::WrongFormat);
            }
            None
        }
        InputKind::Choice(choices) => match value {
            Value::String(s) if choices.contains(s) => None,
            Value::String(_) => Some(InputProblem::MustBeListedValue),
            _ => Some(InputProblem::MustBeText),
        },
        InputKind::Number => {
            let Some(n) = value.as_f64().filter(|_| value.is_number()) else { return Some(InputProblem::MustBeNumber) };
            if spec.minimum.is_some_and(|min| n < min) {
                Some(InputProblem::TooSmall)
            } else if spec.maximum.is_some_and(|max| n > max) {
                Some(InputProblem::TooLarge)
            } else {
                None
            }
        }
        InputKind::Boolean => (!value.is_boolean()).then_some(InputProblem::MustBeBoolean),
    }
}

/// `YYYY-MM-DD`, a real calendar date.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).filter(|t| t.bytes().all(|c| c.is_ascii_digit())).and_then(|t| t.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else { return false };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    (1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1]
}

/// `YYYY-MM-DDTHH:MM[:SS[.fff]]` with an optional `Z` or `±HH:MM` offset.
fn is_date_time(s: &str) -> bool {
    let Some((date, time)) = s.split_once(['T', ' ']) else { return false };
    if !is_date(date) {
        return false;
    }
    let time = time.trim_end_matches('Z');
    let time = match time.rfind(['+', '-']) {
        Some(i) if i >= 5 => &time[..i],
        _ => time,
    };
    let mut parts = time.split(':');
    let ok = |p: Option<&str>, max: u32| p.is_some_and(|p| p.len() == 2 && p.parse::<u32>().is_ok_and(|n| n <= max));
    let (h, m, sec) = (parts.next(), parts.next(), parts.next());
    ok(h, 23) && ok(m, 59) && sec.is_none_or(|s| ok(Some(s.split('.').next().unwrap_or("")), 60)) && parts.next().is_none()
}

/// The older run tools take every input as text: read numbers and booleans back into their
/// types so the card's check applies. Text that doesn't parse stays text and is refused there.
pub fn typed_from_text(card: &WorkflowCard, args: &Map<String, Value>) -> Map<String, Value> {
    args.iter()
        .map(|(k, v)| {
            let kind = card.inputs.iter().find(|i| &i.name == k).map(|i| &i.kind);
            let typed = match (kind, v.as_str()) {
                (Some(InputKind::Number), Some(s)) => s.trim().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number),
                (Some(InputKind::Boolean), Some("true")) => Some(Value::Bool(true)),
                (Some(InputKind::Boolean), Some("false")) => Some(Value::Bool(false)),
                _ => None,
            };
            (k.clone(), typed.unwrap_or_else(|| v.clone()))
        })
        .collect()
}

/// Renders checked inputs as the strings Flow's params file takes.
pub fn params_for_flow(inputs: &Map<String, Value>) -> Map<String, Value> {
    inputs
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
                    _ => n.to_string(),
                },
                other => other.to_string(),
            };
            (k.clone(), Value::String(s))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: Value) -> Result<Map<String, Value>, Vec<(String, InputProblem)>> {
        sandbox_card()
            .check_inputs(v.as_object().unwrap(), true)
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
        assert_eq!(check(json!({"note": "x", "sandbox_case": "explode"})), Err(vec![("sandbox_case".into(), MustBeListedValue)]));
        assert_eq!(check(json!({"note": "x", "patient_secret": "y"})), Err(vec![("(unknown)".into(), NotAllowed)]));
    }

    #[test]
    fn dates_and_times() {
        assert!(is_date("2026-02-28") && !is_date("2026-02-30") && !is_date("2026-2-28") && is_date("2024-02-29"));
        assert!(is_date_time("2026-10-08T09:30:00") && is_date_time("2026-10-08T09:30") && is_date_time("2026-10-08T09:30:00.5Z"));
        assert!(is_date_time("2026-10-08T09:30:00+02:00") && !is_date_time("2026-10-08T25:30:00") && !is_date_time("2026-10-08"));
    }

    #[test]
    fn flow_params_are_strings() {
        let inputs = json!({"n": 3.0, "f": 2.5, "b": true, "s": "x"});
        let out = params_for_flow(inputs.as_object().unwrap());
        assert_eq!(Value::Object(out), json!({"n": "3", "f": "2.5", "b": "true", "s": "x"}));
    }
}
