//! The SDK's cost per run over raw MCP, in both modes. One sandbox run (`normal`: MockMed as a
//! WebAssembly component, claim and records fsync'd) per iteration, each with a new request_id:
//!
//! - `managed/raw_mcp_run_workflow`: rmcp's client, `call_tool("run_workflow")` to a child
//!   server;
//! - `managed/sdk_run`: `Client::run` on a managed client (the same binary);
//! - `embedded/raw_bridge_run_workflow`: the server's `Bridge::call("run_workflow")` in-process;
//! - `embedded/sdk_run`: `Client::run` on an embedded client;
//!
//! On disk a run costs milliseconds of fsyncs whose noise hides the SDK's own cost, so the runs
//! directories are on tmpfs (`/dev/shm`, where fsync is free) when there is one: what is left
//! is the run's work and the call path. Each group also times one cheap call, reading a
//! finished run: `raw_*_get_run` against `sdk_resume` (`Client::resume`, the same single
//! `get_run` call, decoded). And:
//! - `decode/run_result`: parsing one result into the SDK's `RunResult`.
//!
//! ```sh
//! cargo build --release -p openadapt-agent
//! cargo bench -p openadapt-agent-sdk --features embedded --bench overhead
//! ```
//! The managed benches spawn `target/release/openadapt-agent` (`OPENADAPT_AGENT_BIN` overrides).

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use openadapt_agent_sdk::{Client, Outcome, RequestId, RestartPolicy, RunResult};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const NOTE: &str = "Synthetic note: mild fever, recheck in two days.";

fn server_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("OPENADAPT_AGENT_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(Path::parent).unwrap().join("openadapt-agent");
    assert!(bin.exists(), "{} is missing: run `cargo build --release -p openadapt-agent` first", bin.display());
    bin
}

fn cache_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-cache")
}

/// A fresh runs directory, on tmpfs when the machine has one.
fn runs_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A new request_id per iteration, so every iteration is a real run.
struct Ids(AtomicU64, &'static str);

impl Ids {
    fn next(&self) -> String {
        format!("{}-{}", self.1, self.0.fetch_add(1, Ordering::SeqCst))
    }
}

fn run_args(request_id: &str) -> Map<String, Value> {
    json!({
        "workflow": "add_triage_note",
        "inputs": {"note": NOTE, "sandbox_case": "normal"},
        "request_id": request_id,
        "wait_seconds": 60,
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn managed(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("managed");
    g.measurement_time(Duration::from_secs(20));

    let raw_dir = runs_dir();
    let raw = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(server_bin());
        cmd.arg("serve").arg("--runs-dir").arg(raw_dir.path()).env("XDG_CACHE_HOME", cache_home());
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::inherit()).spawn().unwrap();
        ().serve(transport).await.unwrap()
    });
    let ids = Ids(AtomicU64::new(0), "raw");
    g.bench_function("raw_mcp_run_workflow", |b| {
        b.iter(|| {
            rt.block_on(async {
                let params = CallToolRequestParams::new("run_workflow").with_arguments(run_args(&ids.next()));
                let result = raw.call_tool(params).await.unwrap();
                assert_eq!(result.structured_content.unwrap()["outcome"], "done");
            })
        })
    });
    let finished = rt.block_on(async {
        let params = CallToolRequestParams::new("run_workflow").with_arguments(run_args(&ids.next()));
        raw.call_tool(params).await.unwrap().structured_content.unwrap()["run_id"].as_str().unwrap().to_string()
    });
    g.bench_function("raw_mcp_get_run", |b| {
        b.iter(|| {
            rt.block_on(async {
                let args = json!({"run_id": finished}).as_object().cloned().unwrap();
                let result = raw.call_tool(CallToolRequestParams::new("get_run").with_arguments(args)).await.unwrap();
                assert_eq!(result.structured_content.unwrap()["outcome"], "done");
            })
        })
    });
    rt.block_on(async { raw.cancel().await.unwrap() });

    let sdk_dir = runs_dir();
    let client = rt.block_on(
        Client::builder().runs_dir(sdk_dir.path()).cache_home(cache_home()).managed(server_bin(), RestartPolicy::default()),
    )
    .unwrap();
    let ids = Ids(AtomicU64::new(0), "sdk");
    g.bench_function("sdk_run", |b| {
        b.iter(|| {
            rt.block_on(async {
                let id = RequestId::new(ids.next()).unwrap();
                let r = client.run("add_triage_note", json!({"note": NOTE, "sandbox_case": "normal"}), &id).await.unwrap();
                assert_eq!(r.outcome, Outcome::Done);
            })
        })
    });
    sdk_resume(&rt, &mut g, &client);
    rt.block_on(client.close());
    g.finish();
}

fn embedded(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("embedded");
    g.measurement_time(Duration::from_secs(20));
    let engines = cache_home().join("openadapt-agent").join("engines");

    let raw_dir = runs_dir();
    let bridge = openadapt_agent::cli::sandbox_bridge_at(raw_dir.path(), &engines, Duration::ZERO).unwrap();
    let ids = Ids(AtomicU64::new(0), "raw");
    let call = |tool: &'static str, args: Map<String, Value>| {
        let bridge = &bridge;
        async move {
            match bridge.call(tool, Some(&args), |_| {}).await {
                openadapt_agent::bridge::Reply::Structured(v) => v,
                other => panic!("{other:?}"),
            }
        }
    };
    g.bench_function("raw_bridge_run_workflow", |b| {
        b.iter(|| rt.block_on(async { assert_eq!(call("run_workflow", run_args(&ids.next())).await["outcome"], "done") }))
    });
    let finished = rt.block_on(call("run_workflow", run_args(&ids.next())))["run_id"].as_str().unwrap().to_string();
    g.bench_function("raw_bridge_get_run", |b| {
        let args = json!({"run_id": finished}).as_object().cloned().unwrap();
        b.iter(|| rt.block_on(async { assert_eq!(call("get_run", args.clone()).await["outcome"], "done") }))
    });

    let sdk_dir = runs_dir();
    let client = rt.block_on(Client::builder().runs_dir(sdk_dir.path()).cache_home(cache_home()).embedded()).unwrap();
    let ids = Ids(AtomicU64::new(0), "sdk");
    g.bench_function("sdk_run", |b| {
        b.iter(|| {
            rt.block_on(async {
                let id = RequestId::new(ids.next()).unwrap();
                let r = client.run("add_triage_note", json!({"note": NOTE, "sandbox_case": "normal"}), &id).await.unwrap();
                assert_eq!(r.outcome, Outcome::Done);
            })
        })
    });
    sdk_resume(&rt, &mut g, &client);
    g.finish();
}

/// `Client::resume` of a finished run: one `get_run` call, decoded.
fn sdk_resume(rt: &tokio::runtime::Runtime, g: &mut BenchmarkGroup<'_, WallTime>, client: &Client) {
    let id = RequestId::new("sdk-resume-target").unwrap();
    let done = rt.block_on(client.run("add_triage_note", json!({"note": NOTE, "sandbox_case": "normal"}), &id)).unwrap();
    let run_ref = done.run_ref().unwrap();
    g.bench_function("sdk_resume", |b| {
        b.iter(|| rt.block_on(async { assert_eq!(client.resume(&run_ref).await.unwrap().outcome, Outcome::Done) }))
    });
}

fn decode(c: &mut Criterion) {
    let value = json!({
        "outcome": "done", "label": "Saved and checked", "safe_to_retry": false,
        "what_happened": "Simulated sandbox result: the change was saved, and reading the record back confirmed it.",
        "next_action": "Nothing more to do.", "next_step": "none", "reason": "saved_and_checked",
        "record_changed": "yes", "proof": "simulated", "run_id": "run-20260101T000000Z-0123456789ab",
        "request_id": "sdk-1", "workflow": "add_triage_note", "mode": "sandbox",
        "contract_version": "openadapt.run-result/v1", "seconds": 0.0, "checked_how": "system_of_record",
        "checked_how_label": "Checked in the system of record", "sandbox": {"case": "normal", "engine": "simulated"},
        "technical": {"execution_outcome": "VERIFIED", "transaction_outcome": "VERIFIED"},
    });
    c.bench_function("decode/run_result", |b| b.iter(|| RunResult::from_json(value.clone()).unwrap()));
}

criterion_group!(benches, managed, embedded, decode);
criterion_main!(benches);
