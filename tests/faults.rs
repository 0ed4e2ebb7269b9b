//! Fault injection against the real binary: many server processes sharing one runs dir, and
//! servers killed with SIGKILL at random moments. Nothing may run twice, and every record must
//! stay readable.

mod support;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_processes_sharing_a_runs_dir_run_each_request_once() {
    const PROCESSES: usize = 8;
    const IDS: usize = 50;
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().to_path_buf();
    let mut clients = Vec::new();
    for _ in 0..PROCESSES {
        clients.push(std::sync::Arc::new(spawn(&runs, &["--simulated-latency-ms", "20"]).await));
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (p, client) in clients.iter().enumerate() {
        for i in 0..IDS {
            let client = client.clone();
            tasks.spawn(async move {
                let result = call(&client, "run_workflow", run_args(&format!("Shared note {i}"), "normal", &format!("shared-{i:03}"))).await;
                (p, i, result)
            });
        }
    }
    let mut by_id: BTreeMap<usize, Vec<Value>> = BTreeMap::new();
    while let Some(joined) = tasks.join_next().await {
        let (_p, i, result) = joined.unwrap();
        // Every call answers with a contract result, never a tool error.
        by_id.entry(i).or_default().push(structured(&result));
    }
    assert_eq!(by_id.len(), IDS);
    for (i, answers) in &by_id {
        assert_eq!(answers.len(), PROCESSES);
        let run_ids: std::collections::BTreeSet<&str> = answers.iter().map(|a| a["run_id"].as_str().unwrap()).collect();
        assert_eq!(run_ids.len(), 1, "id {i} ran more than once: {run_ids:?}");
        assert!(answers.iter().all(|a| a["outcome"] == "done"), "id {i}: {answers:?}");
        let fresh = answers.iter().filter(|a| a.get("replayed").is_none()).count();
        assert_eq!(fresh, 1, "exactly one call started id {i}");
    }
    // One claim per id, and exactly one note per id in the app's store. (Names starting with
    // a dot are temp files and the servers' spare claim files.)
    let claims: Vec<String> = std::fs::read_dir(runs.join("openadapt-agent/claims"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(claims.len(), IDS);
    assert!(claims.iter().all(|c| c.ends_with(":1")));
    let notes = std::fs::read_dir(runs.join("openadapt-agent/mockmed-store/notes/rec-0001")).unwrap().count();
    assert_eq!(notes, IDS);
    for client in clients {
        std::sync::Arc::into_inner(client).unwrap().cancel().await.unwrap();
    }
}

/// A small deterministic generator; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A raw JSON-RPC line client, so the server can be killed at any byte.
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    async fn start(runs: &Path) -> Raw {
        let mut cmd = server_command(runs, &["--simulated-latency-ms", "8"]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Raw { child, stdin, lines };
        raw.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}}))
            .await;
        let line = raw.lines.next_line().await.unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 0);
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        raw
    }

    async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        // The server may already be dead; a failed write is part of the fault.
        let _ = self.stdin.write_all(line.as_bytes()).await;
    }

    async fn run(&mut self, id: u64, request_id: &str, case: &str) {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "run_workflow", "arguments": run_args("Killed mid-run note", case, request_id)}});
        self.send(msg).await;
    }

    fn kill(&mut self) {
        let pid = self.child.id().unwrap() as i32;
        std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().unwrap();
    }
}

const RETRYABLE: [&str; 7] =
    ["not_ready_to_run", "policy_refused", "canceled", "platform_error", "app_unreachable", "workflow_unavailable", "runs_disabled"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_killed_at_random_moments_lose_nothing_and_run_nothing_twice() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("kill -9 test seed: {seed}");
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path();
    let cases = ["normal", "normal", "app_offline", "timeout_after_save", "duplicate_record"];
    let mut sent: Vec<(String, &str)> = Vec::new();
    let mut next_id = 1u64;
    for round in 0..50 {
        let mut raw = Raw::start(runs).await;
        // Four new requests and two repeats of earlier ones, then a kill at a random moment.
        for k in 0..4 {
            let request_id = format!("kill-{round:02}-{k}");
            let case = cases[rng.below(cases.len() as u64) as usize];
            raw.run(next_id, &request_id, case).await;
            next_id += 1;
            sent.push((request_id, case));
        }
        for _ in 0..2 {
            let (request_id, case) = sent[rng.below(sent.len() as u64) as usize].clone();
            raw.run(next_id, &request_id, case).await;
            next_id += 1;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(40))).await;
        raw.kill();
        let _ = raw.child.wait().await;
    }
    assert_eq!(sent.len(), 200);

    // Every record parses.
    let runs_dir = runs.join("openadapt-agent/runs");
    let mut records: HashMap<String, Value> = HashMap::new();
    for entry in std::fs::read_dir(&runs_dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // a temp file a killed writer never renamed into place
        }
        let record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        assert_eq!(record["schema"], "openadapt-agent.run/v1");
        records.insert(record["run_id"].as_str().unwrap().to_string(), record);
    }

    // Records left running read as interrupted.
    let client = spawn(runs, &[]).await;
    let mut interrupted = 0;
    for (run_id, record) in &records {
        let v = structured(&call(&client, "get_run", json!({"run_id": run_id, "wait_seconds": 0})).await);
        if record["state"] == "running" {
            assert_eq!(v["outcome"], "not_sure_if_saved", "{run_id}");
            assert_eq!(v["reason"], "interrupted", "{run_id}");
            interrupted += 1;
        } else {
            assert_eq!(v["reason"], record["result"]["reason"]);
        }
    }
    eprintln!("{} records, {interrupted} left running by killed servers", records.len());

    // No request ran a second attempt unless its earlier attempt ended in a retryable reason.
    let mut claims: BTreeMap<String, BTreeMap<u32, Value>> = BTreeMap::new();
    for entry in std::fs::read_dir(runs.join("openadapt-agent/claims")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // a temp file a killed claimant never linked into place
        }
        let (key, attempt) = name.split_once(':').unwrap();
        let claim: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("claims parse");
        claims.entry(key.to_string()).or_default().insert(attempt.parse().unwrap(), claim);
    }
    for (key, attempts) in &claims {
        let numbers: Vec<u32> = attempts.keys().copied().collect();
        assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>(), "attempts of {key} are contiguous");
        for (n, claim) in attempts {
            if *n == 1 {
                continue;
            }
            let earlier = &attempts[&(n - 1)]["run_id"];
            let v = structured(&call(&client, "get_run", json!({"run_id": earlier, "wait_seconds": 0})).await);
            let reason = v["reason"].as_str().unwrap();
            assert!(RETRYABLE.contains(&reason), "{key} attempt {n} ({}) ran after a {reason}", claim["run_id"]);
        }
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_call_stops_waiting_and_the_run_stays_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = server_command(tmp.path(), &["--simulated-latency-ms", "700"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut raw = Raw { stdin: child.stdin.take().unwrap(), lines: BufReader::new(child.stdout.take().unwrap()).lines(), child };
    raw.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cancel", "version": "0"}}}))
        .await;
    raw.lines.next_line().await.unwrap().unwrap();
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    raw.run(1, "req-cancel", "normal").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
    // The server keeps serving: a ping answers at once, and no result for the cancelled call
    // ever arrives as a contract result.
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
    let line = tokio::time::timeout(Duration::from_secs(2), raw.lines.next_line()).await.unwrap().unwrap().unwrap();
    let msg: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(msg["id"], 2, "the first answer is the ping's, not the cancelled call's: {msg}");
    // The run itself went on and is readable under its request id.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    raw.run(3, "req-cancel", "normal").await;
    let line = tokio::time::timeout(Duration::from_secs(5), raw.lines.next_line()).await.unwrap().unwrap().unwrap();
    let msg: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(msg["id"], 3, "{msg}");
    let result = &msg["result"]["structuredContent"];
    assert_eq!(result["outcome"], "done");
    assert_eq!(result["replayed"], true);
}

/// What a power cut can leave of a claim (it is flushed after it is renamed into place): a
/// request whose claim does not parse answers not_sure_if_saved, the same run every time, and
/// never runs again, whatever its inputs.
#[tokio::test]
async fn a_torn_claim_reads_as_one_interrupted_run() {
    use sha2::Digest;
    let tmp = tempfile::tempdir().unwrap();
    let key = &hex::encode(sha2::Sha256::digest(b"torn-claim-1"))[..40];
    let claims = tmp.path().join("openadapt-agent/claims");
    std::fs::create_dir_all(&claims).unwrap();
    std::fs::write(claims.join(format!("{key}:1")), b"{\"schema\":\"openadapt-agent.cl").unwrap();
    let client = spawn(tmp.path(), &[]).await;
    let first = structured(&call(&client, "run_workflow", run_args("Torn note", "normal", "torn-claim-1")).await);
    assert_eq!((first["outcome"].as_str(), first["reason"].as_str()), (Some("not_sure_if_saved"), Some("interrupted")), "{first}");
    assert_eq!(first["safe_to_retry"], false);
    let again = structured(&call(&client, "run_workflow", run_args("Other inputs", "duplicate_record", "torn-claim-1")).await);
    assert_eq!(again["run_id"], first["run_id"]);
    assert_eq!(again["reason"], "interrupted");
    assert_eq!(again["replayed"], true);
    assert!(!claims.join(format!("{key}:2")).exists(), "a torn attempt is never retried");
    client.cancel().await.unwrap();
}
