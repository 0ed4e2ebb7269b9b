use super::*;
use serde_json::Value;
use std::collections::HashSet;

const CANARY: &str = "CANARY-PHI-7f3a";
const SCHEMA_FILE: &str = include_str!("../../../schemas/observe-v1.schema.json");

fn viewport() -> Rect {
    Rect {
        x: 0.0,
        y: 0.0,
        width: 1000.0,
        height: 800.0,
    }
}

fn node(parent: Option<u32>, native_id: &str, role: &str) -> AxNode {
    AxNode {
        parent,
        native_id: native_id.to_owned(),
        role: role.to_owned(),
        enabled: true,
        ..AxNode::default()
    }
}

fn tree(nodes: Vec<AxNode>) -> AxTree {
    AxTree {
        session_key: b"session-key".to_vec(),
        viewport: viewport(),
        nodes,
    }
}

/// Parses the wire and checks every invariant the schema and the contract promise.
fn checked(json: &str) -> Value {
    assert!(json.len() <= MAX_BYTES, "{} bytes", json.len());
    for needle in [CANARY, "canary", "Canary"] {
        assert!(!json.contains(needle), "{needle} leaked: {json}");
    }
    let wire: Value = serde_json::from_str(json).unwrap();
    let top = wire.as_object().unwrap();
    let mut keys: Vec<&str> = top.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["node_count", "nodes", "schema", "truncated"]);
    assert_eq!(wire["schema"], SCHEMA);
    assert!(wire["truncated"].is_boolean());
    let nodes = wire["nodes"].as_array().unwrap();
    assert!(nodes.len() <= MAX_NODES);
    assert_eq!(wire["node_count"].as_u64().unwrap() as usize, nodes.len());

    let allowed: HashSet<&str> = HashSet::from([
        "node_id",
        "parent",
        "role",
        "control_type",
        "automation_id",
        "name",
        "enabled",
        "focused",
        "bounds",
    ]);
    let mut ids = HashSet::new();
    for n in nodes {
        let n = n.as_object().unwrap();
        assert!(n.keys().all(|k| allowed.contains(k.as_str())), "{n:?}");
        let id = n["node_id"].as_str().unwrap();
        assert!(id_shape(id), "{id}");
        if let Some(parent) = n.get("parent") {
            assert!(
                ids.contains(parent.as_str().unwrap()),
                "parent after child: {n:?}"
            );
        }
        assert!(ids.insert(id.to_owned()), "repeated id {id}");
        let role = n["role"].as_str().unwrap();
        assert!(!role.is_empty() && role.len() <= 32);
        assert!(n["enabled"].is_boolean() && n["focused"].is_boolean());
        if let Some(b) = n.get("bounds") {
            let b = b.as_object().unwrap();
            assert_eq!(b.len(), 4);
            for k in ["x", "y", "w", "h"] {
                let v = b[k].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&v));
            }
        }
        if let Some(name) = n.get("name") {
            let name = name.as_str().unwrap();
            assert!(!name.chars().any(char::is_numeric) && name.chars().count() <= 32);
        }
    }
    wire
}

fn id_shape(id: &str) -> bool {
    id.len() == 10
        && id.starts_with("n_")
        && id[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn projects_a_small_tree_exactly() {
    let mut window = node(None, "win-1", "Window");
    window.title = Some("Jane Doe - Chart".into());
    window.bounds = Some(Rect {
        x: 0.0,
        y: 0.0,
        width: 1000.0,
        height: 800.0,
    });
    let mut save = node(Some(0), "btn-1", "button");
    save.control_type = Some("Button".into());
    save.automation_id = Some("save-btn".into());
    save.name = Some("  Save  ".into());
    save.focused = true;
    save.bounds = Some(Rect {
        x: 100.0,
        y: 160.0,
        width: 300.0,
        height: 40.0,
    });
    let mut field = node(Some(0), "edit-1", "edit");
    field.name = Some("Patient name".into());
    field.value = Some("Jane Doe".into());
    field.enabled = false;

    let json = observe(&tree(vec![window, save, field]));
    checked(&json);
    let win = "n_".to_owned() + &node_hex("win-1");
    let btn = "n_e05abc3a"; // sha256("session-key" 00 "btn-1"), computed independently
    let edit = "n_".to_owned() + &node_hex("edit-1");
    assert_eq!(
        json,
        format!(
            concat!(
                r#"{{"schema":"openadapt.authoring.observe/v1","node_count":3,"truncated":false,"nodes":["#,
                r#"{{"node_id":"{win}","role":"window","enabled":true,"focused":false,"bounds":{{"x":0.0,"y":0.0,"w":1.0,"h":1.0}}}},"#,
                r#"{{"node_id":"{btn}","parent":"{win}","role":"button","control_type":"Button","automation_id":"save-btn","name":"Save","enabled":true,"focused":true,"bounds":{{"x":0.1,"y":0.2,"w":0.3,"h":0.05}}}},"#,
                r#"{{"node_id":"{edit}","parent":"{win}","role":"edit","enabled":false,"focused":false}}"#,
                "]}}"
            ),
            win = win,
            btn = btn,
            edit = edit
        )
    );
}

fn node_hex(native_id: &str) -> String {
    observe::node_id(b"session-key", native_id)[2..].to_owned()
}

#[test]
fn node_ids_are_stable_per_session_key() {
    assert_eq!(observe::node_id(b"session-key", "btn-1"), "n_e05abc3a");
    assert_eq!(observe::node_id(b"", ""), "n_6e340b9c");
    assert_eq!(observe::node_id(b"k", "x"), observe::node_id(b"k", "x"));
    assert_ne!(observe::node_id(b"k1", "x"), observe::node_id(b"k2", "x"));
    // The 0x00 separator keeps key and id apart.
    assert_ne!(observe::node_id(b"ab", "c"), observe::node_id(b"a", "bc"));
}

#[test]
fn canaries_never_leave() {
    let mut nodes = vec![node(None, CANARY, "window")];
    let mut edit = node(Some(0), &format!("{CANARY}-edit"), "edit");
    edit.value = Some(CANARY.into());
    edit.text = Some(CANARY.into());
    edit.title = Some(CANARY.into());
    edit.url = Some(format!("https://example.com/{CANARY}"));
    nodes.push(edit);
    let mut text = node(Some(0), "t", "text");
    text.name = Some("Canary Phi".into());
    text.value = Some(CANARY.into());
    nodes.push(text);
    let mut label = node(Some(0), "l", "statictext");
    label.name = Some("canary".into());
    nodes.push(label);
    let mut button = node(Some(0), "b", "button");
    button.name = Some(CANARY.into());
    button.title = Some(CANARY.into());
    button.url = Some(CANARY.into());
    nodes.push(button);
    let mut link = node(Some(0), "k", "link");
    link.name = Some("Canary".into());
    link.url = Some(CANARY.into());
    nodes.push(link);

    let wire = checked(&observe(&tree(nodes)));
    assert_eq!(wire["node_count"], 6);
    assert_eq!(wire["truncated"], false);
    assert!(wire["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n.get("name").is_none()));
}

#[test]
fn button_names_that_are_identifiers_are_dropped() {
    let refused = [
        "sk_live_51H8xYzQ",
        "ghp_abcdefABCDEF",
        "jane.doe@example.com",
        "555-123-4567",
        "(555) 123-4567",
        "Call 555 1234",
        "MRN 00123456",
        "Room 12",
        "Open www.example.com",
        "Visit WWW.example.com",
        "http://x",
        "a/b",
        "Key: value",
        "Ⅻ Roman",
        "٣ Arabic digit",
        "",
        "   ",
        "This label is far too long to be a short one",
        "tab\there",
        "new\nline",
        "Save;",
        "Save\"",
    ];
    for (i, name) in refused.iter().enumerate() {
        let mut b = node(None, &format!("b{i}"), "button");
        b.name = Some((*name).to_owned());
        let json = observe(&tree(vec![b]));
        let wire = checked(&json);
        assert!(
            wire["nodes"][0].get("name").is_none(),
            "{name:?} kept: {json}"
        );
    }

    let kept = [
        "Save",
        "Save & Close",
        "Don't save",
        "OK!",
        "Next (2 of 3)",
        "Yes, continue",
        "Réessayer",
        "Sign in...",
    ];
    for (i, name) in kept.iter().enumerate() {
        for role in [
            "button",
            "MenuItem",
            "tab",
            "checkbox",
            "radio",
            "switch",
            "togglebutton",
            "splitbutton",
        ] {
            let mut b = node(None, &format!("k{i}"), role);
            b.name = Some(format!(" {name} "));
            let wire = checked(&observe(&tree(vec![b])));
            let want = if name.contains(char::is_numeric) {
                None
            } else {
                Some(*name)
            };
            assert_eq!(wire["nodes"][0]["name"].as_str(), want, "{role} {name:?}");
        }
    }
}

#[test]
fn roles_control_types_and_automation_ids() {
    let cases: [(&str, &str); 6] = [
        ("Button", "button"),
        ("menu-item_2", "menu-item_2"),
        ("push button", "unknown"),
        ("", "unknown"),
        ("a-very-long-role-name-that-goes-on-and-on", "unknown"),
        ("rôle", "unknown"),
    ];
    for (raw, want) in cases {
        let wire = checked(&observe(&tree(vec![node(None, "x", raw)])));
        assert_eq!(wire["nodes"][0]["role"], want, "{raw:?}");
    }
    assert_eq!(
        checked(&observe(&tree(vec![node(None, "x", "id5551234567")])))["nodes"][0]["role"],
        "unknown"
    );

    for (ct, keep) in [
        ("Button", true),
        ("Split_Button-2", true),
        ("Edit Box", false),
        ("", false),
        ("x".repeat(33).as_str(), false),
    ] {
        let mut n = node(None, "x", "edit");
        n.control_type = Some(ct.to_owned());
        let wire = checked(&observe(&tree(vec![n])));
        assert_eq!(
            wire["nodes"][0].get("control_type").is_some(),
            keep,
            "{ct:?}"
        );
    }

    let ids: [(&str, bool); 10] = [
        ("save-btn", true),
        ("Form1.Panel:Save_2", true),
        ("row-1234", true),
        ("row-12345", false),
        ("555-123-4567", false),
        ("step:1234", true),
        ("mrn:00123", false),
        ("patient@x.io", false),
        ("has space", false),
        ("", false),
    ];
    for (id, keep) in ids {
        let mut n = node(None, "x", "edit");
        n.automation_id = Some(id.to_owned());
        let wire = checked(&observe(&tree(vec![n])));
        assert_eq!(
            wire["nodes"][0].get("automation_id").is_some(),
            keep,
            "{id:?}"
        );
    }
    let mut n = node(None, "x", "edit");
    n.automation_id = Some("a".repeat(65));
    assert!(checked(&observe(&tree(vec![n])))["nodes"][0]
        .get("automation_id")
        .is_none());
}

#[test]
fn bounds_are_normalized_clamped_or_omitted() {
    let bounds = |b: Rect, v: Rect| {
        let mut n = node(None, "x", "pane");
        n.bounds = Some(b);
        let t = AxTree {
            session_key: vec![],
            viewport: v,
            nodes: vec![n],
        };
        checked(&observe(&t))["nodes"][0].get("bounds").cloned()
    };
    let v = Rect {
        x: 100.0,
        y: 50.0,
        width: 300.0,
        height: 700.0,
    };
    let b = bounds(
        Rect {
            x: 200.0,
            y: 50.0,
            width: 100.0,
            height: 70.0,
        },
        v,
    )
    .unwrap();
    assert_eq!(
        b,
        serde_json::json!({"x": 0.3333, "y": 0.0, "w": 0.3333, "h": 0.1})
    );
    let b = bounds(
        Rect {
            x: -500.0,
            y: 10_000.0,
            width: 1e9,
            height: -5.0,
        },
        v,
    )
    .unwrap();
    assert_eq!(
        b,
        serde_json::json!({"x": 0.0, "y": 1.0, "w": 1.0, "h": 0.0})
    );
    let b = bounds(
        Rect {
            x: 1e308,
            y: -1e308,
            width: f64::MAX,
            height: f64::MIN_POSITIVE,
        },
        v,
    )
    .unwrap();
    assert_eq!(
        b,
        serde_json::json!({"x": 1.0, "y": 0.0, "w": 1.0, "h": 0.0})
    );

    let fine = Rect {
        x: 1.0,
        y: 1.0,
        width: 1.0,
        height: 1.0,
    };
    for (b, v) in [
        (fine, Rect { width: 0.0, ..v }),
        (fine, Rect { height: 0.0, ..v }),
        (fine, Rect { width: -10.0, ..v }),
        (fine, Rect { x: f64::NAN, ..v }),
        (
            fine,
            Rect {
                height: f64::INFINITY,
                ..v
            },
        ),
        (
            Rect {
                x: f64::NAN,
                ..fine
            },
            v,
        ),
        (
            Rect {
                width: f64::NEG_INFINITY,
                ..fine
            },
            v,
        ),
    ] {
        assert_eq!(bounds(b, v), None, "{b:?} in {v:?}");
    }
}

#[test]
fn bad_parents_collisions_and_orphans_are_dropped() {
    let nodes = vec![
        node(None, "root", "window"),
        node(Some(1), "self-parent", "pane"),
        node(Some(9), "forward-parent", "pane"),
        node(Some(1), "child-of-dropped", "pane"),
        node(Some(0), "root", "pane"), // repeats the root's native id
        node(Some(4), "child-of-collision", "pane"),
        node(Some(u32::MAX), "far", "pane"),
        node(Some(0), "ok", "pane"),
    ];
    let wire = checked(&observe(&tree(nodes)));
    assert_eq!(wire["node_count"], 2);
    assert_eq!(wire["truncated"], true);
    assert_eq!(
        wire["nodes"][1]["node_id"],
        "n_".to_owned() + &node_hex("ok")
    );

    let wire = checked(&observe(&tree(vec![])));
    assert_eq!(
        (wire["node_count"].as_u64(), wire["truncated"].as_bool()),
        (Some(0), Some(false))
    );
}

#[test]
fn ten_thousand_nodes_stay_within_caps() {
    let mut nodes = vec![node(None, "root", "window")];
    for i in 1..10_000u32 {
        let mut n = node(
            Some(i / 2),
            &format!("{CANARY}-{i}"),
            if i % 3 == 0 { "button" } else { "text" },
        );
        n.name = Some(format!("Name {CANARY} {i}"));
        n.value = Some(CANARY.into());
        n.text = Some(CANARY.into());
        n.title = Some(CANARY.into());
        n.url = Some(CANARY.into());
        n.bounds = Some(Rect {
            x: f64::from(i),
            y: 1.0,
            width: 2.0,
            height: 3.0,
        });
        nodes.push(n);
    }
    let wire = checked(&observe(&tree(nodes)));
    assert_eq!(wire["node_count"], MAX_NODES);
    assert_eq!(wire["truncated"], true);
}

#[test]
fn a_deep_chain_is_cut_at_max_depth() {
    let nodes: Vec<AxNode> = (0..5_000u32)
        .map(|i| {
            let mut n = node(i.checked_sub(1), &format!("{CANARY}{i}"), "group");
            n.text = Some(CANARY.into());
            n
        })
        .collect();
    let wire = checked(&observe(&tree(nodes)));
    assert_eq!(wire["node_count"], MAX_DEPTH);
    assert_eq!(wire["truncated"], true);
}

#[test]
fn the_byte_cap_stops_before_the_node_cap() {
    let nodes: Vec<AxNode> = (0..300u32)
        .map(|i| {
            let mut n = node(None, &i.to_string(), "splitbutton");
            n.control_type = Some("C".repeat(32));
            n.automation_id = Some(format!("{}-{}", "a".repeat(50), i % 10));
            n.name = Some("Save and close the whole thing".into());
            n.bounds = Some(Rect {
                x: 123.4567,
                y: 234.5678,
                width: 345.6789,
                height: 456.789,
            });
            n
        })
        .collect();
    let json = observe(&tree(nodes));
    let wire = checked(&json);
    let count = wire["node_count"].as_u64().unwrap() as usize;
    assert!(count < MAX_NODES && count > 50, "{count}");
    assert_eq!(wire["truncated"], true);
    // Full: one more node would not have fit.
    let one = serde_json::to_string(&wire["nodes"][0]).unwrap().len();
    assert!(json.len() + one + 1 > MAX_BYTES, "{} bytes", json.len());

    // Exactly 200 fit without truncation.
    let nodes: Vec<AxNode> = (0..200u32)
        .map(|i| node(None, &i.to_string(), "pane"))
        .collect();
    let wire = checked(&observe(&tree(nodes)));
    assert_eq!(
        (wire["node_count"].as_u64(), wire["truncated"].as_bool()),
        (Some(200), Some(false))
    );
}

#[test]
fn the_schema_file_names_exactly_the_emitted_fields() {
    let schema: Value = serde_json::from_str(SCHEMA_FILE).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["properties"]["schema"]["const"], SCHEMA);
    let names = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        names(&schema["properties"]),
        ["node_count", "nodes", "schema", "truncated"]
    );
    let node = &schema["$defs"]["node"];
    assert_eq!(
        names(&node["properties"]),
        [
            "automation_id",
            "bounds",
            "control_type",
            "enabled",
            "focused",
            "name",
            "node_id",
            "parent",
            "role"
        ]
    );
    assert_eq!(
        names(&node["properties"]["bounds"]["properties"]),
        ["h", "w", "x", "y"]
    );
    assert_eq!(schema["properties"]["node_count"]["maximum"], MAX_NODES);
    for object in [&schema, node, &node["properties"]["bounds"]] {
        assert_eq!(object["additionalProperties"], false);
    }
}

fn source() -> AttentionSource {
    AttentionSource {
        attention_id: "0123456789abcdef01234567".into(),
        run_id: "run-89abcdef0123456789abcdef".into(),
        workflow_id: "workflow_fedcba9876543210fedcba98".into(),
        category: "record_check".into(),
        step_label: format!("Open chart for {CANARY}"),
        observed_text: format!("Patient {CANARY} DOB 1980-01-01 MRN 00123456"),
        evidence_paths: vec![format!("/evidence/{CANARY}.png")],
        steps_done: 3,
        steps_total: 7,
        evidence_count: 0,
        capability_digest: format!("sha256:{}", "ab".repeat(32)),
        allowed_actions: vec!["continue".into(), "skip".into(), "teach".into()],
        expired: false,
    }
}

#[test]
fn attention_card_keeps_opaque_ids_and_typed_fields() {
    let card = attention_card(&source());
    assert_eq!(
        card,
        QueueCard {
            attention_id: Some("0123456789abcdef01234567".into()),
            run_id: Some("run-89abcdef0123456789abcdef".into()),
            workflow_id: Some("workflow_fedcba9876543210fedcba98".into()),
            category: AttentionCategory::RecordCheck,
            steps_done: 3,
            steps_total: 7,
            evidence_count: 0,
            has_evidence: true,
            expired: false,
            capability_digest: Some(format!("sha256:{}", "ab".repeat(32))),
            allowed_actions: vec![
                AttendedAction::ContinueRun,
                AttendedAction::Skip,
                AttendedAction::Teach
            ],
        }
    );
    assert!(!format!("{card:?}").contains(CANARY));

    let plain_digest = "0f".repeat(32);
    let card = attention_card(&AttentionSource {
        workflow_id: "intake_referral".into(),
        capability_digest: plain_digest.clone(),
        evidence_paths: vec![],
        steps_done: 12,
        steps_total: 5,
        evidence_count: 2,
        expired: true,
        allowed_actions: vec![
            "escalate".into(),
            "nope".into(),
            "reject".into(),
            "escalate".into(),
            "CONTINUE".into(),
        ],
        ..source()
    });
    assert_eq!(card.workflow_id.as_deref(), Some("intake_referral"));
    assert_eq!(card.capability_digest, Some(plain_digest));
    assert_eq!(
        (card.steps_done, card.steps_total, card.evidence_count),
        (5, 5, 2)
    );
    assert!(card.has_evidence && card.expired);
    assert_eq!(
        card.allowed_actions,
        [AttendedAction::Escalate, AttendedAction::Reject]
    );

    let card = attention_card(&AttentionSource {
        evidence_paths: vec![],
        evidence_count: 0,
        ..source()
    });
    assert!(!card.has_evidence);
}

#[test]
fn attention_card_categories() {
    let cases = [
        ("record_check", AttentionCategory::RecordCheck),
        ("record-check", AttentionCategory::RecordCheck),
        ("identity", AttentionCategory::Identity),
        ("approval", AttentionCategory::Approval),
        ("unexpected_screen", AttentionCategory::UnexpectedScreen),
        ("expired_policy", AttentionCategory::ExpiredPolicy),
        ("novel_ui", AttentionCategory::NovelUi),
        ("admission", AttentionCategory::Admission),
        ("", AttentionCategory::Other),
        ("Identity", AttentionCategory::Other),
        (CANARY, AttentionCategory::Other),
    ];
    for (raw, want) in cases {
        assert_eq!(
            attention_card(&AttentionSource {
                category: raw.into(),
                ..source()
            })
            .category,
            want,
            "{raw}"
        );
    }
}

#[test]
fn attention_card_drops_ids_that_are_not_opaque() {
    let bad_attention = [
        CANARY,
        "0123456789ABCDEF01234567",
        "0123456789abcdef0123456",
        "0123456789abcdef012345678",
        "",
    ];
    for id in bad_attention {
        let card = attention_card(&AttentionSource {
            attention_id: id.into(),
            ..source()
        });
        assert_eq!(card.attention_id, None, "{id}");
    }
    let bad_run = [
        CANARY,
        "run-0123",
        "RUN-89abcdef0123456789abcdef",
        "run-89abcdef0123456789abcdeg",
        "89abcdef0123456789abcdef",
    ];
    for id in bad_run {
        assert_eq!(
            attention_card(&AttentionSource {
                run_id: id.into(),
                ..source()
            })
            .run_id,
            None,
            "{id}"
        );
    }
    let bad_workflow = [
        CANARY,
        "canary-phi-7f3a",
        "Intake",
        "in",
        "patient_5551234567",
        "mrn_00123456",
        "9lives",
        "_intake",
        "x".repeat(65).leak() as &str,
    ];
    for id in bad_workflow {
        assert_eq!(
            attention_card(&AttentionSource {
                workflow_id: id.into(),
                ..source()
            })
            .workflow_id,
            None,
            "{id}"
        );
    }
    let bad_digest = [
        CANARY.to_owned(),
        format!("sha256:{}", "AB".repeat(32)),
        "ab".repeat(31),
        format!("sha512:{}", "ab".repeat(32)),
    ];
    for d in bad_digest {
        let card = attention_card(&AttentionSource {
            capability_digest: d.clone(),
            ..source()
        });
        assert_eq!(card.capability_digest, None, "{d}");
    }

    let hostile = AttentionSource {
        attention_id: CANARY.into(),
        run_id: format!("run-{CANARY}"),
        workflow_id: format!("workflow_{CANARY}"),
        category: CANARY.into(),
        capability_digest: CANARY.into(),
        allowed_actions: vec![CANARY.into()],
        ..source()
    };
    let card = format!("{:?}", attention_card(&hostile));
    assert!(!card.to_lowercase().contains("canary"), "{card}");
    assert!(
        !card.contains("evidence/") && !card.contains("Patient") && !card.contains("Open chart")
    );
}
