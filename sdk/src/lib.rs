//! A typed Rust client of openadapt-agent, the local MCP server that enters work in a clinic
//! app and answers one of four outcomes a calling program can act on safely.
//!
//! ```no_run
//! use openadapt_agent_sdk::{Client, Outcome, RequestId, RestartPolicy};
//! # async fn example() -> Result<(), openadapt_agent_sdk::Error> {
//! let client = Client::builder()
//!     .runs_dir("/tmp/sandbox")
//!     .managed("openadapt-agent", RestartPolicy::default()) // or .embedded() (feature `embedded`)
//!     .await?;
//! let cards = client.workflows().await?;
//! let inputs = serde_json::json!({"note": "Synthetic note.", "sandbox_case": "normal"});
//! let result = client.run(&cards[0].name, inputs, &RequestId::new("triage-0001")?).await?;
//! match result.outcome {
//!     Outcome::Done => {}
//!     Outcome::DidNotRun if result.safe_to_retry => { /* run again with the same request_id */ }
//!     _ => {
//!         for i in result.interruptions() {
//!             eprintln!("for a person: {}", i.for_person()); // never resolved by the program
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Two ways to reach the server, chosen by the builder:
//!
//! - **managed** (feature `managed`, on by default): spawns `openadapt-agent serve ...` as a
//!   child over private stdio and restarts it by a [`RestartPolicy`] when it dies. Depends on
//!   rmcp and tokio only: no wasmtime, no server crate.
//! - **embedded** (feature `embedded`): the server's bridge in this process, serving the
//!   simulated sandbox; no child, no stdio. Pulls in the server crate (and wasmtime).
//!
//! Receipts: a request_id never runs twice. Run it again after any crash or restart and the
//! stored result comes back (`replayed`); if the server died while a `run` was in flight, the
//! SDK restarts it and asks again under the same request_id, and only when that is not
//! possible answers [`Error::OutcomeUnknown`], after which calling `run` again with the same
//! request_id is safe.

mod client;
#[cfg(feature = "embedded")]
mod embedded;
mod error;
#[cfg(feature = "managed")]
mod managed;
mod types;

pub use client::{Client, ClientBuilder, ClientMode, RestartPolicy, RunEvent, RunStream, ServerStderr};
pub use error::{Error, Result};
pub use types::{
    Catalog, InvalidInput, Interruption, Mode, NextStep, Outcome, PersonTask, Proof, Reason, RecordChanged, RequestId,
    RunRef, RunResult, SandboxInfo, WorkflowCard, CONTRACT_VERSION,
};

#[cfg(test)]
mod tests;
