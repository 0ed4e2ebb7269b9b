//! The simulated sandbox runner: drives the MockMed component step by step, the way Flow's
//! replayer drives the real app, and reports Flow-shaped evidence for the contract to map.

use crate::contract::{
    self, CheckedHow, Evidence, FlowFinish, FlowReport, PauseState, Proof, Reason, SandboxEngine, SandboxInfo,
};
use crate::runs::ClaimFlush;
use crate::service::{RunOutput, Runner};
use openadapt_engines::{AppError, Banner, EngineError, Engines, EnginesConfig, FaultCase, MockMed, SaveAnswer};
use serde_json::{Map, Value};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Flow's transaction outcomes that the sandbox can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionOutcome {
    Verified,
    HaltedBeforeEffect,
    ReconciliationRequired,
}

/// What the sandbox saw, step by step, and the outcome Flow would have recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxEvidence {
    pub case: FaultCase,
    /// False when the app was unreachable before anything was sent.
    pub reached_app: bool,
    pub right_record: Option<bool>,
    pub save_sent: bool,
    pub save_answered: bool,
    pub banner: Option<Banner>,
    /// Whether the independent read of the store found the note.
    pub note_read_back: Option<bool>,
    /// `None` when nothing ran (the app was unreachable) or the engine failed.
    pub transaction: Option<TransactionOutcome>,
    /// The engine itself failed (a trap, a deadline, an app answer out of contract).
    pub engine_failed: bool,
}

/// Runs `add_triage_note` once on MockMed with `note`, in the record store at `store_dir`.
/// An engine failure ends the walk; `save_sent` then tells whether the store may have changed.
pub fn run_triage_note(
    mockmed: &MockMed,
    store_dir: &Path,
    case: FaultCase,
    session_id: &str,
    note: &str,
    latency: Duration,
    before_save: &dyn Fn() -> std::io::Result<()>,
) -> SandboxEvidence {
    let mut ev = SandboxEvidence {
        case,
        reached_app: false,
        right_record: None,
        save_sent: false,
        save_answered: false,
        banner: None,
        note_read_back: None,
        transaction: None,
        engine_failed: false,
    };
    if walk(mockmed, store_dir, session_id, note, latency, before_save, &mut ev).is_err() {
        ev.engine_failed = true;
        ev.transaction = None;
    }
    ev
}

/// A step the app answered out of contract, or an engine failure: either ends the walk.
struct Stop;

impl From<EngineError> for Stop {
    fn from(e: EngineError) -> Self {
        tracing::warn!(error = %e, "the sandbox engine failed");
        Stop
    }
}

impl From<AppError> for Stop {
    fn from(e: AppError) -> Self {
        tracing::warn!(error = ?e, "the sandbox app refused a step");
        Stop
    }
}

fn walk(
    mockmed: &MockMed,
    store_dir: &Path,
    session_id: &str,
    note: &str,
    latency: Duration,
    before_save: &dyn Fn() -> std::io::Result<()>,
    ev: &mut SandboxEvidence,
) -> Result<(), Stop> {
    let mut app = mockmed.open(store_dir, ev.case, session_id)?;
    if !app.reachable()? {
        return Ok(());
    }
    ev.reached_app = true;
    let referral = app.open_first_referral()??;
    let right = app.confirm_right_record()??;
    ev.right_record = Some(right);
    if !right {
        // The right-record check failed before any write: stop for a person.
        ev.transaction = Some(TransactionOutcome::HaltedBeforeEffect);
        return Ok(());
    }
    app.enter_note(note)??;
    // The save is the run's first effect: its claim is durable before it.
    before_save().map_err(|e| {
        tracing::warn!(error = %e, "the claim could not be flushed; nothing was saved");
        Stop
    })?;
    std::thread::sleep(latency);
    ev.save_sent = true;
    ev.save_answered = app.save()?? == SaveAnswer::Answered;
    std::thread::sleep(latency);
    if !ev.save_answered {
        // The save may or may not have landed; only a person checking the record can tell.
        ev.transaction = Some(TransactionOutcome::ReconciliationRequired);
        return Ok(());
    }
    ev.banner = Some(app.read_banner()??);
    let found = app.note_saved(&referral.record_id, note)??;
    ev.note_read_back = Some(found);
    ev.transaction = Some(if ev.banner == Some(Banner::Saved) && found {
        TransactionOutcome::Verified
    } else {
        TransactionOutcome::ReconciliationRequired
    });
    Ok(())
}

impl SandboxEvidence {
    /// The evidence as Flow would have reported it, for the contract to map.
    pub fn to_contract_evidence(&self) -> Evidence {
        use contract::{ExecutionOutcome as E, TransactionOutcome as T};
        if self.engine_failed {
            // Before the save nothing can have been written; after it, nobody knows.
            return if self.save_sent {
                Evidence::Finished(FlowFinish { exit_code: Some(1), report: None, pause: no_pause(), waiting_for_approval: false })
            } else {
                Evidence::LaunchFailed
            };
        }
        let Some(transaction) = self.transaction else {
            return Evidence::Refused(Reason::AppUnreachable);
        };
        let (exit_code, success, execution, transaction, pause) = match transaction {
            TransactionOutcome::Verified => (0, true, E::Verified, T::Verified, no_pause()),
            TransactionOutcome::HaltedBeforeEffect => (
                1,
                false,
                E::Halted,
                T::HaltedBeforeEffect,
                PauseState { open: true, category: Some(Reason::RecordNotConfirmed), rejected_by_person: false },
            ),
            TransactionOutcome::ReconciliationRequired => (1, false, E::Halted, T::ReconciliationRequired, no_pause()),
        };
        Evidence::Finished(FlowFinish {
            exit_code: Some(exit_code),
            report: Some(FlowReport {
                success: Some(success),
                execution_outcome: Some(execution),
                transaction_outcome: Some(transaction),
                envelope_consistent: true,
                approval_required: false,
                checked_how: (transaction == T::Verified).then_some(CheckedHow::SystemOfRecord),
                below_minimum: false,
                approval_mode: None,
                model_calls: Some(0),
            }),
            pause,
            waiting_for_approval: false,
        })
    }
}

fn no_pause() -> PauseState {
    PauseState { open: false, category: None, rejected_by_person: false }
}

/// The simulated sandbox engine: MockMed as a WASM component, its store under the runs dir.
/// The engine host is made on the first run, so starting the server costs nothing.
pub struct SimulatedSandbox {
    store_dir: PathBuf,
    cache_dir: PathBuf,
    /// How long the simulated app takes before and after a save (default none).
    latency: Duration,
    mockmed: OnceLock<Result<MockMed, String>>,
}

impl SimulatedSandbox {
    pub fn new(store_dir: PathBuf, cache_dir: PathBuf, latency: Duration) -> Self {
        SimulatedSandbox { store_dir, cache_dir, latency, mockmed: OnceLock::new() }
    }

    fn mockmed(&self) -> Result<&MockMed, &str> {
        self.mockmed
            .get_or_init(|| {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&self.store_dir)
                    .map_err(|e| format!("cannot create the MockMed store: {e}"))?;
                let config = EnginesConfig { cache_dir: Some(self.cache_dir.clone()), ..Default::default() };
                Engines::new(config).and_then(|e| e.mockmed()).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

impl Runner for SimulatedSandbox {
    fn run(&self, run_id: &str, _workflow: &str, inputs: &Map<String, Value>, _url: Option<&str>, claim: &ClaimFlush) -> RunOutput {
        let case = inputs
            .get("sandbox_case")
            .and_then(Value::as_str)
            .and_then(FaultCase::parse)
            .unwrap_or(FaultCase::Normal);
        let note = inputs.get("note").and_then(Value::as_str).unwrap_or_default();
        let mut span = crate::telemetry::child_span("engine.session", "mockmed");
        let evidence = match self.mockmed() {
            Ok(mockmed) => {
                let seen = run_triage_note(mockmed, &self.store_dir, case, run_id, note, self.latency, &|| claim.wait());
                span.set_bool("openadapt.engine.failed", seen.engine_failed);
                span.set_bool("openadapt.save_sent", seen.save_sent);
                seen.to_contract_evidence()
            }
            Err(e) => {
                tracing::error!(error = e, "the MockMed engine could not be loaded");
                Evidence::LaunchFailed
            }
        };
        span.end_with(&evidence);
        RunOutput {
            decision: contract::decide(&evidence, Proof::Simulated),
            simulated: true,
            sandbox: Some(SandboxInfo { case: case.as_str().into(), engine: SandboxEngine::Simulated }),
            model_calls: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn the_note_is_saved_only_once_the_claim_is_durable_and_never_if_it_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let config = EnginesConfig { cache_dir: Some(tmp.path().join("cache")), ..Default::default() };
        let mockmed = Engines::new(config).unwrap().mockmed().unwrap();
        let notes = || saved_notes(&store.join("notes"));

        let notes_when_asked = Cell::new(None);
        let seen = run_triage_note(&mockmed, &store, FaultCase::Normal, "s1", "Synthetic note.", Duration::ZERO, &|| {
            notes_when_asked.set(Some(notes()));
            Ok(())
        });
        assert_eq!(notes_when_asked.get(), Some(0), "the app was ready (the note a draft), nothing saved yet");
        assert_eq!(seen.transaction, Some(TransactionOutcome::Verified));
        assert_eq!(notes(), 1);

        let seen = run_triage_note(&mockmed, &store, FaultCase::Normal, "s2", "Synthetic note.", Duration::ZERO, &|| {
            Err(std::io::Error::other("the disk is gone"))
        });
        assert!(seen.reached_app && !seen.save_sent && seen.engine_failed, "{seen:?}");
        assert_eq!(seen.to_contract_evidence(), Evidence::LaunchFailed);
        assert_eq!(notes(), 1, "nothing saved");
    }

    /// Saved notes (`*.json`; drafts are not notes) under `dir`, at any depth.
    fn saved_notes(dir: &Path) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
        entries
            .map(|e| e.unwrap().path())
            .map(|p| match p.is_dir() {
                true => saved_notes(&p),
                false => usize::from(p.extension().is_some_and(|e| e == "json")),
            })
            .sum()
    }
}
