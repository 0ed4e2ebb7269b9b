//! The PHI projector world: the observe/v1 wire of an accessibility tree, and the queue card of
//! a Needs Attention item. The host re-checks the wire's caps and shape: a projector that
//! breaks its contract is an error, never a pass-through.

use super::{guest_call, prepare};
use crate::error::EngineError;
use crate::runtime::{Grants, Runtime, StoreState};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use wasmtime::component::Component;

mod bindings {
    wasmtime::component::bindgen!({ world: "phi-projector", path: "../wit" });
}
use bindings::exports::openadapt::engines::projector as wit;

pub use wit::{AttentionSource, AxNode, AxTree, Rect};

pub const OBSERVE_SCHEMA: &str = "openadapt.authoring.observe/v1";
pub const OBSERVE_MAX_NODES: usize = 200;
pub const OBSERVE_MAX_BYTES: usize = 32 * 1024;

/// The observe/v1 wire (`schemas/observe-v1.schema.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserveWire {
    pub schema: String,
    pub node_count: u32,
    pub truncated: bool,
    pub nodes: Vec<ObservedNode>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedNode {
    pub node_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub enabled: bool,
    pub focused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
}

/// Bounds normalized to the viewport, each in 0..=1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttendedAction {
    Continue,
    Skip,
    Reject,
    Teach,
    Escalate,
}

/// The PHI-safe queue card of a Needs Attention item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

#[derive(Clone)]
pub struct PhiProjector {
    rt: Arc<Runtime>,
    pre: bindings::PhiProjectorPre<StoreState>,
}

impl PhiProjector {
    pub(crate) fn new(rt: Arc<Runtime>, component: &Component) -> Result<Self, EngineError> {
        let pre = bindings::PhiProjectorPre::new(prepare(&rt, component)?)
            .map_err(|_| EngineError::WrongWorld { expected: "openadapt:engines/projector@0.1.0" })?;
        Ok(PhiProjector { rt, pre })
    }

    /// Projects `tree` to the observe/v1 wire.
    pub fn observe(&self, tree: &AxTree) -> Result<ObserveWire, EngineError> {
        let mut store = self.rt.store(Grants::Nothing)?;
        let json = guest_call(&mut store, |s| {
            let p = self.pre.instantiate(&mut *s)?;
            p.openadapt_engines_projector().call_observe(s, tree)
        })?;
        let wire: ObserveWire = serde_json::from_str(&json).map_err(|_| EngineError::BadOutput)?;
        let within_contract = json.len() <= OBSERVE_MAX_BYTES
            && wire.schema == OBSERVE_SCHEMA
            && wire.nodes.len() <= OBSERVE_MAX_NODES
            && wire.node_count as usize == wire.nodes.len()
            && wire.nodes.iter().all(|n| {
                is_node_id(&n.node_id) && n.parent.as_deref().is_none_or(is_node_id)
            });
        if within_contract {
            Ok(wire)
        } else {
            Err(EngineError::BadOutput)
        }
    }

    /// Projects a Needs Attention item to its queue card.
    pub fn attention_card(&self, item: &AttentionSource) -> Result<QueueCard, EngineError> {
        let mut store = self.rt.store(Grants::Nothing)?;
        let card = guest_call(&mut store, |s| {
            let p = self.pre.instantiate(&mut *s)?;
            p.openadapt_engines_projector().call_attention_card(s, item)
        })?;
        Ok(QueueCard {
            attention_id: card.attention_id,
            run_id: card.run_id,
            workflow_id: card.workflow_id,
            category: match card.category {
                wit::AttentionCategory::RecordCheck => AttentionCategory::RecordCheck,
                wit::AttentionCategory::Identity => AttentionCategory::Identity,
                wit::AttentionCategory::Approval => AttentionCategory::Approval,
                wit::AttentionCategory::UnexpectedScreen => AttentionCategory::UnexpectedScreen,
                wit::AttentionCategory::ExpiredPolicy => AttentionCategory::ExpiredPolicy,
                wit::AttentionCategory::NovelUi => AttentionCategory::NovelUi,
                wit::AttentionCategory::Admission => AttentionCategory::Admission,
                wit::AttentionCategory::Other => AttentionCategory::Other,
            },
            steps_done: card.steps_done,
            steps_total: card.steps_total,
            evidence_count: card.evidence_count,
            has_evidence: card.has_evidence,
            expired: card.expired,
            capability_digest: card.capability_digest,
            allowed_actions: card
                .allowed_actions
                .into_iter()
                .map(|a| match a {
                    wit::AttendedAction::ContinueRun => AttendedAction::Continue,
                    wit::AttendedAction::Skip => AttendedAction::Skip,
                    wit::AttendedAction::Reject => AttendedAction::Reject,
                    wit::AttendedAction::Teach => AttendedAction::Teach,
                    wit::AttendedAction::Escalate => AttendedAction::Escalate,
                })
                .collect(),
        })
    }
}

/// `n_` + 8 lowercase hex.
fn is_node_id(id: &str) -> bool {
    id.len() == 10 && id.starts_with("n_") && id[2..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
