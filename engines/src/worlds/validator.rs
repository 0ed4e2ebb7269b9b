//! The card-validator world: the default validator and operators' drop-ins. Each call sees the
//! bundle directory read-only at `/bundle` and nothing else.

use super::{guest_call, prepare};
use crate::error::EngineError;
use crate::runtime::{Grants, Runtime, StoreState};
use std::path::Path;
use std::sync::Arc;
use wasmtime::component::Component;

mod bindings {
    wasmtime::component::bindgen!({ world: "card-validator", path: "../wit" });
}
use bindings::exports::openadapt::engines::validator as wit;

pub const BUNDLE_GUEST_PATH: &str = "/bundle";

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputType {
    Text,
    Date,
    Choice,
    Number,
    Boolean,
    EntityRef,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CardInput {
    pub name: String,
    pub input_type: InputType,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub name: String,
    pub purpose: String,
    pub done_means: String,
    pub inputs: Vec<CardInput>,
}

/// Closed refusal codes; they never carry the card's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    NameInvalid,
    PurposeEmpty,
    PurposeTooLong,
    DoneMeansEmpty,
    DoneMeansTooLong,
    InputNameInvalid,
    InputDuplicate,
    InputDescriptionEmpty,
    InputDescriptionTooLong,
    InputNotInBundle,
    BundleUnreadable,
    PolicyRefused,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Refused(Vec<Problem>),
}

/// A loaded card validator. Cloning shares the compiled component.
#[derive(Clone)]
pub struct CardValidator {
    rt: Arc<Runtime>,
    pre: bindings::CardValidatorPre<StoreState>,
    label: Arc<str>,
}

impl CardValidator {
    pub(crate) fn new(rt: Arc<Runtime>, component: &Component, label: &str) -> Result<Self, EngineError> {
        let pre = bindings::CardValidatorPre::new(prepare(&rt, component)?)
            .map_err(|_| EngineError::WrongWorld { expected: "openadapt:engines/validator@0.1.0" })?;
        Ok(CardValidator { rt, pre, label: label.into() })
    }

    /// The validator's name for local messages: `default`, or the operator file's name.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Validates `card` against the bundle at `bundle_dir`. A validator that traps, loops or
    /// exhausts memory is an error, never an acceptance; the next call starts afresh.
    pub fn validate(&self, bundle_dir: &Path, card: &Card) -> Result<Verdict, EngineError> {
        let mut store = self.rt.store(Grants::ReadOnlyDir { host: bundle_dir, guest: BUNDLE_GUEST_PATH })?;
        let card = to_wit(card);
        let verdict = guest_call(&mut store, |s| {
            let validator = self.pre.instantiate(&mut *s)?;
            validator.openadapt_engines_validator().call_validate(s, &card)
        })?;
        Ok(match verdict {
            wit::Verdict::Accepted => Verdict::Accepted,
            wit::Verdict::Refused(problems) if problems.is_empty() => return Err(EngineError::BadOutput),
            wit::Verdict::Refused(problems) => {
                let mut codes: Vec<Problem> = Vec::new();
                for p in problems.into_iter().map(problem) {
                    if !codes.contains(&p) {
                        codes.push(p);
                    }
                }
                Verdict::Refused(codes)
            }
        })
    }
}

fn to_wit(card: &Card) -> wit::Card {
    wit::Card {
        name: card.name.clone(),
        purpose: card.purpose.clone(),
        done_means: card.done_means.clone(),
        inputs: card
            .inputs
            .iter()
            .map(|i| wit::CardInput {
                name: i.name.clone(),
                input_type: match i.input_type {
                    InputType::Text => wit::InputType::Text,
                    InputType::Date => wit::InputType::Date,
                    InputType::Choice => wit::InputType::Choice,
                    InputType::Number => wit::InputType::Number,
                    InputType::Boolean => wit::InputType::Boolean,
                    InputType::EntityRef => wit::InputType::EntityRef,
                },
                description: i.description.clone(),
            })
            .collect(),
    }
}

fn problem(p: wit::Problem) -> Problem {
    match p {
        wit::Problem::NameInvalid => Problem::NameInvalid,
        wit::Problem::PurposeEmpty => Problem::PurposeEmpty,
        wit::Problem::PurposeTooLong => Problem::PurposeTooLong,
        wit::Problem::DoneMeansEmpty => Problem::DoneMeansEmpty,
        wit::Problem::DoneMeansTooLong => Problem::DoneMeansTooLong,
        wit::Problem::InputNameInvalid => Problem::InputNameInvalid,
        wit::Problem::InputDuplicate => Problem::InputDuplicate,
        wit::Problem::InputDescriptionEmpty => Problem::InputDescriptionEmpty,
        wit::Problem::InputDescriptionTooLong => Problem::InputDescriptionTooLong,
        wit::Problem::InputNotInBundle => Problem::InputNotInBundle,
        wit::Problem::BundleUnreadable => Problem::BundleUnreadable,
        wit::Problem::PolicyRefused => Problem::PolicyRefused,
    }
}
