//! Telemetry, black-box: the real binary exports OTLP/HTTP to a loopback receiver inside the
//! test, which decodes the protobuf payloads. Asserts spans, metrics, log records and their
//! attributes under each content policy; that canaries placed in inputs (and raw request ids)
//! never leave under `off` or `metadata`; that an unreachable or silent collector changes no
//! result; and that a secret header reaches the collector but never stderr.

mod support;
use openadapt_agent::telemetry::hash_id;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

const CANARY: &str = "CANARY-7f3a9-TRIAGE-TEXT";
const RID: &str = "RIDCANARY-51c2";
const SECRET: &str = "Bearer s3cr3t-HEADER-CANARY-0042";

// ---------------------------------------------------------------------------------------------
// A loopback OTLP/HTTP receiver: minimal HTTP/1.1 (keep-alive, content-length bodies).

#[derive(Clone, Debug)]
struct Request {
    path: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

#[derive(Clone)]
struct Receiver {
    port: u16,
    got: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    /// `answer: false` makes a collector that takes connections and never answers.
    fn start(answer: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let store = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = store.clone();
                std::thread::spawn(move || {
                    if answer {
                        serve_connection(stream, store)
                    } else {
                        hold(stream)
                    }
                });
            }
        });
        Receiver { port, got }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Request> {
        self.got.lock().unwrap().clone()
    }

    fn bodies(&self, path: &str) -> Vec<Vec<u8>> {
        self.requests().into_iter().filter(|r| r.path == path).map(|r| r.body).collect()
    }

    fn spans(&self) -> Vec<Span> {
        self.bodies("/v1/traces")
            .iter()
            .flat_map(|b| ExportTraceServiceRequest::decode(&b[..]).expect("a trace export decodes").resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    fn logs(&self) -> Vec<LogRecord> {
        self.bodies("/v1/logs")
            .iter()
            .flat_map(|b| ExportLogsServiceRequest::decode(&b[..]).expect("a logs export decodes").resource_logs)
            .flat_map(|r| r.scope_logs)
            .flat_map(|s| s.log_records)
            .collect()
    }

    /// The last export's metrics (they are cumulative), by name.
    fn metrics(&self) -> BTreeMap<String, metric::Data> {
        let mut out = BTreeMap::new();
        for body in self.bodies("/v1/metrics") {
            let req = ExportMetricsServiceRequest::decode(&body[..]).expect("a metrics export decodes");
            for m in req.resource_metrics.into_iter().flat_map(|r| r.scope_metrics).flat_map(|s| s.metrics) {
                if let Some(data) = m.data {
                    out.insert(m.name, data);
                }
            }
        }
        out
    }

    fn service_names(&self) -> Vec<String> {
        self.bodies("/v1/traces")
            .iter()
            .flat_map(|b| ExportTraceServiceRequest::decode(&b[..]).unwrap().resource_spans)
            .filter_map(|r| r.resource)
            .filter_map(|r| attr(&r.attributes, "service.name"))
            .collect()
    }

    /// Whether `needle` occurs in any export body, as raw bytes.
    fn any_body_contains(&self, path: Option<&str>, needle: &str) -> bool {
        self.requests()
            .iter()
            .filter(|r| path.is_none_or(|p| r.path == p))
            .any(|r| r.body.windows(needle.len()).any(|w| w == needle.as_bytes()))
    }
}

fn serve_connection(mut stream: TcpStream, store: Arc<Mutex<Vec<Request>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let path = lines.next().unwrap_or_default().split(' ').nth(1).unwrap_or_default().to_string();
        let headers: BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while buf.len() < head_end + len {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + len].to_vec();
        buf.drain(..head_end + len);
        store.lock().unwrap().push(Request { path, headers, body });
        let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(answer).is_err() {
            return;
        }
    }
}

/// Reads whatever comes and never answers.
fn hold(mut stream: TcpStream) {
    let mut chunk = [0u8; 16 * 1024];
    while matches!(stream.read(&mut chunk), Ok(n) if n > 0) {}
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// ---------------------------------------------------------------------------------------------
// Decoded attributes.

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    Some(match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

fn keys(attributes: &[KeyValue]) -> Vec<&str> {
    let mut k: Vec<&str> = attributes.iter().map(|kv| kv.key.as_str()).collect();
    k.sort();
    k
}

/// The counter's value per (outcome, reason).
fn counter(metrics: &BTreeMap<String, metric::Data>, name: &str) -> BTreeMap<(String, String), i64> {
    let Some(metric::Data::Sum(sum)) = metrics.get(name) else { panic!("no counter {name} in {:?}", metrics.keys()) };
    sum.data_points
        .iter()
        .map(|p| {
            let v = match p.value {
                Some(number_data_point::Value::AsInt(i)) => i,
                Some(number_data_point::Value::AsDouble(d)) => d as i64,
                None => 0,
            };
            let key = (attr(&p.attributes, "openadapt.outcome").unwrap(), attr(&p.attributes, "openadapt.reason").unwrap());
            (key, v)
        })
        .fold(BTreeMap::new(), |mut m, (k, v)| {
            *m.entry(k).or_insert(0) += v;
            m
        })
}

// ---------------------------------------------------------------------------------------------
// One session of calls against a server.

struct Session {
    results: Vec<Value>,
    stderr: String,
}

/// The calls every policy test makes, with canaries in the note and the request ids.
async fn run_calls(client: &Client) -> Vec<Value> {
    let note = format!("{CANARY} patient says hello");
    let mut out = Vec::new();
    let listing = call(client, "list_workflows", json!({})).await;
    out.push(listing.structured_content.clone().unwrap());
    let done = structured(&call(client, "run_workflow", run_args(&note, "normal", &format!("{RID}-1"))).await);
    assert_eq!(done["outcome"], "done");
    out.push(done.clone());
    let offline = structured(&call(client, "run_workflow", run_args(&note, "app_offline", &format!("{RID}-2"))).await);
    assert_eq!(offline["outcome"], "did_not_run");
    out.push(offline.clone());
    let replay = structured(&call(client, "run_workflow", run_args(&note, "normal", &format!("{RID}-1"))).await);
    assert_eq!(replay["replayed"], true);
    out.push(replay);
    let read = structured(&call(client, "get_run", json!({"run_id": offline["run_id"]})).await);
    out.push(read);
    let unknown = call(client, "no_such_tool_CANARY", json!({"note": note})).await;
    out.push(json!({"error": tool_error(&unknown)}));
    let bad = call(client, "run_workflow", json!({"workflow": "add_triage_note", "inputs": {"note": note}})).await;
    out.push(json!({"error": tool_error(&bad)}));
    out
}

async fn session(runs: &Path, extra: &[&str], env: &[(&str, &str)]) -> Session {
    let stderr_path = runs.join("server-stderr.log");
    std::fs::create_dir_all(runs).unwrap();
    let mut cmd = server_command(runs, extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()))
        .spawn()
        .expect("spawn the server");
    let client = Counting::default().serve(transport).await.expect("initialize");
    let results = run_calls(&client).await;
    // Closing stdin ends the server, which flushes telemetry before it exits.
    client.cancel().await.unwrap();
    Session { results, stderr: std::fs::read_to_string(&stderr_path).unwrap() }
}

/// The spans of one policy run, checked for what every policy shares; returns them by name.
fn common_span_checks(rx: &Receiver, s: &Session) -> (Vec<Span>, Vec<Span>) {
    let spans = rx.spans();
    assert!(rx.service_names().iter().all(|n| n == "openadapt-agent") && !rx.service_names().is_empty());
    let (calls, rest): (Vec<Span>, Vec<Span>) = spans.into_iter().partition(|s| s.name.starts_with("execute_tool"));
    assert_eq!(calls.len(), 7, "one span per tool call: {:?}", calls.iter().map(|s| &s.name).collect::<Vec<_>>());
    let engines: Vec<Span> = rest.into_iter().filter(|s| s.name == "engine.session").collect();
    assert_eq!(engines.len(), 2, "one engine session per run that started");

    let outcome = |s: &Span| (attr(&s.attributes, "openadapt.outcome").unwrap(), attr(&s.attributes, "openadapt.reason").unwrap());
    let mut seen: Vec<(String, String)> = calls.iter().map(outcome).collect();
    seen.sort();
    let mut want: Vec<(String, String)> = [
        ("ok", "none"),
        ("done", "saved_and_checked"),
        ("did_not_run", "app_unreachable"),
        ("done", "saved_and_checked"),
        ("did_not_run", "app_unreachable"),
        ("tool_error", "unknown_tool"),
        ("tool_error", "bad_arguments"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    want.sort();
    assert_eq!(seen, want);

    // Ids are hashed; the first run's call span is the engine session's parent.
    let run_id = s.results[1]["run_id"].as_str().unwrap();
    let first = calls
        .iter()
        .find(|c| {
            attr(&c.attributes, "openadapt.request_id.hash") == Some(hash_id(&format!("{RID}-1")))
                && attr(&c.attributes, "openadapt.replayed").is_none()
        })
        .expect("the first run's call span");
    assert_eq!(attr(&first.attributes, "openadapt.run_id.hash"), Some(hash_id(run_id)));
    let replay = calls.iter().find(|c| attr(&c.attributes, "openadapt.replayed").as_deref() == Some("true")).unwrap();
    assert_eq!(attr(&replay.attributes, "openadapt.run_id.hash"), Some(hash_id(run_id)));
    let child = engines
        .iter()
        .find(|e| e.trace_id == first.trace_id)
        .expect("the engine session is in the call's trace");
    assert_eq!(child.parent_span_id, first.span_id, "the engine session is a child of the call span");
    assert_eq!(attr(&child.attributes, "openadapt.evidence").as_deref(), Some("finished"));
    assert!(child.start_time_unix_nano >= first.start_time_unix_nano);
    let errors: Vec<&Span> = calls.iter().filter(|c| attr(&c.attributes, "openadapt.outcome").as_deref() == Some("tool_error")).collect();
    assert!(errors.iter().all(|c| c.status.as_ref().is_some_and(|st| st.code == 2)), "tool errors set an error status");
    (calls, engines)
}

fn common_metric_checks(rx: &Receiver, tool_label: bool) {
    let metrics = rx.metrics();
    let runs = counter(&metrics, "openadapt_agent.runs");
    assert_eq!(runs.get(&("done".into(), "saved_and_checked".into())), Some(&1));
    assert_eq!(runs.get(&("did_not_run".into(), "app_unreachable".into())), Some(&1));
    assert_eq!(runs.values().sum::<i64>(), 2, "a replay is not a run: {runs:?}");
    let calls = counter(&metrics, "openadapt_agent.tool_calls");
    assert_eq!(calls.values().sum::<i64>(), 7);
    let Some(metric::Data::Histogram(h)) = metrics.get("openadapt_agent.tool_call.duration") else {
        panic!("no latency histogram: {:?}", metrics.keys())
    };
    assert_eq!(h.data_points.iter().map(|p| p.count).sum::<u64>(), 7);
    for p in &h.data_points {
        let want: &[&str] = if tool_label {
            &["gen_ai.tool.name", "openadapt.mode", "openadapt.outcome", "openadapt.reason"]
        } else {
            &["openadapt.outcome", "openadapt.reason"]
        };
        assert_eq!(keys(&p.attributes), want);
    }
    let Some(metric::Data::Histogram(r)) = metrics.get("openadapt_agent.run.duration") else { panic!("no run histogram") };
    assert_eq!(r.data_points.iter().map(|p| p.count).sum::<u64>(), 2);
}

fn common_log_checks(rx: &Receiver) -> Vec<LogRecord> {
    let records: Vec<LogRecord> =
        rx.logs().into_iter().filter(|r| r.event_name == "openadapt_agent.tool_call").collect();
    assert_eq!(records.len(), 7, "one log record per tool call");
    assert!(records.iter().all(|r| !r.trace_id.is_empty()), "records carry their call's trace");
    records
}

fn assert_no_canaries(rx: &Receiver, path: Option<&str>, run_ids: &[&str]) {
    assert!(!rx.requests().is_empty(), "the receiver got exports");
    for needle in [CANARY, RID, "patient says hello", "no_such_tool"] {
        assert!(!rx.any_body_contains(path, needle), "{needle} left the server");
    }
    for id in run_ids {
        assert!(!rx.any_body_contains(path, id), "a raw run id left the server");
    }
}

fn run_ids(s: &Session) -> Vec<&str> {
    s.results.iter().filter_map(|r| r["run_id"].as_str()).collect()
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn off_exports_timings_outcomes_reasons_and_hashed_ids_only() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let s = session(tmp.path(), &["--otlp-endpoint", &rx.endpoint()], &[]).await;
    let (calls, engines) = common_span_checks(&rx, &s);
    for span in calls.iter().chain(&engines) {
        assert!(span.name == "execute_tool" || span.name == "engine.session", "{}", span.name);
        for key in keys(&span.attributes) {
            assert!(
                [
                    "openadapt.outcome",
                    "openadapt.reason",
                    "openadapt.replayed",
                    "openadapt.request_id.hash",
                    "openadapt.run_id.hash",
                    "openadapt.evidence",
                    "openadapt.engine.failed",
                    "openadapt.save_sent",
                    "process.exit.code",
                ]
                .contains(&key),
                "{key} is not carried under off"
            );
        }
    }
    common_metric_checks(&rx, false);
    for r in common_log_checks(&rx) {
        assert!(attr(&r.attributes, "gen_ai.tool.name").is_none());
    }
    assert_no_canaries(&rx, None, &run_ids(&s));
    // Every signal went to its own path under the base URL.
    let paths: std::collections::BTreeSet<String> = rx.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths.into_iter().collect::<Vec<_>>(), ["/v1/logs", "/v1/metrics", "/v1/traces"]);
}

#[tokio::test]
async fn metadata_adds_tool_workflow_mode_and_engine_but_no_value() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let s = session(tmp.path(), &["--otlp-endpoint", &rx.endpoint(), "--otlp-content", "metadata"], &[]).await;
    let (calls, engines) = common_span_checks(&rx, &s);
    let mut tools: Vec<String> = calls.iter().map(|c| attr(&c.attributes, "gen_ai.tool.name").unwrap()).collect();
    tools.sort();
    assert_eq!(tools, ["(unknown)", "get_run", "list_workflows", "run_workflow", "run_workflow", "run_workflow", "run_workflow"]);
    for c in &calls {
        let tool = attr(&c.attributes, "gen_ai.tool.name").unwrap();
        assert_eq!(c.name, format!("execute_tool {tool}"));
        assert_eq!(attr(&c.attributes, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert_eq!(attr(&c.attributes, "openadapt.mode").as_deref(), Some("sandbox"));
        assert_eq!(attr(&c.attributes, "openadapt.engine").as_deref(), Some("simulated"));
        assert!(attr(&c.attributes, "gen_ai.tool.call.arguments").is_none());
        assert!(attr(&c.attributes, "gen_ai.tool.call.result").is_none());
        let ran = attr(&c.attributes, "openadapt.outcome").is_some_and(|o| o == "done" || o == "did_not_run");
        if ran {
            assert_eq!(attr(&c.attributes, "openadapt.workflow.id").as_deref(), Some("add_triage_note"));
        }
    }
    for e in &engines {
        assert_eq!(attr(&e.attributes, "openadapt.engine").as_deref(), Some("mockmed"));
    }
    common_metric_checks(&rx, true);
    let records = common_log_checks(&rx);
    assert!(records.iter().all(|r| attr(&r.attributes, "gen_ai.tool.name").is_some()));
    assert_no_canaries(&rx, None, &run_ids(&s));
}

#[tokio::test]
async fn full_captures_masked_truncated_content_on_spans_only() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let client_runs = tmp.path().join("runs");
    std::fs::create_dir_all(&client_runs).unwrap();
    let cmd = server_command(
        &client_runs,
        &["--otlp-endpoint", &rx.endpoint(), "--otlp-content", "full", "--allow-protected-export", "--otlp-max-bytes", "300"],
    );
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().unwrap();
    let client = Counting::default().serve(transport).await.unwrap();
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV123456";
    let note = format!("{CANARY} key {key} {}", "x".repeat(400));
    let done = structured(&call(&client, "run_workflow", run_args(&note, "normal", &format!("{RID}-full"))).await);
    assert_eq!(done["outcome"], "done");
    client.cancel().await.unwrap();

    let spans = rx.spans();
    let run = spans.iter().find(|s| s.name == "execute_tool run_workflow").expect("the call span");
    let args = attr(&run.attributes, "gen_ai.tool.call.arguments").expect("arguments under full");
    assert!(args.contains(CANARY), "full carries the arguments: {args}");
    assert!(!args.contains(key) && args.contains("[api key]"), "secrets are masked: {args}");
    assert!(args.len() <= 300, "truncated to --otlp-max-bytes: {}", args.len());
    let result = attr(&run.attributes, "gen_ai.tool.call.result").expect("result under full");
    assert!(result.starts_with("{\"") && (297..=300).contains(&result.len()), "the result, truncated: {result}");
    assert!(!rx.any_body_contains(None, key), "the key never leaves");
    // Content goes to spans only: never to metric labels or log records.
    assert!(!rx.any_body_contains(Some("/v1/metrics"), CANARY));
    assert!(!rx.any_body_contains(Some("/v1/logs"), CANARY));
    assert!(!rx.bodies("/v1/metrics").is_empty() && !rx.bodies("/v1/logs").is_empty());
    // Under full, the server's warn lines go out with their text.
    let warned = rx.logs().into_iter().any(|r| r.severity_text == "WARN" && body(&r).contains("protected export is ON"));
    assert!(warned, "the protected-export warning is exported with its text under full");
}

fn body(r: &LogRecord) -> String {
    match r.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn below_full_warn_lines_export_their_place_not_their_text() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let client = spawn(tmp.path(), &["--otlp-endpoint", &rx.endpoint(), "--allow-protected-export"]).await;
    call(&client, "list_workflows", json!({})).await;
    client.cancel().await.unwrap();
    let warns: Vec<LogRecord> = rx.logs().into_iter().filter(|r| r.severity_text == "WARN").collect();
    let warn = warns
        .iter()
        .find(|r| attr(&r.attributes, "code.file.path").is_some_and(|f| f.ends_with("cli.rs")))
        .expect("the protected-export warning is exported");
    assert_eq!(body(warn), "warn event");
    assert!(attr(&warn.attributes, "code.line.number").is_some());
    assert!(!rx.any_body_contains(Some("/v1/logs"), "protected export is ON"), "no line text below full");
}

#[tokio::test]
async fn signals_can_be_selected() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let client = spawn(tmp.path(), &["--otlp-endpoint", &format!("{}/base/path/", rx.endpoint()), "--otlp-signals", "traces"]).await;
    let note = format!("{CANARY} note");
    structured(&call(&client, "run_workflow", run_args(&note, "normal", &format!("{RID}-sig"))).await);
    client.cancel().await.unwrap();
    let paths: std::collections::BTreeSet<String> = rx.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths.into_iter().collect::<Vec<_>>(), ["/base/path/v1/traces"]);
}

/// Results without the fields that differ between any two runs.
fn comparable(results: &[Value]) -> Vec<Value> {
    results
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                for k in ["run_id", "seconds", "first_run_id"] {
                    o.remove(k);
                }
            }
            r
        })
        .collect()
}

#[tokio::test]
async fn an_unreachable_or_silent_collector_changes_no_result() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = session(&tmp.path().join("plain"), &[], &[]).await;
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let unreachable = session(&tmp.path().join("unreachable"), &["--otlp-endpoint", &closed, "--otlp-content", "metadata"], &[]).await;
    assert_eq!(comparable(&unreachable.results), comparable(&plain.results));
    assert!(!unreachable.stderr.contains("panicked"), "{}", unreachable.stderr);
    let silent = Receiver::start(false);
    let hung = session(&tmp.path().join("silent"), &["--otlp-endpoint", &silent.endpoint()], &[]).await;
    assert_eq!(comparable(&hung.results), comparable(&plain.results));
}

/// JSON-RPC by hand, so the test owns the server process and sees when it exits.
fn raw_line(stdin: &mut impl Write, v: Value) {
    writeln!(stdin, "{v}").unwrap();
    stdin.flush().unwrap();
}

fn raw_answer(stdout: &mut impl BufRead, id: u64) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server closed stdout");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

#[test]
fn shutdown_flush_is_bounded_when_the_collector_never_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let silent = Receiver::start(false);
    let mut child = std::process::Command::new(BIN)
        .args(["serve", "--runs-dir"])
        .arg(tmp.path())
        .args(["--otlp-endpoint", &silent.endpoint()])
        .env("XDG_CACHE_HOME", shared_cache())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    raw_line(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    raw_answer(&mut stdout, 1);
    raw_line(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    raw_line(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run_workflow", "arguments": run_args("synthetic note", "normal", "raw-1")}}),
    );
    let answer = raw_answer(&mut stdout, 2);
    assert_eq!(answer["result"]["structuredContent"]["outcome"], "done");
    drop(stdin);
    let closed = Instant::now();
    let deadline = closed + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server did not exit after its client left");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    // The flush budget is 5 s; the bound here leaves room for a loaded machine.
    assert!(closed.elapsed() < Duration::from_secs(10), "shutdown took {:?}", closed.elapsed());
}

#[tokio::test]
async fn a_secret_header_reaches_the_collector_and_never_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::start(true);
    let flags = [
        "--otlp-endpoint",
        &rx.endpoint(),
        "--otlp-header",
        "Authorization=env:OPENADAPT_TEST_OTLP_SECRET",
        "--otlp-header",
        "x-langfuse-ingestion-version=literal:4",
    ];
    let env = [
        ("OPENADAPT_TEST_OTLP_SECRET", SECRET),
        ("OPENADAPT_AGENT_LOG", "debug"),
        // The exporter's own environment headers would bypass the limits: they are not sent.
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-from-env=1"),
    ];
    let s = session(&tmp.path().join("ok"), &flags, &env).await;
    let requests = rx.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.headers.get("authorization").map(String::as_str), Some(SECRET), "{}", r.path);
        assert_eq!(r.headers.get("x-langfuse-ingestion-version").map(String::as_str), Some("4"));
        assert_eq!(r.headers.get("content-type").map(String::as_str), Some("application/x-protobuf"));
        assert!(!r.headers.contains_key("x-from-env"));
    }
    assert!(!s.stderr.contains("s3cr3t"), "the secret reached stderr");

    // The failure path logs too: still no secret.
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let flags = ["--otlp-endpoint", &closed, "--otlp-header", "Authorization=env:OPENADAPT_TEST_OTLP_SECRET"];
    let s = session(&tmp.path().join("closed"), &flags, &env).await;
    assert!(!s.stderr.contains("s3cr3t"), "the secret reached stderr");
    assert!(s.stderr.contains("telemetry export failed (connection refused)"), "{}", s.stderr);
}

#[test]
fn bad_telemetry_flags_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let e = "http://127.0.0.1:4318";
    let nine: Vec<String> = (0..9).flat_map(|i| ["--otlp-header".to_string(), format!("x-h{i}=literal:v")]).collect();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--otlp-endpoint", e, "--otlp-content", "full"].into_iter().map(String::from).collect(), "--allow-protected-export"),
        (vec!["--otlp-endpoint".into(), "http://collector.example:4318".into()], "https"),
        (vec!["--otlp-endpoint".into(), "https://user:pw-hunter2@collector.example".into()], "credentials"),
        (vec!["--otlp-endpoint".into(), "not a url".into()], "--otlp-endpoint"),
        (vec!["--otlp-header".into(), "x-a=literal:1".into()], "need --otlp-endpoint"),
        (vec!["--otlp-content".into(), "metadata".into()], "need --otlp-endpoint"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Host=literal:x".into()], "set by the exporter"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Content-Type=literal:x".into()], "set by the exporter"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Proxy-Authorization=env:HOME".into()], "set by the exporter"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Authorization=literal:hunter2".into()], "env:VAR"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Authorization=hunter2".into()], "NAME=env:VAR"),
        (
            vec!["--otlp-endpoint".into(), e.into(), "--otlp-header".into(), "Authorization=env:OPENADAPT_SURELY_UNSET_42".into()],
            "OPENADAPT_SURELY_UNSET_42 is not set",
        ),
        ([vec!["--otlp-endpoint".to_string(), e.to_string()], nine].concat(), "at most 8"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-signals".into(), "traces,spans".into()], "--otlp-signals"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-max-bytes".into(), "70000".into()], "65536"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-max-bytes".into(), "0".into()], "65536"),
        (vec!["--otlp-endpoint".into(), e.into(), "--otlp-content".into(), "everything".into()], "--otlp-content"),
    ];
    for (flags, says) in cases {
        let out = std::process::Command::new(BIN)
            .args(["serve", "--runs-dir"])
            .arg(tmp.path().join("never"))
            .args(&flags)
            .env_remove("OPENADAPT_SURELY_UNSET_42")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: one line: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(says), "{flags:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{flags:?} echoed a value: {stderr}");
        assert!(out.stdout.is_empty());
    }
    assert!(!tmp.path().join("never").exists(), "a refused start creates nothing");
}

// ---------------------------------------------------------------------------------------------
// Production: the Flow subprocess span, and the opaque workflow id under metadata.

const BUNDLE_CANARY: &str = "CANARY-BUNDLE-TELEMETRY-31";

fn flow_bundle(root: &Path, dir_name: &str, scenario: &str) {
    let dir = root.join(dir_name);
    std::fs::create_dir_all(&dir).unwrap();
    let workflow = json!({
        "schema_version": 2,
        "name": format!("Clinic flow {BUNDLE_CANARY}"),
        "params": {"note": format!("recorded {BUNDLE_CANARY}")},
        "param_specs": {"note": {"type": "string"}},
        "steps": [{"intent": format!("open chart {BUNDLE_CANARY}")}, {"intent": "save"}],
        "manifest": {"content_digest": format!("sha256:{dir_name}")}
    });
    std::fs::write(dir.join("workflow.json"), workflow.to_string()).unwrap();
    std::fs::write(dir.join("fake-scenario"), scenario).unwrap();
    std::fs::write(dir.join("openadapt-card.json"), json!({"name": "clinic_note"}).to_string()).unwrap();
}

#[tokio::test]
async fn production_runs_get_a_flow_subprocess_span_and_an_opaque_workflow_id() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bundles");
    flow_bundle(&root, "verified", "verified");
    let rx = Receiver::start(true);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fake_flow.py").canonicalize().unwrap();
    let flow = format!("python3 {}", script.display());
    let flags = [
        "--bundles", root.to_str().unwrap(), "--mode", "production", "--flow-cli", &flow,
        "--url", "http://127.0.0.1:9/mockmed", "--timeout", "5",
        "--otlp-endpoint", &rx.endpoint(), "--otlp-content", "metadata",
    ];
    let client = spawn(&tmp.path().join("runs"), &flags).await;
    let listing = call(&client, "list_workflows", json!({})).await.structured_content.unwrap();
    let opaque = listing["workflows"][0]["id"].as_str().expect("an opaque id").to_string();
    assert_ne!(opaque, "clinic_note");
    let args = json!({"workflow": "clinic_note", "inputs": {"note": format!("{CANARY} note")}, "request_id": format!("{RID}-flow")});
    let done = structured(&call(&client, "run_workflow", args).await);
    assert_eq!(done["outcome"], "done");
    client.cancel().await.unwrap();

    let spans = rx.spans();
    let run = spans.iter().find(|s| s.name == "execute_tool run_workflow").expect("the call span");
    assert_eq!(attr(&run.attributes, "openadapt.workflow.id"), Some(opaque), "the opaque id, not the card name");
    assert_eq!(attr(&run.attributes, "openadapt.mode").as_deref(), Some("production"));
    assert_eq!(attr(&run.attributes, "openadapt.engine").as_deref(), Some("flow"));
    let flow_span = spans.iter().find(|s| s.name == "flow.subprocess").expect("a Flow subprocess span");
    assert_eq!(flow_span.trace_id, run.trace_id);
    assert_eq!(flow_span.parent_span_id, run.span_id, "the subprocess span is a child of the call span");
    assert_eq!(attr(&flow_span.attributes, "openadapt.evidence").as_deref(), Some("finished"));
    assert_eq!(attr(&flow_span.attributes, "process.exit.code").as_deref(), Some("0"));
    assert_eq!(attr(&flow_span.attributes, "openadapt.engine").as_deref(), Some("flow"));
    for needle in [CANARY, RID, BUNDLE_CANARY] {
        assert!(!rx.any_body_contains(None, needle), "{needle} left the server");
    }
}
