//! The PHI projector on adversarial trees: within the caps, no canary, valid against the schema.

mod common;
use openadapt_engines::{AttendedAction, AttentionCategory, AttentionSource, AxNode, AxTree, Rect};

const CANARY: &str = "CANARY-PHI-7f3a";

fn node(parent: Option<u32>, id: &str, role: &str) -> AxNode {
    AxNode {
        parent,
        native_id: format!("{id}-{CANARY}"),
        role: role.into(),
        control_type: None,
        automation_id: None,
        name: None,
        value: Some(format!("value {CANARY}")),
        text: Some(format!("text {CANARY}")),
        title: Some(format!("title {CANARY}")),
        url: Some(format!("https://clinic.example/{CANARY}")),
        enabled: true,
        focused: false,
        bounds: Some(Rect { x: 10.0, y: 20.0, width: 100.0, height: 30.0 }),
    }
}

fn tree(nodes: Vec<AxNode>) -> AxTree {
    AxTree { session_key: b"test-session".to_vec(), viewport: Rect { x: 0.0, y: 0.0, width: 1000.0, height: 800.0 }, nodes }
}

fn schema() -> jsonschema::Validator {
    let text = include_str!("../../schemas/observe-v1.schema.json");
    jsonschema::validator_for(&serde_json::from_str(text).unwrap()).unwrap()
}

fn check(wire: &openadapt_engines::ObserveWire) -> String {
    let json = serde_json::to_string(wire).unwrap();
    assert!(!json.contains(CANARY), "canary leaked: {json}");
    assert!(json.len() <= openadapt_engines::OBSERVE_MAX_BYTES);
    assert!(wire.nodes.len() <= openadapt_engines::OBSERVE_MAX_NODES);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let errors: Vec<String> = schema().iter_errors(&value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Parents come before children.
    let mut seen = std::collections::HashSet::new();
    for n in &wire.nodes {
        if let Some(p) = &n.parent {
            assert!(seen.contains(p), "parent after child");
        }
        seen.insert(n.node_id.clone());
    }
    json
}

#[test]
fn values_titles_urls_and_unsafe_names_never_come_out() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::engines(tmp.path()).phi_projector().unwrap();
    let mut nodes = vec![node(None, "root", "window")];
    let mut save = node(Some(0), "save", "button");
    save.name = Some("Save".into());
    save.automation_id = Some("save-btn".into());
    save.control_type = Some("Button".into());
    nodes.push(save);
    for (i, bad) in [
        format!("Pay {CANARY}"),
        "jane.doe@example.org".into(),
        "Call 555-123-4567".into(),
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc".into(),
        "https://clinic.example/patient".into(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = node(Some(0), &format!("bad{i}"), "button");
        b.name = Some(bad);
        nodes.push(b);
    }
    let mut field = node(Some(0), "field", "textbox");
    field.name = Some(format!("Patient {CANARY}"));
    field.automation_id = Some("mrn-1234567".into());
    nodes.push(field);
    let wire = p.observe(&tree(nodes)).unwrap();
    check(&wire);
    assert_eq!(wire.node_count, 8);
    assert!(!wire.truncated);
    let named: Vec<&str> = wire.nodes.iter().filter_map(|n| n.name.as_deref()).collect();
    assert_eq!(named, vec!["Save"]);
    assert_eq!(wire.nodes[1].automation_id.as_deref(), Some("save-btn"));
    assert_eq!(wire.nodes[7].automation_id, None);
}

#[test]
fn node_ids_are_stable_for_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::engines(tmp.path()).phi_projector().unwrap();
    let nodes = || vec![node(None, "root", "window"), node(Some(0), "a", "button")];
    let a = p.observe(&tree(nodes())).unwrap();
    let b = p.observe(&tree(nodes())).unwrap();
    assert_eq!(a, b);
    let mut other = tree(nodes());
    other.session_key = b"another-session".to_vec();
    assert_ne!(p.observe(&other).unwrap().nodes[0].node_id, a.nodes[0].node_id);
}

#[test]
fn ten_thousand_nodes_are_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::engines(tmp.path()).phi_projector().unwrap();
    let mut nodes = vec![node(None, "root", "window")];
    nodes.extend((1..10_000).map(|i| node(Some(0), &format!("n{i}"), "button")));
    let wire = p.observe(&tree(nodes)).unwrap();
    check(&wire);
    assert!(wire.truncated);
    assert_eq!(wire.node_count as usize, wire.nodes.len());
    assert!(wire.nodes.len() <= 200);
}

#[test]
fn deep_nesting_is_cut_without_failing() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::engines(tmp.path()).phi_projector().unwrap();
    let mut nodes = vec![node(None, "root", "group")];
    nodes.extend((1..5_000u32).map(|i| node(Some(i - 1), &format!("d{i}"), "group")));
    let wire = p.observe(&tree(nodes)).unwrap();
    check(&wire);
    assert!(wire.truncated);
}

#[test]
fn attention_cards_carry_only_safe_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::engines(tmp.path()).phi_projector().unwrap();
    let item = AttentionSource {
        attention_id: "0123456789abcdef01234567".into(),
        run_id: format!("run-{CANARY}"),
        workflow_id: "workflow_0123456789abcdef01234567".into(),
        category: "record_check".into(),
        step_label: format!("Open chart of {CANARY}"),
        observed_text: format!("Patient {CANARY} DOB 01/02/1960"),
        evidence_paths: vec![format!("/home/clinic/{CANARY}/shot.png")],
        steps_done: 9,
        steps_total: 4,
        evidence_count: 0,
        capability_digest: "a".repeat(64),
        allowed_actions: vec!["continue".into(), "reject".into(), format!("{CANARY}"), "reject".into()],
        expired: false,
    };
    let card = p.attention_card(&item).unwrap();
    let json = serde_json::to_string(&card).unwrap();
    assert!(!json.contains(CANARY), "{json}");
    assert_eq!(card.attention_id.as_deref(), Some("0123456789abcdef01234567"));
    assert_eq!(card.run_id, None);
    assert_eq!(card.category, AttentionCategory::RecordCheck);
    assert_eq!(card.steps_done, 4);
    assert!(card.has_evidence);
    assert_eq!(card.allowed_actions, vec![AttendedAction::Continue, AttendedAction::Reject]);
}
