//! `openadapt-agent demo`: starts the server as a child, speaks MCP to it over stdio the way a
//! calling agent would, and prints what each call came back with.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::PathBuf;

pub async fn run(runs_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = crate::cli::sandbox_dir(runs_dir);
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("serve").arg("--runs-dir").arg(&dir);
    let client = ().serve(TokioChildProcess::new(cmd)?).await?;

    let listed = client.call_tool(CallToolRequestParams::new("list_workflows")).await?;
    let workflows = listed.structured_content.unwrap_or_default();
    let names: Vec<&str> = workflows["workflows"]
        .as_array()
        .map(|w| w.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    println!("Sandbox server at {} serves: {}", dir.display(), names.join(", "));
    println!("(every result below is simulated: MockMed runs as a WebAssembly component)\n");
    println!("{:<38} {:<18} {:<20} {:<6} {:<8} replayed", "call", "outcome", "reason", "retry", "changed");

    // Request ids unique to this demo run, so a second demo starts afresh.
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis();
    let mut calls: Vec<(String, Value)> = crate::cards::SANDBOX_CASES
        .iter()
        .map(|case| {
            let args = json!({
                "workflow": crate::cards::SANDBOX_WORKFLOW,
                "inputs": {"note": "Synthetic note: mild fever, recheck in two days.", "sandbox_case": case},
                "request_id": format!("demo-{stamp}-{case}"),
            });
            (format!("run_workflow {case}"), args)
        })
        .collect();
    let normal = calls[0].1.clone();
    calls.push(("run_workflow normal, same request_id".into(), normal.clone()));
    let mut conflict = normal;
    conflict["inputs"]["note"] = json!("A different synthetic note.");
    calls.push(("run_workflow other note, same id".into(), conflict));

    for (label, args) in calls {
        let params = CallToolRequestParams::new("run_workflow").with_arguments(args.as_object().cloned().unwrap_or_default());
        let result = client.call_tool(params).await?;
        let r = result.structured_content.unwrap_or_default();
        println!(
            "{:<38} {:<18} {:<20} {:<6} {:<8} {}",
            label,
            r["outcome"].as_str().unwrap_or("?"),
            r["reason"].as_str().unwrap_or("?"),
            r["safe_to_retry"],
            r["record_changed"].as_str().unwrap_or("?"),
            if r["replayed"] == json!(true) { "yes" } else { "" },
        );
    }
    client.cancel().await?;
    Ok(())
}
