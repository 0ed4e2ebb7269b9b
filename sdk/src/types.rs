//! The wire types of `openadapt.run-result/v1` and `list_workflows`, re-declared so the SDK does
//! not depend on the server. Every closed vocabulary has an `Unrecognized(String)` fallback: a value
//! from a newer server never fails the whole result.

use crate::error::Error;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// The contract version this SDK was written against.
pub const CONTRACT_VERSION: &str = "openadapt.run-result/v1";

/// A wire vocabulary: one string per known variant, and `Unrecognized` for any other string.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this SDK does not know, as the server sent it (a newer server).
            Unrecognized(String),
        }

        impl $name {
            /// Every value this SDK knows, in the server's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Unrecognized(s) => s.as_str(),
                }
            }

            /// The variant for a wire string; any other string is `Unrecognized`.
            pub fn parse(s: &str) -> Self {
                match s {
                    $($wire => $name::$variant,)+
                    other => $name::Unrecognized(other.to_string()),
                }
            }

            /// False for `Unrecognized`.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Unrecognized(_))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }
    };
}

wire_enum! {
    /// What the calling program decides on. `Running` is the one non-terminal value.
    ///
    /// An `Unrecognized` outcome (from a newer server) is for a person: read `what_happened` and
    /// `next_action`, and never retry on your own.
    Outcome {
        /// Saved, and checked by reading the record back.
        Done => "done",
        /// Stopped before saving; nothing written. A person decides.
        NeedsReview => "needs_review",
        /// A save may have gone through. A person checks the record; never retry.
        NotSureIfSaved => "not_sure_if_saved",
        /// Nothing written by this call. Retry with the same request_id only when `safe_to_retry`.
        DidNotRun => "did_not_run",
        /// Still going; `Client::resume` waits for the end.
        Running => "running",
    }
}

impl Outcome {
    /// Everything but `Running`.
    pub fn is_terminal(&self) -> bool {
        *self != Outcome::Running
    }
}

wire_enum! {
    /// Why a run came to its outcome: a closed list of 28 on the server.
    Reason {
        AppUnreachable => "app_unreachable",
        ApprovalNeeded => "approval_needed",
        Canceled => "canceled",
        ChangeReversed => "change_reversed",
        CheckedBelowMinimum => "checked_below_minimum",
        Interrupted => "interrupted",
        InvalidInput => "invalid_input",
        NotChecked => "not_checked",
        NotReadyToRun => "not_ready_to_run",
        PersonNeeded => "person_needed",
        PlatformError => "platform_error",
        PolicyRefused => "policy_refused",
        RecordCheckNotSetUp => "record_check_not_set_up",
        RecordNotConfirmed => "record_not_confirmed",
        RequestIdConflict => "request_id_conflict",
        ResultUnreadable => "result_unreadable",
        RetryLimit => "retry_limit",
        Running => "running",
        RunsDisabled => "runs_disabled",
        SaveNotConfirmed => "save_not_confirmed",
        SavedAndChecked => "saved_and_checked",
        StoppedByPerson => "stopped_by_person",
        StoppedForReview => "stopped_for_review",
        TimedOut => "timed_out",
        UnexpectedScreen => "unexpected_screen",
        UnknownWorkflow => "unknown_workflow",
        WaitingForApproval => "waiting_for_approval",
        WorkflowUnavailable => "workflow_unavailable",
    }
}

wire_enum! {
    /// What the caller's next step is, as the server says.
    NextStep {
        None => "none",
        WaitForPerson => "wait_for_person",
        CheckRecord => "check_record",
        FixInputs => "fix_inputs",
        FixSetup => "fix_setup",
        Retry => "retry",
        CallGetRun => "call_get_run",
    }
}

wire_enum! {
    /// Whether the app's record changed.
    RecordChanged {
        Yes => "yes",
        No => "no",
        Unknown => "unknown",
    }
}

wire_enum! {
    /// What stands behind a done result; `None` on every other outcome.
    Proof {
        Sealed => "sealed",
        Local => "local",
        Simulated => "simulated",
        None => "none",
    }
}

wire_enum! {
    /// How the server was started.
    Mode {
        Sandbox => "sandbox",
        Attended => "attended",
        Production => "production",
    }
}

/// One input that needs fixing (`invalid_input`): the input's name and a fixed sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidInput {
    pub input: String,
    pub problem: String,
}

/// Which simulated case and engine produced a sandbox result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    #[serde(default)]
    pub case: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One run's answer (`openadapt.run-result/v1`), typed. Serializes back to the same JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub outcome: Outcome,
    /// A short fixed label for people.
    pub label: String,
    /// True only when a retry with the same request_id can't write twice.
    pub safe_to_retry: bool,
    pub what_happened: String,
    pub next_action: String,
    pub next_step: NextStep,
    pub reason: Reason,
    pub record_changed: RecordChanged,
    pub proof: Proof,
    pub run_id: Option<String>,
    pub request_id: Option<String>,
    pub workflow: Option<String>,
    pub mode: Mode,
    pub contract_version: String,
    /// Where a person finds this run in the Needs Attention queue (needs_review and
    /// not_sure_if_saved only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_attention_id: Option<String>,
    /// On request_id_conflict: the run the request_id first started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_run_id: Option<String>,
    /// This answer repeats an earlier attempt's result (the same request_id).
    #[serde(default, skip_serializing_if = "is_false")]
    pub replayed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_how: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_how_label: Option<String>,
    /// On not_ready_to_run: which checks failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_checks: Option<Vec<String>>,
    /// On invalid_input: which inputs, and what is wrong with each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_inputs: Option<Vec<InvalidInput>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInfo>,
    /// Fields this SDK does not type (`technical`, `needs_repair`, receipt and review URLs, and
    /// whatever a newer server adds), kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunResult {
    /// Parses a result from its JSON (`structuredContent`).
    pub fn from_json(value: Value) -> Result<Self, Error> {
        serde_json::from_value(value).map_err(|e| Error::Protocol(format!("the server's result does not parse: {e}")))
    }

    /// False only while the run is still going.
    pub fn is_terminal(&self) -> bool {
        self.outcome.is_terminal()
    }

    /// What a program keeps to find this run again, after its own restart: see
    /// [`crate::Client::resume`]. `None` only for a result without a run id.
    pub fn run_ref(&self) -> Option<RunRef> {
        Some(RunRef { run_id: self.run_id.clone()?, request_id: self.request_id.clone(), workflow: self.workflow.clone() })
    }

    /// What a person must do before anything else happens to this request: one item for
    /// needs_review and not_sure_if_saved (and an outcome this SDK does not know), none
    /// otherwise.
    ///
    /// An interruption is never something the calling program or agent may resolve itself:
    /// this SDK has no call that answers one, and retrying does not clear it (a retry with the
    /// same request_id replays this result).
    pub fn interruptions(&self) -> Vec<Interruption> {
        let run_id = self.run_id.clone();
        let needs_attention_id = self.needs_attention_id.clone();
        match &self.outcome {
            Outcome::NeedsReview => vec![Interruption::WaitForPerson {
                task: PersonTask::for_reason(&self.reason),
                reason: self.reason.clone(),
                needs_attention_id,
                run_id,
            }],
            Outcome::NotSureIfSaved => {
                vec![Interruption::CheckRecord { reason: self.reason.clone(), needs_attention_id, run_id }]
            }
            Outcome::Unrecognized(outcome) => vec![Interruption::Unrecognized {
                outcome: outcome.clone(),
                reason: self.reason.clone(),
                needs_attention_id,
                run_id,
            }],
            _ => vec![],
        }
    }
}

/// What a person must do about a needs_review run, from its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PersonTask {
    /// `record_not_confirmed`: confirm which record is the right one.
    ConfirmRecord,
    /// `unexpected_screen`: look at what the app shows and decide.
    CheckScreen,
    /// `person_needed`: attend to the app, for example sign in.
    AttendApp,
    /// `record_check_not_set_up`: the workflow's owner sets up a way to check the saved record.
    SetUpRecordCheck,
    /// `approval_needed`: approve the save, or not.
    ApproveSave,
    /// `waiting_for_approval`: the run is paused until a person approves its next save.
    ApproveNextSave,
    /// `stopped_for_review`, and any reason this SDK does not know: review the run.
    Review,
}

impl PersonTask {
    fn for_reason(reason: &Reason) -> Self {
        match reason {
            Reason::RecordNotConfirmed => PersonTask::ConfirmRecord,
            Reason::UnexpectedScreen => PersonTask::CheckScreen,
            Reason::PersonNeeded => PersonTask::AttendApp,
            Reason::RecordCheckNotSetUp => PersonTask::SetUpRecordCheck,
            Reason::ApprovalNeeded => PersonTask::ApproveSave,
            Reason::WaitingForApproval => PersonTask::ApproveNextSave,
            _ => PersonTask::Review,
        }
    }

    /// One sentence for the person.
    pub fn describe(self) -> &'static str {
        match self {
            PersonTask::ConfirmRecord => "Confirm which record is the right one in the app; nothing was written.",
            PersonTask::CheckScreen => "Look at the screen the app showed and decide; nothing was written.",
            PersonTask::AttendApp => "Attend to the app (for example, sign in); nothing was written.",
            PersonTask::SetUpRecordCheck => {
                "Set up a way for the workflow to check the saved record; nothing was written."
            }
            PersonTask::ApproveSave => "Decide whether to approve this save; nothing was written.",
            PersonTask::ApproveNextSave => "Decide whether to approve the paused run's next save.",
            PersonTask::Review => "Review the run and decide; nothing was written.",
        }
    }
}

/// Something only a person can do. The calling program or agent must never resolve it itself:
/// it shows it to a person (with `needs_attention_id` when there is one) and waits. A retry
/// with the same request_id replays the same result; a new request_id could write twice.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interruption {
    /// `needs_review`: stopped before saving (or paused before its next save). A person does
    /// `task`; nothing was written by this run's pending save.
    WaitForPerson { reason: Reason, task: PersonTask, needs_attention_id: Option<String>, run_id: Option<String> },
    /// `not_sure_if_saved`: a save may have gone through. A person checks the record in the
    /// app. Never retry.
    CheckRecord { reason: Reason, needs_attention_id: Option<String>, run_id: Option<String> },
    /// An outcome this SDK does not know (a newer server): a person reads the result's
    /// `what_happened` and `next_action`.
    Unrecognized { outcome: String, reason: Reason, needs_attention_id: Option<String>, run_id: Option<String> },
}

impl Interruption {
    pub fn reason(&self) -> &Reason {
        match self {
            Interruption::WaitForPerson { reason, .. }
            | Interruption::CheckRecord { reason, .. }
            | Interruption::Unrecognized { reason, .. } => reason,
        }
    }

    pub fn run_id(&self) -> Option<&str> {
        match self {
            Interruption::WaitForPerson { run_id, .. }
            | Interruption::CheckRecord { run_id, .. }
            | Interruption::Unrecognized { run_id, .. } => run_id.as_deref(),
        }
    }

    /// The item in the server's Needs Attention queue, when the run has one.
    pub fn needs_attention_id(&self) -> Option<&str> {
        match self {
            Interruption::WaitForPerson { needs_attention_id, .. }
            | Interruption::CheckRecord { needs_attention_id, .. }
            | Interruption::Unrecognized { needs_attention_id, .. } => needs_attention_id.as_deref(),
        }
    }

    /// One sentence for the person.
    pub fn for_person(&self) -> &'static str {
        match self {
            Interruption::WaitForPerson { task, .. } => task.describe(),
            Interruption::CheckRecord { .. } => {
                "Check the record in the app: the save may or may not have gone through. Do not run it again."
            }
            Interruption::Unrecognized { .. } => {
                "Read what the server said happened and decide; do not run it again until then."
            }
        }
    }
}

/// A run to come back to: serde, so a program can persist it and call
/// [`crate::Client::resume`] after its own restart.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunRef {
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

impl RunRef {
    /// A reference by run id alone.
    pub fn new(run_id: impl Into<String>) -> Self {
        RunRef { run_id: run_id.into(), request_id: None, workflow: None }
    }
}

/// The caller's own id for one request: the same id never runs twice. 4 to 128 characters:
/// a letter or digit, then letters, digits, `.`, `_`, `:` or `-`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    pub fn new(id: impl Into<String>) -> Result<Self, Error> {
        let id = id.into();
        let bytes = id.as_bytes();
        let ok = (4..=128).contains(&bytes.len())
            && bytes[0].is_ascii_alphanumeric()
            && bytes[1..].iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
        if ok {
            Ok(RequestId(id))
        } else {
            Err(Error::InvalidRequestId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RequestId::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// One workflow the server offers, as `list_workflows` describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkflowCard {
    /// The name to pass to `run`.
    pub name: String,
    pub purpose: String,
    pub done_means: String,
    /// JSON Schema of the workflow's inputs.
    pub inputs: Value,
    /// Whether it can run now.
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_records: Option<bool>,
    /// Fields this SDK does not type (production extras, newer fields).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl WorkflowCard {
    /// The names of the inputs the card declares.
    pub fn input_names(&self) -> Vec<&str> {
        self.inputs["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default()
    }
}

/// The whole `list_workflows` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub mode: Mode,
    /// Whether this server runs workflows (false: read-only).
    pub run_tools_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how_to_run: Option<String>,
    pub workflows: Vec<WorkflowCard>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
