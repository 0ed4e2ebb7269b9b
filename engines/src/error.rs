use std::path::PathBuf;

/// Why an engine call or an engine load failed. Messages are fixed sentences: they never
/// carry what a component was given or returned.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the engine did not finish before its deadline and was stopped")]
    DeadlineExceeded,
    #[error("the engine tried to use more memory than it is allowed and was stopped")]
    MemoryExceeded,
    #[error("the engine trapped")]
    Trapped,
    #[error("the engine session was stopped by an earlier failure and can't be used again")]
    SessionPoisoned,
    #[error("the engine returned output outside its contract")]
    BadOutput,
    #[error("all engine slots stayed busy for too long")]
    Busy,
    #[error("could not read the component file {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{path} is not a WebAssembly component (a core module or another file)")]
    NotAComponent { path: PathBuf },
    #[error("the component does not export `{expected}`")]
    WrongWorld { expected: &'static str },
    #[error("the component imports something this host doesn't provide: {detail}")]
    UnsupportedImports { detail: String },
    #[error("the component could not be compiled: {detail}")]
    Compile { detail: String },
    #[error("the engine could not be set up: {detail}")]
    Setup { detail: String },
}

impl EngineError {
    pub(crate) fn setup(err: impl std::fmt::Display) -> Self {
        EngineError::Setup { detail: err.to_string() }
    }
}
