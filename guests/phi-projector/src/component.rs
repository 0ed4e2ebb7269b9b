//! The component glue: WIT types in, plain types through the projection, WIT types out.

wit_bindgen::generate!({ world: "phi-projector", path: "../../wit" });

use exports::openadapt::engines::projector as wit;

struct PhiProjector;

impl wit::Guest for PhiProjector {
    fn observe(tree: wit::AxTree) -> String {
        crate::observe(&crate::AxTree {
            session_key: tree.session_key,
            viewport: rect(tree.viewport),
            nodes: tree.nodes.into_iter().map(node).collect(),
        })
    }

    fn attention_card(item: wit::AttentionSource) -> wit::QueueCard {
        let card = crate::attention_card(&crate::AttentionSource {
            attention_id: item.attention_id,
            run_id: item.run_id,
            workflow_id: item.workflow_id,
            category: item.category,
            step_label: item.step_label,
            observed_text: item.observed_text,
            evidence_paths: item.evidence_paths,
            steps_done: item.steps_done,
            steps_total: item.steps_total,
            evidence_count: item.evidence_count,
            capability_digest: item.capability_digest,
            allowed_actions: item.allowed_actions,
            expired: item.expired,
        });
        wit::QueueCard {
            attention_id: card.attention_id,
            run_id: card.run_id,
            workflow_id: card.workflow_id,
            category: category(card.category),
            steps_done: card.steps_done,
            steps_total: card.steps_total,
            evidence_count: card.evidence_count,
            has_evidence: card.has_evidence,
            expired: card.expired,
            capability_digest: card.capability_digest,
            allowed_actions: card.allowed_actions.into_iter().map(action).collect(),
        }
    }
}

fn rect(r: wit::Rect) -> crate::Rect {
    crate::Rect {
        x: r.x,
        y: r.y,
        width: r.width,
        height: r.height,
    }
}

fn node(n: wit::AxNode) -> crate::AxNode {
    crate::AxNode {
        parent: n.parent,
        native_id: n.native_id,
        role: n.role,
        control_type: n.control_type,
        automation_id: n.automation_id,
        name: n.name,
        value: n.value,
        text: n.text,
        title: n.title,
        url: n.url,
        enabled: n.enabled,
        focused: n.focused,
        bounds: n.bounds.map(rect),
    }
}

fn category(c: crate::AttentionCategory) -> wit::AttentionCategory {
    use crate::AttentionCategory as C;
    match c {
        C::RecordCheck => wit::AttentionCategory::RecordCheck,
        C::Identity => wit::AttentionCategory::Identity,
        C::Approval => wit::AttentionCategory::Approval,
        C::UnexpectedScreen => wit::AttentionCategory::UnexpectedScreen,
        C::ExpiredPolicy => wit::AttentionCategory::ExpiredPolicy,
        C::NovelUi => wit::AttentionCategory::NovelUi,
        C::Admission => wit::AttentionCategory::Admission,
        C::Other => wit::AttentionCategory::Other,
    }
}

fn action(a: crate::AttendedAction) -> wit::AttendedAction {
    use crate::AttendedAction as A;
    match a {
        A::ContinueRun => wit::AttendedAction::ContinueRun,
        A::Skip => wit::AttendedAction::Skip,
        A::Reject => wit::AttendedAction::Reject,
        A::Teach => wit::AttendedAction::Teach,
        A::Escalate => wit::AttendedAction::Escalate,
    }
}

export!(PhiProjector);
