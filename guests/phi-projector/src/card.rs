//! The PHI-safe queue card for a Needs Attention item.

use crate::{AttendedAction, AttentionCategory, AttentionSource, QueueCard};

/// Projects `item` to a queue card: ids only when of their opaque shape, typed category and
/// actions, counts. `step_label`, `observed_text` and `evidence_paths` never reach the card.
pub fn attention_card(item: &AttentionSource) -> QueueCard {
    let mut allowed_actions = Vec::new();
    for action in item.allowed_actions.iter().filter_map(|a| action(a)) {
        if !allowed_actions.contains(&action) {
            allowed_actions.push(action);
        }
    }
    QueueCard {
        attention_id: Some(&item.attention_id)
            .filter(|id| is_hex(id, 24))
            .cloned(),
        run_id: Some(&item.run_id)
            .filter(|id| id.strip_prefix("run-").is_some_and(|h| is_hex(h, 24)))
            .cloned(),
        workflow_id: Some(&item.workflow_id)
            .filter(|id| workflow_id_ok(id))
            .cloned(),
        category: category(&item.category),
        steps_done: item.steps_done.min(item.steps_total),
        steps_total: item.steps_total,
        evidence_count: item.evidence_count,
        has_evidence: item.evidence_count > 0 || !item.evidence_paths.is_empty(),
        expired: item.expired,
        capability_digest: Some(&item.capability_digest)
            .filter(|d| is_hex(d.strip_prefix("sha256:").unwrap_or(d), 64))
            .cloned(),
        allowed_actions,
    }
}

/// Exactly `len` lowercase hex digits.
fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `workflow_` and 24 lowercase hex digits, or a sandbox workflow name `[a-z][a-z0-9_]{2,63}`
/// that guard-core finds nothing in.
fn workflow_id_ok(id: &str) -> bool {
    if id.strip_prefix("workflow_").is_some_and(|h| is_hex(h, 24)) {
        return true;
    }
    let b = id.as_bytes();
    (3..=64).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && guard_core::scan(id).is_empty()
}

fn category(raw: &str) -> AttentionCategory {
    match raw {
        "record_check" | "record-check" => AttentionCategory::RecordCheck,
        "identity" => AttentionCategory::Identity,
        "approval" => AttentionCategory::Approval,
        "unexpected_screen" | "unexpected-screen" => AttentionCategory::UnexpectedScreen,
        "expired_policy" | "expired-policy" => AttentionCategory::ExpiredPolicy,
        "novel_ui" | "novel-ui" => AttentionCategory::NovelUi,
        "admission" => AttentionCategory::Admission,
        _ => AttentionCategory::Other,
    }
}

fn action(raw: &str) -> Option<AttendedAction> {
    Some(match raw {
        "continue" | "continue_run" | "continue-run" => AttendedAction::ContinueRun,
        "skip" => AttendedAction::Skip,
        "reject" => AttendedAction::Reject,
        "teach" => AttendedAction::Teach,
        "escalate" => AttendedAction::Escalate,
        _ => return None,
    })
}
