//! The sandbox-app world: MockMed, driven one step at a time. A session is one store and one
//! instance, because the app's screen state lives in the instance; its record store is a host
//! directory preopened read-write at `/store`. A session that trapped is never called again.

use super::{guest_call, prepare};
use crate::error::EngineError;
use crate::runtime::{Grants, Runtime, StoreState};
use std::path::Path;
use std::sync::Arc;
use wasmtime::component::Component;
use wasmtime::Store;

mod bindings {
    wasmtime::component::bindgen!({ world: "sandbox-app", path: "../wit" });
}
use bindings::exports::openadapt::engines::app as wit;

pub const STORE_GUEST_PATH: &str = "/store";

/// What MockMed does in a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultCase {
    Normal,
    DuplicateRecord,
    FalseSavedBanner,
    TimeoutAfterSave,
    AppOffline,
}

impl FaultCase {
    pub const ALL: [FaultCase; 5] = [
        FaultCase::Normal,
        FaultCase::DuplicateRecord,
        FaultCase::FalseSavedBanner,
        FaultCase::TimeoutAfterSave,
        FaultCase::AppOffline,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultCase::Normal => "normal",
            FaultCase::DuplicateRecord => "duplicate_record",
            FaultCase::FalseSavedBanner => "false_saved_banner",
            FaultCase::TimeoutAfterSave => "timeout_after_save",
            FaultCase::AppOffline => "app_offline",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppError {
    Unreachable,
    WrongStep,
    StoreFailed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Referral {
    pub record_id: String,
    pub matching_records: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveAnswer {
    Answered,
    NoAnswer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Banner {
    Saved,
    Failed,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadBack {
    pub notes_on_record: u32,
    pub note_found: bool,
}

/// The loaded MockMed component.
#[derive(Clone)]
pub struct MockMed {
    rt: Arc<Runtime>,
    pre: bindings::SandboxAppPre<StoreState>,
}

impl MockMed {
    pub(crate) fn new(rt: Arc<Runtime>, component: &Component) -> Result<Self, EngineError> {
        let pre = bindings::SandboxAppPre::new(prepare(&rt, component)?)
            .map_err(|_| EngineError::WrongWorld { expected: "openadapt:engines/app@0.1.0" })?;
        Ok(MockMed { rt, pre })
    }

    /// Opens a session on the record store in `store_dir` (created by the caller). `session_id`
    /// names this session's writes; use a fresh one per session.
    pub fn open(&self, store_dir: &Path, case: FaultCase, session_id: &str) -> Result<MockMedSession, EngineError> {
        let mut store = self.rt.store(Grants::ReadWriteDir { host: store_dir, guest: STORE_GUEST_PATH })?;
        let app = guest_call(&mut store, |s| self.pre.instantiate(s))?;
        let mut session = MockMedSession { rt: self.rt.clone(), store, app, poisoned: false };
        let case = match case {
            FaultCase::Normal => wit::FaultCase::Normal,
            FaultCase::DuplicateRecord => wit::FaultCase::DuplicateRecord,
            FaultCase::FalseSavedBanner => wit::FaultCase::FalseSavedBanner,
            FaultCase::TimeoutAfterSave => wit::FaultCase::TimeoutAfterSave,
            FaultCase::AppOffline => wit::FaultCase::AppOffline,
        };
        session.step(|app, s| app.call_open(s, case, session_id))?;
        Ok(session)
    }
}

/// One MockMed session. Every step gets its own deadline.
pub struct MockMedSession {
    rt: Arc<Runtime>,
    store: Store<StoreState>,
    app: bindings::SandboxApp,
    poisoned: bool,
}

type Step<T> = Result<Result<T, AppError>, EngineError>;

impl MockMedSession {
    fn step<T>(
        &mut self,
        call: impl FnOnce(&wit::Guest, &mut Store<StoreState>) -> wasmtime::Result<T>,
    ) -> Result<T, EngineError> {
        if self.poisoned {
            return Err(EngineError::SessionPoisoned);
        }
        self.rt.arm_deadline(&mut self.store);
        let app = self.app.openadapt_engines_app();
        let out = guest_call(&mut self.store, |s| call(app, s));
        self.poisoned = out.is_err();
        out
    }

    pub fn reachable(&mut self) -> Result<bool, EngineError> {
        self.step(|app, s| app.call_reachable(s))
    }

    pub fn open_first_referral(&mut self) -> Step<Referral> {
        Ok(self
            .step(|app, s| app.call_open_first_referral(s))?
            .map(|r| Referral { record_id: r.record_id, matching_records: r.matching_records })
            .map_err(app_error))
    }

    /// True only when exactly one record matches the referral.
    pub fn confirm_right_record(&mut self) -> Step<bool> {
        Ok(self.step(|app, s| app.call_confirm_right_record(s))?.map_err(app_error))
    }

    pub fn enter_note(&mut self, note: &str) -> Step<()> {
        Ok(self.step(|app, s| app.call_enter_note(s, note))?.map_err(app_error))
    }

    pub fn save(&mut self) -> Step<SaveAnswer> {
        Ok(self
            .step(|app, s| app.call_save(s))?
            .map(|a| match a {
                wit::SaveAnswer::Answered => SaveAnswer::Answered,
                wit::SaveAnswer::NoAnswer => SaveAnswer::NoAnswer,
            })
            .map_err(app_error))
    }

    pub fn read_banner(&mut self) -> Step<Banner> {
        Ok(self
            .step(|app, s| app.call_read_banner(s))?
            .map(|b| match b {
                wit::Banner::Saved => Banner::Saved,
                wit::Banner::Failed => Banner::Failed,
                wit::Banner::None => Banner::None,
            })
            .map_err(app_error))
    }

    /// An independent read of the record store: how many notes `record_id` holds and whether
    /// one of them is exactly `note`.
    pub fn read_back(&mut self, record_id: &str, note: &str) -> Step<ReadBack> {
        Ok(self
            .step(|app, s| app.call_read_back(s, record_id, note))?
            .map(|r| ReadBack { notes_on_record: r.notes_on_record, note_found: r.note_found })
            .map_err(app_error))
    }

    /// Whether the note this session saved is on the record with exactly `note`'s text, read
    /// from the store. Its cost does not grow with the number of notes.
    pub fn note_saved(&mut self, record_id: &str, note: &str) -> Step<bool> {
        Ok(self.step(|app, s| app.call_note_saved(s, record_id, note))?.map_err(app_error))
    }
}

fn app_error(e: wit::AppError) -> AppError {
    match e {
        wit::AppError::Unreachable => AppError::Unreachable,
        wit::AppError::WrongStep => AppError::WrongStep,
        wit::AppError::StoreFailed => AppError::StoreFailed,
    }
}
