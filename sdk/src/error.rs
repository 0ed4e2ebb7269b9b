//! What a call can fail with.

/// An SDK error. A `RunResult` of any outcome (`did_not_run` included) is not an error: errors
/// are about reaching the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server went away while a `run_workflow` call was in flight, and no restarted server
    /// could be asked again within the restart policy, so whether the request ran is unknown.
    /// Calling `run` again with the same request_id is safe: it never runs twice, and answers
    /// the stored result or the honest outcome of the interrupted run.
    #[error("the server went away while request {request_id} was in flight; its outcome is unknown. Run it again with the same request_id: it never runs twice")]
    OutcomeUnknown { request_id: String },
    /// The server answered a tool error (a fixed sentence; e.g. arguments that don't match the
    /// tool's inputSchema, or a run_id the server doesn't know).
    #[error("the server refused the call: {0}")]
    Tool(String),
    /// The server could not be reached (it died and could not be restarted, or a call timed out).
    #[error("the server could not be reached: {0}")]
    Transport(String),
    /// The server could not be started.
    #[error("the server could not be started: {0}")]
    Spawn(String),
    /// A request_id must be 4 to 128 characters: a letter or digit, then letters, digits, `.`,
    /// `_`, `:` or `-`.
    #[error("a request_id must be 4 to 128 characters: a letter or digit, then letters, digits, '.', '_', ':' or '-'")]
    InvalidRequestId,
    /// The server answered something this SDK can't read.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
