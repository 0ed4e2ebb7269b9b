//! Shared pieces of the black-box tests: spawn the real binary, speak MCP to it with rmcp's
//! client, and check every result against the schemas.
#![allow(dead_code)]

use rmcp::model::{
    CallToolRequestParams, CallToolResult, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub const BIN: &str = env!("CARGO_BIN_EXE_openadapt-agent");

/// A client that counts the progress notifications it gets.
#[derive(Clone, Default)]
pub struct Counting {
    pub progress: Arc<AtomicUsize>,
}

impl ClientHandler for Counting {
    async fn on_progress(&self, _params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

pub type Client = RunningService<RoleClient, Counting>;

/// The server's command line for a runs dir, with its engine cache kept in the test's dir.
pub fn server_command(runs: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("serve").arg("--runs-dir").arg(runs).args(extra);
    cmd.env("XDG_CACHE_HOME", shared_cache());
    cmd
}

/// One engine cache for every test process, so only the first server compiles.
pub fn shared_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-cache")
}

pub async fn spawn(runs: &Path, extra: &[&str]) -> Client {
    spawn_with_stderr(runs, extra, None).await
}

/// Spawns a server; its stderr goes to `stderr_file` when given (for canary checks).
pub async fn spawn_with_stderr(runs: &Path, extra: &[&str], stderr_file: Option<&Path>) -> Client {
    let cmd = server_command(runs, extra);
    let stderr = match stderr_file {
        Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
        None => Stdio::inherit(),
    };
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(stderr).spawn().expect("spawn the server");
    Counting::default().serve(transport).await.expect("initialize")
}

pub fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("arguments are an object")
}

pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments)))
        .await
        .expect("a tool result, not a protocol error")
}

/// Calls with a progress token, so the server may send progress notifications.
pub async fn call_with_progress(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let meta = RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::Number(7)));
    let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments));
    params.meta = Some(meta);
    client.call_tool(params).await.expect("a tool result")
}

/// A contract result: checked against our outputSchema and the reference's, and against its
/// own text content.
pub fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "expected a contract result, got a tool error: {result:?}");
    let value = result.structured_content.clone().expect("structuredContent");
    assert_valid(&value);
    let text = match &result.content[..] {
        [block] => block.as_text().map(|t| t.text.clone()).expect("one text block"),
        other => panic!("expected one content block, got {other:?}"),
    };
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value, "text content equals structuredContent");
    value
}

/// A tool error: a fixed sentence, no structuredContent.
pub fn tool_error(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "expected a tool error: {result:?}");
    assert!(result.structured_content.is_none());
    result.content[0].as_text().expect("text").text.clone()
}

pub fn assert_valid(value: &Value) {
    static OURS: &str = include_str!("../../schemas/run_result.schema.json");
    static REFERENCE: &str = include_str!("../reference-sandbox-tool-schemas.json");
    let ours: Value = serde_json::from_str(OURS).unwrap();
    let reference: Value = serde_json::from_str::<Value>(REFERENCE).unwrap()["run_workflow"]["outputSchema"].clone();
    for (name, schema) in [("ours", ours), ("reference", reference)] {
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "result fails the {name} outputSchema: {errors:?}\n{value}");
    }
}

pub fn run_args(note: &str, case: &str, request_id: &str) -> Value {
    serde_json::json!({
        "workflow": "add_triage_note",
        "inputs": {"note": note, "sandbox_case": case},
        "request_id": request_id,
    })
}

/// Every file under `dir`, except the simulated app's own record store.
pub fn files_outside_app_store(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "mockmed-store") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
