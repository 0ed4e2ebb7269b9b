//! Shared pieces of the SDK's tests: the real server binary, clients of both modes, and the
//! checks every mode must pass.
#![allow(dead_code)]

use openadapt_agent_sdk::{
    Client, Error, Interruption, Mode, NextStep, Outcome, PersonTask, Proof, Reason, RecordChanged, RequestId,
    RestartPolicy, RunEvent, RunResult,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

pub const WORKFLOW: &str = "add_triage_note";
pub const NOTE: &str = "Synthetic note: mild fever, recheck in two days.";

/// The server binary of this workspace (`target/<profile>/openadapt-agent`), beside the
/// directory of this test's own executable; `OPENADAPT_AGENT_BIN` overrides it.
pub fn server_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("OPENADAPT_AGENT_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let bin = profile_dir.join("openadapt-agent");
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).unwrap_or_else(|_| {
        panic!(
            "the server binary {} is missing: run `cargo build -p openadapt-agent` first (`cargo test --workspace` builds it)",
            bin.display()
        )
    });
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src");
    if newest(&sources) > built {
        eprintln!(
            "warning: the server binary {} is older than host/src: run `cargo build -p openadapt-agent` first (`cargo test --workspace` builds it)",
            bin.display()
        );
    }
    bin
}

fn newest(dir: &Path) -> SystemTime {
    let mut latest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let time = if path.is_dir() { newest(&path) } else { entry.metadata().and_then(|m| m.modified()).unwrap_or(latest) };
        latest = latest.max(time);
    }
    latest
}

/// One engine cache for every test process (the host's tests use the same one).
pub fn cache_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-cache")
}

pub async fn managed(runs: &Path, latency_ms: u64, policy: RestartPolicy) -> Client {
    Client::builder()
        .runs_dir(runs)
        .cache_home(cache_home())
        .simulated_latency(Duration::from_millis(latency_ms))
        .managed(server_bin(), policy)
        .await
        .expect("a managed client")
}

pub async fn embedded(runs: &Path, latency_ms: u64) -> Client {
    Client::builder()
        .runs_dir(runs)
        .cache_home(cache_home())
        .simulated_latency(Duration::from_millis(latency_ms))
        .embedded()
        .await
        .expect("an embedded client")
}

pub fn inputs(note: &str, case: &str) -> Value {
    json!({"note": note, "sandbox_case": case})
}

pub fn id(s: &str) -> RequestId {
    RequestId::new(s).unwrap()
}

/// The claim files of the runs dir: one per attempt ever started.
pub fn claims(runs: &Path) -> usize {
    count(&runs.join("openadapt-agent").join("claims"), |name| !name.starts_with('.') && !name.ends_with(".tmp"))
}

/// The run records of the runs dir: one per attempt or refusal.
pub fn run_records(runs: &Path) -> usize {
    count(&runs.join("openadapt-agent").join("runs"), |name| !name.starts_with('.') && name.ends_with(".json"))
}

fn count(dir: &Path, keep: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().filter(|e| keep(&e.file_name().to_string_lossy())).count())
        .unwrap_or(0)
}

/// Waits until some run record says `running`: the attempt is claimed and under way.
pub async fn until_a_run_is_in_flight(runs: &Path) {
    let dir = runs.join("openadapt-agent").join("runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let record: Option<Value> = std::fs::read(entry.path()).ok().and_then(|b| serde_json::from_slice(&b).ok());
            if record.is_some_and(|r| r["state"] == "running") {
                return;
            }
        }
        assert!(Instant::now() < deadline, "no run went in flight");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn kill_9(pid: u32) {
    let status = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

pub fn stamp() -> u128 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos()
}

pub async fn workflows_are_typed_cards(client: &Client) {
    let cards = client.workflows().await.unwrap();
    assert_eq!(cards.len(), 1);
    let card = &cards[0];
    assert_eq!(card.name, WORKFLOW);
    assert!(card.available);
    assert_eq!(card.changes_records, Some(true));
    let mut names = card.input_names();
    names.sort();
    assert_eq!(names, ["note", "sandbox_case"]);
    let catalog = client.catalog().await.unwrap();
    assert_eq!(catalog.mode, Mode::Sandbox);
    assert!(catalog.run_tools_enabled);
}

/// Fields every result of this SDK's runs carries.
pub fn assert_ids(r: &RunResult, request_id: &str, case: &str) {
    assert_eq!(r.request_id.as_deref(), Some(request_id));
    assert_eq!(r.workflow.as_deref(), Some(WORKFLOW));
    assert!(r.run_id.as_deref().is_some_and(|id| id.starts_with("run-")), "{r:?}");
    assert_eq!(r.mode, Mode::Sandbox);
    assert_eq!(r.contract_version, openadapt_agent_sdk::CONTRACT_VERSION);
    assert_eq!(r.sandbox.as_ref().and_then(|s| s.case.as_deref()), Some(case));
    let run_ref = r.run_ref().unwrap();
    assert_eq!(Some(run_ref.run_id.as_str()), r.run_id.as_deref());
    assert_eq!(run_ref.request_id.as_deref(), Some(request_id));
}

pub async fn every_sandbox_case_answers_its_typed_outcome(client: &Client, prefix: &str) {
    use Outcome as O;
    use RecordChanged as C;
    let cases = [
        ("normal", O::Done, Reason::SavedAndChecked, false, C::Yes, Proof::Simulated, NextStep::None),
        ("duplicate_record", O::NeedsReview, Reason::RecordNotConfirmed, false, C::No, Proof::None, NextStep::WaitForPerson),
        ("false_saved_banner", O::NotSureIfSaved, Reason::SaveNotConfirmed, false, C::Unknown, Proof::None, NextStep::CheckRecord),
        ("timeout_after_save", O::NotSureIfSaved, Reason::SaveNotConfirmed, false, C::Unknown, Proof::None, NextStep::CheckRecord),
        ("app_offline", O::DidNotRun, Reason::AppUnreachable, true, C::No, Proof::None, NextStep::Retry),
    ];
    for (case, outcome, reason, retry, changed, proof, next) in cases {
        let request_id = format!("{prefix}-{case}");
        let r = client.run(WORKFLOW, inputs(NOTE, case), &id(&request_id)).await.unwrap();
        assert_eq!(r.outcome, outcome, "{case}");
        assert_eq!(r.reason, reason, "{case}");
        assert_eq!(r.safe_to_retry, retry, "{case}");
        assert_eq!(r.record_changed, changed, "{case}");
        assert_eq!(r.proof, proof, "{case}");
        assert_eq!(r.next_step, next, "{case}");
        assert!(!r.replayed, "{case}");
        assert_ids(&r, &request_id, case);
        let interruptions = r.interruptions();
        match outcome {
            O::NeedsReview => assert_eq!(
                interruptions,
                vec![Interruption::WaitForPerson {
                    reason: reason.clone(),
                    task: PersonTask::ConfirmRecord,
                    needs_attention_id: r.needs_attention_id.clone(),
                    run_id: r.run_id.clone(),
                }],
                "{case}"
            ),
            O::NotSureIfSaved => assert_eq!(
                interruptions,
                vec![Interruption::CheckRecord {
                    reason: reason.clone(),
                    needs_attention_id: r.needs_attention_id.clone(),
                    run_id: r.run_id.clone(),
                }],
                "{case}"
            ),
            _ => assert!(interruptions.is_empty(), "{case}"),
        }
    }
}

pub async fn a_repeat_replays_and_other_inputs_conflict(client: &Client, runs: &Path, prefix: &str) {
    let request_id = id(&format!("{prefix}-replay"));
    let first = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_eq!(first.outcome, Outcome::Done);
    let claims_after_first = claims(runs);

    let again = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.run_id, first.run_id);
    assert_eq!((again.outcome.clone(), again.reason.clone()), (first.outcome.clone(), first.reason.clone()));

    let conflict = client.run(WORKFLOW, inputs("A different synthetic note.", "normal"), &request_id).await.unwrap();
    assert_eq!(conflict.outcome, Outcome::DidNotRun);
    assert_eq!(conflict.reason, Reason::RequestIdConflict);
    assert!(!conflict.safe_to_retry);
    assert_eq!(conflict.record_changed, RecordChanged::Unknown);
    assert_eq!(conflict.first_run_id, first.run_id);
    assert!(conflict.interruptions().is_empty());
    assert_eq!(claims(runs), claims_after_first, "neither the repeat nor the conflict started an attempt");

    // A retryable refusal (nothing written) starts a new attempt under the same id.
    let offline = id(&format!("{prefix}-offline-retry"));
    let a = client.run(WORKFLOW, inputs(NOTE, "app_offline"), &offline).await.unwrap();
    let b = client.run(WORKFLOW, inputs(NOTE, "app_offline"), &offline).await.unwrap();
    assert_eq!((a.reason.clone(), b.reason.clone()), (Reason::AppUnreachable, Reason::AppUnreachable));
    assert!(a.safe_to_retry && !b.replayed);
    assert_ne!(a.run_id, b.run_id);
}

/// Streams a run that takes a few seconds: Started, then Progress, then Finished, nothing after.
pub async fn run_streamed_events_come_in_order(client: &Client, prefix: &str) {
    let request_id = format!("{prefix}-streamed");
    let mut stream = client.run_streamed(WORKFLOW, inputs(NOTE, "normal"), &id(&request_id)).await.unwrap();
    let mut events = vec![];
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    let Some(RunEvent::Started { run_id }) = events.first() else { panic!("first event: {events:?}") };
    let Some(RunEvent::Finished(result)) = events.last() else { panic!("last event: {events:?}") };
    assert_eq!(result.run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(result.outcome, Outcome::Done);
    assert_ids(result, &request_id, "normal");
    assert_eq!(stream.run_ref().map(|r| r.run_id.as_str()), Some(run_id.as_str()));
    let middle = &events[1..events.len() - 1];
    assert!(!middle.is_empty(), "a run of a few seconds reports progress: {events:?}");
    let mut last = 0.0;
    for event in middle {
        let RunEvent::Progress { seconds } = event else { panic!("only progress between start and finish: {events:?}") };
        assert!(*seconds >= last, "progress goes forward: {events:?}");
        last = *seconds;
    }

    // The same request_id streamed again: already final, so Started then Finished (replayed).
    let again = client.run_streamed(WORKFLOW, inputs(NOTE, "normal"), &id(&request_id)).await.unwrap();
    let run_ref = again.run_ref().cloned().unwrap();
    let replay = again.finish().await.unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.run_id.as_deref(), Some(run_ref.run_id.as_str()));
}

/// A stream dropped while its run goes on; `resume` from the persisted RunRef finds the end.
pub async fn dropping_a_stream_stops_watching_and_resume_finds_the_outcome(client: &Client, runs: &Path, prefix: &str) {
    let request_id = id(&format!("{prefix}-dropped-stream"));
    let mut stream = client.run_streamed(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    let Some(Ok(RunEvent::Started { .. })) = stream.next().await else { panic!("a Started event first") };
    let run_ref = stream.run_ref().cloned().unwrap();
    drop(stream);
    let persisted: openadapt_agent_sdk::RunRef = serde_json::from_str(&serde_json::to_string(&run_ref).unwrap()).unwrap();
    let r = client.resume(&persisted).await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(r.run_id.as_deref(), Some(run_ref.run_id.as_str()));
    assert_eq!(claims(runs), 1);
}

pub async fn tool_errors_are_typed(client: &Client) {
    match client.run("no_such_workflow", inputs(NOTE, "normal"), &id("tool-error-1")).await {
        Err(Error::Tool(sentence)) => assert!(sentence.contains("inputSchema"), "{sentence}"),
        other => panic!("expected a tool error: {other:?}"),
    }
    match client.resume(&openadapt_agent_sdk::RunRef::new("run-nothing-here")).await {
        Err(Error::Tool(sentence)) => assert!(sentence.contains("No run"), "{sentence}"),
        other => panic!("expected a tool error: {other:?}"),
    }
}
