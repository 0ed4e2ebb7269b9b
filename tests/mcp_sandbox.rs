//! The sandbox server, black-box: the real binary over stdio with rmcp's client.

mod support;
use serde_json::{json, Value};
use std::time::Duration;
use support::*;

fn field<'a>(v: &'a Value, k: &str) -> &'a Value {
    &v[k]
}

#[tokio::test]
async fn tools_are_exactly_the_three_with_their_schemas_and_hints() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["list_workflows", "run_workflow", "get_run"]);
    let reference: Value = serde_json::from_str(include_str!("reference-sandbox-tool-schemas.json")).unwrap();
    for tool in &tools {
        let reference = &reference[tool.name.as_ref()];
        let hints = tool.annotations.as_ref().unwrap();
        let r = &reference["annotations"];
        assert_eq!(hints.read_only_hint, r["readOnlyHint"].as_bool());
        assert_eq!(hints.destructive_hint, r["destructiveHint"].as_bool());
        assert_eq!(hints.idempotent_hint, r["idempotentHint"].as_bool());
        assert_eq!(hints.open_world_hint, r["openWorldHint"].as_bool());
        // Same structure as the reference's, once descriptions and $schema are set aside.
        let strip = |v: &Value| -> Value {
            fn go(v: &Value) -> Value {
                match v {
                    Value::Object(m) => Value::Object(
                        m.iter()
                            .filter(|(k, _)| k.as_str() != "description" && k.as_str() != "$schema" && k.as_str() != "title")
                            .map(|(k, v)| (k.clone(), go(v)))
                            .collect(),
                    ),
                    Value::Array(a) => Value::Array(a.iter().map(go).collect()),
                    other => other.clone(),
                }
            }
            go(v)
        };
        assert_eq!(strip(&Value::Object((*tool.input_schema).clone())), reference["inputSchema"], "{}", tool.name);
        let out = Value::Object((**tool.output_schema.as_ref().unwrap()).clone());
        assert_eq!(strip(&out), reference["outputSchema"], "{}", tool.name);
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_workflows_shows_the_sandbox_card() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let result = call(&client, "list_workflows", json!({})).await;
    let v = result.structured_content.unwrap();
    assert_eq!(v["mode"], "sandbox");
    assert_eq!(v["run_tools_enabled"], true);
    let card = &v["workflows"][0];
    assert_eq!(card["name"], "add_triage_note");
    let reference: Value = serde_json::from_str(include_str!("reference-sandbox-tool-schemas.json")).unwrap();
    let strip_desc = |mut v: Value| {
        for p in v["properties"].as_object_mut().unwrap().values_mut() {
            p.as_object_mut().unwrap().remove("description");
        }
        v
    };
    assert_eq!(strip_desc(card["inputs"].clone()), reference["_sandbox_workflow_inputs"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_sandbox_case_answers_its_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let cases = [
        ("normal", "done", "saved_and_checked", false, "yes", "simulated"),
        ("duplicate_record", "needs_review", "record_not_confirmed", false, "no", "none"),
        ("false_saved_banner", "not_sure_if_saved", "save_not_confirmed", false, "unknown", "none"),
        ("timeout_after_save", "not_sure_if_saved", "save_not_confirmed", false, "unknown", "none"),
        ("app_offline", "did_not_run", "app_unreachable", true, "no", "none"),
    ];
    for (case, outcome, reason, retry, changed, proof) in cases {
        let request_id = format!("case-{case}");
        let v = structured(&call(&client, "run_workflow", run_args("Synthetic note.", case, &request_id)).await);
        assert_eq!(field(&v, "outcome"), outcome, "{case}");
        assert_eq!(v["reason"], reason, "{case}");
        assert_eq!(v["safe_to_retry"], retry, "{case}");
        assert_eq!(v["record_changed"], changed, "{case}");
        assert_eq!(v["proof"], proof, "{case}");
        assert_eq!(v["mode"], "sandbox");
        assert_eq!(v["request_id"], request_id.as_str());
        assert_eq!(v["workflow"], "add_triage_note");
        assert_eq!(v["sandbox"], json!({"case": case, "engine": "simulated"}));
        assert!(v["what_happened"].as_str().unwrap().starts_with("Simulated sandbox result"), "{case}");
        assert!(v.get("replayed").is_none());
        let run_id = v["run_id"].as_str().unwrap();
        assert!(run_id.starts_with("run-") && run_id.len() == 28);
        // get_run reads the same result back.
        let again = structured(&call(&client, "get_run", json!({"run_id": run_id})).await);
        assert_eq!(again, v);
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_repeat_replays_and_other_inputs_conflict() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let first = structured(&call(&client, "run_workflow", run_args("One note.", "normal", "req-replay-1")).await);
    assert_eq!(first["outcome"], "done");
    let replay = structured(&call(&client, "run_workflow", run_args("One note.", "normal", "req-replay-1")).await);
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["run_id"], first["run_id"]);
    // The default and the explicit default fingerprint the same.
    let implicit = json!({"workflow": "add_triage_note", "inputs": {"note": "One note."}, "request_id": "req-replay-1"});
    assert_eq!(structured(&call(&client, "run_workflow", implicit).await)["run_id"], first["run_id"]);
    let conflict = structured(&call(&client, "run_workflow", run_args("Another note.", "normal", "req-replay-1")).await);
    assert_eq!(conflict["outcome"], "did_not_run");
    assert_eq!(conflict["reason"], "request_id_conflict");
    assert_eq!(conflict["record_changed"], "unknown");
    assert_eq!(conflict["safe_to_retry"], false);
    assert_eq!(conflict["first_run_id"], first["run_id"]);
    assert_ne!(conflict["run_id"], first["run_id"], "a refusal gets its own record");
    // Exactly one note was written.
    let notes = tmp.path().join("openadapt-agent/mockmed-store/notes/rec-0001");
    assert_eq!(std::fs::read_dir(notes).unwrap().count(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn retryable_refusals_retry_up_to_five_attempts() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let mut run_ids = Vec::new();
    for _ in 0..5 {
        let v = structured(&call(&client, "run_workflow", run_args("n", "app_offline", "req-retry")).await);
        assert_eq!(v["reason"], "app_unreachable");
        assert!(v.get("replayed").is_none(), "each retry is a new attempt");
        run_ids.push(v["run_id"].as_str().unwrap().to_string());
    }
    run_ids.dedup();
    assert_eq!(run_ids.len(), 5);
    let sixth = structured(&call(&client, "run_workflow", run_args("n", "app_offline", "req-retry")).await);
    assert_eq!(sixth["outcome"], "did_not_run");
    assert_eq!(sixth["reason"], "retry_limit");
    assert_eq!(sixth["safe_to_retry"], false);
    assert_eq!(sixth["record_changed"], "no");
    // Names starting with a dot are the server's spare claim files.
    let claims = std::fs::read_dir(tmp.path().join("openadapt-agent/claims"))
        .unwrap()
        .filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(claims, 5);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn invalid_inputs_are_named_with_closed_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let cases = [
        (json!({}), "note", "is missing"),
        (json!({"note": ""}), "note", "is too short"),
        (json!({"note": "x".repeat(501)}), "note", "is too long"),
        (json!({"note": 42}), "note", "must be text"),
        (json!({"note": "ok", "sandbox_case": "explode"}), "sandbox_case", "must be one of the listed values"),
        (json!({"note": "ok", "patient_mrn": "CANARY-MRN-1234"}), "(unknown)", "isn't an input of this workflow; list_workflows has the names"),
    ];
    for (i, (inputs, input, problem)) in cases.into_iter().enumerate() {
        let request_id = format!("req-invalid-{i}");
        let a = json!({"workflow": "add_triage_note", "inputs": inputs, "request_id": request_id});
        let v = structured(&call(&client, "run_workflow", a).await);
        assert_eq!(v["outcome"], "did_not_run");
        assert_eq!(v["reason"], "invalid_input");
        assert_eq!(v["safe_to_retry"], true);
        assert_eq!(v["invalid_inputs"], json!([{"input": input, "problem": problem}]));
        assert!(!v.to_string().contains("CANARY-MRN"));
        // An invalid call reserves nothing: the same id then runs normally.
        let ok = structured(&call(&client, "run_workflow", run_args("fine", "normal", &request_id)).await);
        assert_eq!(ok["outcome"], "done");
        assert!(ok.get("replayed").is_none());
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn malformed_arguments_are_tool_errors_that_echo_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let bad = [
        ("run_workflow", run_args("n", "normal", "../../etc/passwd")),
        ("run_workflow", run_args("n", "normal", "ab")),
        ("run_workflow", json!({"workflow": "drop_tables_CANARY", "inputs": {}, "request_id": "req-1234"})),
        ("run_workflow", json!({"workflow": "add_triage_note", "inputs": "CANARY", "request_id": "req-1234"})),
        ("run_workflow", json!({"workflow": "add_triage_note", "inputs": {}, "request_id": "req-1234", "extra": 1})),
        ("run_workflow", json!({"workflow": "add_triage_note", "inputs": {}, "request_id": "req-1234", "wait_seconds": 601})),
        ("get_run", json!({"run_id": "../../etc/passwd"})),
        ("get_run", json!({"run_id": "run-../../CANARY"})),
        ("get_run", json!({"run_id": "CANARY"})),
        ("get_run", json!({})),
        ("no_such_tool_CANARY", json!({})),
    ];
    for (tool, a) in bad {
        let sentence = tool_error(&call(&client, tool, a.clone()).await);
        assert!(!sentence.contains("CANARY") && !sentence.contains("passwd"), "{sentence}");
    }
    let unknown = tool_error(&call(&client, "get_run", json!({"run_id": "run-000000000000000000000000"})).await);
    assert_eq!(unknown, "No run with that run_id is recorded in this server's runs directory.");
    // Nothing was recorded for any of them.
    assert_eq!(std::fs::read_dir(tmp.path().join("openadapt-agent/runs")).unwrap().count(), 0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_slow_run_answers_running_then_get_run_waits_with_progress() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &["--simulated-latency-ms", "1200"]).await;
    let mut a = run_args("slow", "normal", "req-slow");
    a["wait_seconds"] = json!(0);
    let v = structured(&call(&client, "run_workflow", a).await);
    assert_eq!(v["outcome"], "running");
    assert_eq!(v["reason"], "running");
    assert_eq!(v["next_step"], "call_get_run");
    assert_eq!(v["record_changed"], "unknown");
    let run_id = v["run_id"].as_str().unwrap().to_string();
    let done = structured(&call_with_progress(&client, "get_run", json!({"run_id": run_id, "wait_seconds": 30})).await);
    assert_eq!(done["outcome"], "done");
    assert_eq!(done["run_id"], run_id.as_str());
    assert!(client.service().progress.load(std::sync::atomic::Ordering::SeqCst) >= 1, "progress while waiting");
    client.cancel().await.unwrap();
}

/// A quick attempt writes only its final record; one still going after a moment has its
/// `running` record and its request summary on disk while its call waits, for other readers.
#[tokio::test]
async fn a_long_attempt_has_a_running_record_while_its_call_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let client = spawn(tmp.path(), &["--simulated-latency-ms", "1500"]).await;
    let runs = tmp.path().join("openadapt-agent/runs");
    let running = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let records: Vec<Value> = std::fs::read_dir(&runs)
                .into_iter()
                .flatten()
                .filter_map(|e| std::fs::read(e.unwrap().path()).ok())
                .filter_map(|b| serde_json::from_slice(&b).ok())
                .collect();
            let summaries: Vec<Value> = std::fs::read_dir(tmp.path().join("openadapt-agent/requests"))
                .into_iter()
                .flatten()
                .filter_map(|e| std::fs::read(e.unwrap().path()).ok())
                .filter_map(|b| serde_json::from_slice(&b).ok())
                .collect();
            if let Some(r) = records.iter().find(|r| r["state"] == "running") {
                if summaries.iter().any(|s| s["attempts"] == json!([r["run_id"]])) {
                    return r.clone();
                }
            }
            assert!(std::time::Instant::now() < deadline, "no running record and request summary while the call waited");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (done, record) = tokio::join!(call(&client, "run_workflow", run_args("long", "normal", "req-long-running")), running);
    let done = structured(&done);
    assert_eq!(done["outcome"], "done");
    assert_eq!(record["run_id"], done["run_id"]);
    assert_eq!(record["result"]["outcome"], "running");
    // The final record replaced it.
    let on_disk: Value = serde_json::from_slice(&std::fs::read(runs.join(format!("{}.json", done["run_id"].as_str().unwrap()))).unwrap()).unwrap();
    assert_eq!(on_disk["state"], "finished");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn canaries_in_notes_never_leave_the_app_store() {
    let tmp = tempfile::tempdir().unwrap();
    let stderr = tmp.path().join("stderr.log");
    let runs = tmp.path().join("runs");
    let client = spawn_with_stderr(&runs, &[], Some(&stderr)).await;
    let mut outputs = String::new();
    for (i, case) in ["normal", "duplicate_record", "false_saved_banner", "timeout_after_save", "app_offline"].iter().enumerate() {
        let canary = format!("CANARY-PHI-{i}-e91c");
        let v = structured(&call(&client, "run_workflow", run_args(&format!("Patient {canary} note"), case, &format!("req-canary-{i}"))).await);
        outputs.push_str(&v.to_string());
        outputs.push_str(&structured(&call(&client, "get_run", json!({"run_id": v["run_id"]})).await).to_string());
        // A too-long note is refused without echoing it.
        let long = format!("{canary}{}", "x".repeat(600));
        outputs.push_str(&structured(&call(&client, "run_workflow", run_args(&long, case, &format!("req-long-{i}"))).await).to_string());
    }
    client.cancel().await.unwrap();
    assert!(!outputs.contains("CANARY-PHI"), "a canary reached a tool result");
    for file in files_outside_app_store(&runs) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("CANARY-PHI"), "canary in {}", file.display());
    }
    assert!(!std::fs::read_to_string(&stderr).unwrap().contains("CANARY-PHI"));
}
