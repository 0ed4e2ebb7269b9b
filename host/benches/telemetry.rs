//! The per-tool-call cost of telemetry: no telemetry, content `off`, `metadata` and `full`,
//! exporting to a loopback sink that answers every request with 200.
//!
//! `cargo bench -p openadapt-agent --bench telemetry`
//!
//! - `call_span/<mode>`: the telemetry work of one call alone (span start, attributes, end,
//!   metrics, the log record) around a finished run result.
//! - `bridge_list_workflows/<mode>`: a whole `Bridge::call` of list_workflows (CPU only).
//! - `bridge_get_run/<mode>`: a whole `Bridge::call` of get_run on a finished run (reads its
//!   record from disk; ids are hashed).

use criterion::{criterion_group, criterion_main, Criterion};
use openadapt_agent::bridge::{Bridge, Reply, Tools};
use openadapt_agent::cards;
use openadapt_agent::contract::{Mode, Reason, RunResult};
use openadapt_agent::runs::RunsDir;
use openadapt_agent::sandbox::SimulatedSandbox;
use openadapt_agent::service::{CatalogEntry, Policy, Service};
use openadapt_agent::telemetry::{self, Capture, CallSpan, ServerFacts, TelemetryConfig};
use serde_json::{json, Map, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// A loopback OTLP sink: reads each request and answers 200.
fn sink() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    port
}

fn answer(mut stream: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
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
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..head_end + len);
        if stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_err() {
            return;
        }
    }
}

fn sandbox_bridge(dir: &std::path::Path) -> Bridge {
    let runs = RunsDir::open(dir).unwrap();
    let store = runs.root().join("mockmed-store");
    let cache = openadapt_agent::cli::engine_cache_dir();
    let runner = Arc::new(SimulatedSandbox::new(store, cache, Duration::ZERO));
    let policy = Policy { mode: Mode::Sandbox, runs_enabled: true, require_all: true };
    let catalog = vec![CatalogEntry { card: cards::sandbox_card(), available: true }];
    Bridge::new(Arc::new(Service::new(policy, runs, catalog, runner)), Tools::sandbox())
}

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn bench(c: &mut Criterion) {
    let port = sink();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let bridge = sandbox_bridge(tmp.path());
    // One finished run for get_run to read.
    let run_args = object(json!({
        "workflow": "add_triage_note",
        "inputs": {"note": "synthetic bench note", "sandbox_case": "normal"},
        "request_id": "bench-1",
    }));
    let Reply::Structured(done) = rt.block_on(bridge.call("run_workflow", Some(&run_args), |_| {})) else {
        panic!("the bench run did not answer a result")
    };
    assert_eq!(done["outcome"], "done");
    let get_args = object(json!({"run_id": done["run_id"]}));
    let list_args = Map::new();
    let mut result = RunResult::new(Reason::SavedAndChecked, Mode::Sandbox);
    result.run_id = done["run_id"].as_str().map(str::to_string);
    result.request_id = Some("bench-1".into());
    result.workflow = Some("add_triage_note".into());
    let reply = Reply::Structured(result.to_json());
    let facts = ServerFacts { mode: Mode::Sandbox, engine: "simulated" };

    for mode in ["none", "off", "metadata", "full"] {
        let guard = (mode != "none").then(|| {
            let mut config = TelemetryConfig::new(format!("http://127.0.0.1:{port}"));
            config.content.capture = Capture::parse(mode).unwrap();
            config.allow_protected_export = true;
            telemetry::init(&config).unwrap()
        });
        c.benchmark_group("call_span").bench_function(mode, |b| {
            b.iter(|| {
                let span = CallSpan::start("run_workflow", Some(&run_args), facts);
                let workflow = span.wants_metadata().then_some("add_triage_note");
                span.finish(&reply, Some(&run_args), workflow);
            })
        });
        c.benchmark_group("bridge_list_workflows").bench_function(mode, |b| {
            b.iter(|| rt.block_on(bridge.call("list_workflows", Some(&list_args), |_| {})))
        });
        c.benchmark_group("bridge_get_run").bench_function(mode, |b| {
            b.iter(|| rt.block_on(bridge.call("get_run", Some(&get_args), |_| {})))
        });
        if let Some(guard) = guard {
            guard.shutdown();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
