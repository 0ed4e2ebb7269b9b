//! The SDK's cost per run over raw MCP, in both modes:
//!
//! - `managed/raw_mcp_run_workflow`: rmcp's client, `call_tool("run_workflow")` to a child
//!   server, against `managed/sdk_run`: `Client::run` on a managed client (the same binary);
//! - `embedded/raw_bridge_run_workflow`: the server's `Bridge::call("run_workflow")`
//!   in-process, against `embedded/sdk_run`: `Client::run` on an embedded client;
//! - `*/raw_*_get_run` against `*/sdk_resume`: one cheap call, reading a finished run
//!   (`Client::resume` is that single `get_run` call, decoded), where the SDK's share is not
//!   lost in a run's own cost;
//! - `decode/run_result`: parsing one result into the SDK's `RunResult`.
//!
//! Every run is `normal` (MockMed as a WebAssembly component, records written) under a new
//! request_id. The runs directories are on tmpfs (`/dev/shm`) when the machine has one, so
//! fsync noise stays out. Raw and SDK calls alternate back to back in both benches of a pair
//! (each bench times its own side), and after each pair the bench prints the median of the
//! per-pair differences (SDK − raw): the overhead figure, robust to a machine whose load
//! changes between two benches.
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
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

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

/// A new request_id per call, so every call is a real run.
struct Ids(Cell<u64>, &'static str);

impl Ids {
    fn next(&self) -> String {
        self.0.set(self.0.get() + 1);
        format!("{}-{}", self.1, self.0.get())
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

fn sdk_inputs() -> Value {
    json!({"note": NOTE, "sandbox_case": "normal"})
}

fn timed(f: &dyn Fn()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// Benches `raw` and `sdk` as two benches of `g`, alternating them back to back in both, then
/// prints the median per-pair difference.
fn pair(g: &mut BenchmarkGroup<'_, WallTime>, names: (&str, &str), raw: &dyn Fn(), sdk: &dyn Fn()) {
    let pairs: RefCell<Vec<(Duration, Duration)>> = RefCell::new(vec![]);
    let run = |iters: u64, time_sdk: bool| {
        let mut total = Duration::ZERO;
        for i in 0..iters {
            let (r, s) = if i % 2 == 0 {
                let r = timed(raw);
                (r, timed(sdk))
            } else {
                let s = timed(sdk);
                (timed(raw), s)
            };
            pairs.borrow_mut().push((r, s));
            total += if time_sdk { s } else { r };
        }
        total
    };
    g.bench_function(names.0, |b| b.iter_custom(|iters| run(iters, false)));
    g.bench_function(names.1, |b| b.iter_custom(|iters| run(iters, true)));
    let mut diffs: Vec<f64> = pairs.into_inner().iter().map(|(r, s)| s.as_secs_f64() - r.as_secs_f64()).collect();
    if diffs.is_empty() {
        return; // both benches filtered out
    }
    diffs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = diffs[diffs.len() / 2] * 1e6;
    println!("overhead {} − {}: median of {} back-to-back pairs: {median:+.1} µs", names.1, names.0, diffs.len());
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
    let sdk_dir = runs_dir();
    let client = rt
        .block_on(Client::builder().runs_dir(sdk_dir.path()).cache_home(cache_home()).managed(server_bin(), RestartPolicy::default()))
        .unwrap();

    let raw_call = |tool: &'static str, args: Map<String, Value>| {
        let result = rt.block_on(raw.call_tool(CallToolRequestParams::new(tool).with_arguments(args))).unwrap();
        result.structured_content.unwrap()
    };
    let (raw_ids, sdk_ids) = (Ids(Cell::new(0), "raw"), Ids(Cell::new(0), "sdk"));
    pair(
        &mut g,
        ("raw_mcp_run_workflow", "sdk_run"),
        &|| assert_eq!(raw_call("run_workflow", run_args(&raw_ids.next()))["outcome"], "done"),
        &|| {
            let id = RequestId::new(sdk_ids.next()).unwrap();
            assert_eq!(rt.block_on(client.run("add_triage_note", sdk_inputs(), &id)).unwrap().outcome, Outcome::Done);
        },
    );

    let raw_finished = raw_call("run_workflow", run_args(&raw_ids.next()))["run_id"].as_str().unwrap().to_string();
    let raw_get = json!({"run_id": raw_finished}).as_object().cloned().unwrap();
    let sdk_finished = finished(&rt, &client);
    pair(
        &mut g,
        ("raw_mcp_get_run", "sdk_resume"),
        &|| assert_eq!(raw_call("get_run", raw_get.clone())["outcome"], "done"),
        &|| assert_eq!(rt.block_on(client.resume(&sdk_finished)).unwrap().outcome, Outcome::Done),
    );
    g.finish();
    rt.block_on(async { raw.cancel().await.unwrap() });
    rt.block_on(client.close());
}

fn embedded(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("embedded");
    g.measurement_time(Duration::from_secs(20));

    let raw_dir = runs_dir();
    let engines = cache_home().join("openadapt-agent").join("engines");
    let bridge = openadapt_agent::cli::sandbox_bridge_at(raw_dir.path(), &engines, Duration::ZERO).unwrap();
    let sdk_dir = runs_dir();
    let client = rt.block_on(Client::builder().runs_dir(sdk_dir.path()).cache_home(cache_home()).embedded()).unwrap();

    let raw_call = |tool: &'static str, args: Map<String, Value>| match rt.block_on(bridge.call(tool, Some(&args), |_| {})) {
        openadapt_agent::bridge::Reply::Structured(v) => v,
        other => panic!("{other:?}"),
    };
    let (raw_ids, sdk_ids) = (Ids(Cell::new(0), "raw"), Ids(Cell::new(0), "sdk"));
    pair(
        &mut g,
        ("raw_bridge_run_workflow", "sdk_run"),
        &|| assert_eq!(raw_call("run_workflow", run_args(&raw_ids.next()))["outcome"], "done"),
        &|| {
            let id = RequestId::new(sdk_ids.next()).unwrap();
            assert_eq!(rt.block_on(client.run("add_triage_note", sdk_inputs(), &id)).unwrap().outcome, Outcome::Done);
        },
    );

    let raw_finished = raw_call("run_workflow", run_args(&raw_ids.next()))["run_id"].as_str().unwrap().to_string();
    let raw_get = json!({"run_id": raw_finished}).as_object().cloned().unwrap();
    let sdk_finished = finished(&rt, &client);
    pair(
        &mut g,
        ("raw_bridge_get_run", "sdk_resume"),
        &|| assert_eq!(raw_call("get_run", raw_get.clone())["outcome"], "done"),
        &|| assert_eq!(rt.block_on(client.resume(&sdk_finished)).unwrap().outcome, Outcome::Done),
    );
    g.finish();
}

/// A finished run of `client`, to read back.
fn finished(rt: &tokio::runtime::Runtime, client: &Client) -> openadapt_agent_sdk::RunRef {
    let id = RequestId::new("sdk-resume-target").unwrap();
    rt.block_on(client.run("add_triage_note", sdk_inputs(), &id)).unwrap().run_ref().unwrap()
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
