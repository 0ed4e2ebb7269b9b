//! Production mode, black-box: bundles on disk, the real binary over stdio, and a fake
//! `openadapt-flow` (tests/fixtures/fake_flow.py) that plays every report shape Flow can leave.

mod support;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::*;

const FLOW_CANARY: &str = "CANARY-FLOW-OUTPUT-5d1e";
const BUNDLE_CANARY: &str = "CANARY-BUNDLE-77aa";
/// Identifier-shaped, so the guard refuses the card that carries it.
const CARD_CANARY: &str = "CANARY-CARD-7788991";

fn fake_flow() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fake_flow.py");
    format!("python3 {}", script.canonicalize().unwrap().display())
}

/// Writes a bundle whose fake Flow plays `scenario`. Recorded values carry a canary.
fn bundle(root: &Path, dir_name: &str, scenario: &str, card: Option<Value>) -> PathBuf {
    let dir = root.join(dir_name);
    std::fs::create_dir_all(&dir).unwrap();
    let workflow = json!({
        "schema_version": 2,
        "name": format!("Clinic flow {BUNDLE_CANARY}"),
        "params": {"note": format!("recorded {BUNDLE_CANARY}"), "visit": "2024-01-01", "kind": "a", "count": "3"},
        "param_specs": {
            "note": {"type": "string", "example": BUNDLE_CANARY},
            "visit": {"type": "date"},
            "kind": {"type": "enum", "choices": ["a", "b"]},
            "count": {"type": "number"}
        },
        "steps": [{"intent": format!("open chart {BUNDLE_CANARY}")}, {"intent": "save"}],
        "manifest": {"content_digest": format!("sha256:{dir_name}")}
    });
    std::fs::write(dir.join("workflow.json"), workflow.to_string()).unwrap();
    std::fs::write(dir.join("fake-scenario"), scenario).unwrap();
    if let Some(card) = card {
        std::fs::write(dir.join("openadapt-card.json"), card.to_string()).unwrap();
    }
    dir
}

/// Validates `value` against one of the schemas under schemas/.
fn assert_schema(file: &str, value: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas").join(file);
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{file}: {errors:?}\n{value}");
}

fn inputs() -> Value {
    json!({"note": "A note", "visit": "2026-10-08", "kind": "b", "count": 2})
}

struct Server {
    client: Client,
    runs: PathBuf,
    stderr: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn production(tmp: tempfile::TempDir, bundles: &Path, extra: &[&str]) -> Server {
    let runs = tmp.path().join("runs");
    let stderr = tmp.path().join("stderr.log");
    let flow = fake_flow();
    let mut args = vec![
        "--bundles", bundles.to_str().unwrap(), "--mode", "production", "--flow-cli", &flow,
        "--url", "http://127.0.0.1:9/mockmed", "--policy", "standard", "--approval-mode", "not_gated",
        "--extra-run-arg=--profile", "--extra-run-arg=standard",
    ];
    if !extra.contains(&"--timeout") {
        args.extend_from_slice(&["--timeout", "3"]);
    }
    args.extend_from_slice(extra);
    let client = spawn_with_stderr(&runs, &args, Some(&stderr)).await;
    Server { client, runs, stderr, _tmp: tmp }
}

async fn workflows(client: &Client) -> Vec<Value> {
    let r = call(client, "list_workflows", json!({})).await;
    r.structured_content.unwrap()["workflows"].as_array().unwrap().clone()
}

async fn run(client: &Client, workflow: &str, request_id: &str) -> Value {
    structured(&call(client, "run_workflow", json!({"workflow": workflow, "inputs": inputs(), "request_id": request_id})).await)
}

#[tokio::test]
async fn every_report_shape_maps_to_its_outcome() {
    let rows: &[(&str, &str, &str, &str)] = &[
        ("verified", "done", "saved_and_checked", "local"),
        ("completed_unverified", "not_sure_if_saved", "not_checked", "none"),
        ("halted_before_effect", "needs_review", "stopped_for_review", "none"),
        ("approval_required", "needs_review", "approval_needed", "none"),
        ("reconciliation", "not_sure_if_saved", "save_not_confirmed", "none"),
        ("rolled_back", "not_sure_if_saved", "change_reversed", "none"),
        ("rejected_policy", "did_not_run", "policy_refused", "none"),
        ("canceled", "did_not_run", "canceled", "none"),
        ("failed_platform", "did_not_run", "platform_error", "none"),
        ("inconsistent_success", "not_sure_if_saved", "result_unreadable", "none"),
        ("verified_nonzero_exit", "not_sure_if_saved", "result_unreadable", "none"),
        ("verified_envelope_mismatch", "not_sure_if_saved", "result_unreadable", "none"),
        ("coarse_halted", "not_sure_if_saved", "result_unreadable", "none"),
        ("legacy_success", "not_sure_if_saved", "not_checked", "none"),
        ("below_minimum", "not_sure_if_saved", "checked_below_minimum", "none"),
        ("crash", "not_sure_if_saved", "result_unreadable", "none"),
        ("gate_refusal", "did_not_run", "not_ready_to_run", "none"),
        ("pregate_refusal", "did_not_run", "not_ready_to_run", "none"),
        ("hang", "not_sure_if_saved", "timed_out", "none"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    for (scenario, ..) in rows {
        bundle(&root, scenario, scenario, Some(json!({"name": scenario})));
    }
    let server = production(tmp, &root, &[]).await;
    for (scenario, outcome, reason, proof) in rows {
        let v = run(&server.client, scenario, &format!("req-{scenario}")).await;
        assert_eq!((v["outcome"].as_str().unwrap(), v["reason"].as_str().unwrap()), (*outcome, *reason), "{scenario}: {v}");
        assert_eq!(v["proof"], *proof, "{scenario}");
        assert_eq!(v["mode"], "production");
        let safe = matches!(*reason, "policy_refused" | "canceled" | "platform_error" | "not_ready_to_run");
        assert_eq!(v["safe_to_retry"], safe, "{scenario}");
        match *scenario {
            "gate_refusal" => assert_eq!(v["failed_checks"], json!(["not_certified", "record_check_missing"])),
            "pregate_refusal" => assert_eq!(v["failed_checks"], json!(["no_readiness_test"])),
            _ => assert!(v.get("failed_checks").is_none(), "{scenario}"),
        }
    }
    // The hung run's whole process group was stopped.
    let hang_dir = std::fs::read_dir(&server.runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("fake-child.pid").is_file())
        .expect("the hang scenario's run dir");
    let pid = std::fs::read_to_string(hang_dir.join("fake-child.pid")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let alive = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).map(|s| !s.contains(") Z ")).unwrap_or(false);
    assert!(!alive, "the hung run's child process survived the timeout");
    server.client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_gets_the_server_fixed_command_and_a_private_params_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "one", "verified", None);
    let server = production(tmp, &root, &[]).await;
    let id = workflows(&server.client).await[0]["name"].as_str().unwrap().to_string();
    assert!(id.starts_with("workflow_"), "without a card the name is the opaque id");
    let v = run(&server.client, &id, "req-argv").await;
    assert_eq!(v["outcome"], "done");
    let run_dir = server.runs.join(v["run_id"].as_str().unwrap());
    let seen: Value = serde_json::from_slice(&std::fs::read(run_dir.join("fake-seen.json")).unwrap()).unwrap();
    let argv: Vec<&str> = seen["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(argv[0], "run");
    assert_eq!(argv[1], root.join("one").to_str().unwrap());
    let after = |flag: &str| argv.iter().position(|a| *a == flag).map(|i| argv[i + 1]);
    assert_eq!(after("--run-dir"), Some(run_dir.to_str().unwrap()));
    assert_eq!(after("--url"), Some("http://127.0.0.1:9/mockmed"));
    assert_eq!(after("--policy"), Some("standard"));
    assert_eq!(after("--approval-mode"), Some("not_gated"));
    assert_eq!(after("--started-by"), Some("agent:unidentified"));
    assert_eq!(after("--profile"), Some("standard"));
    assert!(!argv.contains(&"--approve-unverified-writes"));
    assert!(!argv.iter().any(|a| a.contains("A note")), "params never travel in argv");
    assert_eq!(seen["params_mode"], 0o600);
    assert_eq!(seen["params_all_text"], true);
    assert_eq!(seen["params"], json!({"note": "A note", "visit": "2026-10-08", "kind": "b", "count": "2"}));
    assert!(!Path::new(seen["params_file"].as_str().unwrap()).exists(), "the params file is removed after the run");
    server.client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_that_cannot_start_is_a_platform_error() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "one", "verified", Some(json!({"name": "one_flow"})));
    let runs = tmp.path().join("runs");
    let args = ["--bundles", root.to_str().unwrap(), "--mode", "production", "--flow-cli", "/nonexistent/openadapt-flow"];
    let client = spawn(&runs, &args).await;
    let v = run(&client, "one_flow", "req-launch").await;
    assert_eq!((v["outcome"].as_str(), v["reason"].as_str()), (Some("did_not_run"), Some("platform_error")));
    assert_eq!(v["safe_to_retry"], true);
    client.cancel().await.unwrap();
}

fn tool_names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn tools_follow_the_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "one", "verified", None);
    let runs = tmp.path().join("runs");
    let read_only = spawn(&runs, &["--bundles", root.to_str().unwrap()]).await;
    let names = tool_names(&read_only.list_all_tools().await.unwrap());
    assert_eq!(names, ["list_workflows", "get_run", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item"]);
    let listing = call(&read_only, "list_workflows", json!({})).await.structured_content.unwrap();
    assert_eq!(listing["run_tools_enabled"], false);
    assert_eq!(listing["mode"], "production");
    read_only.cancel().await.unwrap();

    let flow = fake_flow();
    let prod = spawn(&runs, &["--bundles", root.to_str().unwrap(), "--allow-run", "--flow-cli", &flow]).await;
    let tools = prod.list_all_tools().await.unwrap();
    let names = tool_names(&tools);
    let id = crate_public_id("sha256:one");
    assert_eq!(
        names,
        ["list_workflows", "run_workflow", "get_run", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item", &format!("run_{id}")]
    );
    let legacy = tools.last().unwrap();
    assert!(legacy.description.as_deref().unwrap().contains("a retry can write twice"));
    let schema = Value::Object((*legacy.input_schema).clone());
    assert_eq!(schema["required"], json!(["count", "kind", "note", "visit"]));
    assert!(!schema.to_string().contains(BUNDLE_CANARY), "recorded values never enter a schema");
    // The deprecated tool answers the legacy status plus the contract fields.
    let a = json!({"note": "n", "visit": "2026-01-02", "kind": "a", "count": "4"});
    let r = call(&prod, &format!("run_{id}"), a).await.structured_content.unwrap();
    assert_eq!((r["status"].as_str(), r["outcome"].as_str(), r["success"].as_bool()), (Some("success"), Some("done"), Some(true)));
    assert_schema("legacy_run.output.schema.json", &r);
    assert!(legacy.output_schema.is_none(), "the older run tools declare no output schema");
    // The read-only tools' real output against their schemas.
    let report = call(&prod, "get_run_report", json!({"run_id": r["run_id"]})).await.structured_content.unwrap();
    assert_schema("legacy_run.output.schema.json", &report);
    assert_eq!(report["summary"]["steps_total"], 2);
    let wf = call(&prod, "get_workflow", json!({"workflow": id})).await.structured_content.unwrap();
    assert_schema("get_workflow.output.schema.json", &wf);
    assert_eq!((wf["step_count"].as_u64(), wf["available"].as_bool()), (Some(2), Some(true)));
    let queue = call(&prod, "list_needs_attention", json!({})).await.structured_content.unwrap();
    assert_schema("list_needs_attention.output.schema.json", &queue);
    let listing = call(&prod, "list_workflows", json!({})).await.structured_content.unwrap();
    let mut list_schema: Value = serde_json::from_slice(&std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/list_workflows.output.schema.json")).unwrap()).unwrap();
    let extra: Value = serde_json::from_slice(&std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/list_workflows.production.schema.json")).unwrap()).unwrap();
    list_schema["properties"].as_object_mut().unwrap().extend(extra["properties"].as_object().unwrap().clone());
    let errors: Vec<String> = jsonschema::validator_for(&list_schema).unwrap().iter_errors(&listing).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let missing_item = call(&prod, "get_attention_item", json!({"attention_id": "0123456789abcdef01234567"})).await;
    assert_eq!(missing_item.is_error, Some(true));
    let missing = call(&prod, &format!("run_{id}"), json!({"note": "n"})).await;
    assert_eq!(missing.is_error, Some(true), "missing parameters are refused before Flow starts");
    prod.cancel().await.unwrap();
}

fn crate_public_id(digest: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"openadapt-agent-workflow-id-v1\0");
    h.update(digest.as_bytes());
    format!("workflow_{}", &hex::encode(h.finalize())[..24])
}

#[test]
fn contradictory_flags_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let missing = tmp.path().join("missing");
    let cases: Vec<Vec<&str>> = vec![
        vec!["--mode", "production"],
        vec!["--mode", "sandbox", "--bundles", dir],
        vec!["--bundles", missing.to_str().unwrap()],
        vec!["--bundles", dir, "--allow-synthetic-recorded-defaults"],
        vec!["--allow-synthetic-recorded-defaults"],
        vec!["--mode", "attended"],
        vec!["--mode", "nonsense"],
        vec!["--no-such-flag"],
    ];
    for args in cases {
        let out = std::process::Command::new(BIN).arg("serve").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[tokio::test]
async fn cards_come_from_the_card_file_and_a_refused_card_falls_back() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    let good = json!({"name": "enter_note", "purpose": "Adds a note to the open chart.", "done_means": "The note is on the chart.",
        "inputs": {"note": {"description": "The note.", "maxLength": 40}, "kind": {"enum": ["b"]}}});
    bundle(&root, "a_good", "verified", Some(good));
    let leaky = json!({"name": "call_patient", "purpose": "Calls 555-123-4567 about the visit.", "done_means": "Called."});
    bundle(&root, "b_leaky", "verified", Some(leaky));
    let banned = json!({"name": "promise", "purpose": "Adds a note.", "done_means": "The note is guaranteed to be saved."});
    bundle(&root, "c_banned", "verified", Some(banned));
    let long = json!({"name": "long_one", "purpose": "x".repeat(301), "done_means": "Done."});
    bundle(&root, "d_long", "verified", Some(long));
    let validator = openadapt_engines::built_guest("banned_word_validator");
    let server = production(tmp, &root, &["--card-validator", validator.to_str().unwrap()]).await;
    let cards = workflows(&server.client).await;
    let names: Vec<&str> = cards.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "enter_note");
    assert_eq!(cards[0]["purpose"], "Adds a note to the open chart.");
    assert_eq!(cards[0]["inputs"]["properties"]["note"]["maxLength"], 40);
    assert_eq!(cards[0]["inputs"]["properties"]["kind"]["enum"], json!(["b"]));
    for (i, dir) in ["b_leaky", "c_banned", "d_long"].iter().enumerate() {
        let id = crate_public_id(&format!("sha256:{dir}"));
        assert_eq!(names[i + 1], id, "{dir} falls back to its default card");
    }
    // An input the card narrowed is checked against the card.
    let a = json!({"workflow": "enter_note", "inputs": {"note": "x".repeat(41), "visit": "2026-13-01", "kind": "a", "count": "many"}, "request_id": "req-card"});
    let v = structured(&call(&server.client, "run_workflow", a).await);
    assert_eq!(
        v["invalid_inputs"],
        json!([
            {"input": "count", "problem": "must be a number"},
            {"input": "kind", "problem": "must be one of the listed values"},
            {"input": "note", "problem": "is too long"},
            {"input": "visit", "problem": "must be a date like 2026-10-08"}
        ])
    );
    server.client.cancel().await.unwrap();
    let stderr = std::fs::read_to_string(&server.stderr).unwrap();
    for dir in ["b_leaky", "c_banned", "d_long"] {
        let id = crate_public_id(&format!("sha256:{dir}"));
        assert!(stderr.lines().any(|l| l.contains(&id) && l.contains("card refused")), "no warning for {dir}: {stderr}");
    }
    assert!(stderr.contains("identifier-shaped text (phone)"));
    assert!(stderr.contains("banned_word_validator.wasm (policy_refused)"));
    assert!(stderr.contains("(purpose_too_long)"));
    assert!(!stderr.contains("555-123") && !stderr.contains("guaranteed"), "warnings never repeat card text");
}

#[tokio::test]
async fn hostile_validators_leave_the_server_serving_default_cards() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "a", "verified", Some(json!({"name": "loop_forever", "purpose": "Loops.", "done_means": "Never."})));
    bundle(&root, "b", "verified", Some(json!({"name": "eat_memory", "purpose": "Eats.", "done_means": "Never."})));
    bundle(&root, "c", "verified", Some(json!({"name": "fine_card", "purpose": "Adds a note.", "done_means": "Saved."})));
    let hostile = openadapt_engines::built_guest("hostile");
    let server = production(tmp, &root, &["--card-validator", hostile.to_str().unwrap()]).await;
    let names: Vec<String> = workflows(&server.client).await.iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, [crate_public_id("sha256:a"), crate_public_id("sha256:b"), "fine_card".to_string()]);
    assert_eq!(run(&server.client, "fine_card", "req-after-hostile").await["outcome"], "done");
    server.client.cancel().await.unwrap();

    // A validator of the wrong world can't be loaded: no card file is trusted.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "c", "verified", Some(json!({"name": "fine_card", "purpose": "Adds a note.", "done_means": "Saved."})));
    let wrong = openadapt_engines::built_guest("identifier_guard");
    let server = production(tmp, &root, &["--card-validator", wrong.to_str().unwrap()]).await;
    let names: Vec<String> = workflows(&server.client).await.iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, [crate_public_id("sha256:c")]);
    server.client.cancel().await.unwrap();
}

/// Every tool output of a session with a run in every shape, as one string.
async fn session_outputs(server: &Server) -> String {
    let mut out = String::new();
    let cards = workflows(&server.client).await;
    out.push_str(&json!(cards).to_string());
    for card in &cards {
        let name = card["name"].as_str().unwrap();
        let v = run(&server.client, name, &format!("req-phi-{name}")).await;
        out.push_str(&v.to_string());
        let id = v["run_id"].clone();
        for tool in ["get_run", "get_run_report"] {
            let r = call(&server.client, tool, json!({"run_id": id})).await;
            out.push_str(&serde_json::to_string(&r).unwrap());
        }
        let wf = call(&server.client, "get_workflow", json!({"workflow": card["id"]})).await;
        out.push_str(&serde_json::to_string(&wf).unwrap());
    }
    out.push_str(&serde_json::to_string(&call(&server.client, "list_needs_attention", json!({})).await).unwrap());
    out
}

fn phi_bundles(root: &Path) {
    for scenario in ["verified", "halted_before_effect", "crash", "gate_refusal", "inconsistent_success"] {
        let card = json!({"name": scenario, "purpose": format!("Purpose {CARD_CANARY}"), "done_means": "Saved."});
        bundle(root, &format!("{scenario}-{BUNDLE_CANARY}"), scenario, Some(card));
    }
}

#[tokio::test]
async fn canaries_never_leave_without_protected_export() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    phi_bundles(&root);
    let server = production(tmp, &root, &[]).await;
    let out = session_outputs(&server).await;
    server.client.cancel().await.unwrap();
    for canary in [BUNDLE_CANARY, CARD_CANARY, FLOW_CANARY, "A note"] {
        assert!(!out.contains(canary), "{canary} reached an MCP output");
        let ledger = server.runs.join("openadapt-agent");
        for file in files_outside_app_store(&ledger) {
            if file.starts_with(ledger.join("flow")) {
                continue; // the local diagnostics the operator reads; never sent anywhere
            }
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(!text.contains(canary), "{canary} in {}", file.display());
        }
        assert!(!std::fs::read_to_string(&server.stderr).unwrap().contains(canary), "{canary} on stderr");
    }
}

#[tokio::test]
async fn protected_export_lets_raw_facts_through() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    phi_bundles(&root);
    let server = production(tmp, &root, &["--allow-protected-export"]).await;
    let out = session_outputs(&server).await;
    server.client.cancel().await.unwrap();
    assert!(out.contains(BUNDLE_CANARY), "bundle paths and labels come through");
    assert!(out.contains(FLOW_CANARY), "the report comes through");
}

#[tokio::test]
async fn a_per_call_url_needs_the_operators_override() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "one", "verified", None);
    let id = crate_public_id("sha256:one");
    let a = json!({"note": "n", "visit": "2026-01-02", "kind": "a", "count": "4", "url": "http://127.0.0.1:8/other"});
    let server = production(tempfile::tempdir().unwrap(), &root, &[]).await;
    assert_eq!(call(&server.client, &format!("run_{id}"), a.clone()).await.is_error, Some(true));
    server.client.cancel().await.unwrap();

    let server = production(tmp, &root, &["--allow-url-override"]).await;
    let r = call(&server.client, &format!("run_{id}"), a).await.structured_content.unwrap();
    assert_eq!(r["outcome"], "done");
    let seen: Value = serde_json::from_slice(
        &std::fs::read(server.runs.join(r["run_id"].as_str().unwrap()).join("fake-seen.json")).unwrap(),
    )
    .unwrap();
    let argv: Vec<&str> = seen["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let at = argv.iter().position(|a| *a == "--url").unwrap();
    assert_eq!(argv[at + 1], "http://127.0.0.1:8/other");
    assert_eq!(argv.iter().filter(|a| **a == "--url").count(), 1);
    server.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_run_in_flight_is_stopped_when_the_client_goes_away() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    bundle(&root, "slow", "hang", Some(json!({"name": "slow_flow"})));
    let server = production(tmp, &root, &["--timeout", "60"]).await;
    let a = json!({"workflow": "slow_flow", "inputs": inputs(), "request_id": "req-gone", "wait_seconds": 0});
    let v = structured(&call(&server.client, "run_workflow", a).await);
    assert_eq!(v["outcome"], "running");
    let pid_file = server.runs.join(v["run_id"].as_str().unwrap()).join("fake-child.pid");
    for _ in 0..100 {
        if pid_file.is_file() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    server.client.cancel().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let alive = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).map(|s| !s.contains(") Z ")).unwrap_or(false);
    assert!(!alive, "Flow's process group outlived its server");
}
