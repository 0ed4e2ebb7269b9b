//! The result contract: closed vocabularies, the evidence → decision mapping, and the one result
//! object every agent-facing answer uses. Pure: no I/O, no clock, no randomness.
//!
//! Every sentence in a result is fixed copy keyed by a closed [`Reason`]; nothing observed,
//! entered or named by a caller ever reaches `label`, `what_happened` or `next_action`.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

pub const CONTRACT_VERSION: &str = "openadapt.run-result/v1";

/// What every simulated sandbox result's `what_happened` opens with.
pub const SIMULATED_PREFIX: &str = "Simulated sandbox result: ";

/// Attempts one request_id may start; the next call answers [`Reason::RetryLimit`].
pub const MAX_ATTEMPTS: u32 = 5;

/// The `input` reported for an argument the workflow doesn't declare.
pub const UNKNOWN_INPUT: &str = "(unknown)";

/// A closed vocabulary: one wire string per variant, used by serde, `as_str` and `parse` alike.
macro_rules! closed_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $wire)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            pub fn parse(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_enum! {
    /// The decision a calling agent makes; `running` is the one non-terminal value.
    Outcome {
        Done => "done",
        NeedsReview => "needs_review",
        NotSureIfSaved => "not_sure_if_saved",
        DidNotRun => "did_not_run",
        Running => "running",
    }
}

closed_enum! {
    Reason {
        SavedAndChecked => "saved_and_checked",
        RecordNotConfirmed => "record_not_confirmed",
        UnexpectedScreen => "unexpected_screen",
        PersonNeeded => "person_needed",
        RecordCheckNotSetUp => "record_check_not_set_up",
        StoppedForReview => "stopped_for_review",
        ApprovalNeeded => "approval_needed",
        WaitingForApproval => "waiting_for_approval",
        SaveNotConfirmed => "save_not_confirmed",
        NotChecked => "not_checked",
        CheckedBelowMinimum => "checked_below_minimum",
        ChangeReversed => "change_reversed",
        TimedOut => "timed_out",
        ResultUnreadable => "result_unreadable",
        Interrupted => "interrupted",
        InvalidInput => "invalid_input",
        UnknownWorkflow => "unknown_workflow",
        NotReadyToRun => "not_ready_to_run",
        WorkflowUnavailable => "workflow_unavailable",
        RunsDisabled => "runs_disabled",
        PolicyRefused => "policy_refused",
        AppUnreachable => "app_unreachable",
        Canceled => "canceled",
        PlatformError => "platform_error",
        RequestIdConflict => "request_id_conflict",
        RetryLimit => "retry_limit",
        StoppedByPerson => "stopped_by_person",
        Running => "running",
    }
}

closed_enum! {
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

closed_enum! {
    RecordChanged {
        Yes => "yes",
        No => "no",
        Unknown => "unknown",
    }
}

closed_enum! {
    /// What stands behind a done result; separate from the outcome.
    Proof {
        Sealed => "sealed",
        Local => "local",
        Simulated => "simulated",
        None => "none",
    }
}

closed_enum! {
    Mode {
        Sandbox => "sandbox",
        Attended => "attended",
        Production => "production",
    }
}

closed_enum! {
    /// Why Flow refused to start a run (exit 2).
    FailedCheck {
        AppTargetMissing => "app_target_missing",
        ApprovalMissing => "approval_missing",
        DispatchMismatch => "dispatch_mismatch",
        IntegrityCheckFailed => "integrity_check_failed",
        NoReadinessTest => "no_readiness_test",
        NotCertified => "not_certified",
        NotEncrypted => "not_encrypted",
        Other => "other",
        PopupHandlingNotApproved => "popup_handling_not_approved",
        ProfileNotMet => "profile_not_met",
        ReadinessTestInvalid => "readiness_test_invalid",
        RecordCheckMissing => "record_check_missing",
        RightRecordCheckMissing => "right_record_check_missing",
        UrlOverrideNotAllowed => "url_override_not_allowed",
        WorkflowUnloadable => "workflow_unloadable",
    }
}

closed_enum! {
    /// The weakest check level any save of the run reached.
    CheckedHow {
        Unchecked => "unchecked",
        SameScreen => "same_screen",
        Reopened => "reopened",
        SeparateSession => "separate_session",
        SystemOfRecord => "system_of_record",
        CounterpartyConfirmed => "counterparty_confirmed",
    }
}

closed_enum! {
    /// What is wrong with one input; the wire value is the fixed sentence.
    InputProblem {
        Missing => "is missing",
        TooShort => "is too short",
        TooLong => "is too long",
        MustBeText => "must be text",
        MustBeListedValue => "must be one of the listed values",
        MustBeNumber => "must be a number",
        MustBeBoolean => "must be true or false",
        MustBeWholeNumber => "must be a whole number",
        NotADate => "must be a date like 2026-10-08",
        NotADateTime => "must be a date and time like 2026-10-08T09:30:00",
        WrongFormat => "doesn't match the expected format",
        TooSmall => "is too small",
        TooLarge => "is too large",
        NotAllowed => "isn't an input of this workflow; list_workflows has the names",
    }
}

closed_enum! {
    SandboxEngine {
        Flow => "flow",
        Simulated => "simulated",
    }
}

closed_enum! {
    /// Flow's per-save approval mode (`--approval-mode`).
    ApprovalMode {
        EachItem => "each_item",
        ProblemsOnly => "problems_only",
        NotGated => "not_gated",
    }
}

closed_enum! {
    /// Flow's `transaction_outcome`.
    TransactionOutcome {
        Verified => "VERIFIED",
        HaltedBeforeEffect => "HALTED_BEFORE_EFFECT",
        ReconciliationRequired => "RECONCILIATION_REQUIRED",
        FailedPlatform => "FAILED_PLATFORM",
        Canceled => "CANCELED",
        RejectedPolicy => "REJECTED_POLICY",
        CompletedUnverified => "COMPLETED_UNVERIFIED",
        RolledBack => "ROLLED_BACK",
        SavedAwaitingCheck => "SAVED_AWAITING_CHECK",
    }
}

closed_enum! {
    /// Flow's coarse `execution_outcome`.
    ExecutionOutcome {
        Verified => "VERIFIED",
        CompletedUnverified => "COMPLETED_UNVERIFIED",
        Halted => "HALTED",
        Failed => "FAILED",
        RolledBack => "ROLLED_BACK",
    }
}

impl Outcome {
    pub fn is_terminal(self) -> bool {
        self != Outcome::Running
    }
}

impl TransactionOutcome {
    /// Outcomes that prove no business effect occurred.
    pub fn is_no_effect(self) -> bool {
        matches!(
            self,
            Self::HaltedBeforeEffect | Self::RejectedPolicy | Self::Canceled | Self::FailedPlatform
        )
    }
}

impl CheckedHow {
    pub fn label(self) -> &'static str {
        match self {
            Self::Unchecked => "Not checked",
            Self::SameScreen => "Checked on the same screen",
            Self::Reopened => "Checked by opening the record again",
            Self::SeparateSession => "Checked in a separate session",
            Self::SystemOfRecord => "Checked in the system of record",
            Self::CounterpartyConfirmed => "Confirmed by the other party",
        }
    }
}

impl Reason {
    /// Reasons after which a new attempt under the same request_id may start: each proves
    /// nothing was written and a retry may now succeed.
    pub const RETRYABLE: &'static [Reason] = &[
        Reason::NotReadyToRun,
        Reason::PolicyRefused,
        Reason::Canceled,
        Reason::PlatformError,
        Reason::AppUnreachable,
        Reason::WorkflowUnavailable,
        Reason::RunsDisabled,
    ];

    fn row(self) -> (Outcome, bool, RecordChanged, NextStep) {
        use NextStep as N;
        use Outcome as O;
        use Reason::*;
        use RecordChanged as C;
        match self {
            SavedAndChecked => (O::Done, false, C::Yes, N::None),
            RecordNotConfirmed | UnexpectedScreen | PersonNeeded | RecordCheckNotSetUp
            | StoppedForReview | ApprovalNeeded => (O::NeedsReview, false, C::No, N::WaitForPerson),
            // The run is still going; earlier saves of the same run may have been made.
            WaitingForApproval => (O::NeedsReview, false, C::Unknown, N::WaitForPerson),
            SaveNotConfirmed | NotChecked | CheckedBelowMinimum | ChangeReversed | TimedOut
            | ResultUnreadable | Interrupted => {
                (O::NotSureIfSaved, false, C::Unknown, N::CheckRecord)
            }
            InvalidInput | UnknownWorkflow => (O::DidNotRun, true, C::No, N::FixInputs),
            NotReadyToRun | WorkflowUnavailable | RunsDisabled | PolicyRefused => {
                (O::DidNotRun, true, C::No, N::FixSetup)
            }
            AppUnreachable | Canceled | PlatformError => (O::DidNotRun, true, C::No, N::Retry),
            // Nothing new ran, but an earlier attempt under this request_id may have saved.
            RequestIdConflict => (O::DidNotRun, false, C::Unknown, N::FixInputs),
            RetryLimit => (O::DidNotRun, false, C::No, N::FixSetup),
            StoppedByPerson => (O::DidNotRun, false, C::No, N::None),
            Running => (O::Running, false, C::Unknown, N::CallGetRun),
        }
    }

    pub fn outcome(self) -> Outcome {
        self.row().0
    }

    pub fn safe_to_retry(self) -> bool {
        self.row().1
    }

    pub fn record_changed(self) -> RecordChanged {
        self.row().2
    }

    pub fn next_step(self) -> NextStep {
        self.row().3
    }

    pub fn is_retryable(self) -> bool {
        Self::RETRYABLE.contains(&self)
    }

    /// The needs_review reason for one of Flow's Needs Attention categories.
    pub fn from_attention_category(category: &str) -> Reason {
        match category {
            "identity" | "disambiguation" => Reason::RecordNotConfirmed,
            "human_required" => Reason::PersonNeeded,
            "effect_unverifiable" | "placeholder_effect" => Reason::RecordCheckNotSetUp,
            "unmet_guard" | "postcondition" | "resolution" => Reason::UnexpectedScreen,
            _ => Reason::StoppedForReview,
        }
    }

    pub fn label(self) -> &'static str {
        use Reason::*;
        match self {
            SavedAndChecked => "Saved and checked",
            RecordNotConfirmed => "Record not confirmed",
            UnexpectedScreen => "Unexpected screen",
            PersonNeeded => "A person is needed",
            RecordCheckNotSetUp => "Record check not set up",
            StoppedForReview => "Stopped for review",
            ApprovalNeeded => "Save needs approval",
            WaitingForApproval => "Waiting for approval",
            SaveNotConfirmed => "Save not confirmed",
            NotChecked => "Finished, not checked",
            CheckedBelowMinimum => "Checked, but not enough",
            ChangeReversed => "Extra change reversed",
            TimedOut => "Ran out of time",
            ResultUnreadable => "Result can't be read",
            Interrupted => "Run interrupted",
            InvalidInput => "Inputs need fixing",
            UnknownWorkflow => "Unknown workflow",
            NotReadyToRun => "Not ready to run",
            WorkflowUnavailable => "Workflow unavailable",
            RunsDisabled => "Runs are turned off",
            PolicyRefused => "Refused by policy",
            AppUnreachable => "App not reachable",
            Canceled => "Run canceled",
            PlatformError => "Problem on this computer",
            RequestIdConflict => "Request id already used",
            RetryLimit => "Too many attempts",
            StoppedByPerson => "Ended by a person",
            Running => "Still running",
        }
    }

    pub fn what_happened(self) -> &'static str {
        use Reason::*;
        match self {
            SavedAndChecked => "The change was saved, and reading the record back confirmed it.",
            RecordNotConfirmed => {
                "Stopped before saving because the right record couldn't be confirmed. \
                 Nothing was written."
            }
            UnexpectedScreen => {
                "Stopped before saving because the app showed a screen the workflow didn't \
                 expect. Nothing was written."
            }
            PersonNeeded => {
                "Stopped before saving because the app needs a person, for example to sign in. \
                 Nothing was written."
            }
            RecordCheckNotSetUp => {
                "Stopped before saving because this workflow has no way yet to check the saved \
                 record. Nothing was written."
            }
            StoppedForReview => {
                "Stopped before saving because something didn't match what the workflow \
                 expects. Nothing was written."
            }
            ApprovalNeeded => {
                "Stopped before saving because this save needs a person's approval first. \
                 Nothing was written."
            }
            WaitingForApproval => {
                "The run is paused until a person approves its next save. That save hasn't \
                 been made."
            }
            SaveNotConfirmed => "The save may have gone through, but it couldn't be confirmed.",
            NotChecked => {
                "The steps finished, but the saved record wasn't read back, so the change may \
                 or may not be there."
            }
            CheckedBelowMinimum => {
                "The save was checked, but less thoroughly than this workflow requires, so it \
                 may not be right."
            }
            ChangeReversed => {
                "An extra change was found and undone. The record still needs a person to \
                 confirm it's right."
            }
            TimedOut => "The run didn't finish in time. The change may or may not have been saved.",
            ResultUnreadable => {
                "The run ended without a result that can be trusted. The change may or may not \
                 have been saved."
            }
            Interrupted => {
                "The run stopped before it reported a result, for example because the server \
                 shut down. The change may or may not have been saved."
            }
            InvalidInput => "Didn't start because some inputs aren't valid. Nothing was written.",
            UnknownWorkflow => {
                "Didn't start because no workflow here has that name. Nothing was written."
            }
            NotReadyToRun => {
                "Didn't start because the workflow hasn't passed the checks it needs before it \
                 can run here. Nothing was written."
            }
            WorkflowUnavailable => {
                "Didn't start because this workflow couldn't be loaded on this computer. \
                 Nothing was written."
            }
            RunsDisabled => {
                "Didn't start because this server is set up only to list workflows. Nothing \
                 was written."
            }
            PolicyRefused => {
                "Didn't start because a policy or sign-off check refused the run. Nothing was \
                 written."
            }
            AppUnreachable => {
                "Didn't start because the app couldn't be reached. Nothing was written."
            }
            Canceled => "The run was canceled before it changed anything. Nothing was written.",
            PlatformError => {
                "A problem on this computer stopped the run before it changed anything. \
                 Nothing was written."
            }
            RequestIdConflict => {
                "Didn't start because this request_id was already used for different work. \
                 Nothing new ran, but the earlier request may have saved."
            }
            RetryLimit => {
                "Didn't start because this request_id has already been tried as many times as \
                 allowed. Nothing new ran."
            }
            StoppedByPerson => {
                "A person ended the run before it saved anything. Nothing was written."
            }
            Running => "The run is still going.",
        }
    }

    pub fn next_action(self) -> &'static str {
        use Reason::*;
        const WAIT_FOR_PERSON: &str = "A person reviews this run on the computer that ran it. \
             Call get_run later for their decision, and don't start this work again meanwhile.";
        const CHECK_RECORD: &str = "Have a person check the record in the app before anything \
             runs again. Don't retry this request.";
        match self {
            SavedAndChecked => "Nothing more to do. Don't send this work again.",
            RecordNotConfirmed | UnexpectedScreen | PersonNeeded | RecordCheckNotSetUp
            | StoppedForReview => WAIT_FOR_PERSON,
            ApprovalNeeded => {
                "A person decides whether to approve the save and resume the run, or end it. \
                 Call get_run later for their decision, and don't start this work again meanwhile."
            }
            WaitingForApproval => {
                "Ask a person at the computer running OpenAdapt to approve or decline the save. \
                 Call get_run later for the result, and don't start this work again."
            }
            SaveNotConfirmed | NotChecked | CheckedBelowMinimum | ChangeReversed | TimedOut
            | ResultUnreadable | Interrupted => CHECK_RECORD,
            InvalidInput => {
                "Fix the inputs listed in invalid_inputs, then send the request again. The same \
                 request_id is fine."
            }
            UnknownWorkflow => "Call list_workflows and use one of the names it returns.",
            NotReadyToRun => {
                "Ask the operator to finish the setup named in failed_checks, then send the same \
                 request again with the same request_id."
            }
            WorkflowUnavailable => {
                "Ask the operator to check this workflow's files, then send the same request \
                 again with the same request_id."
            }
            RunsDisabled => {
                "Ask the operator to start the server in a mode that allows runs, then send the \
                 same request again with the same request_id."
            }
            PolicyRefused => {
                "Ask the operator why this run isn't allowed, then send the same request again \
                 with the same request_id."
            }
            AppUnreachable => {
                "Send the same request again with the same request_id once the app is back. If \
                 this keeps happening, tell the operator."
            }
            Canceled => {
                "If the work is still needed, send the same request again with the same \
                 request_id."
            }
            PlatformError => {
                "Send the same request again with the same request_id. If this keeps happening, \
                 tell the operator."
            }
            RequestIdConflict => {
                "Use a new request_id for new work. To see the earlier result, call get_run with \
                 first_run_id."
            }
            RetryLimit => {
                "Ask the operator to look at the earlier attempts for this request before trying \
                 again."
            }
            StoppedByPerson => {
                "Don't retry this request. If the work is still needed, a person decides how, \
                 and any new attempt uses a new request_id."
            }
            Running => {
                "Call get_run with this run_id for the result. Don't start the same work again."
            }
        }
    }
}

/// `what_happened` for a reason; results of the simulated sandbox engine say so first.
pub fn what_happened_for(reason: Reason, simulated: bool) -> String {
    if simulated {
        format!("{SIMULATED_PREFIX}{}", reason.what_happened())
    } else {
        reason.what_happened().to_owned()
    }
}

// Flow prints one `[REFUSE] <title>: ...` line per failing admission gate.
const GATE_TITLE_CHECKS: &[(&str, FailedCheck)] = &[
    ("Execution profile", FailedCheck::ProfileNotMet),
    // Flow 2.4 prints "Certification"; older versions "Certification passed". Both certify.
    ("Certification", FailedCheck::NotCertified),
    ("Identity coverage", FailedCheck::RightRecordCheckMissing),
    ("Effect coverage", FailedCheck::RecordCheckMissing),
    ("Approval fallback", FailedCheck::ApprovalMissing),
    (
        "Interstitial admission",
        FailedCheck::PopupHandlingNotApproved,
    ),
    ("Encrypted bundle", FailedCheck::NotEncrypted),
    ("Sealed manifest", FailedCheck::IntegrityCheckFailed),
];

// Refusals Flow prints before its gate report. The first marker found wins, so specific phrases
// come before general ones.
const PREGATE_CHECKS: &[(&str, FailedCheck)] = &[
    (
        "signed qualification admission",
        FailedCheck::NoReadinessTest,
    ),
    (
        "qualification authority is invalid",
        FailedCheck::ReadinessTestInvalid,
    ),
    (
        "qualification campaign permit",
        FailedCheck::ReadinessTestInvalid,
    ),
    (
        "bundle could not be loaded safely",
        FailedCheck::WorkflowUnloadable,
    ),
    ("explicit execution surface", FailedCheck::AppTargetMissing),
    ("execution surface", FailedCheck::AppTargetMissing),
    ("cannot weaken a named profile", FailedCheck::NotEncrypted),
    ("requires encrypted bundles", FailedCheck::NotEncrypted),
    ("managed dispatch", FailedCheck::DispatchMismatch),
    ("profile", FailedCheck::ProfileNotMet),
];

/// Maps Flow's refusal output (exit 2) to closed check codes; never returns any of its text.
pub fn parse_failed_checks(text: &str) -> Vec<FailedCheck> {
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("[REFUSE]") else {
            continue;
        };
        let Some((title, _)) = rest.split_once(':') else {
            continue;
        };
        let title = title.trim();
        if title.is_empty() {
            continue;
        }
        for (prefix, code) in GATE_TITLE_CHECKS {
            if title.starts_with(prefix) && !found.contains(code) {
                found.push(*code);
            }
        }
    }
    if found.is_empty() {
        let lowered = text.to_lowercase();
        if let Some((_, code)) = PREGATE_CHECKS.iter().find(|(m, _)| lowered.contains(m)) {
            found.push(*code);
        }
    }
    normalize_failed_checks(found)
}

fn normalize_failed_checks(checks: impl IntoIterator<Item = FailedCheck>) -> Vec<FailedCheck> {
    let mut out: Vec<FailedCheck> = Vec::new();
    for c in checks {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push(FailedCheck::Other);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Evidence → decision

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PauseState {
    pub open: bool,
    /// The needs_review reason of the pause, e.g. record_not_confirmed.
    pub category: Option<Reason>,
    pub rejected_by_person: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The run never started for a reason known before launch.
    Refused(Reason),
    /// Flow could not be launched at all.
    LaunchFailed,
    /// Flow refused before execution (exit 2) with the checks it failed.
    NotReady { failed_checks: Vec<FailedCheck> },
    /// The run was stopped by its own timeout after it started.
    TimedOut,
    /// The server stopped mid-run (a record left running by a process that is gone).
    Interrupted,
    /// The process finished; what its persisted report says.
    Finished(FlowFinish),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowFinish {
    pub exit_code: Option<i32>,
    /// None: missing or unparseable report.
    pub report: Option<FlowReport>,
    pub pause: PauseState,
    /// An unanswered item-approval request of a run still going.
    pub waiting_for_approval: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowReport {
    pub success: Option<bool>,
    pub execution_outcome: Option<ExecutionOutcome>,
    pub transaction_outcome: Option<TransactionOutcome>,
    /// `outcome_envelope` present and agreeing with the outcomes.
    pub envelope_consistent: bool,
    /// The report's `approval.decision == "approval_required"`.
    pub approval_required: bool,
    pub checked_how: Option<CheckedHow>,
    /// `readback.below_minimum`.
    pub below_minimum: bool,
    pub approval_mode: Option<ApprovalMode>,
    pub model_calls: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub reason: Reason,
    pub failed_checks: Vec<FailedCheck>,
    pub proof: Proof,
    pub checked_how: Option<CheckedHow>,
    pub technical: Option<Technical>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Technical {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub execution_outcome: Option<ExecutionOutcome>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub transaction_outcome: Option<TransactionOutcome>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approval_mode: Option<ApprovalMode>,
}

impl Technical {
    pub fn is_empty(&self) -> bool {
        self.execution_outcome.is_none()
            && self.transaction_outcome.is_none()
            && self.approval_mode.is_none()
    }
}

impl Decision {
    fn bare(reason: Reason) -> Self {
        Decision {
            reason,
            failed_checks: Vec::new(),
            proof: Proof::None,
            checked_how: None,
            technical: None,
        }
    }

    pub fn outcome(&self) -> Outcome {
        self.reason.outcome()
    }
}

/// Picks the one reason for a run's evidence. `verified_proof` is what a verified run earns
/// (local for production runs, simulated for the simulated sandbox); every other decision has
/// `Proof::None`.
pub fn decide(evidence: &Evidence, verified_proof: Proof) -> Decision {
    match evidence {
        Evidence::Refused(reason) => {
            // A refusal means nothing started; a caller passing any other kind of reason is a
            // bug, answered with the most cautious result rather than trusted.
            let reason = if reason.outcome() == Outcome::DidNotRun {
                *reason
            } else {
                Reason::ResultUnreadable
            };
            let mut d = Decision::bare(reason);
            if reason == Reason::NotReadyToRun {
                d.failed_checks = vec![FailedCheck::Other];
            }
            d
        }
        Evidence::LaunchFailed => Decision::bare(Reason::PlatformError),
        Evidence::NotReady { failed_checks } => Decision {
            failed_checks: normalize_failed_checks(failed_checks.iter().copied()),
            ..Decision::bare(Reason::NotReadyToRun)
        },
        Evidence::TimedOut => Decision::bare(Reason::TimedOut),
        Evidence::Interrupted => Decision::bare(Reason::Interrupted),
        Evidence::Finished(finish) => decide_finished(finish, verified_proof),
    }
}

fn decide_finished(finish: &FlowFinish, verified_proof: Proof) -> Decision {
    let reason = if finish.waiting_for_approval {
        Reason::WaitingForApproval
    } else {
        match &finish.report {
            None => Reason::ResultUnreadable,
            Some(report) => reason_for_report(finish.exit_code, report, &finish.pause),
        }
    };
    let outcome = reason.outcome();
    let proof = match (outcome, verified_proof) {
        (Outcome::Done, Proof::None) => Proof::Local,
        (Outcome::Done, p) => p,
        _ => Proof::None,
    };
    let report = finish.report.as_ref();
    let checked_how = report
        .and_then(|r| r.checked_how)
        .filter(|_| matches!(outcome, Outcome::Done | Outcome::NotSureIfSaved));
    let technical = report
        .map(|r| Technical {
            execution_outcome: r.execution_outcome,
            transaction_outcome: r.transaction_outcome,
            approval_mode: r.approval_mode,
        })
        .filter(|t| !t.is_empty());
    Decision {
        reason,
        failed_checks: Vec::new(),
        proof,
        checked_how,
        technical,
    }
}

/// Whether the report's fields agree with each other and with the exit code. An inconsistent
/// report never produces done or a "nothing was written" result.
fn report_is_consistent(exit_code: Option<i32>, r: &FlowReport) -> bool {
    use ExecutionOutcome as E;
    use TransactionOutcome as T;
    let exec = r.execution_outcome;
    let tx = r.transaction_outcome;
    let verified = exec == Some(E::Verified) || tx == Some(T::Verified);
    if exec.is_some() && r.success.is_none() {
        return false;
    }
    if let (Some(e), Some(t)) = (exec, tx) {
        if (e == E::Verified) != (t == T::Verified) {
            return false;
        }
    }
    if verified && (r.success != Some(true) || exit_code != Some(0)) {
        return false;
    }
    if tx == Some(T::Verified) && (exec.is_none() || !r.envelope_consistent) {
        return false;
    }
    if r.success == Some(true)
        && (matches!(exec, Some(E::Halted | E::Failed | E::RolledBack))
            || tx.is_some_and(T::is_no_effect))
    {
        return false;
    }
    // Flow exits 0 only for a successful run.
    if exit_code == Some(0) && r.success == Some(false) {
        return false;
    }
    true
}

fn reason_for_report(exit_code: Option<i32>, r: &FlowReport, pause: &PauseState) -> Reason {
    use ExecutionOutcome as E;
    use TransactionOutcome as T;
    if !report_is_consistent(exit_code, r) {
        return Reason::ResultUnreadable;
    }
    let unchecked = if r.below_minimum {
        Reason::CheckedBelowMinimum
    } else {
        Reason::NotChecked
    };
    let Some(tx) = r.transaction_outcome else {
        return match r.execution_outcome {
            // A legacy report: success without outcomes or a check anyone can rely on.
            None if r.success == Some(true) && exit_code == Some(0) => Reason::NotChecked,
            // Without a transaction outcome a coarse VERIFIED proves no check.
            Some(E::Verified | E::CompletedUnverified) => unchecked,
            // A coarse HALTED (or FAILED, ROLLED_BACK) alone is uncertain, never "nothing changed".
            _ => Reason::ResultUnreadable,
        };
    };
    match tx {
        T::Verified if r.below_minimum => Reason::CheckedBelowMinimum,
        T::Verified => Reason::SavedAndChecked,
        T::CompletedUnverified => unchecked,
        // Saved, and a later report is still to confirm it: unconfirmed, never retried.
        T::ReconciliationRequired | T::SavedAwaitingCheck => Reason::SaveNotConfirmed,
        T::RolledBack => Reason::ChangeReversed,
        T::HaltedBeforeEffect | T::RejectedPolicy | T::Canceled | T::FailedPlatform => {
            if pause.rejected_by_person {
                Reason::StoppedByPerson
            } else if pause.open || tx == T::HaltedBeforeEffect {
                if r.approval_required {
                    Reason::ApprovalNeeded
                } else {
                    pause_reason(pause.category)
                }
            } else {
                match tx {
                    T::RejectedPolicy => Reason::PolicyRefused,
                    T::Canceled => Reason::Canceled,
                    _ => Reason::PlatformError,
                }
            }
        }
    }
}

/// Only a stopped-before-saving reason may stand for a pause.
fn pause_reason(category: Option<Reason>) -> Reason {
    match category {
        Some(
            r @ (Reason::RecordNotConfirmed
            | Reason::UnexpectedScreen
            | Reason::PersonNeeded
            | Reason::RecordCheckNotSetUp
            | Reason::StoppedForReview
            | Reason::ApprovalNeeded),
        ) => r,
        _ => Reason::StoppedForReview,
    }
}

// ---------------------------------------------------------------------------------------------
// The result object

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidInput {
    pub input: String,
    pub problem: InputProblem,
}

impl InvalidInput {
    pub fn new(input: impl Into<String>, problem: InputProblem) -> Self {
        InvalidInput {
            input: input.into(),
            problem,
        }
    }

    /// An argument the workflow doesn't declare; its name is never echoed.
    pub fn unknown() -> Self {
        InvalidInput::new(UNKNOWN_INPUT, InputProblem::NotAllowed)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub case: String,
    pub engine: SandboxEngine,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub outcome: Outcome,
    pub label: String,
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
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub failed_checks: Option<Vec<FailedCheck>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub invalid_inputs: Option<Vec<InvalidInput>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub needs_attention_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_run_id: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        default,
        deserialize_with = "true_or_none"
    )]
    pub replayed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model_calls: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub checked_how: Option<CheckedHow>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub checked_how_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sandbox: Option<SandboxInfo>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub technical: Option<Technical>,
}

fn true_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.filter(|b| *b))
}

impl RunResult {
    /// The result for `reason` with its fixed semantics and copy, no ids and no extras. A done
    /// result starts with `proof: local`, never `none`.
    pub fn new(reason: Reason, mode: Mode) -> Self {
        let outcome = reason.outcome();
        RunResult {
            outcome,
            label: reason.label().to_owned(),
            safe_to_retry: reason.safe_to_retry(),
            what_happened: reason.what_happened().to_owned(),
            next_action: reason.next_action().to_owned(),
            next_step: reason.next_step(),
            reason,
            record_changed: reason.record_changed(),
            proof: if outcome == Outcome::Done {
                Proof::Local
            } else {
                Proof::None
            },
            run_id: None,
            request_id: None,
            workflow: None,
            mode,
            contract_version: CONTRACT_VERSION.to_owned(),
            failed_checks: (reason == Reason::NotReadyToRun).then(|| vec![FailedCheck::Other]),
            invalid_inputs: (reason == Reason::InvalidInput).then(Vec::new),
            needs_attention_id: None,
            first_run_id: None,
            replayed: None,
            seconds: None,
            model_calls: None,
            checked_how: None,
            checked_how_label: None,
            sandbox: None,
            technical: None,
        }
    }

    /// The result for a decision. `simulated`: the simulated sandbox engine produced it.
    pub fn from_decision(d: &Decision, mode: Mode, simulated: bool) -> Self {
        let mut r = RunResult::new(d.reason, mode)
            .with_proof(if simulated { Proof::Simulated } else { d.proof })
            .with_failed_checks(d.failed_checks.clone());
        if simulated {
            r.what_happened = what_happened_for(d.reason, true);
        }
        if let Some(how) = d.checked_how {
            r = r.with_checked_how(how);
        }
        if let Some(t) = d.technical {
            r = r.with_technical(t);
        }
        r
    }

    pub fn with_ids(
        mut self,
        run_id: Option<String>,
        request_id: Option<String>,
        workflow: Option<String>,
    ) -> Self {
        self.run_id = run_id;
        self.request_id = request_id;
        self.workflow = workflow;
        self
    }

    /// Only a done result carries proof; a done result never carries `none`.
    pub fn with_proof(mut self, proof: Proof) -> Self {
        self.proof = match (self.outcome, proof) {
            (Outcome::Done, Proof::None) => Proof::Local,
            (Outcome::Done, p) => p,
            _ => Proof::None,
        };
        self
    }

    /// Kept only on not_ready_to_run; an empty list becomes `[other]`.
    pub fn with_failed_checks(mut self, checks: Vec<FailedCheck>) -> Self {
        if self.reason == Reason::NotReadyToRun {
            self.failed_checks = Some(normalize_failed_checks(checks));
        }
        self
    }

    /// Kept only on invalid_input.
    pub fn with_invalid_inputs(mut self, inputs: Vec<InvalidInput>) -> Self {
        if self.reason == Reason::InvalidInput {
            self.invalid_inputs = Some(inputs);
        }
        self
    }

    /// Kept only on needs_review and not_sure_if_saved, and only as 24 hex digits.
    pub fn with_needs_attention_id(mut self, id: impl Into<String>) -> Self {
        let id = id.into();
        let well_formed = id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit());
        if well_formed && matches!(self.outcome, Outcome::NeedsReview | Outcome::NotSureIfSaved) {
            self.needs_attention_id = Some(id);
        }
        self
    }

    /// Kept only on request_id_conflict.
    pub fn with_first_run_id(mut self, run_id: impl Into<String>) -> Self {
        if self.reason == Reason::RequestIdConflict {
            self.first_run_id = Some(run_id.into());
        }
        self
    }

    /// Marks an answer that repeats an earlier attempt's result.
    pub fn mark_replayed(mut self) -> Self {
        self.replayed = Some(true);
        self
    }

    /// Wall time in seconds, rounded to a tenth; negative or non-finite values are dropped.
    pub fn with_seconds(mut self, seconds: f64) -> Self {
        self.seconds =
            (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 10.0).round() / 10.0);
        self
    }

    pub fn with_model_calls(mut self, calls: u32) -> Self {
        self.model_calls = Some(calls);
        self
    }

    /// Kept only on done and not_sure_if_saved.
    pub fn with_checked_how(mut self, how: CheckedHow) -> Self {
        if matches!(self.outcome, Outcome::Done | Outcome::NotSureIfSaved) {
            self.checked_how = Some(how);
            self.checked_how_label = Some(how.label().to_owned());
        }
        self
    }

    pub fn with_sandbox(mut self, case: impl Into<String>, engine: SandboxEngine) -> Self {
        self.sandbox = Some(SandboxInfo {
            case: case.into(),
            engine,
        });
        self
    }

    pub fn with_technical(mut self, technical: Technical) -> Self {
        self.technical = (!technical.is_empty()).then_some(technical);
        self
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a run result always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeSet;

    // ---- the reason table -------------------------------------------------------------------

    #[test]
    fn every_reason_row_matches_the_table() {
        use NextStep as N;
        use Outcome as O;
        use RecordChanged as C;
        #[rustfmt::skip]
        let table: &[(&str, O, bool, C, N)] = &[
            ("saved_and_checked", O::Done, false, C::Yes, N::None),
            ("record_not_confirmed", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("unexpected_screen", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("person_needed", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("record_check_not_set_up", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("stopped_for_review", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("approval_needed", O::NeedsReview, false, C::No, N::WaitForPerson),
            ("waiting_for_approval", O::NeedsReview, false, C::Unknown, N::WaitForPerson),
            ("save_not_confirmed", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("not_checked", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("checked_below_minimum", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("change_reversed", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("timed_out", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("result_unreadable", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("interrupted", O::NotSureIfSaved, false, C::Unknown, N::CheckRecord),
            ("invalid_input", O::DidNotRun, true, C::No, N::FixInputs),
            ("unknown_workflow", O::DidNotRun, true, C::No, N::FixInputs),
            ("not_ready_to_run", O::DidNotRun, true, C::No, N::FixSetup),
            ("workflow_unavailable", O::DidNotRun, true, C::No, N::FixSetup),
            ("runs_disabled", O::DidNotRun, true, C::No, N::FixSetup),
            ("policy_refused", O::DidNotRun, true, C::No, N::FixSetup),
            ("app_unreachable", O::DidNotRun, true, C::No, N::Retry),
            ("canceled", O::DidNotRun, true, C::No, N::Retry),
            ("platform_error", O::DidNotRun, true, C::No, N::Retry),
            ("request_id_conflict", O::DidNotRun, false, C::Unknown, N::FixInputs),
            ("retry_limit", O::DidNotRun, false, C::No, N::FixSetup),
            ("stopped_by_person", O::DidNotRun, false, C::No, N::None),
            ("running", O::Running, false, C::Unknown, N::CallGetRun),
        ];
        assert_eq!(table.len(), 28);
        assert_eq!(Reason::ALL.len(), 28);
        let mut seen = BTreeSet::new();
        for &(name, outcome, retry, changed, next) in table {
            let r = Reason::parse(name).unwrap_or_else(|| panic!("{name} is not a reason"));
            assert!(seen.insert(name), "{name} twice in the table");
            assert_eq!(r.as_str(), name);
            assert_eq!(r.outcome(), outcome, "{name} outcome");
            assert_eq!(r.safe_to_retry(), retry, "{name} safe_to_retry");
            assert_eq!(r.record_changed(), changed, "{name} record_changed");
            assert_eq!(r.next_step(), next, "{name} next_step");
            let res = RunResult::new(r, Mode::Production);
            assert_eq!(
                (
                    res.outcome,
                    res.safe_to_retry,
                    res.record_changed,
                    res.next_step
                ),
                (outcome, retry, changed, next)
            );
        }
    }

    #[test]
    fn retryable_reasons_are_exactly_the_listed_seven() {
        let expected = [
            "not_ready_to_run",
            "policy_refused",
            "canceled",
            "platform_error",
            "app_unreachable",
            "workflow_unavailable",
            "runs_disabled",
        ];
        let got: BTreeSet<&str> = Reason::ALL
            .iter()
            .filter(|r| r.is_retryable())
            .map(|r| r.as_str())
            .collect();
        assert_eq!(got, expected.into_iter().collect());
        for r in Reason::ALL {
            if r.is_retryable() {
                // Each retryable reason proves nothing was written.
                assert_eq!(r.outcome(), Outcome::DidNotRun);
                assert_eq!(r.record_changed(), RecordChanged::No);
                assert!(r.safe_to_retry());
            }
        }
        assert!(!Reason::InvalidInput.is_retryable());
        assert!(!Reason::RequestIdConflict.is_retryable());
    }

    #[test]
    fn only_done_says_yes_and_only_proven_no_effect_says_no_or_retry() {
        for &r in Reason::ALL {
            let c = r.record_changed();
            assert_eq!(c == RecordChanged::Yes, r.outcome() == Outcome::Done, "{r}");
            if c != RecordChanged::No {
                assert!(
                    !r.safe_to_retry(),
                    "{r} may retry without proof nothing was written"
                );
            }
            if matches!(r.outcome(), Outcome::NotSureIfSaved | Outcome::Running) {
                assert_eq!(c, RecordChanged::Unknown, "{r}");
                assert!(!r.safe_to_retry(), "{r}");
            }
            if r.safe_to_retry() {
                assert_eq!(r.outcome(), Outcome::DidNotRun, "{r}");
            }
        }
        assert_eq!(
            Reason::RequestIdConflict.record_changed(),
            RecordChanged::Unknown
        );
        assert_eq!(
            Reason::WaitingForApproval.record_changed(),
            RecordChanged::Unknown
        );
    }

    // ---- copy ---------------------------------------------------------------------------------

    #[test]
    fn fixed_copy_is_present_short_and_distinct() {
        let mut labels = BTreeSet::new();
        let mut happened = BTreeSet::new();
        for &r in Reason::ALL {
            let words = r.label().split_whitespace().count();
            assert!((2..=5).contains(&words), "{r} label has {words} words");
            assert!(!r.what_happened().trim().is_empty(), "{r}");
            assert!(!r.next_action().trim().is_empty(), "{r}");
            for text in [r.what_happened(), r.next_action()] {
                let sentences = text.matches(". ").count() + 1;
                assert!(sentences <= 2, "{r}: {text}");
                assert!(text.ends_with('.'), "{r}: {text}");
                assert!(!text.contains("  "), "{r}: {text}");
            }
            assert!(
                labels.insert(r.label()),
                "{r} label repeats another reason's"
            );
            assert!(
                happened.insert(r.what_happened()),
                "{r} what_happened repeats another's"
            );
        }
    }

    #[test]
    fn next_action_differs_between_outcomes() {
        for &a in Reason::ALL {
            for &b in Reason::ALL {
                if a.outcome() != b.outcome() || a.next_step() != b.next_step() {
                    assert_ne!(a.next_action(), b.next_action(), "{a} and {b}");
                }
            }
        }
        // Within one outcome, differing next steps or different people to ask differ too.
        assert_ne!(
            Reason::ApprovalNeeded.next_action(),
            Reason::StoppedForReview.next_action()
        );
        assert_ne!(
            Reason::InvalidInput.next_action(),
            Reason::UnknownWorkflow.next_action()
        );
        assert_ne!(
            Reason::NotReadyToRun.next_action(),
            Reason::RunsDisabled.next_action()
        );
        assert_ne!(
            Reason::Canceled.next_action(),
            Reason::PlatformError.next_action()
        );
    }

    #[test]
    fn copy_says_nothing_was_written_only_where_that_is_proven() {
        for &r in Reason::ALL {
            let says_nothing = r.what_happened().contains("Nothing was written");
            assert_eq!(
                says_nothing,
                r.record_changed() == RecordChanged::No && r != Reason::RetryLimit,
                "{r}"
            );
            if r.outcome() == Outcome::NotSureIfSaved {
                assert!(r.next_action().contains("Don't retry"), "{r}");
            }
        }
    }

    #[test]
    fn simulated_copy_opens_with_the_simulated_marker() {
        for &r in Reason::ALL {
            let s = what_happened_for(r, true);
            assert!(s.starts_with("Simulated sandbox result"), "{r}");
            assert!(s.ends_with(r.what_happened()));
            assert_eq!(what_happened_for(r, false), r.what_happened());
            let d = decide(&Evidence::Refused(r), Proof::Simulated);
            let res = RunResult::from_decision(&d, Mode::Sandbox, true);
            assert!(
                res.what_happened.starts_with("Simulated sandbox result"),
                "{r}"
            );
        }
        let res =
            RunResult::from_decision(&decide(&verified(), Proof::Simulated), Mode::Sandbox, true);
        assert!(res.what_happened.starts_with("Simulated sandbox result: "));
        assert_eq!(res.proof, Proof::Simulated);
    }

    // ---- evidence → decision ------------------------------------------------------------------

    fn report(
        tx: Option<TransactionOutcome>,
        exec: Option<ExecutionOutcome>,
        success: bool,
    ) -> FlowReport {
        FlowReport {
            success: Some(success),
            execution_outcome: exec,
            transaction_outcome: tx,
            envelope_consistent: true,
            ..FlowReport::default()
        }
    }

    fn finished(exit: i32, report: FlowReport, pause: PauseState) -> Evidence {
        Evidence::Finished(FlowFinish {
            exit_code: Some(exit),
            report: Some(report),
            pause,
            waiting_for_approval: false,
        })
    }

    fn verified() -> Evidence {
        finished(
            0,
            report(
                Some(TransactionOutcome::Verified),
                Some(ExecutionOutcome::Verified),
                true,
            ),
            PauseState::default(),
        )
    }

    fn halted(tx: TransactionOutcome) -> FlowReport {
        report(Some(tx), Some(ExecutionOutcome::Halted), false)
    }

    fn reason_of(e: &Evidence) -> Reason {
        decide(e, Proof::Local).reason
    }

    const OPEN: PauseState = PauseState {
        open: true,
        category: None,
        rejected_by_person: false,
    };
    const NO_PAUSE: PauseState = PauseState {
        open: false,
        category: None,
        rejected_by_person: false,
    };
    const REJECTED: PauseState = PauseState {
        open: false,
        category: None,
        rejected_by_person: true,
    };

    fn open_with(category: Reason) -> PauseState {
        PauseState {
            category: Some(category),
            ..OPEN
        }
    }

    const NO_EFFECT: [TransactionOutcome; 4] = [
        TransactionOutcome::HaltedBeforeEffect,
        TransactionOutcome::RejectedPolicy,
        TransactionOutcome::Canceled,
        TransactionOutcome::FailedPlatform,
    ];

    #[test]
    fn consistent_verified_exit_zero_is_done_with_the_earned_proof() {
        let d = decide(&verified(), Proof::Local);
        assert_eq!(d.reason, Reason::SavedAndChecked);
        assert_eq!(d.outcome(), Outcome::Done);
        assert_eq!(d.proof, Proof::Local);
        assert_eq!(
            decide(&verified(), Proof::Simulated).proof,
            Proof::Simulated
        );
        assert_eq!(decide(&verified(), Proof::Sealed).proof, Proof::Sealed);
        assert_eq!(decide(&verified(), Proof::None).proof, Proof::Local);
        let t = d.technical.unwrap();
        assert_eq!(t.transaction_outcome, Some(TransactionOutcome::Verified));
        assert_eq!(t.execution_outcome, Some(ExecutionOutcome::Verified));
    }

    #[test]
    fn verified_below_minimum_is_checked_below_minimum() {
        let mut r = report(
            Some(TransactionOutcome::Verified),
            Some(ExecutionOutcome::Verified),
            true,
        );
        r.below_minimum = true;
        r.checked_how = Some(CheckedHow::SameScreen);
        let d = decide(&finished(0, r, NO_PAUSE), Proof::Local);
        assert_eq!(d.reason, Reason::CheckedBelowMinimum);
        assert_eq!(d.proof, Proof::None);
        assert_eq!(d.checked_how, Some(CheckedHow::SameScreen));
    }

    #[test]
    fn halted_before_effect_takes_the_pause_category() {
        let tx = TransactionOutcome::HaltedBeforeEffect;
        for cat in [
            Reason::RecordNotConfirmed,
            Reason::UnexpectedScreen,
            Reason::PersonNeeded,
            Reason::RecordCheckNotSetUp,
            Reason::StoppedForReview,
        ] {
            assert_eq!(reason_of(&finished(1, halted(tx), open_with(cat))), cat);
            // The category counts even when the pause is not (yet) open.
            let closed = PauseState {
                category: Some(cat),
                ..NO_PAUSE
            };
            assert_eq!(reason_of(&finished(1, halted(tx), closed)), cat);
        }
        assert_eq!(
            reason_of(&finished(1, halted(tx), NO_PAUSE)),
            Reason::StoppedForReview
        );
        assert_eq!(
            reason_of(&finished(1, halted(tx), OPEN)),
            Reason::StoppedForReview
        );
        // A category that is not a stop-before-saving reason can't leak through.
        for bad in [
            Reason::SavedAndChecked,
            Reason::PlatformError,
            Reason::WaitingForApproval,
        ] {
            assert_eq!(
                reason_of(&finished(1, halted(tx), open_with(bad))),
                Reason::StoppedForReview
            );
        }
        let d = decide(
            &finished(1, halted(tx), open_with(Reason::RecordNotConfirmed)),
            Proof::Local,
        );
        assert_eq!(d.outcome(), Outcome::NeedsReview);
        assert_eq!(d.proof, Proof::None);
    }

    #[test]
    fn no_effect_report_stopped_for_approval_is_approval_needed() {
        for tx in NO_EFFECT {
            let mut r = halted(tx);
            r.approval_required = true;
            let pause = if tx == TransactionOutcome::HaltedBeforeEffect {
                NO_PAUSE
            } else {
                OPEN
            };
            assert_eq!(
                reason_of(&finished(1, r.clone(), pause)),
                Reason::ApprovalNeeded,
                "{tx}"
            );
            assert_eq!(
                reason_of(&finished(1, r, open_with(Reason::RecordNotConfirmed))),
                Reason::ApprovalNeeded
            );
        }
    }

    #[test]
    fn a_run_waiting_for_item_approval_is_waiting_for_approval() {
        let e = Evidence::Finished(FlowFinish {
            exit_code: None,
            report: None,
            pause: NO_PAUSE,
            waiting_for_approval: true,
        });
        let d = decide(&e, Proof::Local);
        assert_eq!(d.reason, Reason::WaitingForApproval);
        assert_eq!(
            RunResult::from_decision(&d, Mode::Attended, false).record_changed,
            RecordChanged::Unknown
        );
    }

    #[test]
    fn policy_cancel_platform_with_open_pause_take_the_category() {
        for tx in &NO_EFFECT[1..] {
            assert_eq!(
                reason_of(&finished(
                    1,
                    halted(*tx),
                    open_with(Reason::UnexpectedScreen)
                )),
                Reason::UnexpectedScreen
            );
            assert_eq!(
                reason_of(&finished(1, halted(*tx), OPEN)),
                Reason::StoppedForReview
            );
        }
    }

    #[test]
    fn policy_cancel_platform_without_pause_did_not_run() {
        use TransactionOutcome as T;
        for (tx, want) in [
            (T::RejectedPolicy, Reason::PolicyRefused),
            (T::Canceled, Reason::Canceled),
            (T::FailedPlatform, Reason::PlatformError),
        ] {
            let d = decide(&finished(1, halted(tx), NO_PAUSE), Proof::Local);
            assert_eq!(d.reason, want);
            assert_eq!(d.outcome(), Outcome::DidNotRun);
            assert!(d.reason.is_retryable());
            // A report without a halted execution outcome reads the same.
            assert_eq!(
                reason_of(&finished(1, report(Some(tx), None, false), NO_PAUSE)),
                want
            );
        }
    }

    #[test]
    fn any_no_effect_outcome_a_person_rejected_is_stopped_by_person() {
        for tx in NO_EFFECT {
            for pause in [
                REJECTED,
                PauseState {
                    open: true,
                    ..REJECTED
                },
                PauseState {
                    category: Some(Reason::RecordNotConfirmed),
                    ..REJECTED
                },
            ] {
                let mut r = halted(tx);
                assert_eq!(
                    reason_of(&finished(1, r.clone(), pause)),
                    Reason::StoppedByPerson
                );
                r.approval_required = true;
                assert_eq!(reason_of(&finished(1, r, pause)), Reason::StoppedByPerson);
            }
        }
        assert!(!Reason::StoppedByPerson.safe_to_retry());
    }

    #[test]
    fn uncertain_transaction_outcomes_are_not_sure_if_saved() {
        use TransactionOutcome as T;
        for (tx, exec, want) in [
            (
                T::ReconciliationRequired,
                ExecutionOutcome::Halted,
                Reason::SaveNotConfirmed,
            ),
            (
                T::SavedAwaitingCheck,
                ExecutionOutcome::CompletedUnverified,
                Reason::SaveNotConfirmed,
            ),
            (
                T::CompletedUnverified,
                ExecutionOutcome::CompletedUnverified,
                Reason::NotChecked,
            ),
            (
                T::RolledBack,
                ExecutionOutcome::RolledBack,
                Reason::ChangeReversed,
            ),
        ] {
            // Flow exits 0 only for a successful run, and a halted one is never successful.
            let success = exec == ExecutionOutcome::CompletedUnverified;
            let exits: &[i32] = if success { &[0, 1] } else { &[1] };
            for &exit in exits {
                for pause in [NO_PAUSE, OPEN, REJECTED] {
                    let d = decide(
                        &finished(exit, report(Some(tx), Some(exec), success), pause),
                        Proof::Local,
                    );
                    assert_eq!(d.reason, want, "{tx} exit {exit}");
                    assert_eq!(d.outcome(), Outcome::NotSureIfSaved);
                }
            }
        }
        let mut r = report(
            Some(T::CompletedUnverified),
            Some(ExecutionOutcome::CompletedUnverified),
            true,
        );
        r.below_minimum = true;
        assert_eq!(
            reason_of(&finished(0, r, NO_PAUSE)),
            Reason::CheckedBelowMinimum
        );
    }

    #[test]
    fn process_facts_map_directly() {
        assert_eq!(reason_of(&Evidence::TimedOut), Reason::TimedOut);
        assert_eq!(reason_of(&Evidence::Interrupted), Reason::Interrupted);
        assert_eq!(reason_of(&Evidence::LaunchFailed), Reason::PlatformError);
        for e in [
            Evidence::TimedOut,
            Evidence::Interrupted,
            Evidence::LaunchFailed,
        ] {
            let d = decide(&e, Proof::Local);
            assert_eq!(d.proof, Proof::None);
            assert!(d.failed_checks.is_empty());
            assert!(d.technical.is_none());
        }
    }

    #[test]
    fn not_ready_carries_closed_failed_checks() {
        let d = decide(
            &Evidence::NotReady {
                failed_checks: vec![
                    FailedCheck::NotCertified,
                    FailedCheck::NotEncrypted,
                    FailedCheck::NotCertified,
                ],
            },
            Proof::Local,
        );
        assert_eq!(d.reason, Reason::NotReadyToRun);
        assert_eq!(
            d.failed_checks,
            vec![FailedCheck::NotCertified, FailedCheck::NotEncrypted]
        );
        let d = decide(
            &Evidence::NotReady {
                failed_checks: vec![],
            },
            Proof::Local,
        );
        assert_eq!(d.failed_checks, vec![FailedCheck::Other]);
        let res = RunResult::from_decision(&d, Mode::Production, false);
        assert_eq!(res.to_json()["failed_checks"], json!(["other"]));
        assert_eq!(
            decide(&Evidence::Refused(Reason::NotReadyToRun), Proof::Local).failed_checks,
            vec![FailedCheck::Other]
        );
    }

    #[test]
    fn refusals_answer_their_own_reason() {
        for &r in Reason::ALL {
            let d = decide(&Evidence::Refused(r), Proof::Local);
            if r.outcome() == Outcome::DidNotRun {
                assert_eq!(d.reason, r);
            } else {
                assert_eq!(d.reason, Reason::ResultUnreadable, "{r}");
            }
            assert_eq!(d.proof, Proof::None);
        }
        let d = decide(&Evidence::Refused(Reason::RequestIdConflict), Proof::Local);
        assert_eq!(d.reason.record_changed(), RecordChanged::Unknown);
        assert!(!d.reason.safe_to_retry());
        assert!(
            !decide(&Evidence::Refused(Reason::RetryLimit), Proof::Local)
                .reason
                .safe_to_retry()
        );
    }

    #[test]
    fn missing_or_inconsistent_reports_are_unreadable() {
        use ExecutionOutcome as E;
        use TransactionOutcome as T;
        let missing = Evidence::Finished(FlowFinish {
            exit_code: Some(0),
            ..FlowFinish::default()
        });
        assert_eq!(reason_of(&missing), Reason::ResultUnreadable);
        let missing_1 = Evidence::Finished(FlowFinish {
            exit_code: Some(1),
            ..FlowFinish::default()
        });
        assert_eq!(reason_of(&missing_1), Reason::ResultUnreadable);

        let good = report(Some(T::Verified), Some(E::Verified), true);
        let cases: Vec<(&str, i32, FlowReport)> = vec![
            (
                "success true, execution halted",
                1,
                report(Some(T::HaltedBeforeEffect), Some(E::Halted), true),
            ),
            (
                "success true, no-effect transaction",
                1,
                report(Some(T::RejectedPolicy), None, true),
            ),
            (
                "success true, failed",
                1,
                report(None, Some(E::Failed), true),
            ),
            (
                "VERIFIED without an envelope",
                0,
                FlowReport {
                    envelope_consistent: false,
                    ..good.clone()
                },
            ),
            (
                "exit 0 with success false",
                0,
                halted(T::HaltedBeforeEffect),
            ),
            ("VERIFIED, exit 1", 1, good.clone()),
            ("VERIFIED, exit 2", 2, good.clone()),
            (
                "VERIFIED, success false",
                0,
                report(Some(T::Verified), Some(E::Verified), false),
            ),
            (
                "VERIFIED, success missing",
                0,
                FlowReport {
                    success: None,
                    ..good.clone()
                },
            ),
            (
                "transaction VERIFIED, execution halted",
                0,
                report(Some(T::Verified), Some(E::Halted), true),
            ),
            (
                "transaction VERIFIED, no execution",
                0,
                report(Some(T::Verified), None, true),
            ),
            (
                "execution VERIFIED, transaction halted",
                1,
                report(Some(T::HaltedBeforeEffect), Some(E::Verified), true),
            ),
            (
                "execution without success",
                1,
                FlowReport {
                    success: None,
                    ..halted(T::HaltedBeforeEffect)
                },
            ),
        ];
        for (why, exit, r) in cases {
            for pause in [
                NO_PAUSE,
                OPEN,
                REJECTED,
                open_with(Reason::RecordNotConfirmed),
            ] {
                let d = decide(&finished(exit, r.clone(), pause), Proof::Local);
                assert_eq!(d.reason, Reason::ResultUnreadable, "{why}");
                assert_eq!(d.proof, Proof::None, "{why}");
            }
        }
        let no_exit = Evidence::Finished(FlowFinish {
            exit_code: None,
            report: Some(good),
            ..FlowFinish::default()
        });
        assert_eq!(reason_of(&no_exit), Reason::ResultUnreadable);
    }

    #[test]
    fn coarse_halted_alone_is_uncertain() {
        for exec in [
            ExecutionOutcome::Halted,
            ExecutionOutcome::Failed,
            ExecutionOutcome::RolledBack,
        ] {
            for pause in [NO_PAUSE, OPEN, REJECTED] {
                let d = decide(
                    &finished(1, report(None, Some(exec), false), pause),
                    Proof::Local,
                );
                assert_eq!(d.reason, Reason::ResultUnreadable);
                assert_eq!(d.outcome(), Outcome::NotSureIfSaved);
            }
        }
    }

    #[test]
    fn legacy_success_only_report_is_not_checked() {
        let legacy = FlowReport {
            success: Some(true),
            ..FlowReport::default()
        };
        assert_eq!(
            reason_of(&finished(0, legacy.clone(), NO_PAUSE)),
            Reason::NotChecked
        );
        assert_eq!(
            reason_of(&finished(1, legacy, NO_PAUSE)),
            Reason::ResultUnreadable
        );
        let empty = FlowReport::default();
        assert_eq!(
            reason_of(&finished(0, empty.clone(), NO_PAUSE)),
            Reason::ResultUnreadable
        );
        assert_eq!(
            reason_of(&finished(1, empty, NO_PAUSE)),
            Reason::ResultUnreadable
        );
        let failed = FlowReport {
            success: Some(false),
            ..FlowReport::default()
        };
        assert_eq!(
            reason_of(&finished(1, failed, NO_PAUSE)),
            Reason::ResultUnreadable
        );
        // A coarse VERIFIED without a transaction outcome proves no check.
        let coarse = report(None, Some(ExecutionOutcome::Verified), true);
        assert_eq!(
            reason_of(&finished(0, coarse, NO_PAUSE)),
            Reason::NotChecked
        );
    }

    #[test]
    fn the_sandbox_cases_map_as_the_reference_does() {
        use ExecutionOutcome as E;
        use TransactionOutcome as T;
        let normal = decide(&verified(), Proof::Simulated);
        assert_eq!(
            (normal.reason, normal.proof),
            (Reason::SavedAndChecked, Proof::Simulated)
        );
        let duplicate = finished(
            1,
            report(Some(T::HaltedBeforeEffect), Some(E::Halted), false),
            open_with(Reason::RecordNotConfirmed),
        );
        assert_eq!(reason_of(&duplicate), Reason::RecordNotConfirmed);
        let banner = finished(
            1,
            report(Some(T::ReconciliationRequired), Some(E::Halted), false),
            NO_PAUSE,
        );
        assert_eq!(reason_of(&banner), Reason::SaveNotConfirmed);
        assert_eq!(
            reason_of(&Evidence::Refused(Reason::AppUnreachable)),
            Reason::AppUnreachable
        );
    }

    #[test]
    fn waiting_for_approval_outranks_the_report() {
        let e = Evidence::Finished(FlowFinish {
            exit_code: Some(0),
            report: Some(report(
                Some(TransactionOutcome::Verified),
                Some(ExecutionOutcome::Verified),
                true,
            )),
            pause: REJECTED,
            waiting_for_approval: true,
        });
        assert_eq!(reason_of(&e), Reason::WaitingForApproval);
    }

    #[test]
    fn checked_how_and_technical_follow_the_report() {
        let mut r = report(
            Some(TransactionOutcome::CompletedUnverified),
            Some(ExecutionOutcome::CompletedUnverified),
            true,
        );
        r.checked_how = Some(CheckedHow::Unchecked);
        r.approval_mode = Some(ApprovalMode::NotGated);
        let d = decide(&finished(0, r.clone(), NO_PAUSE), Proof::Local);
        assert_eq!(d.checked_how, Some(CheckedHow::Unchecked));
        assert_eq!(
            d.technical.unwrap().approval_mode,
            Some(ApprovalMode::NotGated)
        );
        let res = RunResult::from_decision(&d, Mode::Production, false);
        assert_eq!(
            res.to_json()["technical"],
            json!({
                "execution_outcome": "COMPLETED_UNVERIFIED",
                "transaction_outcome": "COMPLETED_UNVERIFIED",
                "approval_mode": "not_gated",
            })
        );
        assert_eq!(res.to_json()["checked_how"], "unchecked");
        assert_eq!(res.checked_how_label.as_deref(), Some("Not checked"));
        // needs_review results don't carry checked_how.
        let mut h = halted(TransactionOutcome::HaltedBeforeEffect);
        h.checked_how = Some(CheckedHow::SameScreen);
        assert_eq!(
            decide(&finished(1, h, NO_PAUSE), Proof::Local).checked_how,
            None
        );
    }

    /// Every combination of report facts: done only from the full VERIFIED conjunction, "nothing
    /// was written" only from a consistent proven-no-effect report, proof only with done.
    #[test]
    fn sweep_of_report_facts_keeps_the_invariants() {
        use TransactionOutcome as T;
        let mut txs: Vec<Option<T>> = vec![None];
        txs.extend(T::ALL.iter().copied().map(Some));
        let mut execs: Vec<Option<ExecutionOutcome>> = vec![None];
        execs.extend(ExecutionOutcome::ALL.iter().copied().map(Some));
        let pauses = [NO_PAUSE, OPEN, REJECTED, open_with(Reason::PersonNeeded)];
        let mut n = 0;
        for exit in [None, Some(0), Some(1), Some(2)] {
            for success in [None, Some(true), Some(false)] {
                for &exec in &execs {
                    for &tx in &txs {
                        for bits in 0..8u8 {
                            for pause in pauses {
                                let r = FlowReport {
                                    success,
                                    execution_outcome: exec,
                                    transaction_outcome: tx,
                                    envelope_consistent: bits & 1 != 0,
                                    approval_required: bits & 2 != 0,
                                    below_minimum: bits & 4 != 0,
                                    ..FlowReport::default()
                                };
                                let e = Evidence::Finished(FlowFinish {
                                    exit_code: exit,
                                    report: Some(r.clone()),
                                    pause,
                                    waiting_for_approval: false,
                                });
                                let d = decide(&e, Proof::Local);
                                n += 1;
                                let done = d.outcome() == Outcome::Done;
                                assert_eq!(
                                    done,
                                    exit == Some(0)
                                        && tx == Some(T::Verified)
                                        && exec == Some(ExecutionOutcome::Verified)
                                        && success == Some(true)
                                        && r.envelope_consistent
                                        && !r.below_minimum,
                                    "{r:?} exit {exit:?}"
                                );
                                assert_eq!(d.proof != Proof::None, done);
                                if d.reason.record_changed() == RecordChanged::No
                                    || d.reason.safe_to_retry()
                                {
                                    assert!(
                                        tx.is_some_and(T::is_no_effect),
                                        "{r:?} -> {}",
                                        d.reason
                                    );
                                    assert_ne!(success, Some(true));
                                }
                                if d.reason == Reason::StoppedByPerson {
                                    assert!(pause.rejected_by_person);
                                }
                                assert!(d.failed_checks.is_empty());
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(n, 4 * 3 * 6 * 10 * 8 * 4);
    }

    #[test]
    fn attention_categories_map_to_stop_before_saving_reasons() {
        assert_eq!(
            Reason::from_attention_category("identity"),
            Reason::RecordNotConfirmed
        );
        assert_eq!(
            Reason::from_attention_category("human_required"),
            Reason::PersonNeeded
        );
        assert_eq!(
            Reason::from_attention_category("effect_unverifiable"),
            Reason::RecordCheckNotSetUp
        );
        assert_eq!(
            Reason::from_attention_category("postcondition"),
            Reason::UnexpectedScreen
        );
        assert_eq!(
            Reason::from_attention_category("anything else"),
            Reason::StoppedForReview
        );
    }

    #[test]
    fn gate_output_maps_to_closed_checks() {
        let out = "[PASS] Execution profile: ok\n\
                   [REFUSE] Certification passed: no\n  [REFUSE] Encrypted bundle: plain files\n\
                   [REFUSE] Certification passed: again\n-> RUN REFUSED (fail-closed): 2 gates";
        assert_eq!(
            parse_failed_checks(out),
            vec![FailedCheck::NotCertified, FailedCheck::NotEncrypted]
        );
        assert_eq!(
            parse_failed_checks("error: this run needs a Signed Qualification Admission"),
            vec![FailedCheck::NoReadinessTest]
        );
        assert_eq!(
            parse_failed_checks("something odd"),
            vec![FailedCheck::Other]
        );
        assert_eq!(parse_failed_checks(""), vec![FailedCheck::Other]);
        assert_eq!(
            parse_failed_checks("[REFUSE] Unknown gate: x"),
            vec![FailedCheck::Other]
        );
    }

    // ---- the result object and the schema -----------------------------------------------------

    fn load_schema() -> Value {
        let candidates = [
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/reference/sandbox-tool-schemas.json"
            ),
            "/work/shared/reference/sandbox-tool-schemas.json",
        ];
        let text = candidates
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .expect("reference/sandbox-tool-schemas.json is readable");
        serde_json::from_str(&text).expect("the schema file is JSON")
    }

    fn enum_of(schema: &Value, path: &[&str]) -> BTreeSet<String> {
        let mut v = schema;
        for key in path {
            v = &v[*key];
        }
        v.as_array()
            .unwrap_or_else(|| panic!("no enum at {path:?}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    }

    fn wire<T: Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A structural check of one serialized result against run_workflow's outputSchema.
    fn check_against_schema(schema: &Value, v: &Value) {
        let out = &schema["run_workflow"]["outputSchema"];
        let props = out["properties"].as_object().unwrap();
        let obj = v.as_object().expect("a result is an object");
        for key in out["required"].as_array().unwrap() {
            assert!(obj.contains_key(key.as_str().unwrap()), "missing {key}");
        }
        for (key, value) in obj {
            let prop = props
                .get(key)
                .unwrap_or_else(|| panic!("{key} is not in the schema"));
            let ty = &prop["type"];
            let types: Vec<&str> = match ty {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                _ => panic!("{key} has no type"),
            };
            let ok = types.iter().any(|t| match *t {
                "string" => value.is_string(),
                "null" => value.is_null(),
                "boolean" => value.is_boolean(),
                "number" => value.is_number(),
                "integer" => value.is_u64() || value.is_i64(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => false,
            });
            assert!(ok, "{key} = {value} is not {types:?}");
            if let Some(allowed) = prop.get("enum") {
                assert!(
                    allowed.as_array().unwrap().contains(value),
                    "{key} = {value} not in enum"
                );
            }
            if let Some(items) = prop.get("items") {
                for item in value.as_array().unwrap() {
                    if let Some(allowed) = items.get("enum") {
                        assert!(
                            allowed.as_array().unwrap().contains(item),
                            "{key} item {item}"
                        );
                    }
                    if let Some(req) = items.get("required") {
                        for k in req.as_array().unwrap() {
                            assert!(
                                item.get(k.as_str().unwrap()).is_some(),
                                "{key} item lacks {k}"
                            );
                        }
                    }
                }
            }
            if let Some(inner) = prop.get("properties") {
                for (k, val) in value.as_object().unwrap() {
                    let p = inner
                        .get(k)
                        .unwrap_or_else(|| panic!("{key}.{k} not in the schema"));
                    assert!(val.is_string(), "{key}.{k}");
                    if let Some(allowed) = p.get("enum") {
                        assert!(
                            allowed.as_array().unwrap().contains(val),
                            "{key}.{k} = {val}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn enum_sets_match_the_schema() {
        let schema = load_schema();
        let p = ["run_workflow", "outputSchema", "properties"];
        let prop = |name: &str, tail: &[&str]| {
            let mut path: Vec<&str> = p.to_vec();
            path.push(name);
            path.extend_from_slice(tail);
            enum_of(&schema, &path)
        };
        fn ours<T: Serialize + Copy>(all: &[T]) -> BTreeSet<String> {
            all.iter().map(|v| wire(*v)).collect()
        }
        assert_eq!(ours(Reason::ALL), prop("reason", &["enum"]));
        assert_eq!(
            ours(Reason::ALL),
            prop("needs_repair", &["properties", "halt_reason", "enum"])
        );
        assert_eq!(ours(Outcome::ALL), prop("outcome", &["enum"]));
        assert_eq!(ours(NextStep::ALL), prop("next_step", &["enum"]));
        assert_eq!(ours(RecordChanged::ALL), prop("record_changed", &["enum"]));
        assert_eq!(ours(Proof::ALL), prop("proof", &["enum"]));
        assert_eq!(ours(Mode::ALL), prop("mode", &["enum"]));
        assert_eq!(
            ours(FailedCheck::ALL),
            prop("failed_checks", &["items", "enum"])
        );
        assert_eq!(ours(CheckedHow::ALL), prop("checked_how", &["enum"]));
        assert_eq!(
            ours(SandboxEngine::ALL),
            prop("sandbox", &["properties", "engine", "enum"])
        );
        assert_eq!(
            ours(ApprovalMode::ALL),
            prop("technical", &["properties", "approval_mode", "enum"])
        );
        assert_eq!(
            ours(Mode::ALL),
            enum_of(
                &schema,
                &[
                    "list_workflows",
                    "outputSchema",
                    "properties",
                    "mode",
                    "enum"
                ]
            )
        );
        assert_eq!(
            schema["run_workflow"]["outputSchema"],
            schema["get_run"]["outputSchema"]
        );
    }

    #[test]
    fn every_reason_serializes_to_a_valid_result() {
        let schema = load_schema();
        for &r in Reason::ALL {
            for mode in Mode::ALL.iter().copied() {
                for simulated in [false, true] {
                    let bare = RunResult::new(r, mode);
                    check_against_schema(&schema, &bare.to_json());
                    let d = decide(&Evidence::Refused(r), Proof::Local);
                    let full =
                        RunResult::from_decision(&Decision { reason: r, ..d }, mode, simulated)
                            .with_ids(
                                Some("run-0123456789abcdef01234567".into()),
                                Some("req-0001".into()),
                                Some("add_triage_note".into()),
                            )
                            .with_failed_checks(FailedCheck::ALL.to_vec())
                            .with_invalid_inputs(vec![
                                InvalidInput::new("note", InputProblem::TooLong),
                                InvalidInput::unknown(),
                            ])
                            .with_needs_attention_id("0123456789abcdef01234567")
                            .with_first_run_id("run-fedcba9876543210fedcba98")
                            .mark_replayed()
                            .with_seconds(1.25)
                            .with_model_calls(0)
                            .with_checked_how(CheckedHow::SeparateSession)
                            .with_sandbox("normal", SandboxEngine::Simulated)
                            .with_technical(Technical {
                                execution_outcome: Some(ExecutionOutcome::Halted),
                                transaction_outcome: Some(TransactionOutcome::HaltedBeforeEffect),
                                approval_mode: Some(ApprovalMode::EachItem),
                            });
                    let v = full.to_json();
                    check_against_schema(&schema, &v);
                    assert_eq!(v["reason"], r.as_str());
                    assert_eq!(v["outcome"], r.outcome().as_str());
                    assert_eq!(v["contract_version"], CONTRACT_VERSION);
                    assert_eq!(v["mode"], mode.as_str());
                    assert_eq!(v.get("failed_checks").is_some(), r == Reason::NotReadyToRun);
                    assert_eq!(v.get("invalid_inputs").is_some(), r == Reason::InvalidInput);
                    assert_eq!(
                        v.get("first_run_id").is_some(),
                        r == Reason::RequestIdConflict
                    );
                    assert_eq!(
                        v.get("needs_attention_id").is_some(),
                        matches!(r.outcome(), Outcome::NeedsReview | Outcome::NotSureIfSaved)
                    );
                    assert_eq!(
                        v.get("checked_how").is_some(),
                        matches!(r.outcome(), Outcome::Done | Outcome::NotSureIfSaved)
                    );
                    let want_proof = match (r.outcome(), simulated) {
                        (Outcome::Done, true) => Proof::Simulated,
                        (Outcome::Done, false) => Proof::Local,
                        _ => Proof::None,
                    };
                    assert_eq!(v["proof"], want_proof.as_str(), "{r}");
                    let back: RunResult = serde_json::from_value(v).unwrap();
                    assert_eq!(back, full);
                }
            }
        }
    }

    #[test]
    fn bare_result_has_null_ids_and_no_optional_keys() {
        let v = RunResult::new(Reason::Running, Mode::Sandbox).to_json();
        let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let required: BTreeSet<&str> = [
            "outcome",
            "label",
            "safe_to_retry",
            "what_happened",
            "next_action",
            "next_step",
            "reason",
            "record_changed",
            "proof",
            "run_id",
            "request_id",
            "workflow",
            "mode",
            "contract_version",
        ]
        .into_iter()
        .collect();
        assert_eq!(keys, required);
        assert!(v["run_id"].is_null() && v["request_id"].is_null() && v["workflow"].is_null());
        let v = RunResult::new(Reason::InvalidInput, Mode::Sandbox).to_json();
        assert_eq!(v["invalid_inputs"], json!([]));
    }

    #[test]
    fn optional_fields_are_guarded() {
        let r = RunResult::new(Reason::StoppedForReview, Mode::Attended)
            .with_needs_attention_id("not-hex-at-all-not-hex-!")
            .with_seconds(-1.0);
        assert_eq!(r.needs_attention_id, None);
        assert_eq!(r.seconds, None);
        assert_eq!(
            RunResult::new(Reason::Running, Mode::Sandbox)
                .with_seconds(f64::NAN)
                .seconds,
            None
        );
        assert_eq!(
            RunResult::new(Reason::Running, Mode::Sandbox)
                .with_seconds(2.349)
                .seconds,
            Some(2.3)
        );
        let none =
            RunResult::new(Reason::Canceled, Mode::Production).with_technical(Technical::default());
        assert_eq!(none.technical, None);
        // Proof belongs to done only, and done never says none.
        assert_eq!(
            RunResult::new(Reason::Canceled, Mode::Production)
                .with_proof(Proof::Sealed)
                .proof,
            Proof::None
        );
        assert_eq!(
            RunResult::new(Reason::SavedAndChecked, Mode::Production).proof,
            Proof::Local
        );
        assert_eq!(
            RunResult::new(Reason::SavedAndChecked, Mode::Production)
                .with_proof(Proof::None)
                .proof,
            Proof::Local
        );
        // replayed is only ever true.
        let mut v = RunResult::new(Reason::Canceled, Mode::Production).to_json();
        v["replayed"] = json!(false);
        assert_eq!(
            serde_json::from_value::<RunResult>(v).unwrap().replayed,
            None
        );
        let v = RunResult::new(Reason::Canceled, Mode::Production)
            .mark_replayed()
            .to_json();
        assert_eq!(v["replayed"], json!(true));
    }

    #[test]
    fn wire_values_match_as_str_and_parse() {
        fn check<T: Serialize + for<'de> Deserialize<'de> + Copy + PartialEq + fmt::Debug>(
            all: &[T],
            as_str: fn(T) -> &'static str,
            parse: fn(&str) -> Option<T>,
        ) {
            for &v in all {
                assert_eq!(wire(v), as_str(v));
                assert_eq!(parse(as_str(v)), Some(v));
                let back: T = serde_json::from_value(Value::String(as_str(v).into())).unwrap();
                assert_eq!(back, v);
            }
            assert_eq!(parse("no such value"), None);
        }
        check(Outcome::ALL, Outcome::as_str, Outcome::parse);
        check(Reason::ALL, Reason::as_str, Reason::parse);
        check(NextStep::ALL, NextStep::as_str, NextStep::parse);
        check(
            RecordChanged::ALL,
            RecordChanged::as_str,
            RecordChanged::parse,
        );
        check(Proof::ALL, Proof::as_str, Proof::parse);
        check(Mode::ALL, Mode::as_str, Mode::parse);
        check(FailedCheck::ALL, FailedCheck::as_str, FailedCheck::parse);
        check(CheckedHow::ALL, CheckedHow::as_str, CheckedHow::parse);
        check(InputProblem::ALL, InputProblem::as_str, InputProblem::parse);
        check(
            SandboxEngine::ALL,
            SandboxEngine::as_str,
            SandboxEngine::parse,
        );
        check(ApprovalMode::ALL, ApprovalMode::as_str, ApprovalMode::parse);
        check(
            TransactionOutcome::ALL,
            TransactionOutcome::as_str,
            TransactionOutcome::parse,
        );
        check(
            ExecutionOutcome::ALL,
            ExecutionOutcome::as_str,
            ExecutionOutcome::parse,
        );
        assert_eq!(InputProblem::ALL.len(), 14);
        assert_eq!(
            wire(InputProblem::MustBeListedValue),
            "must be one of the listed values"
        );
        assert_eq!(TransactionOutcome::ALL.len(), 9);
        assert_eq!(ExecutionOutcome::ALL.len(), 5);
        assert_eq!(FailedCheck::ALL.len(), 15);
        assert_eq!(CheckedHow::ALL.len(), 6);
        assert_eq!(
            wire(TransactionOutcome::HaltedBeforeEffect),
            "HALTED_BEFORE_EFFECT"
        );
    }

    #[test]
    fn sandbox_and_invalid_inputs_serialize_to_the_schema_shapes() {
        let v = RunResult::new(Reason::InvalidInput, Mode::Sandbox)
            .with_invalid_inputs(vec![InvalidInput::new("note", InputProblem::Missing)])
            .with_sandbox("normal", SandboxEngine::Simulated)
            .to_json();
        assert_eq!(
            v["invalid_inputs"],
            json!([{"input": "note", "problem": "is missing"}])
        );
        assert_eq!(
            v["sandbox"],
            json!({"case": "normal", "engine": "simulated"})
        );
        assert_eq!(
            serde_json::to_value(Technical {
                transaction_outcome: Some(TransactionOutcome::Canceled),
                ..Technical::default()
            })
            .unwrap(),
            json!({"transaction_outcome": "CANCELED"})
        );
    }
}
