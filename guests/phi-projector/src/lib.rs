//! The PHI projector: turns a platform accessibility tree into the
//! `openadapt.authoring.observe/v1` wire, and a Needs Attention item into a queue card, keeping
//! only what cannot carry protected data.
//!
//! The logic works on the plain Rust types below so it is testable natively; the component glue
//! (wasm32 only) converts the WIT types into them and back.

mod card;
mod observe;

pub use card::attention_card;
pub use observe::{observe, MAX_BYTES, MAX_DEPTH, MAX_NODES, SCHEMA};

/// A rectangle in screen pixels (input) or normalized to the viewport (output).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// One accessibility node as the platform reports it; `parent` indexes the tree's node list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AxNode {
    pub parent: Option<u32>,
    pub native_id: String,
    pub role: String,
    pub control_type: Option<String>,
    pub automation_id: Option<String>,
    pub name: Option<String>,
    pub value: Option<String>,
    pub text: Option<String>,
    pub title: Option<String>,
    pub url: Option<String>,
    pub enabled: bool,
    pub focused: bool,
    pub bounds: Option<Rect>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AxTree {
    pub session_key: Vec<u8>,
    pub viewport: Rect,
    pub nodes: Vec<AxNode>,
}

/// Flow's view of one Needs Attention item. Free-text fields are protected data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttentionSource {
    pub attention_id: String,
    pub run_id: String,
    pub workflow_id: String,
    pub category: String,
    pub step_label: String,
    pub observed_text: String,
    pub evidence_paths: Vec<String>,
    pub steps_done: u32,
    pub steps_total: u32,
    pub evidence_count: u32,
    pub capability_digest: String,
    pub allowed_actions: Vec<String>,
    pub expired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionCategory {
    RecordCheck,
    Identity,
    Approval,
    UnexpectedScreen,
    ExpiredPolicy,
    NovelUi,
    Admission,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttendedAction {
    ContinueRun,
    Skip,
    Reject,
    Teach,
    Escalate,
}

/// The PHI-safe queue card. Ids that are not of their opaque shape are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueCard {
    pub attention_id: Option<String>,
    pub run_id: Option<String>,
    pub workflow_id: Option<String>,
    pub category: AttentionCategory,
    pub steps_done: u32,
    pub steps_total: u32,
    pub evidence_count: u32,
    pub has_evidence: bool,
    pub expired: bool,
    pub capability_digest: Option<String>,
    pub allowed_actions: Vec<AttendedAction>,
}

#[cfg(target_arch = "wasm32")]
mod component;

#[cfg(test)]
mod tests;
