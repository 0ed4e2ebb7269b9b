//! Drives the simulated sandbox through the SDK in both modes: every case, a replay, a conflict
//! and a streamed run, printing each typed result.
//!
//! ```sh
//! cargo build -p openadapt-agent          # the server binary the managed mode spawns
//! cargo run -p openadapt-agent-sdk --features embedded --example sdk_sandbox [-- --runs-dir DIR] [--server PATH]
//! ```
//!
//! It lives in the SDK package (not `host/examples/`): the SDK's `embedded` feature depends on
//! the host crate, so a host example using it would make a dependency cycle.

use openadapt_agent_sdk::{Client, ClientMode, RequestId, RestartPolicy, RunEvent, RunResult};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WORKFLOW: &str = "add_triage_note";
const NOTE: &str = "Synthetic note: mild fever, recheck in two days.";
const CASES: [&str; 5] = ["normal", "duplicate_record", "false_saved_banner", "timeout_after_save", "app_offline"];

fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// The server binary: `--server`, else `openadapt-agent` in this example's target directory.
fn server() -> Result<PathBuf, String> {
    if let Some(path) = flag("--server") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe.parent().and_then(|d| d.parent()).map(|d| d.join("openadapt-agent")).ok_or("no target directory")?;
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("{} is missing: run `cargo build -p openadapt-agent` first, or pass --server PATH", bin.display()))
    }
}

fn row(label: &str, r: &RunResult) {
    let person: Vec<&str> = r.interruptions().iter().map(|i| i.for_person()).collect();
    println!(
        "{:<34} {:<18} {:<20} {:<6} {:<8} {:<10} {:<4} {}",
        label,
        r.outcome,
        r.reason,
        r.safe_to_retry,
        r.record_changed,
        r.proof,
        if r.replayed { "yes" } else { "" },
        person.join(" "),
    );
}

async fn drive(client: &Client, prefix: &str) -> Result<(), Box<dyn std::error::Error>> {
    let cards = client.workflows().await?;
    let names: Vec<&str> = cards.iter().map(|c| c.name.as_str()).collect();
    println!("\n== {:?} mode: the server offers {}", client.mode(), names.join(", "));
    println!(
        "{:<34} {:<18} {:<20} {:<6} {:<8} {:<10} {:<4} for a person (never for the agent)",
        "call", "outcome", "reason", "retry", "changed", "proof", "rep"
    );
    for case in CASES {
        let request_id = RequestId::new(format!("{prefix}-{case}"))?;
        let r = client.run(WORKFLOW, json!({"note": NOTE, "sandbox_case": case}), &request_id).await?;
        row(&format!("run {case}"), &r);
    }
    let normal = RequestId::new(format!("{prefix}-normal"))?;
    let r = client.run(WORKFLOW, json!({"note": NOTE, "sandbox_case": "normal"}), &normal).await?;
    row("run normal, same request_id", &r);
    let r = client.run(WORKFLOW, json!({"note": "Another synthetic note.", "sandbox_case": "normal"}), &normal).await?;
    row("run other note, same request_id", &r);

    let streamed = RequestId::new(format!("{prefix}-streamed"))?;
    let mut stream = client.run_streamed(WORKFLOW, json!({"note": NOTE, "sandbox_case": "normal"}), &streamed).await?;
    let mut events = vec![];
    while let Some(event) = stream.next().await {
        match event? {
            RunEvent::Started { run_id } => events.push(format!("started {run_id}")),
            RunEvent::Progress { seconds } => events.push(format!("progress {seconds:.0}s")),
            RunEvent::Finished(r) => {
                events.push(format!("finished {}", r.outcome));
                row("run_streamed normal", &r);
            }
            other => events.push(format!("{other:?}")),
        }
    }
    println!("   events: {}", events.join(" → "));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let runs = flag("--runs-dir")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("openadapt-sdk-example-{stamp}")));
    println!("Records go to {} (every result is simulated: MockMed runs as a WebAssembly component)", runs.display());
    // A little latency so the streamed run reports progress.
    let latency = Duration::from_millis(700);

    let embedded = Client::builder().runs_dir(&runs).simulated_latency(latency).embedded().await?;
    assert_eq!(embedded.mode(), ClientMode::Embedded);
    drive(&embedded, &format!("embedded-{stamp}")).await?;
    embedded.close().await;

    let managed = Client::builder().runs_dir(&runs).simulated_latency(latency).managed(server()?, RestartPolicy::default()).await?;
    drive(&managed, &format!("managed-{stamp}")).await?;
    managed.close().await;
    Ok(())
}
