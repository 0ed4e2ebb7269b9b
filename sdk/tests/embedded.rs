//! The SDK in embedded mode (the bridge in-process): every sandbox case, receipts across
//! clients and modes, resume, and streamed events from the service's ticks.

mod common;
use common::*;
use openadapt_agent_sdk::{ClientMode, Outcome, RestartPolicy};

#[tokio::test]
async fn workflows_are_typed_cards() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 0).await;
    assert_eq!(client.mode(), ClientMode::Embedded);
    assert_eq!(client.server_pid(), None);
    common::workflows_are_typed_cards(&client).await;
}

#[tokio::test]
async fn every_sandbox_case_answers_its_typed_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 0).await;
    common::every_sandbox_case_answers_its_typed_outcome(&client, "embedded-case").await;
}

#[tokio::test]
async fn a_repeat_replays_and_other_inputs_conflict() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 0).await;
    common::a_repeat_replays_and_other_inputs_conflict(&client, tmp.path(), "embedded").await;
}

#[tokio::test]
async fn tool_errors_are_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 0).await;
    common::tool_errors_are_typed(&client).await;
}

#[tokio::test]
async fn run_streamed_events_come_in_order_from_the_service() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 1000).await;
    common::run_streamed_events_come_in_order(&client, "embedded").await;
}

#[tokio::test]
async fn a_receipt_survives_a_new_client_and_a_change_of_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let request_id = id("embedded-receipt-1");
    let first = embedded(tmp.path(), 0).await.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_eq!(first.outcome, Outcome::Done);

    // The program restarts: a new embedded client on the same runs dir.
    let again = embedded(tmp.path(), 0).await.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.run_id, first.run_id);

    // The same request through a managed server: the same stored result.
    let managed = managed(tmp.path(), 0, RestartPolicy::default()).await;
    let third = managed.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert!(third.replayed);
    assert_eq!(third.run_id, first.run_id);
    assert_eq!(claims(tmp.path()), 1);
    managed.close().await;
}

#[tokio::test]
async fn dropping_a_stream_stops_watching_and_resume_finds_the_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let client = embedded(tmp.path(), 700).await;
    common::dropping_a_stream_stops_watching_and_resume_finds_the_outcome(&client, tmp.path(), "embedded").await;
}

#[tokio::test]
async fn an_embedded_host_takes_the_servers_telemetry_settings() {
    // An endpoint where nothing listens: telemetry starts, exports fail in the background,
    // and every result is what it would be without it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = openadapt_agent::telemetry::TelemetryConfig::new(format!("http://127.0.0.1:{port}"));
    let tmp = tempfile::tempdir().unwrap();
    let client = openadapt_agent_sdk::Client::builder()
        .runs_dir(tmp.path())
        .cache_home(cache_home())
        .telemetry(config)
        .embedded()
        .await
        .expect("an embedded client with telemetry");
    let id = openadapt_agent_sdk::RequestId::new("embedded-telemetry-1").unwrap();
    let result = client.run("add_triage_note", inputs("Synthetic note.", "normal"), &id).await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    client.close().await;
}
